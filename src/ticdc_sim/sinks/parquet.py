"""`parquet://DIR`: Kafka records as a Parquet dataset, `DIR/topic=T/partition=P/part-*.parquet`.

One row per Kafka record, in offset order (the schema is `SCHEMA`, documented in README):
`offset`, `key` and `value` (the exact bytes), `headers`, and for convenience `commit_ts`
(the largest commit ts, or the checkpoint ts, the record carries), `kind` (row, ddl or
checkpoint), `rows`, `schema` and `table`. The directory names are Hive-style, so Spark and
pyarrow read `topic` and `partition` back as columns. The Spark engine writes the same
columns with Spark's writer, several files a partition (one per task), offsets running on
from file to file; `commit_ts` is signed 64-bit for Spark's sake (a TSO stays below 2^63
until the year 3084).

Records are written as a stream: each partition file gets a row group whenever its buffer
holds `ROW_GROUP_ROWS` records or `ROW_GROUP_BYTES` bytes, so memory stays bounded whatever
the run's size. Output is staged like jsonl's (`sinks/staging.py`). A service's changefeed
writes `in_place` and finishes a partition's file at a checkpoint (`flush()`) once its
flush interval has passed, or at `file-size` (`ParquetSink`); the next records start a new
file, `part-<first offset>.parquet`. A file being written is named
`.part-<first offset>.parquet.writing` until it is whole, so a reader never opens half of one;
one that cannot be written whole (a full disk) is removed, never renamed in.
"""

from __future__ import annotations

import contextlib
import math
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ticdc_sim.encoders import Message
from ticdc_sim.errors import ConfigError, SimError
from ticdc_sim.sinks import Record
from ticdc_sim.sinks.retention import ONE_FILE, Retention, Rotation, cannot_write
from ticdc_sim.sinks.staging import BESIDE, StagedSink, Staging

