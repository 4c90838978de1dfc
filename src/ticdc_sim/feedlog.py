"""A changefeed's log of the records it sent (`FeedLog`), which the read API pages through
and tails, and the sink wrapper that fills it (`LoggedSink`)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from operator import itemgetter
from typing import Generic, TypeVar, cast

from ticdc_sim.encoders import Message
from ticdc_sim.sinks import Record, Sink
from ticdc_sim.sinks.staging import StagedSink
from ticdc_sim.sinks.storage import StorageSink

# What a kept record costs beyond its key, value and header bytes: 177 B measured with
# tracemalloc over 100k records (CPython 3.11, 64-bit), that is the Record tuple 104 B (GC
# header included), its offset int 28 B, the value's bytes header 33 B and the two references
# to it (the log's order and its partition's) 16 B. A key adds another 33 B, left out
# (canal-json, the default protocol, sends none): the bound is on memory, and this is close.
RECORD_OVERHEAD = 176

T = TypeVar("T")


@dataclass(frozen=True)
class Retain:
    """How much of what a changefeed sent its log keeps for reading: the newest records, in
    all partitions, up to both bounds."""

    records: int = sys.maxsize
    bytes: int = sys.maxsize


def size(record: Record) -> int:
    """What a kept record counts towards `Retain.bytes` (`FeedLog.add` and `_trim` say it
    again inline: they run for every record)."""
    _, _, _, key, value, headers = record
    return RECORD_OVERHEAD + len(key or b"") + len(value or b"") + _header_bytes(headers)


def _header_bytes(headers: Mapping[str, bytes]) -> int:
    return sum(len(k) + len(v) for k, v in headers.items())


_KEY, _VALUE, _HEADERS = itemgetter(0), itemgetter(1), itemgetter(6)  # a Message's
_new_record = partial(tuple.__new__, Record)  # skips the per-call Python of Record(...)
_view: Callable[[bytes], memoryview] = memoryview


def _copied(data: Iterable[bytes | None]) -> list[bytes | None]:
    """Each of `data` in an allocation of its own size (None stays)."""
    found = list(data)
    if None in found:
        return [None if d is None else bytes(memoryview(d)) for d in found]
    return list(map(bytes, map(_view, cast("list[bytes]", found))))


class _Queue(Generic[T]):
    """A list trimmed at its head: indexing and slicing stay O(1) as records go (a deque's
    are O(n)), with the dead head cut off once it is half the list."""

    __slots__ = ("head", "items")

    def __init__(self) -> None:
        self.items: list[T] = []
        self.head = 0

    def __len__(self) -> int:
        return len(self.items) - self.head

    def drop(self, count: int) -> None:
        """The oldest `count` go."""
        self.head += count
        if self.head >= 1024 and self.head * 2 >= len(self.items):
            del self.items[: self.head]
            self.head = 0

    def slice(self, start: int, count: int) -> list[T]:
        """`count` items from the `start`th kept on (fewer at the end)."""
        return self.items[self.head + start : self.head + start + count]

    def newest(self, count: int) -> list[T]:
        return self.items[len(self.items) - min(count, len(self)) :] if count > 0 else []


class _Partition:
    """What a (topic, partition) keeps: its newest records and the offset of the first."""

    __slots__ = ("first", "records")

    def __init__(self, first: int) -> None:
        self.records: _Queue[Record] = _Queue()
        self.first = first

    @property
    def next(self) -> int:
        return self.first + len(self.records)


class FeedLog:
    """Every record a changefeed sent, in sending order and by (topic, partition): the newest
    kept, up to `Retain`'s bounds in all partitions together (offsets stay; `dropped` counts
    what went). Tails wait on `changed` for new records.

    A (topic, partition) none of whose records is kept any more is forgotten except its next
    offset. A storage sink's log (`files`) has a topic per file, each written once but for
    its index and metadata files: one written once is forgotten whole, so that the log holds
    what it keeps however many files the sink writes; `counts` and `retained` name the files
    it still holds and those written again."""

    def __init__(self, retain: Retain, learn: Callable[[bytes | None], None] | None = None) -> None:
        self.retain = retain
        self.learn = learn  # the feed decoder's, shown every record as it is sent
        self.files = False  # a storage sink's: its topics are the files it wrote
        self.partitions: dict[tuple[str, int], _Partition] = {}  # those holding records
        self.gone: dict[tuple[str, int], int] = {}  # next offsets of those holding none
        self.order: _Queue[Record] = _Queue()  # sending order: the trim's and tails'
        self.bytes = 0  # what the records held count (`size`)
        self.dropped = 0  # records the bounds dropped, ever
        self.total = 0  # records ever sent; a tail's cursor
        self.changed = threading.Condition()

    @property
    def held(self) -> int:
        return len(self.order)

    def add(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        with self.changed:
            where = (topic, partition)
            kept = self.partitions.get(where)
            if kept is None:
                kept = self.partitions[where] = _Partition(self.gone.pop(where, 0))
            start = kept.next
            # Each key and value is copied into an allocation of its own size: orjson's
            # output keeps the buffer it was written into (4 KiB for a 200-byte message
            # with orjson 3.13, 16 KiB for 2 KiB; measured with tracemalloc and RSS, as
            # ijl/orjson#483 reports), and a log holding 100k of them held 400 MB instead
            # of 27 MB. Column by column in C-level passes (`size` inline): this runs for
            # every record sent, and a Python loop over them cost 5% of a request
            # (bench/service.py).
            count = len(messages)
            keys, values = _copied(map(_KEY, messages)), _copied(map(_VALUE, messages))
            headers = list(map(_HEADERS, messages))
            held = RECORD_OVERHEAD * count + sum(map(len, filter(None, keys)))
            held += sum(map(len, filter(None, values)))
            if any(headers):
                held += sum(map(_header_bytes, headers))
            offsets = range(start, start + count)
            fields = zip(repeat(topic), repeat(partition), offsets, keys, values, headers)
            new = list(map(_new_record, fields))
            kept.records.items += new
            self.order.items += new
            self.bytes += held
            if self.learn is not None:
                for message in messages:
                    self.learn(message.value)
            self.total += len(new)
            if self.bytes > self.retain.bytes or len(self.order) > self.retain.records:
                self._trim()
            self.changed.notify_all()

    def _trim(self) -> None:
        """The oldest records go until both bounds hold: in one pass over them, then each
        partition's cut at once (a partition's records come in sending order, so those it
        loses are its oldest)."""
        order = self.order
        items, head = order.items, order.head
        over_bytes = self.bytes - self.retain.bytes
        over_records = len(order) - self.retain.records
        freed, end = 0, head
        last: dict[tuple[str, int], int] = {}  # the last offset each partition loses
        while end < len(items) and (freed < over_bytes or end - head < over_records):
            topic, partition, offset, key, value, headers = items[end]  # faster than by name
            freed += RECORD_OVERHEAD + len(key or b"") + len(value or b"")
            freed += _header_bytes(headers) if headers else 0
            last[topic, partition] = offset
            end += 1
        order.drop(end - head)
        self.bytes -= freed
        self.dropped += end - head
        for where, offset in last.items():
            kept = self.partitions[where]
            kept.records.drop(offset + 1 - kept.first)
            kept.first = offset + 1
            if not kept.records:
                del self.partitions[where]
                if not self.files or kept.first > 1:
                    self.gone[where] = kept.first

    def _sorted(self) -> list[tuple[tuple[str, int], int, int]]:
        """Each (topic, partition) known, with its first kept and next offsets."""
        known = [(where, p.first, p.next) for where, p in self.partitions.items()]
        known += [(where, after, after) for where, after in self.gone.items()]
        return sorted(known)

    def counts(self) -> dict[str, dict[int, int]]:
        """Records sent per topic and partition (each partition's next offset)."""
        out: dict[str, dict[int, int]] = {}
        with self.changed:
            for (topic, partition), _, after in self._sorted():
                out.setdefault(topic, {})[partition] = after
        return out

    def retained(self) -> dict[str, dict[int, int]]:
        """Where the kept window starts per topic and partition: its first kept offset (the
        next offset, where none is kept)."""
        out: dict[str, dict[int, int]] = {}
        with self.changed:
            for (topic, partition), first, _ in self._sorted():
                out.setdefault(topic, {})[partition] = first
        return out

    def read(
        self, topic: str | None, partition: int | None, from_offset: int, limit: int
    ) -> list[Record]:
        """Up to `limit` records from `from_offset` on (from the first kept, if that is
        later), by topic, partition and offset."""
        with self.changed:
            if topic is not None and partition is not None:
                found = self.partitions.get((topic, partition))
                chosen = [] if found is None else [found]
            else:
                chosen = [
                    self.partitions[(t, p)]
                    for t, p in sorted(self.partitions)
                    if (topic is None or t == topic) and (partition is None or p == partition)
                ]
            out: list[Record] = []
            for kept in chosen:
                out += kept.records.slice(max(0, from_offset - kept.first), limit - len(out))
                if len(out) >= limit:
                    break
            return out

    def since(self, cursor: int) -> tuple[list[Record], int, int]:
        """The records sent after the first `cursor` that are still kept, how many of those
        sent after it are not (a tail that fell behind the window), and the new cursor."""
        with self.changed:
            new = self.total - cursor
            records = self.order.newest(new)
            return records, new - len(records), self.total


class LoggedSink:
    """The feed's sink, with every record sent also kept in the feed's log."""

    def __init__(self, inner: Sink, log: FeedLog) -> None:
        self.inner, self.log = inner, log
        self.max_message_bytes = inner.max_message_bytes
        # the storage sink's files are its records: a file's path is its topic and key
        self.storage = inner if isinstance(inner, StorageSink) else None
        if self.storage is not None:
            self.storage.on_file = self._file
            log.files = True

    def partition_count(self, topic: str, wanted: int | None) -> int:
        return self.inner.partition_count(topic, wanted)

    def send(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        self.inner.send(topic, partition, messages)
        self.log.add(topic, partition, messages)

    def resolved(self, topic: str, partition: int, ts: int) -> None:
        self.inner.resolved(topic, partition, ts)

    def passed(self, ts: int) -> None:
        """A checkpoint without a record (`Pipeline._checkpoint`), for a sink that counts it."""
        passed = getattr(self.inner, "passed", None)
        if passed is not None:
            passed(ts)

    def close(self) -> None:
        self.inner.close()

    def abort(self) -> None:
        self.inner.abort()

    def _file(self, name: str, data: bytes) -> None:
        self.log.add(name, 0, [Message(name.encode(), data, 0)])  # the log reads no ts

    def flush(self) -> None:
        """File sinks write what they hold (the others send as they go); the storage sink
        on its flush interval of simulated time, as TiCDC's on its ticker."""
        if isinstance(self.inner, StagedSink) and self.storage is None:
            self.inner.flush()

    def beside(self, name: str, content: Callable[[], bytes]) -> None:
        """A directory sink keeps the file beside its records (`StagedSink.beside`)."""
        if isinstance(self.inner, StagedSink):
            self.inner.beside(name, content)
