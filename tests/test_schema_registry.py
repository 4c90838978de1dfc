"""The schema registry over HTTP: the service's Confluent REST API driven by confluent-kafka's
own `SchemaRegistryClient` (`ticdc-sim serve` in a subprocess, as users reach it), and
ticdc-sim's client (`sinks/schema_registry.py`, TiCDC's) against that API and against a
server that answers wrongly: each failure with its exact message."""

from __future__ import annotations

import datetime as dt
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import httpx
import pytest
import uvicorn
from confluent_kafka.schema_registry import (
    ConfigCompatibilityLevel,
    Schema,
    SchemaRegistryClient,
    ServerConfig,
)
from confluent_kafka.schema_registry.error import SchemaRegistryError
from fastapi.testclient import TestClient
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from support_service import Server
from ticdc_sim.encoders import compatibility
from ticdc_sim.errors import SimError
from ticdc_sim.service.app import create_app
from ticdc_sim.service.settings import Settings
from ticdc_sim.sinks.schema_registry import RegistryAPIError, open_registry

ROW = '{"type":"record","name":"row","namespace":"default.test","fields":[{"name":"id","type":"int"}]}'
ROW2 = '{"type":"record","name":"row","namespace":"default.test","fields":[{"name":"id","type":"int"},{"name":"v","type":["null","string"],"default":null}]}'
# ROW with a NOT NULL column of no default (ADD COLUMN w VARCHAR(8) NOT NULL): BACKWARD refuses it
ROW_W = '{"type":"record","name":"row","namespace":"default.test","fields":[{"name":"id","type":"int"},{"name":"w","type":"string"}]}'
MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"
REFUSED_W = (
    "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'w' at path"
    " '/fields/1' in the new schema has no default value and is missing in the old schema',"
    " additionalInfo:'w'}"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    found = Server.start(tmp_path_factory.mktemp("serve") / "data")
    httpx.post(f"{found.http}/sim/v1/clusters", json={"id": "other"}).raise_for_status()
    yield found
    found.stop()


def base(server: Server, cluster: str = "default") -> str:
    return base_of(server.http, cluster)


@pytest.fixture
def client(server: Server, request: pytest.FixtureRequest) -> Iterator[SchemaRegistryClient]:
    """Confluent's client of a cluster of its own (each test a fresh registry)."""
    cluster = request.node.name.replace("_", "-")[:60].strip("-")
    made = httpx.post(f"{server.http}/sim/v1/clusters", json={"id": cluster})
    assert made.status_code == 201, made.text
    with SchemaRegistryClient({"url": base(server, cluster)}) as found:
        yield found
    httpx.delete(f"{server.http}/sim/v1/clusters/{cluster}").raise_for_status()


def refused(call: Callable[[], object]) -> tuple[int, int, str]:
    with pytest.raises(SchemaRegistryError) as caught:
        call()
    e = caught.value
    return e.http_status_code, e.error_code, e.error_message


def test_the_base_url_answers_exactly_empty_braces(server: Server) -> None:
    for url in (base(server), base(server) + "/"):
        answer = httpx.get(url)
        assert (answer.status_code, answer.text) == (200, "{}")
        assert answer.headers["content-type"] == MEDIA_TYPE


def test_register_get_by_id_latest_lookup(client: SchemaRegistryClient) -> None:
    assert client.register_schema("t-value", Schema(ROW, "AVRO")) == 1
    assert client.register_schema("t-key", Schema(ROW, "AVRO")) == 1  # one schema, one id
    assert client.register_schema("t-value", Schema(ROW2, "AVRO")) == 2
    assert client.get_schema(2).schema_str == ROW2
    latest = client.get_latest_version("t-value")
    assert (latest.schema_id, latest.version, latest.subject) == (2, 2, "t-value")
    assert latest.schema.schema_str == ROW2
    first = client.get_version("t-value", 1)
    assert (first.schema_id, first.version, first.schema.schema_str) == (1, 1, ROW)
    found = client.lookup_schema("t-value", Schema(json.dumps(json.loads(ROW)), "AVRO"))
    assert (found.schema_id, found.version, found.subject) == (1, 1, "t-value")
    assert client.get_subjects() == ["t-key", "t-value"]
    assert client.get_versions("t-value") == [1, 2]
    assert client.get_subjects_by_schema_id(1) == ["t-key", "t-value"]
    assert [(v.subject, v.version) for v in client.get_schema_versions(1)] == [
        ("t-key", 1),
        ("t-value", 1),
    ]
    assert client.get_schema_types() == ["AVRO"]


def test_delete_a_subject(client: SchemaRegistryClient, server: Server) -> None:
    client.register_schema("t-value", Schema(ROW, "AVRO"))
    client.register_schema("t-value", Schema(ROW2, "AVRO"))
    assert client.delete_subject("t-value") == [1, 2]
    assert client.get_subjects() == []
    assert refused(lambda: client.get_versions("t-value")) == (
        404,
        40401,
        "subject 't-value' not found",
    )
    # ids stay: a schema registered again keeps its id
    assert client.register_schema("again", Schema(ROW2, "AVRO")) == 2


def test_compatibility_levels_are_stored(client: SchemaRegistryClient) -> None:
    assert client.get_compatibility() == "BACKWARD"
    assert client.set_compatibility(level="full") == {"compatibility": "FULL"}
    assert client.get_compatibility() == "FULL"
    assert refused(lambda: client.get_compatibility("t-value")) == (
        404,
        40408,
        "Subject 't-value' does not have subject-level compatibility configured",
    )
    assert client.set_compatibility("t-value", "NONE") == {"compatibility": "NONE"}
    assert client.get_compatibility("t-value") == "NONE"
    assert client.get_compatibility() == "FULL"
    assert refused(lambda: client.set_compatibility(level="SIDEWAYS")) == (
        422,
        42203,
        "Invalid compatibility level 'SIDEWAYS'. Valid values are BACKWARD,"
        " BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE, NONE",
    )


def test_compatibility_is_enforced(client: SchemaRegistryClient, server: Server) -> None:
    assert client.register_schema("t-value", Schema(ROW, "AVRO")) == 1
    assert client.test_compatibility("t-value", Schema(ROW2, "AVRO")) is True
    assert client.test_compatibility("t-value", Schema(ROW_W, "AVRO")) is False
    assert client.test_compatibility("t-value", Schema(ROW_W, "AVRO"), version=1) is False
    assert client.test_compatibility_all_versions("t-value", Schema(ROW_W, "AVRO")) is False
    details = f"{REFUSED_W}, {{oldSchemaVersion: 1}}, {{oldSchema: '{ROW}'}}, {{compatibility: 'BACKWARD'}}"
    assert refused(lambda: client.register_schema("t-value", Schema(ROW_W, "AVRO"))) == (
        409,
        409,
        "Schema being registered is incompatible with an earlier schema for subject"
        f' "t-value", details: [{details}]',
    )
    assert client.get_versions("t-value") == [1]
    url = client._rest_client.base_urls[0]  # the client's own base: the cluster's registry
    verbose = httpx.post(
        f"{url}/compatibility/subjects/t-value/versions/latest?verbose=true",
        json={"schema": ROW_W},
    )
    assert verbose.json() == {
        "is_compatible": False,
        "messages": [
            REFUSED_W,
            "{oldSchemaVersion: 1}",
            f"{{oldSchema: '{ROW}'}}",
            "{compatibility: 'BACKWARD'}",
        ],
    }
    # a subject of its own level: NONE lets the schema in
    none = ServerConfig(compatibility=ConfigCompatibilityLevel.NONE)
    assert client.set_config("t-value", none) == {"compatibility": "NONE"}
    assert client.get_config("t-value").compatibility_level == ConfigCompatibilityLevel.NONE
    assert client.get_config().compatibility_level == ConfigCompatibilityLevel.BACKWARD
    assert client.test_compatibility("t-value", Schema(ROW_W, "AVRO")) is True
    assert client.register_schema("t-value", Schema(ROW_W, "AVRO")) == 2
    # a subject without versions: nothing to be incompatible with, no version to test against
    assert client.test_compatibility_all_versions("u-value", Schema(ROW_W, "AVRO")) is True
    assert refused(lambda: client.test_compatibility("u-value", Schema(ROW, "AVRO"))) == (
        404,
        40401,
        "subject 'u-value' not found",
    )
    full = ServerConfig(compatibility=ConfigCompatibilityLevel.FULL_TRANSITIVE)
    assert client.set_config(config=full) == {"compatibility": "FULL_TRANSITIVE"}
    assert client.get_config().compatibility_level == ConfigCompatibilityLevel.FULL_TRANSITIVE


def test_error_codes(client: SchemaRegistryClient) -> None:
    client.register_schema("t-value", Schema(ROW, "AVRO"))
    assert refused(lambda: client.get_latest_version("nope")) == (
        404,
        40401,
        "subject 'nope' not found",
    )
    assert refused(lambda: client.get_version("t-value", 2)) == (
        404,
        40402,
        "version 2 of subject 't-value' not found",
    )
    assert refused(lambda: client.get_schema(7)) == (404, 40403, "schema 7 not found")
    assert refused(lambda: client.lookup_schema("t-value", Schema(ROW2, "AVRO"))) == (
        404,
        40403,
        "schema not found under 't-value'",
    )
    assert refused(lambda: client.register_schema("t-value", Schema('{"type": "nope"}'))) == (
        422,
        42201,
        "Invalid schema: unknown type {'type': 'nope'}",
    )
    assert refused(lambda: client.register_schema("t-value", Schema(ROW, "PROTOBUF"))) == (
        422,
        42201,
        "schemaType 'PROTOBUF': this registry holds AVRO schemas only",
    )
    assert refused(lambda: client.get_version("t-value", 0)) == (
        422,
        42202,
        "The specified version '0' is not a valid version id. Allowed values are between"
        ' [1, 2^31-1] and the string "latest"',
    )


def test_a_subject_may_hold_any_character(client: SchemaRegistryClient) -> None:
    """The client percent-encodes it, `/` too; the registry reads each segment on its own."""
    subject = "a/b c?%é"
    assert client.register_schema(subject, Schema(ROW, "AVRO")) == 1
    assert client.get_subjects() == [subject]
    assert client.get_latest_version(subject).subject == subject


def test_each_cluster_has_its_own_registry(server: Server) -> None:
    with SchemaRegistryClient({"url": base(server, "other")}) as mine:
        assert mine.register_schema("o-value", Schema(ROW2, "AVRO")) == 1
    answer = httpx.get(base(server, "nope") + "/subjects")
    assert answer.status_code == 404
    assert answer.json() == {
        "error_code": 404,
        "message": "cluster 'nope' does not exist (POST /sim/v1/clusters creates one)",
    }


def test_with_a_token(tmp_path: Path) -> None:
    """A service with TICDC_SIM_TOKEN asks the registry's clients for it too: Confluent's
    client sends it as a static bearer token; without it, Confluent's 401."""
    server = Server.start(tmp_path / "data", token="tk")
    try:
        bearer = {
            "bearer.auth.credentials.source": "STATIC_TOKEN",
            "bearer.auth.token": "tk",
            "bearer.auth.logical.cluster": "default",
        }
        with SchemaRegistryClient({"url": base(server), **bearer}) as client:
            assert client.register_schema("t-value", Schema(ROW, "AVRO")) == 1
        with SchemaRegistryClient({"url": base(server)}) as client:
            assert refused(client.get_subjects) == (
                401,
                401,
                "a bearer token is required (Authorization: Bearer ...)",
            )
        assert api_error(lambda: open_registry(base(server))) == (
            401,
            f"schema registry {base(server)}: testing the connection: GET answered HTTP 401"
            " Unauthorized, not {} (is it a Confluent Schema Registry's base URL?)",
        )
    finally:
        server.stop()


# -- ticdc-sim's client (TiCDC's) ---------------------------------------------------------------


def test_the_client_against_the_services_registry(server: Server) -> None:
    with open_registry(base(server, "other") + "/") as registry:
        assert registry.url == base(server, "other")
        value = registry.register("p-value", ROW)
        assert value == registry.register("p-key", json.dumps(json.loads(ROW), indent=2))
        assert registry.schema(value) == ROW
        with SchemaRegistryClient({"url": base(server, "other")}) as seen:
            assert seen.get_latest_version("p-value").schema_id == value
        assert api_error(lambda: registry.schema(99)) == (
            40403,
            f"schema registry {base(server, 'other')}: looking up schema id 99: HTTP 404 Not Found:"
            " error 40403: schema 99 not found",
        )


def test_the_client_is_refused_a_registration_as_ticdc_is(server: Server) -> None:
    """TiCDC's Register answers a 409 with ErrAvroSchemaAPIError at once (httpRetry retries
    no 4xx): the changefeed fails with it."""
    url = base(server, "other")
    with open_registry(url) as registry:
        registry.register("r-value", ROW)
        with pytest.raises(RegistryAPIError) as caught:
            registry.register("r-value", ROW_W)
    details = f"{REFUSED_W}, {{oldSchemaVersion: 1}}, {{oldSchema: '{ROW}'}}, {{compatibility: 'BACKWARD'}}"
    assert (caught.value.code, caught.value.error_code, str(caught.value)) == (
        409,
        "CDC:ErrAvroSchemaAPIError",
        f"schema registry {url}: registering subject 'r-value': HTTP 409 Conflict:"
        " Schema being registered is incompatible with an earlier schema for subject"
        f' "r-value", details: [{details}]',
    )


def test_a_thread_of_the_service_reaches_its_own_registry(tmp_path: Path) -> None:
    """A changefeed whose `schema-registry` is its own service's registers from a pool
    thread while its request waits: the registry answers on the event loop, so it answers
    even with every pool thread taken (here: one thread, the waiting one)."""
    app = create_app(Settings(data_dir=tmp_path, mysql_port=0))
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listening.getsockname()[1]}"

    async def loopback(request: Request) -> JSONResponse:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 1

        def register() -> int:
            with open_registry(base_of(url), attempts=1, timeout_s=5) as registry:
                return registry.register("t-value", ROW)

        return JSONResponse(await run_in_threadpool(register))

    app.add_route("/loopback", loopback)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]})
    thread.start()
    try:
        while not server.started:
            time.sleep(0.01)
        assert httpx.get(f"{url}/loopback", timeout=10).json() == 1
    finally:
        server.should_exit = True
        thread.join()
        listening.close()


