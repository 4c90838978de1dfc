"""The pipeline, wired once: upstream events -> capture -> table filter -> router -> batches ->
encoder -> sink.

What a TiCDC changefeed with an MQ sink does between the puller and Kafka, on the simulated
clock (the physical part of commit ts), so that the same input gives the same records:

- capture (`generator/capture.py`): the upstream's row changes carry both images, unsplit;
  the changefeed's `enable-old-value` and `output-raw-change-event` decide what it sends.

- replication filter (tiflow `cdc/entry/schema_storage.go` `shouldIgnoreTable`,
  `cdc/owner/ddl_manager.go`): system schemas and tables outside `[filter] rules` are dropped;
  so are the rows and DDL of tables without a handle key unless `force-replicate`.
- row batches (`cdc/sink/dmlsink/mq/worker.go`): a batch closes at 2048 rows or when a row comes
  15 ms after the batch's first; its rows are grouped by (topic, partition, partition key) and
  each group is encoded on its own, so a Kafka record never mixes groups. TiCDC sends the groups
  of one batch in Go map order, which is random; we send them in order of first appearance.
- large messages (`encoders.large`): claim-check files the encoder made are stored before the
  records naming them are sent.
- DDL (`cdc/sink/ddlsink/mq/mq_ddl_sink.go`): the pending batch goes out first; the DDL goes to
  partition 0 of its topic for canal and canal-json, to every partition otherwise.
- checkpoints (`cdc/owner/ddl_sink.go`): on a 1 s ticker, only when the checkpoint advanced,
  forced after each DDL, and a last one covering the final commit; each is broadcast to every
  partition of every active topic. The checkpoint is the commit ts of the last event processed,
  so it never goes back and every later row has a larger commit ts.
- simple's BOOTSTRAP messages (`pkg/sink/codec/bootstraper.go`, see `Bootstraps`).
- avro's schema registry (`open_registry`): the one the caller gives (the caller closes it),
  else the Confluent registry the changefeed's `schema-registry` names (closed with the
  pipeline), else a fresh one in memory.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ticdc_sim.config import Changefeed
from ticdc_sim.encoders import (
    DDL_TO_PARTITION_ZERO,
    WITH_REGISTRY,
    CodecConfig,
    Message,
    encoder_for,
)
from ticdc_sim.encoders.registry import MemoryRegistry, SchemaRegistry, close_registry
from ticdc_sim.errors import ConfigError, Warnings
from ticdc_sim.generator.capture import Capture
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent, Event, ResolvedEvent, RowChangedEvent
from ticdc_sim.model.mysql import SYSTEM_SCHEMAS as TIDB_SYSTEM_SCHEMAS
from ticdc_sim.model.table import TableInfo
from ticdc_sim.model.tso import PHYSICAL_SHIFT_BITS, physical_ms
from ticdc_sim.partitioning.filter import TableFilter
from ticdc_sim.partitioning.router import EventRouter
from ticdc_sim.sinks import Sink
from ticdc_sim.sinks.claim_check import ClaimStorage
from ticdc_sim.sinks.faults import FaultySink, lagged
from ticdc_sim.sinks.staging import REGISTRY_FILE

BATCH_ROWS = 2048  # worker.go batchSize
BOOTSTRAP_TICK_MS = 5_000  # bootstraper.go bootstrapWorkerTickerInterval
BOOTSTRAP_GC_MS = 30_000  # bootstrapWorkerGCInterval
BOOTSTRAP_INACTIVE_MS = 30 * 60_000  # defaultMaxInactiveDuration
BATCH_INTERVAL_MS = 15  # worker.go batchInterval
CHECKPOINT_INTERVAL_MS = 1000  # ddl_sink.go ticker

# TiDB's system databases, plus TiCDC's own bookkeeping schema
SYSTEM_SCHEMAS = TIDB_SYSTEM_SCHEMAS | {"tidb_cdc"}
_SCHEMA_ACTIONS = frozenset(
    {
        ActionType.CREATE_SCHEMA,
        ActionType.DROP_SCHEMA,
        ActionType.MODIFY_SCHEMA_CHARSET_AND_COLLATE,
    }
)


def open_registry(codec: CodecConfig, scheme: str = "") -> SchemaRegistry:
    """The Confluent registry `schema-registry` names (TiCDC's `GET /` check done), or a
    fresh one in memory; to a Kafka sink (`scheme`), whose consumers must find the
    schemas, TiCDC's error without a URL."""
    if not codec.schema_registry:
        if scheme in ("kafka", "kafka+ssl"):
            raise ConfigError(
                'Avro protocol requires parameter "schema-registry" to specify the schema'
                " registry (ErrCodecInvalidConfig): add ?schema-registry=http://HOST:PORT to"
                " the sink URI or schema-registry under [sink] (a Confluent registry, or the"
                " one `ticdc-sim serve` serves); jsonl:// and parquet:// keep the schemas"
                " beside the records instead"
            )
        return MemoryRegistry()
    # HTTP, imported only by a changefeed naming a registry
    from ticdc_sim.sinks.schema_registry import open_registry as open_http

    return open_http(codec.schema_registry)


@contextlib.contextmanager
def registry_of(feed: Changefeed) -> Iterator[SchemaRegistry | None]:
    """An avro changefeed's registry (`open_registry`) while the block runs, closed after;
    None for other protocols."""
    if feed.codec.protocol not in WITH_REGISTRY:
        yield None
        return
    registry = open_registry(feed.codec, feed.sink.scheme)
    try:
        yield registry
    finally:
        close_registry(registry)


def registry_file(registry: SchemaRegistry | None) -> bytes:
    """The registry as a run keeps it beside its records (`MemoryRegistry.to_json`)."""
    assert isinstance(registry, MemoryRegistry)
    return json.dumps(registry.to_json(), indent=1, ensure_ascii=False).encode() + b"\n"


def eligible(info: TableInfo) -> bool:
    """What TiCDC replicates without a filter: tables with a handle key, outside the system
    schemas."""
    return info.has_handle_key and info.schema.lower() not in SYSTEM_SCHEMAS


class Observer(Protocol):
    """Follows what the pipeline replicates (`sinks.expect.Recorder`): rows in commit order
    as their batch is sent, each DDL once sent, each new checkpoint."""

    def rows(self, events: list[RowChangedEvent]) -> None: ...
    def ddl(self, event: DDLEvent) -> None: ...
    def checkpoint(self, ts: int) -> None: ...


@dataclass
class Summary:
    """What a run sent: events in, records out."""

    rows: int = 0
    ddls: int = 0
    checkpoints: int = 0
    skipped_rows: int = 0  # rows of filtered or ineligible tables
    skipped_ddls: int = 0
    records: dict[str, int] = field(default_factory=dict)  # per topic
    checkpoint_ts: int = 0
    injected: int = 0  # records [faults] added
    files: int = 0  # data files the storage sink wrote


@dataclass
class _TableStatistic:
    """bootstraper.go tableStatistic: one table's (one physical table's) bootstrap state."""

    info: TableInfo
    topic: str
    partitions: int
    counter: int = 0  # partition-key groups since the last BOOTSTRAP
    last_row_ms: int = 0
    last_send_ms: int | None = None  # None: never sent (TiCDC's Unix epoch)


class Bootstraps:
    """When simple's BOOTSTRAP messages go out (bootstraper.go), on the simulated clock.

    A table's first group of rows sends one at once, before the rows; then a 5 s ticker sends
    one for every table whose last was `send-bootstrap-interval-in-sec` ago or that sent
    `send-bootstrap-in-msg-count` groups since. TiCDC counts the encoder group's `AddEvents`
    calls, one per partition-key group of a batch, not rows, and keys tables by physical id
    (each partition of a partitioned table on its own); so do we. Tables without rows for
    30 minutes are dropped on a 30 s ticker and start over at their next row. Ticks visit
    tables in first-row order where TiCDC's `sync.Map` order is random."""

    def __init__(self, interval_s: int, count: int) -> None:
        self.interval_ms = interval_s * 1000
        self.count = count
        self.tables: dict[int, _TableStatistic] = {}
        self._next_tick: int | None = None
        self._next_gc: int | None = None

    def add(
        self, row: RowChangedEvent, topic: str, partitions: int, now: int
    ) -> list[_TableStatistic]:
        """A group's first row (encoder_group.go AddEvents): the tables to send for now."""
        table = self.tables.get(row.physical_table_id)
        if table is None:
            table = self.tables[row.physical_table_id] = _TableStatistic(
                row.table, topic, partitions, 1, now
            )
            return self._due([table], now)
        table.counter += 1
        table.last_row_ms = now
        if row.table is not table.info:  # a new version or a new name (RENAME)
            table.info = row.table
        table.partitions = partitions
        return []

    def tick(self, now: int) -> list[_TableStatistic]:
        """The tickers up to `now`: the tables to send for."""
        if self._next_tick is None:
            self._next_tick, self._next_gc = now + BOOTSTRAP_TICK_MS, now + BOOTSTRAP_GC_MS
            return []
        assert self._next_gc is not None
        due: list[_TableStatistic] = []
        while now >= min(self._next_tick, self._next_gc):
            if self._next_gc <= self._next_tick:
                at = self._next_gc
                self.tables = {
                    k: t
                    for k, t in self.tables.items()
                    if at - t.last_row_ms <= BOOTSTRAP_INACTIVE_MS
                }
                self._next_gc += BOOTSTRAP_GC_MS
            else:
                due += self._due(list(self.tables.values()), self._next_tick)
                self._next_tick += BOOTSTRAP_TICK_MS
        return due

    def _due(self, tables: list[_TableStatistic], now: int) -> list[_TableStatistic]:
        out = []
        for table in tables:  # shouldSendBootstrapMsg, then reset
            last = table.last_send_ms
            if last is None or now - last >= self.interval_ms or table.counter >= self.count:
                table.last_send_ms, table.counter = now, 0
                out.append(table)
        return out


def _no_bootstrap(info: TableInfo, ts: int) -> Message:
    raise AssertionError("BOOTSTRAP messages are the simple protocol's")


class Pipeline:
    """Feed it events in commit order (`push`), then `close` it; or `run` an iterable."""

    def __init__(
        self,
        feed: Changefeed,
        sink: Sink,
        warnings: Warnings | None = None,
        registry: SchemaRegistry | None = None,
        storage: Any = None,
        *,
        register_at_ddl: bool = False,
    ) -> None:
        """`registry`: avro's schema registry (else `open_registry`); `storage`: the storage
        sink `sink` wraps (a service's feed logs what it sends); `register_at_ddl`: avro
        registers a table version's schemas as its DDL passes, not at its first row as TiCDC
        does (workloads: every Spark task then assigns the ids one process does)."""
        self.feed = feed
        old_value, raw = feed.enable_old_value, feed.output_raw_change_event
        self.capture = Capture(old_value, raw) if Capture.needed(old_value, raw) else None
        self.faults = feed.faults
        self.sink: Sink = FaultySink(sink, feed.faults) if feed.faults.active else sink
        # the storage sink takes rows by table, DDL and checkpoints as such (sinks/storage.py)
        self.storage: Any = storage or (sink if getattr(sink, "by_table", False) else None)
        self._sent_checkpoints: dict[tuple[str, int], int] = {}  # the last per partition
        self.partitions = feed.partition_num if feed.partition_num_set else None
        self.warnings = warnings if warnings is not None else Warnings()
        for message in feed.warnings:  # the config's, into the run's one channel
            self.warnings.warn(message, message)
        self.router = EventRouter(
            list(feed.rules), feed.topic, feed.case_sensitive, feed.codec.profile, self.warnings
        )
        self.filter = TableFilter(list(feed.filter_rules), case_sensitive=feed.case_sensitive)
        codec = feed.codec
        self._partitions: dict[str, int] = {}  # per topic, as the sink has them
        # TiCDC checks its own topic first: a Kafka topic's partitions and message limit
        self._partitions_of(feed.topic)
        limit = self.sink.max_message_bytes  # the broker's, as TiCDC adjusts max-message-bytes
        if limit is not None and limit < codec.max_message_bytes:
            codec = replace(codec, max_message_bytes=limit)
        self.observer: Observer | None = None
        self.claims = (
            ClaimStorage(codec.claim_check_storage_uri)
            if codec.large_message_handle_option == "claim-check"
            else None
        )
        self.ddl_to_zero = feed.codec.protocol in DDL_TO_PARTITION_ZERO
        self.summary = Summary()
        self.tables: dict[int, TableInfo] = {}  # replicated tables by id (active topics)
        self._eligible: dict[int, tuple[TableInfo, bool]] = {}
        self._batch: list[RowChangedEvent] = []
        self._batch_start = 0
        self._next_tick: int | None = None
        self._tick_origin: int | None = None  # the ticker's grid, when resumed mid-run
        self._seen_ts = 0  # commit ts of the last event processed
        self._sent_ts = 0  # the last checkpoint sent
        self.bootstraps = (
            Bootstraps(codec.send_bootstrap_interval_in_sec, codec.send_bootstrap_in_msg_count)
            if codec.bootstrap
            else None
        )
        self._bootstrap_all = codec.send_bootstrap_to_all_partition
        # the registry last: one this pipeline opens (HTTP) is closed with it, and nothing
        # after the opening can fail but the encoder, which closes it too
        self.registry = registry
        self._opened: SchemaRegistry | None = None
        if registry is None and codec.protocol in WITH_REGISTRY:
            # a failure leaves the sink to the caller, who opened it (the CLI, the Python API
            # and the service open the registry first: `registry_of`)
            self.registry = self._opened = open_registry(codec, feed.sink.scheme)
        try:
            own = self.registry
            beside = getattr(sink, "beside", None)  # a directory sink keeps the simulator's
            if isinstance(own, MemoryRegistry) and beside is not None:
                beside(REGISTRY_FILE, lambda: registry_file(own))
            self.encoder = encoder_for(codec, self.registry, self.router.topic)
        except BaseException:
            close_registry(self._opened)
            raise
        # avro's own verb: a table version's schemas registered as its DDL passes, in commit
        # order, so that every engine (and every Spark task, resumed) assigns the same ids
        self._prepare: Callable[[TableInfo], object] | None = (
            getattr(self.encoder, "prepare", None) if register_at_ddl else None
        )
        # simple's own verb: only its encoder has it
        self._encode_bootstrap: Callable[[TableInfo, int], Message] = (
            getattr(self.encoder, "encode_bootstrap", None) or _no_bootstrap
        )

    # -- the replication filter ------------------------------------------------------------------

    def replicates(self, info: TableInfo) -> bool:
        cached = self._eligible.get(id(info))
        if cached is not None and cached[0] is info:
            return cached[1]
        ok = (
            info.schema.lower() not in SYSTEM_SCHEMAS
            and self.filter.match(info.schema, info.name)
            and (info.has_handle_key or self.feed.force_replicate)
        )
        self._eligible[id(info)] = (info, ok)
        return ok

    def _ddl_replicated(self, ddl: DDLEvent) -> bool:
        if ddl.schema.lower() in SYSTEM_SCHEMAS:
            return False
        if ddl.action in _SCHEMA_ACTIONS or not ddl.table:
            return self.filter.match_schema(ddl.schema)
        # tiflow cdc/owner/schema.go filterDDLEvents: RENAME TABLE is filtered by its old name
        named = ddl.pre_table_info if ddl.action == ActionType.RENAME_TABLE else None
        schema, table = (named.schema, named.name) if named else (ddl.schema, ddl.table)
        if not self.filter.match(schema, table):
            return False
        # cdc/owner/ddl_manager.go tick: a DDL is skipped when its table is ineligible in the
        # snapshot at its commit ts (IsIneligibleTable). So CREATE, ALTER, TRUNCATE and RENAME
        # of a table without a handle key are skipped; DROP TABLE is not: the dropped table is
        # no longer in the snapshot's ineligible set. ADD PRIMARY KEY makes a table eligible.
        info = ddl.table_info
        return info is None or info.has_handle_key or self.feed.force_replicate

    def _track(self, ddl: DDLEvent) -> None:
        if ddl.action == ActionType.DROP_SCHEMA:
            gone = ddl.schema.lower()
            self.tables = {i: t for i, t in self.tables.items() if t.schema.lower() != gone}
        if ddl.pre_table_info is not None:
            self.tables.pop(ddl.pre_table_info.id, None)
        info = ddl.table_info
        if info is not None and info.columns:
            if self.replicates(info):
                self.tables[info.id] = info
                if self._prepare is not None:
                    self._prepare(info)
            else:
                self.tables.pop(info.id, None)

    # -- events ------------------------------------------------------------------------------------

    def run(self, events: Iterable[Event]) -> Summary:
        """Every event, then `close`; after an error (of the events' source or of a send),
        `abort`: what was sent stays sent, a directory is left as DIR.partial."""
        try:
            for event in events:
                self.push(event)
        except BaseException:
            self.abort()
            raise
        return self.close()

    def push(self, event: Event) -> None:
        """The next upstream event, in commit order."""
        if self.capture is None:
            self._push(event)
        else:
            for ready in self.capture.push(event):
                self._push(ready)

    def _drain(self) -> None:
        """Capture what the capture stage holds back: a flush or the end is a run's end."""
        if self.capture is not None:
            for ready in self.capture.drain():
                self._push(ready)

    def _push(self, event: Event) -> None:
        if isinstance(event, ResolvedEvent):
            self._tick(physical_ms(event.ts))
            return
        now = physical_ms(event.commit_ts)
        if self._next_tick is None or now >= self._next_tick:
            self._tick(now)
        if self.bootstraps is not None:
            self._send_bootstraps(self.bootstraps.tick(now), now)
        if isinstance(event, RowChangedEvent):
            if not self.replicates(event.table):
                self.summary.skipped_rows += 1
            else:
                if self._batch and (
                    now - self._batch_start >= BATCH_INTERVAL_MS or len(self._batch) >= BATCH_ROWS
                ):
                    self._flush()
                if not self._batch:
                    self._batch_start = now
                self._batch.append(event)
                self.summary.rows += 1
        else:
            self._flush()
            if self._ddl_replicated(event):
                self._send_ddl(event)
                self.summary.ddls += 1
            else:
                self.summary.skipped_ddls += 1
            self._track(event)
            if self.observer is not None:
                self.observer.ddl(event)
        self._seen_ts = event.commit_ts
        if isinstance(event, DDLEvent):
            self._checkpoint()  # forced: a consumer runs a DDL once the checkpoint passes it

    def close(self) -> Summary:
        """Send what is pending and the final checkpoint; closes the sink."""
        try:
            self._drain()
            self._flush()
            self._checkpoint(final=True)
        except BaseException:
            try:
                self.sink.abort()
            finally:
                close_registry(self._opened)
            raise
        try:
            self.sink.close()
        finally:
            close_registry(self._opened)
        self._count_files()
        if isinstance(self.sink, FaultySink):
            self.summary.injected = self.sink.injected
        return self.summary

    def send_pending(self) -> None:
        """Send the pending batch now, no checkpoint: the Python API before it reads the
        records, where TiCDC's batch window would have closed on the wall clock."""
        self._drain()
        self._flush()

    def flush(self, before_checkpoint: Callable[[], object] | None = None) -> None:
        """Send the pending batch and a checkpoint now, the sink left open: a service does
        so after each request, where TiCDC would within its batch window and ticker.
        `before_checkpoint` runs between the two (a fault injected in the window)."""
        self.send_pending()
        if before_checkpoint is not None:
            before_checkpoint()
        self._checkpoint()

    def abort(self) -> Summary:
        """After a failure upstream: send the rows already committed (TiCDC would have), no
        final checkpoint, and let the sink mark its output as partial."""
        try:
            self._drain()
            self._flush()
        finally:
            try:
                self.sink.abort()
            finally:
                close_registry(self._opened)
            self._count_files()  # what a failed run wrote stays written: said, not "none"
        return self.summary

    def _count_files(self) -> None:
        if self.storage is not None:
            self.summary.files = self.storage.files

    def resume(self, history: Iterable[DDLEvent], checkpoint_ts: int, tick_origin_ms: int) -> None:
        """Start as if every event up to `checkpoint_ts` had been replicated and checkpointed,
        `history` being their DDL, on a ticker that started at `tick_origin_ms`. The Spark
        engine's tasks start mid-run at a tick, where batches and checkpoints restart: from
        there on the records are those of one pipeline running from the start."""
        for ddl in history:
            self._track(ddl)
        self._seen_ts = self._sent_ts = self.summary.checkpoint_ts = checkpoint_ts
        self._tick_origin = tick_origin_ms

    @property
    def seen_ts(self) -> int:
        """The commit ts of the last event pushed (0: none yet)."""
        return self._seen_ts

    def topics(self, ddls: Iterable[DDLEvent]) -> dict[str, int]:
        """The partition counts of the topics the rows and DDL of `ddls`' tables go to, asked
        of the sink up front (creating Kafka topics), for tasks that cannot ask it."""
        topics = [self.feed.topic]
        for ddl in ddls:
            if self._ddl_replicated(ddl):
                topics.append(self.router.ddl_topic(ddl))
            info = ddl.table_info
            if info is not None and info.columns and self.replicates(info):
                topics.append(self.router.topic(info.schema, info.name))
        return {topic: self._partitions_of(topic) for topic in topics}

    def _tick(self, now: int) -> None:
        """The 1 s ticker at simulated time `now` (ms); the storage sink's own after it."""
        if self._next_tick is None:
            origin = now if self._tick_origin is None else self._tick_origin
            behind = (now - origin) // CHECKPOINT_INTERVAL_MS + 1
            self._next_tick = origin + behind * CHECKPOINT_INTERVAL_MS
        elif now >= self._next_tick:
            self._flush()
            self._checkpoint()
            behind = (now - self._next_tick) // CHECKPOINT_INTERVAL_MS + 1
            self._next_tick += behind * CHECKPOINT_INTERVAL_MS
        if self.storage is not None:
            self.storage.tick(now)

    # -- output ------------------------------------------------------------------------------------

    def _send(self, topic: str, partition: int, messages: list[Message]) -> None:
        if messages:
            self.sink.send(topic, partition, messages)
            records = self.summary.records
            records[topic] = records.get(topic, 0) + len(messages)

    def _flush(self) -> None:
        if not self._batch:
            return
        if self.storage is not None:
            self._flush_by_table()
            return
        groups: dict[tuple[str, int, str], list[RowChangedEvent]] = {}
        route = self.router
        last: TableInfo | None = None
        for row in self._batch:
            info = row.table
            if info is not last:  # rows come in runs of one table: route each run once
                last = info
                topic = route.topic(info.schema, info.name)
                partitions = self._partitions_of(topic)
                dispatcher = route.dispatcher(info.schema, info.name)
                fixed = dispatcher.dispatch(row, partitions) if dispatcher.by_table else None
            partition, key = fixed if fixed is not None else dispatcher.dispatch(row, partitions)
            group = (topic, partition, key)
            found = groups.get(group)
            if found is None:
                groups[group] = [row]
            else:
                found.append(row)
        if self.observer is not None:
            self.observer.rows(self._batch)
        self._batch = []
        built = self.encoder.build_groups(list(groups.values()))
        if self.encoder.claims:  # stored before the messages that name them are sent
            assert self.claims is not None
            self.claims.write(self.encoder.claims)
            self.encoder.claims.clear()
        bootstraps = self.bootstraps
        for (topic, partition, _), rows, messages in zip(
            groups, groups.values(), built, strict=True
        ):
            if bootstraps is not None:  # AddEvents: before the group's rows
                now = physical_ms(rows[-1].commit_ts)
                self._send_bootstraps(
                    bootstraps.add(rows[0], topic, self._partitions_of(topic), now), now
                )
            self._send(topic, partition, messages)

    def _flush_by_table(self) -> None:
        """The storage sink's batch: each row with its one message, grouped by the sink."""
        batch, self._batch = self._batch, []
        if self.observer is not None:
            self.observer.rows(batch)
        (messages,) = self.encoder.build_groups([batch])
        self.storage.rows(batch, messages)

    def _send_bootstraps(self, tables: list[_TableStatistic], now: int) -> None:
        for table in tables:  # bootstrapWorker.generateEvents
            message = self._encode_bootstrap(table.info, now << PHYSICAL_SHIFT_BITS)
            for partition in range(table.partitions if self._bootstrap_all else 1):
                self._send(table.topic, partition, [message])

    def _send_ddl(self, ddl: DDLEvent) -> None:
        if self.storage is not None:
            self.storage.ddl(ddl)
            return
        message = self.encoder.encode_ddl(ddl)
        if message is None:  # debezium drops the DDL types it has no change type for
            return
        topic = self.router.ddl_topic(ddl)
        for partition in [0] if self.ddl_to_zero else range(self._partitions_of(topic)):
            self._send(topic, partition, [message])

    def _checkpoint(self, final: bool = False) -> None:
        """A checkpoint on every partition of the active topics; the final one also sends
        what `resolved-lag` held back."""
        ts, last = self._seen_ts, self._sent_checkpoints
        held = final and any(sent < ts for sent in last.values())
        if ts <= self._sent_ts and not held:
            return
        new = ts > self._sent_ts
        if new:
            self._sent_ts = self.summary.checkpoint_ts = ts
            if self.observer is not None:
                self.observer.checkpoint(ts)
        if self.storage is not None:
            self.summary.checkpoints += new
            self.storage.checkpoint(ts, final)
            return
        message = self.encoder.encode_checkpoint(ts)
        if message is None:  # canal-json without the TiDB extension has no checkpoints
            passed = getattr(self.sink, "passed", None)
            if new and passed is not None:
                passed(ts)  # ... but a restart resumes from them, a broker acknowledges them
            return
        self.summary.checkpoints += new
        for topic in self.router.active_topics(
            (t.schema, t.name) for _, t in sorted(self.tables.items())
        ):
            for partition in range(self._partitions_of(topic)):
                where = (topic, partition)
                sent = last.get(where, 0)
                if sent >= ts or (not final and lagged(self.faults, partition, ts, sent)):
                    continue  # sent already, or held back by `resolved-lag`
                self._send(topic, partition, [message])
                self.sink.resolved(topic, partition, ts)
                last[where] = ts

    def _partitions_of(self, topic: str) -> int:
        found = self._partitions.get(topic)
        if found is None:
            found = self._partitions[topic] = self.sink.partition_count(topic, self.partitions)
        return found
