"""The kafka:// sink under a broker that goes away (a Tansu of each test's own, stopped, paused
or restarted): a send gives up in bounded time with TiCDC's error, the acknowledged checkpoint
is exact and waits for a hung broker, and a rebuilt sink creates its topic again."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import pytest

from ticdc_sim.config import changefeed
from ticdc_sim.encoders import Message
from ticdc_sim.errors import SimError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.pipeline import Pipeline
from ticdc_sim.sinks import Confirmed, open_sink
from ticdc_sim.sinks import kafka as kafka_sink
from ticdc_sim.sinks.kafka import KafkaSendFailed, KafkaSink
from ticdc_sim.testing.broker import Broker

_NAMES = itertools.count()
_WAIT_S = 20.0  # for the broker: acknowledgements on a loaded 2-core box


def _sink(broker: Broker, topic: str, more: str = "", **kw: Any) -> KafkaSink:
    uri = changefeed(f"kafka://{broker.bootstrap}/{topic}?protocol=canal-json{more}").sink
    sink = open_sink(uri, **kw)
    assert isinstance(sink, KafkaSink)
    return sink


def _until(what: Callable[[], object], expected: object) -> object:
    """`what()` once it is `expected`, or its last value after _WAIT_S."""
    return _first(what, lambda found: found == expected)


def _first(what: Callable[[], object], done: Callable[[object], bool]) -> object:
    deadline = time.monotonic() + _WAIT_S
    while not done(found := what()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def test_send_gives_up_on_a_full_queue_in_bounded_time(
    own_broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kafka_sink, "_QUEUE_WAIT_S", 0.5)
    topic = f"full-{next(_NAMES)}"
    sink = _sink(own_broker, topic, kafka_queue_bytes=16 << 10)  # a 16 KiB local queue
    assert sink.partition_count(topic, None) == 3
    own_broker.stop()
    records = [Message(None, bytes(1024), 1)] * 64  # 64 KiB: four times the queue
    started = time.monotonic()
    with pytest.raises(KafkaSendFailed) as raised:
        sink.send(topic, 0, records)
    took = time.monotonic() - started
    assert 0.5 <= took < 2.5, took
    error = raised.value
    assert (error.error_code, error.retryable) == ("CDC:ErrKafkaAsyncSendMessage", True)
    assert str(error) == (
        f"kafka async send message failed: {topic}[0]: the local queue stayed full for 0.5 s"
        f" (the brokers at {own_broker.bootstrap} took none of its records)"
    )
    assert sink.failure() is error  # the first failure stays the sink's
    queued = sink.partitions_seen[(topic, 0)].sent
    assert 0 < queued < 64  # what went into the queue before it was full is counted
    sink.producer.purge()
    sink.abort()
    assert sink.partitions_seen[(topic, 0)].failed == queued


def test_a_record_the_broker_never_acknowledges_is_the_sinks_failure(
    own_broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = f"gone-{next(_NAMES)}"
    sink = _sink(own_broker, topic, "&read-timeout=250ms&write-timeout=250ms")  # 4 x: 1 s
    assert isinstance(sink, Confirmed)
    sink.partition_count(topic, None)
    sink.send(topic, 1, [Message(b"k", b"v", 5)])
    sink.resolved(topic, 1, 5)
    assert _until(sink.acknowledged_ts, 5) == 5
    own_broker.stop()
    sink.send(topic, 1, [Message(b"k", b"w", 9)])
    sink.resolved(topic, 1, 9)
    error = _first(sink.failure, lambda found: found is not None)
    assert isinstance(error, KafkaSendFailed)
    assert str(error) == (f"kafka async send message failed: {topic}[1]: Local: Message timed out")
    assert (error.error_code, error.retryable) == ("CDC:ErrKafkaAsyncSendMessage", True)
    assert sink.acknowledged_ts() == 5  # the failed checkpoint never counts
    with pytest.raises(SimError) as lost:
        sink.close()
    assert str(lost.value) == (
        f"kafka {own_broker.bootstrap}: 1 records were not acknowledged (Local: Message timed out)\n"
        "resume points (the last acknowledged checkpoint per partition):\n"
        f"  {topic}[1]: 1/2 acknowledged, checkpoint 5"
    )
    assert getattr(lost.value, "resume_from", None) == f"{topic}[1]=5"


SCRIPT = """
CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20));
INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd');
UPDATE t SET v = 'x' WHERE id < 3;
"""
MORE = "INSERT INTO t VALUES (5, 'e'), (6, 'f'), (7, 'g');\nDELETE FROM t WHERE id = 1;\n"


def _push(engine: Engine, pipeline: Pipeline, script: str) -> None:
    for event in engine.run(split_script(script.splitlines(keepends=True), "t.sql")):
        pipeline.push(event)
    pipeline.flush()  # the batch, then a checkpoint on every partition


def test_acknowledged_ts_is_the_last_checkpoint_and_waits_for_a_hung_broker(
    own_broker: Broker,
) -> None:
    topic = f"acked-{next(_NAMES)}"
    feed = changefeed(
        f"kafka://{own_broker.bootstrap}/{topic}?protocol=canal-json&enable-tidb-extension=true"
    )
    sink = open_sink(feed.sink)
    assert isinstance(sink, KafkaSink)
    pipeline, engine = Pipeline(feed, sink), Engine()
    assert sink.acknowledged_ts() == 0
    _push(engine, pipeline, SCRIPT)
    first = pipeline.summary.checkpoint_ts
    assert first == engine.catalog.clock.last  # the last commit's ts
    assert _until(sink.acknowledged_ts, first) == first
    assert {(p, s.checkpoint) for (_, p), s in sink.partitions_seen.items()} == {
        (0, first),
        (1, first),
        (2, first),
    }
    assert all(not s.pending for s in sink.partitions_seen.values())  # pruned once acked
    own_broker.pause()
    try:
        _push(engine, pipeline, MORE)
        second = pipeline.summary.checkpoint_ts
        assert second > first
        time.sleep(1.0)  # the broker would have answered by now
        assert sink.acknowledged_ts() == first
        assert sink.failure() is None  # hung, not failed: the message timeout is 40 s
    finally:
        own_broker.resume()
    assert _until(sink.acknowledged_ts, second) == second
    pipeline.close()
    assert sink.acknowledged_ts() == second  # closed: the books stay readable


def test_a_rebuilt_sink_creates_its_topic_again_after_a_broker_restart(own_broker: Broker) -> None:
    topic = f"again-{next(_NAMES)}"
    first = _sink(own_broker, topic)
    assert first.partition_count(topic, 2) == 2
    first.send(topic, 1, [Message(b"k", b"before", 1)])
    first.close()
    own_broker.restart()  # Tansu keeps topics in memory: this one is gone
    rebuilt = _sink(own_broker, topic)
    assert rebuilt.partition_count(topic, 2) == 2
    rebuilt.send(topic, 1, [Message(b"k", b"after", 2)])
    rebuilt.resolved(topic, 1, 2)
    rebuilt.close()
    assert rebuilt.acknowledged_ts() == 2
    uri = changefeed(f"kafka://{own_broker.bootstrap}/{topic}?protocol=canal-json").sink
    assert [(r.partition, r.offset, r.value) for r in kafka_sink.read_topic(uri)] == [
        (1, 0, b"after")
    ]


def test_without_checkpoint_records_the_acknowledged_checkpoint_still_moves(
    own_broker: Broker,
) -> None:
    topic = f"plain-{next(_NAMES)}"
    feed = changefeed(f"kafka://{own_broker.bootstrap}/{topic}?protocol=canal-json")
    sink = open_sink(feed.sink)
    assert isinstance(sink, KafkaSink)
    pipeline, engine = Pipeline(feed, sink), Engine()
    _push(engine, pipeline, SCRIPT)  # canal-json without the TiDB extension: no checkpoints
    assert pipeline.summary.checkpoints == 0
    last = engine.catalog.clock.last
    assert _until(sink.acknowledged_ts, last) == last
    # every partition the run sent to (the DDL's and the table's) is there
    assert sink.resume_from() == ",".join(
        f"{t}[{p}]={last}" for t, p in sorted(sink.partitions_seen)
    )
    assert len(sink.partitions_seen) == 2
    pipeline.close()


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ("", (10_000, 10_000, 40_000)),  # TiCDC's 10 s, 4 attempts
        ("&dial-timeout=100ms&read-timeout=1s&write-timeout=3s", (1_000, 3_000, 12_000)),
        ("&read-timeout=0s&write-timeout=1ms", (10_000, 10, 40)),  # librdkafka's floors
    ],
)
def test_the_uri_timeouts_are_librdkafkas(params: str, expected: tuple[int, int, int]) -> None:
    uri = changefeed(f"kafka://127.0.0.1:9/t?protocol=canal-json{params}").sink
    dial, socket, message = expected
    assert kafka_sink._timeouts(uri.params) == {
        "socket.connection.setup.timeout.ms": dial,
        "socket.timeout.ms": socket,
        "request.timeout.ms": socket,
        "message.timeout.ms": message,
    }
