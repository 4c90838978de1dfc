"""avro changefeeds and their schema registry, end to end: a schema the registry's default
BACKWARD refuses fails the changefeed with TiCDC's error on every surface (the CLI, the
Python API, the service); `schema-registry=URL` against a running `ticdc-sim serve` (a CLI
replay registers there and `decode` reads back through it, a served changefeed refuses a
registry that is not there at creation and works with its own service's); the HTTP registry
closed with its changefeed, and when its sink cannot be opened."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from support_oracle import AVRO_TOPICS
from support_service import Server, _free_ports
from test_service import error_of, service, sql
from ticdc_sim.api import ChangefeedFailed, Simulator, generate
from ticdc_sim.cli import app
from ticdc_sim.config import changefeed
from ticdc_sim.encoders.registry import RegistryAPIError
from ticdc_sim.errors import ConfigError
from ticdc_sim.pipeline import Pipeline
from ticdc_sim.sinks import schema_registry
from ticdc_sim.sinks.memory import MemorySink

# a column added NOT NULL without a default: TiCDC writes its field without a default, which
# BACKWARD refuses (a reader of the new schema cannot fill it from the old one's records)
CREATE = "CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\n"
ALTER = "ALTER TABLE t ADD COLUMN c INT NOT NULL;\nINSERT INTO t VALUES (2, 3);\n"
REFUSED = (
    "schema manager API error, registering subject 'tidb_test_t-value': error 409: Schema"
    ' being registered is incompatible with an earlier schema for subject "tidb_test_t-value",'
    " details: [{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'c' at"
    " path '/fields/1' in the new schema has no default value and is missing in the old"
    " schema', additionalInfo:'c'}, {oldSchemaVersion: 1}, {oldSchema:"
    ' \'{"type":"record","name":"t","namespace":"default.test","fields":[{"name":"id","type":'
    '{"type":"int","connect.parameters":{"tidb_type":"INT"}}}]}\'}, {compatibility:'
    " 'BACKWARD'}] (TiCDC: ErrAvroSchemaAPIError)"
)
# the first row's key and value: schema 1 (the key's and the first value's are one schema), id 1
FIRST_ROW = {"offset": 0, "key": "AAAAAAEC", "value": "AAAAAAEC", "headers": {}}


# -- a refused schema fails the changefeed ----------------------------------------------------


def test_a_refused_schema_fails_a_cli_replay(tmp_path: Path) -> None:
    """Exit status 1 and TiCDC's error; what was sent before it stays, in DIR.partial (the
    pipeline's abort), with the registry as it was: version 1 only."""
    script, config, out = tmp_path / "alter.sql", tmp_path / "cf.toml", tmp_path / "out"
    script.write_text(CREATE + ALTER)
    config.write_text(AVRO_TOPICS)
    uri = f"jsonl://{out}?protocol=avro&partition-num=1"
    ran = CliRunner().invoke(
        app, ["replay", str(script), "--sink-uri", uri, "--config", str(config)]
    )
    assert ran.exit_code == 1
    assert ran.stderr == (
        f"the records sent before the error are in {out}.partial\n"
        "2 rows, 2 DDL, 0 checkpoints -> records per topic: tidb_test_t: 1\n"
        f"error: {REFUSED}\n"
    )
    assert not out.exists()
    assert sorted(p.name for p in (out.parent / "out.partial").rglob("*")) == [
        "partition-0.jsonl",
        "schema-registry.json",
        "tidb_test_t",
    ]
    sent = (out.parent / "out.partial" / "tidb_test_t" / "partition-0.jsonl").read_text()
    assert [json.loads(line) for line in sent.splitlines()] == [FIRST_ROW]
    saved = json.loads((out.parent / "out.partial" / "schema-registry.json").read_text())
    assert saved["subjects"] == {"tidb_test_t-key": [1], "tidb_test_t-value": [1]}


