"""`jsonl://DIR`: Kafka records as fixture files, `DIR/<topic>/partition-<p>.jsonl`.

One record a line, `{"offset":n,"key":base64|null,"value":base64|null,"headers":{name:base64}}`,
offsets from 0 per partition. Lines are buffered per file and written whole with `os.write`;
a write that fails part-way is cut back to the last whole line, so a crash or a full disk never
leaves half a line for a consumer to trip on.

With a `file-size` (a service's changefeed always; a CLI run when its sink URI names one), a
partition's file is closed once the next line would pass it, as
`partition-<p>.<first offset:020d>.jsonl` (names sort as offsets do), and a new live
`partition-<p>.jsonl` starts; a cap (`sinks/retention.py`) removes the oldest closed ones.

Nothing that looks complete is left by a failed run: files are written into `.DIR.partial`
beside DIR and moved into place by `close()`; `abort()` (a failed replay) leaves them as
`DIR.partial` instead, for a reader to see what was sent before the failure. A service's
changefeed writes `in_place` and `flush()`es its lines at each checkpoint
(`sinks/staging.py`).
"""

from __future__ import annotations

import os
import re
from binascii import a2b_base64, b2a_base64
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import orjson

from ticdc_sim.encoders import Message
from ticdc_sim.errors import ConfigError, SimError
from ticdc_sim.sinks import Record
from ticdc_sim.sinks.retention import ONE_FILE, Retention, Rotation, cannot_write
from ticdc_sim.sinks.staging import BESIDE, StagedSink, Staging

_FLUSH_BYTES = 1 << 20
_PARTITION_FILE = re.compile(r"partition-(0|[1-9][0-9]*)(?:\.([0-9]{20}))?\.jsonl")


def _b64(data: bytes | None) -> bytes:
    return b"null" if data is None else b'"' + b2a_base64(data, newline=False) + b'"'


def _headers(headers: Mapping[str, bytes]) -> bytes:
    if not headers:
        return b"{}"
    return orjson.dumps({k: b2a_base64(v, newline=False).decode() for k, v in headers.items()})


