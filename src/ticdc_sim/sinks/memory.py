"""In-process sinks: `memory://` keeps every record (tests, previews),
`blackhole://` keeps only counts (benchmarks)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import itemgetter

from ticdc_sim.encoders import Message
from ticdc_sim.sinks import LocalSink, Record


class MemorySink(LocalSink):
    def __init__(self) -> None:
        self.partitions: dict[tuple[str, int], list[Record]] = {}
        self.arrived: list[Record] = []  # every record, in the order it was sent

    def send(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        records = self.partitions.setdefault((topic, partition), [])
        for m in messages:
            records.append(Record(topic, partition, len(records), m.key, m.value, m.headers))
        self.arrived.extend(records[len(records) - len(messages) :])

    def records(self) -> Iterator[Record]:
        """Every record, by topic, then partition, then offset: how `decode` reads a directory."""
        for key in sorted(self.partitions):
            yield from self.partitions[key]

    def close(self) -> None:
        pass

    def abort(self) -> None:  # nothing here can look complete
        pass


_KEY, _VALUE = itemgetter(0), itemgetter(1)  # a Message's


class BlackholeSink(LocalSink):
    def __init__(self) -> None:
        self.records = 0
        self.bytes = 0

    def send(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        # C-level passes: a service's memory changefeed sends every record through here
        self.records += len(messages)
        self.bytes += sum(map(len, filter(None, map(_KEY, messages))))
        self.bytes += sum(map(len, filter(None, map(_VALUE, messages))))

    def close(self) -> None:
        pass

    def abort(self) -> None:  # nothing here can look complete
        pass
