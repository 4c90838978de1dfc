"""A changefeed's log of what it sent: kept by bytes and records in all partitions together,
offsets running on past what was dropped, the window the read API and the tail report, and a
storage sink's log (a topic per file) holding only what it keeps."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from fastapi.testclient import TestClient

from ticdc_sim.encoders import Message
from ticdc_sim.encoders.cloudstorage import METADATA
from ticdc_sim.feedlog import RECORD_OVERHEAD, FeedLog, Retain, size
from ticdc_sim.service.app import create_app
from ticdc_sim.service.settings import Settings

FEED = {
    "changefeed_id": "m",
    "sink_uri": "memory://?protocol=canal-json&partition-num=3",
    "replica_config": {"sink": {"dispatchers": [{"matcher": ["*.*"], "partition": "index-value"}]}},
}
PAGE = "/sim/v1/clusters/default/changefeeds/m/messages"


def message(length: int, key: bytes | None = None) -> Message:
    return Message(key, b"v" * length, 0)


def sent(log: FeedLog, count: int) -> list[tuple[int, int, int]]:
    """`count` records of growing values, round robin over 3 partitions: each one's
    (partition, offset, size)."""
    out = []
    for i in range(count):
        partition = i % 3
        offset = log.counts().get("t", {}).get(partition, 0)
        log.add("t", partition, [message(10 * i)])
        out.append((partition, offset, RECORD_OVERHEAD + 10 * i))
    return out


def test_the_log_keeps_the_newest_records_within_the_bytes_of_all_partitions() -> None:
    bound = 2_000
    log = FeedLog(Retain(bytes=bound))
    everything = sent(log, 30)
    kept, total = [], 0
    for record in reversed(everything):  # the newest whose sizes sum to at most the bound
        if total + record[2] > bound:
            break
        kept.insert(0, record)
        total += record[2]
    assert [(r.partition, r.offset) for r in log.order.newest(log.held)] == [
        (p, o) for p, o, _ in kept
    ]
    assert (log.bytes, log.held, log.dropped, log.total) == (total, len(kept), 30 - len(kept), 30)
    assert (len(kept), total) == (4, 1_804)  # 4 × 176 + 260 + 270 + 280 + 290
    # offsets run on past what went; each partition's window starts at its first kept
    assert log.counts() == {"t": {0: 10, 1: 10, 2: 10}}
    assert log.retained() == {"t": {0: 9, 1: 9, 2: 8}}
    # a read from before the window reads from its start
    assert [(r.partition, r.offset) for r in log.read("t", None, 0, 10)] == [
        (0, 9),
        (1, 9),
        (2, 8),
        (2, 9),
    ]
    assert [r.offset for r in log.read("t", 2, 9, 10)] == [9]
    assert log.read("t", 2, 10, 10) == [] and log.read("u", None, 0, 10) == []
    assert log.read(None, None, 10**30, 10) == [] and log.read("t", 10**30, 0, 10) == []


def test_the_records_bound_holds_in_all_partitions_and_empty_partitions_keep_their_offset() -> None:
    log = FeedLog(Retain(records=4))
    log.add("t", 0, [message(1)] * 5)
    log.add("t", 1, [message(1)] * 2)
    log.add("t", 2, [message(1)] * 3)
    assert (log.held, log.dropped) == (4, 6)
    # partition 0 holds none now: forgotten but for its next offset
    assert list(log.partitions) == [("t", 1), ("t", 2)] and log.gone == {("t", 0): 5}
    assert log.counts() == {"t": {0: 5, 1: 2, 2: 3}}
    assert log.retained() == {"t": {0: 5, 1: 1, 2: 0}}
    log.add("t", 0, [message(1)])  # and its offsets run on; partition 1's records went
    assert [(r.partition, r.offset) for r in log.read(None, None, 0, 10)] == [
        (0, 5),
        (2, 0),
        (2, 1),
        (2, 2),
    ]
    assert log.gone == {("t", 1): 2} and log.counts() == {"t": {0: 6, 1: 2, 2: 3}}


def test_a_tail_behind_the_window_is_told_what_it_skipped() -> None:
    log = FeedLog(Retain(records=3))
    log.add("t", 0, [message(1)] * 2)
    records, skipped, cursor = log.since(0)
    assert ([r.offset for r in records], skipped, cursor) == ([0, 1], 0, 2)
    log.add("t", 0, [message(1)] * 5)  # 5 sent since, 3 kept
    records, skipped, cursor = log.since(cursor)
    assert ([r.offset for r in records], skipped, cursor) == ([4, 5, 6], 2, 7)
    assert log.since(cursor) == ([], 0, 7)


def test_headers_and_keys_count_towards_the_bound() -> None:
    log = FeedLog(Retain())
    log.add("t", 0, [Message(b"k" * 7, b"v" * 20, 0, headers={"label": b"abc"})])
    (record,) = log.read(None, None, 0, 1)
    assert size(record) == log.bytes == RECORD_OVERHEAD + 7 + 20 + len("label") + 3


def test_a_storage_logs_files_leave_nothing_behind_once_dropped() -> None:
    """A storage sink logs one topic per file: a thousand files through a log keeping ten
    leave ten behind, while the files it writes again (metadata, indexes) keep their offsets."""
    log = FeedLog(Retain(records=10))
    log.files = True
    for n in range(1_000):
        log.add(f"test/t/1/CDC{n:06d}.json", 0, [message(5)])
        log.add("test/t/1/meta/CDC.index", 0, [message(5)])
        log.add(METADATA, 0, [message(5)])
    assert log.held == 10 and len(log.partitions) == 5 and log.gone == {}
    # the last 3 data files kept, the index and metadata with their newest versions
    assert log.counts() == {
        **{f"test/t/1/CDC{n:06d}.json": {0: 1} for n in range(997, 1_000)},
        "metadata": {0: 1_000},
        "test/t/1/meta/CDC.index": {0: 1_000},
    }
    assert log.retained()["metadata"] == {0: 996}
    log.add("other", 0, [message(5)] * 10)  # every file dropped: only those written again stay
    assert log.gone == {(METADATA, 0): 1_000, ("test/t/1/meta/CDC.index", 0): 1_000}


def messages_of(client: TestClient, **q: Any) -> dict[str, Any]:
    response = client.get(PAGE, params=q)
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


@contextmanager
def loaded(tmp_path: Path, retain_records: int, rows: int) -> Iterator[tuple[TestClient, FeedLog]]:
    """A service whose changefeed `m` keeps `retain_records`, after a table of `rows` rows."""
    settings = Settings(data_dir=tmp_path / "data", mysql_port=0, retain_records=retain_records)
    with TestClient(create_app(settings)) as client:
        assert client.post("/api/v2/changefeeds", json=FEED).status_code == 200
        values = ", ".join(f"({i})" for i in range(rows))
        script = f"CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES {values};"
        assert client.post("/sim/v1/clusters/default/sql", content=script).status_code == 200
        yield client, client.app.state.sim.registry.get("default").feed("m").log  # type: ignore[attr-defined]


def test_the_read_api_says_where_the_kept_window_starts(tmp_path: Path) -> None:
    with loaded(tmp_path, retain_records=20, rows=30) as (client, log):
        page = messages_of(client, from_offset=0, limit=10_000)
        counts = {t: {int(p): n for p, n in ps.items()} for t, ps in page["counts"].items()}
        retained = {t: {int(p): n for p, n in ps.items()} for t, ps in page["retained"].items()}
        assert (counts, retained) == (log.counts(), log.retained())
        sent = sum(n for ps in counts.values() for n in ps.values())
        assert page["dropped"] == sent - 20 == log.dropped > 0
        # the answer is the window: from each partition's first kept offset, all of it
        firsts: dict[tuple[str, int], int] = {}
        for m in page["messages"]:
            firsts.setdefault((m["topic"], m["partition"]), m["offset"])
        assert len(page["messages"]) == 20
        assert firsts == {
            (t, p): first
            for t, ps in retained.items()
            for p, first in ps.items()
            if first < counts[t][p]
        }
        held = sum(
            RECORD_OVERHEAD
            + len(base64.b64decode(m["value"]))
            + len(base64.b64decode(m["key"] or ""))
            for m in page["messages"]
        )
        assert held == log.bytes


def test_the_tail_reports_a_gap_before_the_records_it_still_has(tmp_path: Path) -> None:
    with loaded(tmp_path, retain_records=5, rows=10) as (client, log):
        client.app.state.sim.stopping = True  # type: ignore[attr-defined]  # the tail ends
        text = client.get(PAGE.replace("messages", "tail"), params={"from_start": True}).text
    events = [block.split("\n") for block in text.split("\n\n") if block]
    assert events[0] == [": tailing"]
    assert events[1] == ["event: gap", f'data: {{"skipped":{log.total - 5}}}']
    assert [e[0] for e in events[2:]] == ["event: message"] * 5 + ["event: end"]
    assert log.total - 5 == log.dropped > 0


def test_what_the_log_counts_is_what_it_holds() -> None:
    """orjson's output keeps the buffer it was written into (4 KiB for 200 bytes): held
    as it came, 2,000 records of 200 bytes would take 8 MB against the 0.75 MB counted. The
    log keeps copies of their own size, so its byte bound is the memory it holds."""
    import tracemalloc

    tracemalloc.start()
    try:
        log = FeedLog(Retain())
        for start in range(0, 2000, 100):
            batch = [orjson.dumps({"v": "x" * 200, "i": i}) for i in range(start, start + 100)]
            log.add("t", start % 3, [Message(None, v, 0) for v in batch])
        del batch
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert log.bytes == sum(
        RECORD_OVERHEAD + len(orjson.dumps({"v": "x" * 200, "i": i})) for i in range(2000)
    )
    assert held < 1.3 * log.bytes, (held, log.bytes)
