"""Encoders: events -> Kafka records (key, value), one module per TiCDC protocol, no I/O.

Every protocol module has the same verbs, after TiCDC's `RowEventEncoder`
(tiflow `pkg/sink/codec/encoder.go`): `Encoder.append_row(event)`, `build()`,
`encode_ddl(event)`, `encode_checkpoint(ts)`, and `build_groups(groups)`, which encodes
several batches (a pipeline window's partition-key groups) in one pass; and
`Decoder.decode(key, value)`, which reads records back into `Decoded*` events, resolving
large messages (`large`) through an `Upstream` when given one.
`encoder_for`/`decoder_for` look modules up by TiCDC's protocol name and import them only
when asked.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Protocol

from ticdc_sim.encoders.registry import SchemaRegistry
from ticdc_sim.errors import ConfigError
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.table import TiCDCProfile

NO_HEADERS: Mapping[str, bytes] = MappingProxyType({})


@dataclass(frozen=True)
class CodecConfig:
    """What the encoders read from the sink URI and the changefeed config (tiflow
    `pkg/sink/codec/common/config.go`)."""

    protocol: str
    enable_tidb_extension: bool = False
    content_compatible: bool = False
    only_output_updated_columns: bool = False
    delete_only_output_handle_key_columns: bool = False
    max_message_bytes: int = 10 * 1024 * 1024
    max_batch_size: int = 16
    open_output_old_value: bool = True
    profile: TiCDCProfile = "v8.5"
    # [sink.kafka-config.large-message-handle] (pkg/config/large_message.go), see `large`
    large_message_handle_option: str = "none"
    large_message_handle_compression: str = "none"
    claim_check_storage_uri: str = ""
    claim_check_raw_value: bool = False
    # simple: [sink.kafka-config.codec-config] encoding-format, [integrity] (row checksums),
    # and the bootstrap schedule of [sink] (pkg/config/sink.go defaults)
    encoding_format: str = "json"
    enable_row_checksum: bool = False
    send_bootstrap_interval_in_sec: int = 120
    send_bootstrap_in_msg_count: int = 10000
    send_bootstrap_to_all_partition: bool = True
    send_all_bootstrap_at_start: bool = False
    # TiCDC's `--tz`, the zone TIMESTAMP values are in: simple names it beside each value
    time_zone: str = "UTC"
    # debezium: `debezium-disable-schema`, [sink.debezium] output-old-value, and the TiCDC
    # server's `cluster-id`, which its records name
    debezium_disable_schema: bool = False
    debezium_output_old_value: bool = True
    # ticdc (new-arch) only: rows' `source.start_ts` (`debezium-include-start-ts`)
    debezium_include_start_ts: bool = False
    cluster_id: str = "default"
    # csv: [sink.csv] and [sink] terminator (tiflow pkg/config/sink.go CSVConfig, defaults
    # of pkg/config/replica_config.go)
    csv_delimiter: str = ","
    csv_quote: str = '"'
    csv_null: str = "\\N"
    csv_include_commit_ts: bool = False
    csv_binary_encoding_method: str = "base64"
    csv_output_old_value: bool = False
    csv_output_handle_key: bool = False
    csv_output_field_header: bool = False
    terminator: str = "\r\n"
    # avro (common/config.go): the Confluent registry's URL ("" for the simulator's own),
    # the type options, and the test-only watermark mode (only with enable-tidb-extension)
    schema_registry: str = ""
    avro_decimal_handling_mode: str = "precise"
    avro_bigint_unsigned_handling_mode: str = "long"
    avro_enable_watermark: bool = False
    # ticdc (new-arch) only: updates and deletes carry the old row as `_ticdc_before`
    avro_include_before_value: bool = False

    @property
    def bootstrap(self) -> bool:
        """Whether BOOTSTRAP messages are sent (config.go ShouldSendBootstrapMsg)."""
        return (
            self.protocol == "simple"
            and self.send_bootstrap_interval_in_sec > 0
            and self.send_bootstrap_in_msg_count > 0
        )

    @property
    def only_updated(self) -> bool:
        # content-compatible forces only-output-updated-columns (common/config.go Apply)
        return self.only_output_updated_columns or self.content_compatible


class Message(NamedTuple):
    """One Kafka record, with what sinks may want to know about it. A named tuple: encoders
    make one per row, and it builds several times faster than a frozen dataclass."""

    key: bytes | None
    value: bytes | None
    ts: int  # the largest commit ts (or checkpoint ts) it carries
    rows: int = 0
    schema: str = ""
    table: str = ""
    headers: Mapping[str, bytes] = NO_HEADERS

    def length(self) -> int:
        """TiCDC's `Message.Length()`: key + value + MaxRecordOverhead (36)."""
        return len(self.key or b"") + len(self.value or b"") + MAX_RECORD_OVERHEAD


# 5 * binary.MaxVarintLen32 + binary.MaxVarintLen64 + 1 (pkg/sink/codec/common/message.go)
MAX_RECORD_OVERHEAD = 36


@dataclass(frozen=True, slots=True)
class DecodedRow:
    kind: Literal["insert", "update", "delete"]
    schema: str
    table: str
    commit_ts: int | None  # None where the protocol does not carry it
    columns: dict[str, Any] | None
    pre_columns: dict[str, Any] | None
    extra: dict[str, Any] = field(default_factory=dict)  # protocol fields (rid, ptn, es ...)
    keys: tuple[str, ...] = ()  # the columns that identify the row, as the protocol tells them


