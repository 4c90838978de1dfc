"""The HTTP service: TiCDC's open API v2, the simulator's own API under /sim/v1, the
playground page, and /livez, /readyz, /metrics. `create_app(settings)` wires it; the
routes live in `service/routes/`, one module per resource."""

from __future__ import annotations

import hmac
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ticdc_sim.errors import ConfigError, SimError
from ticdc_sim.service import routes
from ticdc_sim.service.guard import Forbidden
from ticdc_sim.service.metrics import Metrics
from ticdc_sim.service.mysql import start as start_mysql
from ticdc_sim.service.runtime import (
    Conflict,
    FeedSpec,
    InvalidParam,
    NotFound,
    Registry,
    StartTsBeforeGC,
    TooLarge,
)
from ticdc_sim.service.settings import Settings, package_version
from ticdc_sim.service.state import State, feed_sink

STATIC = Path(__file__).parent / "static"
# paths anyone may read, token or not: probes, and the page (its API calls carry the token)
_OPEN = ("/livez", "/readyz", "/static/", "/favicon.ico")


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    state = State(settings, Registry(), Metrics())
    state.metrics.watch(state.registry)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.default_cluster:
            await run_in_threadpool(_default_cluster, state)
        mysql = None
        if settings.mysql_port:
            mysql = await start_mysql(settings, state.registry)
        state.ready = True
        try:
            yield
        finally:
            state.ready = False
            if mysql is not None:
                mysql.close()
                await mysql.wait_closed()
            await run_in_threadpool(state.registry.close)  # every sink flushed

    app = FastAPI(
        title="ticdc-sim",
        version=package_version(),
        summary="A simulated TiDB cluster with TiCDC changefeeds: SQL in, TiCDC's messages out.",
        lifespan=lifespan,
    )
    app.state.sim = state
    for router in routes.ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def index() -> RedirectResponse:
        return RedirectResponse("/static/index.html")

    app.add_middleware(Guard, settings=settings, metrics=state.metrics)
    _handlers(app)
    return app


class Guard:
    """Every request: the bearer token, the body-size limit (on what arrives, so a chunked
    body is held to it too) and the request metrics. Plain ASGI: Starlette's
    BaseHTTPMiddleware costs a task and a stream per request."""

    def __init__(self, app: ASGIApp, settings: Settings, metrics: Metrics) -> None:
        self.app, self.settings, self.metrics = app, settings, metrics
        self.bearer = f"Bearer {settings.token}".encode() if settings.token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        path: str = scope["path"]
        headers = dict(scope["headers"])
        refused = self._refused(path, headers)
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

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, limited, sending)
        finally:
            route = scope.get("route")
            self.metrics.request(
                scope["method"],
                getattr(route, "path", "unmatched"),
                status,
                time.perf_counter() - started,
            )

    def _refused(self, path: str, headers: dict[bytes, bytes]) -> JSONResponse | None:
        if self.bearer and path != "/" and not path.startswith(_OPEN):
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.bearer):
                message = "a bearer token is required (Authorization: Bearer ...)"
                return _error(401, message, "SIM:Unauthorized")
        size = headers.get(b"content-length")
        limit = self.settings.max_body_bytes
        if size is not None and (not size.isdigit() or int(size) > limit):
            return _error(413, _too_large(size.decode(errors="replace"), limit), "SIM:TooLarge")
        return None


def _too_large(size: str, limit: int) -> str:
    return f"the body is {size} bytes; the limit is {limit} (TICDC_SIM_MAX_BODY_BYTES)"


def _default_cluster(state: State) -> None:
    cluster = state.new_cluster("default", 0)
    spec = FeedSpec("default", state.checked_uri(state.settings.default_sink_uri))
    cluster.add_feed(spec, feed_sink(state), state.settings.retain_records)


def _error(status: int, message: str, code: str) -> JSONResponse:
    return JSONResponse({"error_msg": message, "error_code": code}, status_code=status)


def _handlers(app: FastAPI) -> None:
    cases: list[tuple[type[Exception], int, str]] = [
        (NotFound, 404, "CDC:ErrChangeFeedNotExists"),
        (InvalidParam, 400, "CDC:ErrAPIInvalidParam"),
        (StartTsBeforeGC, 400, "CDC:ErrStartTsBeforeGC"),
        (Conflict, 409, "CDC:ErrChangeFeedAlreadyExists"),
        (TooLarge, 413, "SIM:TooLarge"),
        (Forbidden, 403, "SIM:Forbidden"),
        (ConfigError, 400, "CDC:ErrInvalidReplicaConfig"),
        (SimError, 400, "CDC:ErrAPIInvalidParam"),
    ]
    for kind, status, code in cases:

        def handler(
            request: Request, exc: Exception, status: int = status, code: str = code
        ) -> JSONResponse:
            return _error(status, str(exc), getattr(exc, "error_code", code))

        app.add_exception_handler(kind, handler)

    def invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problems = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error.get("loc", ()))
            problems.append(f"{where}: {error.get('msg', 'invalid')}")
        return _error(422, "; ".join(problems) or "invalid request", "CDC:ErrAPIInvalidParam")

    app.add_exception_handler(RequestValidationError, invalid)

    def http_error(request: Request, exc: Exception) -> JSONResponse:
        """Routing's own answers (404 no such path, 405 method) in the same JSON shape; a
        405 lists every method of the path (Starlette names only the first route's)."""
        assert isinstance(exc, StarletteHTTPException)
        response = _error(exc.status_code, str(exc.detail), f"SIM:HTTP{exc.status_code}")
        if exc.status_code == 405:
            path = request.url.path
            routes = [r for r in app.routes if isinstance(r, APIRoute) and r.path_regex.match(path)]
            response.headers["Allow"] = ", ".join(
                sorted({m for r in routes for m in r.methods or ()})
            )
        elif exc.headers:
            response.headers.update(exc.headers)
        return response

    app.add_exception_handler(StarletteHTTPException, http_error)