def base_of(url: str, cluster: str = "default") -> str:
    return f"{url}/sim/v1/clusters/{cluster}/schema-registry"


class Junk:
    """A server that answers each (method, path) as a test says: a list of (status, body)
    answers in turn (the last one repeats), or a delay before answering."""

    def __init__(self) -> None:
        self.answers: dict[tuple[str, str], list[tuple[int, str]]] = {}
        self.delay = 0.0
        self.seen: list[tuple[str, str, bytes]] = []
        self.headers: list[dict[str, str]] = []
        junk = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                junk.seen.append((self.command, self.path, self.rfile.read(size)))
                junk.headers.append({k.lower(): v for k, v in self.headers.items()})
                time.sleep(junk.delay)
                found = junk.answers.get((self.command, self.path), [(404, "not found")])
                status, body = found.pop(0) if len(found) > 1 else found[0]
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/registry"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def junk() -> Iterator[Junk]:
    server = Junk()
    server.answers[("GET", "/registry")] = [(200, "{}")]
    yield server
    server.close()


def api_error(call: Callable[[], object]) -> tuple[int, str]:
    with pytest.raises(RegistryAPIError) as caught:
        call()
    assert isinstance(caught.value, SimError)
    assert caught.value.error_code == "CDC:ErrAvroSchemaAPIError"
    return caught.value.code, str(caught.value)


