"""One changefeed of a cluster (`Feed`): its spec, state, pipeline into its sink and log.

The pipeline is the CLI's (`ticdc_sim.pipeline`); the log (`ticdc_sim.feedlog`) keeps what it
sent for the read API. In the service, after each request the pipeline sends what it holds and a
checkpoint (`Pipeline.flush`): TiCDC would within its 15 ms batch window and 1 s checkpoint
ticker on the wall clock. In the Python API (`flush_each=False`) the simulated clock alone
drives batches and checkpoints, as in a replay, so a script gives the records `ticdc-sim
replay` gives.

A changefeed's states are TiCDC's (tiflow cdc/owner/feed_state_manager.go). A sink error that
TiCDC retries (`retryable`: a Kafka send the brokers refused or never acknowledged) makes it
`warning`, with the error as its last warning; the service's supervisor (`tick`) restarts it
after a backoff (10 s, doubling up to 10 min): a new sink, a new pipeline, and every change
committed after its checkpoint (for Kafka, what the brokers acknowledged) sent again from the
cluster's history, so what was sent after the checkpoint comes twice, as TiCDC's at-least-once
restart sends it. It is `normal` again once its checkpoint passes the one it restarted from,
and `failed` (`CDC:ErrChangefeedUnretryable`) when it has not got there within
`changefeed-error-stuck-duration`. Any other error fails it at once (TiCDC retries a refused
schema or a failed write too; their cause stays until someone acts, so the simulator says so
at once); resuming a failed or stopped changefeed replicates from the history too. A stopped
or failed changefeed holds nothing: what commits meanwhile is the cluster's history's to
keep, and one the history passes fails with TiCDC's GC error."""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ticdc_sim.config import (
    STORAGE_SCHEMES,
    Changefeed,
    changefeed,
    duration_ms,
    parse_replica_config,
)
from ticdc_sim.encoders import WITH_REGISTRY, Decoder, decoder_for
from ticdc_sim.encoders.registry import RegistryAPIError, SchemaRegistry, close_registry
from ticdc_sim.errors import SimError, Warnings
from ticdc_sim.feedlog import FeedLog, LoggedSink, Retain
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.tso import physical_ms
from ticdc_sim.pipeline import Pipeline, open_registry
from ticdc_sim.sinks import Confirmed, OnDisk, Sink
from ticdc_sim.sinks.faults import FaultySink
from ticdc_sim.sinks.memory import BlackholeSink, MemorySink
from ticdc_sim.sinks.staging import StagedSink
from ticdc_sim.sinks.storage import StorageDecoder

Change = RowChangedEvent | DDLEvent  # what a transaction commits
_LOG = logging.getLogger("ticdc_sim.service")


@dataclass
class FeedSpec:
    """What a changefeed is made of, as the open API (or the simulator API) gives it."""

    id: str
    sink_uri: str
    replica_config: dict[str, Any] = field(default_factory=dict)
    toml: str | bytes | None = None  # a changefeed TOML instead of a replica config
    configured: dict[str, Any] | None = None  # settings read already, instead of both
    overrides: dict[str, Any] = field(default_factory=dict)  # by field name: over the rest
    start_ts: int = 0
    target_ts: int = 0  # 0: no end


# states in which a changefeed sends nothing until it is resumed (TiCDC updates and resumes a
# changefeed in either); what commits meanwhile is in the cluster's history
HELD = ("stopped", "failed")


SINK_FAILED = "CDC:ErrSinkInvalid"  # a failed send that names no code of its own
STUCK = "CDC:ErrChangefeedUnretryable"  # retried for longer than the stuck duration
REOPEN_FAILED = "CDC:ErrKafkaNewProducer"  # the one sink reopened on a restart is Kafka's
SNAPSHOT_LOST = "CDC:ErrSnapshotLostByGC"


@dataclass(frozen=True)
class Retry:
    """How a changefeed whose sink fails is retried (tiflow feed_state_manager.go: an
    exponential backoff from 10 s, doubled, at most 10 min, randomised by 10%); `stuck_s`:
    how long it may fail before it is `failed` (None: its changefeed-error-stuck-duration)."""

    init_s: float = 10.0
    max_s: float = 600.0
    stuck_s: float | None = None

    def after(self, feed_id: str, attempt: int) -> float:
        """The wait before retry number `attempt` (from 0), its jitter from the feed's id."""
        jitter = random.Random(f"{feed_id}/{attempt}").uniform(0.9, 1.1)
        return min(self.init_s * 2.0**attempt, self.max_s) * jitter


