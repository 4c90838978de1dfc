"""End to end: SQL -> pipeline -> records -> decode -> rebuilt tables == the engine's tables;
and the placement TiCDC promises: DDL partitions, checkpoints, batches, filters."""

from __future__ import annotations

import random
from typing import Any

import pytest

from support_changelog import (
    check_ordering,
    decode,
    engine_state,
    merged,
    rebuild,
    replay,
)
from ticdc_sim.encoders import DecodedCheckpoint, DecodedDDL, DecodedRow
from ticdc_sim.model.tso import physical_ms
from ticdc_sim.partitioning.hash import position_inertia


def workload(seed: int = 7, statements: int = 2500) -> str:
    """Tables of every handle kind, then a random mix of single- and multi-row changes in
    autocommit and explicit transactions; the simulated clock moves 1 ms a transaction, so
    this spans several checkpoint ticks and many 15 ms batches."""
    rng = random.Random(seed)
    lines = [
        "CREATE TABLE users (id INT PRIMARY KEY, name VARCHAR(20), score DOUBLE, kind ENUM('a','b'));",
        "CREATE TABLE tags (code VARCHAR(8) NOT NULL, lang CHAR(2) NOT NULL, label TEXT,"
        " PRIMARY KEY (code, lang) CLUSTERED);",
        "CREATE TABLE notes (n BIGINT NOT NULL, body VARBINARY(16), f FLOAT, UNIQUE KEY uk (n));",
        "CREATE TABLE logs (msg VARCHAR(10));",  # no key: not replicated
        "CREATE TABLE parted (id INT PRIMARY KEY, v DECIMAL(8,2))"
        " PARTITION BY HASH (id) PARTITIONS 4;",
    ]
    users: set[int] = set()
    for i in range(statements):
        roll = rng.random()
        uid = rng.randrange(200)
        if i == statements // 2:
            lines.append("TRUNCATE TABLE parted;")
            lines.append("DROP TABLE notes;")
            lines.append(
                "CREATE TABLE notes (n BIGINT NOT NULL, body VARBINARY(16), f FLOAT,"
                " UNIQUE KEY uk (n));"
            )
        if roll < 0.3:
            if uid in users:
                lines.append(f"UPDATE users SET score = score + 1.5, kind = 'b' WHERE id = {uid};")
            else:
                users.add(uid)
                lines.append(f"INSERT INTO users VALUES ({uid}, 'u{uid}', {rng.random()}, 'a');")
        elif roll < 0.4 and users:
            victim = rng.choice(sorted(users))
            users.discard(victim)
            lines.append(f"DELETE FROM users WHERE id = {victim};")
        elif roll < 0.45 and users:
            old = rng.choice(sorted(users))
            new = rng.randrange(200, 400)
            if new not in users:
                users.discard(old)
                users.add(new)
                lines.append(f"UPDATE users SET id = {new} WHERE id = {old};")  # split
        elif roll < 0.6:
            code = f"c{rng.randrange(50)}"
            lines.append(
                f"REPLACE INTO tags VALUES ('{code}', '{rng.choice(['en', 'fr'])}', 'l{i}');"
            )
        elif roll < 0.7:
            n = rng.randrange(100)
            lines.append(
                f"INSERT INTO notes VALUES ({n}, X'{rng.randbytes(3).hex()}', {i / 8})"
                f" ON DUPLICATE KEY UPDATE f = f + 1;"
            )
        elif roll < 0.8:
            lines.append(f"INSERT INTO logs VALUES ('m{i}');")
        elif roll < 0.9:
            lines.append(
                "BEGIN; "
                + " ".join(
                    f"REPLACE INTO parted VALUES ({rng.randrange(300)}, {rng.randrange(10**6) / 100});"
                    for _ in range(rng.randrange(1, 6))
                )
                + " COMMIT;"
            )
        else:
            base = rng.randrange(1000, 10**6)
            values = ", ".join(f"({base + k}, {k}.25)" for k in range(rng.randrange(2, 40)))
            lines.append(f"INSERT IGNORE INTO parted VALUES {values};")
    return "\n".join(lines) + "\n"


