"""An HTTP client of a Confluent Schema Registry, as TiCDC's avro changefeeds use one (tiflow
`pkg/sink/codec/avro/confluent_schema_registry.go`): `open_registry(url)` checks that
`GET <url>` answers exactly `{}` (no retry: a changefeed with a registry that is not there
fails at creation), then `register` POSTs `{"schema": ...}` to
`/subjects/<subject>/versions` and `schema` GETs `/schemas/ids/<id>`.

TiCDC retries a connection error or a 5xx forever (exponential backoff up to 30 s) and a
4xx never; here the retries stop after `attempts`, so a registry that stays down is a clear
error, not a hang. TiCDC's HTTP client has no timeout; here each request has one.
Ids are cached: by (subject, schema) as TiCDC caches by subject and table version (a schema
registered again gets its id again, so the cache only saves round trips), schemas by id
(a registry never gives an id another schema).

Every failure is a `RegistryError` (a SimError) naming the URL, the subject or id, and
what the registry said; `code` is Confluent's error code when the registry gave one, its
HTTP status otherwise, 0 when it did not answer. What a server that is not a registry
answered is never repeated (the service may be made to reach one): its status line only;
a registry's own words only when they come in Confluent's error shape.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any
from urllib.parse import quote_plus

import httpx

from ticdc_sim.encoders.registry import RegistryAPIError, compact
from ticdc_sim.errors import shown

# TiCDC's Accept and Content-Type (confluent_schema_registry.go Register)
_ACCEPT = (
    "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
)
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ATTEMPTS = 5
BACKOFF_S = 0.5  # cenkalti/backoff's first interval; each next one x1.5 (no jitter here)
TIMEOUT_S = 10.0


def open_registry(
    url: str,
    *,
    attempts: int = ATTEMPTS,
    backoff_s: float = BACKOFF_S,
    timeout_s: float = TIMEOUT_S,
) -> HTTPRegistry:
    """A registry at `url` once it answers `GET <url>` with exactly `{}`, as TiCDC's
    NewAvroSchemaManager checks. A user and password in the URL are sent as basic auth
    (httpx's way; TiCDC sends none) and left out of errors."""
    base = url.rstrip("/")
    try:
        parsed = httpx.URL(base)
    except httpx.InvalidURL as e:
        raise RegistryAPIError(0, f"schema-registry {shown(url)}: not a URL: {e}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise RegistryAPIError(0, f"schema-registry {shown(url)}: not an http:// or https:// URL")
    if parsed.port is not None and parsed.port > 65535:
        raise RegistryAPIError(0, f"schema-registry {shown(url)}: port {parsed.port} is past 65535")
    registry = HTTPRegistry(parsed, attempts, backoff_s, timeout_s)
    try:
        what = "testing the connection"
        response = registry.request("GET", base, what, attempts=1)
        if response.text != "{}":
            said = f"GET answered {_line(response)}, not {{}}"
            raise registry.error(
                response.status_code,
                what,
                f"{said} (is it a Confluent Schema Registry's base URL?)",
            )
    except RegistryAPIError:
        registry.close()
        raise
    return registry


class HTTPRegistry:
    """The `SchemaRegistry` protocol over HTTP; thread-safe."""

    def __init__(self, url: httpx.URL, attempts: int, backoff_s: float, timeout_s: float) -> None:
        self.url = str(url).rstrip("/")
        # the URL as errors show it
        hidden = url.copy_with(username=url.username, password="***")
        self.shown = str(hidden).rstrip("/") if url.password else self.url
        self.attempts, self.backoff_s = attempts, backoff_s
        self._http = httpx.Client(timeout=timeout_s, headers={"Accept": _ACCEPT})
        self._lock = threading.Lock()
        self._ids: dict[tuple[str, str], int] = {}
        self._schemas: dict[int, str] = {}

    def register(self, subject: str, schema: str) -> int:
        """The id of `schema` under `subject` (TiCDC's Register: the schema compacted)."""
        text = compact(schema)
        with self._lock:
            known = self._ids.get((subject, text))
        if known is not None:
            return known
        what = f"registering subject {subject!r}"
        # Go's url.QueryEscape, as TiCDC escapes the subject: a registry reads its `+` as
        # `+` (topics, and so subjects, have no spaces)
        path = f"/subjects/{quote_plus(subject, safe='')}/versions"
        response = self.request(
            "POST",
            self.url + path,
            what,
            content=json.dumps({"schema": text}),
            headers={"Content-Type": _CONTENT_TYPE},
        )
        schema_id = self._answer(response, what).get("id")
        if type(schema_id) is not int or schema_id <= 0:
            said = f"it answered {_line(response)} without a schema id (a positive integer)"
            raise self.error(response.status_code, what, said)
        with self._lock:
            self._ids[(subject, text)] = schema_id
            self._schemas[schema_id] = text
        return schema_id

    def schema(self, schema_id: int) -> str:
        """The schema text of `schema_id` (TiCDC's Lookup)."""
        with self._lock:
            known = self._schemas.get(schema_id)
        if known is not None:
            return known
        what = f"looking up schema id {schema_id}"
        response = self.request("GET", f"{self.url}/schemas/ids/{schema_id}", what)
        text = self._answer(response, what).get("schema")
        if not isinstance(text, str):
            said = f'it answered {_line(response)} without {{"schema": "..."}}'
            raise self.error(response.status_code, what, said)
        with self._lock:
            self._schemas[schema_id] = text
        return text

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> HTTPRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def error(self, code: int, what: str, said: str) -> RegistryAPIError:
        return RegistryAPIError(code, f"schema registry {self.shown}: {what}: {said}")

    def request(
        self, method: str, url: str, what: str, attempts: int | None = None, **kwargs: Any
    ) -> httpx.Response:
        """The answer to a request, retried (TiCDC's httpRetry) on a connection error or a
        5xx, never on a 4xx; an error once the attempts are spent."""
        attempts = attempts or self.attempts
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        wait = self.backoff_s
        for attempt in range(1, attempts + 1):
            try:
                response = self._http.request(method, url, **kwargs)
            # ValueError: a host name IDNA cannot encode (a UnicodeError), found as it connects
            except (httpx.HTTPError, httpx.InvalidURL, ValueError) as e:
                if attempt == attempts:
                    path = url.removeprefix(self.url) or "/"
                    said = f"{method} {path}: {_transport_error(e)}{tries}"
                    raise self.error(0, what, said) from None
            else:
                if response.status_code < 500:
                    return response
                if attempt == attempts:
                    code, said = _said(response)
                    raise self.error(code, what, f"{said}{tries}")
            time.sleep(wait)
            wait *= 1.5
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _answer(self, response: httpx.Response, what: str) -> dict[str, Any]:
        """The JSON object of a 200 answer; the registry's own error otherwise."""
        if response.status_code != 200:
            code, said = _said(response)
            raise self.error(code, what, said)
        try:
            found = response.json()
        except ValueError:
            found = None
        if not isinstance(found, dict):
            raise self.error(200, what, f"it answered {_line(response)}, not a JSON object")
        return found


def _said(response: httpx.Response) -> tuple[int, str]:
    """(Confluent's error code, what it said) of an error answer: its status line, and a
    registry's own message when the body is Confluent's `{"error_code": N, "message": ...}`
    (its code too, unless it is the status); the HTTP status and the status line otherwise."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        code, message = body.get("error_code"), body.get("message")
        if type(code) is int and isinstance(message, str):  # whole: a 409's details are long
            said = _words(message)
            said = said if code == response.status_code else f"error {code}: {said}"
            return code, f"{_line(response)}: {said}"
    return response.status_code, f"{_line(response)} (not a Confluent error answer)"


def _line(response: httpx.Response) -> str:
    """An answer's status line (`HTTP 404 Not Found`), which names it without its body."""
    return f"HTTP {response.status_code} {response.reason_phrase}".rstrip()


def _words(message: str, limit: int = 4000) -> str:
    """A registry's error message as it said it, cut at `limit`; repr'd if it holds what a
    log line should not (a newline, a control character)."""
    text = message if message.isprintable() else repr(message)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _transport_error(e: Exception) -> str:
    """What went wrong before an answer, in words: httpx's text is the OS's, or empty."""
    kind = {
        httpx.ConnectTimeout: "connecting timed out",
        httpx.ReadTimeout: "no answer in time",
        httpx.ConnectError: "cannot connect",
        UnicodeError: "not a host name",
    }
    said = next((v for k, v in kind.items() if isinstance(e, k)), type(e).__name__)
    detail = str(e)
    return f"{said} ({detail})" if detail else said