def test_a_refused_schema_fails_a_python_api_changefeed() -> None:
    with Simulator(seed=1) as sim:
        feed = sim.changefeed("memory://?protocol=avro", AVRO_TOPICS)
        sim.execute(CREATE)
        # the new version registers at its first row, as TiCDC's does, when the batch holding
        # it is encoded: here as the records are asked for
        sim.execute(ALTER)
        with pytest.raises(ChangefeedFailed) as caught:
            feed.records()
        assert str(caught.value) == f"changefeed feed-1 failed: {REFUSED}"
        assert feed.error == REFUSED
        assert [(r.key, r.value) for r in feed.records()] == [(b"\0\0\0\0\1\2", b"\0\0\0\0\1\2")]
        # the upstream goes on; the changefeed sends nothing more
        sim.execute("INSERT INTO t VALUES (4, 5)")
        assert len(feed.records()) == 1


def test_a_refused_schema_fails_a_served_changefeed(tmp_path: Path) -> None:
    """State `failed` with TiCDC's error code and message; the request's statements
    committed upstream all the same."""
    with service(tmp_path) as client:
        body = {
            "changefeed_id": "avro",
            "sink_uri": "memory://?protocol=avro",
            "replica_config": {
                "sink": {"dispatchers": [{"matcher": ["*.*"], "topic": "tidb_{schema}_{table}"}]}
            },
        }
        created = client.post("/api/v2/changefeeds", json=body)
        assert created.status_code == 200, created.text
        sql(client, CREATE)
        outcome = sql(client, ALTER)
        assert [s.get("error") for s in outcome["statements"]] == [None, None]
        info = client.get("/api/v2/changefeeds/avro").json()
        assert info["state"] == "failed"
        assert info["error"].pop("time")  # when it failed: the wall clock's
        assert info["error"] == {
            "addr": "127.0.0.1:8300",
            "code": "CDC:ErrAvroSchemaAPIError",
            "message": REFUSED,
        }
        listed = client.get("/api/v2/changefeeds").json()["items"]
        assert {f["id"]: f["state"] for f in listed}["avro"] == "failed"
        # a failed changefeed can be updated, as TiCDC allows (here to a level that takes it)
        client.put(
            "/sim/v1/clusters/default/schema-registry/config/tidb_test_t-value",
            json={"compatibility": "NONE"},
        ).raise_for_status()
        resumed = client.post("/api/v2/changefeeds/avro/resume")
        assert resumed.status_code == 200, resumed.text
        info = client.get("/api/v2/changefeeds/avro").json()
        assert (info["state"], info["error"]) == ("normal", None)


def test_a_served_avro_changefeed_without_a_topic_rule_is_warned_of(tmp_path: Path) -> None:
    """Before the registry refuses the second table, the changefeed's status says why it will."""
    with service(tmp_path) as client:
        body = {"changefeed_id": "one-topic", "sink_uri": "memory://?protocol=avro"}
        assert client.post("/api/v2/changefeeds", json=body).status_code == 200
        status = client.get("/api/v2/changefeeds/one-topic/status").json()
        assert status["warnings"] == [
            "protocol avro: topic 'ticdc' can carry more than one table (tables no rule"
            " matches), and avro needs one table a topic: their schemas share the subjects"
            " ticdc-key and ticdc-value, where a registry at BACKWARD refuses the second"
            " table's, failing the changefeed (ErrAvroSchemaAPIError); TiCDC's docs ask for"
            " [sink] dispatchers = [{matcher = ['*.*'], topic = \"tidb_{schema}_{table}\"}]"
        ]
        # as warned: the second table's key schema is refused under the first's subject
        sql(
            client,
            "CREATE TABLE a (id INT PRIMARY KEY);\nCREATE TABLE b (id INT PRIMARY KEY);\n"
            "INSERT INTO a VALUES (1);\nINSERT INTO b VALUES (1);",
        )
        info = client.get("/api/v2/changefeeds/one-topic").json()
        assert (info["state"], info["error"]["message"]) == (
            "failed",
            "schema manager API error, registering subject 'ticdc-key': error 409: Schema being"
            ' registered is incompatible with an earlier schema for subject "ticdc-key",'
            " details: [{errorType:'NAME_MISMATCH', description:'The name of the schema has"
            " changed (path '/name')', additionalInfo:'expected: default.test.a'},"
            ' {oldSchemaVersion: 1}, {oldSchema: \'{"type":"record","name":"a",'
            '"namespace":"default.test","fields":[{"name":"id","type":{"type":"int",'
            '"connect.parameters":{"tidb_type":"INT"}}}]}\'}, {compatibility: \'BACKWARD\'}]'
            " (TiCDC: ErrAvroSchemaAPIError)",
        )


