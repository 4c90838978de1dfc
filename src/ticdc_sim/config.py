"""The changefeed's configuration: the sink URI and TiCDC's changefeed TOML, merged.

Spelling and precedence are TiCDC's: parameter names of tiflow `pkg/sink/kafka/options.go`
(`urlConfig`) and `pkg/sink/codec/common/config.go`, TOML keys of `pkg/config/replica_config.go`
and `pkg/config/sink.go`; a URI parameter overrides the same setting in the file (TiCDC merges
with `mergo.WithOverride`). Unlike TiCDC, which drops unknown URI parameters silently, an
unknown parameter or TOML key is an error that names it: a typo must not produce other bytes.
Settings that only tune a real producer (timeouts, SASL, compression ...) are accepted and have
no effect; settings that would change the output but are not simulated yet fail clearly.

This module parses text; the CLI and the service read the files.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, get_args
from urllib.parse import parse_qsl, urlsplit

from ticdc_sim.encoders import CodecConfig, check_protocol, large
from ticdc_sim.errors import ConfigError
from ticdc_sim.model.table import TiCDCProfile
from ticdc_sim.partitioning.router import DispatchRule

SIMULATED_SCHEMES = ("kafka", "kafka+ssl", "jsonl", "parquet", "memory", "blackhole")
LATER_SCHEMES = ("file", "s3", "gcs", "azure", "pulsar", "mysql")
DEFAULT_TOPIC = "ticdc"  # jsonl/memory/blackhole have no URI path that names one
DEFAULT_PARTITION_NUM = 3  # auto-created topics (tiflow pkg/sink/kafka/options.go)

# TiCDC's strconv.ParseBool
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")


@dataclass(frozen=True)
class SinkURI:
    scheme: str
    target: str  # the directory (jsonl, parquet) or the broker list (kafka)
    params: dict[str, str]
    text: str


@dataclass(frozen=True)
class Faults:
    """The `[faults]` section: TiCDC's at-least-once behaviour after failures, on purpose
    (sinks/faults.py). Deterministic under `seed`."""

    duplicate_rate: float = 0.0  # a row record sent again later on its partition
    restart_every: int = 0  # records between simulated TiCDC restarts (0: none)
    restart_at: tuple[int, ...] = ()  # restarts after these record counts
    resolved_lag: int = 0  # ms checkpoints are held back on `resolved_lag_partitions`
    resolved_lag_partitions: tuple[int, ...] = (0,)
    ddl_replay_rate: float = 0.0  # a DDL record delivered again
    label: bool = False  # mark injected records with ticdc-sim-fault headers
    seed: int = 0

    @property
    def active(self) -> bool:
        return bool(
            self.duplicate_rate
            or self.restart_every
            or self.restart_at
            or self.resolved_lag
            or self.ddl_replay_rate
        )


@dataclass(frozen=True)
class Changefeed:
    """Everything the pipeline and the engine need to know about the simulated changefeed."""

    sink: SinkURI
    codec: CodecConfig
    topic: str = DEFAULT_TOPIC
    partition_num: int = DEFAULT_PARTITION_NUM
    partition_num_set: bool = False  # given by the user (a Kafka topic's own count otherwise)
    rules: tuple[DispatchRule, ...] = ()
    case_sensitive: bool = False
    force_replicate: bool = False
    filter_rules: tuple[str, ...] = ("*.*",)
    output_raw_change_event: bool = False
    enable_old_value: bool = True
    # [integrity] corruption-handle-level: what TiCDC does on a bad checksum; none happen here
    corruption_handle_level: str = "warn"
    faults: Faults = Faults()
    warnings: tuple[str, ...] = field(default=(), compare=False)


# -- value parsers: (text or TOML value, where) -> value --------------------------------------

Parse = Callable[[Any, str], Any]


def parse_bool(value: Any, where: str) -> bool:
    """TiCDC's strconv.ParseBool of a URI or config value; `where` names it in the error."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _TRUE:
        return True
    if isinstance(value, str) and value in _FALSE:
        return False
    raise ConfigError(f"{where}: {value!r} is not a boolean (true or false)")


