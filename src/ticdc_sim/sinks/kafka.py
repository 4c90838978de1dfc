"""`kafka://h1:9092,h2:9092/topic?...`: records into a real Kafka, as TiCDC's Kafka sink sends them.

Topics are TiCDC's: a missing topic is created with `partition-num` partitions (3 when not
given) and `replication-factor`; an existing topic keeps its partitions, and `partition-num`
may be smaller than them (with TiCDC's warning) but not larger (tiflow
`pkg/sink/kafka/options.go` SetPartitionNum). `max-message-bytes` is cut to the topic's (or
the broker's) limit minus 128 bytes, as TiCDC does, where the broker tells it.

Every record goes to the partition the dispatcher chose, in order, through librdkafka's
idempotent producer. Every record is accounted for: librdkafka reports the failed ones,
`close()` flushes (purging, after the timeout, what is still queued, so that it fails too) and
succeeds only when none failed; otherwise it fails, naming how many and, per partition, the
last checkpoint acknowledged, which is where a consumer can resume.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.cimpl import NewTopic

from ticdc_sim.config import DEFAULT_PARTITION_NUM, SinkURI, parse_bool
from ticdc_sim.encoders import Message
from ticdc_sim.errors import ConfigError, SimError, Warnings
from ticdc_sim.sinks import Record

_BACKOFF_S = 0.002  # a full local queue: wait this long before producing again
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


@dataclass
class _Partition:
    """Delivery bookkeeping of one (topic, partition)."""

    sent: int = 0
    acknowledged: int = 0
    failed: int = 0
    error: str = ""
    checkpoint: int | None = None  # the last acknowledged checkpoint ts
    pending: dict[int, int] = field(default_factory=dict)  # record number -> checkpoint ts

    def fail(self, reason: str) -> None:
        self.failed += 1
        self.error = self.error or reason

    def settle(self) -> None:
        """Once nothing is in flight: the idempotent producer keeps a partition's records in
        order, so the failed ones are the last ones, and every record before them, with the
        checkpoints among them, was acknowledged."""
        self.acknowledged = self.sent - self.failed
        done = [n for n in self.pending if n < self.acknowledged]
        if done:
            self.checkpoint = self.pending[max(done)]


class KafkaSink:
    def __init__(self, uri: SinkURI, warnings: Warnings | None = None) -> None:
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
        producer = {
            **base,
            "acks": _ACKS[acks],
            # in order per partition, no duplicates from retries: what TiCDC's ordering needs
            "enable.idempotence": acks == "-1",
            "max.in.flight.requests.per.connection": 5 if acks == "-1" else 1,
            "compression.type": compression,
            "linger.ms": 5,
            "delivery.report.only.error": True,
            # one callback for all, none passed a record; a function of the partitions, not
            # a bound method: a producer holding its sink would keep both alive after use
            "on_delivery": partial(_delivered, self.partitions_seen),
        }
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
            self.producer.list_topics(timeout=_TIMEOUT_S)
        except KafkaException as e:
            raise SimError(
                f"kafka {self.uri.target}: cannot reach the brokers: {_reason(e)}"
            ) from None

    def partition_count(self, topic: str, wanted: int | None) -> int:
        """The partition count the dispatchers use for `topic`, creating it if missing."""
        found = self.topics.get(topic)
        if found is None:
            found = self.topics[topic] = self._ensure(topic, wanted)
        return found

    def _ensure(self, topic: str, wanted: int | None) -> int:
        metadata = self.admin.list_topics(timeout=_TIMEOUT_S)
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
            [NewTopic(topic, count, self.replication_factor)], request_timeout=_TIMEOUT_S
        )
        try:
            futures[topic].result(_TIMEOUT_S)
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
            configs = self.admin.describe_configs([resource])[resource].result(_TIMEOUT_S)
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
            state = self.partitions_seen[(topic, partition)] = _Partition()
        produce, poll = self.producer.produce, self.producer.poll
        for message in messages:
            headers: list[tuple[str, str | bytes | None]] | None = (
                list(message.headers.items()) if message.headers else None
            )
            while True:
                try:
                    produce(topic, message.value, message.key, partition, headers=headers)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it.
                    # Briefly: with only failures reported, a poll has no event to end it
                    # early and would sleep its whole timeout while the queue empties.
                    poll(_BACKOFF_S)
        state.sent += len(messages)
        poll(0)

    def resolved(self, topic: str, partition: int, ts: int) -> None:
        """The record just sent on the partition was a checkpoint at `ts`."""
        state = self.partitions_seen[(topic, partition)]
        state.pending[state.sent - 1] = ts

    def close(self) -> None:
        self._drain()
        self.producer.close()  # its connections and threads go now, not at interpreter exit
        lost = sum(s.failed for s in self.partitions_seen.values())
        if lost:
            raise SimError(self._report(lost))

    def abort(self) -> None:
        self._drain()
        self.producer.close()

    def _drain(self) -> None:
        """Wait for every record; what is still undelivered after the timeout is purged, so
        that it is reported failed, partition by partition."""
        if self.producer.flush(_TIMEOUT_S):
            self.producer.purge()
            self.producer.flush(_TIMEOUT_S)
        for state in self.partitions_seen.values():
            state.settle()

    def _report(self, lost: int) -> str:
        lines = [f"kafka {self.uri.target}: {lost} records were not acknowledged"]
        errors = {s.error for s in self.partitions_seen.values() if s.error}
        if errors:
            lines[0] += f" ({'; '.join(sorted(errors))})"
        lines.append("resume points (the last acknowledged checkpoint per partition):")
        for (topic, partition), state in sorted(self.partitions_seen.items()):
            where = "none" if state.checkpoint is None else str(state.checkpoint)
            lines.append(
                f"  {topic}[{partition}]: {state.acknowledged}/{state.sent} acknowledged,"
                f" checkpoint {where}"
            )
        return "\n".join(lines)


def _delivered(
    partitions: dict[tuple[str, int], _Partition], error: KafkaError | None, record: Any
) -> None:
    """A delivery report; librdkafka sends only failures' (one a record would cost as much
    as the produce itself)."""
    if error is not None:
        partitions[(record.topic(), record.partition())].fail(error.str())


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
