"""A changefeed's log of the records it sent (`FeedLog`), which the read API pages through
and tails, and the sink wrapper that fills it (`LoggedSink`)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ticdc_sim.encoders import Message
from ticdc_sim.sinks import Record, Sink
from ticdc_sim.sinks.staging import StagedSink
from ticdc_sim.sinks.storage import StorageSink


@dataclass(frozen=True)
class Retain:
    """How much of what a changefeed sent its log keeps for reading: the newest records, in
    all partitions, up to both bounds."""

    records: int = sys.maxsize
    bytes: int = sys.maxsize


class FeedLog:
    """Every record a changefeed sent, per (topic, partition) and in sending order, the newest
    `retain` of each kept (offsets stay). Tails wait on `changed` for new records."""

    def __init__(self, retain: Retain, learn: Callable[[bytes | None], None] | None = None) -> None:
        self.retain = retain.records
        self.learn = learn  # the feed decoder's, shown every record as it is sent
        self.partitions: dict[tuple[str, int], list[Record]] = {}
        self.first: dict[tuple[str, int], int] = {}  # offset of each list's first record
        self.order: list[Record] = []  # sending order, for tails
        self.total = 0  # records ever sent; a tail's cursor
        self.changed = threading.Condition()

    def add(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        with self.changed:
            where = (topic, partition)
            records = self.partitions.setdefault(where, [])
            start = self.first.setdefault(where, 0) + len(records)
            new = [
                Record(topic, partition, start + i, m.key, m.value, m.headers)
                for i, m in enumerate(messages)
            ]
            records += new
            self.order += new
            if self.learn is not None:
                for message in messages:
                    self.learn(message.value)
            if len(records) > self.retain:
                dropped = len(records) - self.retain
                del records[:dropped]
                self.first[where] += dropped
            if len(self.order) > self.retain:
                del self.order[: len(self.order) - self.retain]
            self.total += len(new)
            self.changed.notify_all()

    def counts(self) -> dict[str, dict[int, int]]:
        """Records sent per topic and partition (each partition's next offset)."""
        out: dict[str, dict[int, int]] = {}
        with self.changed:  # a partition's list and first offset move together in `add`
            for (topic, partition), records in sorted(self.partitions.items()):
                out.setdefault(topic, {})[partition] = self.first[(topic, partition)] + len(records)
        return out

    def read(
        self, topic: str | None, partition: int | None, from_offset: int, limit: int
    ) -> list[Record]:
        """Up to `limit` records from `from_offset` on, by topic, partition and offset."""
        with self.changed:
            out: list[Record] = []
            for (t, p), records in sorted(self.partitions.items()):
                if (topic is not None and t != topic) or (partition is not None and p != partition):
                    continue
                skip = max(0, from_offset - self.first[(t, p)])
                out += records[skip : skip + limit - len(out)]
                if len(out) >= limit:
                    break
            return out

    def since(self, cursor: int) -> tuple[list[Record], int]:
        """The records sent after the first `cursor` (those still kept), and the new cursor."""
        with self.changed:
            new = self.total - cursor
            return (self.order[-new:] if new > 0 else []), self.total


class LoggedSink:
    """The feed's sink, with every record sent also kept in the feed's log."""

    def __init__(self, inner: Sink, log: FeedLog) -> None:
        self.inner, self.log = inner, log
        self.max_message_bytes = inner.max_message_bytes
        # the storage sink's files are its records: a file's path is its topic and key
        self.storage = inner if isinstance(inner, StorageSink) else None
        if self.storage is not None:
            self.storage.on_file = self._file

    def partition_count(self, topic: str, wanted: int | None) -> int:
        return self.inner.partition_count(topic, wanted)

    def send(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        self.inner.send(topic, partition, messages)
        self.log.add(topic, partition, messages)

    def resolved(self, topic: str, partition: int, ts: int) -> None:
        self.inner.resolved(topic, partition, ts)

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
