"""The service with the app in process (FastAPI's TestClient): clusters, SQL over HTTP, what
changefeeds sent, TiCDC's open API v2, faults, limits, the guard, metrics; and the same
script giving the same bytes as the CLI."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ticdc_sim.cli import app as cli
from ticdc_sim.cluster import Cluster
from ticdc_sim.model.tso import physical_ms
from ticdc_sim.service.app import create_app
from ticdc_sim.service.settings import Settings
from ticdc_sim.sinks.jsonl import read_jsonl
from ticdc_sim.sinks.parquet import read_parquet

ROOT = Path(__file__).parents[1]
SCRIPT = """CREATE TABLE shop (id INT PRIMARY KEY, name VARCHAR(20), qty INT, price DECIMAL(8,2));
INSERT INTO shop VALUES (1, 'a', 5, 1.50), (2, 'b', 6, 2.25), (3, 'c', 7, NULL);
BEGIN;
UPDATE shop SET qty = qty + 1 WHERE id BETWEEN 2 AND 3;
DELETE FROM shop WHERE id = 1;
COMMIT;
ALTER TABLE shop ADD COLUMN note TEXT;
INSERT INTO shop (id, name, qty, note) VALUES (4, 'd', 1, 'x');
"""
TEXT = {"content-type": "text/plain"}


def service(tmp_path: Path, **overrides: Any) -> TestClient:
    settings = Settings(data_dir=tmp_path / "data", mysql_port=0, **overrides)
    return TestClient(create_app(settings))


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with service(tmp_path) as c:
        yield c


def sql(client: TestClient, text: str, cluster: str = "default") -> dict[str, Any]:
    response = client.post(f"/sim/v1/clusters/{cluster}/sql", content=text, headers=TEXT)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def error_of(response: Any, status: int, code: str | None = None) -> str:
    """The error body of a failed request, checked for TiCDC's shape; its message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error_msg", "error_code"}, body
    if code is not None:
        assert body["error_code"] == code, body
    message: str = body["error_msg"]
    return message


def feed_messages(
    client: TestClient, cluster: str = "default", feed: str = "default", **q: Any
) -> dict[str, Any]:
    response = client.get(f"/sim/v1/clusters/{cluster}/changefeeds/{feed}/messages", params=q)
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


# -- SQL over HTTP -------------------------------------------------------------------------------


def test_statements_report_their_outcome(client: TestClient) -> None:
    result = sql(client, SCRIPT + "SELECT id, qty, price FROM shop WHERE id >= 3;\n")
    assert result["ok"] is True
    statements = result["statements"]
    assert [s["affected_rows"] for s in statements] == [0, 3, 0, 2, 1, 0, 0, 1, 0]
    assert [(s["line"], s["column"]) for s in statements[:3]] == [(1, 1), (2, 1), (3, 1)]
    select = statements[-1]
    assert select["columns"] == ["id", "qty", "price"]
    assert select["rows"] == [[3, 8, None], [4, 1, None]]
    # one transaction per autocommit statement or BEGIN..COMMIT, with their commit ts
    txns = result["transactions"]
    assert [(t["rows"], len(t["ddl"])) for t in txns] == [(0, 1), (3, 0), (3, 0), (0, 1), (1, 0)]
    assert [t["commit_ts"] for t in txns] == sorted(t["commit_ts"] for t in txns)
    assert statements[5]["commit_ts"] == txns[2]["commit_ts"]  # COMMIT carries it
    assert statements[3]["commit_ts"] is None  # inside the transaction: not yet
    assert result["messages"]["default"] > 0


def test_a_failing_statement_stops_the_script_and_leaves_no_half_transaction(
    client: TestClient,
) -> None:
    sql(client, "CREATE TABLE t (id INT PRIMARY KEY, v INT);\nINSERT INTO t VALUES (1, 1);")
    before = feed_messages(client)["counts"]
    result = sql(
        client,
        "BEGIN;\nINSERT INTO t VALUES (2, 2);\nUPDATE t SET v = 9 WHERE id = 1;\n"
        "  INSERT INTO t VALUES (1, 3);\nINSERT INTO t VALUES (5, 5);\n",
    )
    assert result["ok"] is False
    assert len(result["statements"]) == 4  # the one after the error did not run
    error = result["statements"][-1]["error"]
    assert error["code"] == 1062 and error["sqlstate"] == "23000"
    assert (error["line"], error["column"]) == (4, 3)
    assert "Duplicate entry '1'" in error["message"]
    assert result["transactions"] == [] and result["messages"] == {"default": 0}
    assert feed_messages(client)["counts"] == before
    rows = sql(client, "SELECT * FROM t")["statements"][0]["rows"]
    assert rows == [[1, 1]]  # the open transaction was rolled back


def test_an_open_transaction_at_the_end_of_a_request_is_rolled_back(client: TestClient) -> None:
    sql(client, "CREATE TABLE t (id INT PRIMARY KEY)")
    result = sql(client, "BEGIN; INSERT INTO t VALUES (1);")
    assert result["ok"] is True and result["transactions"] == []
    assert sql(client, "SELECT * FROM t")["statements"][0]["rows"] == []


