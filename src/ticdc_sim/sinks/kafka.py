"""`kafka://h1:9092,h2:9092/topic?...`: records into a real Kafka, as TiCDC's Kafka sink sends them.

Topics are TiCDC's: a missing topic is created with `partition-num` partitions (3 when not
given) and `replication-factor`; an existing topic keeps its partitions, and `partition-num`
may be smaller than them (with TiCDC's warning) but not larger (tiflow
`pkg/sink/kafka/options.go` SetPartitionNum). `max-message-bytes` is cut to the topic's (or
the broker's) limit minus 128 bytes, as TiCDC does, where the broker tells it.

Every record goes to the partition the dispatcher chose, in order, through librdkafka's
idempotent producer. Every record is accounted for: librdkafka reports each delivery, so the
sink knows, live, the last checkpoint the brokers acknowledged on every partition
(`acknowledged_ts`, the changefeed's checkpoint) and the first record they refused or never
acknowledged (`failure`, TiCDC's `CDC:ErrKafkaAsyncSendMessage`). A send never waits long for
a full local queue: a broker that takes nothing fails it after `_QUEUE_WAIT_S`; a record the
brokers do not acknowledge in TiCDC's 4 attempts of its read/write timeout fails (`_timeouts`).
`close()` flushes (purging, after the timeout, what is still queued, so that it fails too) and
succeeds only when none failed; otherwise it fails (`Unacknowledged`), naming how many and,
per partition, the last checkpoint acknowledged, which is where `replay --resume-from` and a
consumer resume.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.cimpl import NewTopic

from ticdc_sim.config import DEFAULT_PARTITION_NUM, SinkURI, duration_ms, parse_bool
from ticdc_sim.encoders import Message
from ticdc_sim.errors import ConfigError, SimError, Warnings
from ticdc_sim.sinks import Record

_BACKOFF_S = 0.002  # a full local queue: wait this long before producing again
# ... and give up after this long: the caller holds its changefeed's and its cluster's locks,
# so a broker that takes nothing must not hang every SQL session behind them. A few seconds:
# a healthy broker drains a full queue (`queue.buffering.max.kbytes`) in well under that
_QUEUE_WAIT_S = 5.0
# TiCDC's producer gives a request up after its network timeouts, the URI's dial-timeout,
# read-timeout and write-timeout (10 s each by default: tiflow pkg/sink/kafka/options.go
# NewOptions; sarama.go sets them as sarama's Net.DialTimeout/ReadTimeout/WriteTimeout), and
# retries it 3 times (Producer.Retry.Max): a broker that does not answer fails a record after
# 4 x 10 s. librdkafka bounds a record's whole delivery instead (message.timeout.ms, 5 min
# by default): here 4 times the longer of read-timeout and write-timeout, with its socket
# timeouts at those and its connection timeout at dial-timeout
_NET_TIMEOUT = "10s"
_ATTEMPTS = 4
# librdkafka's lower bounds: socket.connection.setup.timeout.ms 1000, socket.timeout.ms 10;
# message.timeout.ms above linger.ms (and 0 would be no bound at all)
_MIN_MS = {"dial": 1000, "socket": 10, "message": 10}
ASYNC_SEND_FAILED = "CDC:ErrKafkaAsyncSendMessage"  # tiflow pkg/errors ErrKafkaAsyncSendMessage
# librdkafka's own log lines go here, not stderr: the service's log shows them, a command
# says the failure itself (without a handler, Python's last resort would print them)
_LOG = logging.getLogger("ticdc_sim.kafka")
_LOG.addHandler(logging.NullHandler())
_TIMEOUT_S = 30.0
_MAX_MESSAGE_BYTES_OVERHEAD = 128  # tiflow pkg/sink/kafka/options.go maxMessageBytesOverhead
_COMPRESSION = frozenset({"none", "gzip", "snappy", "lz4", "zstd"})  # librdkafka's names too
_ACKS = {"-1": "all", "1": "1", "0": "0"}
_SASL_MECHANISMS = frozenset({"plain", "scram-sha-256", "scram-sha-512", "gssapi"})


def client_config(uri: SinkURI) -> dict[str, Any]:
    """librdkafka settings for the brokers of a kafka:// URI: TLS and SASL parameters as
    TiCDC names them."""
    params = uri.params
    config: dict[str, Any] = {"bootstrap.servers": uri.target, "logger": _LOG}
    tls = parse_bool(params.get("enable-tls", "false"), "sink URI parameter enable-tls")
    tls = tls or any(k in params for k in ("ca", "cert", "key"))
    mechanism = params.get("sasl-mechanism", "").lower()
    if mechanism and mechanism not in _SASL_MECHANISMS:
        raise ConfigError(
            f"sink URI {uri.text!r}: sasl-mechanism {params['sasl-mechanism']!r} is not one of"
            f" {', '.join(sorted(_SASL_MECHANISMS))}"
        )
    sasl = bool(mechanism) or "sasl-user" in params
    config["security.protocol"] = {
        (False, False): "PLAINTEXT",
        (True, False): "SSL",
        (False, True): "SASL_PLAINTEXT",
        (True, True): "SASL_SSL",
    }[(tls, sasl)]
    for name, setting in (("ca", "ssl.ca.location"), ("cert", "ssl.certificate.location")):
        if name in params:
            config[setting] = params[name]
    if "key" in params:
        config["ssl.key.location"] = params["key"]
    if parse_bool(params.get("insecure-skip-verify", "false"), "insecure-skip-verify"):
        config["enable.ssl.certificate.verification"] = False
    if sasl:
        config["sasl.mechanism"] = (mechanism or "plain").upper()
        if "sasl-user" in params:
            config["sasl.username"] = params["sasl-user"]
        if "sasl-password" in params:
            config["sasl.password"] = params["sasl-password"]
    if "kafka-client-id" in params:
        config["client.id"] = params["kafka-client-id"]
    return config


class KafkaSendFailed(SimError):
    """A record the brokers refused or never acknowledged, or a local queue that stayed full:
    TiCDC's `CDC:ErrKafkaAsyncSendMessage`, which its changefeed retries."""

    error_code = ASYNC_SEND_FAILED
    retryable = True

    def __init__(self, reason: str) -> None:
        super().__init__(f"kafka async send message failed: {reason}")


