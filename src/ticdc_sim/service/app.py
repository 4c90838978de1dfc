"""The HTTP service: TiCDC's open API v2, the simulator's own API under /sim/v1, the
playground page, the API docs (/docs, /redoc: Swagger UI and ReDoc served from the
fastapi-offline package, so they work without internet), and /livez, /readyz, /metrics.
`create_app(settings)` wires it; the routes live in `service/routes/`, one module per
resource."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import importlib
import inspect
import logging
import socket
import threading
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ticdc_sim.cluster import (
    ChangefeedNotFound,
    CloseFailed,
    Conflict,
    InvalidParam,
    NotFound,
    StartTsBeforeGC,
    TooLarge,
)
from ticdc_sim.errors import ConfigError, SimError
from ticdc_sim.feed import FeedSpec, build_changefeed
from ticdc_sim.service import routes
from ticdc_sim.service.guard import Forbidden, sink_uri
from ticdc_sim.service.metrics import Metrics
from ticdc_sim.service.mysql import start as start_mysql
from ticdc_sim.service.registry import Registry
from ticdc_sim.service.routes import schema_registry
from ticdc_sim.service.routes.schema_registry import confluent_error
from ticdc_sim.service.settings import Settings, package_version
from ticdc_sim.service.state import State, feed_sink, retained
from ticdc_sim.service.supervisor import TICK_S, Supervisor

LOG = logging.getLogger("ticdc_sim.service")
STATIC = Path(__file__).parent / "static"
DOCS_ASSETS = Path(fastapi_offline.__file__).parent / "static"  # Swagger UI's and ReDoc's
# paths anyone may read, token or not: probes, the page and the API docs (their API calls
# carry the token)
_OPEN = ("/livez", "/readyz", "/static/", "/favicon.ico", "/docs", "/redoc", "/openapi.json")
# in a request's scope when it came over TICDC_SIM_MAX_HTTP_CONCURRENCY (the limit; set by
# `serve`'s HTTP protocol, which counts the connections and the requests under way)
OVER_LIMIT = "ticdc_sim.over_limit"


def create_app(
    settings: Settings | None = None, mysql_socket: socket.socket | None = None
) -> FastAPI:
    """The service; `mysql_socket`: the MySQL port already bound (`serve` binds both ports
    before it says where they are)."""
    settings = settings or Settings()
    state = State(settings, Registry(settings.max_clusters), Metrics())
    state.metrics.watch(state.registry)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.default_cluster:
            await run_in_threadpool(_default_cluster, state)
        mysql = None
        if settings.mysql_port:
            mysql = await start_mysql(settings, state.registry, state.turns, mysql_socket)
        state.metrics.mysql = mysql  # its connections, shown
        supervisor = Supervisor(state.registry, min(TICK_S, settings.backoff_init_s / 2))
        supervisor.start()
        threading.Thread(target=_warm, name="ticdc-sim-warm", daemon=True).start()
        state.ready = True
        try:
            yield
        finally:
            state.ready = False
            await run_in_threadpool(supervisor.stop)
            if mysql is not None:
                mysql.close()
                await mysql.wait_closed()
            try:  # every sink flushed; `serve` says what went where
                state.closed = await run_in_threadpool(state.registry.close)
            except CloseFailed as e:
                state.closed, state.close_error = e.said, str(e)

    app = FastAPI(
        title="ticdc-sim",
        version=package_version(),
        summary="A simulated TiDB cluster with TiCDC changefeeds: SQL in, TiCDC's messages out.",
        lifespan=lifespan,
        docs_url=None,  # served by _docs, from local assets
        redoc_url=None,
    )
    app.state.sim = state
    for router in routes.ROUTERS:
        app.include_router(router)
    _docs(app)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def index() -> RedirectResponse:
        return RedirectResponse("/static/index.html")

    app.add_middleware(Guard, state=state, direct=_direct_routes())
    _handlers(app)
    return app


# Routes `Guard` answers itself, past FastAPI's routing, dependency solving (the bearer
# dependency only documents the token, which Guard checks) and exception middleware: their
# ~100 us were 5% of a 100-row script's request (bench/service.py). Each route's function
# takes the Request and its path parameters and returns a Response; what it raises is
# answered as the app's handlers answer a SimError.
DIRECT = [("POST", "/sim/v1/clusters/{cluster_id}/sql")]


def _direct_routes() -> list[APIRoute]:
    found = [
        route
        for router in routes.ROUTERS
        for route in router.routes
        if isinstance(route, APIRoute)
        and any(method in (route.methods or ()) and path == route.path for method, path in DIRECT)
    ]
    assert len(found) == len(DIRECT), "a DIRECT route is gone"
    for route in found:
        names = list(inspect.signature(route.endpoint).parameters)
        assert names == ["request", *route.param_convertors], f"{route.path}: {names}"
    return found


def _docs(app: FastAPI) -> None:
    """/docs and /redoc with their scripts and styles from this service, never a CDN: the
    docs of a simulator on a laptop or in CI must not need the internet. Swagger UI's
    online validator is off for the same reason."""
    app.mount("/static/docs", StaticFiles(directory=DOCS_ASSETS), name="docs-assets")
    title = f"{app.title} API"

    @app.get("/docs", include_in_schema=False)
    async def swagger(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=title,
            swagger_js_url=f"{root}/static/docs/swagger-ui-bundle.js",
            swagger_css_url=f"{root}/static/docs/swagger-ui.css",
            swagger_favicon_url=f"{root}/static/docs/favicon.png",
            swagger_ui_parameters={"validatorUrl": None},
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=title,
            redoc_js_url=f"{root}/static/docs/redoc.standalone.js",
            redoc_favicon_url=f"{root}/static/docs/favicon.png",
            with_google_fonts=False,
        )


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, with the bearer token optional (`{}` first): the service asks
    for it only when TICDC_SIM_TOKEN is set."""
    if app.openapi_schema is None:
        schema = FastAPI.openapi(app)
        for operation in (op for path in schema["paths"].values() for op in path.values()):
            if "security" in operation:
                operation["security"].insert(0, {})
        app.openapi_schema = schema
    return app.openapi_schema


