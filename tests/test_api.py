"""The Python API (`ticdc_sim.Simulator`, `ticdc_sim.generate`): the records the CLI writes,
byte for byte, for the same scripts, settings and specs; statements' results and errors as a
MySQL client sees them; rows, `expect`, changefeed options and failures."""

from __future__ import annotations

import reprlib
import sqlite3
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import ticdc_sim
from support_service import remain
from test_capture import QUERY, SCRIPT, SETTINGS
from ticdc_sim import ChangefeedFailed, Record, SimError, Simulator, SQLError, generate
from ticdc_sim.cli import app as cli
from ticdc_sim.errors import CheckError, ConfigError
from ticdc_sim.sinks.jsonl import read_jsonl

ORACLE_SCRIPTS = sorted((Path(__file__).parent / "oracle_scripts").glob("*.sql"))
ROOT = Path(__file__).parent.parent


def _replayed(tmp_path: Path, script: Path, uri_query: str, *args: str) -> list[Record]:
    out = tmp_path / "cli"
    result = CliRunner().invoke(
        cli, ["replay", str(script), "--sink-uri", f"jsonl://{out}{uri_query}", *args]
    )
    assert result.exit_code == 0, result.output
    return sorted(read_jsonl(str(out)), key=lambda r: (r.topic, r.partition, r.offset))


@pytest.mark.parametrize("script", ORACLE_SCRIPTS, ids=lambda p: p.stem)
@pytest.mark.parametrize("protocol", ["canal-json", "open-protocol", "simple"])
def test_a_script_gives_the_records_replay_gives(
    tmp_path: Path, script: Path, protocol: str
) -> None:
    query = f"?protocol={protocol}&partition-num=3"
    with Simulator(seed=3) as sim:
        feed = sim.changefeed(f"memory://{query}")
        sim.execute_file(script)
    assert feed.records() == _replayed(tmp_path, script, query, "--seed", "3")


