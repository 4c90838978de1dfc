"""TiCDC's open API v2 (tiflow `cdc/api/v2/api.go`, `changefeed.go`, `api_helpers.go`,
`model.go`): the paths, JSON field names, checks and error bodies that `cdc cli` and scripts
use to manage changefeeds. A changefeed's `namespace` is the upstream cluster it captures
(`default` unless the simulator API made others): a namespace with no cluster has no
changefeeds, as in TiCDC."""

from __future__ import annotations

import datetime as dt
import logging
import os
import uuid
from typing import Annotated

from fastapi import Query, Request
from starlette.concurrency import run_in_threadpool

from ticdc_sim.cluster import (
    ChangefeedNotFound,
    Cluster,
    Conflict,
    InvalidParam,
    checked_name,
    commit_time,
    update_refused,
)
from ticdc_sim.feed import HELD, Feed, FeedSpec, Problem
from ticdc_sim.service.models import (
    ChangefeedCommonInfo,
    ChangefeedConfig,
    ChangefeedCreate,
    ChangeFeedInfo,
    ChangefeedList,
    ChangefeedStatus,
    Empty,
    RunningError,
    ServerStatus,
)
from ticdc_sim.service.settings import package_version
from ticdc_sim.service.state import api_router, feed_sink, retained, state_of, vetted

_LOG = logging.getLogger("ticdc_sim.service")
router = api_router("/api/v2", "TiCDC open API v2")
Namespace = Annotated[str, Query(description="the upstream cluster (empty: `default`)")]
_SERVER_ID = str(uuid.uuid4())


def _namespace(namespace: str) -> str:
    """tiflow getNamespaceValueWithDefault: empty is `default`."""
    return checked_name("namespace", namespace or "default")


def _lookup(request: Request, namespace: str, changefeed_id: str) -> tuple[Cluster, Feed]:
    """The changefeed a path names, checked first as TiCDC checks it."""
    checked_name("changefeed_id", changefeed_id)
    namespace = _namespace(namespace)
    cluster = state_of(request).registry.clusters.get(namespace)
    if cluster is None:
        raise ChangefeedNotFound(namespace, changefeed_id)
    return cluster, cluster.feed(changefeed_id)


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


def _running_error(request: Request, feed: Feed) -> RunningError | None:
    """tiflow `cdc/api/v2/model.go` RunningError: when it failed, the capture's address (the
    service's own), the error's code (cerror.RFCCode) and its message."""
    if feed.error is None:
        return None
    return _shown(request, Problem(feed.error_code, feed.error, feed.error_time))


def _shown(request: Request, problem: Problem | None) -> RunningError | None:
    if problem is None:
        return None
    settings = state_of(request).settings
    addr = f"{settings.host}:{settings.port}"
    when = commit_time_of_wall(problem.time)
    return RunningError(time=when, addr=addr, code=problem.code, message=problem.message)


def _info(request: Request, cluster: Cluster, feed: Feed) -> ChangeFeedInfo:
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
        error=_running_error(request, feed),
        creator_version="v8.5.0",
        resolved_ts=feed.checkpoint_ts,
        checkpoint_ts=feed.checkpoint_ts,
        checkpoint_time=commit_time(feed.checkpoint_ts),
    )


