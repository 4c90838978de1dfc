"""A served changefeed whose Kafka broker goes away under load (issue 28): the open API shows
TiCDC's `warning` with CDC:ErrKafkaAsyncSendMessage while the service retries with backoff,
the changefeed resumes by itself once the broker is back, SQL is answered all along, and a
TiCDC-style consumer rebuilds the upstream's tables from what the broker holds: nothing
acknowledged is lost, and what comes twice comes after the checkpoint the failure left. A
broker that stays away fails the changefeed after its stuck duration."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support_changelog import consumed, decode, engine_state, merged, rebuild, replay
from support_service import Server
from ticdc_sim.config import changefeed
from ticdc_sim.encoders import DecodedDDL, DecodedRow
from ticdc_sim.sinks import Record
from ticdc_sim.sinks import kafka as kafka_sink
from ticdc_sim.testing.broker import Broker

# a record the gone broker never acknowledges fails after 4 x 250 ms (TiCDC's 3 retries)
QUERY = (
    "?protocol=canal-json&enable-tidb-extension=true&partition-num=3"
    "&dial-timeout=250ms&read-timeout=250ms&write-timeout=250ms"
)
TABLE = "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20), n INT);\n"
_NAMES = itertools.count()


def _transaction(i: int) -> str:
    """Three rows in, one of the last transaction's updated, one of the one before deleted."""
    rows = ", ".join(f"({3 * i + k}, 'v{i}-{k}', {k})" for k in range(3))
    return (
        f"BEGIN;\nINSERT INTO t VALUES {rows};\nUPDATE t SET n = n + 1 WHERE id = {3 * i - 3};\n"
        f"DELETE FROM t WHERE id = {3 * i - 5};\nCOMMIT;\n"
    )


class Load:
    """One client posting transactions until stopped; each answer must be ok and commit."""

    def __init__(self, server: Server, after: Load | None = None) -> None:
        """`after`: a load stopped before, whose transactions this one goes on from."""
        self.server = server
        self.first = 1 + (len(after.committed) if after else 0)
        self.committed: list[str] = list(after.committed) if after else []  # commit order
        self.last_ts = 0
        self.failures: list[str] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run)

    def __enter__(self) -> Load:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.done.set()
        self.thread.join()

    def _run(self) -> None:
        for i in itertools.count(self.first):
            if self.done.is_set():
                return
            script = _transaction(i)
            answer = httpx.post(
                f"{self.server.http}/sim/v1/clusters/default/sql", content=script, timeout=60
            )
            body = answer.json()
            if answer.status_code != 200 or not body.get("ok") or not body["transactions"]:
                self.failures.append(f"{answer.status_code} {answer.text[:300]}")
                return
            self.committed.append(script)
            self.last_ts = body["transactions"][-1]["commit_ts"]
            time.sleep(0.01)