SCHEMA = pa.schema(
    [
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("headers", pa.map_(pa.string(), pa.binary()), nullable=False),
        pa.field("commit_ts", pa.int64(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("rows", pa.int32(), nullable=False),
        pa.field("schema", pa.string(), nullable=False),
        pa.field("table", pa.string(), nullable=False),
    ]
)
ROW_GROUP_ROWS = 64 * 1024
ROW_GROUP_BYTES = 32 << 20
_TOPIC_DIR = re.compile(r"topic=([A-Za-z0-9._-]+)")
_PARTITION_DIR = re.compile(r"partition=(0|[1-9][0-9]*)")
_PART = re.compile(r"part-[A-Za-z0-9._-]*\.parquet")
_WRITING = re.compile(r"\.part-[0-9]+\.parquet\.writing")  # left by a service that was killed


class _PartitionFile:
    """One partition's file: records are kept as they come and turned into a row group's
    columns in a few passes when the buffer is full."""

    def __init__(self, folder: Path, offset: int) -> None:
        self.path = folder / f"part-{offset}.parquet"
        self.writing = folder / f".part-{offset}.parquet.writing"
        self.writer = pq.ParquetWriter(
            self.writing, SCHEMA, compression="zstd", compression_level=1
        )
        self.first = self.offset = offset
        self.pending: list[Message] = []
        self.checkpoints: list[int] = []  # indexes into `pending` of checkpoint records
        self.bytes = 0
        self.last_ts = 0  # the last checkpoint the file holds

    def add(self, messages: Sequence[Message]) -> None:
        self.pending.extend(messages)
        self.bytes += sum(len(m.value or b"") + len(m.key or b"") for m in messages)
        while len(self.pending) >= ROW_GROUP_ROWS:
            self.flush(ROW_GROUP_ROWS)
        if self.bytes >= ROW_GROUP_BYTES:
            self.flush()

    def mark_checkpoint(self) -> None:
        """The record just added carried a checkpoint, not a DDL."""
        if self.pending:
            self.checkpoints.append(len(self.pending) - 1)

    def flush(self, count: int | None = None) -> None:
        """A row group of the first `count` records kept (all by default)."""
        pending = self.pending[:count]
        if not pending:
            return
        count = len(pending)
        checkpoints = [i for i in self.checkpoints if i < count]
        columns = [
            pa.array(np.arange(self.offset, self.offset + count, dtype=np.int64)),
            *record_columns(pending, checkpoints),
        ]
        try:
            self.writer.write_table(pa.Table.from_arrays(columns, schema=SCHEMA))
        except (OSError, pa.ArrowException) as e:
            raise cannot_write(self.path, e) from None
        self.offset += count
        self.pending = self.pending[count:]
        self.checkpoints = [i - count for i in self.checkpoints if i >= count]
        self.bytes = sum(len(m.value or b"") + len(m.key or b"") for m in self.pending)

    def close(self) -> None:
        """The file whole, under its own name (one that fails is `discard`ed, never named)."""
        self.flush()
        try:
            self.writer.close()
            self.writing.rename(self.path)
        except (OSError, pa.ArrowException) as e:
            raise cannot_write(self.path, e) from None

    def size(self) -> int:
        """Bytes on disk, and those pending for the next row group."""
        try:
            return self.writing.stat().st_size + self.bytes
        except OSError:
            return self.bytes

    def discard(self) -> None:
        """A file that could not be written whole goes: the files before it stay valid, and
        the next starts where they end."""
        with contextlib.suppress(OSError, pa.ArrowException):
            self.writer.close()
        with contextlib.suppress(OSError):
            self.writing.unlink()


_KINDS = pa.array(["ddl", "row", "checkpoint"], pa.string())
_HEADERS = pa.map_(pa.string(), pa.binary())


def record_columns(messages: Sequence[Message], checkpoints: Sequence[int]) -> list[pa.Array]:
    """The columns of `SCHEMA` after `offset` (key, value, headers, commit_ts, kind, rows,
    schema, table) for these records; `checkpoints`: the indexes of checkpoint records.
    The Spark engine builds its records with it too."""
    key, value, ts, rows, schema, table, headers = zip(*messages, strict=True)
    row_counts = np.array(rows, dtype=np.int32)
    marks = (row_counts > 0).astype(np.int8)  # a row or a DDL ...
    marks[list(checkpoints)] = 2  # ... or a checkpoint
    return [
        pa.array(key, pa.binary()),
        pa.array(value, pa.binary()),
        _headers(headers),
        pa.array(ts, pa.int64()),
        _KINDS.take(pa.array(marks)),
        pa.array(row_counts),
        pa.array(schema, pa.string()),
        pa.array(table, pa.string()),
    ]


def _headers(headers: Sequence[Mapping[str, bytes]]) -> pa.Array:
    """Records' headers as the `headers` column (map<string, binary>)."""
    if any(headers):
        return pa.array([list(h.items()) for h in headers], _HEADERS)
    empty = np.zeros(len(headers) + 1, dtype=np.int32)  # most protocols set none
    return pa.MapArray.from_arrays(
        empty, pa.array([], pa.string()), pa.array([], pa.binary()), type=_HEADERS
    )


class ParquetSink(StagedSink):
    """With a `rotation.file_size` (a service's changefeed, or a sink URI's `file-size`), a
    partition's file is finished once it holds that many bytes, as TiCDC's storage sink
    starts a new file at `file-size`; a service's checkpoint (`flush`) finishes it too once
    `interval_s` has passed since the partition's last file was finished (TiCDC's
    `flush-interval`), so a changefeed under load writes a file per partition every few
    seconds, not one a request. Without it, a CLI run writes one file per partition
    (`part-0.parquet`), and each checkpoint finishes the files."""

    def __init__(
        self,
        directory: str,
        *,
        overwrite: bool = False,
        in_place: bool = False,
        rotation: Rotation = ONE_FILE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.staging: Staging = Staging(
            Path(directory), "parquet", overwrite, _ours, in_place=in_place
        )
        self.files: dict[tuple[str, int], _PartitionFile] = {}
        self.offsets: dict[tuple[str, int], int] = {}  # where finished files left off
        self.file_size, self.interval_s, self.clock = rotation.file_size, rotation.interval_s, clock
        # the last checkpoint in each partition's finished files (a restart after a failed
        # write resends from the smallest: the unfinished file went with the failure)
        self.durable: dict[tuple[str, int], int] = {}
        self.finished: dict[tuple[str, int], float] = {}  # when each partition's last was
        self.retention = Retention(rotation.retain_bytes)

    def _file(self, topic: str, partition: int) -> _PartitionFile:
        found = self.files.get((topic, partition))
        if found is None:
            folder = self.staging.work / f"topic={topic}" / f"partition={partition}"
            offset = self.offsets.get((topic, partition), 0)
            try:  # a full disk, or no file descriptor left (a file per partition stays open)
                folder.mkdir(parents=True, exist_ok=True)
                found = self.files[(topic, partition)] = _PartitionFile(folder, offset)
            except (OSError, pa.ArrowException) as e:
                raise cannot_write(folder, e) from None
        return found

    def send(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        where = (topic, partition)
        out = self._file(topic, partition)
        if self.file_size is not None and out.size() >= self.file_size:
            # full: finished before the next records, not after (a checkpoint's `resolved`
            # marks the record just sent, in the file it went to)
            self._finish_file(where)
            out = self._file(topic, partition)
        with self._discarding(where, out):
            out.add(messages)

    def resolved(self, topic: str, partition: int, ts: int) -> None:
        out = self.files[(topic, partition)]
        out.mark_checkpoint()
        out.last_ts = ts

    def passed(self, ts: int) -> None:
        """A checkpoint with no record (canal-json without the TiDB extension): what each
        open file holds is covered by it."""
        for out in self.files.values():
            out.last_ts = ts

    def durable_ts(self) -> int:
        """The checkpoint every partition's finished files reach (0: one has none yet)."""
        partitions = self.durable.keys() | self.files.keys()
        return min((self.durable.get(w, 0) for w in partitions), default=0)

    def flush(self) -> None:
        if self.file_size is None:
            self._finish()
            return
        now = self.clock()
        for where, out in list(self.files.items()):
            due = now - self.finished.get(where, -math.inf) >= self.interval_s
            if due or out.size() >= self.file_size:
                self._finish_file(where)
        self.retention.trim(self._live()[0])

    def _finish(self) -> None:
        errors = []
        for where in list(self.files):
            try:
                self._finish_file(where)
            except SimError as e:
                errors.append(e)
        if errors:
            raise errors[0]

    def _finish_file(self, where: tuple[str, int]) -> None:
        out = self.files.pop(where)
        with self._discarding(where, out):
            out.close()
        self.offsets[where] = out.offset
        self.durable[where] = max(self.durable.get(where, 0), out.last_ts)
        self.finished[where] = self.clock()
        self.retention.add(str(out.path), out.path.stat().st_size)
        self.retention.trim(self._live()[0])

    @contextlib.contextmanager
    def _discarding(self, where: tuple[str, int], out: _PartitionFile) -> Iterator[None]:
        """A write that fails takes the partition's unfinished file with it (the records in
        it are sent again from the changefeed's checkpoint)."""
        try:
            yield
        except SimError:
            out.discard()
            self.files.pop(where, None)
            raise

    def _live(self) -> tuple[int, int]:
        return sum(out.size() for out in self.files.values()), len(self.files)

    # -- what remains (`sinks.OnDisk`) -----------------------------------------------------------

    def disk_usage(self) -> tuple[int, int]:
        return self.retention.usage(self._live())

    def removed(self) -> tuple[int, int]:
        return self.retention.removed()

    def remaining(self) -> str:
        first = {where: out.first for where, out in self.files.items()}
        for name, _ in self.retention.closed:
            path = Path(name)
            topic = path.parent.parent.name.split("=", 1)[1]
            partition = int(path.parent.name.split("=", 1)[1])
            offset = int(path.name[5:-8])
            first[(topic, partition)] = min(first.get((topic, partition), offset), offset)
        for where, offset in self.offsets.items():
            first.setdefault(where, offset)  # every file of it removed
        return self.retention.remaining(self.disk_usage(), self.staging.location(), first)


def _ours(entry: Path) -> bool:
    """A `topic=<t>` directory of `partition=<p>/part-*.parquet` files."""
    if not (entry.is_dir() and _TOPIC_DIR.fullmatch(entry.name)):
        return False
    return all(
        p.is_dir()
        and _PARTITION_DIR.fullmatch(p.name)
        and all(_PART.fullmatch(f.name) or _WRITING.fullmatch(f.name) for f in p.iterdir())
        for p in entry.iterdir()
    )


def read_parquet(directory: str) -> Iterator[Record]:
    """Every record of a parquet:// dataset: topics by name, partitions by number, offsets."""
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"parquet source: {root} is not a directory")
    topics = sorted(e for e in root.iterdir() if not (e.name in BESIDE and e.is_file()))
    for entry in topics:  # anything else is not what a parquet sink wrote: said, not skipped
        if not _ours(entry):
            raise ConfigError(
                f"parquet source: {entry} is not a topic=<t> directory of"
                " partition=<p>/part-*.parquet files"
            )
    for topic_dir in topics:
        topic = topic_dir.name.split("=", 1)[1]
        parts = [p for p in topic_dir.iterdir() if _PARTITION_DIR.fullmatch(p.name)]
        for part_dir in sorted(parts, key=lambda p: int(p.name.split("=", 1)[1])):
            partition = int(part_dir.name.split("=", 1)[1])
            # files follow each other by offset; each is opened only while it is read (a
            # service's changefeed may have written thousands)
            files = [_first_offset(f) for f in part_dir.iterdir() if _PART.fullmatch(f.name)]
            expected: int | None = None  # the first kept: a service's cap removes the oldest
            for _, path in sorted(files):
                with _open(path) as file:
                    for record in _read_file(path, file, topic, partition):
                        if expected is None:
                            expected = record.offset
                        if record.offset != expected:
                            raise SimError(f"{path}: offset {record.offset}, expected {expected}")
                        expected += 1
                        yield record


def _first_offset(path: Path) -> tuple[int, Path]:
    with _open(path) as file:
        if not file.num_row_groups:
            return -1, path
        return file.read_row_group(0, columns=["offset"]).column(0)[0].as_py(), path


def _open(path: Path) -> pq.ParquetFile:
    """A record file of ours, checked."""
    try:
        file = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as e:
        raise SimError(f"{path}: not a readable Parquet file ({e})") from None
    found = file.schema_arrow
    if found.names != SCHEMA.names or any(
        not found.field(f.name).type.equals(f.type, check_metadata=False)
        and not (pa.types.is_map(f.type) and pa.types.is_map(found.field(f.name).type))
        for f in SCHEMA
    ):
        file.close()
        raise SimError(f"{path}: not a ticdc-sim record file (schema {found})")
    return file


def _read_file(path: Path, file: pq.ParquetFile, topic: str, partition: int) -> Iterator[Record]:
    try:
        for batch in file.iter_batches(columns=["offset", "key", "value", "headers"]):
            offsets, keys, values, headers = (batch.column(i).to_pylist() for i in range(4))
            for offset, key, value, pairs in zip(offsets, keys, values, headers, strict=True):
                yield Record(topic, partition, offset, key, value, dict(pairs))
    except (OSError, pa.ArrowException) as e:
        raise SimError(f"{path}: {e}") from None
