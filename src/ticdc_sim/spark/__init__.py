"""The Spark engine's entry points: `records` for a user's own PySpark code, `generate` for
`ticdc-sim generate --engine spark`. How the job works is in `spark/job.py`.

    from ticdc_sim.spark import records, session
    spark = session("local[*]")
    df = records(spark, "shop.yaml", "kafka://ignored/shop?protocol=canal-json&partition-num=6")
    df.filter("kind = 'row'").groupBy("partition").count().show()

Importing this package does not import pyspark; its functions do.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from ticdc_sim.config import Changefeed, changefeed
from ticdc_sim.datasets import check_columns, file_format
from ticdc_sim.encoders import WITH_REGISTRY
from ticdc_sim.encoders.registry import SchemaRegistry
from ticdc_sim.errors import ConfigError, SimError, Warnings
from ticdc_sim.generator.workload import check, load
from ticdc_sim.generator.workload.spec import SpecError, Workload
from ticdc_sim.pipeline import Pipeline, registry_file, registry_of
from ticdc_sim.sinks import LocalSink, Sink
from ticdc_sim.sinks.staging import REGISTRY_FILE, Staging, write_atomically
from ticdc_sim.spark import job
from ticdc_sim.spark.changes import records_from_changes
from ticdc_sim.spark.job import session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Report", "generate", "records", "records_from_changes", "session"]


@dataclass
class Report:
    """What a Spark run wrote: records per (topic, partition), in how many ranges; the row
    events, DDL events and checkpoints they carry (as the one-process run counts them)."""

    records: dict[tuple[str, int], int] = field(default_factory=dict)
    ranges: int = 0
    rows: int = 0
    ddls: int = 0
    checkpoints: int = 0

    @classmethod
    def of(cls, tally: job.Tally, ranges: int, records: dict[tuple[str, int], int]) -> Report:
        return cls(records, ranges, tally.rows, len(tally.ddls), len(tally.checkpoints))

    def per_topic(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for (topic, _), count in sorted(self.records.items()):
            out[topic] = out.get(topic, 0) + count
        return out


def records(
    spark: SparkSession,
    spec: Workload | str | Path,
    sink_uri: str = "blackhole://?protocol=canal-json",
    config: str | None = None,
    seed: int | None = None,
) -> DataFrame:
    """The Kafka records TiCDC would write for a workload `spec` (a YAML path or a loaded
    spec), as a DataFrame: topic, partition, offset, key, value, headers, commit_ts, kind
    (row, ddl or checkpoint), rows, schema, table. `sink_uri` and `config` (changefeed TOML
    text) say what a changefeed would: protocol, partition-num, dispatchers; for a kafka://
    URI the brokers are asked for the topics' partition counts (and the topics created).

    The records are computed once and persisted on the executors' disks (to number them);
    `spark.catalog.clearCache()` frees them."""
    workload = spec if isinstance(spec, Workload) else load(Path(spec), seed)
    feed = changefeed(sink_uri, config, "config")
    sink = _driver_sink(feed)
    try:
        plan = _plan(spark, workload, feed, sink, Warnings())
    finally:
        sink.close()
    df, _ = job.records(spark, plan)
    return df


def generate(
    spec: Workload,
    feed: Changefeed,
    master: str,
    *,
    overwrite: bool = False,
    warnings: Warnings | None = None,
    spark: SparkSession | None = None,
    conf: Mapping[str, str] | None = None,
) -> Report:
    """Run the workload on Spark (`master`: local[N], spark://host:port, yarn ...) into
    the changefeed's sink: parquet:// by Spark's writer, jsonl:// and kafka:// partition
    by partition in offset order, blackhole:// counted only. `conf`: Spark settings for
    the session started here (none when `spark` is given)."""
    warnings = warnings if warnings is not None else Warnings()
    if spark is None and not _MASTER.fullmatch(master):  # before Java says so, at length
        raise ConfigError(
            f"spark master {master!r}: local, local[N], local[*], spark://HOST:PORT, yarn"
            " or k8s://URL"
        )
    scheme = feed.sink.scheme
    if scheme not in ("parquet", "jsonl", "kafka", "blackhole"):
        raise ConfigError(
            f"--engine spark writes parquet://, jsonl://, kafka:// or blackhole://, not {scheme}://"
        )
    staging, ranges = None, None
    if scheme in ("parquet", "jsonl"):
        from ticdc_sim.sinks import jsonl, parquet

        ours = parquet._ours if scheme == "parquet" else jsonl._ours
        staging = Staging(Path(feed.sink.target), scheme, overwrite, ours)
    try:
        driver_sink = _driver_sink(feed, warnings)
    except BaseException:
        if staging is not None:
            staging.keep_partial()
        raise
    try:
        if spark is None:
            try:
                spark = session(master, conf)
            except SimError:  # the JVM's own reason it did not start (a bad --conf ...)
                raise
            except Exception as e:  # a master that is not there ...
                raise SimError(f"spark master {master}: {job.failure(e)}") from None
        plan = _plan(spark, spec, feed, driver_sink, warnings)
        if scheme == "blackhole":
            counted = job.tally(job.ranged(spark, plan))
            return Report.of(counted, plan.ranges, counted.records)
        if staging is not None:  # the ranges' records beside the output, read back
            ranges = Path(f"{staging.work}.ranges")
            shutil.rmtree(ranges, ignore_errors=True)  # left by a run that was killed
            ranged, counts, counted = job.ranged_files(spark, plan, ranges)
            df, written = job.number(ranged, counts)
        else:
            df, written = job.records(spark, plan)
            counted = job.tally(df)  # over the records persisted to number them
        if scheme == "parquet":
            assert staging is not None
            job.write_parquet(df, staging.work)
        elif scheme in ("jsonl", "kafka"):
            target = str(staging.work) if staging is not None else feed.sink.text
            if job.write_ordered(df, plan, target) != written:
                raise SimError("the records written differ from those counted")
    except BaseException as e:
        if staging is not None:
            staging.keep_partial()
        if isinstance(e, Exception) and not isinstance(e, SimError):
            raise job.failure(e) from None
        raise
    finally:
        if spark is not None:
            spark.catalog.clearCache()
        if ranges is not None:
            shutil.rmtree(ranges, ignore_errors=True)
        driver_sink.close()
    if staging is not None:
        if feed.codec.protocol in WITH_REGISTRY and not feed.codec.schema_registry:
            registry = registry_file(_registry(plan))  # avro's schema ids, for decode
            write_atomically(staging.work / REGISTRY_FILE, registry)
        staging.commit()
    return Report.of(counted, plan.ranges, written)


def _registry(plan: job.Plan) -> SchemaRegistry | None:
    """The schemas the tasks registered, each in a registry of its own: a table version's
    as its DDL passes, in commit order (`Pipeline._track`), so that every task that saw a
    DDL gave its schemas the ids the one-process run gives them, and the whole history,
    replayed here, gives the run's registry."""
    copy = job.Replica(plan.spec, plan.feed, plan.tables())
    pipeline = Pipeline(plan.feed, _Counting(), Warnings(), register_at_ddl=True)
    pipeline.resume([*copy.initial, *(ddl for _, ddl in copy.chapters)], 0, 0)
    return pipeline.registry


_MASTER = re.compile(
    r"local(\[(\*|[1-9]\d*)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|yarn|(spark|k8s|mesos)://\S+"
)


def _driver_sink(feed: Changefeed, warnings: Warnings | None = None) -> Sink:
    """What the driver asks about topics: the brokers for Kafka, else the URI's count."""
    if feed.sink.scheme == "kafka":
        from ticdc_sim.sinks.kafka import KafkaSink

        return KafkaSink(feed.sink, warnings)
    return _Counting()


class _Counting(LocalSink):
    def send(self, topic: str, partition: int, messages: object) -> None:
        raise SimError("the driver sends nothing")

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


def _plan(
    spark: SparkSession, spec: Workload, feed: Changefeed, sink: Sink, warnings: Warnings
) -> job.Plan:
    """The job's plan; the sink (the brokers, for Kafka) gives the topics' partitions and
    the message limit as it would to the one-process pipeline."""
    with registry_of(feed) as registry:  # an HTTP one closed once planned
        pipeline = Pipeline(feed, sink, warnings, registry, register_at_ddl=True)
        limit = sink.max_message_bytes  # before other topics may lower it, as in the pipeline
        datasets = _read_datasets(spark, spec)
        check(spec, datasets)  # what would fail mid-run, found before the job starts
        shared = spark.sparkContext.broadcast(datasets) if datasets else None
        parallelism = spark.sparkContext.defaultParallelism
        return job.plan(spec, feed, parallelism, pipeline, limit, shared)


def _read_datasets(spark: SparkSession, spec: Workload) -> dict[int, pa.Table]:
    """The `initial_from` files, read by Spark (CSV: a header, every field text, as
    `ticdc_sim.datasets` reads them), brought to the driver as Arrow, to be broadcast."""
    out = {}
    for i, table in enumerate(spec.tables):
        dataset = table.initial_from
        if dataset is None:
            continue
        path = dataset.path
        try:
            kind = file_format(dataset)
            check_columns(dataset, kind)
        except SpecError as e:
            raise SpecError(e.message, ("tables", i, "initial_from", *e.path)) from None
        try:
            if kind == "parquet":
                df = spark.read.parquet(str(path))
            else:
                df = (
                    spark.read.option("header", True)
                    .option("inferSchema", False)
                    .option("mode", "FAILFAST")
                    .csv(str(path))
                )
            out[i] = df.toArrow()
        except Exception as e:
            raise job.failure(e) from None
    return out
