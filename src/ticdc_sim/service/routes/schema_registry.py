"""Confluent Schema Registry's REST API over a cluster's schema registry (the `MemoryRegistry`
its avro changefeeds register in), at /sim/v1/clusters/{cluster}/schema-registry: the subset
TiCDC (tiflow `pkg/sink/codec/avro/confluent_schema_registry.go`) and confluent-kafka's
`SchemaRegistryClient` use, in Confluent's shapes (io.confluent.kafka.schemaregistry.rest):
its content type, its bodies, its `{"error_code": N, "message": ...}` errors with the HTTP
status N's first three digits name.

One route takes every path under the base and dispatches on the raw path's segments
(`ROUTES`), each unquoted on its own: a subject may hold any character, `/` too, as
clients send it percent-encoded. The handlers run on threads of their own (`_WORKERS`),
never in anyio's pool: a changefeed that registers over HTTP in its own service (a
loopback URL) holds a pool thread while it waits for the answer; nor on the event loop,
which a big schema or a long compatibility check would stall for every other request.
What a registry holds is bounded (`Limits`: the service's TICDC_SIM_MAX_SCHEMA_BYTES,
_SUBJECTS, _SUBJECT_VERSIONS, _SCHEMAS). Compatibility levels are the store's, and
enforced there: a registration they refuse is answered 409 as Confluent answers it."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote_to_bytes

import fastavro
from fastapi import APIRouter, Request, Response
from fastavro.schema import UnknownType

from ticdc_sim.cluster import NotFound, TooLarge
from ticdc_sim.encoders import compatibility
from ticdc_sim.encoders.registry import (
    INVALID_SCHEMA,
    INVALID_SUBJECT,
    INVALID_VERSION,
    SCHEMA_NOT_FOUND,
    MemoryRegistry,
    RegistryError,
)
from ticdc_sim.errors import shown
from ticdc_sim.service.state import BEARER, state_of

router = APIRouter(prefix="/sim/v1/clusters", dependencies=BEARER)
# the handlers' work (parsing JSON and Avro, compatibility checks): off the event loop, on
# threads of their own, not the pool a changefeed request may hold while it registers here
_WORKERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="schema-registry")
MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"

_INT32_MAX = 2**31 - 1
_NUMBER = re.compile(r"[0-9]{1,10}")


class Refused(Exception):
    """An answer in Confluent's error shape."""

    def __init__(self, code: int, message: str, allow: str = "") -> None:
        super().__init__(message)
        self.code, self.message = code, message
        self.allow = allow  # a 405's Allow header

    @property
    def status(self) -> int:
        return self.code // 100 if self.code >= 10_000 else self.code


@dataclass(frozen=True)
class Call:
    """A request as a handler sees it: the registry, the path's variables, the query and the
    body (parsed only by the handlers that take one)."""

    registry: MemoryRegistry
    args: tuple[str, ...]
    query: dict[str, str]
    body: bytes

    def json(self) -> dict[str, Any]:
        try:
            found = json.loads(self.body)
        except RecursionError:
            raise Refused(400, "the body is not valid JSON: nested too deeply") from None
        except ValueError as e:  # UnicodeDecodeError too
            raise Refused(400, f"the body is not valid JSON: {e}") from None
        if not isinstance(found, dict):
            raise Refused(422, f"the body is {shown(found)}, not a JSON object")
        return found


Answer = Any  # a JSON value; a Response as it is
Handler = Callable[[Call], Answer]


def _root(call: Call) -> Answer:
    return {}  # TiCDC checks that the base URL answers exactly this


def _subjects(call: Call) -> Answer:
    prefix = call.query.get("subjectPrefix", "")
    found = [s for s in call.registry.subjects() if s.startswith(prefix)]
    offset, limit = _count(call, "offset", 0), _count(call, "limit", -1)
    return found[offset:] if limit < 0 else found[offset : offset + limit]


def _versions(call: Call) -> Answer:
    return call.registry.versions(call.args[0])


def _register(call: Call) -> Answer:
    schema_id = call.registry.register(call.args[0], _schema(call))
    return {"id": schema_id}


def _version(call: Call) -> Answer:
    subject = call.args[0]
    schema_id, version, schema = call.registry.version(subject, _version_of(call.args[1]))
    return {"subject": subject, "version": version, "id": schema_id, "schema": schema}


def _version_schema(call: Call) -> Answer:
    _, _, schema = call.registry.version(call.args[0], _version_of(call.args[1]))
    return Response(schema, media_type=MEDIA_TYPE)


def _lookup(call: Call) -> Answer:
    subject = call.args[0]
    schema = _schema(call)
    schema_id, version = call.registry.lookup(subject, schema)
    text = call.registry.schema(schema_id)
    return {"subject": subject, "version": version, "id": schema_id, "schema": text}