def test_changefeeds_of_different_settings_each_get_the_cli_records(tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_text(SCRIPT)
    with Simulator() as sim:
        feeds = {
            name: sim.changefeed(f"memory://{QUERY}", config=toml or None)
            for name, (toml, _) in SETTINGS.items()
        }
        sim.execute(SCRIPT)
    for name, (toml, _) in SETTINGS.items():
        config = tmp_path / f"{name}.toml"
        config.write_text(toml)
        expected = _replayed(tmp_path / name, script, QUERY, "--config", str(config))
        assert feeds[name].records() == expected, name


def test_statements_split_across_calls_give_the_same_records() -> None:
    """A transaction may span calls: the same records, byte for byte. Reading the records
    between calls sends the pending batch (as TiCDC's 15 ms window would have closed), so
    the records may be cut differently, but they carry the same events."""
    with Simulator() as whole, Simulator() as parts, Simulator() as read:
        a = whole.changefeed(f"memory://{QUERY}")
        b = parts.changefeed(f"memory://{QUERY}")
        c = read.changefeed(f"memory://{QUERY}")
        whole.execute(SCRIPT)
        for statement in SCRIPT.split(";\n"):
            if statement.strip():
                parts.execute(statement)
                read.execute(statement)
                c.records()
    assert a.records() == b.records()
    assert len(c.records()) > len(a.records())  # batches cut at each read

    def rows(feed: Any) -> list[tuple[Any, ...]]:
        return [
            (e["partition"], e["type"], e["commit_ts"], str(e.get("columns")))
            for e in feed.events()
            if e["type"] in ("insert", "update", "delete")
        ]

    assert rows(c) == rows(a)


def test_connection_id_is_replays_in_every_simulator(tmp_path: Path) -> None:
    """A test's records do not depend on the simulators made before it in the process."""
    script = tmp_path / "s.sql"
    script.write_text(
        "CREATE TABLE t (id INT PRIMARY KEY, c BIGINT);\n"
        "INSERT INTO t VALUES (1, CONNECTION_ID());\n"
    )
    made = []
    for _ in range(3):
        with Simulator() as sim:
            feed = sim.changefeed(f"memory://{QUERY}")
            sim.execute_file(script)
        made.append(feed.records())
    assert made[0] == made[1] == made[2] == _replayed(tmp_path, script, QUERY)


def test_results_are_what_a_client_sees() -> None:
    with Simulator() as sim:
        results = sim.execute(
            "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(4));\n"
            "INSERT INTO t (v) VALUES ('a'), ('b');\n"
            "UPDATE t SET v = 'c' WHERE id >= 1;\n"
            "SELECT id, v FROM t ORDER BY id DESC;\n"
            "SET @x = 1"
        )
        create, insert, update, select, set_ = results
        assert (create.line, insert.line, select.line) == (1, 2, 4)
        assert create.commit_ts is not None and insert.commit_ts is not None
        assert insert.commit_ts > create.commit_ts
        assert (insert.affected_rows, insert.insert_id) == (2, 1)
        assert update.affected_rows == 2
        assert select.columns == ["id", "v"] and select.rows == [(2, "c"), (1, "c")]
        assert select.commit_ts is None and set_.commit_ts is None
        shown = sim.execute("\n  SHOW ENGINES")[0]
        assert shown.warnings == [
            "<sql>:2:3: SHOW ENGINES is not simulated here: answered with no rows"
        ]


def test_a_byte_order_mark_is_skipped_in_text_as_in_bytes(tmp_path: Path) -> None:
    script = tmp_path / "windows.sql"
    script.write_bytes(b"\xef\xbb\xbfSELECT 1;\nSELECT 2")
    with Simulator() as sim:
        for sql in (script.read_text(encoding="utf-8"), script.read_bytes()):
            results = sim.execute(sql)
            assert [(r.statement, r.line, r.column, r.rows) for r in results] == [
                ("SELECT 1", 1, 1, [(1,)]),
                ("SELECT 2", 2, 1, [(2,)]),
            ]


def test_a_failing_statement_raises_located_and_leaves_the_transaction_open() -> None:
    with Simulator() as sim:
        feed = sim.changefeed("memory://?protocol=canal-json")
        sim.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        with pytest.raises(SQLError) as raised:
            sim.execute("BEGIN;\nINSERT INTO t VALUES (1);\n  INSERT INTO t VALUES (1);\nSELECT 1")
        error = raised.value
        assert (error.code, error.sqlstate) == (1062, "23000")
        assert (error.line, error.column) == (3, 3)
        assert error.message == "Duplicate entry '1' for key 't.PRIMARY'"
        assert error.statement == "INSERT INTO t VALUES (1)"
        # as in TiDB: the failed statement is undone, the transaction is still open
        assert sim.rows("t") == []  # committed rows only
        sim.execute("COMMIT")
        assert sim.rows("test.t") == [{"id": 1}]
        inserts = [e for e in feed.events() if e["type"] == "insert"]
        assert [e["columns"] for e in inserts] == [{"id": 1}]


def test_records_checkpoint_and_events() -> None:
    with Simulator() as sim:
        feed = sim.changefeed("memory://?protocol=canal-json&enable-tidb-extension=true")
        sim.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT); INSERT INTO t VALUES (1, 1)")
        insert = [e for e in feed.events() if e["type"] == "insert"]
        in_its_partition = [e["type"] for e in feed.events(partition=insert[0]["partition"])]
        assert in_its_partition[-1] == "insert"  # sent, no checkpoint after it yet
        ts = feed.checkpoint()
        assert ts == feed.checkpoint_ts == feed._feed.pipeline._seen_ts  # the insert's
        last = feed.events()[-1]
        assert last["type"] == "checkpoint" and last["ts"] == ts
        offsets = [(r.partition, r.offset) for r in feed.records()]
        assert offsets == sorted(offsets)
        assert all(isinstance(r, Record) for r in feed.records())


def test_rows_are_valued_as_expect_stores_them() -> None:
    with Simulator(time_zone="+08:00") as sim:
        sim.execute(
            "CREATE TABLE t (id BIGINT UNSIGNED PRIMARY KEY, d DECIMAL(6,2), f DOUBLE,"
            " b VARBINARY(4), dt DATETIME(3), ts TIMESTAMP, e ENUM('x','y'), j JSON);\n"
            "INSERT INTO t VALUES (18446744073709551615, 1.5, 0.25, x'00ff',"
            " '2024-01-02 03:04:05.678', '2024-01-02 03:04:05', 'y', '{\"a\": [1]}')"
        )
        assert sim.rows("t") == [
            {
                "id": 18446744073709551615,
                "d": Decimal("1.50"),
                "f": 0.25,
                "b": b"\x00\xff",
                "dt": "2024-01-02 03:04:05.678",
                "ts": "2024-01-02 03:04:05",
                "e": "y",
                "j": '{"a": [1]}',
            }
        ]
        with pytest.raises(SQLError) as raised:
            sim.rows("nope.t")
        assert raised.value.code == 1146


