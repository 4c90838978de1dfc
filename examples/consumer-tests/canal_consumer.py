"""A canal-json consumer: TiCDC's changes applied to SQLite or MySQL, each in effect once.

TiCDC delivers at least once: after a restart it sends again what came after each
partition's last checkpoint, and a row may come twice. This consumer copes as tiflow's
kafka-consumer does (cmd/kafka-consumer/writer.go and event_group.go):

* rows wait, per partition, until the partition's WATERMARK (its resolved ts) passes them;
  a row at or below a watermark its partition already sent is a re-send, and is dropped, as
  is a second copy of a row still waiting;
* rows are applied once every partition's watermark has passed them, in commit-ts order, a
  batch in one downstream transaction: the downstream is always the upstream as of some
  commit ts (`resolved_ts`; on MySQL, which commits at each DDL, but at a DDL);
* a DDL (canal-json sends it on partition 0) is applied once, in the same order: after the
  rows before it, before the rows after it;
* a row is applied as an upsert of its whole image or a delete by its key
  (`downstream.py`), so one applied twice would change nothing either.

It needs canal-json with `enable-tidb-extension=true`: the commit ts and the WATERMARK
messages come only with it. ENUM and SET arrive as numbers, and every value as text (the
default canal-json; not `content-compatible`).

    consumer = Consumer(connect("sqlite:///replica.db"), partitions=3)
    consume_kafka(consumer, "localhost:9092", "ticdc-topic")   # forever
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from downstream import Downstream, connect

__all__ = ["Consumer", "ConsumerError", "connect", "consume_kafka", "column_value"]


def _binary(text: str) -> bytes:
    return text.encode("latin-1")  # canal-json sends a byte as the character of its code


# how canal-json's text is read, by the column's mysqlType; any other stays text (DECIMAL
# exactly, dates and times as TiDB prints them, JSON)
_READ: dict[str, Callable[[str], Any]] = {
    **dict.fromkeys(
        ["tinyint", "smallint", "mediumint", "int", "bigint", "bit", "year", "enum", "set"], int
    ),
    **dict.fromkeys(["float", "double"], float),
    **dict.fromkeys(["binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"], _binary),
}


def column_value(mysql_type: str, text: str | None) -> Any:
    """A canal-json column value (text, or null) as Python: ints (ENUM and SET as their
    number, BIT as its integer), floats, bytes, or the text."""
    if text is None:
        return None
    read = _READ.get(mysql_type.split("(")[0].split()[0].lower())  # "int unsigned" -> int
    return text if read is None else read(text)


class ConsumerError(Exception):
    """A message this consumer cannot take, or a change the downstream refused."""


@dataclass(order=True)
class _Change:
    commit_ts: int
    arrival: int  # a transaction's rows keep their order
    message: dict[str, Any] = field(compare=False)
    identity: str = field(compare=False, default="")


class Consumer:
    """Applies a canal-json topic of `partitions` partitions to `downstream`."""

    def __init__(self, downstream: Downstream, partitions: int = 1) -> None:
        self.downstream = downstream
        self.watermarks = [0] * partitions  # each partition's last WATERMARK
        self.resolved_ts = 0  # every change at or below it is applied downstream
        self.ignored = 0  # rows and DDLs received again, and dropped
        self.pending: list[_Change] = []
        self._waiting: set[str] = set()  # the identities of the pending rows
        self._ddls: set[tuple[int, str]] = set()  # (commit ts, query) of every DDL taken
        self._arrivals = itertools.count()

    def handle(self, partition: int, value: bytes) -> None:
        """One message of the topic, as read from `partition`."""
        if not 0 <= partition < len(self.watermarks):
            raise ConsumerError(
                f"partition {partition}: the consumer reads {len(self.watermarks)} partitions"
            )
        try:
            message = json.loads(value)
            kind, tidb = message["type"], message.get("_tidb")
        except (ValueError, TypeError, KeyError, AttributeError):
            raise ConsumerError(f"partition {partition}: not canal-json: {value[:60]!r}") from None
        if tidb is None:
            raise ConsumerError(
                f"partition {partition}: a canal-json message without TiDB's extension; the"
                " changefeed's sink URI needs enable-tidb-extension=true"
            )
        if kind == "TIDB_WATERMARK":
            self._watermark(partition, tidb["watermarkTs"])
        elif message["isDdl"]:
            self._ddl(tidb["commitTs"], message)
        else:
            self._row(partition, tidb["commitTs"], message)

    def _row(self, partition: int, commit_ts: int, message: dict[str, Any]) -> None:
        fields = ("database", "table", "type", "data", "old")
        identity = json.dumps([commit_ts, *(message.get(f) for f in fields)])
        if commit_ts <= self.watermarks[partition] or identity in self._waiting:
            self.ignored += 1  # sent again: applied already, or waiting to be
            return
        self._waiting.add(identity)
        self.pending.append(_Change(commit_ts, next(self._arrivals), message, identity))

    def _ddl(self, commit_ts: int, message: dict[str, Any]) -> None:
        taken = (commit_ts, message["sql"])
        if taken in self._ddls:
            self.ignored += 1
            return
        self._ddls.add(taken)
        self.pending.append(_Change(commit_ts, next(self._arrivals), message))

    def _watermark(self, partition: int, ts: int) -> None:
        if ts <= self.watermarks[partition]:
            return  # an older one, sent again after a restart
        self.watermarks[partition] = ts
        resolved = min(self.watermarks)
        if resolved > self.resolved_ts:
            self._apply(resolved)

    def _apply(self, resolved: int) -> None:
        """Apply every pending change at or below `resolved`, in one transaction."""
        ready = sorted(c for c in self.pending if c.commit_ts <= resolved)
        self.pending = [c for c in self.pending if c.commit_ts > resolved]
        self.downstream.begin()
        for change in ready:
            try:
                self._write(change.message)
            except Exception as e:
                self.downstream.rollback()
                message = change.message
                raise ConsumerError(
                    f"{message['type']} {message['database']}.{message['table']} at commit ts"
                    f" {change.commit_ts}: {e}"
                ) from e
            self._waiting.discard(change.identity)
        self.downstream.commit()
        self.resolved_ts = resolved

    def _write(self, message: dict[str, Any]) -> None:
        schema, table = message["database"], message["table"]
        if message["isDdl"]:
            self.downstream.ddl(schema, message["sql"])
            return
        types, key = message["mysqlType"], message["pkNames"] or []
        olds = message.get("old") or [None] * len(message["data"])
        for data, old in zip(message["data"], olds, strict=True):
            row = {column: column_value(types[column], text) for column, text in data.items()}
            if message["type"] == "DELETE":
                self.downstream.delete(schema, table, row, key)
                continue
            # an update of the key (when TiCDC does not split it into a delete and an
            # insert): the row under the old key goes; `old` may hold the changed columns only
            before = {**row, **{c: column_value(types[c], t) for c, t in (old or {}).items()}}
            if any(before[c] != row[c] for c in key):
                self.downstream.delete(schema, table, before, key)
            self.downstream.upsert(schema, table, row)


def consume_kafka(
    consumer: Consumer,
    bootstrap: str,
    topic: str,
    until_ts: int | None = None,
    idle_timeout: float = 30.0,
) -> None:
    """Read `topic` from its start into `consumer` until everything up to `until_ts` is
    applied (forever when None). The partitions are assigned, not subscribed: a consumer
    keeps its progress in memory only, so it starts from the beginning (applying a change
    again is harmless; start from an empty downstream). TimeoutError when nothing comes for
    `idle_timeout` seconds before `until_ts` is reached."""
    from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition
    from confluent_kafka import Consumer as KafkaConsumer

    client = KafkaConsumer(
        {"bootstrap.servers": bootstrap, "group.id": "canal-consumer", "enable.auto.commit": False}
    )
    try:
        found = client.list_topics(topic, timeout=idle_timeout).topics.get(topic)
        if found is None or found.error is not None:
            raise ConsumerError(f"kafka {bootstrap}: no topic {topic!r}")
        if len(found.partitions) != len(consumer.watermarks):
            raise ConsumerError(
                f"kafka {bootstrap}: topic {topic!r} has {len(found.partitions)} partitions,"
                f" the consumer reads {len(consumer.watermarks)}"
            )
        client.assign(
            [TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(found.partitions)]
        )
        last = time.monotonic()
        while until_ts is None or consumer.resolved_ts < until_ts:
            message = client.poll(0.2)
            if message is None:
                if time.monotonic() - last > idle_timeout:
                    raise TimeoutError(
                        f"kafka {bootstrap}: {topic!r} resolved to {consumer.resolved_ts}, not"
                        f" {until_ts}, and nothing came for {idle_timeout:g} s"
                    )
                continue
            if message.error() is not None:
                raise KafkaException(message.error())
            partition, payload = message.partition(), message.value()
            if partition is None or payload is None:
                raise ConsumerError(
                    f"kafka {bootstrap}: {topic}[{partition}] offset {message.offset()}: no value"
                )
            consumer.handle(partition, payload)
            last = time.monotonic()
    finally:
        client.close()