# -- schema-registry=URL: a running service's registry ------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    found = Server.start(tmp_path_factory.mktemp("serve") / "data")
    yield found
    found.stop()


def registry_url(server: Server, cluster: str) -> str:
    made = httpx.post(f"{server.http}/sim/v1/clusters", json={"id": cluster})
    assert made.status_code == 201, made.text
    return f"{server.http}/sim/v1/clusters/{cluster}/schema-registry"


def test_a_replay_registers_in_a_served_registry_and_decode_reads_through_it(
    server: Server, tmp_path: Path
) -> None:
    url = registry_url(server, "replay")
    script, config, out = tmp_path / "t.sql", tmp_path / "cf.toml", tmp_path / "out"
    script.write_text(CREATE + "UPDATE t SET id = 5 WHERE id = 1;\nDELETE FROM t;\n")
    config.write_text(AVRO_TOPICS)
    uri = f"jsonl://{out}?protocol=avro&partition-num=1&schema-registry={url}"
    ran = CliRunner().invoke(
        app, ["replay", str(script), "--sink-uri", uri, "--config", str(config)]
    )
    assert ran.exit_code == 0, ran.stderr
    # the schemas are the service's, not a file's beside the records
    assert not (out / "schema-registry.json").exists()
    assert httpx.get(f"{url}/subjects").json() == ["tidb_test_t-key", "tidb_test_t-value"]
    decoded = CliRunner().invoke(app, ["decode", uri])
    assert decoded.exit_code == 0, decoded.stderr
    lines = [json.loads(line) for line in decoded.stdout.splitlines()]
    assert [(d["type"], d["columns"] or d["pre_columns"]) for d in lines] == [
        ("insert", {"id": 1}),
        ("delete", {"id": 1}),  # the key change split, as TiCDC's avro sends it
        ("insert", {"id": 5}),
        ("delete", {"id": 5}),
    ]


def test_a_served_changefeed_refuses_a_registry_that_is_not_there(tmp_path: Path) -> None:
    (port,) = _free_ports(1)
    body = {
        "changefeed_id": "away",
        "sink_uri": f"memory://?protocol=avro&schema-registry=http://127.0.0.1:{port}",
        "replica_config": {
            "sink": {"dispatchers": [{"matcher": ["*.*"], "topic": "tidb_{schema}_{table}"}]}
        },
    }
    allowed = [f"http://127.0.0.1:{port}"]  # TICDC_SIM_SCHEMA_REGISTRY_ALLOW
    with service(tmp_path, schema_registry_allow=allowed) as client:
        refused = client.post("/api/v2/changefeeds", json=body)
        assert error_of(refused, 400, "CDC:ErrAvroSchemaAPIError") == (
            f"schema registry http://127.0.0.1:{port}: testing the connection: GET /: cannot"
            " connect ([Errno 111] Connection refused)"
        )
        assert client.get("/api/v2/changefeeds/away").status_code == 404


def test_a_served_changefeed_registers_in_its_own_services_registry(server: Server) -> None:
    url = registry_url(server, "own")
    body = {
        "changefeed_id": "own",
        "namespace": "own",
        "sink_uri": f"memory://?protocol=avro&schema-registry={url}",
        "replica_config": {
            "sink": {"dispatchers": [{"matcher": ["*.*"], "topic": "tidb_{schema}_{table}"}]}
        },
    }
    api = f"{server.http}/api/v2/changefeeds"
    created = httpx.post(api, json=body, timeout=30)
    assert created.status_code == 200, created.text
    server.sql(CREATE + "INSERT INTO t VALUES (2);\n", cluster="own")
    page = httpx.get(f"{server.http}/sim/v1/clusters/own/changefeeds/own/messages").json()
    decoded = [d for m in page["messages"] for d in m["decoded"]]
    assert [(d["type"], d["columns"]) for d in decoded] == [
        ("insert", {"id": 1}),
        ("insert", {"id": 2}),
    ]
    assert httpx.get(f"{url}/subjects").json() == ["tidb_test_t-key", "tidb_test_t-value"]


