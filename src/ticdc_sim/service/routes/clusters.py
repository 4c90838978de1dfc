"""The simulator's own API, /sim/v1: upstream clusters, SQL on them, and what their
changefeeds sent (pages, a live tail as Server-Sent Events), faults and checkpoints."""

from __future__ import annotations

import asyncio
import base64
import codecs
import email.message
import functools
import itertools
from collections.abc import AsyncIterator
from typing import Annotated

import orjson
from fastapi import Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from ticdc_sim.cluster import (
    LOOP_BUDGET_S,
    BadRequest,
    Cluster,
    Execution,
    Outcome,
    Script,
    TooLarge,
)
from ticdc_sim.errors import SimError
from ticdc_sim.feed import Feed
from ticdc_sim.generator.sql.script import decode_script
from ticdc_sim.jsonout import decoded_record
from ticdc_sim.service.models import (
    CheckpointResult,
    ClusterCreate,
    ClusterInfo,
    ExecutionResult,
    FaultRequest,
    FaultResult,
    Message,
    MessagePage,
    SQLRequest,
    cell,
    jsonable,
    printable,
)
from ticdc_sim.service.state import api_router, state_of
from ticdc_sim.sinks import Record

router = api_router("/sim/v1/clusters", "simulator")
_NAMES = itertools.count(1)


def _info(cluster: Cluster) -> ClusterInfo:
    return ClusterInfo(
        id=cluster.id,
        seed=cluster.seed,
        created=cluster.created,
        changefeeds=sorted(cluster.feeds),
        statements=cluster.statements,
        transactions=cluster.transactions,
    )


@router.post("", status_code=201)
async def create_cluster(request: Request, body: ClusterCreate) -> ClusterInfo:
    """A new upstream cluster: its own catalog, data, clock and seed, no changefeed yet
    (create them with POST /api/v2/changefeeds, `namespace` = the cluster's id)."""
    state = state_of(request)
    name = body.id or f"cluster-{next(_NAMES)}"
    while body.id is None and name in state.registry.clusters:
        name = f"cluster-{next(_NAMES)}"
    return _info(state.new_cluster(name, body.seed))


@router.get("")
async def list_clusters(request: Request) -> list[ClusterInfo]:
    return [_info(c) for c in state_of(request).registry]


@router.get("/{cluster_id}")
async def get_cluster(request: Request, cluster_id: str) -> ClusterInfo:
    return _info(state_of(request).registry.get(cluster_id))


@router.delete("/{cluster_id}", status_code=204)
async def delete_cluster(request: Request, cluster_id: str) -> Response:
    """The cluster and its changefeeds go; every sink is flushed and closed first."""
    await run_in_threadpool(state_of(request).registry.remove, cluster_id)
    return Response(status_code=204)


_SQL_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "text/plain": {"schema": {"type": "string"}, "example": "INSERT INTO t VALUES (1);"},
            "application/json": {"schema": SQLRequest.model_json_schema()},
        },
    }
}


@router.post("/{cluster_id}/sql", openapi_extra=_SQL_BODY, response_model=ExecutionResult)
async def execute(request: Request, cluster_id: str) -> Response:
    """Run a script as one client session would: statements in order, stopping at the first
    error (`ok` false; what committed before it stays committed, an open transaction is
    rolled back). The changefeeds get what committed, as TiCDC would."""
    state = state_of(request)
    cluster = state.registry.get(cluster_id)
    sql = await _sql(request)
    settings = state.settings
    script = Script(cluster, sql, "request.sql", settings.max_statements, settings.request_time_s)
    async with state.turns.at_once(cluster, len(sql)) as now:
        if now:  # on the event loop for a while: the rest, if any, on a thread
            script.run(LOOP_BUDGET_S)
    if not script.done:
        await run_in_threadpool(script.run)
    run = script.result()
    _within(run, settings.max_result_bytes)
    # serialised here, once: the result is already the response model
    return Response(ExecutionResult.of(run).model_dump_json(), media_type="application/json")


class ResultTooLarge(TooLarge):
    error_code = "SIM:ResultTooLarge"