def commit_time_of_wall(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat()


# tiflow cdc/model/changefeed.go FeedState.IsNeeded: what a list shows without `state`
_LISTED = ("normal", "stopped", "failed", "warning", "pending")


@router.get("/changefeeds")
async def list_changefeeds(
    request: Request,
    namespace: Namespace = "default",
    state: Annotated[
        str, Query(description="only changefeeds in this state; `all`: every one")
    ] = "",
) -> ChangefeedList:
    namespace = _namespace(namespace)
    cluster = state_of(request).registry.clusters.get(namespace)
    feeds = sorted(cluster.feeds.items()) if cluster is not None else []
    items = [
        ChangefeedCommonInfo(
            upstream_id=1,
            namespace=namespace,
            id=feed_id,
            state=feed.state,
            checkpoint_tso=feed.checkpoint_ts,
            checkpoint_time=commit_time(feed.checkpoint_ts),
            error=_running_error(request, feed),
        )
        for feed_id, feed in feeds
        if state == "all" or feed.state == state or (not state and feed.state in _LISTED)
    ]
    return ChangefeedList(total=len(items), items=items)


@router.post("/changefeeds")
async def create_changefeed(request: Request, body: ChangefeedCreate) -> ChangeFeedInfo:
    """A changefeed on the `namespace` cluster: what commits after `start_ts` (0: from
    now on) goes to `sink_uri` as `replica_config` says. Without `changefeed_id`, TiCDC's
    default: a random UUID."""
    state = state_of(request)
    feed_id = checked_name("changefeed_id", body.changefeed_id or str(uuid.uuid4()))
    cluster = state.registry.get(_namespace(body.namespace))
    if feed_id in cluster.feeds:
        raise Conflict(f"changefeed already exists, {feed_id}")

    def add(uri: str) -> Feed:
        config, start, target = body.replica_config or {}, body.start_ts, body.target_ts
        spec = FeedSpec(feed_id, uri, config, start_ts=start, target_ts=target)
        return cluster.add_feed(vetted(state, spec), feed_sink(state), retained(state))

    feed = await run_in_threadpool(state.place, body.sink_uri, None, add)
    return _info(request, cluster, feed)


@router.get("/changefeeds/{changefeed_id}")
async def get_changefeed(
    request: Request, changefeed_id: str, namespace: Namespace = "default"
) -> ChangeFeedInfo:
    return _info(request, *_lookup(request, namespace, changefeed_id))


@router.get("/changefeeds/{changefeed_id}/status")
async def changefeed_status(
    request: Request, changefeed_id: str, namespace: Namespace = "default"
) -> ChangefeedStatus:
    _, feed = _lookup(request, namespace, changefeed_id)
    counts = {t: {str(p): n for p, n in ps.items()} for t, ps in feed.log.counts().items()}
    return ChangefeedStatus(
        state=feed.state,
        resolved_ts=feed.checkpoint_ts,
        checkpoint_ts=feed.checkpoint_ts,
        last_error=_running_error(request, feed),
        last_warning=_shown(request, feed.last_warning),
        messages=counts,
        warnings=[str(w) for w in feed.warnings],
    )


@router.put("/changefeeds/{changefeed_id}")
async def update_changefeed(
    request: Request, changefeed_id: str, body: ChangefeedConfig, namespace: Namespace = "default"
) -> ChangeFeedInfo:
    """A stopped changefeed's sink URI, replica config and target_ts (TiCDC refuses
    running ones; the rest of the body is not changed); it stays stopped, and resuming
    replicates what committed meanwhile into the new sink."""
    state = state_of(request)
    cluster, old = _lookup(request, namespace, changefeed_id)
    if old.state not in HELD:
        raise update_refused()
    target_ts = body.target_ts or old.spec.target_ts
    if target_ts and target_ts <= old.spec.start_ts:
        raise InvalidParam(
            f"can not update target_ts:{target_ts} less than start_ts:{old.spec.start_ts}",
            "CDC:ErrChangefeedUpdateRefused",
        )

    def replace(uri: str) -> Feed:
        config = body.replica_config
        spec = FeedSpec(
            changefeed_id,
            uri,
            config if config is not None else old.spec.replica_config,
            start_ts=old.spec.start_ts,
            target_ts=target_ts,
        )
        return cluster.replace_feed(vetted(state, spec), feed_sink(state), retained(state))

    uri, name = body.sink_uri or old.spec.sink_uri, f"{cluster.id}/{changefeed_id}"
    feed = await run_in_threadpool(state.place, uri, name, replace)
    return _info(request, cluster, feed)


@router.delete("/changefeeds/{changefeed_id}")
async def remove_changefeed(
    request: Request, changefeed_id: str, namespace: Namespace = "default"
) -> Empty:
    """Remove it: what it holds is sent, then its sink is closed; the service's log says
    what it sent where and what remains on disk. One that does not exist is already
    removed: `{}`, as TiCDC answers."""
    try:
        cluster, _ = _lookup(request, namespace, changefeed_id)
    except ChangefeedNotFound:
        return Empty()
    said = await run_in_threadpool(cluster.remove_feed, changefeed_id)
    for line in said:
        _LOG.info("changefeed %s/%s removed: %s", cluster.id, changefeed_id, line)
    return Empty()


@router.post("/changefeeds/{changefeed_id}/pause")
async def pause_changefeed(
    request: Request, changefeed_id: str, namespace: Namespace = "default"
) -> Empty:
    # the feed's lock is held while it sends: never waited for on the event loop
    await run_in_threadpool(_lookup(request, namespace, changefeed_id)[1].pause)
    return Empty()


@router.post("/changefeeds/{changefeed_id}/resume")
async def resume_changefeed(
    request: Request, changefeed_id: str, namespace: Namespace = "default"
) -> Empty:
    """Resume: what committed while it was stopped is replicated now, in order (one whose
    sink failed starts again from its checkpoint)."""
    cluster, _ = _lookup(request, namespace, changefeed_id)
    await run_in_threadpool(cluster.resume_feed, changefeed_id)
    return Empty()