def test_expect_writes_what_replay_expect_writes(tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_text(
        SCRIPT + "ALTER TABLE t ADD COLUMN w INT DEFAULT 5;\nINSERT INTO t VALUES (7, 7, 7, 7);\n"
        "RENAME TABLE c TO c2;\nDROP TABLE r;\n"
    )
    cli_dir, api_dir = tmp_path / "cli-expect", tmp_path / "api-expect"
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(script),
            "--sink-uri",
            f"jsonl://{tmp_path / 'out'}?protocol=canal-json",
            "--expect",
            str(cli_dir),
        ],
    )
    assert result.exit_code == 0, result.output
    with Simulator() as sim:
        sim.changefeed("memory://?protocol=canal-json")
        sim.execute_file(script)
        written = sim.expect(api_dir)
    cli_files = sorted(p.relative_to(cli_dir) for p in cli_dir.rglob("*.parquet"))
    assert sorted(p.relative_to(api_dir) for p in api_dir.rglob("*.parquet")) == cli_files
    assert len(written) == len(list(cli_dir.glob("*.parquet")))
    for name in cli_files:
        ours, theirs = pq.read_table(api_dir / name), pq.read_table(cli_dir / name)
        assert ours.equals(theirs), name
        assert ours.schema.metadata == theirs.schema.metadata, name


SPEC = """seed: 3
tables:
  - ddl: CREATE TABLE c (id BIGINT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(8,2))
    rows: 50
    columns:
      name: {faker: name}
operations:
  events: 100
  mix: {insert: 2, update: 6, delete: 1}
storyline:
  - at_event: 150
    ddl: ALTER TABLE c ADD COLUMN note VARCHAR(12) DEFAULT 'x'
"""