def _rate(value: Any, where: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    raise ConfigError(f"{where}: {value!r} is not a rate between 0 and 1")


def _counts(value: Any, where: str) -> tuple[int, ...]:
    if isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value
    ):
        return tuple(value)
    raise ConfigError(f"{where}: {value!r} is not a list of whole numbers")


def _integer(value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ConfigError(f"{where}: {value!r} is not an integer")


def _positive(value: Any, where: str) -> int:
    if isinstance(value, str):
        try:
            value = int(value, 10)
        except ValueError:
            raise ConfigError(f"{where}: {value!r} is not an integer") from None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{where}: {value!r} is not an integer")
    if value <= 0:
        raise ConfigError(f"{where}: must be greater than 0, got {value}")
    return value


def _count(value: Any, where: str) -> int:
    """An integer >= 0 (0 turns a schedule off)."""
    number = _integer(value, where)
    if number < 0:
        raise ConfigError(f"{where}: must be 0 or more, got {number}")
    return number


def _encoding_format(value: Any, where: str) -> str:
    text = _text(value, where).strip().lower()
    if text not in ("json", "avro"):
        raise ConfigError(f"{where}: {value!r}; the simple protocol's formats are json and avro")
    return text


def _integrity_level(value: Any, where: str) -> bool:
    """[integrity] integrity-check-level: whether rows carry checksums (`correctness`)."""
    text = _text(value, where)
    if text not in ("none", "correctness"):
        raise ConfigError(f"{where}: {value!r} is not none or correctness")
    return text == "correctness"


def _corruption_level(value: Any, where: str) -> str:
    text = _text(value, where)  # what TiCDC does on a checksum mismatch: no effect on output
    if text not in ("warn", "error"):
        raise ConfigError(f"{where}: {value!r} is not warn or error")
    return text


def _not_at_start(value: Any, where: str) -> bool:
    if parse_bool(value, where):
        raise ConfigError(
            f"{where}: sending every table's BOOTSTRAP when the changefeed starts is not"
            " simulated yet (tables get theirs before their first row)"
        )
    return False


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {value!r} is not a string")
    return value


def _protocol(value: Any, where: str) -> str:
    return _text(value, where).strip().lower()


def _profile(value: Any, where: str) -> TiCDCProfile:
    text = _text(value, where)
    choices: tuple[str, ...] = get_args(TiCDCProfile)
    if text not in choices:
        raise ConfigError(f"{where}: unknown TiCDC version {text!r} (one of {', '.join(choices)})")
    return text  # type: ignore[return-value]


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(value)


def _topic(value: Any, where: str) -> str:
    text = _text(value, where)
    # Kafka's own rule for topic names; it also keeps a topic a safe directory name
    if not _TOPIC_NAME.fullmatch(text) or text in (".", ".."):
        raise ConfigError(f"{where}: {text!r} is not a Kafka topic name (letters, digits, `._-`)")
    return text


# [sink.kafka-config.large-message-handle] (pkg/config/large_message.go), checked in _adjust
_LARGE: dict[str, tuple[str, Parse]] = {
    "large-message-handle-option": ("large_message_handle_option", _text),
    "large-message-handle-compression": ("large_message_handle_compression", _text),
    "claim-check-storage-uri": ("claim_check_storage_uri", _text),
    "claim-check-raw-value": ("claim_check_raw_value", parse_bool),
}


# -- the sink URI -------------------------------------------------------------------------------

# parameter -> (setting, parser); the settings are Changefeed and CodecConfig field names
_URI_PARAMS: dict[str, tuple[str, Parse]] = {
    "protocol": ("protocol", _protocol),
    "topic": ("topic", _topic),
    "partition-num": ("partition_num", _positive),
    "max-message-bytes": ("max_message_bytes", _positive),
    "max-batch-size": ("max_batch_size", _positive),
    "enable-tidb-extension": ("enable_tidb_extension", parse_bool),
    "content-compatible": ("content_compatible", parse_bool),
    "only-output-updated-columns": ("only_output_updated_columns", parse_bool),
    "delete-only-output-handle-key-columns": ("delete_only_output_handle_key_columns", parse_bool),
    "ticdc-version": ("profile", _profile),
    "encoding-format": ("encoding_format", _encoding_format),
    # TiCDC reads these from [sink.kafka-config.large-message-handle] only; ours in the URI too
    **_LARGE,
}
# Kafka producer parameters (the kafka:// sink reads them; elsewhere they have no effect), and
# codec parameters of protocols that ignore them
_URI_IGNORED = frozenset(
    {
        "replication-factor",
        "kafka-version",
        "kafka-client-id",
        "compression",
        "auto-create-topic",
        "dial-timeout",
        "write-timeout",
        "read-timeout",
        "required-acks",
        "enable-tls",
        "ca",
        "cert",
        "key",
        "insecure-skip-verify",
        "sasl-user",
        "sasl-password",
        "sasl-mechanism",
        "sasl-gssapi-auth-type",
        "sasl-gssapi-keytab-path",
        "sasl-gssapi-kerberos-config-path",
        "sasl-gssapi-service-name",
        "sasl-gssapi-user",
        "sasl-gssapi-password",
        "sasl-gssapi-realm",
        "sasl-gssapi-disable-pafxfast",
        "avro-decimal-handling-mode",
        "avro-bigint-unsigned-handling-mode",
        "avro-include-before-value",
        "avro-enable-watermark",
        "schema-registry",
        "simple-include-start-ts",
        "debezium-disable-schema",
        "debezium-include-start-ts",
        "debezium-decimal-handling-mode",
        "debezium-bigint-unsigned-handling-mode",
        "debezium-binary-handling-mode",
        "output-row-key",
    }
)


def parse_sink_uri(text: str) -> SinkURI:
    """`scheme://target?params`, checked: the scheme is simulated, every parameter is known."""
    parts = urlsplit(text.strip())
    scheme = parts.scheme.lower()
    if scheme in LATER_SCHEMES:
        raise ConfigError(
            f"sink URI {text!r}: the {scheme}:// sink is not simulated yet;"
            f" use one of {', '.join(s + '://' for s in SIMULATED_SCHEMES)}"
        )
    if scheme not in SIMULATED_SCHEMES:
        raise ConfigError(
            f"sink URI {text!r}: unknown scheme {parts.scheme!r}"
            f" (simulated: {', '.join(s + '://' for s in SIMULATED_SCHEMES)})"
        )
    params: dict[str, str] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name in params:
            raise ConfigError(f"sink URI {text!r}: parameter {name!r} is given twice")
        params[name] = value
    unknown = [n for n in params if n not in _URI_PARAMS and n not in _URI_IGNORED]
    if unknown:
        raise ConfigError(
            f"sink URI {text!r}: unknown parameter{'s' if len(unknown) > 1 else ''}"
            f" {', '.join(map(repr, unknown))}"
        )
    target = parts.netloc + parts.path
    if scheme in ("jsonl", "parquet") and not target:
        raise ConfigError(
            f"sink URI {text!r}: {scheme}:// needs a directory, e.g. {scheme}:///tmp/out"
        )
    if scheme.startswith("kafka"):
        # TiCDC: the brokers are the host list, the topic is the path
        topic, target = parts.path.strip("/"), parts.netloc
        if not target:
            raise ConfigError(f"sink URI {text!r}: no broker; e.g. kafka://127.0.0.1:9092/topic")
        if not topic:
            raise ConfigError(f"sink URI {text!r}: no topic; e.g. kafka://{target}/topic-name")
        if "topic" in params:
            raise ConfigError(f"sink URI {text!r}: the topic is the path; drop ?topic=")
        params["topic"] = topic
        scheme = "kafka"
        if parts.scheme.lower() == "kafka+ssl":
            params.setdefault("enable-tls", "true")
    return SinkURI(scheme, target, params, text)


# -- the changefeed TOML ------------------------------------------------------------------------

Path = tuple[str, ...]

# key path -> (setting, parser)
_TOML_SETTINGS: dict[Path, tuple[str, Parse]] = {
    ("case-sensitive",): ("case_sensitive", parse_bool),
    ("force-replicate",): ("force_replicate", parse_bool),
    ("enable-old-value",): ("enable_old_value", parse_bool),
    ("ticdc-version",): ("profile", _profile),  # ours: the fidelity profile
    ("filter", "rules"): ("filter_rules", _strings),
    ("sink", "protocol"): ("protocol", _protocol),
    ("sink", "dispatchers"): ("rules", lambda v, w: _dispatchers(v, w)),
    ("sink", "only-output-updated-columns"): ("only_output_updated_columns", parse_bool),
    ("sink", "delete-only-output-handle-key-columns"): (
        "delete_only_output_handle_key_columns",
        parse_bool,
    ),
    ("sink", "content-compatible"): ("content_compatible", parse_bool),
    ("sink", "open", "output-old-value"): ("open_output_old_value", parse_bool),
    ("sink", "kafka-config", "partition-num"): ("partition_num", _positive),
    ("sink", "kafka-config", "max-message-bytes"): ("max_message_bytes", _positive),
    ("sink", "kafka-config", "output-raw-change-event"): ("output_raw_change_event", parse_bool),
    ("sink", "kafka-config", "codec-config", "enable-tidb-extension"): (
        "enable_tidb_extension",
        parse_bool,
    ),
    ("sink", "kafka-config", "codec-config", "max-batch-size"): ("max_batch_size", _positive),
    ("sink", "kafka-config", "codec-config", "encoding-format"): (
        "encoding_format",
        _encoding_format,
    ),
    ("sink", "send-bootstrap-interval-in-sec"): ("send_bootstrap_interval_in_sec", _count),
    ("sink", "send-bootstrap-in-msg-count"): ("send_bootstrap_in_msg_count", _count),
    ("sink", "send-bootstrap-to-all-partition"): (
        "send_bootstrap_to_all_partition",
        parse_bool,
    ),
    ("sink", "send-all-bootstrap-at-start"): ("send_all_bootstrap_at_start", _not_at_start),
    ("integrity", "integrity-check-level"): ("enable_row_checksum", _integrity_level),
    ("integrity", "corruption-handle-level"): ("corruption_handle_level", _corruption_level),
    **{("sink", "kafka-config", "large-message-handle", k): v for k, v in _LARGE.items()},
    # ours: the at-least-once scenarios (Faults)
    ("faults", "duplicate-rate"): ("fault_duplicate_rate", _rate),
    ("faults", "restart-every"): ("fault_restart_every", _positive),
    ("faults", "restart-at"): ("fault_restart_at", _counts),
    ("faults", "resolved-lag"): ("fault_resolved_lag", _positive),
    ("faults", "resolved-lag-partitions"): ("fault_resolved_lag_partitions", _counts),
    ("faults", "ddl-replay-rate"): ("fault_ddl_replay_rate", _rate),
    ("faults", "label"): ("fault_label", parse_bool),
    ("faults", "seed"): ("fault_seed", _integer),
}
# keys and whole tables that tune the real system, not the messages: accepted, no effect
_TOML_IGNORED: frozenset[Path] = frozenset(
    {
        ("memory-quota",),
        ("ignore-ineligible-table",),
        ("check-gc-safe-point",),
        ("enable-sync-point",),
        ("enable-table-monitor",),
        ("bdr-mode",),
        ("sync-point-interval",),
        ("sync-point-retention",),
        ("changefeed-error-stuck-duration",),
        ("sql-mode",),
        ("mounter",),
        ("consistent",),
        ("scheduler",),
        ("synced-status",),
        ("sink", "encoder-concurrency"),
        ("sink", "schema-registry"),
        ("sink", "safe-mode"),
        ("sink", "advance-timeout-in-sec"),
        ("sink", "tidb-source-id"),
        ("sink", "enable-kafka-sink-v2"),
        *(("sink", "kafka-config", k) for k in sorted(_URI_IGNORED)),
        ("sink", "kafka-config", "sasl-oauth-client-id"),
        ("sink", "kafka-config", "sasl-oauth-client-secret"),
        ("sink", "kafka-config", "sasl-oauth-token-url"),
        ("sink", "kafka-config", "sasl-oauth-scopes"),
        ("sink", "kafka-config", "sasl-oauth-grant-type"),
        ("sink", "kafka-config", "sasl-oauth-audience"),
        ("sink", "kafka-config", "glue-schema-registry-config"),
        *(("sink", "kafka-config", "codec-config", k) for k in sorted(_URI_IGNORED)),
        ("sink", "kafka-config", "codec-config", "avro-enable-watermark"),
        ("sink", "debezium"),
        ("sink", "simple"),
        ("sink", "cloud-storage-config"),
        ("sink", "pulsar-config"),
        ("sink", "mysql-config"),
    }
)
# settings that change the messages but are not simulated yet
_TOML_LATER: dict[Path, str] = {
    ("filter", "event-filters"): "event filters",
    ("filter", "ignore-txn-start-ts"): "ignored transactions",
    ("sink", "column-selectors"): "column selectors",
    ("sink", "csv"): "the csv protocol",
    ("sink", "terminator"): "the csv terminator",
    ("sink", "date-separator"): "the storage sink",
    ("sink", "enable-partition-separator"): "the storage sink",
    ("sink", "file-index-digit"): "the storage sink",
    ("sink", "transaction-atomicity"): "transaction atomicity",
}
_DISPATCHER_KEYS = frozenset({"matcher", "partition", "dispatcher", "index", "columns", "topic"})


def _dispatchers(value: Any, where: str) -> tuple[DispatchRule, ...]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected [[sink.dispatchers]] tables, got {value!r}")
    rules = []
    for i, entry in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{at}: expected a table, got {entry!r}")
        unknown = sorted(set(entry) - _DISPATCHER_KEYS)
        if unknown:
            raise ConfigError(f"{at}: unknown key{'s' if len(unknown) > 1 else ''} {unknown}")
        matcher = _strings(entry.get("matcher", []), f"{at}.matcher")
        if not matcher:
            raise ConfigError(f"{at}.matcher: a rule needs at least one table filter")
        if "partition" in entry and "dispatcher" in entry:
            # tiflow pkg/config/sink.go validateAndAdjust
            raise ConfigError(f"{at}: `dispatcher` and `partition` cannot both be set")
        partition = _text(entry.get("partition", entry.get("dispatcher", "")), f"{at}.partition")
        rules.append(
            DispatchRule(
                matcher=matcher,
                partition=partition or "default",
                index=_text(entry.get("index", ""), f"{at}.index"),
                columns=_strings(entry.get("columns", []), f"{at}.columns"),
                topic=_text(entry.get("topic", ""), f"{at}.topic"),
            )
        )
    return tuple(rules)


def _walk(table: Mapping[str, Any], path: Path, out: dict[str, Any], source: str) -> None:
    for key, value in table.items():
        here = (*path, key)
        where = f"{source}: {'.'.join(here)}"
        if here in _TOML_SETTINGS:
            name, parse = _TOML_SETTINGS[here]
            out[name] = parse(value, where)
        elif here in _TOML_LATER:
            raise ConfigError(f"{where}: {_TOML_LATER[here]} are not simulated yet")
        elif any(here[: len(p)] == p for p in _TOML_IGNORED):
            continue
        elif any(k[: len(here)] == here for k in _TOML_SETTINGS):
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: expected a table, got {value!r}")
            _walk(value, here, out, source)
        else:
            raise ConfigError(f"{where}: unknown configuration key")


def parse_changefeed_toml(text: str, source: str = "changefeed.toml") -> dict[str, Any]:
    """The settings a changefeed TOML gives, by Changefeed/CodecConfig field name."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: {e}") from None
    settings: dict[str, Any] = {}
    _walk(document, (), settings, source)
    return settings


# the replica config of TiCDC's open API v2 (cdc/api/v2/model.go ReplicaConfig): the TOML's
# keys in snake case, but for these
_JSON_KEYS = {"advance_timeout": "advance-timeout-in-sec", "file_index_width": "file-index-digit"}


def parse_replica_config(
    document: Mapping[str, Any], source: str = "replica_config"
) -> dict[str, Any]:
    """The settings an open-API replica config gives. Keys are TiCDC's JSON names; a null or
    an empty value is an unset field, as Go's zero values are."""

    def kebab(value: Any) -> Any:
        if isinstance(value, Mapping):
            out = {}
            for key, item in value.items():
                item = kebab(item)
                if item is None or item in ({}, []):
                    continue
                out[_JSON_KEYS.get(key, key.replace("_", "-"))] = item
            return out
        if isinstance(value, list):
            return [kebab(v) for v in value]
        return value

    if not isinstance(document, Mapping):
        raise ConfigError(f"{source}: expected an object, got {document!r}")
    settings: dict[str, Any] = {}
    _walk(kebab(document), (), settings, source)
    return settings


# -- merging ------------------------------------------------------------------------------------

_CODEC_FIELDS = frozenset(CodecConfig.__dataclass_fields__)


def changefeed(
    sink_uri: str,
    toml_text: str | None = None,
    toml_source: str = "",
    overrides: Mapping[str, Any] | None = None,
    configured: Mapping[str, Any] | None = None,
) -> Changefeed:
    """The changefeed of a sink URI and (optionally) a changefeed TOML, or settings parsed
    already (`configured`, e.g. `parse_replica_config`); the URI wins over the config, and
    `overrides` (settings by field name, from command-line flags) over both."""
    sink = parse_sink_uri(sink_uri)
    settings = dict(configured or {})
    if toml_text is not None:
        settings = parse_changefeed_toml(toml_text, toml_source or "changefeed.toml")
    for name, value in sink.params.items():
        if name in _URI_PARAMS:
            setting, parse = _URI_PARAMS[name]
            settings[setting] = parse(value, f"sink URI parameter {name}")
    settings.update(overrides or {})
    protocol = settings.pop("protocol", "")
    if not protocol:
        raise ConfigError(
            f"sink URI {sink_uri!r}: no protocol; add ?protocol=canal-json (or open-protocol),"
            " or `protocol` under [sink] in the changefeed config"
        )
    check_protocol(protocol)
    codec = CodecConfig(protocol, **{k: v for k, v in settings.items() if k in _CODEC_FIELDS})
    faults = Faults(**{k[6:]: settings.pop(k) for k in list(settings) if k.startswith("fault_")})
    settings["partition_num_set"] = "partition_num" in settings
    others = {k: v for k, v in settings.items() if k not in _CODEC_FIELDS}
    feed = Changefeed(sink, codec, faults=faults, **others)
    return _adjust(feed)


def _adjust(feed: Changefeed) -> Changefeed:
    """TiCDC's own adjustments of what the user asked for, each with the warning TiCDC logs."""
    codec, warnings = feed.codec, list(feed.warnings)
    protocol = codec.protocol
    if not feed.enable_old_value and protocol in ("canal-json", "canal", "maxwell"):
        # replica_config.go AdjustEnableOldValue
        warnings.append(f"enable-old-value is forced on for protocol {protocol}, as TiCDC does")
        feed = replace(feed, enable_old_value=True)
    if codec.enable_tidb_extension and protocol not in ("canal-json", "avro", "debezium"):
        warnings.append(f"enable-tidb-extension has no effect with protocol {protocol}")
    large.check(
        codec.large_message_handle_option,
        codec.large_message_handle_compression,
        protocol,
        codec.enable_tidb_extension,
        codec.claim_check_storage_uri,
        codec.claim_check_raw_value,
    )
    if codec.large_message_handle_option != "none" and feed.force_replicate:
        # common/config.go Apply
        raise ConfigError(
            "force-replicate must be disabled, when the large message handle is enabled,"
            f' large message handle: "{codec.large_message_handle_option}"'
        )
    if codec.enable_row_checksum and protocol not in ("simple", "avro"):
        # only these protocols write checksums (common/config.go EnableRowChecksum readers)
        warnings.append(f"integrity-check-level has no effect on protocol {protocol}'s messages")
    if codec.only_output_updated_columns and protocol not in ("canal-json", "open-protocol"):
        warnings.append(f"only-output-updated-columns has no effect with protocol {protocol}")
    if codec.delete_only_output_handle_key_columns and protocol == "simple":
        # simple's marshaller writes every column of a delete (handle keys only when too large)
        warnings.append("delete-only-output-handle-key-columns has no effect with protocol simple")
    if codec.encoding_format != "json" and protocol != "simple":
        warnings.append(f"encoding-format has no effect with protocol {protocol}")
    if codec.content_compatible and protocol != "canal-json":
        # common/config.go Apply reads content-compatible for canal-json only
        codec = replace(codec, content_compatible=False)
    return replace(feed, codec=codec, warnings=tuple(warnings))