def test_sql_bodies(client: TestClient) -> None:
    url = "/sim/v1/clusters/default/sql"
    as_json = client.post(url, json={"sql": "SELECT 1 + 1 AS two, 'x'"})
    assert as_json.status_code == 200
    assert as_json.json()["statements"][0]["columns"] == ["two", "x"]  # as MySQL labels it
    assert as_json.json()["statements"][0]["rows"] == [[2, "x"]]
    # curl --data-binary sends application/x-www-form-urlencoded: still the script
    form = client.post(
        url,
        content=b"SELECT @@version",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert form.json()["statements"][0]["rows"] == [["8.0.11-TiDB-v8.5.0"]]
    message = error_of(client.post(url, json={"sql": "SELECT 1", "extra": 1}), 400)
    assert "extra" in message
    message = error_of(client.post(url, content=b"x", headers={"content-type": "image/png"}), 400)
    assert "text/plain" in message
    message = error_of(client.post(url, content=b"SELECT '\xff'", headers=TEXT), 400)
    assert "UTF-8" in message
    message = error_of(
        client.post(url, content="SELECT 1;\nSELECT 'abc", headers=TEXT), 400, "SIM:SQLSyntax"
    )
    assert "request.sql:2:1" in message and "no statement ran" in message


def test_a_body_of_bytes_is_read_as_a_script_file_is(client: TestClient) -> None:
    """`charset=binary`: the body's bytes as a script file holds them, as a mysqldump writes
    a blob (without it, a body that is not UTF-8 is refused, saying how to send it); text
    the answer quotes shows the bytes that are not UTF-8 as MySQL prints them."""
    url = "/sim/v1/clusters/default/sql"
    binary = {"content-type": "text/plain; charset=binary"}
    script = b"CREATE TABLE blobs (id INT PRIMARY KEY, b BLOB, s VARCHAR(8));\n"
    script += b"INSERT INTO blobs VALUES (1, '\x00\xff\xfe', 'ok');\n"
    done = client.post(url, content=script, headers=binary).json()
    assert done["ok"] is True
    rows = sql(client, "SELECT b, s FROM blobs")["statements"][0]["rows"]
    assert rows == [[{"$binary": "AP/+"}, "ok"]]
    refused = client.post(url, content=b"INSERT INTO blobs VALUES (2, '\xe9', 'caf\xe9')",
                          headers=binary).json()  # fmt: skip
    assert (
        refused["statements"][0]["statement"] == "INSERT INTO blobs VALUES (2, '\\xE9', 'caf\\xE9')"
    )
    assert refused["statements"][0]["error"]["message"] == (
        "Incorrect string value '\\xE9' for column 's' at row 1"
    )


def test_aggregates(client: TestClient) -> None:
    sql(
        client,
        "CREATE TABLE a (id INT PRIMARY KEY, p DECIMAL(6,2)); INSERT INTO a VALUES (1, 1.25), (2, 2.5), (3, NULL);",
    )
    result = sql(
        client,
        "SELECT COUNT(*) AS n, COUNT(p), SUM(p), AVG(p), MIN(id), MAX(p) FROM a WHERE id > 0",
    )
    select = result["statements"][0]
    assert select["columns"] == ["n", "COUNT(p)", "SUM(p)", "AVG(p)", "MIN(id)", "MAX(p)"]
    assert select["rows"] == [[3, 2, "3.75", "1.875000", 1, "2.50"]]
    mixed = sql(client, "SELECT id, COUNT(*) FROM a")["statements"][0]["error"]
    assert (mixed["code"], mixed["message"]) == (
        8123,
        "In aggregated query without GROUP BY, expression #1 of SELECT list contains"
        " nonaggregated column 'id'; this is incompatible with sql_mode=only_full_group_by",
    )


def test_result_sets_render_every_type(client: TestClient) -> None:
    sql(
        client,
        "CREATE TABLE v (id INT PRIMARY KEY, d DECIMAL(10,3), b VARBINARY(4), t DATETIME(3),"
        " j JSON, e ENUM('x','y'), f DOUBLE);"
        "INSERT INTO v VALUES (1, 12.5, x'00ff', '2024-02-29 10:00:00.125', '{\"a\": [1]}', 'y', 1.5e300);",
    )
    rows = sql(client, "SELECT * FROM v")["statements"][0]["rows"]
    assert rows[0][:3] == [1, "12.500", {"$binary": "AP8="}]
    assert rows[0][4:] == ['{"a": [1]}', "y", 1.5e300]
    assert str(rows[0][3]).startswith("2024-02-29")


# -- clusters ------------------------------------------------------------------------------------


def test_clusters_are_isolated(client: TestClient) -> None:
    created = client.post("/sim/v1/clusters", json={"id": "a", "seed": 7})
    assert created.status_code == 201 and created.json()["seed"] == 7
    assert client.post("/sim/v1/clusters", json={}).json()["id"].startswith("cluster-")
    error_of(client.post("/sim/v1/clusters", json={"id": "a"}), 409)
    error_of(client.post("/sim/v1/clusters", json={"id": "../x"}), 422)
    error_of(client.post("/sim/v1/clusters", json={"id": "b", "colour": 1}), 422)
    sql(client, "CREATE TABLE t (id INT PRIMARY KEY)", "default")
    sql(client, "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "a")  # the same name: no clash
    sql(client, "INSERT INTO t VALUES (1, 2)", "a")
    assert sql(client, "SELECT * FROM t", "default")["statements"][0]["rows"] == []
    assert sql(client, "SELECT * FROM t", "a")["statements"][0]["rows"] == [[1, 2]]
    ids = [c["id"] for c in client.get("/sim/v1/clusters").json()]
    assert "default" in ids and "a" in ids
    info = client.get("/sim/v1/clusters/a").json()
    assert info["statements"] == 3 and info["transactions"] == 2 and info["changefeeds"] == []
    assert client.delete("/sim/v1/clusters/a").status_code == 204
    assert "does not exist" in error_of(client.get("/sim/v1/clusters/a"), 404)
    error_of(client.post("/sim/v1/clusters/a/sql", content="SELECT 1", headers=TEXT), 404)


def test_each_cluster_has_its_own_clock_and_seed(client: TestClient) -> None:
    for name in ("s1", "s2"):
        client.post("/sim/v1/clusters", json={"id": name, "seed": 3})
    script = "CREATE TABLE r (id INT PRIMARY KEY, u VARCHAR(40)); INSERT INTO r VALUES (1, UUID());"
    one, two = (sql(client, script, name) for name in ("s1", "s2"))
    assert one["transactions"] == two["transactions"]
    read = "SELECT u FROM r"
    assert (
        sql(client, read, "s1")["statements"][0]["rows"]
        == sql(client, read, "s2")["statements"][0]["rows"]
    )


# -- what changefeeds sent -----------------------------------------------------------------------


@pytest.mark.parametrize("uri", ["protocol=simple", "protocol=simple&encoding-format=avro"])
def test_simple_messages_decode_from_any_page(client: TestClient, uri: str) -> None:
    # simple's DML names a table schema sent earlier: the feed's decoder learnt it as sent
    made = client.post(
        "/api/v2/changefeeds",
        json={"changefeed_id": "simple", "sink_uri": f"memory://?{uri}&partition-num=2"},
    )
    assert made.status_code == 200, made.text
    sql(client, SCRIPT)
    kinds = set()
    for partition in (1, 0):  # pages read from the middle, partition 1 first
        page = feed_messages(client, feed="simple", partition=partition, from_offset=3)
        kinds |= {d["type"] for m in page["messages"] for d in m["decoded"]}
    assert "undecodable" not in kinds and {"insert", "update", "delete"} <= kinds, kinds


def test_messages_page_by_topic_partition_and_offset(client: TestClient) -> None:
    sql(client, SCRIPT)
    page = feed_messages(client, limit=10_000)
    counts = page["counts"]
    assert sum(sum(p.values()) for p in counts.values()) == len(page["messages"])
    topic = next(iter(counts))
    partition, count = max(counts[topic].items(), key=lambda kv: kv[1])
    everything = feed_messages(client, topic=topic, partition=partition)["messages"]
    assert [m["offset"] for m in everything] == list(range(count))
    tail = feed_messages(client, topic=topic, partition=partition, from_offset=1, limit=2)
    assert tail["messages"] == everything[1:3]
    raw = feed_messages(client, topic=topic, partition=partition, decode=False)["messages"]
    assert all(m["decoded"] is None for m in raw)
    assert [m["value"] for m in raw] == [m["value"] for m in everything]
    kinds = {d["type"] for m in page["messages"] for d in m["decoded"]}
    assert kinds == {"ddl", "insert", "update", "delete", "checkpoint"}
    body = json.loads(base64.b64decode(everything[0]["value"]))
    assert "isDdl" in body  # canal-json, as the default changefeed says
    error_of(client.get("/sim/v1/clusters/default/changefeeds/default/messages?limit=0"), 422)
    error_of(client.get("/sim/v1/clusters/default/changefeeds/nope/messages"), 404)


def test_a_memory_changefeed_keeps_its_records_once(client: TestClient) -> None:
    """A memory changefeed's records are kept by its log (up to TICDC_SIM_RETAIN_*) and by
    nothing else: its sink counts them (a MemorySink kept every one again, for ever)."""
    made = client.post(
        "/api/v2/changefeeds",
        json={"changefeed_id": "mem", "sink_uri": "memory://?protocol=canal-json"},
    )
    assert made.status_code == 200, made.text
    sql(client, SCRIPT)
    feed = client.app.state.sim.registry.get("default").feed("mem")  # type: ignore[attr-defined]
    sent = feed_messages(client, feed="mem", limit=10_000, decode=False)["messages"]
    assert type(feed.sink.inner).__name__ == "BlackholeSink"
    assert feed.sink.inner.records == len(sent) == feed.log.held == 9
    assert feed.sink.inner.bytes == sum(len(base64.b64decode(m["value"])) for m in sent)


def test_the_service_writes_what_the_cli_writes(tmp_path: Path) -> None:
    """The same script, over HTTP into the default changefeed and through `ticdc-sim replay`:
    the same jsonl files, byte for byte."""
    with service(tmp_path) as client:
        assert sql(client, SCRIPT)["ok"]
    served = tmp_path / "data" / "default"
    script = tmp_path / "script.sql"
    script.write_text(SCRIPT)
    replayed = tmp_path / "cli"
    uri = f"jsonl://{replayed}?protocol=canal-json&enable-tidb-extension=true"
    result = CliRunner().invoke(cli, ["replay", str(script), "--sink-uri", uri])
    assert result.exit_code == 0, result.output
    files = sorted(p.relative_to(replayed) for p in replayed.rglob("*") if p.is_file())
    assert files and files == sorted(
        p.relative_to(served) for p in served.rglob("*") if p.is_file()
    )
    for name in files:
        assert (served / name).read_bytes() == (replayed / name).read_bytes(), name


def test_a_file_changefeed_writes_in_place_at_each_checkpoint(tmp_path: Path) -> None:
    """While the service runs, the default changefeed's folder (the one the banner names)
    holds every record sent, each request's checkpoint included: nothing hidden, nothing
    buffered."""
    with service(tmp_path) as client:
        sql(client, "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);")
        sent = feed_messages(client, limit=10_000)["messages"]
        folder = tmp_path / "data" / "default"
        assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["default"]

        def landed() -> list[str]:
            return [base64.b64encode(r.value or b"").decode() for r in read_jsonl(str(folder))]

        assert landed() == [m["value"] for m in sent]
        assert {d["type"] for m in sent for d in m["decoded"]} == {"ddl", "insert", "checkpoint"}
        sql(client, "INSERT INTO t VALUES (2);")
        assert landed() == [m["value"] for m in feed_messages(client, limit=10_000)["messages"]]
        assert len(landed()) > len(sent)


def test_an_update_on_the_same_directory_hands_it_over(tmp_path: Path) -> None:
    """PUT on a stopped file changefeed keeping its directory: the old sink writes on for
    the rebuilt changefeed, so what was sent stays and offsets run on (it was deleted), and
    the folder holds what its messages show. Another changefeed's directory is refused."""
    with service(tmp_path) as client:
        body = {"changefeed_id": "files", "sink_uri": "jsonl://files?protocol=canal-json"}
        assert client.post("/api/v2/changefeeds", json=body).status_code == 200
        sql(client, "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);")
        before = feed_messages(client, feed="files", limit=10_000)["messages"]
        client.post("/api/v2/changefeeds/files/pause")
        taken = {"sink_uri": "jsonl://default?protocol=canal-json"}
        refused = client.put("/api/v2/changefeeds/files", json=taken)
        assert error_of(refused, 409, "SIM:ErrSinkInUse") == (
            f"{tmp_path / 'data' / 'default'} is written by changefeed default/default:"
            " a sink directory has one changefeed"
        )
        same = {"sink_uri": "jsonl://files?protocol=open-protocol"}
        assert client.put("/api/v2/changefeeds/files", json=same).status_code == 200
        client.post("/api/v2/changefeeds/files/resume")
        sql(client, "INSERT INTO t VALUES (2);")
        sent = feed_messages(client, feed="files", limit=10_000)["messages"]
        folder = tmp_path / "data" / "files"
        landed = [base64.b64encode(r.value or b"").decode() for r in read_jsonl(str(folder))]
        assert landed == [m["value"] for m in sent] and landed
        at = {(m["partition"], m["offset"]): m for m in sent}
        assert len(at) == len(sent) > len(before)  # offsets ran on, none taken twice
        assert all(at[(m["partition"], m["offset"])]["value"] == m["value"] for m in before)
        # the records since are open protocol (those before stay canal-json)
        kept = {(m["partition"], m["offset"]) for m in before}
        later = [d for where, m in at.items() if where not in kept for d in m["decoded"]]
        assert [d["columns"]["id"] for d in later if d["type"] == "insert"] == [2]


def test_file_sinks_land_when_their_changefeed_goes(tmp_path: Path) -> None:
    """Parquet and jsonl changefeeds on relative paths (under the data directory): their
    files hold every record the changefeed sent once it is removed."""
    with service(tmp_path) as client:
        for scheme in ("parquet", "jsonl"):
            uri = f"{scheme}://out-{scheme}?protocol=open-protocol&partition-num=2"
            made = client.post(
                "/api/v2/changefeeds", json={"changefeed_id": scheme, "sink_uri": uri}
            )
            assert made.status_code == 200, made.text
        sql(client, SCRIPT)
        sent = {
            scheme: [
                (m["partition"], m["offset"], m["value"])
                for m in feed_messages(client, feed=scheme, limit=10_000)["messages"]
            ]
            for scheme in ("parquet", "jsonl")
        }
        for scheme in ("parquet", "jsonl"):
            assert client.delete(f"/api/v2/changefeeds/{scheme}").status_code == 200
    for scheme, read in (("parquet", read_parquet), ("jsonl", read_jsonl)):
        records = read(str(tmp_path / "data" / f"out-{scheme}"))
        landed = sorted(
            (r.partition, r.offset, base64.b64encode(r.value or b"").decode()) for r in records
        )
        assert landed == sorted(sent[scheme]) and landed


# -- TiCDC's open API v2 -------------------------------------------------------------------------

DISPATCHED = {
    "sink_uri": "memory://?protocol=open-protocol&partition-num=4",
    "replica_config": {
        "sink": {
            "dispatchers": [{"matcher": ["test.*"], "partition": "index-value"}],
            "protocol": "open-protocol",
        }
    },
}


def test_changefeed_lifecycle(client: TestClient) -> None:
    sql(client, "CREATE TABLE t (id INT PRIMARY KEY, v INT); INSERT INTO t VALUES (0, 0);")
    created = client.post("/api/v2/changefeeds", json={"changefeed_id": "cf", **DISPATCHED})
    assert created.status_code == 200, created.text
    info = created.json()
    assert info["id"] == "cf" and info["namespace"] == "default" and info["state"] == "normal"
    assert info["start_ts"] > 0  # from now on: the rows before are not replicated
    assert info["config"] == DISPATCHED["replica_config"]
    error_of(client.post("/api/v2/changefeeds", json={"changefeed_id": "cf", **DISPATCHED}), 409)

    sql(client, "INSERT INTO t VALUES (1, 1), (2, 2), (3, 3), (4, 4);")
    status = client.get("/api/v2/changefeeds/cf/status").json()
    assert status["state"] == "normal" and status["checkpoint_ts"] > info["start_ts"]
    assert set(status["messages"]) == {"ticdc"}  # the sink URI names no topic: TiCDC's default
    counts = status["messages"]["ticdc"]
    # four rows by index-value, and a resolved event on every partition
    assert sorted(counts) == ["0", "1", "2", "3"] and sum(counts.values()) == 4 + 4
    listed = client.get("/api/v2/changefeeds").json()
    assert listed["total"] == 2 and [i["id"] for i in listed["items"]] == ["cf", "default"]
    assert listed["items"][0]["checkpoint_tso"] == status["checkpoint_ts"]

    # paused: nothing is sent; an update needs it stopped; resumed: what committed meanwhile
    assert client.post("/api/v2/changefeeds/cf/pause").json() == {}
    sql(client, "UPDATE t SET v = v + 10 WHERE id >= 3;")
    assert client.get("/api/v2/changefeeds/cf/status").json()["messages"] == status["messages"]
    assert client.get("/api/v2/changefeeds/cf").json()["state"] == "stopped"
    new_uri = "memory://?protocol=canal-json&partition-num=1"
    updated = client.put("/api/v2/changefeeds/cf", json={"sink_uri": new_uri})
    assert updated.status_code == 200 and updated.json()["sink_uri"] == new_uri
    assert client.post("/api/v2/changefeeds/cf/resume").json() == {}
    page = feed_messages(client, feed="cf")
    rows = [d for m in page["messages"] for d in m["decoded"] if d["type"] != "ddl"]
    assert [(r["type"], r["columns"]) for r in rows] == [
        ("update", {"id": 3, "v": 13}),
        ("update", {"id": 4, "v": 14}),
    ]  # canal-json now, from the updated sink URI
    running = client.put("/api/v2/changefeeds/cf", json={"sink_uri": new_uri})
    assert error_of(running, 409, "CDC:ErrChangefeedUpdateRefused") == (
        "changefeed update error: can only update changefeed config when it is stopped"
    )

    assert client.delete("/api/v2/changefeeds/cf").json() == {}
    gone = error_of(client.get("/api/v2/changefeeds/cf"), 404, "CDC:ErrChangeFeedNotExists")
    assert gone == "changefeed not exists, default/cf"
    error_of(client.post("/api/v2/changefeeds/cf/pause"), 404, "CDC:ErrChangeFeedNotExists")
    assert client.delete("/api/v2/changefeeds/cf").json() == {}  # TiCDC: already removed


@pytest.mark.parametrize(
    "feed_id", ["bad id/..", "a_b", "-a", "a-", "a--b", "a.b", "ä", "x" * 129, "a\n"]
)
def test_changefeed_ids_are_checked_as_ticdc_checks_them(client: TestClient, feed_id: str) -> None:
    """tiflow ValidateChangefeedID: `^[a-zA-Z0-9]+(-[a-zA-Z0-9]+)*$`, 128 at most; an id it
    refuses could never be read or removed by path."""
    body = {"changefeed_id": feed_id, "sink_uri": "memory://?protocol=canal-json"}
    message = error_of(client.post("/api/v2/changefeeds", json=body), 400, "CDC:ErrAPIInvalidParam")
    assert message == f"invalid changefeed_id: {feed_id}"
    assert [i["id"] for i in client.get("/api/v2/changefeeds").json()["items"]] == ["default"]


def test_namespaces_are_clusters(client: TestClient) -> None:
    body = {"changefeed_id": "x", "sink_uri": "memory://?protocol=canal-json"}
    bad = error_of(
        client.post("/api/v2/changefeeds", json=body | {"namespace": "a b"}),
        400,
        "CDC:ErrAPIInvalidParam",
    )
    assert bad == "invalid namespace: a b"
    missing = client.post("/api/v2/changefeeds", json=body | {"namespace": "nope"})
    assert error_of(missing, 404, "SIM:ErrClusterNotExists") == (
        "cluster 'nope' does not exist (POST /sim/v1/clusters creates one)"
    )
    # TiCDC: a namespace nobody used has no changefeeds
    nope = {"namespace": "nope"}
    assert client.get("/api/v2/changefeeds", params=nope).json() == {"total": 0, "items": []}
    for method, path in (
        ("GET", "x"),
        ("GET", "x/status"),
        ("PUT", "x"),
        ("POST", "x/pause"),
        ("POST", "x/resume"),
    ):
        answer = client.request(method, f"/api/v2/changefeeds/{path}", params=nope, json={})
        assert (
            error_of(answer, 404, "CDC:ErrChangeFeedNotExists") == "changefeed not exists, nope/x"
        )
    assert client.delete("/api/v2/changefeeds/x", params=nope).json() == {}
    on_sim = client.get("/sim/v1/clusters/nope/changefeeds/x/messages")
    assert error_of(on_sim, 404, "SIM:ErrClusterNotExists").startswith("cluster 'nope'")
    made = client.post("/api/v2/changefeeds", json={"sink_uri": "memory://?protocol=canal-json"})
    assert (
        made.status_code == 200
        and str(uuid.UUID(made.json()["id"], version=4)) == made.json()["id"]
    )


def test_a_changefeed_keeps_its_creation_time_and_checkpoint(client: TestClient) -> None:
    """A new changefeed's checkpoint is its start_ts (TiCDC's); an update keeps its
    create_time and checkpoint, and resuming with nothing new does not reset it."""
    sql(client, "CREATE TABLE t (id INT PRIMARY KEY)")
    body = {"changefeed_id": "cf", "sink_uri": "memory://?protocol=canal-json"}
    info = client.post("/api/v2/changefeeds", json=body).json()
    assert info["checkpoint_ts"] == info["start_ts"] > 0 and info["checkpoint_time"]
    sql(client, "INSERT INTO t VALUES (1)")
    before = client.get("/api/v2/changefeeds/cf").json()
    assert before["checkpoint_ts"] > info["start_ts"]
    client.post("/api/v2/changefeeds/cf/pause")
    updated = client.put(
        "/api/v2/changefeeds/cf", json={"sink_uri": "memory://?protocol=open-protocol"}
    )
    after = updated.json()
    assert after["create_time"] == before["create_time"] == info["create_time"]
    assert after["checkpoint_ts"] == before["checkpoint_ts"]
    assert client.post("/api/v2/changefeeds/cf/resume").json() == {}
    listed = client.get("/api/v2/changefeeds").json()["items"]
    assert [(i["id"], i["checkpoint_tso"]) for i in listed if i["id"] == "cf"] == [
        ("cf", before["checkpoint_ts"])
    ]


def test_the_open_api_reads_json_whatever_the_content_type(client: TestClient) -> None:
    """TiCDC's docs send `curl -d '{...}'` (form-encoded, says curl): TiCDC reads JSON."""
    body = b'{"changefeed_id": "curl", "sink_uri": "memory://?protocol=canal-json"}'
    for kind in ("application/x-www-form-urlencoded", "text/plain"):
        made = client.post("/api/v2/changefeeds", content=body, headers={"content-type": kind})
        assert made.status_code == 200, made.text
        client.delete("/api/v2/changefeeds/curl")
    not_json = client.post(
        "/api/v2/changefeeds",
        content=b"sink_uri=x",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert error_of(not_json, 400, "CDC:ErrAPIInvalidParam") == (
        "the body is not valid JSON at line 1 column 1: Expecting value"
    )


def test_changefeeds_of_another_cluster_use_its_namespace(client: TestClient) -> None:
    client.post("/sim/v1/clusters", json={"id": "other"})
    body = {
        "namespace": "other",
        "changefeed_id": "mine",
        "sink_uri": "memory://?protocol=canal-json",
    }
    assert client.post("/api/v2/changefeeds", json=body).status_code == 200
    sql(client, "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);", "other")
    assert client.get("/api/v2/changefeeds", params={"namespace": "other"}).json()["total"] == 1
    error_of(client.get("/api/v2/changefeeds/mine"), 404)  # not in `default`
    found = client.get("/api/v2/changefeeds/mine/status", params={"namespace": "other"})
    assert sum(n for p in found.json()["messages"].values() for n in p.values()) >= 2


def test_start_and_target_ts(tmp_path: Path) -> None:
    """A start_ts in the past replicates what committed since; target_ts ends the changefeed;
    TiCDC's own errors for a start_ts in the future or before the GC safepoint."""
    with service(tmp_path, history_events=4) as client:
        first = sql(client, "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);")
        created_ts, insert_ts = (t["commit_ts"] for t in first["transactions"])
        sql(client, "INSERT INTO t VALUES (2);")

        def create(feed_id: str, **ts: int) -> Any:
            body = {"changefeed_id": feed_id, "sink_uri": "memory://?protocol=canal-json"}
            return client.post("/api/v2/changefeeds", json=body | ts)

        assert create("late", start_ts=insert_ts).json()["start_ts"] == insert_ts
        three = sql(client, "INSERT INTO t VALUES (3);")["transactions"][0]["commit_ts"]
        ended = create("ended", start_ts=created_ts, target_ts=three - 1)
        assert ended.status_code == 200, ended.text
        assert ended.json()["target_ts"] == three - 1
        sql(client, "INSERT INTO t VALUES (4);")

        def ids(feed_id: str) -> list[int]:
            page = feed_messages(client, feed=feed_id)["messages"]
            return [d["columns"]["id"] for m in page for d in m["decoded"] if d["type"] != "ddl"]

        assert ids("late") == [2, 3, 4]  # 2 committed before the changefeed was made
        assert ids("ended") == [1, 2]
        assert client.get("/api/v2/changefeeds/ended").json()["state"] == "finished"

        def listed(**q: str) -> list[str]:
            found = client.get("/api/v2/changefeeds", params=q).json()
            return [i["id"] for i in found["items"]]

        # TiCDC lists a finished changefeed only when asked for it (FeedState.IsNeeded)
        assert listed() == ["default", "late"]
        assert listed(state="all") == ["default", "ended", "late"]
        assert listed(state="finished") == ["ended"]

        future = error_of(create("f", start_ts=1 << 62), 400, "CDC:ErrAPIInvalidParam")
        assert "larger than current tso" in future
        # 5 events committed, 4 kept: what came before the GC safepoint is gone
        gone = error_of(create("g", start_ts=created_ts), 400, "CDC:ErrStartTsBeforeGC")
        assert "GC safepoint" in gone
        backwards = create("h", start_ts=insert_ts, target_ts=insert_ts)
        error_of(backwards, 400, "CDC:ErrTargetTsBeforeStartTs")


def test_open_api_errors_name_the_field(client: TestClient) -> None:
    message = error_of(client.post("/api/v2/changefeeds", json={"changefeed_id": "x"}), 422)
    assert message == "body.sink_uri: Field required"
    bad = {
        "changefeed_id": "x",
        "sink_uri": "memory://",
        "replica_config": {"sink": {"protocol": "nope"}},
    }
    assert "nope" in error_of(client.post("/api/v2/changefeeds", json=bad), 400)
    bad["sink_uri"] = "memory://?protocol=canal-json"
    bad["replica_config"] = {"sink": {"colour": "red"}}
    assert "colour" in error_of(client.post("/api/v2/changefeeds", json=bad), 400)
    unknown = {"changefeed_id": "x", "sink_uri": "memory://", "colour": "red"}
    assert "colour" in error_of(client.post("/api/v2/changefeeds", json=unknown), 422)
    assert "start_ts" in error_of(client.post("/api/v2/changefeeds", json={"start_ts": -1}), 422)
    assert client.get("/api/v2/health").json() == {}
    status = client.get("/api/v2/status").json()
    assert status["is_owner"] is True and status["version"].startswith("v8.5.0")


# -- faults and checkpoints ----------------------------------------------------------------------


def test_faults_and_checkpoints(client: TestClient) -> None:
    body = {"changefeed_id": "f", "sink_uri": "memory://?protocol=open-protocol&partition-num=1"}
    client.post("/api/v2/changefeeds", json=body)
    base = "/sim/v1/clusters/default/changefeeds/f"
    sql(client, "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);")
    clean = feed_messages(client, feed="f")["messages"]
    assert client.post(f"{base}/faults", json={"kind": "duplicate"}).status_code == 200
    sql(client, "INSERT INTO t VALUES (2);")
    after = feed_messages(client, feed="f")["messages"][len(clean) :]
    rows = [d for m in after for d in m["decoded"] if d["type"] == "insert"]
    assert len(rows) == 2 and rows[0] == rows[1]  # the row again: at-least-once
    # a restart: each partition again from its last checkpoint, within the next transaction
    before = len(feed_messages(client, feed="f")["messages"])
    assert client.post(f"{base}/faults", json={"kind": "restart"}).status_code == 200
    sql(client, "INSERT INTO t VALUES (3);")
    again = feed_messages(client, feed="f")["messages"][before:]
    inserted = [d["columns"]["id"] for m in again for d in m["decoded"] if d["type"] == "insert"]
    assert inserted == [3, 3]
    # a DDL replay: the next DDL record twice
    client.post(f"{base}/faults", json={"kind": "ddl-replay"})
    before = len(feed_messages(client, feed="f")["messages"])
    sql(client, "ALTER TABLE t ADD COLUMN v INT")
    ddls = [
        d["query"]
        for m in feed_messages(client, feed="f")["messages"][before:]
        for d in m["decoded"]
        if d["type"] == "ddl"
    ]
    assert len(ddls) == 2 and ddls[0] == ddls[1]
    error_of(client.post(f"{base}/faults", json={"kind": "meteor"}), 422)
    ts = client.post(f"{base}/checkpoint").json()["checkpoint_ts"]
    assert ts == client.get("/api/v2/changefeeds/f/status").json()["checkpoint_ts"] > 0


# -- limits, the guard, auth ---------------------------------------------------------------------


def test_limits_answer_413_and_mysql_errors(tmp_path: Path) -> None:
    limits = {"max_body_bytes": 200, "max_statements": 3, "max_txn_rows": 5}
    with service(tmp_path, **limits) as client:
        url = "/sim/v1/clusters/default/sql"
        assert "TICDC_SIM_MAX_BODY_BYTES" in error_of(
            client.post(url, content="SELECT 1;" * 30, headers=TEXT), 413
        )
        chunked = client.post(url, content=iter([b"SELECT 1;" * 15] * 2), headers=TEXT)
        assert "TICDC_SIM_MAX_BODY_BYTES" in error_of(chunked, 413)  # no length said: counted
        assert "TICDC_SIM_MAX_STATEMENTS" in error_of(
            client.post(url, content="SELECT 1;" * 4, headers=TEXT), 413
        )
        sql(client, "CREATE TABLE t (id INT PRIMARY KEY)")
        big = sql(client, "INSERT INTO t VALUES (1),(2),(3),(4),(5),(6)")
        assert big["statements"][0]["error"]["code"] == 8004 and big["transactions"] == []
    with service(tmp_path / "slow", request_time_s=0.000001) as client:
        slow = sql(client, "SELECT 1; SELECT 2; SELECT 3;")
        assert slow["ok"] is False
        assert slow["statements"][-1]["error"]["code"] == 3024


def test_concurrent_requests_for_one_directory_give_it_one_changefeed(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two creates (or a create and an update) naming one directory at once: one gets it,
    the other SIM:ErrSinkInUse. Both passed the check before either had built its
    changefeed, and two sinks wrote the same files."""
    slow = Cluster.add_feed

    def slowly(*args: Any) -> Any:
        time.sleep(0.3)  # a sink that takes a while to open
        return slow(*args)

    monkeypatch.setattr(Cluster, "add_feed", slowly)
    uri = "jsonl://shared?protocol=canal-json"
    asked = [{"changefeed_id": f"c{i}", "sink_uri": uri} for i in range(3)]
    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda body: client.post("/api/v2/changefeeds", json=body), asked))
    codes = sorted((a.status_code, a.json().get("error_code")) for a in answers)
    assert codes == [(200, None), (409, "SIM:ErrSinkInUse"), (409, "SIM:ErrSinkInUse")]


def test_file_sinks_stay_under_the_data_directory(client: TestClient, tmp_path: Path) -> None:
    def create(uri: str, **config: Any) -> Any:
        body = {"changefeed_id": "g", "sink_uri": uri, "replica_config": config or None}
        return client.post("/api/v2/changefeeds", json=body)

    assert "outside the data directory" in error_of(
        create("jsonl://../escape?protocol=canal-json"), 403
    )
    error_of(create(f"parquet://{tmp_path}/elsewhere?protocol=canal-json"), 403)
    error_of(create("kafka://evil.example:9092/t?protocol=canal-json"), 403)
    claims = "memory://?protocol=open-protocol&large-message-handle-option=claim-check&claim-check-storage-uri=file:///etc"
    error_of(create(claims), 403)
    made = create("jsonl://mine?protocol=canal-json")  # relative: under the data directory
    assert made.status_code == 200 and made.json()["sink_uri"].startswith(
        f"jsonl://{tmp_path}/data/mine"
    )


def test_a_token_guards_the_api_but_not_the_probes(tmp_path: Path) -> None:
    with service(tmp_path, token="s3cret") as client:
        assert "bearer token" in error_of(
            client.get("/api/v2/changefeeds"), 401, "SIM:Unauthorized"
        )
        error_of(client.get("/api/v2/changefeeds", headers={"Authorization": "Bearer wrong"}), 401)
        ok = client.get("/api/v2/changefeeds", headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        assert client.get("/livez").status_code == 200 and client.get("/readyz").status_code == 200
        assert client.get("/static/index.html").status_code == 200


# -- operations ----------------------------------------------------------------------------------


def test_probes_and_metrics(client: TestClient) -> None:
    assert client.get("/livez").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ok"}
    sql(
        client,
        "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1); INSERT INTO t VALUES (1);",
    )
    text = client.get("/metrics").text
    assert 'ticdc_sim_statements_total{cluster="default"} 3.0' in text
    assert 'ticdc_sim_statement_errors_total{cluster="default"} 1.0' in text
    assert 'ticdc_sim_transactions_total{cluster="default"} 2.0' in text
    for counter in ("lock_waits", "deadlocks", "lock_wait_timeouts"):
        assert f'ticdc_sim_{counter}_total{{cluster="default"}} 0.0' in text
    assert (
        'ticdc_sim_messages_total{changefeed="default",cluster="default",partition="0",protocol="canal-json",topic="ticdc"}'
        in text
    )
    assert (
        'ticdc_sim_http_request_seconds_bucket{le="0.005",route="/sim/v1/clusters/{cluster_id}/sql"}'
        in text
    )
    # TiCDC's checkpoint gauge: physical time in ms, exact (a TSO is not, as a float)
    checkpoint = client.get("/api/v2/changefeeds/default/status").json()["checkpoint_ts"]
    gauge = 'ticdc_sim_checkpoint_ts{changefeed="default",cluster="default"} '
    shown = next(line for line in text.splitlines() if line.startswith(gauge))
    assert float(shown[len(gauge) :]) == physical_ms(checkpoint) == checkpoint >> 18
    assert (
        'ticdc_sim_http_requests_total{method="POST",route="/sim/v1/clusters/{cluster_id}/sql",status="200"} 1.0'
        in text
    )


def test_the_api_docs_need_no_internet(tmp_path: Path) -> None:
    """/docs and /redoc load Swagger UI and ReDoc from the service itself (no CDN), open
    to all like the page, while the API they call keeps its token."""
    with service(tmp_path, token="s3cret") as client:
        for path, assets in (
            ("/docs", ["/static/docs/swagger-ui.css", "/static/docs/swagger-ui-bundle.js"]),
            ("/redoc", ["/static/docs/redoc.standalone.js"]),
        ):
            page = client.get(path)
            assert page.status_code == 200 and "https://" not in page.text, page.text
            for asset in [*assets, "/static/docs/favicon.png", "/openapi.json"]:
                assert f'"{asset}"' in page.text or f"'{asset}'" in page.text, asset
                assert client.get(asset).status_code == 200, asset
        assert "validatorUrl" in client.get("/docs").text  # Swagger's online validator off
        bearer = client.get("/openapi.json").json()["components"]["securitySchemes"]
        assert bearer == {
            "HTTPBearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "TICDC_SIM_TOKEN, if the service has one",
            }
        }
        error_of(client.get("/api/v2/changefeeds"), 401, "SIM:Unauthorized")


def test_the_page_is_served(client: TestClient) -> None:
    root = client.get("/", follow_redirects=False)
    assert root.status_code in (302, 307) and root.headers["location"] == "/static/index.html"
    page = client.get("/static/index.html")
    assert page.status_code == 200 and "<script" in page.text


def test_openapi_json_is_current() -> None:
    """`openapi/openapi.json` is what the app says; regenerate it with `make openapi`."""
    committed = orjson.loads((ROOT / "openapi" / "openapi.json").read_bytes())
    current = create_app(Settings(mysql_port=0)).openapi()
    assert committed == orjson.loads(orjson.dumps(current)), "run `make openapi`"


def test_clusters_and_changefeeds_are_bounded(tmp_path: Path) -> None:
    with service(tmp_path, max_clusters=2, max_changefeeds=2) as client:
        assert client.post("/sim/v1/clusters", json={"id": "one"}).status_code == 201
        message = error_of(
            client.post("/sim/v1/clusters", json={"id": "two"}), 409, "SIM:ErrTooManyClusters"
        )
        assert message == (
            "the service holds 2 clusters, the most it may (TICDC_SIM_MAX_CLUSTERS);"
            " delete one first"
        )
        body = {"changefeed_id": "second", "sink_uri": "memory://?protocol=canal-json"}
        assert client.post("/api/v2/changefeeds", json=body).status_code == 200
        body["changefeed_id"] = "third"
        message = error_of(
            client.post("/api/v2/changefeeds", json=body), 409, "SIM:ErrTooManyChangefeeds"
        )
        assert "cluster 'default' holds 2 changefeeds" in message
        assert client.delete("/sim/v1/clusters/one").status_code == 204
        assert client.post("/sim/v1/clusters", json={"id": "two"}).status_code == 201


def test_statements_report_the_insert_id(client: TestClient) -> None:
    done = sql(
        client,
        "CREATE TABLE ai (id INT AUTO_INCREMENT PRIMARY KEY, v INT);"
        "INSERT INTO ai (v) VALUES (1), (2); INSERT INTO ai VALUES (200, 3), (150, 4);"
        "UPDATE ai SET v = 0;",
    )
    assert [s["last_insert_id"] for s in done["statements"]] == [0, 1, 150, 0]


def test_a_changefeeds_warnings_are_logged_and_in_its_status(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    body = {
        "changefeed_id": "warned",
        "sink_uri": "memory://?protocol=open-protocol",
        "replica_config": {"sink": {"dispatchers": [{"matcher": ["*.*"], "partition": "nope"}]}},
    }
    assert client.post("/api/v2/changefeeds", json=body).status_code == 200
    warnings = client.get("/api/v2/changefeeds/warned/status").json()["warnings"]
    assert len(warnings) == 1 and "nope" in warnings[0]
    assert [r.getMessage() for r in caplog.records if r.name == "ticdc_sim.service"] == [
        f"changefeed warned: {warnings[0]}"
    ]


def test_a_record_the_decoder_refuses_is_shown_undecodable(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ticdc_sim.errors import DecodeError

    sql(client, "CREATE TABLE u (id INT PRIMARY KEY)")
    feed = client.app.state.sim.registry.get("default").feed("default")  # type: ignore[attr-defined]

    def refuse(key: bytes | None, value: bytes | None) -> Any:
        raise DecodeError("not a canal-json message: no `type`")

    monkeypatch.setattr(feed.decoder, "decode", refuse)
    page = feed_messages(client, decode="true")
    assert {m["decoded"][0]["error"] for m in page["messages"]} == {
        "not a canal-json message: no `type`"
    }


def test_a_union_is_refused_rather_than_answered_with_nothing(client: TestClient) -> None:
    done = sql(client, "CREATE TABLE un (id INT PRIMARY KEY); SELECT id FROM un UNION SELECT 1")
    error = done["statements"][1]["error"]
    assert (error["code"], error["message"]) == (
        1105,
        "UNION result sets are not simulated yet: query each SELECT on its own",
    )


def test_a_service_started_again_says_it_replaced_the_earlier_output(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with service(tmp_path) as client:
        sql(client, "CREATE TABLE again (id INT PRIMARY KEY); INSERT INTO again VALUES (1)")
    assert not [r for r in caplog.records if "replaced" in r.getMessage()]
    with service(tmp_path) as client:
        status = client.get("/api/v2/changefeeds/default/status").json()
    folder = (tmp_path / "data" / "default").resolve()
    assert status["warnings"] == [f"earlier output in {folder} replaced"]
    assert [r.getMessage() for r in caplog.records if "replaced" in r.getMessage()] == [
        f"changefeed default: earlier output in {folder} replaced"
    ]


def test_an_update_refuses_a_changefeed_resumed_meanwhile(client: TestClient) -> None:
    """The route checks `stopped` before the rebuild takes the cluster's lock; the rebuild
    checks again under it, so a resume in between is not replaced while it runs."""
    from ticdc_sim.cluster import Conflict
    from ticdc_sim.feed import FeedSpec

    body = {"changefeed_id": "racy", "sink_uri": "memory://?protocol=canal-json"}
    assert client.post("/api/v2/changefeeds", json=body).status_code == 200
    cluster = client.app.state.sim.registry.get("default")  # type: ignore[attr-defined]
    spec = FeedSpec("racy", "memory://?protocol=open-protocol")
    with pytest.raises(Conflict, match="only update changefeed config when it is stopped"):
        cluster.replace_feed(spec, lambda feed: cluster.feed("racy").sink.inner, 10)


SHOP_AND_OTHER = (
    "CREATE DATABASE shop; CREATE TABLE shop.orders (id INT PRIMARY KEY);"
    " CREATE TABLE test.other (id INT PRIMARY KEY);"
    " INSERT INTO shop.orders VALUES (1); INSERT INTO test.other VALUES (1)"
)


def test_the_default_changefeed_takes_a_changefeed_toml(tmp_path: Path) -> None:
    """TICDC_SIM_DEFAULT_CONFIG: a TiCDC changefeed.toml for changefeed `default` (a
    container mounts one instead of creating the changefeed through the API)."""
    config = tmp_path / "changefeed.toml"
    config.write_text('enable-old-value = false\n[filter]\nrules = ["shop.*"]\n')
    settings = Settings(
        data_dir=tmp_path / "data",
        mysql_port=0,
        default_sink_uri="memory://?protocol=open-protocol",
        default_config=config,
    )
    with TestClient(create_app(settings)) as client:
        feed = client.app.state.sim.registry.get("default").feed("default").changefeed  # type: ignore[attr-defined]
        assert feed.enable_old_value is False and feed.filter_rules == ("shop.*",)
        client.post("/sim/v1/clusters/default/sql", content=SHOP_AND_OTHER)
        page = client.get("/sim/v1/clusters/default/changefeeds/default/messages").json()
        tables = {m["decoded"][0].get("table") for m in page["messages"] if m["decoded"]}
        assert "orders" in tables and "other" not in tables


def test_the_sql_route_answered_past_fastapis_router_says_what_it_would(
    client: TestClient,
) -> None:
    """POST .../sql is answered by the Guard itself (app.DIRECT): its errors, the methods
    it does not take and its metrics are those of the route FastAPI would have run."""
    missing = client.post("/sim/v1/clusters/nope/sql", content="SELECT 1;", headers=TEXT)
    assert error_of(missing, 404, "SIM:ErrClusterNotExists") == (
        "cluster 'nope' does not exist (POST /sim/v1/clusters creates one)"
    )
    xml = {"content-type": "application/xml"}
    refused = client.post("/sim/v1/clusters/default/sql", content="SELECT 1;", headers=xml)
    assert error_of(refused, 400, "SIM:InvalidRequest") == (
        'send the SQL as text/plain or as JSON {"sql": ...}, not application/xml'
    )
    as_json = client.post("/sim/v1/clusters/default/sql", json={"sql": "SELECT 1 AS one;"})
    assert as_json.json()["statements"][0]["rows"] == [[1]]
    not_taken = client.get("/sim/v1/clusters/default/sql")
    assert error_of(not_taken, 405, "SIM:HTTP405") == (
        "GET is not allowed on /sim/v1/clusters/default/sql; it takes POST"
    )
    text = client.get("/metrics").text
    route = 'route="/sim/v1/clusters/{cluster_id}/sql"'
    assert f'ticdc_sim_http_requests_total{{method="POST",{route},status="404"}} 1.0' in text
    assert f'ticdc_sim_http_requests_total{{method="POST",{route},status="200"}} 1.0' in text
