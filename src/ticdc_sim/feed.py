"""One changefeed of a cluster (`Feed`): its spec, state, pipeline into its sink and log.

The pipeline is the CLI's (`ticdc_sim.pipeline`); the log (`ticdc_sim.feedlog`) keeps what it
sent for the read API. In the service, after each request the pipeline sends what it holds and a
checkpoint (`Pipeline.flush`): TiCDC would within its 15 ms batch window and 1 s checkpoint
ticker on the wall clock. In the Python API (`flush_each=False`) the simulated clock alone
drives batches and checkpoints, as in a replay, so a script gives the records `ticdc-sim
replay` gives."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ticdc_sim.config import STORAGE_SCHEMES, Changefeed, changefeed, parse_replica_config
from ticdc_sim.encoders import WITH_REGISTRY, Decoder, decoder_for
from ticdc_sim.encoders.registry import RegistryAPIError, SchemaRegistry, close_registry
from ticdc_sim.errors import SimError, Warnings
from ticdc_sim.feedlog import FeedLog, LoggedSink, Retain
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.pipeline import Pipeline, open_registry
from ticdc_sim.sinks import Sink
from ticdc_sim.sinks.faults import FaultySink
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


# states in which a changefeed holds back what commits, until it is resumed (TiCDC updates
# and resumes a changefeed in either)
HELD = ("stopped", "failed")


SINK_FAILED = "CDC:ErrSinkInvalid"  # a failed send that names no code of its own


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
    ):
        """`since`: the changefeed this one rebuilds (an update): its creation time and
        checkpoint carry over; `kept`: its sink and log, when they write on (the same
        files), so that its records stay and offsets run on; `flush_each`: send what is
        pending and a checkpoint after each push (the service's requests); `announce`: log
        its config's warnings, as TiCDC logs them (they are in `warnings` either way);
        `registry`: the cluster's schema registry, which avro uses unless its
        `schema-registry` names another."""
        self.spec = spec
        self.flush_each = flush_each
        self.created: float = since.created if since else time.time()
        # TiCDC's checkpoint starts at start-ts and never goes back
        self.floor = since.checkpoint_ts if since else spec.start_ts
        self.state = "normal"  # TiCDC's FeedState: normal | stopped | failed | finished
        self.error: str | None = None
        # TiCDC's code of the error (its RunningError's): the error's own, else a sink's
        self.error_code = SINK_FAILED
        self.error_time = 0.0  # when it failed (wall clock)
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
        logged: Sink = self.sink
        if not self.changefeed.faults.active:  # the pipeline wraps it itself otherwise
            logged = FaultySink(logged, self.changefeed.faults)
        self.pipeline = Pipeline(
            self.changefeed,
            logged,
            self.warnings,
            registry=self.registry,
            storage=self.sink.storage,
        )
        for warning in self.warnings if announce else ():  # as TiCDC logs them at its start
            _LOG.warning("changefeed %s: %s", spec.id, warning)
        assert isinstance(self.pipeline.sink, FaultySink)
        self.faulty: FaultySink = self.pipeline.sink
        self.armed: list[str] = []  # faults for the next request's records
        self.paused: list[Change] = []  # captured while stopped, replicated on resume
        self.lock = threading.Lock()

    @property
    def checkpoint_ts(self) -> int:
        return max(self.pipeline.summary.checkpoint_ts, self.floor)

    def push(self, events: Sequence[Change]) -> None:
        with self.lock:
            if self.state == "finished":
                return
            if self.state in HELD:
                self.paused.extend(e for e in events if e.commit_ts > self.spec.start_ts)
                return
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
        """A send that fails stops the changefeed with its error, as TiCDC's fails; a schema
        its registry refused fails it (TiCDC retries the changefeed, and every retry meets
        the same refusal until it gives up: `failed`)."""
        try:
            yield
        except SimError as e:
            self.state = "failed" if isinstance(e, RegistryAPIError) else "stopped"
            self.error = str(e)
            self.error_code = getattr(e, "error_code", SINK_FAILED)
            self.error_time = time.time()
            raise

    def pause(self) -> None:
        with self.lock:
            self.state = "stopped"

    def resume(self) -> None:
        with self.lock:
            if self.state not in HELD:  # running, or finished at its target-ts
                return
            events, self.paused = self.paused, []
            self.state, self.error = "normal", None
            self._push(events)

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
            if self.state == "normal":
                self.pipeline.send_pending()

    def checkpoint(self) -> int:
        """Send what is pending and a checkpoint now; the checkpoint ts."""
        with self.lock, self._failing():
            if self.state == "normal":
                self.pipeline.flush()
                self.sink.flush()
            return self.checkpoint_ts

    def close(self) -> list[str]:
        """Send what is pending and a last checkpoint, close the sink; what went where. A
        changefeed whose sink failed sends nothing more: its checkpoint stays where it was,
        as a failed TiCDC changefeed's does (a last one would vouch for rows never sent)."""
        with self.lock:
            try:
                if self.error is not None:
                    self.pipeline.sink.abort()
                    return [
                        f"{self.log.total} records to {where(self.changefeed)}, then it failed:"
                        f" {self.error} (checkpoint left at {self.checkpoint_ts})"
                    ]
                self.pipeline.close()
            finally:
                close_registry(self._opened)
        return [f"{self.log.total} records to {where(self.changefeed)}"]

    def handed_over(self) -> tuple[Sink, FeedLog]:
        """A stopped changefeed's open sink and log, for the changefeed that replaces it
        (nothing is pending: a stopped feed holds its events back, unsent)."""
        with self.lock:
            return self.sink.inner, self.log


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