def test_a_refused_connection() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    assert api_error(lambda: open_registry(url)) == (
        0,
        f"schema registry {url}: testing the connection: GET /: cannot connect ([Errno 111]"
        " Connection refused)",
    )


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("kafka://127.0.0.1:9092", "not an http:// or https:// URL"),
        ("registry:8081", "not an http:// or https:// URL"),
        ("http://", "not an http:// or https:// URL"),
        ("http://:8081", "not an http:// or https:// URL"),
        ("http://127.0.0.1:99999", "port 99999 is past 65535"),
        ("http://127.0.0.1:port", "not a URL: Invalid port: 'port'"),
        ("http://[::1", "not a URL: Invalid port: ':1'"),
        ("http://256.1.1.1", "not a URL: Invalid IPv4 address: '256.1.1.1'"),
        (
            "http://127.0.0.1/\x00",
            "not a URL: Invalid non-printable ASCII character in URL, '\\x00' at position 17.",
        ),
    ],
)
def test_not_a_registry_url(url: str, said: str) -> None:
    assert api_error(lambda: open_registry(url)) == (0, f"schema-registry {url!r}: {said}")


def test_a_host_name_that_cannot_be_encoded() -> None:
    url = f"http://{'a' * 64}.invalid"
    assert api_error(lambda: open_registry(url)) == (
        0,
        f"schema registry {url}: testing the connection: GET /: not a host name (encoding with"
        " 'idna' codec failed (UnicodeError: label empty or too long))",
    )