@dataclass(frozen=True, slots=True)
class DecodedDDL:
    schema: str
    table: str
    commit_ts: int | None
    query: str
    ddl_type: Any  # the protocol's DDL type: ActionType number or canal event type


@dataclass(frozen=True, slots=True)
class DecodedCheckpoint:
    ts: int


@dataclass(frozen=True, slots=True)
class DecodedBootstrap:
    """A table schema sent for consumers that join late (simple's BOOTSTRAP)."""

    schema: str
    table: str
    table_id: int
    version: int


Decoded = DecodedRow | DecodedDDL | DecodedCheckpoint | DecodedBootstrap


class Encoder(Protocol):
    # claim-check files of the rows built so far (`large.Claim`); the pipeline stores and
    # clears them before it sends the records that name them
    claims: list[Any]

    def append_row(self, event: RowChangedEvent) -> None: ...
    def build(self) -> list[Message]: ...
    def build_groups(self, groups: Sequence[Sequence[RowChangedEvent]]) -> list[list[Message]]: ...
    def encode_ddl(self, event: DDLEvent) -> Message | None: ...
    def encode_checkpoint(self, ts: int) -> Message | None: ...


class Upstream(Protocol):
    """What TiCDC's consumer looks up outside the message: the claim-check file a location
    names, and a row of the upstream TiDB by its handle key at a snapshot ts (when it
    `has_rows`)."""

    @property
    def has_rows(self) -> bool: ...
    def read_claim(self, location: str) -> bytes: ...
    def row_at(
        self, schema: str, table: str, ts: int, key: Mapping[str, Any]
    ) -> dict[str, Any] | None: ...


class Decoder(Protocol):
    def decode(self, key: bytes | None, value: bytes | None) -> list[Decoded]: ...


# TiCDC protocol name -> module; the modules that exist so far
PROTOCOLS: dict[str, str] = {
    "avro": "ticdc_sim.encoders.avro",
    "canal": "ticdc_sim.encoders.canal",
    "canal-json": "ticdc_sim.encoders.canal_json",
    "craft": "ticdc_sim.encoders.craft",
    "csv": "ticdc_sim.encoders.csv",
    "debezium": "ticdc_sim.encoders.debezium",
    "maxwell": "ticdc_sim.encoders.maxwell",
    "open-protocol": "ticdc_sim.encoders.open_protocol",
    "simple": "ticdc_sim.encoders.simple",
}
# named by TiCDC, not simulated yet: a clear error instead of a silent fallback
PLANNED: tuple[str, ...] = ("debezium-avro",)  # ticdc's Debezium envelope in Avro
# broadcast DDL to every partition, except these (tiflow mq_ddl_sink.go getDDLDispatchRule)
DDL_TO_PARTITION_ZERO = frozenset({"canal", "canal-json"})


def new_arch_error(protocol: str) -> str:
    """TiCDC's answer to a classic-only protocol under the new architecture (ticdc
    `pkg/sink/codec/builder.go` NewEventEncoder)."""
    return (
        f"protocol {protocol} does not exist in the new architecture"
        f" (ticdc-version=new-arch): unknown '{protocol}' message protocol for sink"
        " (TiCDC: ErrSinkUnknownProtocol)"
    )


def check_protocol(protocol: str) -> str:
    """The module of a TiCDC protocol name; a clear error for the others."""
    name = PROTOCOLS.get(protocol)
    if name is None:
        if protocol in PLANNED:
            raise ConfigError(f"protocol {protocol!r} is not simulated yet")
        known = ", ".join(sorted(PROTOCOLS))
        cut = protocol if len(protocol) <= 40 else protocol[:37] + "..."
        raise ConfigError(f"unknown protocol {cut!r} (simulated: {known})")
    return name


def _module(protocol: str) -> Any:
    return importlib.import_module(check_protocol(protocol))


# protocols whose records name schemas in a schema registry (`encoders.registry`)
WITH_REGISTRY = frozenset({"avro"})


def encoder_for(
    config: CodecConfig,
    registry: SchemaRegistry | None = None,
    topic: Callable[[str, str], str] | None = None,
) -> Encoder:
    """A protocol's encoder. Avro registers its schemas in `registry` (a fresh in-memory one
    when None) under the subjects of the topic `topic(schema, table)` names."""
    module = _module(config.protocol)
    if config.protocol in WITH_REGISTRY:
        with_registry: Encoder = module.Encoder(config, registry, topic)
        return with_registry
    encoder: Encoder = module.Encoder(config)
    return encoder


def decoder_for(
    config: CodecConfig, upstream: Upstream | None = None, registry: SchemaRegistry | None = None
) -> Decoder:
    """A protocol's decoder; `upstream` resolves claim-check and handle-key-only messages
    (without it, they decode as they are sent); avro looks its schema ids up in `registry`."""
    module = _module(config.protocol)
    if config.protocol in WITH_REGISTRY:
        with_registry: Decoder = module.Decoder(config, upstream, registry)
        return with_registry
    decoder: Decoder = module.Decoder(config, upstream)
    return decoder
