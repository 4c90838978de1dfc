"""The HTTP service: TiCDC's open API v2, the simulator's own API under /sim/v1, the
playground page, and /livez, /readyz, /metrics. `create_app(settings)` wires it; the
routes live in `service/routes/`, one module per resource."""

from __future__ import annotations

import hmac
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool

from ticdc_sim.errors import ConfigError, SimError, SQLError
from ticdc_sim.service import routes
from ticdc_sim.service.guard import Forbidden
from ticdc_sim.service.metrics import Metrics
from ticdc_sim.service.mysql import start as start_mysql
from ticdc_sim.service.runtime import Cluster, Conflict, FeedSpec, NotFound, Registry
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
        if settings.mysql_port and settings.default_cluster:
            mysql = await start_mysql(settings, lambda: state.registry.get("default"))
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

    @app.middleware("http")
    async def guard(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        path = request.url.path
        if settings.token and path != "/" and not path.startswith(_OPEN):
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {settings.token}".encode()):
                message = "a bearer token is required (Authorization: Bearer ...)"
                return _error(401, message, "SIM:Unauthorized")
        size = request.headers.get("content-length")
        if size is not None and (not size.isdigit() or int(size) > settings.max_body_bytes):
            return _error(
                413,
                f"the body is {size} bytes; the limit is {settings.max_body_bytes}"
                " (TICDC_SIM_MAX_BODY_BYTES)",
                "SIM:BodyTooLarge",
            )
        response = await call_next(request)
        route = request.scope.get("route")
        state.metrics.request(
            request.method,
            getattr(route, "path", "unmatched"),
            response.status_code,
            time.perf_counter() - started,
        )
        return response

    _handlers(app)
    return app


def _default_cluster(state: State) -> None:
    cluster = state.registry.add(
        Cluster("default", 0, state.settings.lock_wait_s, state.settings.max_txn_rows)
    )
    spec = FeedSpec("default", state.checked_uri(state.settings.default_sink_uri))
    cluster.add_feed(spec, feed_sink(state), state.settings.retain_records)


def _error(status: int, message: str, code: str) -> JSONResponse:
    return JSONResponse({"error_msg": message, "error_code": code}, status_code=status)


def _handlers(app: FastAPI) -> None:
    cases: list[tuple[type[Exception], int, str]] = [
        (NotFound, 404, "CDC:ErrChangeFeedNotExists"),
        (Conflict, 409, "CDC:ErrChangeFeedAlreadyExists"),
        (Forbidden, 403, "SIM:Forbidden"),
        (ConfigError, 400, "CDC:ErrInvalidReplicaConfig"),
        (SQLError, 409, "SIM:LockWaitTimeout"),
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