def test_a_password_is_sent_and_not_shown(junk: Junk) -> None:
    url = junk.url.replace("http://", "http://me:secret@")
    junk.answers[("GET", "/registry")] = [(401, "who are you")]
    shown_url = junk.url.replace("http://", "http://me:***@")
    assert api_error(lambda: open_registry(url)) == (
        401,
        f"schema registry {shown_url}: testing the connection: GET answered HTTP 401"
        " Unauthorized, not {} (is it a Confluent Schema Registry's base URL?)",
    )
    assert junk.headers[-1]["authorization"] == "Basic bWU6c2VjcmV0"  # me:secret


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        # what is not a registry is named by its status line, its body never repeated
        (200, '{"ok": true}', "HTTP 200 OK"),
        (200, "{} ", "HTTP 200 OK"),
        (404, "<html>not here</html>", "HTTP 404 Not Found"),
    ],
)
def test_a_base_url_that_does_not_answer_empty_braces(
    junk: Junk, status: int, body: str, said: str
) -> None:
    junk.answers[("GET", "/registry")] = [(status, body)]
    assert api_error(lambda: open_registry(junk.url)) == (
        status,
        f"schema registry {junk.url}: testing the connection: GET answered {said}, not {{}} (is"
        " it a Confluent Schema Registry's base URL?)",
    )
    assert len(junk.seen) == 1  # TiCDC does not retry the check


