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