class Guard:
    """Every request: the bearer token, the body-size limit (on what arrives, so a chunked
    body is held to it too) and the request metrics. Plain ASGI: Starlette's
    BaseHTTPMiddleware costs a task and a stream per request."""

    def __init__(self, app: ASGIApp, state: State, direct: list[APIRoute]) -> None:
        self.app, self.state, self.direct = app, state, direct
        self.settings, self.metrics = state.settings, state.metrics
        token = state.settings.token
        self.bearer = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        path: str = scope["path"]
        headers = dict(scope["headers"])
        method: str = scope["method"]
        if method == "HEAD":  # GET without the body (RFC 9110 9.3.2): probes, `curl -I`
            scope = {**scope, "method": "GET"}
        refused = self._refused(path, headers, scope.get(OVER_LIMIT))
        if refused is not None:
            await refused(scope, receive, send)
            return
        limit, received = self.settings.max_body_bytes, 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > limit:
                raise TooLarge(_too_large(f"over {limit}", limit))
            return message

        status = 500
        started_response = False

        async def sending(message: Message) -> None:
            nonlocal status, started_response
            if message["type"] == "http.response.start":
                status, started_response = message["status"], True
            elif method == "HEAD":
                message = {**message, "body": b""}
            await send(message)

        async def cut_short(answer: JSONResponse) -> None:
            """The request ends here: answered, or a stream under way (a tail) ended."""
            with contextlib.suppress(Exception, asyncio.CancelledError):
                if not started_response:
                    await answer(scope, receive, send)
                else:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})

        try:
            route = self._direct(method, path, scope)
            if route is None:
                await self.app(scope, limited, sending)
            else:
                await self._answer_directly(route, scope, limited, sending)
        except ClientDisconnect:  # gone before its body arrived: no one to answer
            status = 499  # nginx's "client closed request", for the metrics
        except asyncio.CancelledError:
            if not self.state.stopping:
                raise
            # the service stopped first (a second Ctrl-C, or a request slower than the
            # grace period): said in one line and answered, not a traceback
            status = 503
            LOG.warning("%s %s: cut short, the service is stopping", method, path)
            message = "the service stopped before the request finished"
            await cut_short(_error(503, message, "SIM:ServiceStopping"))
        except Exception as e:  # a bug of ours: said once, in one line, and answered as JSON
            status = 500
            LOG.error("%s %s: %s", method, path, unexpected(e))
            message = f"{unexpected(e)}; this is a bug in ticdc-sim, please report it"
            await cut_short(_error(500, message, "CDC:ErrInternalServerError"))
        finally:
            route = scope.get("route")
            self.metrics.request(
                method,
                getattr(route, "path", "unmatched"),
                status,
                time.perf_counter() - started,
            )

    def _direct(self, method: str, path: str, scope: Scope) -> APIRoute | None:
        """The DIRECT route the request is for, its path parameters put in `scope` as the
        router puts them (and the route, which the metrics name)."""
        if scope.get("root_path"):
            return None
        for route in self.direct:
            found = route.path_regex.match(path) if method in (route.methods or ()) else None
            if found is not None:
                convert = route.param_convertors
                params = {k: convert[k].convert(v) for k, v in found.groupdict().items()}
                scope.update(route=route, endpoint=route.endpoint, path_params=params)
                return route
        return None

    async def _answer_directly(
        self, route: APIRoute, scope: Scope, receive: Receive, send: Send
    ) -> None:
        try:
            endpoint = cast("Callable[..., Awaitable[Response]]", route.endpoint)
            response = await endpoint(Request(scope, receive), **scope["path_params"])
        except SimError as e:
            response = _answer(e)
        await response(scope, receive, send)

    def _refused(self, path: str, headers: dict[bytes, bytes], over: int | None) -> Response | None:
        # the schema registry's clients read Confluent's error shape
        error = confluent_error if schema_registry.serves(path) else _error
        if over is not None:  # before the token: no work for a request that cannot be served
            message = (
                f"the service has {over} connections or requests at once, its limit"
                " (TICDC_SIM_MAX_HTTP_CONCURRENCY); try again shortly"
            )
            busy = error(503, message, "SIM:TooManyRequests")
            busy.headers["Retry-After"] = "1"
            return busy
        if self.bearer and path != "/" and not path.startswith(_OPEN):
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.bearer):
                message = "a bearer token is required (Authorization: Bearer ...)"
                return error(401, message, "SIM:Unauthorized")
        size = headers.get(b"content-length")
        limit = self.settings.max_body_bytes
        if size is not None and not size.isdigit():
            said = size.decode(errors="replace")
            return error(400, f"Content-Length {said!r} is not a number", "SIM:InvalidRequest")
        if size is not None and int(size) > limit:
            return error(413, _too_large(size.decode(), limit), "SIM:TooLarge")
        return None