DEFAULT_RETRY = Retry()


@dataclass
class Problem:
    """An error or warning as TiCDC's API shows it (its RunningError): code, text, when."""

    code: str
    message: str
    time: float


class Feed:
    def __init__(
        self,
        spec: FeedSpec,
        open_sink_: Callable[[Changefeed], Sink],
        retain: Retain,
        since: Feed | None = None,
        kept: tuple[Sink, FeedLog] | None = None,
        flush_each: bool = True,
        announce: bool = True,
        registry: SchemaRegistry | None = None,
        history: Callable[[int], list[Change]] | None = None,
        retry: Retry = DEFAULT_RETRY,
    ):
        """`since`: the changefeed this one rebuilds (an update): its creation time and
        checkpoint carry over; `kept`: its sink and log, when they write on (the same
        files), so that its records stay and offsets run on; `flush_each`: send what is
        pending and a checkpoint after each push (the service's requests); `announce`: log
        its config's warnings, as TiCDC logs them (they are in `warnings` either way);
        `registry`: the cluster's schema registry, which avro uses unless its
        `schema-registry` names another; `history`: what committed after a ts (the
        cluster's `changes_since`), which a resumed or restarted changefeed sends;
        `retry`: how a failing sink is retried."""
        self.spec = spec
        self.flush_each = flush_each
        self.created: float = since.created if since else time.time()
        # TiCDC's checkpoint starts at start-ts; it goes back only to what a file sink has on
        # disk after a failed write (a restart's)
        self.floor = since.checkpoint_ts if since else spec.start_ts
        # TiCDC's FeedState: normal | warning | stopped | failed | finished
        self.state = "normal"
        self.error: str | None = None
        # TiCDC's code of the error (its RunningError's): the error's own, else a sink's
        self.error_code = SINK_FAILED
        self.error_time = 0.0  # when it failed (wall clock)
        self.last_warning: Problem | None = None  # the last retried error, kept once normal
        self.history = history or _no_history
        self.retry = retry
        self.open_sink = open_sink_
        self.broken = False  # its sink failed: nothing is sent until a restart
        self.attempts = 0  # restarts since it last was normal
        self.retry_at = 0.0  # monotonic: when the next restart is due
        self.failing_since = 0.0  # monotonic: the first failure since it last was normal
        self.warned_at_ts = 0  # the checkpoint when it restarted: normal once passed
        self.sent_ts = 0  # the pipeline's checkpoint when its last send returned
        self.warnings = Warnings()
        self.changefeed = build_changefeed(spec)
        codec = self.changefeed.codec
        self.registry: SchemaRegistry | None = None
        self._opened: SchemaRegistry | None = None  # an HTTP registry, closed with the feed
        if codec.protocol in WITH_REGISTRY:
            own = registry is not None and not codec.schema_registry
            self.registry = registry if own else open_registry(codec)
            self._opened = None if own else self.registry
        try:
            self._build(spec, open_sink_, retain, kept, announce)
        except BaseException:
            close_registry(self._opened)
            raise

    def _build(
        self,
        spec: FeedSpec,
        open_sink_: Callable[[Changefeed], Sink],
        retain: Retain,
        kept: tuple[Sink, FeedLog] | None,
        announce: bool,
    ) -> None:
        """The decoder, sink, log and pipeline, once the registry is open."""
        codec = self.changefeed.codec
        # one decoder a feed: simple's learns table schemas from the records as they are sent
        self.decoder: Decoder = (
            StorageDecoder(codec)
            if self.changefeed.sink.scheme in STORAGE_SCHEMES
            else decoder_for(codec, registry=self.registry)
        )
        learn = getattr(self.decoder, "learn", None)
        if kept is None:
            self.log = FeedLog(retain, learn)
            self.sink = LoggedSink(open_sink_(self.changefeed), self.log)
            inner = self.sink.inner
            if isinstance(inner, StagedSink) and inner.staging.replaced:
                # a new changefeed starts its files anew: the folder's earlier output (of a
                # service started again, say) is another cluster's and is gone; said, not silent
                where = inner.staging.location()
                self.warnings.warn("replaced", f"earlier output in {where} replaced")
        else:
            self.log = kept[1]
            self.log.learn = learn
            self.sink = LoggedSink(kept[0], self.log)
        self.pipeline = self._pipeline(self.sink)
        for warning in self.warnings if announce else ():  # as TiCDC logs them at its start
            _LOG.warning("changefeed %s: %s", spec.id, warning)
        self.armed: list[str] = []  # faults for the next request's records
        self.lock = threading.Lock()

    def _pipeline(self, sink: LoggedSink) -> Pipeline:
        logged: Sink = sink
        if not self.changefeed.faults.active:  # the pipeline wraps it itself otherwise
            logged = FaultySink(logged, self.changefeed.faults)
        pipeline = Pipeline(
            self.changefeed,
            logged,
            self.warnings,
            registry=self.registry,
            storage=sink.storage,
        )
        assert isinstance(pipeline.sink, FaultySink)
        self.faulty: FaultySink = pipeline.sink
        return pipeline

    @property
    def checkpoint_ts(self) -> int:
        """TiCDC's checkpoint: what the brokers acknowledged (a Kafka sink's), what is on
        disk (a file sink's), else what was sent; never before start-ts."""
        inner = self.sink.inner
        if isinstance(inner, Confirmed):
            return max(inner.acknowledged_ts(), self.floor)
        sent = self.sent_ts
        if isinstance(inner, OnDisk):  # a failed write takes what it had not written
            sent = min(sent, inner.durable_ts())
        return max(sent, self.floor)

    @property
    def sending(self) -> bool:
        return self.state in ("normal", "warning") and not self.broken

    @property
    def in_memory(self) -> bool:
        """Whether its sends stay in this process (a memory or blackhole sink, the cluster's
        own schema registry, no claim-check files): they never wait on a broker, a disk or
        a peer."""
        return (
            isinstance(self.sink.inner, (MemorySink, BlackholeSink))
            and self._opened is None
            and self.pipeline.claims is None
        )

    def push(self, events: Sequence[Change]) -> None:
        with self.lock:
            if self.sending:  # otherwise the history keeps them for a restart or resume
                self._push(events)

    def _push(self, events: Sequence[Change]) -> None:
        start, target = self.spec.start_ts, self.spec.target_ts or 1 << 64
        with self._failing():
            for event in events:
                # TiCDC replicates what commits after start-ts, up to target-ts
                if start < event.commit_ts <= target:
                    self.pipeline.push(event)
                elif event.commit_ts > target:
                    self.state = "finished"
            if self.flush_each:
                armed, self.armed = self.armed, []
                self.pipeline.flush(lambda: [self.faulty.inject(kind) for kind in armed])
                self.sink.flush()

    @contextlib.contextmanager
    def _failing(self) -> Iterator[None]:
        """A send that fails: `warning` and a restart later for an error marked
        `retryable` (Kafka's), `failed` at once otherwise (see the module's docstring); a
        sink's bug fails this changefeed alone, never the commit or the others."""
        try:
            yield
        except SimError as e:
            self._failed(e)
            raise
        except Exception as e:  # a sink's bug: this changefeed fails, never the others
            _LOG.exception("changefeed %s: its send failed", self.spec.id)
            error = SimError(f"internal error in the changefeed's sink: {type(e).__name__}: {e}")
            self._failed(error)
            raise error from e
        # a checkpoint counts once its send returned: one that failed vouches for nothing
        self.sent_ts = self.pipeline.summary.checkpoint_ts

    def _failed(self, e: SimError) -> None:
        code = getattr(e, "error_code", SINK_FAILED)
        if not getattr(e, "retryable", False) or isinstance(e, RegistryAPIError):
            self.state, self.broken = "failed", True
            self.error, self.error_code, self.error_time = str(e), code, time.time()
            return
        self._warn(code, str(e))

    def _warn(self, code: str, message: str) -> None:
        """A sink error TiCDC retries: `warning`, and a restart after the backoff."""
        now = time.monotonic()
        if not self.failing_since:
            self.failing_since, self.attempts = now, 0
        self.state, self.broken = "warning", True
        self.last_warning = Problem(code, message, time.time())
        self.retry_at = now + self.retry.after(self.spec.id, self.attempts)
        _LOG.warning(
            "changefeed %s: %s; retrying in %.1f s", self.spec.id, message, self.retry_at - now
        )

    def _due(self) -> bool:
        return (
            self.broken
            and self.state in ("normal", "warning")
            and (self.retry_at <= time.monotonic())
        )

    @property
    def restart_due(self) -> bool:
        """A restart into a new sink is due (`reopen` opens it)."""
        return self._due() and isinstance(self.sink.inner, Confirmed)

    def reopen(self) -> Sink | None:
        """A broker's new sink for a restart that is due, opened (and its topic made again)
        without the locks: gone brokers take their timeout to say so, and commits must not
        wait for that. None when no restart is due, or when the sink writes on (files)."""
        with self.lock:
            if not (self._due() and isinstance(self.sink.inner, Confirmed)):
                return None
            if time.monotonic() - self.failing_since >= self._stuck_s():
                return None  # `tick` fails it
        feed = self.changefeed
        sink: Sink | None = None
        try:
            sink = self.open_sink(feed)
            sink.partition_count(feed.topic, feed.partition_num if feed.partition_num_set else None)
        except SimError as e:  # brokers still gone: retried after the next backoff
            if isinstance(sink, Confirmed):
                sink.discard()
            with self.lock:
                self.attempts += 1
                self._warn(REOPEN_FAILED, f"new kafka producer: {e}")
            return None
        return sink

    def tick(self, fresh: Sink | None = None) -> None:
        """The supervisor's look, about every second (TiCDC's owner ticks so), under the
        cluster's lock (which `history` takes): a sink that failed since its last send
        (Kafka's, asynchronously), a restart that is due (into `fresh`, from `reopen`), a
        warning the checkpoint has left behind."""
        with self.lock:
            try:
                self._tick(fresh)
            finally:
                if isinstance(fresh, Confirmed) and self.sink.inner is not fresh:
                    fresh.discard()  # not needed after all

    def _tick(self, fresh: Sink | None) -> None:
        inner = self.sink.inner
        if self.sending and isinstance(inner, Confirmed):
            failure = inner.failure()
            if failure is not None:
                self._failed(failure)
        if self._due():
            if time.monotonic() - self.failing_since >= self._stuck_s():
                warning = self.last_warning
                self.state = "failed"
                self.error = warning.message if warning else "stuck"
                self.error_code, self.error_time = STUCK, time.time()
                return
            if fresh is None and isinstance(inner, Confirmed):
                return  # `reopen` has not got one (yet)
            self.attempts += 1
            with contextlib.suppress(SimError):  # it is a warning again, retried later
                self._restart(fresh)
        if self.failing_since and not self.broken and self.checkpoint_ts > self.warned_at_ts:
            # past the point it restarted from: the failure is over (a resumed one's too)
            self.failing_since, self.attempts = 0.0, 0
            if self.state == "warning":
                self.state = "normal"

    def _stuck_s(self) -> float:
        if self.retry.stuck_s is not None:
            return self.retry.stuck_s
        return duration_ms(self.changefeed.error_stuck_duration) / 1000

    def _restart(self, fresh: Sink | None) -> None:
        """TiCDC's restart of a changefeed: a new pipeline from its checkpoint into a new
        sink (`fresh`, a broker's; files write on where they were, from what is on disk),
        sending what committed since."""
        old = self.pipeline
        inner = self.sink.inner
        point = self.checkpoint_ts  # a file sink's: what is on disk
        self.floor = point
        if fresh is not None:
            if isinstance(inner, Confirmed):
                inner.discard()  # what it still holds is sent again
            inner = fresh
        self.sink = LoggedSink(inner, self.log)
        self.pipeline = self._pipeline(self.sink)
        self.pipeline.resume([], point, physical_ms(point))
        self.pipeline.tables.update(old.tables)  # the topics its checkpoints go to
        self.broken, self.warned_at_ts = False, point
        self.error = None
        with self._failing():
            self._push(self.history(point))

    def waiting_at(self) -> int | None:
        """Where it goes on from the history when it restarts or is resumed; None when it
        is sending, finished, or lost that history already."""
        with self.lock:
            if self.state == "finished" or self.error_code == SNAPSHOT_LOST:
                return None
            if self.broken:
                return self.checkpoint_ts
            return max(self.pipeline.seen_ts, self.floor) if self.state in HELD else None

    def fail(self, error: SimError) -> None:
        with self.lock:
            self._failed(error)

    def pause(self) -> None:
        with self.lock:
            self.state = "stopped"

    def resume(self) -> None:
        """Replicate again: a stopped changefeed from where it stopped (what it sent is not
        sent again); one whose sink failed is restarted from its checkpoint by the
        supervisor's next tick, as TiCDC restarts it. Under the cluster's lock, which
        `history` takes; a send that fails shows in its state, as TiCDC's resume answers."""
        with self.lock, contextlib.suppress(SimError):
            if self.state not in HELD:  # running, or finished at its target-ts
                return
            self.state, self.attempts, self.error = "normal", 0, None
            if self.broken:
                self.failing_since, self.retry_at = time.monotonic(), 0.0
                return
            with self._failing():
                self._push(self.history(max(self.pipeline.seen_ts, self.floor)))

    def arm(self, kind: str) -> None:
        """A fault for the next records: `restart` and `duplicate` in the window of the next
        transaction replicated, before its checkpoint; `ddl-replay` on the next DDL."""
        with self.lock:
            if kind == "ddl-replay":
                self.faulty.inject(kind)
            else:
                self.armed.append(kind)

    def send_pending(self) -> None:
        """Send the rows the pipeline holds in its batch, without a checkpoint (as 15 ms of
        TiCDC's time passing would)."""
        with self.lock, self._failing():
            if self.sending:
                self.pipeline.send_pending()

    def checkpoint(self) -> int:
        """Send what is pending and a checkpoint now; the checkpoint ts."""
        with self.lock:
            with self._failing():
                if self.sending:
                    self.pipeline.flush()
                    self.sink.flush()
            return self.checkpoint_ts

    def close(self) -> list[str]:
        """Send what is pending and a last checkpoint, close the sink; what went where, and
        what a file sink leaves on disk. A changefeed whose sink failed sends nothing more:
        its checkpoint stays where it was, as a failed TiCDC changefeed's does (a last one
        would vouch for rows never sent)."""
        with self.lock:
            try:
                if self.broken:
                    inner = self.sink.inner
                    if isinstance(inner, Confirmed):
                        inner.discard()  # its brokers are gone: no 30 s wait for them
                    else:
                        self.pipeline.sink.abort()
                    warning = self.last_warning
                    reason = self.error or (warning.message if warning else "")
                    said = [
                        f"{self.log.total} records to {where(self.changefeed)}, then it failed:"
                        f" {reason} (checkpoint left at {self.checkpoint_ts})"
                    ]
                else:
                    self.pipeline.close()
                    said = [f"{self.log.total} records to {where(self.changefeed)}"]
            finally:
                close_registry(self._opened)
            inner = self.sink.inner
            return [*said, inner.remaining()] if isinstance(inner, OnDisk) else said

    def handed_over(self) -> tuple[Sink, FeedLog]:
        """A stopped changefeed's open sink and log, for the changefeed that replaces it
        (nothing is pending: a stopped feed holds its events back, unsent)."""
        with self.lock:
            return self.sink.inner, self.log


def _no_history(ts: int) -> list[Change]:
    return []


def where(feed: Changefeed) -> str:
    """Where a changefeed's records are, for a person."""
    uri = feed.sink
    if uri.scheme in ("jsonl", "parquet"):
        return f"{uri.scheme} files in {Path(uri.target).resolve()}"
    if uri.scheme == "file":
        return f"storage files in {Path(uri.target).resolve()}"
    if uri.scheme == "s3":
        return f"storage files in s3://{uri.target}"
    if uri.scheme == "kafka":
        return f"kafka brokers {uri.target}"
    if uri.scheme == "memory":  # the changefeed's log holds them: records(), /messages
        return "memory:// (kept in process)"
    return f"{uri.scheme}:// (dropped)"


def build_changefeed(spec: FeedSpec) -> Changefeed:
    configured = spec.configured
    if spec.toml is None and configured is None:
        configured = parse_replica_config(spec.replica_config, "replica_config")
    built = changefeed(spec.sink_uri, spec.toml, "config", spec.overrides, configured)
    return built
