"""[faults]: TiCDC's at-least-once behaviour on purpose (sinks/faults.py).

The stream with faults keeps TiCDC's promises (checkpoints never go back, no row at or below a
partition's checkpoint comes after it); a consumer that copes as TiCDC's own kafka-consumer
does (drop rows at or below the partition's resolved ts, apply the rest idempotently, a DDL
once) rebuilds the engine's tables; one that applies every record as new is caught.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from support_changelog import (
    _identity,
    _sorted,
    check_ordering,
    decode,
    engine_state,
    merged,
    rebuild,
    replay,
)
from ticdc_sim.cli import app
from ticdc_sim.config import changefeed
from ticdc_sim.encoders import Decoded, DecodedCheckpoint, DecodedDDL, DecodedRow
from ticdc_sim.errors import ConfigError
from ticdc_sim.sinks import Record

SCRIPT = "\n".join(
    [
        "CREATE TABLE t (id INT PRIMARY KEY, v INT, s VARCHAR(10));",
        "CREATE TABLE u (id INT PRIMARY KEY, w VARCHAR(10));",
        *(f"INSERT INTO t VALUES ({i}, {i}, 's{i}');" for i in range(1, 40)),
        *(f"INSERT INTO u VALUES ({i}, 'w{i}');" for i in range(1, 20)),
        "UPDATE t SET v = v + 100 WHERE id < 20;",
        "UPDATE t SET id = id + 1000 WHERE id BETWEEN 30 AND 35;",
        "DELETE FROM u WHERE id > 10;",
        "CREATE TABLE v (id INT PRIMARY KEY);",
        "INSERT INTO u (id, w) VALUES (100, 'late');",
        "INSERT INTO v VALUES (1), (2);",
        *(f"UPDATE t SET s = 'z{i}' WHERE id = {i};" for i in range(1, 15)),
    ]
)
URI = "memory://?protocol=canal-json&enable-tidb-extension=true&partition-num=3"
FAULTS = """
[faults]
duplicate-rate = 0.2
restart-every = 25
ddl-replay-rate = 1.0
resolved-lag = 2
resolved-lag-partitions = [1]
label = {label}
seed = {seed}
"""


def run(seed: int = 1, label: bool = True) -> tuple[Any, list[Record]]:
    toml = FAULTS.format(label=str(label).lower(), seed=seed)
    result = replay(SCRIPT, URI, toml)
    return result, list(result.sink.records())


def idempotent(decoded: list[tuple[Record, Decoded]]) -> dict[str, list[dict[str, Any]]]:
    """What TiCDC's kafka-consumer does: rows at or below the partition's resolved ts are
    fallbacks and dropped; the rest are applied by key, idempotently; a DDL once."""
    resolved: dict[tuple[str, int], int] = {}
    kept: list[tuple[Record, Decoded]] = []
    for record, event in decoded:
        where = (record.topic, record.partition)
        if isinstance(event, DecodedCheckpoint):
            resolved[where] = max(resolved.get(where, 0), event.ts)
        elif isinstance(event, DecodedRow) and (event.commit_ts or 0) <= resolved.get(where, 0):
            continue
        kept.append((record, event))
    tables: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {}
    for event in merged(kept):
        name = f"{event.schema}.{event.table}"
        if isinstance(event, DecodedDDL):
            if event.query.upper().startswith("CREATE TABLE"):
                tables[name] = {}
            continue
        rows = tables[name]
        if event.pre_columns is not None:
            rows.pop(_identity(event, event.pre_columns), None)
        if event.columns is not None:
            rows[_identity(event, event.columns)] = event.columns
    return {name: _sorted(rows.values()) for name, rows in tables.items()}


def test_the_promises_hold_and_a_tidb_style_consumer_rebuilds_the_tables() -> None:
    result, records = run()
    feed = changefeed(URI)
    decoded = decode(feed, records)
    check_ordering(decoded)
    faults = [r.headers.get("ticdc-sim-fault") for r in records]
    assert {b"duplicate", b"restart", b"ddl-replay"} <= set(faults)
    assert result.summary.injected == sum(f is not None for f in faults)
    assert idempotent(decoded) == engine_state(result)
    with pytest.raises(AssertionError, match="already there|never made"):
        rebuild(merged(decoded))  # applying every record as new is caught


def test_injected_records_are_their_originals_byte_for_byte() -> None:
    _, records = run()
    by_offset = {(r.topic, r.partition, r.offset): r for r in records}
    injected = [r for r in records if "ticdc-sim-fault" in r.headers]
    assert injected
    for record in injected:
        original = by_offset[
            (record.topic, record.partition, int(record.headers["ticdc-sim-original-offset"]))
        ]
        assert (record.key, record.value) == (original.key, original.value)
        assert original.offset < record.offset and "ticdc-sim-fault" not in original.headers


def test_resolved_lag_holds_checkpoints_back_on_its_partitions() -> None:
    plain = replay(SCRIPT, URI)
    lagged = replay(SCRIPT, URI, "[faults]\nresolved-lag = 3\nresolved-lag-partitions = [1]\n")

    def checkpoints(sink: Any, partition: int) -> int:
        return sum(
            r.partition == partition and b"TIDB_WATERMARK" in (r.value or b"")
            for r in sink.records()
        )

    assert checkpoints(lagged.sink, 1) < checkpoints(plain.sink, 1)
    assert checkpoints(lagged.sink, 0) == checkpoints(plain.sink, 0)
    final = [r for r in lagged.sink.records() if r.partition == 1][-1]
    assert b"TIDB_WATERMARK" in (final.value or b"")  # the last one is never held


def test_deterministic_under_the_seed_and_unlabelled_without_label() -> None:
    assert run(seed=3)[1] == run(seed=3)[1]
    assert run(seed=3)[1] != run(seed=4)[1]
    _, unlabelled = run(label=False)
    labelled_count = len(run(label=True)[1])
    assert len(unlabelled) == labelled_count
    assert not any(r.headers for r in unlabelled)


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        ("duplicate-rate=2", "not a rate between 0 and 1"),
        ("restart-every=0", "restart-every"),
        ("bogus=1", "faults.bogus: unknown"),
        ("duplicate-rate", "is not key=value"),
    ],
)
def test_bad_faults_say_what_is_wrong(tmp_path: Path, faults: str, message: str) -> None:
    script = tmp_path / "s.sql"
    script.write_text("CREATE TABLE t (id INT PRIMARY KEY);\n")
    result = CliRunner().invoke(app, ["replay", str(script), "--sink-uri", URI, "--faults", faults])
    assert result.exit_code == 1 and message in result.output, result.output


def test_cli_faults_into_jsonl(tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    uri = f"jsonl://{out}?protocol=canal-json&enable-tidb-extension=true"
    result = CliRunner().invoke(
        app,
        ["replay", str(script), "--sink-uri", uri, "--faults", "restart-at=[10;20],label=true"],
    )
    assert result.exit_code == 0, result.output
    assert "injected by [faults]" in result.output
    lines = [orjson.loads(x) for p in out.rglob("*.jsonl") for x in p.read_bytes().splitlines()]
    kinds = {base64.b64decode(h) for line in lines for h in line["headers"].values()}
    assert b"restart" in kinds
    with pytest.raises(ConfigError):
        changefeed("memory://?protocol=canal-json", "[faults]\nrestart-at = [-1]\n")


def test_a_restart_resumes_from_the_checkpoint_even_without_checkpoint_records() -> None:
    """canal-json without the TiDB extension sends no checkpoints, yet TiCDC restarts from
    the changefeed's: only what came after the last one is sent again."""
    script = "\n".join(
        [
            "CREATE TABLE t (id INT PRIMARY KEY);",
            *(f"INSERT INTO t VALUES ({i});" for i in range(10)),
            "CREATE TABLE u (id INT PRIMARY KEY);",  # a DDL forces a checkpoint
            *(f"INSERT INTO u VALUES ({i});" for i in range(3)),
        ]
    )
    toml = "[faults]\nrestart-at = [12]\nlabel = true\n"  # after CREATE TABLE u
    result = replay(script, "memory://?protocol=canal-json&partition-num=1", toml)
    records = list(result.sink.records())
    # the restart comes before u's rows, right after the checkpoint that followed its
    # CREATE: nothing is sent twice (resuming from the start would repeat 12 records)
    assert len(records) == 2 + 13
    assert not any(r.headers for r in records)