def unexpected(e: BaseException) -> str:
    """An exception nothing expected, in one line: what it is and where it was raised."""
    frames = traceback.extract_tb(e.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    text = str(e)
    text = text if len(text) <= 300 else text[:300] + "..."
    return f"unexpected {type(e).__name__}{where}: {text}"


def _too_large(size: str, limit: int) -> str:
    return f"the body is {size} bytes; the limit is {limit} (TICDC_SIM_MAX_BODY_BYTES)"


def default_changefeed(settings: Settings) -> FeedSpec:
    """Changefeed `default` of cluster `default`: TICDC_SIM_DEFAULT_SINK_URI with
    TICDC_SIM_DEFAULT_CONFIG's TOML, checked (`serve` does before it binds anything); an
    error names the variable."""
    try:
        uri = sink_uri(settings.default_sink_uri, settings)
    except ConfigError as e:
        raise SimError(f"TICDC_SIM_DEFAULT_SINK_URI: {e}") from None
    path, toml = settings.default_config, None
    if path is not None:
        try:
            toml = path.read_bytes()
        except OSError as e:
            raise SimError(f"TICDC_SIM_DEFAULT_CONFIG {path}: {e.strerror}") from None
    spec = FeedSpec("default", uri, toml=toml)
    try:
        build_changefeed(spec)
    except ConfigError as e:
        where = f"TICDC_SIM_DEFAULT_CONFIG {path}" if path else "TICDC_SIM_DEFAULT_SINK_URI"
        raise SimError(f"{where}: {e}") from None
    return spec


# Modules a request would import on first use, loaded beside the service's start instead of
# in the first request that needs them (which waited ~70 ms for numpy: FLOAT columns'
# shortest digits, encoders/columnar.py)
WARM_IMPORTS = ("numpy",)


def _warm() -> None:
    for name in WARM_IMPORTS:
        importlib.import_module(name)


def _default_cluster(state: State) -> None:
    cluster = state.new_cluster("default", 0)
    spec = default_changefeed(state.settings)
    state.checked_uri(spec.sink_uri)  # no other changefeed writes its directory
    cluster.add_feed(spec, feed_sink(state), retained(state))


def _error(status: int, message: str, code: str) -> JSONResponse:
    return JSONResponse({"error_msg": message, "error_code": code}, status_code=status)


# SimError kinds and their answers, most specific first: TiCDC's codes where TiCDC has one
_ANSWERS: list[tuple[type[Exception], int, str]] = [
    (ChangefeedNotFound, 404, "CDC:ErrChangeFeedNotExists"),
    (NotFound, 404, "SIM:ErrClusterNotExists"),
    (InvalidParam, 400, "CDC:ErrAPIInvalidParam"),
    (StartTsBeforeGC, 400, "CDC:ErrStartTsBeforeGC"),
    (Conflict, 409, "CDC:ErrChangeFeedAlreadyExists"),
    (TooLarge, 413, "SIM:TooLarge"),
    (Forbidden, 403, "SIM:Forbidden"),
    (ConfigError, 400, "CDC:ErrInvalidReplicaConfig"),
    (SimError, 400, "CDC:ErrAPIInvalidParam"),
]


def _answer(exc: Exception) -> JSONResponse:
    for kind, status, code in _ANSWERS:
        if isinstance(exc, kind):
            return _error(status, str(exc), getattr(exc, "error_code", code))
    raise AssertionError(f"no answer for {type(exc).__name__}")


def _unreadable(cause: BaseException | None) -> JSONResponse | None:
    """A body FastAPI could not read (it says only "There was an error parsing the body"),
    answered for what it was."""
    if isinstance(cause, SimError):  # over the size limit while it arrived
        return _answer(cause)
    if isinstance(cause, RecursionError):
        return _error(400, "the body is not valid JSON: nested too deeply", _INVALID)
    if isinstance(cause, UnicodeDecodeError):
        return _error(400, f"the body is not UTF-8 (byte {cause.start})", _INVALID)
    if isinstance(cause, ValueError):  # such as an integer of more than 4300 digits
        return _error(400, f"the body is not valid JSON: {cause}", _INVALID)
    return None


_INVALID = "CDC:ErrAPIInvalidParam"


def _handlers(app: FastAPI) -> None:
    def answered(request: Request, exc: Exception) -> JSONResponse:
        return _answer(exc)

    for kind, _, _ in _ANSWERS:
        app.add_exception_handler(kind, answered)

    def invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problems = []
        for error in exc.errors():
            loc = error.get("loc", ())
            if error.get("type") == "json_invalid":  # loc: ("body", character offset)
                where = _line_col(exc.body, loc[-1]) if isinstance(exc.body, str) else ""
                reason = error.get("ctx", {}).get("error", "")
                return _error(400, f"the body is not valid JSON{where}: {reason}", _INVALID)
            where = ".".join(str(p) for p in loc)
            problems.append(f"{where}: {error.get('msg', 'invalid')}")
        return _error(422, "; ".join(problems) or "invalid request", _INVALID)

    app.add_exception_handler(RequestValidationError, invalid)

    def http_error(request: Request, exc: Exception) -> Response:
        """Routing's own answers (404 no such path, 405 method, 400 a body FastAPI could not
        read) in the same JSON shape, saying what was wrong; a 405 lists every method of
        the path (Starlette names only the first route's), asking the router itself."""
        assert isinstance(exc, StarletteHTTPException)
        status, path = exc.status_code, request.url.path
        found = _unreadable(exc.__cause__) if status == 400 else None
        if found is not None:
            return found
        if status == 404:
            message = f"no such path: {request.method} {path} (the API is at /docs)"
        elif status == 405 and schema_registry.serves(path):
            return schema_registry.not_allowed(request)
        elif status == 405:
            allowed = ", ".join(m for m in _METHODS if _routed(app, {**request.scope, "method": m}))
            message = f"{request.method} is not allowed on {path}; it takes {allowed}"
        else:
            message = str(exc.detail)
        response = _error(status, message, f"SIM:HTTP{status}")
        if status == 405:
            response.headers["Allow"] = allowed
        elif exc.headers:
            response.headers.update(exc.headers)
        return response

    app.add_exception_handler(StarletteHTTPException, http_error)


_METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")


def _routed(app: FastAPI, scope: Scope) -> bool:
    return any(route.matches(scope)[0] == Match.FULL for route in app.router.routes)


def _line_col(text: str, offset: object) -> str:
    if not isinstance(offset, int):
        return ""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f" at line {line} column {column}"
