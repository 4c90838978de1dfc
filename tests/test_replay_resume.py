"""`replay --resume-from`: a kafka:// run whose broker died mid-run prints where to resume; the
same command with those options, against the broker restarted, sends the rest (at-least-once
from the smallest checkpoint), and what both runs delivered rebuilds the upstream's tables.
Malformed values, partitions the run does not send to and a missing --start-ts are usage
errors (exit 2) naming the value and the place."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from support_changelog import consumed, decode, engine_state, merged, rebuild, replay
from support_service import Server
from ticdc_sim.cli import app
from ticdc_sim.config import changefeed
from ticdc_sim.encoders import DecodedCheckpoint, DecodedDDL, DecodedRow
from ticdc_sim.sinks import Record
from ticdc_sim.sinks import kafka as kafka_sink
from ticdc_sim.sinks.kafka import KafkaSink
from ticdc_sim.sinks.schema_registry import open_registry
from ticdc_sim.testing.broker import Broker

SCRIPT = """
CREATE TABLE shop (id INT PRIMARY KEY, name VARCHAR(20), qty INT);
INSERT INTO shop VALUES (1, 'a', 5), (2, 'b', 6), (3, 'c', 7), (4, 'd', 8);
UPDATE shop SET qty = qty + 1 WHERE id < 3;
CREATE TABLE audit (id BIGINT PRIMARY KEY AUTO_INCREMENT, note TEXT);
INSERT INTO audit (note) VALUES ('n1'), ('n2'), ('n3');
SELECT SLEEP(2);
INSERT INTO shop VALUES (5, 'e', 1), (6, 'f', 2), (7, 'g', 3);
DELETE FROM shop WHERE id = 4;
CREATE TABLE later (id INT PRIMARY KEY, at DATETIME);
INSERT INTO later VALUES (1, '2024-01-01 00:00:00'), (2, NULL);
UPDATE shop SET qty = id WHERE id > 4;
SELECT SLEEP(2);
INSERT INTO audit (note) VALUES ('n4'), ('n5');
UPDATE shop SET id = 10 WHERE id = 1;
DELETE FROM audit WHERE id = 2;
INSERT INTO shop (id, name, qty) VALUES (20, 'x', 1), (21, 'y', 2);
SELECT SLEEP(2);
UPDATE audit SET note = 'changed' WHERE id > 3;
"""
# the timeouts: a record the dead broker never acknowledges fails after 4 x 250 ms
TIMEOUTS = "&read-timeout=250ms&write-timeout=250ms"
QUERY = f"?protocol=canal-json&enable-tidb-extension=true{TIMEOUTS}"
_NAMES = itertools.count()
_RESUME = re.compile(r"to resume, run the same command with: --start-ts (\d+) --resume-from '(.+)'")


def _replay(script: Path, uri: str, *args: str) -> Any:
    return CliRunner().invoke(app, ["replay", str(script), "--sink-uri", uri, *args])


def _killed_mid_run(
    broker: Broker, monkeypatch: pytest.MonkeyPatch, script: Path, uri: str
) -> tuple[list[Record], tuple[str, str]]:
    """A replay whose broker dies at its 13th send, after what it holds is read: those
    records, and the --start-ts and --resume-from the failed run printed."""
    monkeypatch.setattr(kafka_sink, "_TIMEOUT_S", 3.0)
    first: list[Record] = []
    send, calls = KafkaSink.send, itertools.count()

    def dying(self: KafkaSink, *args: Any) -> None:
        if next(calls) == 12:
            self.producer.flush(10)
            first.extend(kafka_sink.read_topic(changefeed(uri).sink))
            broker.stop()
        send(self, *args)

    monkeypatch.setattr(KafkaSink, "send", dying)
    failed = _replay(script, uri)
    monkeypatch.setattr(KafkaSink, "send", send)
    assert failed.exit_code == 1, failed.output
    found = _RESUME.search(failed.stderr)
    assert found is not None, failed.stderr
    start_ts, value = found.groups()
    return first, (start_ts, value)


def test_a_run_killed_mid_way_resumes_where_the_broker_acknowledged(
    own_broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "shop.sql"
    script.write_text(SCRIPT)
    topic = f"resumed-{next(_NAMES)}"
    uri = f"kafka://{own_broker.bootstrap}/{topic}{QUERY}"
    read_uri = changefeed(uri).sink
    first, (start_ts, value) = _killed_mid_run(own_broker, monkeypatch, script, uri)
    # each partition's resume point: the last checkpoint the broker held
    last: dict[int, int] = {}
    for record, event in decode(changefeed(uri), first):
        if isinstance(event, DecodedCheckpoint):
            last[record.partition] = event.ts
    assert value == ",".join(f"{topic}[{p}]={ts}" for p, ts in sorted(last.items()))
    assert start_ts == "0"

    own_broker.restart()  # the same address, nothing in it
    resumed = _replay(script, uri, "--start-ts", start_ts, "--resume-from", value)
    assert resumed.exit_code == 0, resumed.output
    second = list(kafka_sink.read_topic(read_uri))
    point = min(last.values())
    events = [e for _, e in decode(changefeed(uri), second)]
    changes = [e for e in events if isinstance(e, DecodedRow | DecodedDDL)]
    assert changes and all(e.commit_ts is not None and e.commit_ts > point for e in changes)

    expected = engine_state(replay(SCRIPT, f"memory://{QUERY}"))
    assert rebuild(merged(consumed(first + second, uri))) == expected
    # ... and without the second run, some rows are missing
    assert rebuild(merged(consumed(first, uri))) != expected


def test_resume_from_a_file_and_values_the_run_cannot_take(
    own_broker: Broker, tmp_path: Path
) -> None:
    script = tmp_path / "shop.sql"
    script.write_text(SCRIPT)
    topic = f"refused-{next(_NAMES)}"
    uri = f"kafka://{own_broker.bootstrap}/{topic}{QUERY}"

    def refused(*args: str) -> str:
        result = _replay(script, uri, *args)
        assert result.exit_code == 2, result.output
        return str(result.stderr.splitlines()[-1])

    prefix = "Error: Invalid value for '--resume-from': "
    assert refused("--resume-from", f"{topic}[0]=5") == (
        f"{prefix}needs --start-ts, the one the failed run printed: the run's commit ts, and so"
        " its checkpoints, are those of that start"
    )
    assert refused("--start-ts", "0", "--resume-from", f"{topic}[0]=5, {topic}[1]=x") == (
        f"{prefix}'{topic}[0]=5, {topic}[1]=x', character {len(topic) + 8}: '{topic}[1]=x' is"
        " not TOPIC[PARTITION]=TS (a TSO; e.g. orders[0]=449000000001933327)"
    )
    assert refused("--start-ts", "0", "--resume-from", f"{topic}[0]=5,{topic}[0]=6") == (
        f"{prefix}'{topic}[0]=5,{topic}[0]=6', character {len(topic) + 7}: {topic}[0] again"
    )
    assert refused(
        "--start-ts", "0", "--resume-from", f"{topic}[0]=5", "--expect", str(tmp_path / "e")
    ) == (
        f"{prefix}a resumed run sends part of the changes, so --expect's history would lack"
        " the failed run's: write --expect with a whole run (the same scripts and --start-ts"
        " give the same)"
    )
    assert refused("--start-ts", "0", "--resume-from", f"@{tmp_path / 'none'}") == (
        f"{prefix}cannot read {tmp_path / 'none'}: No such file or directory"
    )
    assert refused("--start-ts", "0", "--resume-from", f"{topic}[3]=5") == (
        f"{prefix}{topic}[3]=5: topic {topic!r} has partitions 0 to 2"
    )
    assert refused("--start-ts", "0", "--resume-from", "other[0]=5") == (
        f"{prefix}other[0]=5: this run sends nothing to topic 'other' (its topics: {topic})"
    )
    held = tmp_path / "resume.txt"
    held.write_text(f"{topic}[0]=0,{topic}[1]=0,{topic}[2]=0\n")
    # from checkpoints 0, a resumed run sends what a whole run sends
    resumed = _replay(script, uri, "--start-ts", "0", "--resume-from", f"@{held}")
    assert resumed.exit_code == 0, resumed.output
    records = list(kafka_sink.read_topic(changefeed(uri).sink))
    whole = replay(SCRIPT, f"memory://{QUERY}")
    assert [(r.partition, r.value) for r in records] == [
        (r.partition, r.value) for r in sorted(whole.sink.records(), key=_place)
    ]


def _place(record: Record) -> tuple[int, int]:
    return record.partition, record.offset


AVRO_SCRIPT = """
CREATE TABLE shop (id INT PRIMARY KEY, qty INT, note VARCHAR(10));
INSERT INTO shop VALUES (1, 5, 'a'), (2, 6, 'b'), (3, 7, NULL);
SELECT SLEEP(2);
UPDATE shop SET qty = qty + 1 WHERE id < 3;
INSERT INTO shop VALUES (4, 8, 'd');
SELECT SLEEP(2);
UPDATE shop SET note = 'c' WHERE id > 2;
INSERT INTO shop VALUES (5, 9, 'e'), (6, 10, 'f');
SELECT SLEEP(2);
UPDATE shop SET qty = 0 WHERE id = 6;
"""  # one table: avro's schemas are a topic's (TiCDC wants one table a topic)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    found = Server.start(tmp_path / "data")
    yield found
    found.stop()


def test_an_avro_run_resumes_with_the_schema_ids_of_the_first(
    own_broker: Broker, server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = httpx.post(f"{server.http}/sim/v1/clusters", json={"id": "resume"})
    assert made.status_code == 201, made.text
    registry = f"{server.http}/sim/v1/clusters/resume/schema-registry"
    script = tmp_path / "shop.sql"
    script.write_text(AVRO_SCRIPT)
    topic = f"avro-{next(_NAMES)}"
    query = f"?protocol=avro&enable-tidb-extension=true&avro-enable-watermark=true{TIMEOUTS}"
    query += f"&schema-registry={registry}"  # watermarks: checkpoints to resume from
    uri = f"kafka://{own_broker.bootstrap}/{topic}{query}"
    read_uri = changefeed(uri).sink
    first, found = _killed_mid_run(own_broker, monkeypatch, script, uri)
    registered = _versions(registry)
    own_broker.restart()
    resumed = _replay(script, uri, "--start-ts", found[0], "--resume-from", found[1])
    assert resumed.exit_code == 0, resumed.output
    second = list(kafka_sink.read_topic(read_uri))
    # the schemas registered again are the same versions: no new id
    assert _versions(registry) == registered
    assert ",".join(f"{topic}[{p}]=0" for p in range(3)) != found[1]  # resumed mid-way
    ids = set(registered[f"{topic}-value"].values())
    assert len(ids) == 1 and _value_ids(first) == _value_ids(second) == ids
    expected = engine_state(replay(AVRO_SCRIPT, f"memory://{QUERY}"))
    schemas = open_registry(registry)
    try:
        applied = consumed(first + second, uri, schemas)
    finally:
        schemas.close()
    assert rebuild(merged(applied)) == expected


def _value_ids(records: list[Record]) -> set[int]:
    """The schema ids of the rows' values (Confluent's wire format: 0, then the id)."""
    return {int.from_bytes(r.value[1:5], "big") for r in records if r.value and r.value[0] == 0}


def _versions(registry: str) -> dict[str, dict[int, int]]:
    """Each subject's versions and their schema ids."""
    out: dict[str, dict[int, int]] = {}
    for subject in httpx.get(f"{registry}/subjects").json():
        versions = httpx.get(f"{registry}/subjects/{subject}/versions").json()
        out[subject] = {
            v: httpx.get(f"{registry}/subjects/{subject}/versions/{v}").json()["id"]
            for v in versions
        }
    return out


