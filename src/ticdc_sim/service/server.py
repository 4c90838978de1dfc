"""`ticdc-sim serve`: the app on uvicorn, the MySQL port in the same event loop, a banner
saying where everything is and, once stopped (Ctrl-C, SIGTERM), what each changefeed flushed
where."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import errno
import os
import socket
import sys
from types import FrameType
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from ticdc_sim.errors import SimError
from ticdc_sim.service.app import OVER_LIMIT, create_app, default_changefeed
from ticdc_sim.service.settings import Settings
from ticdc_sim.service.state import State


def banner(settings: Settings) -> str:
    http = f"http://{settings.host}:{settings.port}"
    lines = [
        "ticdc-sim is serving a simulated TiDB cluster (`default`) with a TiCDC changefeed",
        f"  playground      {http}/",
        f"  API docs        {http}/docs   (TiCDC open API v2 under /api/v2, ours under /sim/v1)",
        f"  changefeed      {settings.default_sink_uri}  (under {settings.data_dir.resolve()})"
        + (f", config {settings.default_config}" if settings.default_config else ""),
        f"  SQL over HTTP   curl -s {http}/sim/v1/clusters/default/sql"
        " --data-binary 'CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);'"
        + (" -H 'Authorization: Bearer $TICDC_SIM_TOKEN'" if settings.token else ""),
        f"  messages        curl -s '{http}/sim/v1/clusters/default/changefeeds/default/messages'",
    ]
    if settings.mysql_port:
        lines.append(
            f"  MySQL protocol  mysql -h {settings.host} -P {settings.mysql_port} -u root test"
        )
    return "\n".join(lines)


def stopped(state: State) -> str:
    """What shutting down flushed where, one changefeed a line."""
    lines = ["ticdc-sim stopped; every changefeed flushed and closed:"]
    lines += [f"  {line}" for line in state.closed] or ["  (no changefeed)"]
    return "\n".join(lines)


def run(overrides: dict[str, Any]) -> None:
    settings = Settings(**overrides)
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        reason = "not a directory" if isinstance(e, FileExistsError) else e.strerror
        raise SimError(f"--data-dir (TICDC_SIM_DATA_DIR) {settings.data_dir}: {reason}") from None
    if settings.default_cluster:
        default_changefeed(settings)  # a bad default changefeed is said before anything starts
    # both ports bound before the banner names them: a port in use is one clear error, and
    # port 0 is named as the port the system gave
    http = _listen(settings.host, settings.port, "--port (TICDC_SIM_PORT)")
    mysql = None
    if settings.mysql_port:
        mysql = _listen(settings.host, settings.mysql_port, "--mysql-port (TICDC_SIM_MYSQL_PORT)")
    bound = {"port": http.getsockname()[1]}
    if mysql is not None:
        bound["mysql_port"] = mysql.getsockname()[1]
    settings = settings.model_copy(update=bound)
    app = create_app(settings, mysql)
    print(banner(settings), file=sys.stderr, flush=True)
    state: State = app.state.sim
    config = uvicorn.Config(
        app,
        http=_limited(settings.max_http_concurrency),
        log_level="warning",
        log_config=_logging(),
        # uvicorn's access lines are INFO, never shown at "warning", yet built per request
        # while its access logger has a handler; X-Forwarded-For is read by nothing here
        access_log=False,
        proxy_headers=False,
        timeout_graceful_shutdown=GRACE_S,
    )
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C while starting
        _Server(config, state).run(sockets=[http])
    print(stopped(state), file=sys.stderr, flush=True)
    if state.close_error is not None:
        raise SimError(f"shutting down: {state.close_error}")


GRACE_S = 10  # how long a stop waits for a request still under way


class _Server(uvicorn.Server):
    """uvicorn's server, stopped as a service should be. The first signal ends what is open
    (`State.stop`: tails at once, scripts and MySQL sessions at their next statement), so
    the wait for connections is short; a request still under way after `GRACE_S` (a body
    that never arrives) is cancelled, and answered 503. A second signal ends the wait at
    once. Either way every sink is then flushed and closed (uvicorn skips that on a
    second signal), and the signal is not raised again (uvicorn does: SIGTERM would end
    the process before it said what it flushed, Ctrl-C with tracebacks)."""

    def __init__(self, config: uvicorn.Config, state: State) -> None:
        super().__init__(config)
        self.state = state

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.force_exit = self.should_exit
        self.should_exit = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await asyncio.to_thread(self.state.stop)  # waits for statements under way
        await super().shutdown(sockets)
        if self.force_exit:
            for task in self.server_state.tasks:
                task.cancel()
            await self.lifespan.shutdown()


def _limited(limit: int) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol with its `limit_concurrency` (connections or requests at
    once; TICDC_SIM_MAX_HTTP_CONCURRENCY), the refusal answered by the app in the
    service's error shape (`Guard`): uvicorn's own is a plain-text 503. A request is over
    the limit when more than `limit` connections are open or requests under way, itself
    included (uvicorn refuses at `limit`, so `limit` - 1 are served)."""

    class Limited(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            app: ASGIApp = self.app  # type: ignore[has-type]

            async def limited(scope: Scope, receive: Receive, send: Send) -> None:
                if len(self.connections) > limit or len(self.tasks) > limit:
                    scope = {**scope, OVER_LIMIT: limit}
                await app(scope, receive, send)

            self.app = limited

    return Limited


def _listen(host: str, port: int, option: str) -> socket.socket:
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise SimError(f"--host (TICDC_SIM_HOST): {host}: {e.strerror}") from None
    try:
        return socket.create_server((host, port))
    except OSError as e:
        if e.errno == errno.EADDRNOTAVAIL:  # an address, but none of this machine's
            option = "--host (TICDC_SIM_HOST)"
        reason = "in use" if e.errno == errno.EADDRINUSE else os.strerror(e.errno or 0)
        raise SimError(f"{option}: cannot listen on {host}:{port}: {reason}") from None


def _logging() -> dict[str, Any]:
    """uvicorn's logging, with the service's own logger (a request that hit a bug) beside
    uvicorn's, in its format."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["ticdc_sim"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config
