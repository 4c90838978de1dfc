"""Sinks: where encoded records go, and the only package that writes anywhere.

Every sink takes whole Kafka records for one (topic, partition) at a time, as TiCDC's producer
does, gives them offsets from 0 per partition, and is closed when the replay ends. `open_sink`
picks one by the sink URI's scheme.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath, PurePosixPath
from typing import NamedTuple, Protocol, runtime_checkable

from ticdc_sim.config import DEFAULT_PARTITION_NUM, Changefeed, SinkURI, duration_ms
from ticdc_sim.encoders import Message
from ticdc_sim.errors import SimError, Warnings


def overlap(one: str | os.PathLike[str], other: str | os.PathLike[str]) -> bool:
    """Whether two directories (or `s3://BUCKET/PREFIX`es, `place`) are one, or one is
    inside the other (symlinks resolved): outputs in them would refuse, or replace, each
    other's files."""
    mine: PurePath
    theirs: PurePath
    if str(one).startswith(_S3) or str(other).startswith(_S3):
        mine, theirs = PurePosixPath(str(one)), PurePosixPath(str(other))
    else:
        mine, theirs = Path(os.path.realpath(one)), Path(os.path.realpath(other))
    return mine == theirs or mine in theirs.parents or theirs in mine.parents


_S3 = "s3://"
DIRECTORY_SINKS = ("jsonl", "parquet", "file")  # sinks writing a directory


def place(uri: SinkURI) -> str | None:
    """Where a sink's output goes, for `overlap`: its directory, or s3://BUCKET/PREFIX;
    None for a sink without one (kafka, memory, blackhole)."""
    if uri.scheme in DIRECTORY_SINKS:
        return uri.target
    return f"{_S3}{uri.target}" if uri.scheme == "s3" else None


class Record(NamedTuple):
    """One Kafka record as a consumer sees it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Mapping[str, bytes]


class Sink(Protocol):
    max_message_bytes: int | None  # a limit the destination sets, below the changefeed's

    def send(self, topic: str, partition: int, messages: Sequence[Message]) -> None: ...

    def partition_count(self, topic: str, wanted: int | None) -> int:
        """The partition count rows of `topic` are dispatched over; `wanted` is the
        changefeed's partition-num, None when the user gave none."""
        ...

    def resolved(self, topic: str, partition: int, ts: int) -> None:
        """The record just sent to (topic, partition) was a checkpoint at `ts`."""
        ...

    def close(self) -> None: ...

    def abort(self) -> None:
        """Close after a failure upstream: what was sent stays, marked as partial where
        output could otherwise look complete."""
        ...


@runtime_checkable
class Confirmed(Protocol):
    """A sink whose sends are confirmed later, by a broker (Kafka's): a changefeed's
    checkpoint is what the broker acknowledged, and a failure may show after `send` returned."""

    def failure(self) -> SimError | None:
        """The first send the destination refused or never acknowledged, once there is one
        (it stays: the sink is rebuilt to go on)."""
        ...

    def acknowledged_ts(self) -> int:
        """The checkpoint every partition's broker has acknowledged (0: none yet)."""
        ...

    def discard(self) -> None:
        """Drop what it holds and close, without waiting (a restart sends it again)."""
        ...


@runtime_checkable
class OnDisk(Protocol):
    """A sink writing files it rotates and caps (jsonl, parquet, the storage sink's)."""

    def disk_usage(self) -> tuple[int, int]:
        """Bytes and files of its output kept now."""
        ...

    def removed(self) -> tuple[int, int]:
        """Bytes and files removed so far to keep under the cap."""
        ...

    def remaining(self) -> str:
        """What remains on disk, for a person: `412 MB in 7 files in DIR (from offset X)`."""
        ...

    def durable_ts(self) -> int:
        """The checkpoint up to which everything sent is on disk (0: none yet): where a
        changefeed whose write failed restarts from."""
        ...


class LocalSink:
    """What sinks without a broker share: every topic has the changefeed's partition count,
    no message limit but the changefeed's, checkpoints need no bookkeeping."""

    max_message_bytes: int | None = None

    def partition_count(self, topic: str, wanted: int | None) -> int:
        return wanted or DEFAULT_PARTITION_NUM

    def resolved(self, topic: str, partition: int, ts: int) -> None:
        pass


def open_sink(
    uri: SinkURI,
    *,
    overwrite: bool = False,
    warnings: Warnings | None = None,
    in_place: bool = False,
    feed: Changefeed | None = None,
    retain_bytes: int | None = None,
    kafka_queue_bytes: int | None = None,
) -> Sink:
    """The sink a parsed URI names; jsonl and parquet refuse a non-empty directory unless
    `overwrite`, and write `in_place` for a long-running changefeed (`sinks/staging.py`);
    the storage sink (file://, s3://) reads its settings from the changefeed `feed`.
    `retain_bytes`: a long-running changefeed's cap on the bytes its files keep (0: none,
    `sinks/retention.py`); its jsonl and parquet files then rotate at the changefeed's
    `file-size`, as a CLI run's do only when the sink URI asks for it. Kafka's local queue
    holds `kafka_queue_bytes` (librdkafka's default when None)."""
    if uri.scheme == "kafka":
        from ticdc_sim.sinks.kafka import KafkaSink

        return KafkaSink(uri, warnings, queue_bytes=kafka_queue_bytes)
    kept = retain_bytes or 0
    if uri.scheme in ("jsonl", "parquet"):
        from ticdc_sim.sinks.retention import Rotation

        rotation = Rotation(
            _file_size(uri, feed, retain_bytes is not None), kept, _flush_interval_s(feed)
        )
        if uri.scheme == "jsonl":  # parquet's module loads pyarrow: only when asked for
            from ticdc_sim.sinks.jsonl import JsonlSink

            return JsonlSink(uri.target, overwrite=overwrite, in_place=in_place, rotation=rotation)
        from ticdc_sim.sinks.parquet import ParquetSink

        return ParquetSink(uri.target, overwrite=overwrite, in_place=in_place, rotation=rotation)
    if uri.scheme in ("file", "s3"):
        from ticdc_sim.sinks.storage import StorageSink

        assert feed is not None, "the storage sink needs the changefeed's settings"
        # a service's tables together buffer no more than one table may
        bound = feed.file_size if retain_bytes is not None else None
        return StorageSink(
            feed, overwrite=overwrite, in_place=in_place, retain_bytes=kept, buffer_bytes=bound
        )
    if uri.scheme == "memory":
        from ticdc_sim.sinks.memory import MemorySink

        return MemorySink()
    if uri.scheme == "blackhole":
        from ticdc_sim.sinks.memory import BlackholeSink

        return BlackholeSink()
    raise AssertionError(f"parse_sink_uri let scheme {uri.scheme!r} through")


def _file_size(uri: SinkURI, feed: Changefeed | None, long_running: bool) -> int | None:
    """Where a jsonl or parquet sink starts a new file: the changefeed's `file-size` when it
    runs on (a service's) or its sink URI names one; None: one file per partition, the
    layout a CLI run documents."""
    if not long_running and "file-size" not in uri.params:
        return None
    return feed.file_size if feed is not None else int(uri.params["file-size"])


_DEFAULT_FLUSH_S = 5.0  # TiCDC's flush-interval (cloudstorage/config.go defaultFlushInterval)


def _flush_interval_s(feed: Changefeed | None) -> float:
    if feed is None or not feed.flush_interval:
        return _DEFAULT_FLUSH_S
    return duration_ms(feed.flush_interval) / 1000