def _delete_subject(call: Call) -> Answer:
    return call.registry.delete_subject(call.args[0])


def _by_id(call: Call) -> Answer:
    return {"schema": call.registry.schema(_id_of(call.args[0]))}


def _id_subjects(call: Call) -> Answer:
    return sorted({subject for subject, _ in _uses(call)})


def _id_versions(call: Call) -> Answer:
    return [{"subject": subject, "version": version} for subject, version in _uses(call)]


def _uses(call: Call) -> list[tuple[str, int]]:
    """(subject, version) of each registration of the path's schema id."""
    schema_id = _id_of(call.args[0])
    call.registry.schema(schema_id)  # 40403 for an id never given
    subjects: dict[str, list[int]] = call.registry.to_json()["subjects"]
    return [
        (subject, number)
        for subject, ids in sorted(subjects.items())
        for number, found in enumerate(ids, 1)
        if found == schema_id
    ]


def _types(call: Call) -> Answer:
    return ["AVRO"]


def _get_global(call: Call) -> Answer:
    return {"compatibilityLevel": call.registry.level()}


def _put_global(call: Call) -> Answer:
    return {"compatibility": call.registry.set_level(_level(call))}


def _get_subject_config(call: Call) -> Answer:
    default_to_global = call.query.get("defaultToGlobal") == "true"
    return {
        "compatibilityLevel": call.registry.level(call.args[0], default_to_global=default_to_global)
    }


def _put_subject_config(call: Call) -> Answer:
    return {"compatibility": call.registry.set_level(_level(call), call.args[0])}


def _delete_subject_config(call: Call) -> Answer:
    return {"compatibilityLevel": call.registry.delete_level(call.args[0])}


def _compatible(call: Call) -> Answer:
    """Whether the body's schema could be registered: against one version of the subject
    (`/versions/{version}`) or as a registration is checked (`/versions`)."""
    subject, version = call.args[0], call.args[1] if len(call.args) > 1 else None
    schema = _schema(call)
    if version is not None:
        version = _version_of(version)
    said = call.registry.compatibility(subject, schema, version)
    if call.query.get("verbose") == "true":
        return {"is_compatible": not said, "messages": said}
    return {"is_compatible": not said}


_S = "{subject}"
_V = "{version}"
_I = "{id}"
# (method, path segments after the base, handler); `{...}` segments are the handler's args
ROUTES: list[tuple[str, tuple[str, ...], Handler]] = [
    ("GET", (), _root),
    ("GET", ("subjects",), _subjects),
    ("GET", ("subjects", _S, "versions"), _versions),
    ("POST", ("subjects", _S, "versions"), _register),
    ("GET", ("subjects", _S, "versions", _V), _version),
    ("GET", ("subjects", _S, "versions", _V, "schema"), _version_schema),
    ("POST", ("subjects", _S), _lookup),
    ("DELETE", ("subjects", _S), _delete_subject),
    ("GET", ("schemas", "ids", _I), _by_id),
    ("GET", ("schemas", "ids", _I, "subjects"), _id_subjects),
    ("GET", ("schemas", "ids", _I, "versions"), _id_versions),
    ("GET", ("schemas", "types"), _types),
    ("GET", ("config",), _get_global),
    ("PUT", ("config",), _put_global),
    ("GET", ("config", _S), _get_subject_config),
    ("PUT", ("config", _S), _put_subject_config),
    ("DELETE", ("config", _S), _delete_subject_config),
    ("POST", ("compatibility", "subjects", _S, "versions"), _compatible),
    ("POST", ("compatibility", "subjects", _S, "versions", _V), _compatible),
]


def _match(segments: list[str], pattern: tuple[str, ...]) -> tuple[str, ...] | None:
    if len(segments) != len(pattern):
        return None
    args = []
    for segment, wanted in zip(segments, pattern, strict=True):
        if wanted.startswith("{") and segment:
            args.append(_valid(segment) if wanted == _S else segment)
        elif segment != wanted:
            return None
    return tuple(args)


def _valid(subject: str) -> str:
    """A subject as Confluent keeps it: text (UTF-8 in the path) with no NUL; 42208 naming
    what is not, rather than a subject that collides with another once replaced."""
    for position, char in enumerate(subject):
        if "\udc80" <= char <= "\udcff":  # a byte that is not UTF-8, as `_unquoted` keeps it
            said = f"byte 0x{ord(char) - 0xDC00:02X} at character {position} is not UTF-8"
        elif char == "\x00":
            said = f"a NUL at character {position}"
        else:
            continue
        shown_ = subject.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise Refused(
            INVALID_SUBJECT,
            f"The specified subject {shown(shown_, 60)} is not valid: {said}",
        )
    return subject