class _PartitionFile:
    """A partition's live file, `partition-P.jsonl`; `first` is the offset of its first line
    (a rotated partition's segments before it hold those before)."""

    def __init__(self, folder: Path, partition: int) -> None:
        self.folder, self.partition = folder, partition
        self.path = folder / f"partition-{partition}.jsonl"
        self.fd: int | None = None
        self.first = self.offset = self.kept = 0  # kept: the offset after the last line on disk
        self.written = 0  # bytes of whole lines on disk
        self.buffer = bytearray()
        try:
            self.fd = self._open()
        except OSError as e:
            raise cannot_write(self.path, e) from None

    def _open(self) -> int:
        # appending: a write cut back by `ftruncate` goes on at the new end, not past a hole
        return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)

    def flush(self) -> None:
        """The buffered lines on disk, or none of them: a write that fails is cut back to the
        last whole line, and the lines are dropped (the changefeed sends them again from its
        checkpoint), so offsets run on from what the file holds."""
        data, done = bytes(self.buffer), 0
        try:
            if self.fd is None:  # a rotation that could not open the next file
                self.fd = self._open()
            while done < len(data):
                done += os.write(self.fd, data[done:] if done else data)
        except OSError as e:
            if self.fd is not None:
                os.ftruncate(self.fd, self.written)  # no half line stays behind
            self.buffer.clear()
            self.offset = self.kept
            raise cannot_write(self.path, e) from None
        self.written += len(data)
        self.kept = self.offset
        self.buffer.clear()

    def segment(self) -> Path:
        """The name the live file takes once it is full: its first offset, 20 digits wide, so
        that names sort as offsets do."""
        return self.folder / f"partition-{self.partition}.{self.first:020d}.jsonl"

    def rotate(self) -> tuple[Path, int]:
        """The live file closed under its segment name; the segment's path and size. The
        next flush opens the live file anew."""
        self.flush()
        assert self.fd is not None
        segment, size = self.segment(), self.written
        try:
            os.rename(self.path, segment)
        except OSError as e:
            raise cannot_write(segment, e) from None
        os.close(self.fd)
        self.fd, self.first, self.written = None, self.offset, 0
        return segment, size

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class JsonlFiles:
    """Partition files written straight into `work`; `finish` flushes and closes them. The
    Spark engine's tasks write each partition this way, into the driver's staging.

    With `file_size`, a partition's live file is closed as a segment once the next line would
    take it past that many bytes (a line larger than it gets a segment of its own), as TiCDC's
    storage sink starts a new file at `file-size`; with `retention`, the oldest segments go
    when the sink's files pass its limit."""

    def __init__(
        self, work: Path, file_size: int | None = None, retention: Retention | None = None
    ) -> None:
        self.work = work
        self.file_size = file_size
        self.retention = retention or Retention(0)
        self.files: dict[tuple[str, int], _PartitionFile] = {}
        self._resolved = 0  # the last checkpoint sent, maybe still in a buffer
        self._durable = 0  # the last one every partition's lines up to it are on disk for

    def _file(self, topic: str, partition: int) -> _PartitionFile:
        found = self.files.get((topic, partition))
        if found is None:
            folder = self.work / topic
            try:  # a full disk, or no file descriptor left (a file per partition stays open)
                folder.mkdir(exist_ok=True)
            except OSError as e:
                raise cannot_write(folder, e) from None
            found = self.files[(topic, partition)] = _PartitionFile(folder, partition)
        return found

    def send(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        out = self._file(topic, partition)
        buffer, limit = out.buffer, self.file_size
        for m in messages:
            line = b'{"offset":%d,"key":%s,"value":%s,"headers":%s}\n' % (
                out.offset,
                _b64(m.key),
                _b64(m.value),
                _headers(m.headers),
            )
            size = out.written + len(buffer)
            if limit is not None and size and size + len(line) > limit:
                self._rotate(out)
            buffer += line
            out.offset += 1
        if len(buffer) >= _FLUSH_BYTES:
            out.flush()

    def _rotate(self, out: _PartitionFile) -> None:
        segment, size = out.rotate()
        self.retention.add(str(segment), size)
        self.retention.trim(self._live()[0])

    def _live(self) -> tuple[int, int]:
        return sum(out.written for out in self.files.values()), len(self.files)

    def resolved(self, topic: str, partition: int, ts: int) -> None:
        self._resolved = max(self._resolved, ts)

    def passed(self, ts: int) -> None:
        """A checkpoint with no record (canal-json without the TiDB extension)."""
        self._resolved = max(self._resolved, ts)

    def flush(self) -> None:
        for out in self.files.values():
            if out.buffer:
                out.flush()
        self._durable = self._resolved
        self.retention.trim(self._live()[0])

    def durable_ts(self) -> int:
        return self._durable

    def finish(self) -> None:
        try:
            self.flush()
        finally:
            for out in self.files.values():
                out.close()

    # -- what remains (`sinks.OnDisk`) -----------------------------------------------------------

    def disk_usage(self) -> tuple[int, int]:
        return self.retention.usage(self._live())

    def removed(self) -> tuple[int, int]:
        return self.retention.removed()

    def first_offsets(self) -> dict[tuple[str, int], int]:
        """Each partition's first offset still on disk."""
        first = {where: out.first for where, out in self.files.items()}
        for name, _ in self.retention.closed:
            path = Path(name)
            topic, (partition, offset) = path.parent.name, _segment_of(path.name)
            first[(topic, partition)] = min(first.get((topic, partition), offset), offset)
        return first


class JsonlSink(JsonlFiles, StagedSink):
    def __init__(
        self,
        directory: str,
        *,
        overwrite: bool = False,
        in_place: bool = False,
        rotation: Rotation = ONE_FILE,
    ) -> None:
        self.root = Path(directory)
        self.staging = Staging(self.root, "jsonl", overwrite, _ours, in_place=in_place)
        super().__init__(self.staging.work, rotation.file_size, Retention(rotation.retain_bytes))

    def _finish(self) -> None:
        self.finish()

    def remaining(self) -> str:
        where = self.staging.location()
        return self.retention.remaining(self.disk_usage(), where, self.first_offsets())


def _segment_of(name: str) -> tuple[int, int]:
    """A jsonl file's partition and first offset (-1 for the live file: it follows the
    segments, whatever its first offset)."""
    found = _PARTITION_FILE.fullmatch(name)
    assert found is not None
    return int(found.group(1)), int(found.group(2)) if found.group(2) else -1


def _ours(entry: Path) -> bool:
    """A topic directory of partition files."""
    return entry.is_dir() and all(
        f.is_file() and _PARTITION_FILE.fullmatch(f.name) for f in entry.iterdir()
    )


def read_jsonl(directory: str) -> Iterator[Record]:
    """Every record of a jsonl directory: topics by name, partitions by number, then offset
    (a rotated partition's segments in order, its live file last)."""
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"jsonl source: {root} is not a directory")
    topics = sorted(e for e in root.iterdir() if not (e.name in BESIDE and e.is_file()))
    for entry in topics:  # anything else is not what a jsonl sink wrote: said, not skipped
        if not _ours(entry):
            raise ConfigError(
                f"jsonl source: {entry} is not a topic directory of partition-<p>.jsonl files"
            )
    for topic_dir in topics:
        files: dict[int, list[tuple[int, Path]]] = {}
        for path in topic_dir.iterdir():
            partition, first = _segment_of(path.name)
            files.setdefault(partition, []).append((first if first >= 0 else 1 << 64, path))
        for partition in sorted(files):
            expected: list[int] = []  # the next offset, once the first record is read
            for first, path in sorted(files[partition]):
                named = first if first < 1 << 64 else None
                yield from _read_partition(path, topic_dir.name, partition, expected, named)


def _unb64(text: str) -> bytes:
    """Standard base64 as the sink writes it; anything else is refused, not skipped over
    (binascii's default drops characters it does not know)."""
    return a2b_base64(text, strict_mode=True)


def _read_partition(
    path: Path, topic: str, partition: int, expected: list[int], named: int | None
) -> Iterator[Record]:
    """One file's records. Offsets run on from file to file (`expected`, shared by a
    partition's files); the first file read may start past 0, where a cap removed older
    segments; a segment starts at the offset its name gives."""
    try:
        handle = path.open("rb")
    except OSError as e:
        raise SimError(f"cannot read {path}: {e.strerror}") from None
    with handle:
        for number, line in enumerate(handle, 1):
            where = f"{path}:{number}"
            if not line.endswith(b"\n"):
                raise SimError(f"{where}: the last line is cut off (no newline)")
            try:
                doc = orjson.loads(line)
                offset, key, value = doc["offset"], doc["key"], doc["value"]
                headers = {k: _unb64(v) for k, v in doc.get("headers", {}).items()}
                record = Record(
                    topic,
                    partition,
                    offset,
                    None if key is None else _unb64(key),
                    None if value is None else _unb64(value),
                    headers,
                )
            except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as e:
                raise SimError(f"{where}: not a jsonl record ({e})") from None
            if number == 1 and named is not None and offset != named:
                raise SimError(f"{where}: offset {offset}, expected {named} (the file's name)")
            if not expected:  # where the partition's kept records start
                expected.append(offset)
            if offset != expected[0]:
                raise SimError(f"{where}: offset {offset}, expected {expected[0]}")
            expected[0] += 1
            yield record