class Unacknowledged(SimError):
    """`close()` with records the brokers did not acknowledge: the report, and `resume_from`,
    the `--resume-from` value (`TOPIC[P]=TS,...`, 0 where no checkpoint was acknowledged)."""

    def __init__(self, report: str, resume_from: str) -> None:
        super().__init__(report)
        self.resume_from = resume_from


@dataclass
class _Partition:
    """Delivery bookkeeping of one (topic, partition). librdkafka reports a partition's
    deliveries in the order its records were produced (the idempotent producer keeps them in
    order), so the n-th report is the n-th record's; a checkpoint counts as acknowledged once
    every record up to it was, none failing before it."""

    errors: list[str]  # the sink's: each partition's first error, `where: reason`
    where: str  # TOPIC[P]
    sent: int = 0
    acknowledged: int = 0
    failed: int = 0
    error: str = ""
    prefix: int = 0  # records acknowledged before the first failure
    checkpoint: int | None = None  # the last acknowledged checkpoint ts
    pending: dict[int, int] = field(default_factory=dict)  # record number -> checkpoint ts

    def delivered(self, error: KafkaError | None, record: Any) -> None:
        """librdkafka's report of one record (its `on_delivery`)."""
        if error is None:
            self.acknowledged += 1
            if not self.failed:
                self.prefix += 1
        else:
            self.failed += 1
            if not self.error:
                self.error = error.str()
                self.errors.append(f"{self.where}: {self.error}")

    def settle(self) -> int | None:
        """The last acknowledged checkpoint, the ones behind it (or never to be acknowledged,
        after a failure) pruned."""
        done = [n for n in self.pending if n < self.prefix or self.failed]
        for n in done:
            ts = self.pending.pop(n)
            if n < self.prefix and (self.checkpoint is None or ts > self.checkpoint):
                self.checkpoint = ts
        return self.checkpoint

    def busy(self) -> bool:
        """Records not acknowledged yet (in flight, or failed)."""
        return self.prefix < self.sent


