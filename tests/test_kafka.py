"""kafka:// against a real broker (`broker` in tests/conftest.py): what reaches Kafka is, record for
record and byte for byte, what the jsonl sink writes for the same replay; TiCDC's topic rules;
and a broker lost in the middle of a run fails the run with its resume points."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from ticdc_sim.config import changefeed
from ticdc_sim.errors import SimError, Warnings
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.pipeline import Pipeline
from ticdc_sim.sinks import Record, open_sink
from ticdc_sim.sinks import kafka as kafka_sink
from ticdc_sim.sinks.jsonl import read_jsonl
from ticdc_sim.testing.broker import Broker

SCRIPT = """
CREATE TABLE shop (id INT PRIMARY KEY, name VARCHAR(20), qty INT, KEY k_qty (qty));
CREATE TABLE audit (id BIGINT PRIMARY KEY AUTO_INCREMENT, note TEXT, at DATETIME(3));
INSERT INTO shop VALUES (1, 'a', 5), (2, 'b', 6), (3, 'c', 7), (4, 'd', 8);
BEGIN;
UPDATE shop SET qty = qty + 1 WHERE id BETWEEN 2 AND 3;
INSERT INTO audit (note, at) VALUES ('n1', '2024-01-01 00:00:00.5'), ('n2', NULL);
COMMIT;
UPDATE shop SET id = 10 WHERE id = 1;
DELETE FROM shop WHERE qty = 8;
ALTER TABLE shop ADD COLUMN extra INT DEFAULT 3;
INSERT INTO shop (id, name, qty) VALUES (20, 'x', 1);
"""
_NAMES = itertools.count()


def fresh(prefix: str) -> str:
    return f"{prefix}-{next(_NAMES)}"


def replay(sink_uri: str, toml: str | None = None, warnings: Warnings | None = None) -> None:
    feed = changefeed(sink_uri, toml)
    warnings = warnings if warnings is not None else Warnings()
    engine = Engine()
    pipeline = Pipeline(feed, open_sink(feed.sink, warnings=warnings), warnings)
    pipeline.run(engine.run(split_script(SCRIPT.splitlines(keepends=True), "t.sql")))


def kafka_records(bootstrap: str, topics: list[str]) -> list[Record]:
    found: list[Record] = []
    for topic in topics:
        uri = changefeed(f"kafka://{bootstrap}/{topic}?protocol=canal-json").sink
        found += kafka_sink.read_topic(uri)
    return found


def jsonl_records(directory: Path, topic_names: dict[str, str]) -> list[Record]:
    """The jsonl sink's records, under the Kafka run's topic names (`topic_names`)."""
    return sorted(
        (r._replace(topic=topic_names[r.topic]) for r in read_jsonl(str(directory))),
        key=lambda r: (r.topic, r.partition, r.offset),
    )


CASES: list[tuple[str, str, str | None]] = [
    ("canal-json", "&enable-tidb-extension=true", None),
    ("open-protocol", "", None),
    # large messages: some rows are over the limit (claim-check files go to {claims})
    (
        "canal-json",
        "&enable-tidb-extension=true&max-message-bytes=300"
        "&large-message-handle-option=handle-key-only&large-message-handle-compression=snappy",
        None,
    ),
    (
        "open-protocol",
        "&max-message-bytes=300&large-message-handle-option=claim-check"
        "&claim-check-storage-uri={claims}",
        None,
    ),
    (
        "canal-json",
        "&enable-tidb-extension=true&partition-num=4",
        "[sink]\ndispatchers = [\n"
        '  {matcher = ["test.shop"], partition = "index-value"},\n'
        '  {matcher = ["test.audit"], partition = "ts"},\n]\n',
    ),
    (
        "open-protocol",
        "&partition-num=2",
        "[sink]\ndispatchers = [\n"
        '  {matcher = ["test.*"], topic = "{schema}_{table}_T", partition = "columns",'
        ' columns = ["id"]},\n]\n',
    ),
]


@pytest.mark.parametrize(("protocol", "params", "toml"), CASES)
def test_kafka_gets_what_jsonl_gets_byte_for_byte(
    broker: Broker,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    protocol: str,
    params: str,
    toml: str | None,
) -> None:
    topic = fresh("feed")
    if "{claims}" in params:  # a short path: the location is part of the message's size
        claims = Path(tempfile.mkdtemp(prefix="cc", dir="/tmp"))
        request.addfinalizer(lambda: shutil.rmtree(claims, ignore_errors=True))
        params = params.replace("{claims}", claims.as_uri())
    expression = toml is not None and "{schema}" in toml
    if expression:  # one topic a table: give this run's names their own suffix
        toml = toml.replace("_T", f"_{topic}")  # type: ignore[union-attr]
    replay(f"kafka://{broker.bootstrap}/{topic}?protocol={protocol}{params}", toml)
    replay(f"jsonl://{tmp_path / 'out'}?protocol={protocol}&topic=ticdc{params}", toml)
    local = list(read_jsonl(str(tmp_path / "out")))
    topics = sorted({r.topic for r in local})
    names = {t: topic if t == "ticdc" else t for t in topics}  # the default topic's name
    expected = jsonl_records(tmp_path / "out", names)
    got = sorted(
        kafka_records(broker.bootstrap, list(names.values())),
        key=lambda r: (r.topic, r.partition, r.offset),
    )
    assert got == expected
    assert len({(r.topic, r.partition) for r in got}) > 1  # the dispatchers spread them


def test_decode_reads_a_topic_back(broker: Broker, tmp_path: Path) -> None:
    topic = fresh("decode")
    replay(f"kafka://{broker.bootstrap}/{topic}?protocol=canal-json&enable-tidb-extension=true")
    replay(
        f"jsonl://{tmp_path / 'out'}?protocol=canal-json&enable-tidb-extension=true&topic={topic}"
    )
    decode = [str(Path(sys.executable).parent / "ticdc-sim"), "decode"]
    from_kafka = subprocess.run(
        [
            *decode,
            f"kafka://{broker.bootstrap}/{topic}?protocol=canal-json&enable-tidb-extension=true",
        ],
        capture_output=True,
        text=True,
    )
    from_jsonl = subprocess.run(
        [*decode, f"jsonl://{tmp_path / 'out'}?protocol=canal-json&enable-tidb-extension=true"],
        capture_output=True,
        text=True,
    )
    assert from_kafka.returncode == 0, from_kafka.stderr
    lines = sorted(from_kafka.stdout.splitlines())
    assert lines and lines == sorted(from_jsonl.stdout.splitlines())


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def test_an_existing_topic_keeps_its_partitions(broker: Broker) -> None:
    """tiflow options.go SetPartitionNum: more than the topic has is an error, fewer is used
    with a warning, none given takes the topic's."""
    topic = fresh("existing")
    _create(broker.bootstrap, topic, 2)
    with pytest.raises(
        SimError, match=r"the number of partition \(3\) specified in sink-uri is more"
    ):
        replay(f"kafka://{broker.bootstrap}/{topic}?protocol=open-protocol&partition-num=3")
    warnings = Warnings()
    replay(
        f"kafka://{broker.bootstrap}/{topic}?protocol=open-protocol&partition-num=1", None, warnings
    )
    assert any("some partitions will not have messages" in str(w) for w in warnings)
    assert {r.partition for r in kafka_records(broker.bootstrap, [topic])} == {0}
    other = fresh("taken")
    _create(broker.bootstrap, other, 5)
    feed = changefeed(f"kafka://{broker.bootstrap}/{other}?protocol=open-protocol")
    sink: Any = open_sink(feed.sink)
    assert sink.partition_count(other, None) == 5
    sink.close()