def _route(method: str, segments: list[bytes], raw: bytes) -> tuple[Handler, tuple[str, ...]]:
    """The handler of a request and its args; `raw`: the path after the base as sent."""
    texts = [_unquoted(s) for s in segments]
    allowed = []
    for verb, pattern, handler in ROUTES:
        args = _match(texts, pattern)
        if args is None:
            continue
        if verb == method:
            return handler, args
        allowed.append(verb)
    said = raw.decode("utf-8", "replace") or "/"
    path = said if len(said) <= 200 else said[:197] + "..."
    if allowed:
        methods = ", ".join(allowed)
        raise Refused(405, f"{method} is not allowed on {path}; it takes {methods}", methods)
    raise Refused(404, f"no such path of the schema registry: {method} {path}")


@router.api_route(
    "/{cluster_id}/schema-registry{rest:path}",
    methods=["GET", "POST", "PUT", "DELETE"],
    include_in_schema=False,
)
async def schema_registry(request: Request) -> Response:
    try:
        cluster_id, raw = _path(request)
        registry = _registry(request, cluster_id)
        handler, args = _route(request.method, _segments(raw), raw)
        query = dict(parse_qsl(request.url.query, keep_blank_values=True))
        call = Call(registry, args, query, await request.body())
        answer = await asyncio.get_running_loop().run_in_executor(_WORKERS, handler, call)
    except RegistryError as e:
        return _refused(Refused(e.code, str(e)))
    except Refused as e:
        return _refused(e)
    except TooLarge as e:  # a chunked body over the limit, found as it arrived
        return _refused(Refused(413, str(e)))
    if isinstance(answer, Response):
        return answer
    return Response(json.dumps(answer, ensure_ascii=False), media_type=MEDIA_TYPE)


def _segments(raw: bytes) -> list[bytes]:
    segments = raw.split(b"/")[1:]  # the part before the first `/` is empty
    if segments and segments[-1] == b"":  # a trailing `/`
        segments.pop()
    return segments


def not_allowed(request: Request) -> Response:
    """A method the registry's route is not declared for (PATCH, OPTIONS, ...): answered
    as the route answers a method its path does not take, Confluent's 405 naming the
    methods that path takes (404 for a path it does not have)."""
    try:
        _, raw = _path(request)
        _route(request.method, _segments(raw), raw)
    except Refused as e:
        return _refused(e)
    raise AssertionError(f"{request.method} is routed: the route takes every ROUTES method")


def _path(request: Request) -> tuple[str, bytes]:
    """The cluster and the raw path after the base, as sent: it is split on `/` before its
    segments are unquoted one by one, so a subject's `%2F` is not a separator."""
    raw: bytes = request.scope.get("raw_path") or request.url.path.encode()
    cluster, _, rest = raw[raw.find(_PREFIX) + len(_PREFIX) :].partition(b"/")
    base, slash, after = rest.partition(b"/")
    if base != b"schema-registry":  # `schema-registryX`, say
        said = raw.decode("utf-8", "replace")
        said = said if len(said) <= 200 else said[:197] + "..."
        raise Refused(404, f"no such path: {request.method} {said}")
    return unquote_to_bytes(cluster).decode("utf-8", "replace"), slash + after


def _unquoted(segment: bytes) -> str:
    """A path segment's text: its %XX and raw bytes as UTF-8 (a byte that is not: kept as a
    lone surrogate, for `_valid` to name; it matches no fixed segment)."""
    return unquote_to_bytes(segment).decode("utf-8", "surrogateescape")


_PREFIX = b"/sim/v1/clusters/"


def _registry(request: Request, cluster_id: str) -> MemoryRegistry:
    try:
        cluster = state_of(request).registry.get(cluster_id)
    except NotFound as e:
        raise Refused(404, str(e)) from None
    found: MemoryRegistry = cluster.registry
    return found


def _refused(e: Refused) -> Response:
    body = json.dumps({"error_code": e.code, "message": e.message}, ensure_ascii=False)
    headers = {"Allow": e.allow} if e.allow else None
    return Response(body, status_code=e.status, media_type=MEDIA_TYPE, headers=headers)


def confluent_error(status: int, message: str, code: str = "") -> Response:
    """The service's own refusals (token, body size) of a registry request, in Confluent's
    shape (`code`, the service's, is not part of it)."""
    return _refused(Refused(status, message))


def serves(path: str) -> bool:
    """Whether a request path is the schema registry's."""
    return path.startswith("/sim/v1/clusters/") and "/schema-registry" in path