def test_generate_gives_the_records_the_cli_writes(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "gen"
    result = CliRunner().invoke(
        cli,
        [
            "generate",
            "--workload",
            str(spec),
            "--events",
            "300",
            "--seed",
            "5",
            "--sink-uri",
            f"jsonl://{out}?protocol=canal-json&partition-num=2",
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    expected = sorted(read_jsonl(str(out)), key=lambda r: (r.topic, r.partition, r.offset))
    records = generate(spec, "memory://?protocol=canal-json&partition-num=2", events=300, seed=5)
    assert records == expected


def test_generate_takes_a_mapping(tmp_path: Path) -> None:
    spec: dict[str, Any] = {
        "seed": 1,
        "tables": [{"ddl": "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "rows": 5}],
        "operations": {"events": 20},
    }
    records = generate(spec, "memory://?protocol=canal-json")
    assert any(b'"type":"INSERT"' in (r.value or b"") for r in records)
    import yaml

    as_file = tmp_path / "spec.yaml"
    as_file.write_text(yaml.safe_dump(spec))
    assert records == generate(as_file, "memory://?protocol=canal-json")


@pytest.mark.parametrize(
    "config",
    [
        "enable-old-value = false\n",
        {"enable-old-value": False},
        "FILE",
    ],
    ids=["text", "mapping", "path"],
)
def test_a_config_as_text_mapping_or_path(tmp_path: Path, config: Any) -> None:
    if config == "FILE":
        config = tmp_path / "feed.toml"
        config.write_text("enable-old-value = false\n")
    with Simulator() as sim:
        feed = sim.changefeed("memory://?protocol=open-protocol", config=config)
        assert feed.config.enable_old_value is False


@pytest.mark.parametrize("folder", ["run=1", "feeds[1]"])
def test_a_config_path_is_a_path_whatever_its_folder_is_named(tmp_path: Path, folder: str) -> None:
    path = tmp_path / folder / "feed.toml"
    path.parent.mkdir()
    path.write_text('enable-old-value = false\n[sink]\nprotocol = "open-protocol"\n')
    with Simulator() as sim:
        feed = sim.changefeed("memory://", config=str(path))
        assert (feed.config.codec.protocol, feed.config.enable_old_value) == (
            "open-protocol",
            False,
        )
        path.write_text("[sink\n")
        with pytest.raises(ConfigError) as bad:
            sim.changefeed("memory://", config=str(path))
        assert str(bad.value) == f"{path}:1:6: Expected ']' at the end of a table declaration"
        path.write_text("[sink]\nprotocol = 1\n")
        with pytest.raises(ConfigError) as wrong:
            generate({"tables": [{"ddl": "CREATE TABLE t (id INT PRIMARY KEY)"}]}, config=path)
        assert str(wrong.value) == f"{path}: sink.protocol: 1 is not a string"
        missing = path.parent / "other.toml"
        with pytest.raises(ConfigError) as unread:
            sim.changefeed("memory://", config=str(missing))
        assert str(unread.value) == (
            f"config {reprlib.repr(str(missing))}: cannot read it (No such file or directory);"
            " give a path, the TOML's text or a mapping"
        )


def test_faults_as_text_or_mapping_are_seeded_by_the_simulator() -> None:
    def run(faults: Any) -> list[bytes | None]:
        with Simulator(seed=9) as sim:
            feed = sim.changefeed("memory://?protocol=canal-json", faults=faults)
            sim.execute("CREATE TABLE t (id INT PRIMARY KEY)")
            for i in range(40):
                sim.execute(f"INSERT INTO t VALUES ({i})")
            return [r.value for r in feed.records()]

    text = run("duplicate-rate=0.3")
    assert text == run({"duplicate-rate": 0.3})
    plain = run(None)
    assert len(text) > len(plain)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Simulator(seed=-1), "seed -1: a whole number from 0 to 2^63-1"),
        (lambda: Simulator(start_ts=2**80), f"start_ts {2**80}: a TSO, 0 to {2**63 - 1}"),
        (lambda: Simulator(start_ts=-5), f"start_ts -5: a TSO, 0 to {2**63 - 1} (None: the"),
        (lambda: Simulator(time_zone="Mars/Base"), "time_zone 'Mars/Base': Unknown or incorrect"),
        (lambda: Simulator(database="nope"), "database 'nope': Unknown database 'nope'"),
        (lambda: Simulator(time_zone=8), "time_zone 8: a zone name such as 'UTC', or '+hh:mm'"),
        (lambda: Simulator(database=None), "database None: a database name"),
        (lambda: Simulator(start_ts=-5), f"start_ts -5: a TSO, 0 to {2**63 - 1} (None: the"),
        (lambda: Simulator(start_ts=2**64), f"start_ts {2**64}: a TSO, 0 to {2**63 - 1}"),
        (lambda: Simulator(start_ts="1"), f"start_ts '1': a TSO, 0 to {2**63 - 1}"),
        (lambda: Simulator(start_ts=True), f"start_ts True: a TSO, 0 to {2**63 - 1}"),
    ],
)
def test_bad_simulator_settings_are_named(make: Any, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        make()
    assert str(raised.value).startswith(message)


TOML_TEXT = '[sink]\nprotocol = "canal-json"\n'


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.execute(42), "sql 42: statements, as str or as a script's bytes"),
        (lambda s: s.execute(["SELECT 1"]), "sql ['SELECT 1']: statements, as str or as a"),
        (lambda s: s.execute("SELECT 1", source=None), "source None: the name errors give"),
        (lambda s: s.execute_file(None), "path None: a SQL script's path"),
        (lambda s: s.rows(("test", "t")), "table ('test', 't'): a table's name, 'schema.table'"),
        (lambda s: s.expect(3), "directory 3: a directory's path"),
        (lambda s: s.diff(":memory:", tables=[1]), "tables [1]: 'schema.table' names"),
        (lambda s: s.diff(":memory:", tables=5), "tables 5: 'schema.table' names"),
        (lambda s: s.assert_replicated(":memory:", rename=["t"]), "rename ['t']: a mapping of"),
        (
            lambda s: s.diff(":memory:", rename={"test.t": None}),
            "rename {'test.t': None}: a mapping of 'schema.table' to its downstream name",
        ),
        (lambda s: s.diff(":memory:", changefeed="feed-1"), "changefeed 'feed-1': not a changef"),
        (lambda s: s.changefeed(None), "sink_uri None: a sink URI such as 'memory://?protocol="),
        (lambda s: s.changefeed("memory://", config=5), "config 5: a path, the TOML's text or"),
        (lambda s: s.changefeed("memory://", TOML_TEXT, faults=0.5), "faults 0.5: 'key=value"),
        (lambda s: s.changefeed("memory://", TOML_TEXT, start_ts=-1), "start_ts -1: a TSO, 0"),
        (
            lambda s: s.changefeed("memory://", TOML_TEXT, changefeed_id=7),
            "changefeed_id 7: the changefeed's name",
        ),
        (lambda s: s.changefeed("memory://", TOML_TEXT, overwrite="y"), "overwrite 'y': True or"),
    ],
)
def test_arguments_of_another_type_are_named(call: Any, message: str) -> None:
    with Simulator() as sim:
        sim.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        with pytest.raises(ConfigError) as raised:
            call(sim)
        assert str(raised.value).startswith(message), str(raised.value)
        assert sim.changefeeds == []