SCRIPT = workload()

DISPATCHERS = {
    "default": None,
    "index-value": '[[sink.dispatchers]]\nmatcher = ["*.*"]\npartition = "index-value"\n',
    "ts": '[[sink.dispatchers]]\nmatcher = ["test.*"]\npartition = "ts"\n',
    "columns": (
        '[[sink.dispatchers]]\nmatcher = ["test.users"]\npartition = "columns"\n'
        'columns = ["name"]\n'
        '[[sink.dispatchers]]\nmatcher = ["test.t*", "test.p*"]\npartition = "table"\n'
        'topic = "{schema}_{table}"\n'
    ),
}


ALL = ["canal-json", "open-protocol", "craft", "simple", "simple&encoding-format=avro"]


@pytest.mark.parametrize("partitions", [1, 3, 8])
@pytest.mark.parametrize("dispatcher", sorted(DISPATCHERS))
@pytest.mark.parametrize("protocol", ALL)
def test_rebuilt_tables_equal_the_engine(protocol: str, dispatcher: str, partitions: int) -> None:
    uri = f"memory://?protocol={protocol}&partition-num={partitions}&enable-tidb-extension=true"
    run = replay(SCRIPT, uri, DISPATCHERS[dispatcher])
    decoded = decode(run.pipeline.feed, run.sink.records())
    check_ordering(decoded)
    rebuilt = rebuild(merged(decoded))
    expected = engine_state(run)
    assert "test.logs" not in expected and "test.logs" not in rebuilt
    assert set(rebuilt) == set(expected)
    for table, rows in expected.items():
        assert rebuilt[table] == rows, table
    assert run.summary.rows > 2000 and run.summary.skipped_rows > 100
    used = {(r.topic, r.partition) for r in run.sink.records()}
    topics = {"ticdc"} | ({"test_tags", "test_parted"} if dispatcher == "columns" else set())
    assert used == {(t, p) for t in topics for p in range(partitions)}


def _decoded(protocol: str, script: str, toml: str | None = None, **params: str) -> Any:
    query = "&".join(f"{k}={v}" for k, v in {"protocol": protocol, **params}.items())
    run = replay(script, f"memory://?{query}", toml)
    return run, decode(run.pipeline.feed, run.sink.records())


@pytest.mark.parametrize("protocol", ALL)
def test_ddl_goes_to_partition_zero_for_canal_json_else_to_every_partition(protocol: str) -> None:
    run, decoded = _decoded(
        protocol, "CREATE TABLE t (a INT PRIMARY KEY);", None, **{"partition-num": "4"}
    )
    ddl = [(r.partition, e.query) for r, e in decoded if isinstance(e, DecodedDDL)]
    partitions = [0] if protocol == "canal-json" else [0, 1, 2, 3]
    assert ddl == [(p, "CREATE TABLE `t` (`a` INT PRIMARY KEY)") for p in partitions]