def test_a_missing_topic_is_created_with_partition_num(broker: Broker) -> None:
    topic = fresh("created")
    replay(f"kafka://{broker.bootstrap}/{topic}?protocol=open-protocol&partition-num=4")
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=30)
    assert len(metadata.topics[topic].partitions) == 4


def test_a_broker_lost_mid_run_fails_the_run_with_resume_points(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    own, why = Broker.start()  # a Tansu of its own, to stop
    if own is None:
        pytest.skip(why)
    monkeypatch.setattr(kafka_sink, "_TIMEOUT_S", 3.0)
    topic = fresh("lost")
    feed = changefeed(
        f"kafka://{own.bootstrap}/{topic}?protocol=canal-json&enable-tidb-extension=true"
    )
    pipeline = Pipeline(feed, open_sink(feed.sink))
    engine = Engine()
    events = list(engine.run(split_script(SCRIPT.splitlines(keepends=True), "t.sql")))
    half = len(events) // 2
    for event in events[:half]:
        pipeline.push(event)
    pipeline._flush()
    pipeline._checkpoint()
    pipeline.sink.producer.flush(10)  # type: ignore[attr-defined]
    own.stop()
    for event in events[half:]:
        pipeline.push(event)
    with pytest.raises(SimError) as failure:
        pipeline.close()
    report = str(failure.value)
    assert "records were not acknowledged" in report
    # the checkpoint acknowledged before the broker went is each partition's resume point
    assert re.search(rf"{topic}\[0\]: \d+/\d+ acknowledged, checkpoint \d+", report), report
