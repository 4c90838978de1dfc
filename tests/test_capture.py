"""Capture is each changefeed's: the upstream emits what TiKV records (both images, unsplit),
and a changefeed's pipeline applies its own `enable-old-value` and `output-raw-change-event`.
One service cluster feeds changefeeds of different settings, each getting the bytes the CLI
writes for the same script and settings."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ticdc_sim.cli import app as cli
from ticdc_sim.generator.capture import captured
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.model.events import RowChangedEvent
from ticdc_sim.service.app import create_app
from ticdc_sim.service.settings import Settings
from ticdc_sim.sinks.jsonl import read_jsonl

# key changes of every kind: an integer handle moved, a unique key changed (split unless
# raw), a clustered common handle moved, a `_tidb_rowid` table, a row moving partition, and
# transactions touching several tables
SCRIPT = """CREATE TABLE t (id INT PRIMARY KEY, u INT UNIQUE, v INT);
CREATE TABLE c (a VARCHAR(8), b INT, v INT, PRIMARY KEY (a, b) CLUSTERED);
CREATE TABLE r (id INT PRIMARY KEY NONCLUSTERED, u VARCHAR(8) UNIQUE, v INT);
CREATE TABLE p (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id)
  (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE);
INSERT INTO t VALUES (1, 1, 1), (2, 2, 2), (3, 3, 3);
INSERT INTO c VALUES ('x', 1, 1), ('y', 2, 2);
INSERT INTO r VALUES (1, 'a', 1), (2, 'b', 2);
INSERT INTO p VALUES (1, 1), (2, 2);
BEGIN;
UPDATE t SET u = u + 10 WHERE id = 2;
UPDATE t SET id = 30 WHERE id = 3;
UPDATE t SET v = 9 WHERE id = 1;
DELETE FROM c WHERE a = 'y';
UPDATE c SET b = 7 WHERE a = 'x';
INSERT INTO c VALUES ('a', 0, 0);
UPDATE r SET u = 'z' WHERE id = 1;
UPDATE r SET id = 5, v = 5 WHERE id = 2;
UPDATE p SET id = 12 WHERE id = 2;
UPDATE p SET v = 11 WHERE id = 1;
COMMIT;
UPDATE t SET u = 100, v = 100 WHERE id = 1;
DELETE FROM t WHERE id = 30;
"""
SETTINGS = {
    "split": ("", {}),
    "no-old-value": ("enable-old-value = false\n", {"enable_old_value": False}),
    "raw": (
        "[sink.kafka-config]\noutput-raw-change-event = true\n",
        {"sink": {"kafka_config": {"output_raw_change_event": True}}},
    ),
    "raw-no-old-value": (
        "enable-old-value = false\n[sink.kafka-config]\noutput-raw-change-event = true\n",
        {"enable_old_value": False, "sink": {"kafka_config": {"output_raw_change_event": True}}},
    ),
}
QUERY = "?protocol=open-protocol&partition-num=3"


def upstream() -> list[RowChangedEvent]:
    events = Engine().run(split_script(SCRIPT.splitlines(keepends=True), "s.sql"))
    return [e for e in events if isinstance(e, RowChangedEvent)]


def shapes(events: Any) -> list[tuple[str, str, Any, Any]]:
    return [
        (e.table.name, e.kind, e.pre_columns, e.columns)
        for e in events
        if isinstance(e, RowChangedEvent)
    ]


def test_the_upstream_records_both_images_unsplit() -> None:
    rows = upstream()
    txn = shapes(e for e in rows if e.commit_ts == rows[9].commit_ts)
    # sorter order per physical table (delete < update < insert, then by key); a moved handle
    # is TiKV's delete and insert, a changed unique key a whole update
    assert [s for s in txn if s[0] == "t"] == [
        ("t", "delete", (3, 3, 3), None),
        ("t", "update", (1, 1, 1), (1, 1, 9)),
        ("t", "update", (2, 2, 2), (2, 12, 2)),
        ("t", "insert", None, (30, 3, 3)),
    ]
    assert ("r", "update", (1, "a", 1), (1, "z", 1)) in txn
    # the row that left partition p1 ... for p1: a delete in p0 and an insert in p1
    moved = [e for e in rows if e.table.name == "p" and e.commit_ts == rows[9].commit_ts]
    assert [(e.kind, e.physical_table_id != moved[0].physical_table_id) for e in moved] == [
        ("delete", False),
        ("update", False),
        ("insert", True),
    ]


def test_a_changefeed_splits_key_changes_unless_raw() -> None:
    rows = upstream()
    last = shapes(captured(e for e in rows if e.commit_ts == rows[-2].commit_ts))
    assert last == [("t", "delete", (1, 1, 9), None), ("t", "insert", None, (1, 100, 100))]
    raw = shapes(captured(rows[-2:-1], raw_change_event=True))
    assert raw == [("t", "update", (1, 1, 9), (1, 100, 100))]


def test_without_old_values_puts_sort_among_the_inserts_by_row_key() -> None:
    rows = [e for e in upstream() if e.table.name == "t"]
    txn = [e for e in rows if e.commit_ts == rows[3].commit_ts]
    assert shapes(captured(txn, old_value=False)) == [
        ("t", "delete", (3, None, None), None),
        ("t", "insert", None, (1, 1, 9)),
        ("t", "insert", None, (2, 12, 2)),
        ("t", "insert", None, (30, 3, 3)),
    ]


def test_held_rows_still_go_out_when_the_upstream_fails() -> None:
    def failing() -> Any:
        yield from upstream()[:2]
        raise RuntimeError("upstream")

    out: list[Any] = []
    with pytest.raises(RuntimeError):
        out.extend(captured(failing(), old_value=False))
    assert len(out) == 2


def _cli_records(tmp_path: Path, name: str, toml: str) -> list[tuple[Any, ...]]:
    script, config = tmp_path / "s.sql", tmp_path / f"{name}.toml"
    script.write_text(SCRIPT)
    config.write_text(toml)
    out = tmp_path / f"cli-{name}"
    result = CliRunner().invoke(
        cli, ["replay", str(script), "--config", str(config), "--sink-uri", f"jsonl://{out}{QUERY}"]
    )
    assert result.exit_code == 0, result.output
    return sorted(
        (r.topic, r.partition, r.offset, r.key, r.value, tuple(sorted(r.headers.items())))
        for r in read_jsonl(str(out))
    )


def test_one_cluster_feeds_changefeeds_of_different_settings(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", mysql_port=0)
    with TestClient(create_app(settings)) as client:
        for name, (_, replica_config) in SETTINGS.items():
            body = {
                "changefeed_id": name,
                "sink_uri": f"memory://{QUERY}",
                "replica_config": replica_config,
            }
            made = client.post("/api/v2/changefeeds", json=body)
            assert made.status_code == 200, made.text
        posted = client.post("/sim/v1/clusters/default/sql", content=SCRIPT)
        assert posted.status_code == 200 and posted.json()["ok"], posted.text
        served = {}
        for name in SETTINGS:
            page = client.get(
                f"/sim/v1/clusters/default/changefeeds/{name}/messages", params={"limit": 10_000}
            ).json()
            served[name] = sorted(
                (
                    m["topic"],
                    m["partition"],
                    m["offset"],
                    None if m["key"] is None else base64.b64decode(m["key"]),
                    None if m["value"] is None else base64.b64decode(m["value"]),
                    tuple(sorted((k, base64.b64decode(v)) for k, v in m["headers"].items())),
                )
                for m in page["messages"]
            )
    values = {name: [r[4] for r in records] for name, records in served.items()}
    # three different changelogs: without old values there is no update left to split
    assert values["no-old-value"] == values["raw-no-old-value"]
    assert len({tuple(v) for v in values.values()}) == 3
    for name, (toml, _) in SETTINGS.items():
        assert served[name] == _cli_records(tmp_path, name, toml), name
