"""Hostile requests to the service's schema registry API (Confluent's REST API under
/sim/v1/clusters/{cluster}/schema-registry): bad JSON, wrong types, bad versions and ids,
unknown paths and methods, odd subjects. One row, one request and its exact answer in
Confluent's shape (`{"error_code": N, "message": ...}`, the status N's first digits); then
seeded random requests, none of which may get a 5xx or anything but that shape."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ticdc_sim.service.app import create_app
from ticdc_sim.service.settings import Settings

LIMIT = 64 << 10
BASE = "/sim/v1/clusters/default/schema-registry"
ROW = '{"type":"record","name":"row","fields":[{"name":"id","type":"int"}]}'
MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"
NOT_A_VERSION = (
    'is not a valid version id. Allowed values are between [1, 2^31-1] and the string "latest"'
)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The service with a 64 KiB body limit; subject `t-value` has one version."""
    data = tmp_path_factory.mktemp("hostile-registry") / "data"
    data.mkdir()
    settings = Settings(data_dir=data, mysql_port=0, max_body_bytes=LIMIT)
    with TestClient(create_app(settings)) as found:
        made = found.post(f"{BASE}/subjects/t-value/versions", json={"schema": ROW})
        assert made.json() == {"id": 1}, made.text
        yield found


def row(name: str, method: str, path: str, status: int, answer: Any, **request: Any) -> Any:
    return pytest.param(method, path, request, status, answer, id=name)


def error(code: int, message: str) -> dict[str, Any]:
    return {"error_code": code, "message": message}