def test_a_base_url_that_fails(junk: Junk) -> None:
    junk.answers[("GET", "/registry")] = [(500, "")]
    assert api_error(lambda: open_registry(junk.url)) == (
        500,
        f"schema registry {junk.url}: testing the connection: HTTP 500 Internal"
        " Server Error (not a Confluent error answer)",
    )
    assert len(junk.seen) == 1


POST = ("POST", "/registry/subjects/t-value/versions")


def test_register_posts_the_compact_schema_and_caches_the_id(junk: Junk) -> None:
    junk.answers[POST] = [(200, '{"id": 3}')]
    with open_registry(junk.url, backoff_s=0) as registry:
        assert registry.register("t-value", json.dumps(json.loads(ROW), indent=2)) == 3
        assert registry.register("t-value", ROW) == 3
        assert registry.schema(3) == ROW  # known from registering it
        posts = [body for method, _, body in junk.seen if method == "POST"]
        assert posts == [json.dumps({"schema": ROW}).encode()]


def test_a_5xx_is_retried_then_reported(junk: Junk) -> None:
    store_error = '{"error_code": 50001, "message": "Error in the backend data store"}'
    junk.answers[POST] = [(500, store_error), (503, "busy"), (200, '{"id": 1}')]
    with open_registry(junk.url, backoff_s=0) as registry:
        assert registry.register("t-value", ROW) == 1
        junk.answers[("POST", "/registry/subjects/t-key/versions")] = [(500, store_error)]
        assert api_error(lambda: registry.register("t-key", ROW2)) == (
            50001,
            f"schema registry {junk.url}: registering subject 't-key': HTTP 500 Internal Server Error:"
            " error 50001:"
            " Error in the backend data store (after 5 attempts)",
        )
        assert sum(1 for _, path, _ in junk.seen if path.endswith("t-key/versions")) == 5


NOT_CONFLUENT = "HTTP {} (not a Confluent error answer)"
NO_ID = "it answered HTTP 200 OK without a schema id (a positive integer)"


@pytest.mark.parametrize(
    ("status", "body", "code", "said"),
    [
        (
            409,
            '{"error_code": 409, "message": "Schema being registered is incompatible"}',
            409,
            "HTTP 409 Conflict: Schema being registered is incompatible",
        ),
        (
            409,
            '{"error_code": 409, "message": "two\\nlines"}',
            409,
            "HTTP 409 Conflict: 'two\\nlines'",
        ),
        (
            409,
            json.dumps({"error_code": 409, "message": "x" * 5000}),
            409,
            "HTTP 409 Conflict: " + "x" * 3997 + "...",
        ),
        (
            422,
            '{"error_code": 42201, "message": "Invalid schema"}',
            42201,
            "HTTP 422 Unprocessable Entity: error 42201: Invalid schema",
        ),
        (422, "no json here", 422, NOT_CONFLUENT.format("422 Unprocessable Entity")),
        (401, '{"message": "unauthorized"}', 401, NOT_CONFLUENT.format("401 Unauthorized")),
        (401, '{"error_code": "x", "message": "m"}', 401, NOT_CONFLUENT.format("401 Unauthorized")),
        (201, '{"id": 1}', 201, NOT_CONFLUENT.format("201 Created")),
        (200, "oops", 200, "it answered HTTP 200 OK, not a JSON object"),
        (200, "[1]", 200, "it answered HTTP 200 OK, not a JSON object"),
        (200, '{"id": 0}', 200, NO_ID),
        (200, '{"id": "7"}', 200, NO_ID),
        (200, "{}", 200, NO_ID),
    ],
)
def test_a_refused_registration(junk: Junk, status: int, body: str, code: int, said: str) -> None:
    junk.answers[POST] = [(status, body)]
    with open_registry(junk.url, backoff_s=0) as registry:
        assert api_error(lambda: registry.register("t-value", ROW)) == (
            code,
            f"schema registry {junk.url}: registering subject 't-value': {said}",
        )
        assert sum(1 for method, _, _ in junk.seen if method == "POST") == 1  # 4xx: no retry


