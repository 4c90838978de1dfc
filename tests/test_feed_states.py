"""A changefeed's states through the service without a broker (issue 28): the `unavailable`
fault makes every send fail as Kafka's does; the changefeed is `warning` with TiCDC's code,
its supervisor restarts it after the backoff, and it is `normal` again, having sent from its
checkpoint again (at-least-once). The backoff's waits, and a stuck duration under TiCDC's 30
minutes refused."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ticdc_sim.config import parse_replica_config
from ticdc_sim.errors import ConfigError
from ticdc_sim.feed import Retry
from ticdc_sim.service.app import create_app
from ticdc_sim.service.settings import Settings

FEED = "/sim/v1/clusters/default/changefeeds/m"


def _sql(client: TestClient, text: str) -> int:
    answer = client.post("/sim/v1/clusters/default/sql", content=text)
    assert answer.status_code == 200 and answer.json()["ok"], answer.text
    ts: int = answer.json()["transactions"][-1]["commit_ts"]
    return ts


def _status(client: TestClient) -> dict[str, Any]:
    found: dict[str, Any] = client.get("/api/v2/changefeeds/m/status").json()
    return found


def test_an_unavailable_sink_is_a_warning_then_normal_with_records_sent_again(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path / "data", mysql_port=0, backoff_init_s=0.2)
    with TestClient(create_app(settings)) as client:
        uri = "memory://?protocol=canal-json&enable-tidb-extension=true"  # checkpoint records
        body = {"changefeed_id": "m", "sink_uri": uri}
        assert client.post("/api/v2/changefeeds", json=body).status_code == 200
        _sql(client, "CREATE TABLE t (id INT PRIMARY KEY);")
        before = _sql(client, "INSERT INTO t VALUES (1);")
        assert _status(client)["checkpoint_ts"] == before
        armed = client.post(f"{FEED}/faults", json={"kind": "unavailable"})
        assert armed.status_code == 200, armed.text
        lost = _sql(client, "INSERT INTO t VALUES (2);")  # its checkpoint's send fails
        status = _status(client)
        assert status["state"] == "warning", status
        assert status["checkpoint_ts"] == before
        warning = status["last_warning"]
        assert warning["code"] == "CDC:ErrKafkaAsyncSendMessage"
        assert warning["message"] == "kafka async send message failed (fault: unavailable)"
        during = _sql(client, "INSERT INTO t VALUES (3);")  # answered; the history keeps it
        assert _status(client)["checkpoint_ts"] == before
        deadline = time.monotonic() + 10
        while _status(client)["state"] != "normal":  # the supervisor's restart
            assert time.monotonic() < deadline, _status(client)
            time.sleep(0.05)
        status = _status(client)
        assert status["checkpoint_ts"] == during > lost > before
        assert status["last_warning"] == warning and status["last_error"] is None
        page = client.get(f"{FEED}/messages", params={"limit": 100}).json()["messages"]
        ids = [d["columns"]["id"] for m in page for d in m["decoded"] if "columns" in d]
        # 2 was sent before the failed checkpoint and again after the restart
        assert ids == [1, 2, 2, 3]
        assert Counter(ids)[1] == 1  # what the checkpoint covered is not sent again


def test_the_backoff_doubles_to_its_most_with_a_tenth_of_jitter() -> None:
    retry = Retry(10.0, 600.0)
    waits = [retry.after("feed", n) for n in range(8)]
    for n, wait in enumerate(waits):
        base = min(10.0 * 2**n, 600.0)
        assert 0.9 * base <= wait <= 1.1 * base
    assert waits == [Retry(10.0, 600.0).after("feed", n) for n in range(8)]  # derived seed
    assert waits != [retry.after("other", n) for n in range(8)]


def test_a_stuck_duration_under_thirty_minutes_is_refused_as_ticdc_refuses_it() -> None:
    assert parse_replica_config({"changefeed_error_stuck_duration": "45m"}) == {
        "error_stuck_duration": "45m"
    }
    with pytest.raises(ConfigError) as refused:
        parse_replica_config({"changefeed_error_stuck_duration": "10m"})
    assert str(refused.value) == (
        "replica_config: changefeed_error_stuck_duration: The ChangefeedErrorStuckDuration:"
        "600.000000 must be larger than 1800.000000 Seconds"
    )


def _cluster(retry: Retry) -> Any:
    from ticdc_sim.cluster import Cluster

    cluster = Cluster("c", 1, lock_wait_s=1.0, max_txn_rows=100, settle_heap=False, retry=retry)
    assert not cluster.execute("CREATE TABLE t (id INT PRIMARY KEY);").failed
    return cluster


def _memory_feed(cluster: Any, feed_id: str, sink: Any = None) -> Any:
    from ticdc_sim.feed import FeedSpec
    from ticdc_sim.feedlog import Retain
    from ticdc_sim.sinks.memory import MemorySink

    uri = "memory://?protocol=canal-json&enable-tidb-extension=true"
    return cluster.add_feed(FeedSpec(feed_id, uri), lambda _: sink or MemorySink(), Retain())


def _rows(feed: Any) -> list[bytes]:
    return [r.value for r in feed.log.since(0)[0] if r.value and b'"INSERT"' in r.value]


def test_a_sink_that_breaks_fails_its_changefeed_only(caplog: pytest.LogCaptureFixture) -> None:
    """A sink raising what is not a SimError (a bug): the commit stands, its changefeed fails
    with the error named, and the changefeeds after it still get the transaction."""
    from ticdc_sim.sinks.memory import MemorySink

    class Broken(MemorySink):
        def send(self, *args: Any) -> None:
            raise RuntimeError("boom")

    cluster = _cluster(Retry())
    broken, fine = _memory_feed(cluster, "broken", Broken()), _memory_feed(cluster, "fine")
    done = cluster.execute("INSERT INTO t VALUES (1);")
    assert not done.failed and done.committed
    assert (broken.state, broken.error_code) == ("failed", "CDC:ErrSinkInvalid")
    assert broken.error == "internal error in the changefeed's sink: RuntimeError: boom"
    assert fine.state == "normal" and len(_rows(fine)) == 1
    assert "changefeed broken: its send failed" in caplog.text  # with its traceback


def test_a_failure_after_a_resume_is_retried_not_failed() -> None:
    """Failed after its stuck duration, then resumed: once it has sent past the point it
    restarted from, the failure is over, and a later one is retried with a stuck duration of
    its own."""
    cluster = _cluster(Retry(0.05, 0.1, stuck_s=0.3))
    feed = _memory_feed(cluster, "m")
    feed.arm("unavailable")
    assert not cluster.execute("INSERT INTO t VALUES (1);").failed
    assert feed.state == "warning"
    time.sleep(0.35)  # longer than the stuck duration
    cluster.tick()
    assert (feed.state, feed.error_code) == ("failed", "CDC:ErrChangefeedUnretryable")
    cluster.resume_feed("m")
    cluster.tick()  # the restart the resume asked for
    assert feed.state == "normal" and feed.error is None
    time.sleep(0.35)
    feed.arm("unavailable")
    assert not cluster.execute("INSERT INTO t VALUES (2);").failed
    assert feed.state == "warning"
    time.sleep(0.12)  # past the backoff, not the stuck duration of this failure
    cluster.tick()
    assert feed.state == "normal", (feed.error_code, feed.error)
    assert len(_rows(feed)) >= 2


def test_the_supervisor_stops_without_waiting_for_a_tick_held_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tick waiting for gone brokers does not hold the shutdown past STOP_WAIT_S."""
    import threading

    from ticdc_sim.service import supervisor
    from ticdc_sim.service.registry import Registry

    monkeypatch.setattr(supervisor, "STOP_WAIT_S", 0.2)
    registry = Registry()
    cluster = registry.add(_cluster(Retry()))
    entered, release = threading.Event(), threading.Event()

    def held_up() -> None:
        entered.set()
        release.wait(30)

    monkeypatch.setattr(cluster, "tick", held_up)
    watching = supervisor.Supervisor(registry, interval_s=0.01)
    watching.start()
    assert entered.wait(5)
    watching.stop()  # returns although the tick is still held up
    assert watching._thread.is_alive()
    release.set()
    watching._thread.join(5)
    assert not watching._thread.is_alive()  # and the thread ends with its tick


def test_the_python_api_says_a_retryable_failure_at_once() -> None:
    """No supervisor retries a changefeed of the Python API: an error the service would
    retry (`warning`) ends its sending, said as ChangefeedFailed with the error."""
    from ticdc_sim import ChangefeedFailed, Simulator

    with Simulator() as sim:
        feed = sim.changefeed("memory://?protocol=canal-json&enable-tidb-extension=true")
        sim.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        feed._feed.faulty.inject("unavailable")
        with pytest.raises(ChangefeedFailed) as caught:
            sim.execute("INSERT INTO t VALUES (1)")
            feed.checkpoint()
        assert "kafka async send message failed (fault: unavailable)" in str(caught.value)
        assert feed.error == "kafka async send message failed (fault: unavailable)"
        assert feed._feed.state == "warning"