VERSIONS = f"{BASE}/subjects/t-value/versions"
CASES = [
    row(
        "not json",
        "POST",
        VERSIONS,
        400,
        error(400, "the body is not valid JSON: Expecting value: line 1 column 1 (char 0)"),
        content=b"schema",
    ),
    row(
        "empty body",
        "POST",
        VERSIONS,
        400,
        error(400, "the body is not valid JSON: Expecting value: line 1 column 1 (char 0)"),
    ),
    row(
        "not utf-8",
        "POST",
        VERSIONS,
        400,
        error(
            400,
            "the body is not valid JSON: 'utf-8' codec can't decode byte 0xff in position 2: invalid start byte",
        ),
        content=b'{"\xff": 1}',
    ),
    row(
        "nested too deeply",
        "POST",
        VERSIONS,
        400,
        error(400, "the body is not valid JSON: nested too deeply"),
        content=b"[" * 60_000,
    ),
    row(
        "a list", "POST", VERSIONS, 422, error(422, "the body is [1], not a JSON object"), json=[1]
    ),
    row(
        "no schema",
        "POST",
        VERSIONS,
        422,
        error(42201, 'Empty schema: the body needs "schema", a string'),
        json={},
    ),
    row(
        "schema a number",
        "POST",
        VERSIONS,
        422,
        error(42201, 'Empty schema: the body needs "schema", a string'),
        json={"schema": 5},
    ),
    row(
        "schema empty",
        "POST",
        VERSIONS,
        422,
        error(42201, 'Empty schema: the body needs "schema", a string'),
        json={"schema": ""},
    ),
    row(
        "schema not json",
        "POST",
        VERSIONS,
        422,
        error(42201, "Invalid schema: not JSON: Expecting value: line 1 column 1 (char 0)"),
        json={"schema": "row"},
    ),
    row(
        "schema nested too deeply",
        "POST",
        VERSIONS,
        422,
        error(42201, "Invalid schema: nested too deeply"),
        json={"schema": "[" * 20_000 + "]" * 20_000},
    ),
    row(
        "schema nested deep for avro",
        "POST",
        VERSIONS,
        422,
        error(42201, "Invalid schema: nested too deeply"),
        json={"schema": '{"type":"array","items":' * 1500 + '"int"' + "}" * 1500},
    ),
    row(
        "unknown type",
        "POST",
        VERSIONS,
        422,
        error(42201, "Invalid schema: unknown type {'type': 'nope'}"),
        json={"schema": '{"type": "nope"}'},
    ),
    row(
        "enum without symbols",
        "POST",
        VERSIONS,
        422,
        error(42201, "Invalid schema: 'symbols' is missing"),
        json={"schema": '{"type": "enum", "name": "e"}'},
    ),
    row(
        "fields not a list",
        "POST",
        VERSIONS,
        422,
        error(42201, "Invalid schema: 'int' object is not iterable"),
        json={"schema": '{"type": "record", "name": "r", "fields": 5}'},
    ),
    row(
        "json schema type",
        "POST",
        VERSIONS,
        422,
        error(42201, "schemaType 'JSON': this registry holds AVRO schemas only"),
        json={"schema": ROW, "schemaType": "JSON"},
    ),
    row(
        "schema type a list",
        "POST",
        VERSIONS,
        422,
        error(42201, "schemaType []: this registry holds AVRO schemas only"),
        json={"schema": ROW, "schemaType": []},
    ),
    row(
        "references",
        "POST",
        VERSIONS,
        422,
        error(42201, "schema references are not supported here"),
        json={"schema": ROW, "references": [{"name": "x"}]},
    ),
    row(
        "avro and no references",
        "POST",
        VERSIONS,
        200,
        {"id": 1},
        json={"schema": ROW, "schemaType": "AVRO", "references": []},
    ),
    row(
        "unknown fields",
        "POST",
        VERSIONS,
        200,
        {"id": 1},
        json={"schema": ROW, "metadata": None, "ruleSet": {"x": 1}},
    ),
    row(
        "version 0",
        "GET",
        f"{VERSIONS}/0",
        422,
        error(42202, f"The specified version '0' {NOT_A_VERSION}"),
    ),
    row(
        "version -2",
        "GET",
        f"{VERSIONS}/-2",
        422,
        error(42202, f"The specified version '-2' {NOT_A_VERSION}"),
    ),
    row(
        "version past int32",
        "GET",
        f"{VERSIONS}/2147483648",
        422,
        error(42202, f"The specified version '2147483648' {NOT_A_VERSION}"),
    ),
    row(
        "version of 5000 digits",
        "GET",
        f"{VERSIONS}/{'9' * 5000}",
        422,
        error(42202, f"The specified version '{'9' * 36}... {NOT_A_VERSION}"),
    ),
    row(
        "version in arabic digits",
        "GET",
        f"{VERSIONS}/\u0661",
        422,
        error(42202, f"The specified version '\u0661' {NOT_A_VERSION}"),
    ),
    row(
        "version a word",
        "GET",
        f"{VERSIONS}/newest",
        422,
        error(42202, f"The specified version 'newest' {NOT_A_VERSION}"),
    ),
    row(
        "version -1 is latest",
        "GET",
        f"{VERSIONS}/-1",
        200,
        {"subject": "t-value", "version": 1, "id": 1, "schema": ROW},
    ),
    row(
        "version not yet",
        "GET",
        f"{VERSIONS}/2",
        404,
        error(40402, "version 2 of subject 't-value' not found"),
    ),
    row("its schema", "GET", f"{VERSIONS}/latest/schema", 200, json.loads(ROW)),
    row("id a word", "GET", f"{BASE}/schemas/ids/one", 404, error(40403, "Schema 'one' not found")),
    row("id negative", "GET", f"{BASE}/schemas/ids/-1", 404, error(40403, "Schema '-1' not found")),
    row("id 0", "GET", f"{BASE}/schemas/ids/0", 404, error(40403, "schema 0 not found")),
    row(
        "id of 5000 digits",
        "GET",
        f"{BASE}/schemas/ids/{'1' * 5000}",
        404,
        error(40403, f"Schema '{'1' * 36}... not found"),
    ),
    row(
        "id never given, its subjects",
        "GET",
        f"{BASE}/schemas/ids/9/subjects",
        404,
        error(40403, "schema 9 not found"),
    ),
    row(
        "unknown path",
        "GET",
        f"{BASE}/subjectz",
        404,
        error(404, "no such path of the schema registry: GET /subjectz"),
    ),
    row(
        "empty segment",
        "GET",
        f"{BASE}/subjects//versions",
        404,
        error(404, "no such path of the schema registry: GET /subjects//versions"),
    ),
    row(
        "not the base",
        "GET",
        "/sim/v1/clusters/default/schema-registryX/subjects",
        404,
        error(404, "no such path: GET /sim/v1/clusters/default/schema-registryX/subjects"),
    ),
    row(
        "no such cluster",
        "GET",
        "/sim/v1/clusters/nope/schema-registry",
        404,
        error(404, "cluster 'nope' does not exist (POST /sim/v1/clusters creates one)"),
    ),
    row(
        "a name Avro refuses",
        "POST",
        VERSIONS,
        422,
        error(
            42201,
            "Invalid schema: row-x is not a valid Avro name because it does not match the"
            " pattern (?:^|\\.)[A-Za-z_][A-Za-z0-9_]*$",
        ),
        json={"schema": ROW.replace('"row"', '"row-x"')},
    ),
    row(
        "a field twice",
        "POST",
        VERSIONS,
        422,
        error(42201, "Invalid schema: Field name id already in use."),
        json={"schema": ROW.replace("}]}", '},{"name":"id","type":"int"}]}')},
    ),
    row(
        "an incompatible schema",
        "POST",
        VERSIONS,
        409,
        error(
            409,
            'Schema being registered is incompatible with an earlier schema for subject "t-value",'
            " details: [{errorType:'TYPE_MISMATCH', description:'The type (path"
            " '/fields/0/type') of a field in the new schema does not match with the old"
            " schema', additionalInfo:'reader type: string not compatible with writer type:"
            f" int'}}, {{oldSchemaVersion: 1}}, {{oldSchema: '{ROW}'}}, {{compatibility:"
            " 'BACKWARD'}]",
        ),
        json={"schema": ROW.replace('"int"', '"string"')},
    ),
    row(
        "compatibility, verbose",
        "POST",
        f"{BASE}/compatibility/subjects/t-value/versions/1?verbose=true",
        200,
        {"is_compatible": True, "messages": []},
        json={"schema": ROW.replace("}]}", '},{"name":"v","type":"int","default":0}]}')},
    ),
    row(
        "compatibility of a version that is not one",
        "POST",
        f"{BASE}/compatibility/subjects/t-value/versions/0",
        422,
        error(42202, f"The specified version '0' {NOT_A_VERSION}"),
        json={"schema": ROW},
    ),
    row(
        "compatibility of a version never made",
        "POST",
        f"{BASE}/compatibility/subjects/t-value/versions/2",
        404,
        error(40402, "version 2 of subject 't-value' not found"),
        json={"schema": ROW},
    ),
    row(
        "compatibility of a subject never made",
        "POST",
        f"{BASE}/compatibility/subjects/nope/versions/latest",
        404,
        error(40401, "subject 'nope' not found"),
        json={"schema": ROW},
    ),
    row(
        "compatibility without a schema",
        "POST",
        f"{BASE}/compatibility/subjects/t-value/versions",
        422,
        error(42201, 'Empty schema: the body needs "schema", a string'),
        json={"schema": 1},
    ),
    row(
        "compatibility by GET",
        "GET",
        f"{BASE}/compatibility/subjects/t-value/versions/latest",
        405,
        error(
            405,
            "GET is not allowed on /compatibility/subjects/t-value/versions/latest; it takes POST",
        ),
    ),
    row(
        "method",
        "PUT",
        f"{BASE}/subjects",
        405,
        error(405, "PUT is not allowed on /subjects; it takes GET"),
    ),
    row(
        "method of two",
        "PUT",
        f"{BASE}/subjects/t-value",
        405,
        error(405, "PUT is not allowed on /subjects/t-value; it takes POST, DELETE"),
    ),
    row(
        "offset a word",
        "GET",
        f"{BASE}/subjects?offset=two",
        422,
        error(422, "offset 'two' is not a number of 0 or more"),
    ),
    row(
        "offset and limit",
        "GET",
        f"{BASE}/subjects?offset=0&limit=1&subjectPrefix=t-",
        200,
        ["t-value"],
    ),
    row("offset past the end", "GET", f"{BASE}/subjects?offset=5", 200, []),
    row(
        "level a number",
        "PUT",
        f"{BASE}/config",
        422,
        error(
            42203,
            "Invalid compatibility level 5. Valid values are BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE, NONE",
        ),
        json={"compatibility": 5},
    ),
    row(
        "level missing",
        "PUT",
        f"{BASE}/config/t-value",
        422,
        error(
            42203,
            "Invalid compatibility level null. Valid values are BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE, NONE",
        ),
        json={},
    ),
    row(
        "level config not json",
        "PUT",
        f"{BASE}/config",
        400,
        error(400, "the body is not valid JSON: Expecting value: line 1 column 1 (char 0)"),
        content=b"FULL",
    ),
    row(
        "subject level never set",
        "DELETE",
        f"{BASE}/config/t-value",
        404,
        error(40408, "Subject 't-value' does not have subject-level compatibility configured"),
    ),
    row(
        "subject level, default to global",
        "GET",
        f"{BASE}/config/t-value?defaultToGlobal=true",
        200,
        {"compatibilityLevel": "BACKWARD"},
    ),
    row(
        "lookup of a subject never made",
        "POST",
        f"{BASE}/subjects/nope",
        404,
        error(40401, "subject 'nope' not found"),
        json={"schema": ROW},
    ),
    row(
        "delete a subject never made",
        "DELETE",
        f"{BASE}/subjects/nope",
        404,
        error(40401, "subject 'nope' not found"),
    ),
    row(
        "bad percent-encoding is the subject's text",
        "GET",
        f"{BASE}/subjects/%zz/versions",
        404,
        error(40401, "subject '%zz' not found"),
    ),
    row(
        "a nul in the subject",
        "GET",
        f"{BASE}/subjects/a%00b/versions",
        422,
        error(42208, "The specified subject 'a\\x00b' is not valid: a NUL at character 1"),
    ),
]


