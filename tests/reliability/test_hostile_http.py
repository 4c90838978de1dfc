"""Hostile requests to the HTTP service, every route of TiCDC's open API and of /sim/v1:
invalid, deep, oversized, non-UTF-8 and mistyped bodies, bad path and query parameters,
unknown clusters and changefeeds, huge and negative numbers. One row, one request and its
exact answer: the status, TiCDC's `{"error_msg", "error_code"}` body with the code and the
message (or, where TiCDC takes the input, the right result); and never a traceback or an
error logged. Then what the service does with a request that hits a bug: a JSON 500 and one
line in the log."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ticdc_sim import cluster as runtime
from ticdc_sim import feedlog
from ticdc_sim.generator.sql.engine import ResultSet
from ticdc_sim.service.app import create_app
from ticdc_sim.service.routes import clusters
from ticdc_sim.service.settings import Settings

LIMIT = 64 << 10  # the body limit of the service under test
CF = "/api/v2/changefeeds"
SIM = "/sim/v1/clusters"
FEED = f"{SIM}/default/changefeeds"
SQL = f"{SIM}/default/sql"
MEMORY = "memory://?protocol=canal-json"
JSON = {"content-type": "application/json"}
TEXT = {"content-type": "text/plain"}
INVALID = "CDC:ErrAPIInvalidParam"
NOT_EXISTS = "CDC:ErrChangeFeedNotExists"
NO_CLUSTER = "SIM:ErrClusterNotExists"
NOT_JSON_1_2 = "the body is not valid JSON at line 1 column 2: Expecting property name enclosed in double quotes"
CLUSTER_NOPE = "cluster 'nope' does not exist (POST /sim/v1/clusters creates one)"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path]]:
    """The service with a 64 KiB body limit and 1000 statements a request; a table, a
    changefeed nothing reaches (`quiet`) and a paused one (`stopped`)."""
    data = tmp_path_factory.mktemp("hostile") / "data"
    data.mkdir()
    (data / "afile").write_text("not a directory")
    settings = Settings(data_dir=data, mysql_port=0, max_body_bytes=LIMIT, max_statements=1000)
    with TestClient(create_app(settings)) as client:
        made = client.post(SQL, content="CREATE TABLE t (id INT PRIMARY KEY)", headers=TEXT)
        assert made.json()["ok"], made.text
        for feed in ("quiet", "stopped"):
            body = {"changefeed_id": feed, "sink_uri": MEMORY}
            assert client.post(CF, json=body).status_code == 200
        assert client.post(f"{CF}/stopped/pause").json() == {}
        yield client, data.resolve()


def refused(
    name: str,
    method: str,
    path: str,
    status: int,
    code: str,
    message: str | re.Pattern[str],
    **request: Any,
) -> Any:
    """A request the service refuses: `message` exactly (`{data}`: the data directory), or
    a pattern the whole message matches."""
    return pytest.param(method, path, request, status, {"code": code, "message": message}, id=name)


def accepted(name: str, method: str, path: str, body: Any, **request: Any) -> Any:
    """A request TiCDC takes, though it looks hostile: 200 and exactly `body`."""
    return pytest.param(method, path, request, 200, {"body": body}, id=name)


# every route that reads a JSON body
JSON_ROUTES = [
    ("POST", CF),
    ("PUT", f"{CF}/stopped"),
    ("POST", SIM),
    ("POST", f"{FEED}/quiet/faults"),
]

CASES = [
    # -- bodies that are not JSON, or not the JSON asked for ------------------------------------
    *(
        refused(
            f"json-cut-{method}-{path}",
            method,
            path,
            400,
            INVALID,
            NOT_JSON_1_2,
            content=b"{",
            headers=JSON,
        )
        for method, path in JSON_ROUTES
    ),
    *(
        refused(
            f"json-not-an-object-{method}-{path}",
            method,
            path,
            422,
            INVALID,
            "body: Input should be a valid dictionary or object to extract fields from",
            json=[1],
        )
        for method, path in JSON_ROUTES
    ),
    refused(
        "json-trailing-garbage",
        "POST",
        CF,
        400,
        INVALID,
        "the body is not valid JSON at line 1 column 27: Extra data",
        content=b'{"sink_uri": "memory://"} x',
        headers=JSON,
    ),
    refused(
        "json-error-on-line-3",
        "POST",
        CF,
        400,
        INVALID,
        "the body is not valid JSON at line 3 column 3: Expecting property name enclosed in double quotes",
        content=b'{"sink_uri":\n  "memory://",\n  oops}',
        headers=JSON,
    ),
    refused(
        "json-50000-deep",
        "POST",
        CF,
        400,
        INVALID,
        "the body is not valid JSON: nested too deeply",
        content=b"[" * 50_000,
        headers=JSON,
    ),
    refused(
        "json-3000-deep-object",
        "POST",
        CF,
        400,
        INVALID,
        "the body is not valid JSON: nested too deeply",
        content=b'{"replica_config":' + b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"}",
        headers=JSON,
    ),
    refused(
        "replica-config-200-deep",
        "POST",
        CF,
        422,
        INVALID,
        "body.replica_config: Value error, nested deeper than 32 levels",
        content=b'{"sink_uri": "memory://?protocol=canal-json", "replica_config":'
        + b'{"a":' * 200
        + b"1"
        + b"}" * 201,
        headers=JSON,
    ),
    refused(
        "replica-config-300-deep-list",  # was a 500, the changefeed made but not answered
        "POST",
        CF,
        422,
        INVALID,
        "body.replica_config: Value error, nested deeper than 32 levels",
        content=b'{"sink_uri": "memory://?protocol=canal-json", "replica_config": {"mounter":'
        + b"[" * 300
        + b"1"
        + b"]" * 300
        + b"}}",
        headers=JSON,
    ),
    refused(
        "json-empty", "POST", CF, 422, INVALID, "body: Field required", content=b"", headers=JSON
    ),
    refused(
        "json-array",
        "POST",
        CF,
        422,
        INVALID,
        "body: Input should be a valid dictionary or object to extract fields from",
        content=b"[]",
        headers=JSON,
    ),
    refused(
        "json-null",
        "POST",
        CF,
        422,
        INVALID,
        "body: Input should be a valid dictionary or object to extract fields from",
        content=b"null",
        headers=JSON,
    ),
    refused(
        "json-string",
        "POST",
        CF,
        422,
        INVALID,
        "body: Input should be a valid dictionary or object to extract fields from",
        content=b'"x"',
        headers=JSON,
    ),
    refused(
        "json-not-utf8",
        "POST",
        CF,
        400,
        INVALID,
        "the body is not UTF-8 (byte 14)",
        content=b'{"sink_uri": "\xff"}',
        headers=JSON,
    ),
    refused(
        "json-5001-digit-number",
        "POST",
        CF,
        400,
        INVALID,
        "the body is not valid JSON: Exceeds the limit (4300 digits) for integer string"
        " conversion: value has 5001 digits; use sys.set_int_max_str_digits() to increase the limit",
        content=b'{"start_ts": 1' + b"0" * 5000 + b"}",
        headers=JSON,
    ),
    refused(
        "multipart-form",
        "POST",
        CF,
        400,
        INVALID,
        "the body is not valid JSON at line 1 column 1: Expecting value",
        content=b'--b\r\nContent-Disposition: form-data; name="x"\r\n\r\n1\r\n--b--\r\n',
        headers={"content-type": "multipart/form-data; boundary=b"},
    ),
    refused(
        "form-encoded-not-json",
        "POST",
        CF,
        400,
        INVALID,
        "the body is not valid JSON at line 1 column 1: Expecting value",
        content=b"sink_uri=memory%3A%2F%2F",
        headers={"content-type": "application/x-www-form-urlencoded"},
    ),
    refused(
        "body-over-limit",
        "POST",
        CF,
        413,
        "SIM:TooLarge",
        f"the body is {LIMIT + 1} bytes; the limit is {LIMIT} (TICDC_SIM_MAX_BODY_BYTES)",
        content=b" " * (LIMIT + 1),
        headers=JSON,
    ),
    refused(
        "chunked-body-over-limit",
        "POST",
        CF,
        413,
        "SIM:TooLarge",
        f"the body is over {LIMIT} bytes; the limit is {LIMIT} (TICDC_SIM_MAX_BODY_BYTES)",
        content=iter([b" " * 40_000, b" " * 40_000]),
        headers=JSON,
    ),
    refused(
        "content-length-not-a-number",
        "POST",
        CF,
        400,
        "SIM:InvalidRequest",
        "Content-Length 'abc' is not a number",
        content=b"{}",
        headers={"content-type": "application/json", "content-length": "abc"},
    ),
    refused(
        "unknown-field",
        "POST",
        CF,
        422,
        INVALID,
        "body.colour: Extra inputs are not permitted",
        json={"sink_uri": MEMORY, "colour": 1},
    ),
    # -- numbers ------------------------------------------------------------------------------
    refused(
        "start-ts-negative",
        "POST",
        CF,
        422,
        INVALID,
        "body.start_ts: Input should be greater than or equal to 0",
        json={"sink_uri": MEMORY, "start_ts": -1},
    ),
    refused(
        "start-ts-past-uint64",
        "POST",
        CF,
        422,
        INVALID,
        "body.start_ts: Input should be less than or equal to 18446744073709551615",
        json={"sink_uri": MEMORY, "start_ts": 1 << 64},
    ),
    refused(
        "start-ts-float",
        "POST",
        CF,
        422,
        INVALID,
        "body.start_ts: Input should be a valid integer",
        json={"sink_uri": MEMORY, "start_ts": 1e300},
    ),
    refused(
        "start-ts-string",
        "POST",
        CF,
        422,
        INVALID,
        "body.start_ts: Input should be a valid integer",
        json={"sink_uri": MEMORY, "start_ts": "123"},
    ),
    refused(
        "start-ts-bool",
        "POST",
        CF,
        422,
        INVALID,
        "body.start_ts: Input should be a valid integer",
        json={"sink_uri": MEMORY, "start_ts": True},
    ),
    refused(
        "start-ts-in-the-future",
        "POST",
        CF,
        400,
        INVALID,
        re.compile(r"invalid start-ts 9223372036854775808, larger than current tso \d{18}"),
        json={"sink_uri": MEMORY, "start_ts": 1 << 63},
    ),
    refused(
        "target-ts-before-start-ts",
        "POST",
        CF,
        400,
        "CDC:ErrTargetTsBeforeStartTs",
        "fail to create changefeed because target-ts 5 is earlier than start-ts 10",
        json={"sink_uri": MEMORY, "start_ts": 10, "target_ts": 5},
    ),
    refused(
        "target-ts-negative-on-update",
        "PUT",
        f"{CF}/stopped",
        422,
        INVALID,
        "body.target_ts: Input should be greater than or equal to 0",
        json={"target_ts": -5},
    ),
    refused(
        "target-ts-before-start-ts-on-update",
        "PUT",
        f"{CF}/stopped",
        400,
        "CDC:ErrChangefeedUpdateRefused",
        re.compile(r"can not update target_ts:1 less than start_ts:\d{18}"),
        json={"target_ts": 1},
    ),
    # -- ids, namespaces, sink URIs, replica configs ------------------------------------------------
    refused(
        "changefeed-id-with-slash",
        "POST",
        CF,
        400,
        INVALID,
        "invalid changefeed_id: bad id/..",
        json={"sink_uri": MEMORY, "changefeed_id": "bad id/.."},
    ),
    refused(
        "changefeed-id-129-long",
        "POST",
        CF,
        400,
        INVALID,
        "invalid changefeed_id: " + "x" * 129,
        json={"sink_uri": MEMORY, "changefeed_id": "x" * 129},
    ),
    refused(
        "changefeed-id-not-ascii",
        "POST",
        CF,
        400,
        INVALID,
        "invalid changefeed_id: čč",
        json={"sink_uri": MEMORY, "changefeed_id": "čč"},
    ),
    refused(
        "changefeed-id-taken",
        "POST",
        CF,
        409,
        "CDC:ErrChangeFeedAlreadyExists",
        "changefeed already exists, quiet",
        json={"sink_uri": MEMORY, "changefeed_id": "quiet"},
    ),
    refused(
        "namespace-invalid",
        "POST",
        CF,
        400,
        INVALID,
        "invalid namespace: a_b",
        json={"sink_uri": MEMORY, "namespace": "a_b"},
    ),
    refused(
        "namespace-unknown",
        "POST",
        CF,
        404,
        NO_CLUSTER,
        CLUSTER_NOPE,
        json={"sink_uri": MEMORY, "namespace": "nope"},
    ),
    refused(
        "sink-uri-empty",
        "POST",
        CF,
        422,
        INVALID,
        "body.sink_uri: String should have at least 1 character",
        json={"sink_uri": ""},
    ),
    refused(
        "sink-uri-no-scheme",
        "POST",
        CF,
        400,
        "CDC:ErrSinkURIInvalid",
        "sink URI '::::': no scheme, e.g. jsonl:///tmp/out (simulated: kafka://, kafka+ssl://,"
        " jsonl://, parquet://, memory://, blackhole://, file://, s3://)",
        json={"sink_uri": "::::"},
    ),
    refused(
        "sink-uri-mysql",
        "POST",
        CF,
        400,
        "CDC:ErrSinkURIInvalid",
        "sink URI 'mysql://root@127.0.0.1:3306/': the mysql:// sink is not simulated yet;"
        " use one of kafka://, kafka+ssl://, jsonl://, parquet://, memory://, blackhole://, file://, s3://",
        json={"sink_uri": "mysql://root@127.0.0.1:3306/"},
    ),
    refused(
        "sink-uri-escapes-the-data-dir",
        "POST",
        CF,
        403,
        "SIM:Forbidden",
        "jsonl:// directory '../x' is outside the data directory {data}",
        json={"sink_uri": "jsonl://../x?protocol=canal-json"},
    ),
    refused(
        "sink-uri-absolute-elsewhere",
        "POST",
        CF,
        403,
        "SIM:Forbidden",
        "parquet:// directory '/etc' is outside the data directory {data}",
        json={"sink_uri": "parquet:///etc?protocol=canal-json"},
    ),
    refused(
        "sink-uri-kafka-not-allowed",
        "POST",
        CF,
        403,
        "SIM:Forbidden",
        "kafka broker 127.0.0.1:9092 is not allowed here (the operator lists brokers in"
        " TICDC_SIM_KAFKA_ALLOW)",
        json={"sink_uri": "kafka://127.0.0.1:9092/t?protocol=canal-json"},
    ),
    refused(
        "sink-dir-through-a-file",
        "POST",
        CF,
        400,
        "CDC:ErrSinkURIInvalid",
        "jsonl sink: cannot write {data}/afile/x: Not a directory",
        json={"sink_uri": "jsonl://afile/x?protocol=canal-json"},
    ),
    refused(
        "sink-protocol-unknown",
        "POST",
        CF,
        400,
        "CDC:ErrInvalidReplicaConfig",
        "sink URI parameter protocol: unknown protocol 'nope'"
        " (simulated: avro, canal, canal-json, craft, csv, debezium, maxwell, open-protocol,"
        " simple)",
        json={"sink_uri": "memory://?protocol=nope"},
    ),
    refused(
        "partition-num-over-the-service-limit",
        "POST",
        CF,
        413,
        "SIM:TooLarge",
        "partition-num 5000 is over the 1024 partitions a changefeed may have here"
        " (TICDC_SIM_MAX_PARTITIONS)",
        json={"sink_uri": "jsonl://many?protocol=canal-json&partition-num=5000"},
    ),
    refused(
        "partition-num-100-million",
        "POST",
        CF,
        400,
        "CDC:ErrInvalidReplicaConfig",
        "sink URI parameter partition-num: must be at most 10000 (the simulator's limit),"
        " got 100000000",
        json={"sink_uri": "jsonl://many?protocol=canal-json&partition-num=100000000"},
    ),
    refused(
        "partition-num-0",
        "POST",
        CF,
        400,
        "CDC:ErrInvalidReplicaConfig",
        "sink URI parameter partition-num: must be greater than 0, got 0",
        json={"sink_uri": "memory://?protocol=canal-json&partition-num=0"},
    ),
    refused(
        "max-message-bytes-negative",
        "POST",
        CF,
        400,
        "CDC:ErrInvalidReplicaConfig",
        "sink URI parameter max-message-bytes: must be greater than 0, got -1",
        json={"sink_uri": "memory://?protocol=canal-json&max-message-bytes=-1"},
    ),
    refused(
        "replica-config-a-list",
        "POST",
        CF,
        422,
        INVALID,
        "body.replica_config: Input should be a valid dictionary",
        json={"sink_uri": MEMORY, "replica_config": []},
    ),
    refused(
        "replica-config-unknown-key",
        "POST",
        CF,
        400,
        "CDC:ErrInvalidReplicaConfig",
        "replica_config: colour: unknown configuration key",
        json={"sink_uri": MEMORY, "replica_config": {"colour": 1}},
    ),
    refused(
        "replica-config-dispatchers-a-string",
        "POST",
        CF,
        400,
        "CDC:ErrInvalidReplicaConfig",
        "replica_config: sink.dispatchers: expected a list of dispatcher rules, got 'x'",
        json={"sink_uri": MEMORY, "replica_config": {"sink": {"dispatchers": "x"}}},
    ),
    *(  # the default changefeed writes {data}/default
        refused(
            f"sink-dir-{where}-another-changefeed-s",
            "POST",
            CF,
            409,
            "SIM:ErrSinkInUse",
            "{data}/default is written by changefeed default/default: a sink directory has one"
            " changefeed",
            json={"sink_uri": f"{uri}?protocol=canal-json"},
        )
        for where, uri in (
            ("on", "parquet://default"),
            ("inside", "jsonl://default/ticdc"),
            ("around", "jsonl://."),
        )
    ),
    # -- paths and query parameters of the open API --------------------------------------------
    refused(
        "get-empty-namespace-is-default",
        "GET",
        f"{CF}/nope",
        404,
        NOT_EXISTS,
        "changefeed not exists, default/nope",
        params={"namespace": ""},
    ),
    refused(
        "get-unknown", "GET", f"{CF}/nope", 404, NOT_EXISTS, "changefeed not exists, default/nope"
    ),
    refused("get-bad-id", "GET", f"{CF}/a_b", 400, INVALID, "invalid changefeed_id: a_b"),
    refused(
        "get-129-long-id",
        "GET",
        f"{CF}/{'x' * 129}",
        400,
        INVALID,
        "invalid changefeed_id: " + "x" * 129,
    ),
    refused(
        "get-bad-namespace",
        "GET",
        f"{CF}/quiet",
        400,
        INVALID,
        "invalid namespace: a b",
        params={"namespace": "a b"},
    ),
    refused(
        "get-unknown-namespace",
        "GET",
        f"{CF}/quiet",
        404,
        NOT_EXISTS,
        "changefeed not exists, nope/quiet",
        params={"namespace": "nope"},
    ),
    refused(
        "status-unknown",
        "GET",
        f"{CF}/nope/status",
        404,
        NOT_EXISTS,
        "changefeed not exists, default/nope",
    ),
    refused(
        "list-bad-namespace",
        "GET",
        CF,
        400,
        INVALID,
        "invalid namespace: %ff",
        params={"namespace": "%ff"},
    ),
    accepted(
        "list-unknown-namespace", "GET", CF, {"total": 0, "items": []}, params={"namespace": "nope"}
    ),
    accepted("list-unknown-state", "GET", CF, {"total": 0, "items": []}, params={"state": "bogus"}),
    refused(
        "update-running",
        "PUT",
        f"{CF}/quiet",
        409,
        "CDC:ErrChangefeedUpdateRefused",
        "changefeed update error: can only update changefeed config when it is stopped",
        json={"sink_uri": MEMORY},
    ),
    refused(
        "update-unknown",
        "PUT",
        f"{CF}/nope",
        404,
        NOT_EXISTS,
        "changefeed not exists, default/nope",
        json={},
    ),
    refused(
        "update-bad-id", "PUT", f"{CF}/a.b", 400, INVALID, "invalid changefeed_id: a.b", json={}
    ),
    accepted("remove-unknown", "DELETE", f"{CF}/nope", {}),
    refused("remove-bad-id", "DELETE", f"{CF}/-x", 400, INVALID, "invalid changefeed_id: -x"),
    refused(
        "pause-unknown",
        "POST",
        f"{CF}/nope/pause",
        404,
        NOT_EXISTS,
        "changefeed not exists, default/nope",
    ),
    refused(
        "resume-unknown",
        "POST",
        f"{CF}/nope/resume",
        404,
        NOT_EXISTS,
        "changefeed not exists, default/nope",
    ),
    refused(
        "resume-bad-id", "POST", f"{CF}/x--y/resume", 400, INVALID, "invalid changefeed_id: x--y"
    ),
    refused(
        "slash-in-the-id",
        "GET",
        f"{CF}/a%2Fb",
        404,
        "SIM:HTTP404",
        "no such path: GET /api/v2/changefeeds/a/b (the API is at /docs)",
    ),
    refused(
        "method-not-allowed",
        "PATCH",
        CF,
        405,
        "SIM:HTTP405",
        "PATCH is not allowed on /api/v2/changefeeds; it takes GET, POST",
    ),
    refused(
        "method-options",
        "OPTIONS",
        f"{CF}/quiet",
        405,
        "SIM:HTTP405",
        "OPTIONS is not allowed on /api/v2/changefeeds/quiet; it takes GET, PUT, DELETE",
    ),
    refused(
        "unknown-path",
        "GET",
        "/api/v2/nope",
        404,
        "SIM:HTTP404",
        "no such path: GET /api/v2/nope (the API is at /docs)",
    ),
    refused(
        "unknown-api-version",
        "GET",
        "/api/v1/changefeeds",
        404,
        "SIM:HTTP404",
        "no such path: GET /api/v1/changefeeds (the API is at /docs)",
    ),
    refused(
        "static-traversal",
        "GET",
        "/static/%2e%2e/%2e%2e/etc/passwd",
        404,
        "SIM:HTTP404",
        "no such path: GET /static/../../etc/passwd (the API is at /docs)",
    ),
    refused(
        "docs-post",
        "POST",
        "/docs",
        405,
        "SIM:HTTP405",
        "POST is not allowed on /docs; it takes GET",
    ),
    refused(
        "metrics-post",
        "POST",
        "/metrics",
        405,
        "SIM:HTTP405",
        "POST is not allowed on /metrics; it takes GET",
    ),
    # -- /sim/v1: clusters and SQL ----------------------------------------------------------------
    refused(
        "cluster-id-with-dot",
        "POST",
        SIM,
        422,
        INVALID,
        "body.id: String should match pattern '^[a-zA-Z0-9]+(-[a-zA-Z0-9]+)*$'",
        json={"id": "a.b"},
    ),
    refused(
        "cluster-id-129-long",
        "POST",
        SIM,
        422,
        INVALID,
        "body.id: String should have at most 128 characters",
        json={"id": "x" * 129},
    ),
    refused(
        "cluster-seed-string",
        "POST",
        SIM,
        422,
        INVALID,
        "body.seed: Input should be a valid integer",
        json={"seed": "1"},
    ),
    refused(
        "cluster-seed-float",
        "POST",
        SIM,
        422,
        INVALID,
        "body.seed: Input should be a valid integer",
        json={"seed": 1.5},
    ),
    refused(
        "cluster-taken",
        "POST",
        SIM,
        409,
        "SIM:ErrClusterAlreadyExists",
        "cluster 'default' already exists",
        json={"id": "default"},
    ),
    refused("cluster-unknown", "GET", f"{SIM}/nope", 404, NO_CLUSTER, CLUSTER_NOPE),
    refused("cluster-remove-unknown", "DELETE", f"{SIM}/nope", 404, NO_CLUSTER, CLUSTER_NOPE),
    refused(
        "sql-unknown-cluster",
        "POST",
        f"{SIM}/nope/sql",
        404,
        NO_CLUSTER,
        CLUSTER_NOPE,
        content=b"SELECT 1",
        headers=TEXT,
    ),
    refused(
        "sql-not-utf8",
        "POST",
        SQL,
        400,
        "SIM:InvalidRequest",
        "the body is not UTF-8 (byte 8); to send bytes as a script file holds them (a"
        " mysqldump's blobs), say charset=binary",
        content=b"SELECT '\xff'",
        headers=TEXT,
    ),
    refused(
        "sql-json-not-a-string",
        "POST",
        SQL,
        400,
        "SIM:InvalidRequest",
        "the JSON body: sql: Input should be a valid string",
        json={"sql": 1},
    ),
    refused(
        "sql-json-cut",
        "POST",
        SQL,
        400,
        "SIM:InvalidRequest",
        "the JSON body: Invalid JSON: EOF while parsing a value at line 1 column 7",
        content=b'{"sql":',
        headers=JSON,
    ),
    refused(
        "sql-json-50000-deep",
        "POST",
        SQL,
        400,
        "SIM:InvalidRequest",
        "the JSON body: Invalid JSON: recursion limit exceeded at line 1 column 202",
        content=b"[" * 50_000,
        headers=JSON,
    ),
    refused(
        "sql-as-an-image",
        "POST",
        SQL,
        400,
        "SIM:InvalidRequest",
        'send the SQL as text/plain or as JSON {"sql": ...}, not image/png',
        content=b"x",
        headers={"content-type": "image/png"},
    ),
    refused(
        "sql-unterminated-quote",
        "POST",
        SQL,
        400,
        "SIM:SQLSyntax",
        "request.sql:1:1: ERROR 1064 (42000): unterminated ' quote at end of script (no statement ran)",
        content=b"SELECT 'abc",
        headers=TEXT,
    ),
    refused(
        "sql-too-many-statements",
        "POST",
        SQL,
        413,
        "SIM:TooLarge",
        "1001 statements in one request; the limit is 1000 (TICDC_SIM_MAX_STATEMENTS)",
        content=b"SELECT 1;" * 1001,
        headers=TEXT,
    ),
    refused(
        "sql-chunked-over-limit",
        "POST",
        SQL,
        413,
        "SIM:TooLarge",
        f"the body is over {LIMIT} bytes; the limit is {LIMIT} (TICDC_SIM_MAX_BODY_BYTES)",
        content=iter([b"SELECT 1;" * 4000] * 2),
        headers=TEXT,
    ),
    accepted(
        "sql-in-latin-1",
        "POST",
        SQL,
        {
            "ok": True,
            "statements": [
                {
                    "statement": "SELECT 'é' AS e",
                    "line": 1,
                    "column": 1,
                    "affected_rows": 0,
                    "last_insert_id": 0,
                    "commit_ts": None,
                    "columns": ["e"],
                    "rows": [["é"]],
                    "error": None,
                }
            ],
            "transactions": [],
            "messages": {"default": 0, "quiet": 0, "stopped": 0},
            "warnings": [],
        },
        content="SELECT 'é' AS e".encode("latin-1"),
        headers={"content-type": "text/plain; charset=latin-1"},
    ),
    refused(
        "sql-not-ascii",
        "POST",
        SQL,
        400,
        "SIM:InvalidRequest",
        "the body is not ASCII (byte 8); to send bytes as a script file holds them (a"
        " mysqldump's blobs), say charset=binary",
        content="SELECT 'é'".encode(),
        headers={"content-type": "text/plain; charset=ascii"},
    ),
    refused(
        "sql-unknown-charset",
        "POST",
        SQL,
        400,
        "SIM:InvalidRequest",
        "charset 'klingon' of the body is not one Python knows",
        content=b"SELECT 1",
        headers={"content-type": "text/plain; charset=klingon"},
    ),
    refused(
        "sql-charset-not-text",
        "POST",
        SQL,
        400,
        "SIM:InvalidRequest",
        "charset 'rot13' of the body is not one Python knows",
        content=b"FRYRPG 1",
        headers={"content-type": "text/plain; charset=rot13"},
    ),
    accepted(
        "sql-empty",
        "POST",
        SQL,
        {
            "ok": True,
            "statements": [],
            "transactions": [],
            "messages": {"default": 0, "quiet": 0, "stopped": 0},
            "warnings": [],
        },
        content=b"",
        headers=TEXT,
    ),
    # -- /sim/v1: what changefeeds sent, faults, checkpoints ---------------------------------------
    refused(
        "messages-limit-0",
        "GET",
        f"{FEED}/quiet/messages",
        422,
        INVALID,
        "query.limit: Input should be greater than or equal to 1",
        params={"limit": 0},
    ),
    refused(
        "messages-limit-10001",
        "GET",
        f"{FEED}/quiet/messages",
        422,
        INVALID,
        "query.limit: Input should be less than or equal to 10000",
        params={"limit": 10_001},
    ),
    refused(
        "messages-limit-a-word",
        "GET",
        f"{FEED}/quiet/messages",
        422,
        INVALID,
        "query.limit: Input should be a valid integer, unable to parse string as an integer",
        params={"limit": "abc"},
    ),
    refused(
        "messages-offset-negative",
        "GET",
        f"{FEED}/quiet/messages",
        422,
        INVALID,
        "query.from_offset: Input should be greater than or equal to 0",
        params={"from_offset": -1},
    ),
    refused(
        "messages-partition-negative",
        "GET",
        f"{FEED}/quiet/messages",
        422,
        INVALID,
        "query.partition: Input should be greater than or equal to 0",
        params={"partition": -1},
    ),
    refused(
        "messages-decode-maybe",
        "GET",
        f"{FEED}/quiet/messages",
        422,
        INVALID,
        "query.decode: Input should be a valid boolean, unable to interpret input",
        params={"decode": "maybe"},
    ),
    accepted(
        "messages-offset-10e30",
        "GET",
        f"{FEED}/quiet/messages",
        {"messages": [], "counts": {}, "retained": {}, "dropped": 0},
        params={"from_offset": 10**30, "partition": 10**30},
    ),
    refused(
        "messages-unknown-changefeed",
        "GET",
        f"{FEED}/nope/messages",
        404,
        NOT_EXISTS,
        "changefeed not exists, default/nope",
    ),
    refused(
        "messages-unknown-cluster",
        "GET",
        f"{SIM}/nope/changefeeds/quiet/messages",
        404,
        NO_CLUSTER,
        CLUSTER_NOPE,
    ),
    refused(
        "tail-unknown-changefeed",
        "GET",
        f"{FEED}/nope/tail",
        404,
        NOT_EXISTS,
        "changefeed not exists, default/nope",
    ),
    refused(
        "fault-unknown-kind",
        "POST",
        f"{FEED}/quiet/faults",
        422,
        INVALID,
        "body.kind: Input should be 'restart', 'duplicate', 'ddl-replay' or 'unavailable'",
        json={"kind": "meteor"},
    ),
    refused(
        "fault-unknown-changefeed",
        "POST",
        f"{FEED}/nope/faults",
        404,
        NOT_EXISTS,
        "changefeed not exists, default/nope",
        json={"kind": "restart"},
    ),
    refused(
        "checkpoint-unknown-changefeed",
        "POST",
        f"{FEED}/nope/checkpoint",
        404,
        NOT_EXISTS,
        "changefeed not exists, default/nope",
    ),
]


@pytest.mark.parametrize(("method", "path", "request_", "status", "answer"), CASES)
def test_hostile_request(
    served: tuple[TestClient, Path],
    caplog: pytest.LogCaptureFixture,
    method: str,
    path: str,
    request_: dict[str, Any],
    status: int,
    answer: dict[str, Any],
) -> None:
    client, data = served
    with caplog.at_level(logging.INFO):
        response = client.request(method, path, **request_)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json", response.headers
    body = response.json()
    if "body" in answer:
        assert body == answer["body"]
    else:
        assert set(body) == {"error_msg", "error_code"}, body
        assert body["error_code"] == answer["code"], body
        expected = answer["message"]
        if isinstance(expected, re.Pattern):
            assert expected.fullmatch(body["error_msg"]), body
        else:
            assert body["error_msg"] == expected.replace("{data}", str(data)), body
    assert_quiet(response.text, caplog)
    if status >= 400:  # a refused request changed nothing
        listed = client.get(CF, params={"state": "all"}).json()["items"]
        assert [i["id"] for i in listed] == ["default", "quiet", "stopped"]
        assert [c["id"] for c in client.get(SIM).json()] == ["default"]


def assert_quiet(text: str, caplog: pytest.LogCaptureFixture) -> None:
    """No traceback or internal error in the answer, nothing logged as a problem."""
    assert "Traceback" not in text and "internal error" not in text.lower()
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert problems == [], [r.getMessage() for r in problems]


def test_head_is_get_without_the_body(
    served: tuple[TestClient, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """HEAD answers as GET does, headers and all, without the body (`curl -I`, probes; it
    was 405 everywhere); a path GET does not take answers 405 with its Allow."""
    client, _ = served
    with caplog.at_level(logging.INFO):
        for path in ("/livez", "/api/v2/health", f"{CF}/quiet"):
            got, head = client.get(path), client.head(path)
            assert (head.status_code, head.content) == (got.status_code, b""), path
            assert head.headers["content-length"] == got.headers["content-length"], path
        refused = client.head(f"{SIM}/default/sql")
    assert (refused.status_code, refused.headers["allow"], refused.content) == (405, "POST", b"")
    assert_quiet("", caplog)


def test_the_open_api_takes_json_sent_as_text(served: tuple[TestClient, Path]) -> None:
    """TiCDC reads a body as JSON whatever its Content-Type (gin's BindJSON), and its docs'
    curl commands send form-encoded: so does this service."""
    client, _ = served
    body = b'{"changefeed_id": "sent-as-text", "sink_uri": "memory://?protocol=canal-json"}'
    made = client.post(CF, content=body, headers={"content-type": "text/plain"})
    assert made.status_code == 200 and made.json()["id"] == "sent-as-text"
    assert client.delete(f"{CF}/sent-as-text").json() == {}


def test_a_bad_token_is_refused_in_json(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(data_dir=tmp_path / "data", mysql_port=0, token="s3cret")
    with TestClient(create_app(settings)) as client:
        for given in (None, "Bearer wrong", "Basic czNjcmV0", "Bearer s3cret ", "bearer s3cret"):
            headers = {} if given is None else {"Authorization": given}
            answer = client.get(CF, headers=headers)
            assert answer.status_code == 401 and answer.json() == {
                "error_msg": "a bearer token is required (Authorization: Bearer ...)",
                "error_code": "SIM:Unauthorized",
            }, given
        raw = client.get(CF, headers={"Authorization": "Bearer s\xe9cret".encode("latin-1")})
        assert raw.status_code == 401
        assert client.get(CF, headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert_quiet("", caplog)


def test_a_request_that_hits_a_bug_is_answered_in_json_and_logged_once(
    served: tuple[TestClient, Path],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An exception nothing expected (here planted in the SQL path): a JSON 500 with
    TiCDC's CDC:ErrInternalServerError, and one line in the log saying what and where,
    never a plain-text 500 or a traceback."""
    client, _ = served

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("planted")

    monkeypatch.setattr(runtime.Script, "run", broken)
    with caplog.at_level(logging.INFO):
        answer = client.post(SQL, content=b"SELECT 1", headers=TEXT)
    line = broken.__code__.co_firstlineno + 1
    said = f"unexpected RuntimeError at test_hostile_http.py:{line}: planted"
    assert answer.status_code == 500 and answer.json() == {
        "error_msg": f"{said}; this is a bug in ticdc-sim, please report it",
        "error_code": "CDC:ErrInternalServerError",
    }
    logged = [(r.name, r.levelname, r.getMessage(), r.exc_info) for r in ours(caplog)]
    assert logged == [
        ("ticdc_sim.service", "ERROR", f"POST /sim/v1/clusters/default/sql: {said}", None)
    ]


def test_a_tail_that_hits_a_bug_ends_and_is_logged_once(
    served: tuple[TestClient, Path],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stream is under way when it fails: it ends, the log has one line."""
    client, _ = served

    def broken(self: Any, cursor: int) -> Any:
        raise RuntimeError("planted in the tail")

    monkeypatch.setattr(feedlog.FeedLog, "since", broken)
    with caplog.at_level(logging.INFO), client.stream("GET", f"{FEED}/quiet/tail") as stream:
        assert stream.status_code == 200
        assert list(stream.iter_lines()) == [": tailing", ""]
    messages = [r.getMessage() for r in ours(caplog)]
    line = broken.__code__.co_firstlineno + 1
    assert messages == [
        "GET /sim/v1/clusters/default/changefeeds/quiet/tail: unexpected RuntimeError at"
        f" test_hostile_http.py:{line}: planted in the tail"
    ]


def ours(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What the service logged (not the test client's own request lines)."""
    return [r for r in caplog.records if r.name.startswith("ticdc_sim")]


def test_a_tail_ends_when_its_changefeed_goes(served: tuple[TestClient, Path]) -> None:
    client, _ = served
    assert client.post(CF, json={"changefeed_id": "tailed", "sink_uri": MEMORY}).status_code == 200
    with client.stream("GET", f"{FEED}/tailed/tail") as stream:
        lines = stream.iter_lines()
        assert next(lines) == ": tailing"
        assert client.delete(f"{CF}/tailed").json() == {}
        assert list(lines) == [
            "",
            "event: end",
            'data: {"reason":"the changefeed was removed or updated"}',
            "",
        ]


def test_a_client_gone_before_its_body_is_not_an_error(
    served: tuple[TestClient, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """A client that disconnects while sending its script: nothing answered, nothing run,
    nothing logged."""
    client, _ = served
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/sim/v1/clusters/default/sql",
        "raw_path": b"/sim/v1/clusters/default/sql",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"text/plain"), (b"content-length", b"100")],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
        "state": {},
    }
    parts = iter([{"type": "http.request", "body": b"INSERT INTO t", "more_body": True}])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return next(parts, {"type": "http.disconnect"})

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    before = client.get(f"{SIM}/default").json()["statements"]
    with caplog.at_level(logging.INFO):
        assert client.portal is not None
        client.portal.call(client.app, scope, receive, send)
    assert sent == [] and ours(caplog) == []
    assert client.get(f"{SIM}/default").json()["statements"] == before


NOT_UTF8 = "\udcff"  # the byte 0xff in a str, as the engine keeps bytes that are not UTF-8


def test_values_that_are_not_utf8_are_sent_as_bytes(
    served: tuple[TestClient, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result cell or a decoded column holding bytes that are not UTF-8 (JSON cannot carry
    them): sent as `{"$binary": base64}` like a binary value (was a 500 from the JSON
    encoder, for `SELECT CAST(x'ff' AS CHAR)` and for craft's records)."""
    client, _ = served
    engine = client.app.state.sim.registry.get("default").engine  # type: ignore[attr-defined]
    monkeypatch.setattr(
        engine,
        "query",
        lambda node, text="": ResultSet(["s", "t"], [(NOT_UTF8 + "x", "é")], [None, None]),
    )
    answer = client.post(SQL, content=b"SELECT s, t FROM t", headers=TEXT)
    assert answer.status_code == 200, answer.text
    assert answer.json()["statements"][0]["rows"] == [[{"$binary": "/3g="}, "é"]]
    monkeypatch.undo()
    client.post(SQL, content=b"INSERT INTO t VALUES (7)", headers=TEXT)
    monkeypatch.setattr(
        clusters, "decoded_record", lambda event: {"type": "insert", "columns": {"s": NOT_UTF8}}
    )
    page = client.get(f"{FEED}/quiet/messages")
    assert page.status_code == 200, page.text
    assert {str(d) for m in page.json()["messages"] for d in m["decoded"]} == {
        "{'type': 'insert', 'columns': {'s': {'$binary': '/w=='}}}"
    }