def test_a_lookup(junk: Junk) -> None:
    junk.answers[("GET", "/registry/schemas/ids/4")] = [(200, json.dumps({"schema": ROW2}))]
    junk.answers[("GET", "/registry/schemas/ids/5")] = [(200, '{"schema": 5}')]
    with open_registry(junk.url, backoff_s=0) as registry:
        assert registry.schema(4) == ROW2
        assert registry.schema(4) == ROW2
        assert sum(1 for _, path, _ in junk.seen if path.endswith("/4")) == 1  # cached
        assert api_error(lambda: registry.schema(5)) == (
            200,
            f"schema registry {junk.url}: looking up schema id 5: it answered HTTP 200 OK"
            ' without {"schema": "..."}',
        )
        assert api_error(lambda: registry.schema(6)) == (
            404,
            f"schema registry {junk.url}: looking up schema id 6: HTTP 404 Not Found"
            " (not a Confluent error answer)",
        )


def test_a_registry_that_does_not_answer_in_time(junk: Junk) -> None:
    with open_registry(junk.url, attempts=2, backoff_s=0, timeout_s=0.2) as registry:
        junk.delay = 0.5
        assert api_error(lambda: registry.register("t-value", ROW)) == (
            0,
            f"schema registry {junk.url}: registering subject 't-value': POST"
            " /subjects/t-value/versions: no answer in time (timed out) (after 2 attempts)",
        )


def test_a_registry_that_goes_away(junk: Junk) -> None:
    with open_registry(junk.url, attempts=2, backoff_s=0) as registry:
        junk.close()
        code, message = api_error(lambda: registry.register("t-value", ROW))
        assert code == 0
        assert message == (
            f"schema registry {junk.url}: registering subject 't-value': POST"
            " /subjects/t-value/versions: cannot connect ([Errno 111] Connection refused)"
            " (after 2 attempts)"
        )


def test_the_subject_is_escaped_as_ticdc_escapes_it(junk: Junk) -> None:
    """Go's url.QueryEscape: `/` as %2F, a space as `+`."""
    junk.answers[("POST", "/registry/subjects/a%2Fb+c%C3%A9/versions")] = [(200, '{"id": 2}')]
    with open_registry(junk.url, backoff_s=0) as registry:
        assert registry.register("a/b cé", ROW) == 2


def test_a_float_column_with_an_integer_default_is_a_schema(client: SchemaRegistryClient) -> None:
    """TiCDC writes a FLOAT column's `DEFAULT 1` as `"default": 1` beside the type's object
    form; Java's Avro (Confluent) takes a JSON integer for a float, and so does this registry
    (fastavro alone refuses it against the object form). A default of the wrong kind is
    still refused."""
    float_default = (
        '{"type":"record","name":"t","namespace":"default.test","fields":[{"default":1,'
        '"name":"a","type":{"type":"float","connect.parameters":{"tidb_type":"FLOAT"}}},'
        '{"default":3,"name":"c","type":[{"type":"float","connect.parameters":'
        '{"tidb_type":"FLOAT"}},"null"]}]}'
    )
    assert client.register_schema("t-value", Schema(float_default, "AVRO")) == 1
    text_default = float_default.replace('"default":1', '"default":"x"')
    assert refused(lambda: client.register_schema("t-value", Schema(text_default, "AVRO"))) == (
        422,
        42201,
        "Invalid schema: Default value <x> must match schema type: float",
    )


