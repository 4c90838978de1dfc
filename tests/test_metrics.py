"""/metrics after a known load through the HTTP API: each bounded buffer's bytes and records
exactly as the live objects hold them (a changefeed's log, a cluster's history, a file sink's
disk), what the bounds dropped, the changefeeds' states, MySQL connections, the process's
RSS; a storage changefeed's messages as one series, not one a file."""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from ticdc_sim.feed import Feed
from ticdc_sim.feedlog import RECORD_OVERHEAD
from ticdc_sim.model.tso import physical_ms
from ticdc_sim.service.app import create_app
from ticdc_sim.service.metrics import STATES
from ticdc_sim.service.settings import Settings
from ticdc_sim.sinks import OnDisk

FEED = {
    "changefeed_id": "m",
    "sink_uri": "memory://?protocol=canal-json&partition-num=3",
    "replica_config": {"sink": {"dispatchers": [{"matcher": ["*.*"], "partition": "index-value"}]}},
}
ROWS = ", ".join(f"({i}, '{'x' * i}')" for i in range(40))
LOAD = f"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(64)); INSERT INTO t VALUES {ROWS};"


def samples(client: TestClient) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape by name and labels."""
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(
    scraped: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return scraped[(name, frozenset(labels.items()))]


def named(
    scraped: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str
) -> list[dict[str, str]]:
    return [dict(labels) for n, labels in scraped if n == name]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(
        data_dir=tmp_path / "data", mysql_port=free_port(), retain_bytes=4 * (RECORD_OVERHEAD + 400)
    )
    with TestClient(create_app(settings)) as c:
        assert c.post("/api/v2/changefeeds", json=FEED).status_code == 200
        yield c


def sim(client: TestClient) -> Any:
    return client.app.state.sim  # type: ignore[attr-defined]


def feed(client: TestClient, name: str) -> Feed:
    found: Feed = sim(client).registry.get("default").feed(name)
    return found


def test_a_changefeeds_log_shows_what_it_holds_and_what_it_dropped(client: TestClient) -> None:
    result = client.post("/sim/v1/clusters/default/sql", content=LOAD).json()
    assert result["ok"] and result["messages"]["m"] > 0
    page = client.get(
        "/sim/v1/clusters/default/changefeeds/m/messages", params={"limit": 10_000}
    ).json()
    held = [
        RECORD_OVERHEAD
        + len(base64.b64decode(m["key"] or ""))
        + len(base64.b64decode(m["value"] or ""))
        + sum(len(k) + len(base64.b64decode(v)) for k, v in m["headers"].items())
        for m in page["messages"]
    ]
    sent = sum(n for ps in page["counts"].values() for n in ps.values())
    scraped = samples(client)
    at = {"cluster": "default", "changefeed": "m"}
    assert value(scraped, "ticdc_sim_feed_retained_bytes", **at) == sum(held) <= 4 * 576
    assert value(scraped, "ticdc_sim_feed_retained_records", **at) == len(held)
    assert value(scraped, "ticdc_sim_feed_dropped_records_total", **at) == sent - len(held)
    assert page["dropped"] == sent - len(held) > 0
    log = feed(client, "m").log
    assert (log.bytes, log.held, log.dropped) == (sum(held), len(held), sent - len(held))
    assert value(scraped, "process_resident_memory_bytes") > 0


def test_states_history_and_connections(client: TestClient) -> None:
    client.post("/sim/v1/clusters/default/sql", content=LOAD)
    assert client.post("/api/v2/changefeeds/m/pause").status_code == 200
    cluster = sim(client).registry.get("default")
    connection = pymysql.connect(
        host="127.0.0.1", port=sim(client).settings.mysql_port, user="root", database="test"
    )
    try:
        scraped = samples(client)
        assert value(scraped, "ticdc_sim_mysql_connections") == 1
    finally:
        connection.close()
    # TiCDC's state names, one series each: 1 for the one it is in
    for name, current in (("m", "stopped"), ("default", "normal")):
        states = {
            state: value(
                scraped,
                "ticdc_sim_changefeed_state",
                cluster="default",
                changefeed=name,
                state=state,
            )
            for state in STATES
        }
        assert states == {state: float(state == current) for state in STATES}
    history = value(scraped, "ticdc_sim_history_bytes", cluster="default")
    assert history == cluster.history_size > 0
    safepoint = value(scraped, "ticdc_sim_history_gc_safepoint_ts", cluster="default")
    assert safepoint == physical_ms(cluster.gc_safepoint)


def test_a_storage_changefeeds_messages_are_one_series(client: TestClient, tmp_path: Path) -> None:
    body = {"changefeed_id": "files", "sink_uri": "file://files?protocol=canal-json"}
    assert client.post("/api/v2/changefeeds", json=body).status_code == 200
    for n in range(5):  # a table each: files in as many directories
        client.post(
            "/sim/v1/clusters/default/sql",
            content=f"CREATE TABLE t{n} (id INT PRIMARY KEY); INSERT INTO t{n} VALUES (1);",
        )
    client.post("/api/v2/changefeeds/files/pause")  # its files written
    scraped = samples(client)
    series = [s for s in named(scraped, "ticdc_sim_messages_total") if s["changefeed"] == "files"]
    where = str(tmp_path / "data" / "files")
    assert series == [
        {
            "cluster": "default",
            "changefeed": "files",
            "protocol": "canal-json",
            "topic": where,
            "partition": "0",
        }
    ]
    log = feed(client, "files").log
    assert value(scraped, "ticdc_sim_messages_total", **series[0]) == log.total > 10


def test_a_file_changefeeds_disk_is_shown(client: TestClient) -> None:
    sink = feed(client, "default").sink.inner
    assert isinstance(sink, OnDisk)
    client.post("/sim/v1/clusters/default/sql", content=LOAD)
    scraped = samples(client)
    at = {"cluster": "default", "changefeed": "default"}
    held, files = sink.disk_usage()
    removed, gone = sink.removed()
    assert value(scraped, "ticdc_sim_sink_disk_bytes", **at) == held > 0
    assert value(scraped, "ticdc_sim_sink_disk_files", **at) == files > 0
    assert value(scraped, "ticdc_sim_sink_removed_bytes_total", **at) == removed
    assert value(scraped, "ticdc_sim_sink_removed_files_total", **at) == gone


def test_two_apps_in_one_process_each_show_the_process(tmp_path: Path) -> None:
    """Each app has its own registry: the process collector is in both, registered once."""
    first = TestClient(create_app(Settings(data_dir=tmp_path / "one", mysql_port=0)))
    second = TestClient(create_app(Settings(data_dir=tmp_path / "two", mysql_port=0)))
    with first, second:
        for client in (first, second):
            assert value(samples(client), "process_resident_memory_bytes") > 0