# -- the HTTP registry is closed with its changefeed ------------------------------------------


@pytest.fixture
def closes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URL of each HTTP registry closed, in order."""
    closed: list[str] = []
    close = schema_registry.HTTPRegistry.close

    def recorded(self: schema_registry.HTTPRegistry) -> None:
        closed.append(self.url)
        close(self)

    monkeypatch.setattr(schema_registry.HTTPRegistry, "close", recorded)
    return closed


def test_a_pipeline_closes_the_registry_it_opened(server: Server, closes: list[str]) -> None:
    url = registry_url(server, "pipeline")
    feed = changefeed(f"memory://?protocol=avro&schema-registry={url}", AVRO_TOPICS)
    Pipeline(feed, MemorySink()).close()
    aborted = Pipeline(feed, MemorySink())
    aborted.abort()
    assert closes == [url, url]


def test_a_changefeed_closes_its_registry(
    server: Server, closes: list[str], tmp_path: Path
) -> None:
    url = registry_url(server, "feeds")
    uri = f"memory://?protocol=avro&schema-registry={url}"
    with Simulator(seed=1) as sim:
        sim.changefeed(uri, AVRO_TOPICS)
        assert closes == []
    assert closes == [url]
    # a sink that cannot be opened: the registry opened before it is closed
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "other").write_text("not ours")
    with Simulator(seed=1) as sim, pytest.raises(ConfigError):
        sim.changefeed(
            f"jsonl://{tmp_path / 'out'}?protocol=avro&schema-registry={url}", AVRO_TOPICS
        )
    assert closes == [url, url]


def test_a_schema_no_confluent_registry_takes_fails_the_changefeed() -> None:
    """Two columns SanitizeName makes one field name: TiCDC writes the schema, Confluent's
    registry (Java's Avro) refuses it, 42201, and the changefeed fails; the simulator's own
    registry refuses it as its REST API does."""
    with Simulator(seed=1) as sim:
        feed = sim.changefeed("memory://?protocol=avro", AVRO_TOPICS)
        sim.execute("CREATE TABLE t (id INT PRIMARY KEY, `a-b` INT, `a.b` INT)")
        sim.execute("INSERT INTO t VALUES (1, 2, 3)")
        with pytest.raises(ChangefeedFailed) as caught:
            feed.records()
        assert str(caught.value) == (
            "changefeed feed-1 failed: schema manager API error, registering subject"
            " 'tidb_test_t-value': error 42201: Invalid schema: Field name a_b already in use."
            " (TiCDC: ErrAvroSchemaAPIError)"
        )
        assert sim.registry.subjects() == ["tidb_test_t-key"]


def test_a_registry_that_is_not_there_leaves_no_output(tmp_path: Path) -> None:
    """The Python API's generate opens avro's registry before its sink, as the CLI does: a
    registry that does not answer leaves no directory, partial or not."""
    (port,) = _free_ports(1)
    url = f"http://127.0.0.1:{port}"
    said = (
        f"schema registry {url}: testing the connection: GET /: cannot connect ([Errno 111]"
        " Connection refused)"
    )
    spec = {
        "tables": [{"ddl": "CREATE TABLE t (id INT PRIMARY KEY)", "rows": 1}],
        "operations": {"events": 2},
    }
    out = tmp_path / "out"
    with pytest.raises(RegistryAPIError) as caught:
        generate(spec, f"jsonl://{out}?protocol=avro&schema-registry={url}", AVRO_TOPICS)
    assert str(caught.value) == said
    assert sorted(tmp_path.iterdir()) == []
