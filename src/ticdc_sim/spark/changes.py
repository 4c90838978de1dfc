"""Kafka records from a user's own DataFrame of row changes and a table model
(`records_from_changes`): the dispatch, batching, encoding and checkpoints of the workload
job (`spark/job.py`), over rows that a user's PySpark code made.

The changes DataFrame has one row per row change:
- `commit_ts` (long): the TSO of its transaction (physical ms << 18 | logical); rows with
  the same commit_ts are one transaction;
- `op` (string): insert, update or delete;
- `before` and `after` (structs with the table's columns by name): the old image (null
  for an insert) and the new one (null for a delete).

Values are converted as TiDB stores them for the column's type (a DECIMAL(10,2) gets two
decimals, a too-long VARCHAR is an error). A transaction's rows go to the changefeed's
pipeline as TiKV records them (`generator/capture.py`: in the order of TiCDC's sorter,
deletes, updates, inserts, each by row key; a changed handle is a delete and an insert),
and the pipeline captures them as the changefeed says: updates that change a handle-key or
unique-key column split into a delete and an insert as TiCDC's MQ sinks do (unless
`output-raw-change-event`), insert-shaped without old values. A table without a
clustered primary key has `_tidb_rowid` as its row key, which the changes do not carry:
its rows are ordered by primary key and carry no row id. The table's CREATE TABLE is
replicated 1 ms before the first change.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ticdc_sim.config import Changefeed
from ticdc_sim.errors import SimError, SQLError
from ticdc_sim.generator import capture
from ticdc_sim.generator.capture import RowKeys
from ticdc_sim.generator.sql.engine import Engine, EngineConfig
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.generator.sql.values import column_converter
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.table import TableInfo
from ticdc_sim.model.tso import compose_ts, physical_ms
from ticdc_sim.pipeline import CHECKPOINT_INTERVAL_MS, Pipeline
from ticdc_sim.spark.job import RANGED, Collect, by_range, number

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_RANGES_PER_CORE = 4
_IMAGES = {
    "insert": "an after image and no before",
    "update": "both images",
    "delete": "a before image and no after",
}


def table_model(ddl: str, database: str = "test") -> DDLEvent:
    """The CREATE TABLE of `ddl`, run through the SQL engine: the table model."""
    engine = Engine(EngineConfig(database=database))
    try:
        events = [e for e in engine.run(split_script(ddl.splitlines(keepends=True), "ddl"))]
    except SQLError as e:
        raise SimError(f"ddl: {e}") from None
    created = [e for e in events if isinstance(e, DDLEvent) and e.table_info is not None]
    if len(created) != 1 or created[0].table_info is None or not created[0].table_info.columns:
        raise SimError("ddl: one CREATE TABLE")
    return created[0]


@dataclass(frozen=True)
class ChangesPlan:
    """What every task needs: the table, its CREATE TABLE event, the changefeed, and how
    the run's 1 s ticker cells fall into ranges."""

    ddl: DDLEvent
    feed: Changefeed
    partitions: dict[str, int]
    max_message_bytes: int | None
    origin_ms: int  # the ticker's first tick is a second after the CREATE TABLE
    cells: int
    ranges: int

    @property
    def info(self) -> TableInfo:
        assert self.ddl.table_info is not None
        return self.ddl.table_info

    def range_start_ms(self, range_: int) -> int:
        first_cell = -(-range_ * self.cells // self.ranges)
        return self.origin_ms + first_cell * CHECKPOINT_INTERVAL_MS


def plan_changes(
    spark: SparkSession,
    changes: DataFrame,
    created: DDLEvent,
    pipeline: Pipeline,
    limit: int | None,
) -> ChangesPlan:
    info = created.table_info
    assert info is not None
    for side in ("before", "after"):
        _check_struct(changes, side, info)
    bounds = changes.selectExpr("min(commit_ts) as low", "max(commit_ts) as high").first()
    if bounds is None or bounds["low"] is None:
        raise SimError("changes: no rows")
    low, high = int(bounds["low"]), int(bounds["high"])
    if physical_ms(low) < 2:
        raise SimError(f"changes: commit_ts {low} is not a TSO (physical ms << 18 | logical)")
    ts = compose_ts(physical_ms(low) - 1, 1)  # the CREATE TABLE, just before the first row
    created = replace(created, start_ts=ts - 1, commit_ts=ts, table_info=info.evolve(update_ts=ts))
    origin = physical_ms(ts)
    cells = (physical_ms(high) - origin) // CHECKPOINT_INTERVAL_MS + 1
    ranges = max(1, min(cells, spark.sparkContext.defaultParallelism * _RANGES_PER_CORE))
    partitions = pipeline.topics([created])
    return ChangesPlan(created, pipeline.feed, partitions, limit, origin, cells, ranges)


def _check_struct(changes: DataFrame, side: str, info: TableInfo) -> None:
    from pyspark.sql.types import StructType

    fields = {f.name: f for f in changes.schema.fields}
    for needed in ("commit_ts", "op", side):
        if needed not in fields:
            raise SimError(f"changes: no column {needed!r} (commit_ts, op, before, after)")
    struct = fields[side].dataType
    if not isinstance(struct, StructType):
        raise SimError(f"changes.{side}: a struct of {info.name}'s columns, not {struct}")
    names = {f.name.lower() for f in struct.fields}
    columns = {c.name.lower() for c in info.columns}
    missing, unknown = sorted(columns - names), sorted(names - columns)
    if missing or unknown:
        what = f"lacks {missing[0]}" if missing else f"has {unknown[0]}, not a column"
        raise SimError(f"changes.{side}: {what} of {info.name}")


def ranged_changes(plan: ChangesPlan, changes: DataFrame) -> DataFrame:
    """The changes' records, numbered per (range, topic, partition)."""
    spark = changes.sparkSession
    cell = f"((shiftright(commit_ts, 18) - {plan.origin_ms}) div {CHECKPOINT_INTERVAL_MS})"
    from pyspark.sql import functions as F

    rows = changes.select(
        F.expr(f"cast({cell} * {plan.ranges} div {plan.cells} as int)").alias("range"),
        F.col("commit_ts").cast("long").alias("commit_ts"),
        F.col("op").cast("string").alias("op"),
        "before",
        "after",
    )
    marker = spark.range(1).select(  # range 0 carries the CREATE TABLE, rows or not
        F.lit(0).alias("range"),
        F.lit(-1).cast("long").alias("commit_ts"),
        F.lit(None).cast("string").alias("op"),
        F.lit(None).cast(changes.schema["before"].dataType).alias("before"),
        F.lit(None).cast(changes.schema["after"].dataType).alias("after"),
    )
    return (
        by_range(rows.unionByName(marker), plan.ranges)
        .sortWithinPartitions("range", "commit_ts")
        .mapInArrow(lambda batches: change_records(plan, batches), RANGED)
    )


def change_records(
    plan: ChangesPlan, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Changes sorted by (range, commit_ts) to each range's records."""
    info = plan.info
    converters = [column_converter(c, lambda: dt.UTC) for c in info.columns]
    names = [c.name.lower() for c in info.columns]
    keys = RowKeys.of(info)

    def image(given: dict[str, Any] | None, commit_ts: int, side: str) -> tuple[Any, ...] | None:
        if given is None:
            return None
        values = {k.lower(): v for k, v in given.items()}
        out = []
        for name, convert in zip(names, converters, strict=True):
            value = values.get(name)
            if isinstance(value, dt.datetime) and value.tzinfo is not None:
                value = value.astimezone(dt.UTC).replace(tzinfo=None)  # Spark's TimestampType
            try:
                out.append(convert(value))
            except SQLError as e:
                raise SimError(f"changes at commit_ts {commit_ts}: {side}.{name}: {e}") from None
        return tuple(out)

    def events(commit_ts: int, rows: list[tuple[str, Any, Any]]) -> list[RowChangedEvent]:
        changes: list[capture.Change] = []
        for op, before_given, after_given in rows:
            if op not in _IMAGES:
                raise SimError(
                    f"changes at commit_ts {commit_ts}: op {op!r} (insert, update, delete)"
                )
            before = image(before_given, commit_ts, "before")
            after = image(after_given, commit_ts, "after")
            if (before is None) != (op == "insert") or (after is None) != (op == "delete"):
                wanted = _IMAGES[op]
                raise SimError(f"changes at commit_ts {commit_ts}: an {op} has {wanted}")
            capture.add_change(changes, keys, before, after, commit_ts - 1, commit_ts)
        return capture.in_order(changes)

    pipeline: Pipeline | None = None
    sink: Collect | None = None
    current = -1
    for batch in batches:
        ranges, stamps, ops, befores, afters = (
            batch.column(n).to_pylist() for n in ("range", "commit_ts", "op", "before", "after")
        )
        for range_, group in itertools.groupby(
            zip(ranges, stamps, ops, befores, afters, strict=True), key=lambda r: r[0]
        ):
            if range_ != current:
                if pipeline is not None and sink is not None:
                    pipeline.close()
                    yield from _taken(sink)
                current = range_
                sink = Collect(plan.partitions, plan.max_message_bytes, range_)
                pipeline = Pipeline(plan.feed, sink, register_at_ddl=True)
                if range_ == 0:
                    pipeline.push(plan.ddl)
                else:
                    start = compose_ts(plan.range_start_ms(range_), 0) - 1
                    pipeline.resume([plan.ddl], start, plan.origin_ms)
            assert pipeline is not None and sink is not None
            for commit_ts, rows in itertools.groupby(group, key=lambda r: r[1]):
                if commit_ts < 0:
                    continue
                if commit_ts <= plan.ddl.commit_ts:
                    raise SimError(f"changes: commit_ts {commit_ts} is not a TSO")
                for event in events(commit_ts, [(op, b, a) for _, _, op, b, a in rows]):
                    pipeline.push(event)
            yield from _taken(sink, 8192)
    if pipeline is not None and sink is not None:
        pipeline.close()
        yield from _taken(sink)


def _taken(sink: Collect, at_least: int = 1) -> Iterator[pa.RecordBatch]:
    batch = sink.take(at_least)
    if batch is not None:
        yield batch


def records_from_changes(
    spark: SparkSession,
    changes: DataFrame,
    ddl: str,
    sink_uri: str = "blackhole://?protocol=canal-json",
    config: str | None = None,
    database: str = "test",
) -> DataFrame:
    """The Kafka records TiCDC would write for `changes` (see the module's docstring) of
    the table `ddl` creates (in `database` unless it names one), as `ticdc_sim.spark.records`
    returns them: topic, partition, offset, key, value, headers, commit_ts, kind, rows,
    schema, table. The records are persisted to be numbered; clearCache() frees them."""
    from ticdc_sim.config import changefeed
    from ticdc_sim.errors import Warnings
    from ticdc_sim.spark import _driver_sink
    from ticdc_sim.spark.job import failure

    feed = changefeed(sink_uri, config, "config")
    sink = _driver_sink(feed)
    try:
        pipeline = Pipeline(feed, sink, Warnings(), register_at_ddl=True)
        created = table_model(ddl, database)
        plan = plan_changes(spark, changes, created, pipeline, sink.max_message_bytes)
    finally:
        sink.close()
    try:
        df, _ = number(ranged_changes(plan, changes))
    except Exception as e:
        if isinstance(e, SimError):
            raise
        raise failure(e) from None
    return df