def test_a_changefeed_of_another_simulator_is_refused(tmp_path: Path) -> None:
    with Simulator() as sim, Simulator() as other:
        foreign = other.changefeed("memory://?protocol=simple")
        for call in (
            lambda: sim.expect(tmp_path, changefeed=foreign),
            lambda: sim.diff(":memory:", changefeed=foreign),
        ):
            with pytest.raises(ConfigError) as raised:
                call()
            assert str(raised.value) == (
                "changefeed <Changefeed feed-1 memory://?protocol=simple>: not a changefeed of"
                " this simulator (its changefeed() makes them)"
            )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"spec": 5}, "spec 5: a workload spec's path or the mapping it reads as"),
        (
            {"spec": {}, "sink_uri": None},
            "sink_uri None: a sink URI such as 'memory://?protocol=canal-json'",
        ),
        ({"spec": {}, "overwrite": 1}, "overwrite 1: True or False"),
    ],
)
def test_generate_names_an_argument_of_another_type(
    arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        generate(**arguments)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("uri", "config", "faults", "message"),
    [
        ("memory://", None, None, "sink URI 'memory://': no protocol"),
        ("memory://?protocol=canal-json", "no-such.toml", None, "config 'no-such.toml': cannot"),
        ("memory://?protocol=canal-json", {"enable-old-value": "x"}, None, "config"),
        ("memory://?protocol=canal-json", None, "nonsense", "faults: 'nonsense' is not key=value"),
    ],
)
def test_bad_changefeeds_are_named(uri: str, config: Any, faults: Any, message: str) -> None:
    with Simulator() as sim, pytest.raises(ConfigError) as raised:
        sim.changefeed(uri, config=config, faults=faults)
    assert str(raised.value).startswith(message)
    assert sim.changefeeds == []


def test_a_failed_publish_is_reported_not_dropped() -> None:
    with Simulator() as sim:
        feed = sim.changefeed("memory://?protocol=canal-json&max-message-bytes=300")
        sim.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
        sim.execute(f"INSERT INTO t VALUES (1, '{'x' * 2000}')")  # sent in the batch
        with pytest.raises(SimError) as raised:
            feed.records()
        assert str(raised.value) == (
            f"changefeed {feed.id} failed: a canal-json message of 2270 bytes for test.t at"
            f" commit ts {feed._feed.pipeline._seen_ts} exceeds max-message-bytes 300"
            " (TiCDC: ErrMessageTooLarge)"
        )
        assert feed.error is not None and sim.rows("t")[0]["id"] == 1
        # stopped: what commits next is held back, and the upstream goes on
        sim.execute("INSERT INTO t VALUES (2, 'y')")
        assert [r.offset for r in feed.records()] == [0]
        with Simulator() as other:  # a failure while a statement replicates says so at once
            bad = other.changefeed(
                "memory://?protocol=canal-json&max-message-bytes=300&enable-tidb-extension=true"
            )
            other.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
            # the script runs on (TiDB's session does not stop when TiCDC fails), then it is said
            with pytest.raises(
                ChangefeedFailed, match=f"changefeed {bad.id} failed: .*committed"
            ) as failed:
                other.execute(
                    f"INSERT INTO t VALUES (1, '{'x' * 2000}'); CREATE TABLE u (a INT);"
                    " INSERT INTO t VALUES (2, 'y')"
                )
            assert [r.statement[:20] for r in failed.value.results] == [
                "INSERT INTO t VALUES",
                "CREATE TABLE u (a IN",
                "INSERT INTO t VALUES",
            ]
            assert [r["id"] for r in other.rows("t")] == [1, 2]
            other.execute("INSERT INTO t VALUES (3, 'z')")  # said once; the upstream goes on
        # a failed changefeed's checkpoint stays where it was: none vouches for the lost row
        failed_at = min(r.commit_ts for r in failed.value.results if r.commit_ts)
        checkpoints = [e["ts"] for e in bad.events() if e["type"] == "checkpoint"]
        assert checkpoints and max(checkpoints) < failed_at


def test_a_changefeed_from_the_past_replays_what_committed_since() -> None:
    with Simulator() as sim:
        sim.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        first = sim.execute("INSERT INTO t VALUES (1)")[0].commit_ts
        assert first is not None
        sim.execute("INSERT INTO t VALUES (2)")
        feed = sim.changefeed("memory://?protocol=canal-json", start_ts=first)
        inserted = [e["columns"] for e in feed.events() if e["type"] == "insert"]
        assert inserted == [{"id": 2}]


def test_a_closed_simulator_keeps_its_records_and_takes_no_statement() -> None:
    sim = Simulator()
    feed = sim.changefeed("memory://?protocol=canal-json&enable-tidb-extension=true")
    sim.execute("CREATE TABLE t (id INT PRIMARY KEY); BEGIN; INSERT INTO t VALUES (1)")
    sim.close()  # the open transaction is rolled back: nothing of it is sent
    assert {e["type"] for e in feed.events()} == {"ddl", "checkpoint"}
    with pytest.raises(SimError, match="the simulator is closed"):
        sim.execute("SELECT 1")
    assert sim.close() == []