def test_a_changefeeds_schema_registry_must_be_allowed(tmp_path: Path, junk: Junk) -> None:
    """The service GETs a changefeed's `schema-registry` as it builds it: only a registry
    under a URL of TICDC_SIM_SCHEMA_REGISTRY_ALLOW, or its own, is reached."""
    junk.answers[("GET", "/elsewhere")] = [(200, "{}")]
    settings = Settings(data_dir=tmp_path, mysql_port=0, schema_registry_allow=[junk.url + "/"])
    other = junk.url.removesuffix("/registry")
    with TestClient(create_app(settings)) as client:

        def create(name: str, url: str, in_config: bool = False) -> tuple[int, dict[str, str]]:
            uri = f"jsonl://{name}?protocol=avro"
            body: dict[str, object] = {"changefeed_id": name, "sink_uri": uri}
            if in_config:
                body["replica_config"] = {"sink": {"schema_registry": url}}
            else:
                body["sink_uri"] = f"{uri}&schema-registry={url}"
            answer = client.post("/api/v2/changefeeds", json=body)
            return answer.status_code, answer.json()

        def forbidden(url: str) -> tuple[int, dict[str, str]]:
            return 403, {
                "error_msg": f"schema registry {url} is not allowed here (the operator lists"
                " registries in TICDC_SIM_SCHEMA_REGISTRY_ALLOW; this service's own is"
                " http://127.0.0.1:8300/sim/v1/clusters/{cluster}/schema-registry)",
                "error_code": "SIM:Forbidden",
            }

        assert create("a", other) == forbidden(other)
        assert create("b", other + "/elsewhere", in_config=True) == forbidden(other + "/elsewhere")
        assert create("c", junk.url + "x") == forbidden(junk.url + "x")
        secret = other.replace("http://", "http://me:secret@") + "/elsewhere"
        assert create("d", secret) == forbidden(secret.replace(":secret@", ":***@"))
        assert junk.seen == []  # none of them was reached
        assert create("e", junk.url)[0] == 200
        assert create("f", junk.url + "/", in_config=True)[0] == 200
        assert [(method, path) for method, path, _ in junk.seen] == [("GET", "/registry")] * 2
        # an update is checked as a creation is
        assert client.post("/api/v2/changefeeds/e/pause").status_code == 200
        uri = f"jsonl://e?protocol=avro&schema-registry={other}"
        moved = client.put("/api/v2/changefeeds/e", json={"sink_uri": uri})
        assert (moved.status_code, moved.json()) == forbidden(other)
        assert len(junk.seen) == 2


def test_a_changefeed_may_name_its_own_services_registry(server: Server) -> None:
    uri = f"jsonl://own?protocol=avro&schema-registry={base(server, 'other')}"
    made = httpx.post(
        f"{server.http}/api/v2/changefeeds?namespace=other",
        json={"changefeed_id": "own", "sink_uri": uri, "namespace": "other"},
    )
    assert made.status_code == 200, made.text
    httpx.delete(f"{server.http}/api/v2/changefeeds/own?namespace=other").raise_for_status()


def test_a_refused_registration_fails_the_changefeed_with_ticdcs_code(tmp_path: Path) -> None:
    """tiflow's RunningError: the capture's address, the error's own code."""
    settings = Settings(data_dir=tmp_path, mysql_port=0, port=18399, default_cluster=True)
    with TestClient(create_app(settings)) as client:
        made = client.post(
            "/api/v2/changefeeds",
            json={"changefeed_id": "av", "sink_uri": "jsonl://av?protocol=avro"},
        )
        assert made.status_code == 200, made.text
        script = (
            "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);"
            " ALTER TABLE t ADD COLUMN w VARCHAR(8) NOT NULL; INSERT INTO t VALUES (2, 'x');"
        )
        client.post("/sim/v1/clusters/default/sql", content=script)
        status = client.get("/api/v2/changefeeds/av/status").json()
        assert status["state"] == "failed"
        error = status["last_error"]
        assert (error["addr"], error["code"]) == ("127.0.0.1:18399", "CDC:ErrAvroSchemaAPIError")
        failed = dt.datetime.fromisoformat(error["time"])
        assert failed.tzinfo == dt.UTC and abs(time.time() - failed.timestamp()) < 60
        assert error["message"].startswith(
            "schema manager API error, registering subject 'ticdc-value': error 409: Schema"
            " being registered is incompatible with an earlier schema for subject"
            " \"ticdc-value\", details: [{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE'"
        )


