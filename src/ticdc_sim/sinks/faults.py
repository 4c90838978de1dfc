"""At-least-once on purpose: the records a TiCDC changefeed sends after failures, around any sink.

TiCDC promises at-least-once delivery with the resolved-ts contract: every row is delivered
at least once, in commit order per key, and a checkpoint (resolved ts) on a partition means no
row at or below it will come again *as new*. After failures it re-sends, and consumers must cope.
`FaultySink` wraps a sink and makes that happen, deterministically under the `[faults]` seed:

* `duplicate-rate`: a row record is sent again later on its partition, before that
  partition's next checkpoint (same bytes);
* `restart-every` / `restart-at` (records): a simulated TiCDC restart re-sends, on every
  partition, everything after its last checkpoint, then goes on (tiflow restarts from the
  changefeed checkpoint, which each partition's last checkpoint is; a protocol without
  checkpoint records restarts from the changefeed's checkpoint all the same, `passed`);
* `resolved-lag` (ms): checkpoints on `resolved-lag-partitions` are held back until a later
  checkpoint is that much newer, or the run ends;
* `ddl-replay-rate`: a DDL record is delivered again right after itself.

On demand only (the service's faults API), `unavailable`: the destination is gone; every send
from then on fails as TiCDC's Kafka producer fails (`CDC:ErrKafkaAsyncSendMessage`,
retryable) until the changefeed rebuilds its sink, as its retry does: a consumer's test of
a changefeed's `warning`/`normal` round and of at-least-once re-sends.

With `label`, injected records carry the headers `ticdc-sim-fault` (duplicate, restart or
ddl-replay) and `ticdc-sim-original-offset`; without it they cannot be told apart.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from ticdc_sim.config import Faults
from ticdc_sim.encoders import Message
from ticdc_sim.errors import SimError
from ticdc_sim.model.tso import physical_ms
from ticdc_sim.sinks import Sink


class Unavailable(SimError):
    """A send to a destination gone (tiflow pkg/errors ErrKafkaAsyncSendMessage); TiCDC's
    changefeed retries it."""

    error_code = "CDC:ErrKafkaAsyncSendMessage"
    retryable = True

    def __init__(self) -> None:
        super().__init__("kafka async send message failed (fault: unavailable)")


@dataclass
class _Partition:
    offset: int = 0  # the next record's offset, as the inner sink numbers them
    since_checkpoint: list[tuple[int, Message]] = field(default_factory=list)
    duplicates: list[tuple[int, Message]] = field(default_factory=list)  # due before the
    # next checkpoint; a record without rows drawn for ddl-replay, replayed unless
    # `resolved` says it was a checkpoint
    replay: tuple[int, Message] | None = None


class FaultySink:
    def __init__(self, inner: Sink, faults: Faults) -> None:
        self.inner, self.faults = inner, faults
        self.max_message_bytes = inner.max_message_bytes
        self.rng = random.Random(f"faults:{faults.seed}")
        self.partitions: dict[tuple[str, int], _Partition] = {}
        self.sent = 0  # records sent as new, for restart-every / restart-at
        self.restarts = sorted(set(faults.restart_at))
        self.injected = 0
        self.restart_due = False
        self.ddl_replay_armed = False  # `inject("ddl-replay")`: the next DDL goes twice
        self.unavailable = False  # `inject("unavailable")`: every send fails from now on

    def partition_count(self, topic: str, wanted: int | None) -> int:
        return self.inner.partition_count(topic, wanted)

    def _state(self, topic: str, partition: int) -> _Partition:
        found = self.partitions.get((topic, partition))
        if found is None:
            found = self.partitions[(topic, partition)] = _Partition()
        return found

    def send(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        if self.unavailable:
            raise Unavailable()
        if self.restart_due:  # decided after an earlier record, now that a checkpoint
            self.restart_due = False  # just sent has been `resolved`
            self._restart()
        state = self._state(topic, partition)
        faults, rng = self.faults, self.rng
        self._release(topic, partition, state)  # duplicates come a batch (or more) later
        if not faults.active and not self.ddl_replay_armed:  # only faults on demand: a batch
            first = state.offset
            self.inner.send(topic, partition, messages)
            state.offset += len(messages)
            state.since_checkpoint += zip(range(first, state.offset), messages, strict=True)
            self.sent += len(messages)
            return
        for message in messages:
            self._release(topic, partition, state, duplicates=False)
            offset = self._emit(topic, partition, state, message, None)
            state.since_checkpoint.append((offset, message))
            self.sent += 1
            if message.rows:
                if faults.duplicate_rate and rng.random() < faults.duplicate_rate:
                    state.duplicates.append((offset, message))
            elif self.ddl_replay_armed or (
                faults.ddl_replay_rate and rng.random() < faults.ddl_replay_rate
            ):
                state.replay = (offset, message)  # `resolved` drops it for a checkpoint
            self.restart_due = self.restart_due or self._restart_reached()

    def resolved(self, topic: str, partition: int, ts: int) -> None:
        """The record just sent was a checkpoint: not a DDL to replay, and it closes the
        partition's window."""
        state = self._state(topic, partition)
        state.replay = None
        state.since_checkpoint.clear()
        self.inner.resolved(topic, partition, ts)

    def inject(self, kind: str) -> int:
        """A fault now, on demand (the service's): `restart` (every partition again from
        its last checkpoint), `duplicate` (each partition's last row record since its
        checkpoint again), `ddl-replay` (the next DDL record delivered twice) or
        `unavailable` (every send fails from now on). The number of records injected now."""
        before = self.injected
        if kind == "restart":
            self._restart()
        elif kind == "duplicate":
            for (topic, partition), state in sorted(self.partitions.items()):
                rows = [(o, m) for o, m in state.since_checkpoint if m.rows]
                if rows:
                    offset, message = rows[-1]
                    self._emit(topic, partition, state, message, ("duplicate", offset))
        elif kind == "ddl-replay":
            self.ddl_replay_armed = True
        elif kind == "unavailable":
            self.unavailable = True
        else:
            raise ValueError(f"unknown fault {kind!r}")
        return self.injected - before

    def passed(self, ts: int) -> None:
        """The changefeed's checkpoint moved to `ts` with no record to say so (canal-json
        without the TiDB extension): a restart resumes from here, on every partition."""
        for state in self.partitions.values():
            state.since_checkpoint.clear()
        passed = getattr(self.inner, "passed", None)
        if passed is not None:  # a broker acknowledges it on each partition's last record
            passed(ts)

    def _emit(
        self,
        topic: str,
        partition: int,
        state: _Partition,
        message: Message,
        fault: tuple[str, int] | None,
    ) -> int:
        if fault is not None:
            self.injected += 1
            if self.faults.label:
                kind, original = fault
                labels = {
                    "ticdc-sim-fault": kind.encode(),
                    "ticdc-sim-original-offset": b"%d" % original,
                }
                message = message._replace(headers={**message.headers, **labels})
        self.inner.send(topic, partition, [message])
        state.offset += 1
        return state.offset - 1

    def _release(
        self, topic: str, partition: int, state: _Partition, duplicates: bool = True
    ) -> None:
        """A DDL replay due right after its original, then (`duplicates`) the duplicates."""
        if state.replay is not None:
            (offset, message), state.replay = state.replay, None
            self._emit(topic, partition, state, message, ("ddl-replay", offset))
            self.ddl_replay_armed = False
        if not duplicates:
            return
        due, state.duplicates = state.duplicates, []
        for offset, message in due:
            self._emit(topic, partition, state, message, ("duplicate", offset))

    def _restart_reached(self) -> bool:
        """Whether the record just sent completes `restart-every` or a `restart-at`."""
        every = self.faults.restart_every
        if every and self.sent % every == 0:
            return True
        if self.restarts and self.sent >= self.restarts[0]:
            self.restarts.pop(0)
            return True
        return False

    def _restart(self) -> None:
        """Every partition again from its last checkpoint, in order, as after a restart."""
        for (topic, partition), state in sorted(self.partitions.items()):
            self._release(topic, partition, state)
            for offset, message in state.since_checkpoint:  # re-sends are not in it
                self._emit(topic, partition, state, message, ("restart", offset))

    def close(self) -> None:
        for (topic, partition), state in sorted(self.partitions.items()):
            self._release(topic, partition, state)
        self.inner.close()

    def abort(self) -> None:
        self.inner.abort()


def lagged(faults: Faults, partition: int, ts: int, last_sent: int) -> bool:
    """Whether a checkpoint at `ts` is held back on `partition`: until it is `resolved-lag`
    ms newer than the last one sent there."""
    if not faults.resolved_lag or partition not in faults.resolved_lag_partitions:
        return False
    return physical_ms(ts) - physical_ms(last_sent) < faults.resolved_lag