@pytest.mark.parametrize("protocol", ALL)
def test_checkpoints_tick_each_simulated_second_and_follow_each_ddl(protocol: str) -> None:
    script = "CREATE TABLE t (a INT PRIMARY KEY);\n" + "".join(
        f"INSERT INTO t VALUES ({i});\n" for i in range(2500)
    )
    script += "ALTER TABLE t ADD COLUMN b INT;\nINSERT INTO t VALUES (-1, 1);\n"
    run, decoded = _decoded(protocol, script, None, **{"enable-tidb-extension": "true"})
    on_zero = [(e, r) for r, e in decoded if r.partition == 0]
    checkpoints = [e.ts for e, _ in on_zero if isinstance(e, DecodedCheckpoint)]
    rows = [e for _, e in decoded if isinstance(e, DecodedRow)]
    ddls = [e for e, _ in on_zero if isinstance(e, DecodedDDL)]
    assert checkpoints == sorted(set(checkpoints))  # only when it advanced
    # forced after both DDL, one per simulated second, and the final one
    assert checkpoints[0] == ddls[0].commit_ts and ddls[1].commit_ts in checkpoints
    assert checkpoints[-1] == rows[-1].commit_ts == run.summary.checkpoint_ts
    start = physical_ms(ddls[0].commit_ts)
    commits = sorted({r.commit_ts for r in rows if r.commit_ts < ddls[1].commit_ts})
    seconds = (physical_ms(commits[-1]) - start) // 1000
    assert seconds >= 2  # 2500 transactions, a few simulated ms apart
    # each tick carries the last commit before it
    expected = [
        max(ts for ts in commits if physical_ms(ts) - start < 1000 * k)
        for k in range(1, seconds + 1)
    ]
    ticks = [ts for ts in checkpoints if ts not in (ddls[0].commit_ts, ddls[1].commit_ts)]
    assert ticks[: len(expected)] == expected
    assert len(checkpoints) == len(expected) + 3
    # every partition gets every checkpoint
    for p in range(3):
        got = [e.ts for r, e in decoded if r.partition == p and isinstance(e, DecodedCheckpoint)]
        assert got == checkpoints


def test_canal_json_without_the_tidb_extension_sends_no_checkpoints() -> None:
    _, decoded = _decoded("canal-json", "CREATE TABLE t (a INT PRIMARY KEY);")
    assert not any(isinstance(e, DecodedCheckpoint) for _, e in decoded)


def test_open_protocol_batches_rows_of_one_group_within_15_ms() -> None:
    script = "CREATE TABLE t (a INT PRIMARY KEY);\n" + "".join(
        f"INSERT INTO t VALUES ({i});\n" for i in range(100)
    )
    run, decoded = _decoded("open-protocol", script, None, **{"partition-num": "1"})
    sizes: dict[int, int] = {}
    for record, event in decoded:
        if isinstance(event, DecodedRow):
            sizes[record.offset] = sizes.get(record.offset, 0) + 1
    # a window holds the transactions of 15 simulated ms (a few ms apart): one record each
    # (max-batch-size 16 is never reached)
    windows: list[int] = []
    start = None
    for ts in [e.commit_ts for _, e in decoded if isinstance(e, DecodedRow)]:
        if start is None or physical_ms(ts) - start >= 15:
            start = physical_ms(ts)
            windows.append(0)
        windows[-1] += 1
    assert list(sizes.values()) == windows and len(windows) > 7
    # index-value: a group per key, so no two rows share a record
    run, decoded = _decoded(
        "open-protocol",
        script,
        '[[sink.dispatchers]]\nmatcher = ["*.*"]\npartition = "index-value"\n',
        **{"partition-num": "1"},
    )
    rows = [r.offset for r, e in decoded if isinstance(e, DecodedRow)]
    assert len(rows) == len(set(rows)) == 100


def test_a_window_holds_at_most_2048_rows() -> None:
    values = ", ".join(f"({i})" for i in range(5000))
    script = f"CREATE TABLE t (a INT PRIMARY KEY);\nINSERT INTO t VALUES {values};\n"
    _, decoded = _decoded(
        "open-protocol", script, None, **{"partition-num": "1", "max-batch-size": "4096"}
    )
    sizes: dict[int, int] = {}
    for record, event in decoded:
        if isinstance(event, DecodedRow):
            sizes[record.offset] = sizes.get(record.offset, 0) + 1
    assert list(sizes.values()) == [2048, 2048, 904]