def _within(run: Execution, limit: int) -> None:
    """ResultTooLarge when the answer's result rows (as JSON) pass `limit`, said before
    the answer is built: which statement passed it, the limit, and what the script
    committed all the same (an error must not hide a commit)."""
    size = 0
    for number, outcome in enumerate(run.outcomes, 1):
        for row in outcome.rows or ():
            size += len(orjson.dumps([cell(v) for v in row], default=str))
            if size > limit:
                raise ResultTooLarge(_too_large(run, number, outcome, limit))


def _too_large(run: Execution, number: int, outcome: Outcome, limit: int) -> str:
    statement = printable(outcome.statement)
    statement = statement if len(statement) <= 80 else statement[:77] + "..."
    said = (
        f"the result rows of statement {number} (line {outcome.line}, column"
        f" {outcome.column}: {statement}) take the answer over {limit} bytes"
        " (TICDC_SIM_MAX_RESULT_BYTES); select fewer rows (LIMIT), or read them over the"
        " MySQL port, which sends rows as they go"
    )
    done = "ran to its end" if not run.failed else "stopped at an error"
    if not run.committed:
        return f"{said}. The script {done}; it committed nothing"
    commits = ", ".join(str(c.commit_ts) for c in run.committed)
    count = len(run.committed)
    return (
        f"{said}. The script {done}; what it committed stays committed:"
        f" {count} transaction{'s' if count > 1 else ''} (commit_ts {commits})"
    )


async def _sql(request: Request) -> str:
    """The script of a request: JSON `{"sql": ...}`, or the body itself, in the charset its
    Content-Type names (UTF-8 unless it says; `binary`: its bytes as a script file's)."""
    body = await request.body()
    kind, charset = _content_type(request.headers.get("content-type", "text/plain"))
    if kind == "application/json":
        try:
            return SQLRequest.model_validate_json(body).sql
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(map(str, p['loc']))}: {p['msg']}" if p["loc"] else p["msg"]
                for p in e.errors()
            )
            raise BadRequest(f"the JSON body: {problems}") from None
    # curl --data-binary sends form-encoded by default: the body is still the script
    if kind not in ("text/plain", "application/sql", "application/x-www-form-urlencoded"):
        raise BadRequest(f'send the SQL as text/plain or as JSON {{"sql": ...}}, not {kind}')
    if charset.lower() == "binary":  # bytes as a script file's are read (a mysqldump's blobs)
        return decode_script(body)
    try:
        return body.decode(codecs.lookup(charset).name)
    except LookupError:
        raise BadRequest(f"charset {charset!r} of the body is not one Python knows") from None
    except UnicodeDecodeError as e:
        raise BadRequest(
            f"the body is not {charset.upper()} (byte {e.start}); to send bytes as a script"
            " file holds them (a mysqldump's blobs), say charset=binary"
        ) from None


@functools.lru_cache(maxsize=64)
def _content_type(header: str) -> tuple[str, str]:
    """A Content-Type's media type and charset (UTF-8 unless it says), read as email reads
    it; a client sends the same one each time, so it is read once."""
    parsed = email.message.Message()
    parsed["content-type"] = header
    return parsed.get_content_type(), str(parsed.get_param("charset", "utf-8"))


# -- what changefeeds sent ---------------------------------------------------------------------


def _feed(request: Request, cluster_id: str, changefeed_id: str) -> Feed:
    return state_of(request).registry.get(cluster_id).feed(changefeed_id)


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _message(feed: Feed, record: Record, decode: bool) -> Message:
    decoded = None
    if decode:
        try:
            decoded = [decoded_record(e) for e in feed.decoder.decode(record.key, record.value)]
        except SimError as e:  # a record this protocol cannot read: said, not raised
            decoded = [{"type": "undecodable", "error": str(e)}]
        try:
            orjson.dumps(decoded)
        except orjson.JSONEncodeError:  # a value of bytes that are not UTF-8, as a str
            decoded = jsonable(decoded)
    return Message(
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=_b64(record.key),
        value=_b64(record.value),
        headers={k: base64.b64encode(v).decode() for k, v in record.headers.items()},
        decoded=decoded,
    )