def test_file_sinks_are_finished_at_close(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with Simulator() as sim:
        feed = sim.changefeed(f"jsonl://{out}?protocol=canal-json")
        sim.execute("CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)")
    on_disk = sorted(read_jsonl(str(out)), key=lambda r: (r.topic, r.partition, r.offset))
    assert on_disk == feed.records()


def test_a_directory_holding_output_says_how_to_replace_it_from_python(tmp_path: Path) -> None:
    out = tmp_path / "out"
    uri = f"jsonl://{out}?protocol=canal-json"
    spec = {"tables": [{"ddl": "CREATE TABLE t (id INT PRIMARY KEY)", "rows": 2}]}
    first = generate(spec, uri)
    refused = f"jsonl sink: {out} is not empty; pass overwrite=True to replace it"
    with Simulator() as sim:
        with pytest.raises(ConfigError) as raised:
            sim.changefeed(uri)
        assert str(raised.value) == refused
        with pytest.raises(ConfigError) as again:
            generate(spec, uri)
        assert str(again.value) == refused
        feed = sim.changefeed(uri, overwrite=True)
        sim.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    on_disk = sorted(read_jsonl(str(out)), key=lambda r: (r.topic, r.partition, r.offset))
    assert on_disk == feed.records() != first


def test_importing_the_package_loads_nothing_heavy() -> None:
    code = (
        "import sys, ticdc_sim\n"
        "heavy = {'ticdc_sim.api', 'sqlglot', 'pyarrow', 'fastapi', 'pyspark', 'confluent_kafka'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
        "ticdc_sim.Simulator\n"
        "print('ticdc_sim.api' in sys.modules, sorted(ticdc_sim.__all__) == ticdc_sim.__all__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "True True"]
    assert set(ticdc_sim.__all__) <= set(dir(ticdc_sim))


# -- the consumer checker through the API ---------------------------------------------------

CHECKED = (
    "CREATE TABLE t (id INT PRIMARY KEY, d DECIMAL(6,2), dt DATETIME(3), s VARCHAR(8));\n"
    "CREATE TABLE nokey (a INT);\n"  # not replicated: no handle key
    "INSERT INTO t VALUES (1, 1.5, '2024-01-02 03:04:05.678', 'a'), (2, NULL, NULL, 'b');\n"
    "INSERT INTO nokey VALUES (1);\n"
)


def test_diff_and_assert_replicated_against_sqlite(tmp_path: Path) -> None:
    import sqlite3

    down = sqlite3.connect(tmp_path / "down.db")
    down.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, d REAL, dt TEXT, s TEXT)")
    down.execute("INSERT INTO t VALUES (1, 1.5, '2024-01-02 03:04:05.678', 'a')")
    down.commit()
    with Simulator() as sim:
        sim.execute(CHECKED)
        found = sim.diff(down)
        assert found and not found.ok
        assert "missing" in found.report() and "id=2" in found.report()
        with pytest.raises(AssertionError) as raised:
            sim.assert_replicated(down)
        assert str(raised.value) == found.report()
        down.execute("INSERT INTO t VALUES (2, NULL, NULL, 'b')")
        down.commit()
        assert sim.assert_replicated(down).ok
        sim.execute("BEGIN; DELETE FROM t")  # what is not committed is not expected
        assert sim.diff(f"sqlite:///{tmp_path / 'down.db'}").ok
        assert not sim.diff(down, tables=["test.t"])


def test_diff_against_mariadb_uses_the_changefeeds_filter(mariadb: Any) -> None:
    conn = mariadb.connect()
    mariadb.reset(conn)
    with conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE test.t (id INT PRIMARY KEY, d DECIMAL(6,2), dt DATETIME(3), s VARCHAR(8))"
        )
        cur.execute("INSERT INTO test.t VALUES (1, 1.5, '2024-01-02 03:04:05.678', 'a')")
        cur.execute("INSERT INTO test.t VALUES (2, NULL, NULL, 'c')")
    with Simulator() as sim:
        feed = sim.changefeed(
            "memory://?protocol=canal-json", config={"filter": {"rules": ["test.nothing"]}}
        )
        sim.execute(CHECKED)
        assert sim.diff(conn, changefeed=feed).ok  # it replicates none of them
        found = sim.diff(conn)
        assert "id=2: s 'b' -> 'c'" in found.report()
    conn.close()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"tables": []}, "spec: tables: needs at least 1 item"),
        (
            {"tables": [{"ddl": "CREATE TABLE t (id INT PRIMARY KEY)", "rows": "x"}]},
            "spec: tables[0].rows: expected integer, not 'x'",
        ),
        ("/no/such/spec.yaml", "/no/such/spec.yaml: No such file or directory"),
    ],
)
def test_a_bad_spec_is_named(spec: Any, message: str) -> None:
    with pytest.raises(SimError) as raised:
        generate(spec)
    assert str(raised.value).startswith(message)