def test_a_send_that_gives_up_on_a_full_queue_still_says_where_to_resume(
    own_broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kafka_sink, "_TIMEOUT_S", 2.0)
    monkeypatch.setattr(kafka_sink, "_QUEUE_WAIT_S", 0.3)
    opened = KafkaSink.__init__

    def small_queue(self: KafkaSink, *args: Any, **kw: Any) -> None:
        opened(self, *args, **{**kw, "queue_bytes": 4096})

    monkeypatch.setattr(KafkaSink, "__init__", small_queue)
    rows = ", ".join(f"({i}, '{'x' * 200}')" for i in range(200))
    big = f"CREATE TABLE t (id INT PRIMARY KEY, v TEXT);\nINSERT INTO t VALUES {rows};\n"
    script = tmp_path / "big.sql"
    script.write_text(big)
    topic = f"full-{next(_NAMES)}"
    send, calls = KafkaSink.send, itertools.count()

    def dying(self: KafkaSink, *args: Any) -> None:
        if next(calls) == 4:  # the DDL and its checkpoint went; the rows find no broker
            self.producer.flush(10)
            own_broker.stop()
        send(self, *args)

    monkeypatch.setattr(KafkaSink, "send", dying)
    failed = _replay(script, f"kafka://{own_broker.bootstrap}/{topic}{QUERY}")
    assert failed.exit_code == 1, failed.output
    lines = failed.stderr.splitlines()
    assert lines[-1] == (
        f"error: kafka async send message failed: {topic}[1]: the local queue stayed full for"
        f" 0.3 s (the brokers at {own_broker.bootstrap} took none of its records)"
    )
    whole = replay(big, f"memory://{QUERY}").sink.records()
    ddl_ts = next(
        e.commit_ts
        for _, e in decode(changefeed(f"memory://{QUERY}"), whole)
        if isinstance(e, DecodedDDL)
    )
    assert lines[-2] == (
        "to resume, run the same command with: --start-ts 0 --resume-from"
        f" '{topic}[0]={ddl_ts},{topic}[1]={ddl_ts},{topic}[2]={ddl_ts}'"
    )
