"""`jsonl://DIR`: Kafka records as fixture files, `DIR/<topic>/partition-<p>.jsonl`.

One record a line, `{"offset":n,"key":base64|null,"value":base64|null,"headers":{name:base64}}`,
offsets from 0 per partition. Lines are buffered per file and written whole with `os.write`;
a write that fails part-way is cut back to the last whole line, so a crash or a full disk never
leaves half a line for a consumer to trip on.

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
from ticdc_sim.sinks.staging import BESIDE, StagedSink, Staging

_FLUSH_BYTES = 1 << 20
_PARTITION_FILE = re.compile(r"partition-(0|[1-9][0-9]*)\.jsonl")


def _b64(data: bytes | None) -> bytes:
    return b"null" if data is None else b'"' + b2a_base64(data, newline=False) + b'"'


def _headers(headers: Mapping[str, bytes]) -> bytes:
    if not headers:
        return b"{}"
    return orjson.dumps({k: b2a_base64(v, newline=False).decode() for k, v in headers.items()})


class _PartitionFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.offset = 0
        self.written = 0  # bytes of whole lines on disk
        self.buffer = bytearray()

    def flush(self) -> None:
        data, done = bytes(self.buffer), 0
        try:
            while done < len(data):
                done += os.write(self.fd, data[done:] if done else data)
        except OSError as e:
            os.ftruncate(self.fd, self.written)  # no half line stays behind
            raise SimError(f"cannot write {self.path}: {e.strerror}") from None
        self.written += len(self.buffer)
        self.buffer.clear()


class JsonlFiles:
    """Partition files written straight into `work`; `finish` flushes and closes them. The
    Spark engine's tasks write each partition this way, into the driver's staging."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.files: dict[tuple[str, int], _PartitionFile] = {}

    def _file(self, topic: str, partition: int) -> _PartitionFile:
        found = self.files.get((topic, partition))
        if found is None:
            path = self.work / topic / f"partition-{partition}.jsonl"
            try:  # a full disk, or no file descriptor left (a file per partition stays open)
                path.parent.mkdir(exist_ok=True)
                found = self.files[(topic, partition)] = _PartitionFile(path)
            except OSError as e:
                raise SimError(f"cannot write {path}: {e.strerror}") from None
        return found

    def send(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        out = self._file(topic, partition)
        buffer = out.buffer
        for m in messages:
            buffer += b'{"offset":%d,"key":%s,"value":%s,"headers":%s}\n' % (
                out.offset,
                _b64(m.key),
                _b64(m.value),
                _headers(m.headers),
            )
            out.offset += 1
        if len(buffer) >= _FLUSH_BYTES:
            out.flush()

    def flush(self) -> None:
        for out in self.files.values():
            if out.buffer:
                out.flush()

    def finish(self) -> None:
        try:
            self.flush()
        finally:
            for out in self.files.values():
                os.close(out.fd)
            self.files.clear()


class JsonlSink(JsonlFiles, StagedSink):
    def __init__(self, directory: str, *, overwrite: bool = False, in_place: bool = False) -> None:
        self.root = Path(directory)
        self.staging = Staging(self.root, "jsonl", overwrite, _ours, in_place=in_place)
        super().__init__(self.staging.work)

    def _finish(self) -> None:
        self.finish()


def _ours(entry: Path) -> bool:
    """A topic directory of partition files."""
    return entry.is_dir() and all(
        f.is_file() and _PARTITION_FILE.fullmatch(f.name) for f in entry.iterdir()
    )


def read_jsonl(directory: str) -> Iterator[Record]:
    """Every record of a jsonl directory: topics by name, partitions by number, then offset."""
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
        files = list(topic_dir.iterdir())
        for path in sorted(files, key=lambda f: int(f.name[10:-6])):
            yield from _read_partition(path, topic_dir.name, int(path.name[10:-6]))


def _unb64(text: str) -> bytes:
    """Standard base64 as the sink writes it; anything else is refused, not skipped over
    (binascii's default drops characters it does not know)."""
    return a2b_base64(text, strict_mode=True)


def _read_partition(path: Path, topic: str, partition: int) -> Iterator[Record]:
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
            if offset != number - 1:
                raise SimError(f"{where}: offset {offset}, expected {number - 1}")
            yield record