def test_a_method_no_path_takes_is_confluents_405(tmp_path: Path) -> None:
    """PATCH (a method the route is not declared for) is answered as PUT is: one shape,
    the methods of that path."""
    with TestClient(create_app(Settings(data_dir=tmp_path, mysql_port=0))) as client:
        at = "/sim/v1/clusters/default/schema-registry/subjects/x/versions"
        for method in ("PATCH", "PUT", "OPTIONS"):
            answer = client.request(method, at)
            assert (answer.status_code, answer.headers["allow"], answer.json()) == (
                405,
                "GET, POST",
                {
                    "error_code": 405,
                    "message": f"{method} is not allowed on /subjects/x/versions; it takes"
                    " GET, POST",
                },
            )
            assert answer.headers["content-type"] == MEDIA_TYPE
        nowhere = client.patch("/sim/v1/clusters/default/schema-registry/nowhere")
        assert (nowhere.status_code, nowhere.json()) == (
            404,
            {
                "error_code": 404,
                "message": "no such path of the schema registry: PATCH /nowhere",
            },
        )


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("%00%ff", "'\\x00\\\\xff' is not valid: a NUL at character 0"),
        ("a%ffb", "'a\\\\xffb' is not valid: byte 0xFF at character 1 is not UTF-8"),
        (
            "a%ED%A0%80",
            "'a\\\\xed\\\\xa0\\\\x80' is not valid: byte 0xED at character 1 is not UTF-8",
        ),
        ("x%00", "'x\\x00' is not valid: a NUL at character 1"),
    ],
)
def test_a_subject_that_is_not_text_is_refused(tmp_path: Path, path: str, said: str) -> None:
    """Not replaced (`%ff` and `%EF%BF%BD` would be one subject): 42208, what and where."""
    with TestClient(create_app(Settings(data_dir=tmp_path, mysql_port=0))) as client:
        base_path = "/sim/v1/clusters/default/schema-registry"
        answer = client.post(f"{base_path}/subjects/{path}/versions", json={"schema": '"int"'})
        assert (answer.status_code, answer.json()) == (
            422,
            {"error_code": 42208, "message": f"The specified subject {said}"},
        )
        assert client.get(f"{base_path}/subjects").json() == []


def test_registry_work_does_not_stall_other_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A registration's parsing runs on a worker of the registry's own: while one is held
    there, the service (and the registry) answer other requests."""
    entered, release = threading.Event(), threading.Event()
    parse = compatibility.parse

    def held(text: str) -> object:
        entered.set()
        assert release.wait(10), "the other requests were not answered meanwhile"
        return parse(text)

    monkeypatch.setattr(compatibility, "parse", held)
    registry = "/sim/v1/clusters/default/schema-registry"
    answers: list[httpx.Response] = []
    with TestClient(create_app(Settings(data_dir=tmp_path, mysql_port=0))) as client:
        post = threading.Thread(
            target=lambda: answers.append(
                client.post(f"{registry}/subjects/t-value/versions", json={"schema": ROW})
            )
        )
        post.start()
        try:
            assert entered.wait(10)
            assert [c["id"] for c in client.get("/sim/v1/clusters").json()] == ["default"]
            assert client.get(f"{registry}/subjects").json() == []
        finally:
            release.set()
            post.join()
    assert answers[0].json() == {"id": 1}


def test_what_a_registry_holds_is_bounded(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        mysql_port=0,
        max_schema_bytes=len(ROW2),
        max_subjects=2,
        max_subject_versions=2,
        max_schemas=3,
    )
    registry = "/sim/v1/clusters/default/schema-registry"
    with TestClient(create_app(settings)) as client:

        def register(subject: str, schema: str) -> tuple[int, dict[str, object]]:
            answer = client.post(f"{registry}/subjects/{subject}/versions", json={"schema": schema})
            return answer.status_code, answer.json()

        big = ROW2.replace('"v"', '"vv"')
        assert register("a", big) == (
            422,
            {
                "error_code": 42209,
                "message": f"Schema too large: {len(big)} bytes, over the {len(ROW2)} a schema"
                " may have here (TICDC_SIM_MAX_SCHEMA_BYTES)",
            },
        )
        assert register("a", ROW) == (200, {"id": 1})
        assert register("a", ROW2) == (200, {"id": 2})
        assert register(
            "a", ROW_W.replace('"w","type":"string"', '"w","type":"int","default":0')
        ) == (
            422,
            {
                "error_code": 42205,
                "message": "subject 'a' has 2 versions, the most one may"
                " (TICDC_SIM_MAX_SUBJECT_VERSIONS); delete the subject first",
            },
        )
        assert register("a", ROW) == (200, {"id": 1})  # one it holds: no new version
        assert register("b", ROW) == (200, {"id": 1})
        assert register("c", ROW) == (
            422,
            {
                "error_code": 42205,
                "message": "this registry holds 2 subjects, the most it may"
                " (TICDC_SIM_MAX_SUBJECTS); delete one first",
            },
        )
        client.delete(f"{registry}/subjects/a")
        assert register("c", '"int"') == (200, {"id": 3})
        assert register("c", '"long"') == (
            422,
            {
                "error_code": 42205,
                "message": "this registry has given 3 schema ids, the most it may"
                " (TICDC_SIM_MAX_SCHEMAS) (an id is never given back)",
            },
        )
        # an id it has given is no new id: checked as ever (here refused by BACKWARD)
        status, body = register("c", ROW)
        assert (status, body["error_code"]) == (409, 409)