class KafkaSink:
    """`queue_bytes`: librdkafka's local queue (`queue.buffering.max.kbytes`), where records
    wait for the brokers; librdkafka's default (1 GiB) when None."""

    def __init__(
        self, uri: SinkURI, warnings: Warnings | None = None, *, queue_bytes: int | None = None
    ) -> None:
        self.uri = uri
        self.warnings = warnings if warnings is not None else Warnings()
        params = uri.params
        self.replication_factor = int(params.get("replication-factor", "1"))
        if self.replication_factor <= 0:
            raise ConfigError(f"sink URI {uri.text!r}: invalid replication-factor")
        compression = params.get("compression", "none").lower() or "none"
        if compression not in _COMPRESSION:
            raise ConfigError(
                f"sink URI {uri.text!r}: compression {params['compression']!r} is not one of"
                f" {', '.join(sorted(_COMPRESSION))}"
            )
        acks = params.get("required-acks", "-1")
        if acks not in _ACKS:
            raise ConfigError(f"sink URI {uri.text!r}: required-acks must be -1, 0 or 1")
        base = client_config(uri)
        self.admin = AdminClient(base)
        self.partitions_seen: dict[tuple[str, int], _Partition] = {}
        self.errors: list[str] = []  # each partition's first delivery error, in order
        self._failure: SimError | None = None
        self._latest = 0  # the last checkpoint sent (to some partition)
        # deliveries are reported in whichever thread polls: one at a time (a service's
        # supervisor asks `failure` while a request sends); the books of checkpoints likewise
        self._polling = threading.Lock()
        self._books = threading.Lock()
        self._closed = False  # a closed producer polls no more (its last reports are in)
        producer = {
            **base,
            "acks": _ACKS[acks],
            # in order per partition, no duplicates from retries: what TiCDC's ordering needs
            "enable.idempotence": acks == "-1",
            "max.in.flight.requests.per.connection": 5 if acks == "-1" else 1,
            "compression.type": compression,
            "linger.ms": 5,
            # every record's report, successes too: a checkpoint is acknowledged once every
            # record up to it is. Only-errors would suppress them even for a record given its
            # own `on_delivery` (measured, librdkafka 2.16), and cost no less: about the same
            # time for 500k records either way (bench/kafka.py measures the sink)
            "delivery.report.only.error": False,
            **_timeouts(params),
        }
        # metadata and topic calls wait as long as a record may: brokers that do not answer
        # within it are gone (a restarting changefeed must not wait out the 30 s close)
        self.wait_s = min(_TIMEOUT_S, producer["message.timeout.ms"] / 1000)
        if queue_bytes is not None:
            producer["queue.buffering.max.kbytes"] = max(1, queue_bytes // 1024)
        self.producer = Producer(producer)
        self.topics: dict[str, int] = {}  # topic -> partitions in use
        self.max_message_bytes: int | None = None
        self._check_brokers()

    # -- topics --------------------------------------------------------------------------------

    def _check_brokers(self) -> None:
        # through the producer: it connects and learns the cluster now. Left to its first
        # record it did so while records queued up, and then sent them about three times
        # slower to the Tansu broker (bench/kafka.py)
        try:
            self.producer.list_topics(timeout=self.wait_s)
        except KafkaException as e:
            raise SimError(
                f"kafka {self.uri.target}: cannot reach the brokers: {_reason(e)}"
            ) from None

    def partition_count(self, topic: str, wanted: int | None) -> int:
        """The partition count the dispatchers use for `topic`, creating it if missing."""
        found = self.topics.get(topic)
        if found is None:
            try:
                found = self.topics[topic] = self._ensure(topic, wanted)
            except KafkaException as e:  # brokers gone: TiCDC's changefeed retries it
                raise self._failed(KafkaSendFailed(f"topic {topic}: {_reason(e)}")) from None
        return found

    def _ensure(self, topic: str, wanted: int | None) -> int:
        metadata = self.admin.list_topics(timeout=self.wait_s)
        existing = metadata.topics.get(topic)
        if existing is not None and existing.error is None:
            real = len(existing.partitions)
            self._limit_message_bytes(ConfigResource("topic", topic), "max.message.bytes", topic)
            if wanted is None:
                return real
            if wanted > real:
                raise SimError(
                    f"kafka topic {topic!r}: the number of partition ({wanted}) specified in"
                    f" sink-uri is more than that of actual topic ({real})"
                )
            if wanted < real:
                self.warnings.warn(
                    f"kafka partitions {topic}",
                    f"kafka topic {topic!r} has {real} partitions, partition-num is {wanted}:"
                    " some partitions will not have messages dispatched to (as TiCDC warns)",
                )
            return wanted
        count = wanted or DEFAULT_PARTITION_NUM
        futures = self.admin.create_topics(
            [NewTopic(topic, count, self.replication_factor)], request_timeout=self.wait_s
        )
        try:
            futures[topic].result(self.wait_s)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise SimError(f"kafka topic {topic!r}: cannot create it: {_reason(e)}") from None
        brokers = list(metadata.brokers)
        if brokers:
            resource = ConfigResource("broker", str(brokers[0]))
            self._limit_message_bytes(resource, "message.max.bytes", topic)
        return count

    def _limit_message_bytes(self, resource: ConfigResource, name: str, topic: str) -> None:
        """TiCDC keeps max-message-bytes below the topic's (or broker's) limit - 128."""
        try:
            configs = self.admin.describe_configs([resource])[resource].result(self.wait_s)
        except KafkaException:
            return  # a broker that does not describe its configs: the URI's value stands
        entry = configs.get(name)
        if entry is None or entry.value is None:
            return
        limit = int(entry.value) - _MAX_MESSAGE_BYTES_OVERHEAD
        if self.max_message_bytes is None or limit < self.max_message_bytes:
            self.max_message_bytes = limit
            self.warnings.warn(
                f"kafka max-message-bytes {topic}",
                f"max-message-bytes is held to {limit} ({name} of {resource.name} minus 128),"
                " as TiCDC does",
            )

    # -- records -------------------------------------------------------------------------------

    def send(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        state = self.partitions_seen.get((topic, partition))
        if state is None:
            state = self.partitions_seen[(topic, partition)] = _Partition(
                self.errors, f"{topic}[{partition}]"
            )
        produce, delivered = self.producer.produce, state.delivered
        for done, message in enumerate(messages):
            headers: list[tuple[str, str | bytes | None]] | None = (
                list(message.headers.items()) if message.headers else None
            )
            deadline = None
            while True:
                try:
                    produce(
                        topic,
                        message.value,
                        message.key,
                        partition,
                        on_delivery=delivered,
                        headers=headers,
                    )
                    break
                except KafkaException as e:  # refused before it was queued
                    state.sent += done
                    failed = KafkaSendFailed(f"{topic}[{partition}]: {_reason(e)}")
                    raise self._failed(failed) from None
                except BufferError:  # the local queue is full: let deliveries drain it
                    now = time.monotonic()
                    if deadline is None:
                        deadline = now + _QUEUE_WAIT_S
                    elif now >= deadline:
                        state.sent += done
                        raise self._failed(
                            KafkaSendFailed(
                                f"{topic}[{partition}]: the local queue stayed full for"
                                f" {_QUEUE_WAIT_S:g} s (the brokers at {self.uri.target} took"
                                " none of its records)"
                            )
                        ) from None
                    self._poll(_BACKOFF_S)
        state.sent += len(messages)
        self._poll(0)

    def resolved(self, topic: str, partition: int, ts: int) -> None:
        """The record just sent on the partition was a checkpoint at `ts`."""
        state = self.partitions_seen[(topic, partition)]
        with self._books:
            if not state.failed:  # after a failure it can never count
                state.pending[state.sent - 1] = ts
            self._latest = max(self._latest, ts)
            state.settle()  # only the checkpoints in flight stay in the books

    def passed(self, ts: int) -> None:
        """The changefeed's checkpoint moved to `ts` with no record to say so (canal-json
        without the TiDB extension): each partition's last record stands for it."""
        with self._books:
            for state in list(self.partitions_seen.values()):
                if state.sent and not state.failed:
                    state.pending[state.sent - 1] = ts
                state.settle()
            self._latest = max(self._latest, ts)

    def acknowledged_ts(self) -> int:
        """The checkpoint the brokers acknowledged on every partition: the last one sent,
        held back by each partition with records not acknowledged to the last checkpoint
        acknowledged there (0: none yet)."""
        self._poll_now()
        with self._books:
            floor = self._latest
            for state in list(self.partitions_seen.values()):
                checkpoint = state.settle()
                if state.busy():
                    floor = min(floor, checkpoint or 0)
            return floor

    def failure(self) -> SimError | None:
        """The first record the brokers refused or did not acknowledge in time (or a send
        that gave up on a full queue); None while there is none. Never blocks."""
        self._poll_now()
        if self._failure is None and self.errors:
            self._failure = KafkaSendFailed(self.errors[0])
        return self._failure

    def _failed(self, error: SimError) -> SimError:
        self._failure = self._failure or error
        return error

    def _poll(self, timeout: float) -> None:
        with self._polling:
            self.producer.poll(timeout)

    def _poll_now(self) -> None:
        """Deliveries reported so far, unless another thread is taking them already."""
        if not self._closed and self._polling.acquire(blocking=False):
            try:
                self.producer.poll(0)
            finally:
                self._polling.release()

    def close(self) -> None:
        self._drain()
        self.producer.close()  # its connections and threads go now, not at interpreter exit
        if self.lost is not None:
            raise self.lost

    def abort(self) -> None:
        """After a failure upstream, the same as `close` but that it does not raise: what
        the brokers did not acknowledge is in `lost`."""
        self._drain()
        self.producer.close()

    def discard(self) -> None:
        """Drop what is still queued or in flight, at once, and close: a changefeed that
        restarts sends it again from its checkpoint, and must not wait for gone brokers."""
        with self._polling:
            self.producer.purge()
            self.producer.flush(0)
            self._closed = True

    @property
    def lost(self) -> Unacknowledged | None:
        """After `close` or `abort`: the records the brokers did not acknowledge, with where
        to resume; None when they acknowledged every one."""
        lost = sum(s.failed for s in self.partitions_seen.values())
        return Unacknowledged(self._report(lost), self.resume_from()) if lost else None

    def resume_from(self) -> str:
        """Each partition's last acknowledged checkpoint (0: none) as `--resume-from` takes
        them: `TOPIC[P]=TS,...`."""
        with self._books:
            return ",".join(
                f"{topic}[{partition}]={state.settle() or 0}"
                for (topic, partition), state in sorted(self.partitions_seen.items())
            )

    def _drain(self) -> None:
        """Wait for every record; what is still undelivered after the timeout is purged, so
        that it is reported failed, partition by partition."""
        with self._polling:
            if self.producer.flush(_TIMEOUT_S):
                self.producer.purge()
                self.producer.flush(_TIMEOUT_S)
            self._closed = True

    def _report(self, lost: int) -> str:
        lines = [f"kafka {self.uri.target}: {lost} records were not acknowledged"]
        errors = {s.error for s in self.partitions_seen.values() if s.error}
        if errors:
            lines[0] += f" ({'; '.join(sorted(errors))})"
        lines.append("resume points (the last acknowledged checkpoint per partition):")
        with self._books:
            for (topic, partition), state in sorted(self.partitions_seen.items()):
                checkpoint = state.settle()
                where = "none" if checkpoint is None else str(checkpoint)
                lines.append(
                    f"  {topic}[{partition}]: {state.acknowledged}/{state.sent} acknowledged,"
                    f" checkpoint {where}"
                )
        return "\n".join(lines)


def _timeouts(params: Mapping[str, str]) -> dict[str, int]:
    """librdkafka's timeouts for TiCDC's dial-, read- and write-timeout (Go durations,
    checked by the URI's parsing)."""
    dial, read, write = (
        round(duration_ms(params.get(f"{name}-timeout", _NET_TIMEOUT)))
        for name in ("dial", "read", "write")
    )
    socket = max(read, write, _MIN_MS["socket"])
    message = max(_ATTEMPTS * socket, _MIN_MS["message"])
    return {
        "socket.connection.setup.timeout.ms": max(dial, _MIN_MS["dial"]),
        "socket.timeout.ms": socket,
        "request.timeout.ms": socket,
        "message.timeout.ms": message,
    }


def _header_bytes(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value or b"")


def _reason(error: KafkaException) -> str:
    arg = error.args[0] if error.args else error
    return arg.str() if isinstance(arg, KafkaError) else str(arg)


def read_topic(uri: SinkURI) -> Iterator[Record]:
    """Every record of the URI's topic, partition by partition, from the start to where the
    broker says each partition ends when it is reached. Partitions are assigned, not
    subscribed (no group to join), and the end is the fetch's end-of-partition event, not the
    watermark: the Tansu test broker reports a partition's high watermark as its last
    batch's base offset + 1."""
    from confluent_kafka import Consumer, TopicPartition

    topic = uri.params["topic"]
    settings = {"group.id": "ticdc-sim-decode", "enable.auto.commit": False}
    consumer = Consumer({**client_config(uri), **settings, "enable.partition.eof": True})
    try:
        metadata = consumer.list_topics(topic, timeout=_TIMEOUT_S).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise SimError(f"kafka {uri.target}: no topic {topic!r}")
        for partition in sorted(metadata.partitions):
            consumer.assign([TopicPartition(topic, partition, 0)])
            yield from _read_partition(consumer, topic, partition)
    except KafkaException as e:
        raise SimError(f"kafka {uri.target}: {_reason(e)}") from None
    finally:
        consumer.close()


def _read_partition(consumer: Any, topic: str, partition: int) -> Iterator[Record]:
    offset = 0
    while True:
        record = consumer.poll(_TIMEOUT_S)
        if record is None:
            raise SimError(
                f"kafka {topic}[{partition}]: nothing after offset {offset} within"
                f" {_TIMEOUT_S:.0f} s, not even the end of the partition"
            )
        problem = record.error()
        if problem is not None:
            if problem.code() == KafkaError._PARTITION_EOF:
                return
            raise SimError(f"kafka {topic}[{partition}]: {problem.str()}")
        offset = record.offset()
        headers = {pair[0]: _header_bytes(pair[1]) for pair in record.headers() or []}
        yield Record(topic, partition, offset, record.key(), record.value(), headers)