def test_the_pipeline_routes_rows_with_the_index_value_hash() -> None:
    """The pipeline puts each row where `position_inertia` says. That hash is held to
    tiflow's own literal partitions in test_partitioning (vectors/dispatch.json, from
    index_value_test.go); this test checks the pipeline's use of it, not the hash."""
    script = "CREATE TABLE t (a INT PRIMARY KEY, b INT);\n" + "".join(
        f"INSERT INTO t VALUES ({i}, {i});\n" for i in range(50)
    )
    _, decoded = _decoded(
        "canal-json",
        script,
        '[[sink.dispatchers]]\nmatcher = ["test.t"]\npartition = "index-value"\n',
        **{"partition-num": "5"},
    )
    for record, event in decoded:
        if isinstance(event, DecodedRow):
            assert event.columns is not None
            key = str(event.columns["a"]).encode()
            digest = position_inertia([(b"test", b"t"), (b"a", key)])
            assert record.partition == digest % 5


def test_filters_and_ineligible_tables_are_not_replicated() -> None:
    script = (
        "CREATE DATABASE other; CREATE TABLE other.x (a INT PRIMARY KEY);"
        " CREATE TABLE keep (a INT PRIMARY KEY); CREATE TABLE nokey (a INT);"
        " INSERT INTO other.x VALUES (1); INSERT INTO keep VALUES (1); INSERT INTO nokey VALUES (1);"
        " ALTER TABLE nokey ADD PRIMARY KEY (a); INSERT INTO nokey VALUES (2);"
    )
    toml = '[filter]\nrules = ["test.*"]\n'
    _, decoded = _decoded("open-protocol", script, toml, **{"partition-num": "1"})
    events = [e for _, e in decoded if not isinstance(e, DecodedCheckpoint)]
    assert [(type(e).__name__, e.table) for e in events] == [
        ("DecodedDDL", "keep"),
        ("DecodedRow", "keep"),
        ("DecodedDDL", "nokey"),  # the ALTER that gives it a key: eligible from then on
        ("DecodedRow", "nokey"),
    ]
    _, forced = _decoded(
        "open-protocol", script, "force-replicate = true\n", **{"partition-num": "1"}
    )
    tables = {e.table for _, e in forced if isinstance(e, DecodedRow)}
    assert tables == {"x", "keep", "nokey"}


def test_checkpoints_go_to_every_active_topic() -> None:
    toml = (
        '[[sink.dispatchers]]\nmatcher = ["test.*"]\ntopic = "t_{table}"\n'
        '[[sink.dispatchers]]\nmatcher = ["other.*"]\ntopic = "static"\n'
    )
    script = (
        "CREATE TABLE a (x INT PRIMARY KEY); CREATE TABLE b (x INT PRIMARY KEY);"
        " INSERT INTO a VALUES (1); DROP TABLE b;"
    )
    run, decoded = _decoded("open-protocol", script, toml, **{"partition-num": "2"})
    last = run.summary.checkpoint_ts
    finals = {
        (r.topic, r.partition)
        for r, e in decoded
        if isinstance(e, DecodedCheckpoint) and e.ts == last
    }
    # b was dropped, so only a's topic and the default one get the final checkpoint
    assert finals == {(t, p) for t in ("t_a", "ticdc") for p in range(2)}


def test_ddl_of_an_ineligible_table_is_skipped_but_its_drop_is_sent() -> None:
    # tiflow cdc/owner/ddl_manager.go: IsIneligibleTable in the snapshot at the DDL's commit
    # ts; a dropped table is no longer in that snapshot's ineligible set, so its DROP goes out
    script = (
        "CREATE TABLE nokey (a INT); ALTER TABLE nokey ADD COLUMN b INT; TRUNCATE TABLE nokey;"
        " RENAME TABLE nokey TO still_nokey; DROP TABLE still_nokey;"
        " CREATE TABLE keyed (a INT PRIMARY KEY); RENAME TABLE keyed TO gone;"
    )
    _, decoded = _decoded("canal-json", script, '[filter]\nrules = ["test.*", "!test.gone"]\n')
    assert [e.query for _, e in decoded if isinstance(e, DecodedDDL)] == [
        "DROP TABLE `test`.`still_nokey`",
        "CREATE TABLE `keyed` (`a` INT PRIMARY KEY)",
        # filtered by the name it had (schema.go filterDDLEvents), not the one it gets
        "RENAME TABLE `keyed` TO `gone`",
    ]