@router.get("/{cluster_id}/changefeeds/{changefeed_id}/messages")
async def messages(
    request: Request,
    cluster_id: str,
    changefeed_id: str,
    topic: str | None = None,
    partition: Annotated[int | None, Query(ge=0)] = None,
    from_offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    decode: bool = True,
) -> MessagePage:
    """Records a changefeed sent, by topic, partition and offset: raw (base64) and, with
    `decode`, as `ticdc-sim decode` prints them. The changefeed keeps its newest records
    (TICDC_SIM_RETAIN_BYTES, TICDC_SIM_RETAIN_RECORDS): `retained` says where each
    partition's kept window starts, and a `from_offset` before it reads from there."""
    feed = _feed(request, cluster_id, changefeed_id)

    def page() -> MessagePage:  # decoding 10,000 records is no work for the event loop
        log = feed.log
        with log.changed:  # the page, counts and window of one moment
            records = log.read(topic, partition, from_offset, limit)
            counts, retained, dropped = log.counts(), log.retained(), log.dropped
        return MessagePage(
            messages=[_message(feed, r, decode) for r in records],
            counts=_by_partition(counts),
            retained=_by_partition(retained),
            dropped=dropped,
        )

    return await run_in_threadpool(page)


def _by_partition(offsets: dict[str, dict[int, int]]) -> dict[str, dict[str, int]]:
    return {t: {str(p): n for p, n in ps.items()} for t, ps in offsets.items()}


@router.get(
    "/{cluster_id}/changefeeds/{changefeed_id}/tail",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def tail(
    request: Request,
    cluster_id: str,
    changefeed_id: str,
    from_start: bool = False,
) -> StreamingResponse:
    """Server-Sent Events: each record the changefeed sends from now on (or, with
    `from_start`, from its first), as an event of JSON (`Message`, decoded). Records the
    changefeed no longer keeps when the tail reaches them (sent before a `from_start` tail
    began, or while a slow reader fell behind) are skipped and said: a `gap` event,
    `{"skipped": n}`, before the records after them. When the changefeed goes (removed, or
    rebuilt by an update) or the service stops, an `end` event ends the stream."""
    feed = _feed(request, cluster_id, changefeed_id)
    start = 0 if from_start else feed.log.total
    state = state_of(request)

    def ended() -> bytes | None:
        """Why the tail ends (the `end` event's reason), if it does."""
        if state.stopping:
            return b"the service is stopping"
        cluster = state.registry.clusters.get(cluster_id)
        if cluster is None or cluster.feeds.get(changefeed_id) is not feed:
            return b"the changefeed was removed or updated"
        return None

    async def events() -> AsyncIterator[bytes]:
        cursor, quiet = start, 0.0
        yield b": tailing\n\n"
        while not await request.is_disconnected():
            records, skipped, cursor = feed.log.since(cursor)
            if skipped:
                yield b'event: gap\ndata: {"skipped":' + str(skipped).encode() + b"}\n\n"
            for record in records:
                body = _message(feed, record, True).model_dump(mode="json")
                yield b"event: message\ndata: " + orjson.dumps(body) + b"\n\n"
            if records or skipped:
                quiet = 0.0
                continue
            reason = ended()
            if reason is not None:
                yield b'event: end\ndata: {"reason":"' + reason + b'"}\n\n'
                return
            await asyncio.sleep(0.05)
            quiet += 0.05
            if quiet >= 15:  # a comment now and then keeps proxies from closing the stream
                quiet = 0.0
                yield b": keep-alive\n\n"

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
    )


@router.post("/{cluster_id}/changefeeds/{changefeed_id}/faults")
async def inject(
    request: Request, cluster_id: str, changefeed_id: str, body: FaultRequest
) -> FaultResult:
    """An at-least-once fault on the next records (see [faults] in the README): `restart`
    and `duplicate` in the window of the next transaction, before its checkpoint, and
    `ddl-replay` on the next DDL. Labelled as the changefeed's [faults] `label` says."""
    feed = _feed(request, cluster_id, changefeed_id)
    await run_in_threadpool(feed.arm, body.kind)  # the feed's lock: not on the event loop
    return FaultResult(injected=feed.faulty.injected)


@router.post("/{cluster_id}/changefeeds/{changefeed_id}/checkpoint")
async def checkpoint(request: Request, cluster_id: str, changefeed_id: str) -> CheckpointResult:
    """Send what is pending and a checkpoint now."""
    feed = _feed(request, cluster_id, changefeed_id)
    return CheckpointResult(checkpoint_ts=await run_in_threadpool(feed.checkpoint))
