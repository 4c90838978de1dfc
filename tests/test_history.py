"""The cluster's history (issue 28): bounded by bytes as well as events, its GC safepoint
where the oldest fell out, and what changefeeds read from it: one created with a past
start-ts, one resumed after a stop, and one whose checkpoint the history no longer reaches
(TiCDC's snapshot lost by GC)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from ticdc_sim.cluster import (
    _EVENT_BYTES,
    _IMAGE_BYTES,
    Cluster,
    held_bytes,
    transaction_bytes,
)
from ticdc_sim.model.events import RowChangedEvent
from ticdc_sim.model.table import FIXED_VALUE_BYTES
from ticdc_sim.service.app import create_app
from ticdc_sim.service.settings import Settings

ROW = "INSERT INTO t VALUES ({0}, 'row-{0:04d}');"


def _cluster(**bounds: int) -> Cluster:
    cluster = Cluster("c", 7, lock_wait_s=1.0, max_txn_rows=1000, settle_heap=False, **bounds)
    assert not cluster.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20));").failed
    return cluster


def _commits(cluster: Cluster, first: int, count: int) -> list[int]:
    """`count` one-row transactions; their commit ts."""
    out = []
    for i in range(first, first + count):
        done = cluster.execute(ROW.format(i))
        assert not done.failed
        out.append(done.committed[0].commit_ts)
    return out


def test_the_history_is_bounded_by_bytes_and_moves_the_gc_safepoint() -> None:
    cluster = _cluster()
    ddl, *_ = cluster.history
    size = held_bytes(cluster.history[0])
    assert cluster.history_size == size  # the CREATE TABLE alone
    committed = _commits(cluster, 1, 10)
    rows = list(cluster.history)[1:]
    assert [e.commit_ts for e in rows] == committed
    row_size = held_bytes(rows[0])
    assert all(held_bytes(e) == row_size for e in rows)  # the same shape of row
    assert cluster.history_size == size + 10 * row_size

    # bounded to four rows' bytes: the DDL and the first six rows fall out
    bounded = _cluster(history_bytes=4 * row_size)
    committed = _commits(bounded, 1, 10)
    assert [e.commit_ts for e in bounded.history] == committed[6:]
    assert bounded.gc_safepoint == committed[5]
    assert bounded.history_size == 4 * row_size
    assert [e.commit_ts for e in bounded.changes_since(committed[7])] == committed[8:]
    # the count bound holds beside it
    counted = _cluster(history_events=3)
    committed = _commits(counted, 1, 5)
    assert [e.commit_ts for e in counted.history] == committed[2:]
    assert counted.gc_safepoint == committed[1]
    assert ddl.commit_ts < committed[0]


def test_a_transaction_leaves_the_history_whole() -> None:
    """Its rows kept after the safepoint moved to its commit ts would never be read."""
    cluster = _cluster(history_events=3)
    first, second = (
        cluster.execute(f"BEGIN; {ROW.format(i)} {ROW.format(i + 1)} COMMIT;").committed[0]
        for i in (1, 3)
    )
    assert [e.commit_ts for e in cluster.history] == [second.commit_ts] * 2
    assert cluster.gc_safepoint == first.commit_ts
    assert cluster.history_size == sum(map(held_bytes, cluster.history))
    # a DDL and a transaction's rows in one request: each counted as `held_bytes` says
    mixed = _cluster()
    mixed.execute("ALTER TABLE t ADD COLUMN n INT; INSERT INTO t VALUES (9, 'nine', 5);")
    kinds = [type(e).__name__ for e in mixed.history]
    assert kinds == ["DDLEvent", "DDLEvent", "RowChangedEvent"]
    assert mixed.history_size == sum(map(held_bytes, mixed.history)) > 2048


def test_a_checkpoint_behind_the_gc_safepoint_is_snapshot_lost() -> None:
    cluster = _cluster(history_events=3)
    committed = _commits(cluster, 1, 5)
    try:
        cluster.changes_since(committed[0])
    except Exception as e:
        assert getattr(e, "error_code", None) == "CDC:ErrSnapshotLostByGC"
        assert str(e) == (
            "fail to create or maintain changefeed due to snapshot loss caused by GC."
            f" checkpoint-ts {committed[0]} is earlier than or equal to GC safepoint at"
            f" {committed[1]} (TICDC_SIM_HISTORY_BYTES and TICDC_SIM_HISTORY_EVENTS bound"
            " what is kept)"
        )
    else:
        raise AssertionError("a checkpoint before the safepoint was served")
    assert [e.commit_ts for e in cluster.changes_since(committed[1])] == committed[2:]


def _service(tmp_path: Path, **settings: Any) -> TestClient:
    return TestClient(create_app(Settings(data_dir=tmp_path / "data", mysql_port=0, **settings)))


def _ids(client: TestClient, feed: str) -> list[int]:
    page = client.get(
        "/sim/v1/clusters/default/changefeeds/" + feed + "/messages", params={"limit": 1000}
    ).json()["messages"]
    return [d["columns"]["id"] for m in page for d in m["decoded"] if d["type"] != "ddl"]


def _sql(client: TestClient, text: str) -> list[int]:
    answer = client.post("/sim/v1/clusters/default/sql", content=text)
    assert answer.status_code == 200 and answer.json()["ok"], answer.text
    return [t["commit_ts"] for t in answer.json()["transactions"]]


def test_a_resumed_changefeed_replicates_from_the_history_and_holds_nothing_while_stopped(
    tmp_path: Path,
) -> None:
    with _service(tmp_path, history_events=6) as client:
        body = {"changefeed_id": "m", "sink_uri": "memory://?protocol=canal-json"}
        assert client.post("/api/v2/changefeeds", json=body).status_code == 200
        _sql(client, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20));" + ROW.format(1))
        assert client.post("/api/v2/changefeeds/m/pause").status_code == 200
        _sql(client, ROW.format(2) + ROW.format(3))
        feed = client.app.state.sim.registry.get("default").feeds["m"]  # type: ignore[attr-defined]
        assert not hasattr(feed, "paused")  # a stopped changefeed keeps nothing itself
        assert client.post("/api/v2/changefeeds/m/resume").status_code == 200
        assert _ids(client, "m") == [1, 2, 3]  # in order, each once
        assert client.get("/api/v2/changefeeds/m/status").json()["state"] == "normal"

        # stopped while more commits than the history keeps: it fails once the history
        # passes it (TiCDC's GC error), and resuming it is refused as TiCDC refuses it
        assert client.post("/api/v2/changefeeds/m/pause").status_code == 200
        _sql(client, "".join(ROW.format(i) for i in range(4, 12)))
        status = client.get("/api/v2/changefeeds/m/status").json()
        assert status["state"] == "failed", status
        assert status["last_error"]["code"] == "CDC:ErrSnapshotLostByGC", status
        refused = client.post("/api/v2/changefeeds/m/resume")
        assert refused.status_code == 400, refused.text
        assert refused.json()["error_code"] == "CDC:ErrStartTsBeforeGC"
        assert "is earlier than or equal to GC safepoint at" in refused.json()["error_msg"]
        assert _ids(client, "m") == [1, 2, 3]


def test_an_event_is_counted_at_least_at_what_its_values_hold() -> None:
    """Fixed-size columns are counted at their type's most (`FIXED_VALUE_BYTES`), the rest
    value by value: never below what the images' values hold, each counted whole as if
    shared by nothing; a transaction over two tables is sized table by table."""
    cluster = Cluster("c", 7, lock_wait_s=1.0, max_txn_rows=1000, settle_heap=False)
    table = (
        "CREATE TABLE k (id BIGINT UNSIGNED PRIMARY KEY, i INT, s SMALLINT, f FLOAT,"
        " d DOUBLE, m DECIMAL(65, 30), v VARCHAR(40), b BLOB, t DATETIME(6), j JSON,"
        " e ENUM('a', 'b'), y YEAR, x BIT(8), g INT AS (i + 1))"
    )
    script = [
        table,
        "CREATE TABLE one (id INT PRIMARY KEY, v VARCHAR(10))",  # one column sized by value
        "BEGIN",
        "INSERT INTO k VALUES (18446744073709551615, -2147483648, -5, 1.5, -2.5e300,"
        " 12345678901234567890123456789012345.123456789012345678901234567890, 'ñandú 😀',"
        " x'00ff', '2024-02-29 23:59:59.999999', '{\"a\": [1, 2]}', 'b', 2024, b'1',"
        " DEFAULT)",
        "INSERT INTO one VALUES (1, 'x'), (2, NULL)",
        "INSERT INTO k (id) VALUES (1)",
        "COMMIT",
        "UPDATE k SET v = REPEAT('x', 40), i = 7 WHERE id = 1",
        "DELETE FROM k WHERE id = 18446744073709551615",
    ]
    done = cluster.execute(";\n".join(script) + ";")
    assert not done.failed, done.outcomes[-1].error
    rows = [e for e in cluster.history if isinstance(e, RowChangedEvent)]
    assert sorted((e.table.name, e.kind) for e in rows) == [
        ("k", "delete"),
        ("k", "insert"),
        ("k", "insert"),
        ("k", "update"),
        ("one", "insert"),
        ("one", "insert"),
    ]
    expected = 0
    for event in rows:
        images = [i for i in (event.columns, event.pre_columns) if i is not None]
        types = [c.tp for c in event.table.columns]
        held = sum(sys.getsizeof(v) for image in images for v in image)
        counted = sum(
            FIXED_VALUE_BYTES.get(tp, sys.getsizeof(v))
            for image in images
            for tp, v in zip(types, image, strict=True)
        )
        overhead = _EVENT_BYTES + sum(_IMAGE_BYTES + 8 * len(image) for image in images)
        assert held_bytes(event) == overhead + counted >= overhead + held, event
        expected += overhead + counted
    assert transaction_bytes(rows) == expected  # several tables at once, as one request's