def _status(server: Server, feed: str) -> dict[str, Any]:
    answer = httpx.get(f"{server.http}/api/v2/changefeeds/{feed}/status")
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def _until(what: str, check: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not {what} within {seconds:.0f} s"
        time.sleep(0.05)


@pytest.fixture
def served(own_broker: Broker, tmp_path: Path) -> Iterator[tuple[Server, str]]:
    """The service, a table, and changefeed `k` to a topic of the broker: its URI."""
    server = Server.start(
        tmp_path / "data",
        kafka_allow=json.dumps([own_broker.bootstrap]),
        backoff_init_s="0.3",
        backoff_max_s="1",
        error_stuck_s="4",
    )
    try:
        uri = f"kafka://{own_broker.bootstrap}/faults-{next(_NAMES)}{QUERY}"
        made = httpx.post(
            f"{server.http}/api/v2/changefeeds", json={"changefeed_id": "k", "sink_uri": uri}
        )
        assert made.status_code == 200, made.text
        assert server.sql(TABLE)["ok"]
        yield server, uri
    finally:
        server.stop()


def _warned(server: Server) -> dict[str, Any]:
    """The status once the changefeed is retrying: TiCDC's warning and its code."""
    _until("warning", lambda: _status(server, "k")["state"] == "warning")
    status = _status(server, "k")
    warning = status["last_warning"]
    assert warning["code"] == "CDC:ErrKafkaAsyncSendMessage", status
    assert warning["message"].startswith("kafka async send message failed: "), status
    assert status.get("last_error") is None, status
    return status


def _settled(server: Server, load: Load) -> None:
    """Load stopped, the changefeed normal, its checkpoint past the last commit."""
    load.stop()
    assert load.failures == [] and len(load.committed) > 20, load.failures
    _until("normal", lambda: _status(server, "k")["state"] == "normal")
    _until("acknowledged", lambda: _status(server, "k")["checkpoint_ts"] >= load.last_ts)


def _rebuilt(records: list[Record], uri: str, load: Load) -> None:
    expected = engine_state(replay(TABLE + "".join(load.committed), f"memory://{QUERY}"))
    assert rebuild(merged(consumed(records, uri))) == expected


def test_a_hung_broker_makes_a_warning_and_the_changefeed_resumes_by_itself(
    served: tuple[Server, str], own_broker: Broker
) -> None:
    server, uri = served
    with Load(server) as load:
        time.sleep(1.0)
        own_broker.pause()  # SIGSTOP: it holds its topics, answers nothing
        at_warning = _warned(server)["checkpoint_ts"]
        sent_at_warning = len(load.committed)
        time.sleep(1.0)  # SQL goes on meanwhile: its answers are checked by the load
        own_broker.resume()
        _settled(server, load)
    assert len(load.committed) > sent_at_warning  # commits went on through the outage
    records = list(kafka_sink.read_topic(changefeed(uri).sink))
    _rebuilt(records, uri, load)
    # what came twice was re-sent by the restart: committed after the checkpoint it left
    changes = Counter(
        (record.partition, repr(event))
        for record, event in decode(changefeed(uri), records)
        if isinstance(event, DecodedRow | DecodedDDL)
    )
    # (whether any comes twice depends on what the hung broker had taken before it stopped)
    twice = [key for key, n in changes.items() if n > 1]
    events = {
        (record.partition, repr(event)): event
        for record, event in decode(changefeed(uri), records)
        if isinstance(event, DecodedRow | DecodedDDL)
    }
    assert all((events[key].commit_ts or 0) > at_warning for key in twice)


def test_a_restarted_broker_gets_the_changes_from_the_acknowledged_checkpoint(
    served: tuple[Server, str], own_broker: Broker
) -> None:
    """Tansu keeps topics in memory: what it held before the restart is read first (with
    the load held, so that nothing lands between the read and the stop)."""
    server, uri = served
    with Load(server) as load:
        time.sleep(1.0)
    _settled(server, load)
    first = list(kafka_sink.read_topic(changefeed(uri).sink))
    before = len(load.committed)
    own_broker.stop()
    with Load(server, after=load) as load_after:
        _warned(server)
        time.sleep(0.5)
        own_broker.restart()  # the same address, no topics: the restart makes it again
        _settled(server, load_after)
    assert len(load_after.committed) > before
    second = list(kafka_sink.read_topic(changefeed(uri).sink))
    _rebuilt(first + second, uri, load_after)


def test_a_broker_that_stays_away_fails_the_changefeed_after_the_stuck_duration(
    served: tuple[Server, str], own_broker: Broker
) -> None:
    server, _ = served
    assert server.sql(_transaction(1))["ok"]
    own_broker.stop()
    assert server.sql(_transaction(2))["ok"]
    _warned(server)
    _until("failed", lambda: _status(server, "k")["state"] == "failed")
    status = _status(server, "k")
    assert status["last_error"]["code"] == "CDC:ErrChangefeedUnretryable", status
    # the last warning's: the restarts' new producers could not reach the brokers
    message = status["last_error"]["message"]
    assert message.startswith("new kafka producer: kafka 127.0.0.1:"), status
    assert "cannot reach the brokers" in message, status
    assert server.sql(_transaction(3))["ok"]  # the cluster serves SQL all the same
    # resumed through the API once the broker is back: it goes on from its checkpoint
    own_broker.restart()
    resumed = httpx.post(f"{server.http}/api/v2/changefeeds/k/resume")
    assert resumed.status_code == 200, resumed.text
    assert _status(server, "k")["state"] == "normal"
    assert _status(server, "k").get("last_error") is None
    ts = server.sql(_transaction(4))["transactions"][-1]["commit_ts"]
    _until("acknowledged", lambda: _status(server, "k")["checkpoint_ts"] >= ts)