def test_a_generate_that_fails_leaves_its_directory_partial(tmp_path: Path) -> None:
    spec = {
        "tables": [{"ddl": "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", "rows": 5}],
        "operations": {"events": 50},
    }
    out = tmp_path / "out"
    with pytest.raises(SimError, match="exceeds max-message-bytes 100"):
        generate(spec, f"jsonl://{out}?protocol=canal-json&max-message-bytes=100")
    assert not out.exists() and (tmp_path / "out.partial").is_dir()


def test_file_sinks_and_expect_each_need_a_directory_of_their_own(tmp_path: Path) -> None:
    with Simulator() as sim:
        sim.changefeed(f"jsonl://{tmp_path / 'out'}?protocol=canal-json")
        with pytest.raises(ConfigError) as raised:
            sim.changefeed(f"parquet://{tmp_path / 'out' / 'inner'}?protocol=open-protocol")
        assert str(raised.value) == (
            f"sink URI 'parquet://{tmp_path / 'out' / 'inner'}?protocol=open-protocol':"
            f" changefeed feed-1 writes {tmp_path / 'out'}; give each changefeed a directory"
            " of its own, neither inside the other"
        )
        with pytest.raises(ConfigError, match="changefeed feed-1 writes"):
            sim.expect(tmp_path / "out")
        sim.execute("CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)")
    assert len(list(read_jsonl(str(tmp_path / "out")))) == 2  # the DDL and the insert, on disk


def test_a_changefeed_start_ts_is_checked() -> None:
    with Simulator() as sim, pytest.raises(ConfigError, match=r"start_ts -1: a TSO, 0 to"):
        sim.changefeed("memory://?protocol=canal-json", start_ts=-1)


def test_a_config_path_may_hold_an_equals_sign(tmp_path: Path) -> None:
    folder = tmp_path / "a=b"
    folder.mkdir()
    (folder / "feed.toml").write_text("enable-old-value = false\n")
    with Simulator() as sim:
        feed = sim.changefeed("memory://?protocol=open-protocol", config=str(folder / "feed.toml"))
        assert feed.config.enable_old_value is False


def test_the_api_logs_nothing_of_its_own(caplog: pytest.LogCaptureFixture) -> None:
    """A changefeed's config warnings are in `feed.warnings`, not on the host's stderr."""
    with Simulator() as sim:
        feed = sim.changefeed("memory://?protocol=open-protocol&enable-tidb-extension=true")
    assert feed.warnings and caplog.records == []


def test_a_changefeed_id_follows_ticdcs_rules() -> None:
    with Simulator() as sim:
        with pytest.raises(SimError, match="^invalid changefeed_id: bad id$"):
            sim.changefeed("memory://?protocol=canal-json", changefeed_id="bad id")
        feed = sim.changefeed("memory://?protocol=canal-json", changefeed_id="orders-1")
        assert feed.id == "orders-1"
        with pytest.raises(SimError, match="changefeed already exists, orders-1"):
            sim.changefeed("memory://?protocol=canal-json", changefeed_id="orders-1")


