"""What every route reaches: the settings, the clusters, the metrics; and the one way a
changefeed gets its sink (checked against the settings first)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastapi import APIRouter, Depends, Request, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer

from ticdc_sim.cluster import Cluster, Conflict, InvalidParam
from ticdc_sim.config import Changefeed
from ticdc_sim.encoders.registry import Limits
from ticdc_sim.errors import ConfigError
from ticdc_sim.feed import FeedSpec, Retry, build_changefeed
from ticdc_sim.feedlog import Retain
from ticdc_sim.service import guard
from ticdc_sim.service.metrics import Metrics
from ticdc_sim.service.models import Error
from ticdc_sim.service.registry import Registry, default_open_sink
from ticdc_sim.service.settings import Settings
from ticdc_sim.service.turns import LoopTurns
from ticdc_sim.sinks import Sink, overlap

T = TypeVar("T")

# what every API route may answer besides its result, in the OpenAPI document
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": Error} for code in (400, 401, 403, 404, 409, 413, 422)
}

# the bearer token in the OpenAPI document, so /docs can send it ("Authorize"); the Guard
# middleware checks it, before any route runs
BEARER = [
    Depends(HTTPBearer(auto_error=False, description="TICDC_SIM_TOKEN, if the service has one"))
]


def api_router(prefix: str, tag: str) -> APIRouter:
    """A router of the API: its errors and the token documented, bodies read as JSON."""
    return APIRouter(
        prefix=prefix, tags=[tag], responses=_ERRORS, dependencies=BEARER, route_class=JSONBody
    )


class JSONBody(APIRoute):
    """A route whose body is read as JSON whatever its Content-Type says, as TiCDC's (gin's
    `BindJSON`) is: TiCDC's own docs send `curl -d '{...}'`, which says form-encoded."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if self.body_field is None:  # no body to read (or one the route reads itself)
            return handler

        async def as_json(request: Request) -> Response:
            headers = [(k, v) for k, v in request.scope["headers"] if k != b"content-type"]
            scope = {**request.scope, "headers": [*headers, (b"content-type", _JSON)]}
            return await handler(Request(scope, request.receive))

        return as_json


_JSON = b"application/json"


@dataclass
class State:
    settings: Settings
    registry: Registry
    metrics: Metrics
    ready: bool = False
    stopping: bool = False  # a tail ends, a script stops before its next statement
    closed: list[str] = field(default_factory=list)  # at shutdown: what went where
    close_error: str | None = None
    placing: threading.Lock = field(default_factory=threading.Lock)  # see `place`
    turns: LoopTurns = field(default_factory=LoopTurns)  # for statements run on the loop

    def stop(self) -> None:
        """The service is stopping: what is open ends soon (tails at once, scripts and
        sessions at their next statement), so the shutdown that follows need not wait
        for clients."""
        self.stopping = True
        self.registry.stop()

    def new_cluster(self, cluster_id: str, seed: int) -> Cluster:
        settings = self.settings
        cluster = Cluster(
            cluster_id,
            seed,
            settings.lock_wait_s,
            settings.max_txn_rows,
            settings.history_events,
            settings.history_bytes,
            settings.max_changefeeds,
            registry_limits=Limits(
                schema_bytes=settings.max_schema_bytes,
                subjects=settings.max_subjects,
                subject_versions=settings.max_subject_versions,
                schemas=settings.max_schemas,
                setting="TICDC_SIM_MAX_{}",
            ),
            retry=Retry(
                settings.backoff_init_s, settings.backoff_max_s, settings.error_stuck_s or None
            ),
        )
        return self.registry.add(cluster)

    def place(self, uri: str, changefeed: str | None, build: Callable[[str], T]) -> T:
        """`build` a changefeed on sink URI `uri` once it is checked (`checked_uri`), both
        under one lock: two requests naming one directory cannot both pass the check
        before either has built its changefeed."""
        with self.placing:
            return build(self.checked_uri(uri, changefeed))

    def checked_uri(self, uri: str, changefeed: str | None = None) -> str:
        """The sink URI a changefeed (`changefeed`: "cluster/id" of one being updated) may
        use: within the settings' bounds, and no directory another changefeed writes."""
        with _sink_uri_invalid():
            checked = guard.sink_uri(uri, self.settings)
            folder = guard.directory(checked)
        if folder is not None:
            for cluster in self.registry:
                for feed_id, feed in list(cluster.feeds.items()):
                    theirs = guard.directory(feed.spec.sink_uri)
                    name = f"{cluster.id}/{feed_id}"
                    if theirs is not None and name != changefeed and overlap(folder, theirs):
                        raise Conflict(
                            f"{theirs} is written by changefeed {name}: a sink directory has"
                            " one changefeed",
                            "SIM:ErrSinkInUse",
                        )
        return checked


def vetted(state: State, spec: FeedSpec) -> FeedSpec:
    """`spec` once what it makes the service reach before its sink opens is allowed (its
    schema registry: the changefeed GETs it as it is built)."""
    guard.schema_registry(build_changefeed(spec), state.settings)
    return spec


def retained(state: State) -> Retain:
    """What a service changefeed's log keeps for reading."""
    return Retain(state.settings.retain_records, state.settings.retain_bytes)


def feed_sink(state: State) -> Callable[[Changefeed], Sink]:
    """How a service changefeed opens its sink: checked against the settings; its files
    rotate and are capped at TICDC_SIM_FILE_RETAIN_BYTES (docs/service.md, File sinks)."""

    def make(feed: Changefeed) -> Sink:
        guard.changefeed(feed, state.settings)
        with _sink_uri_invalid():
            settings = state.settings
            return default_open_sink(feed, settings.file_retain_bytes, settings.kafka_queue_bytes)

    return make


@contextmanager
def _sink_uri_invalid() -> Iterator[None]:
    """A sink URI that cannot be read, or a sink that cannot open: TiCDC's ErrSinkURIInvalid
    (a ConfigError is a replica config's otherwise)."""
    try:
        yield
    except ConfigError as e:
        raise InvalidParam(str(e), "CDC:ErrSinkURIInvalid") from None


def state_of(request: Request) -> State:
    found: State = request.app.state.sim
    return found