def _schema(call: Call) -> str:
    """The Avro schema of a register or lookup body (`{"schema": ..., "schemaType": "AVRO",
    "references": []}`), checked as Confluent checks it: 42201 for what is not one."""
    body = call.json()
    schema = body.get("schema")
    if not isinstance(schema, str) or not schema:
        raise Refused(INVALID_SCHEMA, 'Empty schema: the body needs "schema", a string')
    call.registry.sized(schema)  # before it is parsed
    kind = body.get("schemaType", "AVRO")
    if kind != "AVRO":
        raise Refused(
            INVALID_SCHEMA,
            f"schemaType {shown(kind)}: this registry holds AVRO schemas only",
        )
    if body.get("references"):
        raise Refused(INVALID_SCHEMA, "schema references are not supported here")
    try:
        parsed = json.loads(schema)
    except RecursionError:
        raise Refused(INVALID_SCHEMA, "Invalid schema: nested too deeply") from None
    except ValueError as e:
        raise Refused(INVALID_SCHEMA, f"Invalid schema: not JSON: {e}") from None
    try:  # a string of it with "\ud800" in it: no UTF-8 answer could hold it
        json.dumps(parsed, ensure_ascii=False).encode()
    except UnicodeEncodeError as e:
        lone = shown(e.object[e.start])
        raise Refused(INVALID_SCHEMA, f"Invalid schema: {lone} is a lone surrogate") from None
    try:
        fastavro.parse_schema(_named_primitives(parsed), _write_hint=False)
    except RecursionError:
        raise Refused(INVALID_SCHEMA, "Invalid schema: nested too deeply") from None
    except UnknownType as e:  # its text is the whole schema's
        raise Refused(INVALID_SCHEMA, f"Invalid schema: unknown type {shown(e.name)}") from None
    except KeyError as e:  # fastavro's text is the key alone
        raise Refused(INVALID_SCHEMA, f"Invalid schema: {shown(e.args[0])} is missing") from None
    except Exception as e:  # whatever fastavro refuses is not an Avro schema
        said = str(e)  # fastavro quotes what it names (a repr)
        said = said if len(said) <= 300 else said[:297] + "..."
        raise Refused(INVALID_SCHEMA, f"Invalid schema: {said}") from None
    try:
        compatibility.parse(schema)
    except ValueError as e:
        raise Refused(INVALID_SCHEMA, f"Invalid schema: {e}") from None
    return schema


_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


def _named_primitives(node: Any) -> Any:
    """The schema with each primitive written as an object (`{"type": "float", ...}`, as
    TiCDC writes every column's) written as its name: the same type (the Avro
    specification), whose default fastavro checks as Java's Avro does (an integer default
    of a FLOAT column: TiCDC writes `1`, Confluent takes it, fastavro refuses it against the
    object form only). Logical types keep their form."""
    if isinstance(node, list):  # a union
        return [_named_primitives(n) for n in node]
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    if isinstance(kind, str) and kind in _PRIMITIVES and "logicalType" not in node:
        return kind
    out = {k: _named_primitives(node[k]) for k in ("items", "values") if k in node}
    fields = node.get("fields")
    if isinstance(fields, list):
        out["fields"] = [
            {**f, "type": _named_primitives(f["type"])}
            if isinstance(f, dict) and "type" in f
            else f
            for f in fields
        ]
    return {**node, **out}


def _version_of(text: str) -> str:
    """A version segment: a number in 1..2^31-1, `latest` or -1 (latest), as Confluent
    takes them; 42202 otherwise."""
    if text in ("latest", "-1"):
        return "latest"
    if _NUMBER.fullmatch(text) and 1 <= int(text) <= _INT32_MAX:
        return text
    raise Refused(
        INVALID_VERSION,
        f"The specified version {shown(text, 40)} is not a valid version id. Allowed values"
        ' are between [1, 2^31-1] and the string "latest"',
    )


def _id_of(text: str) -> int:
    if _NUMBER.fullmatch(text) and int(text) <= _INT32_MAX:
        return int(text)
    raise Refused(SCHEMA_NOT_FOUND, f"Schema {shown(text, 40)} not found")


def _count(call: Call, name: str, default: int) -> int:
    text = call.query.get(name)
    if text is None:
        return default
    if re.fullmatch(r"-?[0-9]{1,10}", text) and (int(text) >= 0 or name == "limit"):
        return int(text)
    raise Refused(422, f"{name} {shown(text, 40)} is not a number of 0 or more")


def _level(call: Call) -> object:
    """The level a config body names (`compatibility`, or `compatibilityLevel` as some
    clients send it); the store says whether it is one."""
    body = call.json()
    level = body.get("compatibility")  # null as confluent-kafka sends the one it leaves unset
    return body.get("compatibilityLevel") if level is None else level