def test_rows_and_diff_name_tables_with_dots_and_backquotes_as_mysql_quotes_them() -> None:
    with Simulator() as sim:
        sim.execute(
            "CREATE TABLE `a.b` (id INT PRIMARY KEY); INSERT INTO `a.b` VALUES (1);"
            "CREATE TABLE `we``ird` (id INT PRIMARY KEY); INSERT INTO `we``ird` VALUES (2);"
            "CREATE DATABASE `d.x`; CREATE TABLE `d.x`.t (id INT PRIMARY KEY);"
            "INSERT INTO `d.x`.t VALUES (3);"
            "CREATE DATABASE d; CREATE TABLE d.`x.t` (id INT PRIMARY KEY);"
            "INSERT INTO d.`x.t` VALUES (4)"
        )
        assert sim.rows("test.`a.b`") == sim.rows("`test`.`a.b`") == [{"id": 1}]
        assert sim.rows("test.a.b") == [{"id": 1}]  # unquoted, it can mean only one table
        assert sim.rows("`we``ird`") == sim.rows("test.we`ird") == [{"id": 2}]
        assert sim.rows("`d.x`.t") == [{"id": 3}]
        assert sim.rows("d.`x.t`") == [{"id": 4}]
        with pytest.raises(ConfigError) as raised:
            sim.rows("d.x.t")
        assert str(raised.value) == (
            "table 'd.x.t' is `d.x`.t or d.`x.t`: quote the names, as MySQL does"
        )
        with pytest.raises(SQLError) as missing:
            sim.rows("test.`a.c`")
        assert str(missing.value) == "ERROR 1146 (42S02): Table 'test.a.c' doesn't exist"

        downstream = sqlite3.connect(":memory:")
        chosen = sim.diff(downstream, tables=["test.`a.b`", "`d.x`.t", "TEST.`WE``IRD`"])
        assert [(t.schema, t.name) for t in chosen.tables] == [
            ("test", "a.b"),
            ("d.x", "t"),
            ("test", "we`ird"),
        ]
        with pytest.raises(CheckError) as ambiguous:
            sim.diff(downstream, tables=["d.x.t"])
        assert str(ambiguous.value) == (
            "table 'd.x.t' is `d.x`.t or d.`x.t`: quote the names, as MySQL does"
        )
        with pytest.raises(CheckError) as unknown:
            sim.diff(downstream, rename={"test.a": "x"})
        assert str(unknown.value) == (
            "rename 'test.a': not a table of the expected state (test.`a.b`, test.`we``ird`,"
            " `d.x`.t, d.`x.t`)"
        )


def test_a_downstream_that_cannot_be_read_is_named_as_the_argument(tmp_path: Path) -> None:
    with Simulator() as sim:
        for target, message in [
            (
                5,
                "target (a connection): a builtins.int: check reads SQLite (sqlite3) and"
                " MySQL-compatible databases (pymysql, MySQLdb, mysql.connector, mariadb)",
            ),
            (
                f"sqlite:///{tmp_path}/none.db",
                f"target sqlite:///{tmp_path}/none.db: {tmp_path}/none.db: no such file",
            ),
        ]:
            with pytest.raises(CheckError) as raised:
                sim.assert_replicated(target)
            assert str(raised.value) == message


def test_diff_takes_a_table_without_its_schema_as_rows_does() -> None:
    with Simulator() as sim:
        sim.execute(
            "CREATE TABLE t (id INT PRIMARY KEY); CREATE DATABASE shop; USE shop;"
            "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)"
        )
        downstream = sqlite3.connect(":memory:")
        downstream.execute("CREATE TABLE t2 (id INT PRIMARY KEY)")
        found = sim.diff(downstream, tables="t", rename={"t": "t2"})
        assert [(t.schema, t.name, t.downstream_name) for t in found.tables] == [
            ("shop", "t", "t2")
        ]
        assert [m for t in found.tables for m in t.missing] == [{"id": 1}]
        with pytest.raises(CheckError) as raised:
            sim.diff(downstream, tables=["u"])
        assert str(raised.value) == (
            "table 'shop.u': not a table of the expected state (test.t, shop.t)"
        )


def test_close_says_where_each_changefeeds_records_went(tmp_path: Path) -> None:
    sim = Simulator()
    sim.changefeed("memory://?protocol=canal-json")
    sim.changefeed("blackhole://?protocol=canal-json")
    sim.changefeed(f"jsonl://{tmp_path}?protocol=canal-json")
    sim.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    assert sim.close() == [
        "changefeed simulator/feed-1: 1 records to memory:// (kept in process)",
        "changefeed simulator/feed-2: 1 records to blackhole:// (dropped)",
        f"changefeed simulator/feed-3: 1 records to jsonl files in {tmp_path}",
        f"changefeed simulator/feed-3: {remain(tmp_path)}",
    ]


def test_sleep_passes_time_for_the_changefeed_too(tmp_path: Path) -> None:
    """DO SLEEP(n) moves the simulated clock: the 1 s checkpoint ticker fires in between,
    the same in a replay and in a simulator."""
    script = tmp_path / "s.sql"
    query = "?protocol=canal-json&enable-tidb-extension=true&partition-num=1"
    text = "CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\n"
    script.write_text(text + "DO SLEEP(3);\nINSERT INTO t VALUES (2);\n")
    with Simulator() as sim:
        feed = sim.changefeed(f"memory://{query}")
        sim.execute_file(script)
    kinds = [e["type"] for e in feed.events()]
    between = kinds[kinds.index("insert") + 1 : len(kinds) - 1 - kinds[::-1].index("insert")]
    assert between == ["checkpoint"]  # the ticker, before the second insert
    assert feed.records() == _replayed(tmp_path, script, query)
