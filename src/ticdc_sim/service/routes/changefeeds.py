"""TiCDC's open API v2 (tiflow `cdc/api/v2/api.go`, `changefeed.go`, `model.go`): the paths,
JSON field names and error bodies that `cdc cli` and scripts use to manage changefeeds.
A changefeed's `namespace` is the upstream cluster it captures (`default` unless the
simulator API made others)."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from ticdc_sim.service.models import (
    ChangefeedCommonInfo,
    ChangefeedConfig,
    ChangefeedCreate,
    ChangeFeedInfo,
    ChangefeedList,
    ChangefeedStatus,
    Empty,
    Error,
    RunningError,
    ServerStatus,
)
from ticdc_sim.service.runtime import (
    Cluster,
    Conflict,
    Feed,
    FeedSpec,
    InvalidParam,
    commit_time,
)
from ticdc_sim.service.settings import package_version
from ticdc_sim.service.state import State, feed_sink, state_of

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": Error} for code in (400, 401, 403, 404, 409, 413, 422)
}
router = APIRouter(prefix="/api/v2", tags=["TiCDC open API v2"], responses=ERRORS)
Namespace = Annotated[str, Query(description="the upstream cluster")]
_SERVER_ID = str(uuid.uuid4())
_NAMES = itertools.count(1)


@router.get("/health")
async def health() -> Empty:
    return Empty()


@router.get("/status")
async def status(request: Request) -> ServerStatus:
    return ServerStatus(
        version=f"v8.5.0-ticdc-sim-{package_version()}",
        git_hash="ticdc-sim",
        id=_SERVER_ID,
        cluster_id="default",
        pid=os.getpid(),
        is_owner=True,
        liveness=0,
    )


def _running_error(feed: Feed) -> RunningError | None:
    if feed.error is None:
        return None
    return RunningError(addr="127.0.0.1:8300", code="CDC:ErrSinkInvalid", message=feed.error)


def _info(cluster: Cluster, feed: Feed) -> ChangeFeedInfo:
    spec = feed.spec
    return ChangeFeedInfo(
        upstream_id=1,
        namespace=cluster.id,
        id=spec.id,
        sink_uri=spec.sink_uri,
        create_time=commit_time_of_wall(feed.created),
        start_ts=spec.start_ts,
        target_ts=spec.target_ts,
        config=spec.replica_config,
        state=feed.state,
        error=_running_error(feed),
        creator_version="v8.5.0",
        resolved_ts=feed.checkpoint_ts,
        checkpoint_ts=feed.checkpoint_ts,
        checkpoint_time=commit_time(feed.checkpoint_ts) if feed.checkpoint_ts else "",
    )


def commit_time_of_wall(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat()


@router.get("/changefeeds")
async def list_changefeeds(request: Request, namespace: Namespace = "default") -> ChangefeedList:
    cluster = state_of(request).registry.get(namespace)
    items = [
        ChangefeedCommonInfo(
            upstream_id=1,
            namespace=cluster.id,
            id=feed_id,
            state=feed.state,
            checkpoint_tso=feed.checkpoint_ts,
            checkpoint_time=commit_time(feed.checkpoint_ts) if feed.checkpoint_ts else "",
            error=_running_error(feed),
        )
        for feed_id, feed in sorted(cluster.feeds.items())
    ]
    return ChangefeedList(total=len(items), items=items)


def _spec(state: State, body: ChangefeedCreate, feed_id: str) -> FeedSpec:
    uri = state.checked_uri(body.sink_uri)
    return FeedSpec(
        feed_id, uri, body.replica_config or {}, start_ts=body.start_ts, target_ts=body.target_ts
    )


@router.post("/changefeeds")
async def create_changefeed(request: Request, body: ChangefeedCreate) -> ChangeFeedInfo:
    """A changefeed on the `namespace` cluster: what commits after `start_ts` (0: from
    now on) goes to `sink_uri` as `replica_config` says."""
    state = state_of(request)
    cluster = state.registry.get(body.namespace)
    feed_id = body.changefeed_id or f"changefeed-{next(_NAMES)}"
    if feed_id in cluster.feeds:
        raise Conflict(f"changefeed {feed_id!r} already exists")
    spec = _spec(state, body, feed_id)
    settings = state.settings
    feed = await run_in_threadpool(
        cluster.add_feed, spec, feed_sink(state), settings.retain_records
    )
    return _info(cluster, feed)


@router.get("/changefeeds/{changefeed_id}")
async def get_changefeed(
    request: Request, changefeed_id: str, namespace: Namespace = "default"
) -> ChangeFeedInfo:
    cluster = state_of(request).registry.get(namespace)
    return _info(cluster, cluster.feed(changefeed_id))


@router.get("/changefeeds/{changefeed_id}/status")
async def changefeed_status(
    request: Request, changefeed_id: str, namespace: Namespace = "default"
) -> ChangefeedStatus:
    feed = state_of(request).registry.get(namespace).feed(changefeed_id)
    counts = {t: {str(p): n for p, n in ps.items()} for t, ps in feed.log.counts().items()}
    return ChangefeedStatus(
        state=feed.state,
        resolved_ts=feed.checkpoint_ts,
        checkpoint_ts=feed.checkpoint_ts,
        last_error=_running_error(feed),
        messages=counts,
    )


@router.put("/changefeeds/{changefeed_id}")
async def update_changefeed(
    request: Request, changefeed_id: str, body: ChangefeedConfig, namespace: Namespace = "default"
) -> ChangeFeedInfo:
    """A stopped changefeed's sink URI and replica config (TiCDC refuses running ones); it
    stays stopped, and resuming replicates what committed meanwhile into the new sink."""
    state = state_of(request)
    cluster = state.registry.get(namespace)
    old = cluster.feed(changefeed_id)
    if old.state != "stopped":
        raise Conflict("can only update changefeed config when it is stopped")
    spec = FeedSpec(
        changefeed_id,
        state.checked_uri(body.sink_uri) if body.sink_uri else old.spec.sink_uri,
        body.replica_config if body.replica_config is not None else old.spec.replica_config,
        start_ts=old.spec.start_ts,
        target_ts=body.target_ts or old.spec.target_ts,
    )
    if spec.target_ts and spec.target_ts <= spec.start_ts:
        raise InvalidParam(
            f"can not update target_ts:{spec.target_ts} less than start_ts:{spec.start_ts}"
        )
    feed = await run_in_threadpool(
        cluster.replace_feed, spec, feed_sink(state), state.settings.retain_records
    )
    return _info(cluster, feed)


@router.delete("/changefeeds/{changefeed_id}")
async def remove_changefeed(
    request: Request, changefeed_id: str, namespace: Namespace = "default"
) -> Empty:
    """Remove it: what it holds is sent, then its sink is closed (jsonl files land)."""
    await run_in_threadpool(state_of(request).registry.get(namespace).remove_feed, changefeed_id)
    return Empty()


@router.post("/changefeeds/{changefeed_id}/pause")
async def pause_changefeed(
    request: Request, changefeed_id: str, namespace: Namespace = "default"
) -> Empty:
    state_of(request).registry.get(namespace).feed(changefeed_id).pause()
    return Empty()


@router.post("/changefeeds/{changefeed_id}/resume")
async def resume_changefeed(
    request: Request, changefeed_id: str, namespace: Namespace = "default"
) -> Empty:
    """Resume: what committed while it was stopped is replicated now, in order."""
    feed = state_of(request).registry.get(namespace).feed(changefeed_id)
    await run_in_threadpool(feed.resume)
    return Empty()