CASES += [
    row(
        "a subject that is not utf-8",
        "GET",
        f"{BASE}/subjects/a%FFb/versions",
        422,
        error(
            42208,
            "The specified subject 'a\\\\xffb' is not valid: byte 0xFF at character 1 is not UTF-8",
        ),
    ),
    row(
        "offset negative",
        "GET",
        f"{BASE}/subjects?offset=-1",
        422,
        error(422, "offset '-1' is not a number of 0 or more"),
    ),
    row(
        "a lone surrogate in the schema",
        "POST",
        VERSIONS,
        422,
        error(42201, "Invalid schema: '\\ud800' is a lone surrogate"),
        json={"schema": '{"type": "enum", "name": "e", "symbols": ["\\ud800"]}'},
    ),
    row(
        "a lone surrogate in the body",
        "POST",
        VERSIONS,
        422,
        error(42201, "Invalid schema: '\\udfff' is a lone surrogate"),
        content=b'{"schema": "\\"\\udfff\\""}',
    ),
    row(
        "body over the limit",
        "POST",
        VERSIONS,
        413,
        error(
            413, f"the body is {LIMIT + 1} bytes; the limit is {LIMIT} (TICDC_SIM_MAX_BODY_BYTES)"
        ),
        content=b" " * (LIMIT + 1),
    ),
    row(
        "chunked body over the limit",
        "POST",
        VERSIONS,
        413,
        error(
            413, f"the body is over {LIMIT} bytes; the limit is {LIMIT} (TICDC_SIM_MAX_BODY_BYTES)"
        ),
        content=iter([b" " * LIMIT, b" "]),
    ),
    row(
        "content-length not a number",
        "POST",
        VERSIONS,
        400,
        error(400, "Content-Length 'many' is not a number"),
        headers={"content-length": "many"},
        content=b"{}",
    ),
]


@pytest.mark.parametrize(("method", "path", "request_", "status", "answer"), CASES)
def test_hostile_request(
    client: TestClient,
    method: str,
    path: str,
    request_: dict[str, Any],
    status: int,
    answer: Any,
) -> None:
    response = client.request(method, path, **request_)
    assert (response.status_code, response.json()) == (status, answer)
    assert response.headers["content-type"] == MEDIA_TYPE


def test_a_head_request_is_a_get_without_its_body(client: TestClient) -> None:
    response = client.head(BASE)
    assert (response.status_code, response.content) == (200, b"")


# what a random request is made of
SEGMENTS = [
    "subjects",
    "versions",
    "schemas",
    "ids",
    "config",
    "latest",
    "schema",
    "t-value",
    "1",
    "-1",
    "0",
    "2147483648",
    "%2F",
    "%",
    "%00",
    "",
    "\u00e9",
    "types",
    "compatibility",
]
BODIES: list[bytes | None] = [
    None,
    b"",
    b"{}",
    b"[]",
    b"null",
    b'{"schema": 1}',
    json.dumps({"schema": ROW}).encode(),
    b'{"schema": "{\\"type\\": \\"enum\\"}"}',
    b'{"compatibility": "FULL"}',
    b"\xff\xfe",
    b"[" * 5000,
    b'{"schema": "["}',
    b'{"compatibilityLevel": ["x"]}',
    json.dumps({"schema": ROW.replace('"int"', '"string"')}).encode(),
    json.dumps({"schema": ROW.replace('"row"', '"row-x"')}).encode(),
    b'{"schema": "{\\"type\\": \\"enum\\", \\"name\\": \\"e\\", \\"symbols\\": [\\"\\\\ud800\\"]}"}',
]


def test_random_requests_get_confluent_answers(client: TestClient) -> None:
    rng = random.Random(20261126)
    for _ in range(400):
        path = BASE + "".join("/" + rng.choice(SEGMENTS) for _ in range(rng.randrange(5)))
        method = rng.choice(["GET", "POST", "PUT", "DELETE"])
        body = rng.choice(BODIES)
        response = client.request(method, path, content=body)
        where = f"{method} {path} {body!r:.60}"
        assert response.status_code < 500, f"{where}: {response.text}"
        if response.status_code >= 400:
            said = response.json()
            assert set(said) == {"error_code", "message"}, f"{where}: {said}"
            assert str(said["error_code"]).startswith(str(response.status_code)), where
