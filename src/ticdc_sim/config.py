"""The changefeed's configuration: the sink URI and TiCDC's changefeed config, merged.

Spelling and precedence are TiCDC's: parameter names of tiflow `pkg/sink/kafka/options.go`
(`urlConfig`) and `pkg/sink/codec/common/config.go`, TOML keys of `pkg/config/replica_config.go`
and `pkg/config/sink.go`, the open API's JSON names of `cdc/api/v2/model.go`; a URI parameter
overrides the same setting in the config (TiCDC merges with `mergo.WithOverride`).

The TOML file and the open API's replica config are one document in two spellings and go
through one reader (`_Reader`): the same keys, types, errors and warnings, each naming the key
path as the user wrote it. Values have the Go types TiCDC decodes them into (a quoted number
is refused, as TiCDC refuses it). Unlike TiCDC, which drops unknown URI parameters and JSON
fields silently, an unknown parameter or key is an error that names it: a typo must not
produce other bytes. Settings that only tune a real producer (timeouts, SASL, compression ...)
are accepted and have no effect; settings that would change the output but are not simulated
yet fail clearly.

This module parses text; the CLI and the service read the files.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, get_args
from urllib.parse import quote, unquote, urlsplit

from ticdc_sim.encoders import CodecConfig, check_protocol, large, new_arch_error
from ticdc_sim.errors import ConfigError, shown
from ticdc_sim.model.table import TiCDCProfile
from ticdc_sim.partitioning.filter import TableFilter
from ticdc_sim.partitioning.router import (
    PARTITION_DISPATCHERS,
    DispatchRule,
    EventRouter,
    shared_topics,
)
from ticdc_sim.partitioning.topic import TopicDispatcher, check_for_avro

SIMULATED_SCHEMES = ("kafka", "kafka+ssl", "jsonl", "parquet", "memory", "blackhole", "file", "s3")
LATER_SCHEMES = ("gcs", "gs", "azure", "azblob", "pulsar", "mysql")
STORAGE_SCHEMES = ("file", "s3")  # TiCDC's storage sink: csv and canal-json files by table
STORAGE_PROTOCOLS = ("csv", "canal-json")
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
    # the storage sink (tiflow pkg/sink/cloudstorage/config.go, pkg/config/sink.go)
    flush_interval: str = "5s"
    file_size: int = 64 << 20
    date_separator: str = "day"
    enable_partition_separator: bool = True
    file_index_width: int = 20
    enable_old_value: bool = True
    # [integrity] corruption-handle-level: what TiCDC does on a bad checksum; none happen here
    corruption_handle_level: str = "warn"
    # how long a changefeed may fail and retry before it is `failed` (TiCDC's default 30m;
    # tiflow pkg/config/replica_config.go); the service's changefeeds follow it
    error_stuck_duration: str = "30m"
    faults: Faults = Faults()
    warnings: tuple[str, ...] = field(default=(), compare=False)


# -- value parsers: (value, where) -> value -----------------------------------------------------
# A TOML or JSON document gives typed values, which must have the type TiCDC's Go struct field
# has (TiCDC refuses `partition-num = "3"`); a URI gives text, which `_from_text` reads as Go's
# strconv does first.

Parse = Callable[[Any, str], Any]

_INT16 = (1 << 15) - 1
_INT32 = (1 << 31) - 1
_INT64 = (1 << 63) - 1
# more than one topic has in practice; every checkpoint and DDL is written to every partition,
# so a typo such as partition-num=300000000 would run for hours
MAX_PARTITION_NUM = 10_000
_GO_INT = re.compile(r"[+-]?[0-9]+")  # strconv.ParseInt(s, 10, ...): ASCII digits, no `_`
# time.ParseDuration: "300ms", "1h30m", "-1.5h"; "0" alone may go without a unit
_GO_DURATION = re.compile(r"[+-]?(0|((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)")


def parse_bool(value: Any, where: str) -> bool:
    """TiCDC's strconv.ParseBool of a URI or config value; `where` names it in the error."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _TRUE:
        return True
    if isinstance(value, str) and value in _FALSE:
        return False
    raise ConfigError(f"{where}: {shown(value)} is not a boolean (true or false)")


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    quoted = isinstance(value, str) and value.lower() in ("true", "false")
    hint = f", write {value.lower()} without quotes" if quoted else ""
    raise ConfigError(f"{where}: {shown(value)} is not a boolean (true or false{hint})")


def _int(value: Any, where: str, low: int, high: int, limit: str = "") -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{where}: {shown(value)} is not an integer")
    if value < low:
        bound = "greater than 0" if low == 1 else f"{low} or more"
        raise ConfigError(f"{where}: must be {bound}, got {value}")
    if value > high:
        raise ConfigError(f"{where}: must be at most {high}{limit}, got {shown(value)}")
    return value


def _positive(value: Any, where: str) -> int:
    return _int(value, where, 1, _INT64)


def _count(value: Any, where: str) -> int:
    """An integer >= 0 (0 turns a schedule off)."""
    return _int(value, where, 0, _INT64)


def _count32(value: Any, where: str) -> int:
    return _int(value, where, 0, _INT32)


def _seed(value: Any, where: str) -> int:
    return _int(value, where, -_INT64 - 1, _INT64)


def _partition_num(value: Any, where: str) -> int:
    return _int(value, where, 1, MAX_PARTITION_NUM, " (the simulator's limit)")


def _replication_factor(value: Any, where: str) -> int:
    return _int(value, where, 1, _INT16)


def _any_int(value: Any, where: str) -> int:
    return _int(value, where, -_INT64 - 1, _INT64)


def _rate(value: Any, where: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    raise ConfigError(f"{where}: {shown(value)} is not a rate between 0 and 1")


def _counts(value: Any, where: str) -> tuple[int, ...]:
    if isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _INT64 for v in value
    ):
        return tuple(value)
    raise ConfigError(f"{where}: {shown(value)} is not a list of whole numbers")


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {shown(value)} is not a string")
    return value


def _duration(value: Any, where: str) -> str:
    text = _text(value, where)
    if text and not _GO_DURATION.fullmatch(text):
        raise ConfigError(f"{where}: {shown(text)} is not a duration such as 10s or 1m30s")
    return text


_MIN_STUCK_S = 30 * 60  # tiflow pkg/config/replica_config.go minChangeFeedErrorStuckDuration


def _stuck_duration(value: Any, where: str) -> str:
    """changefeed-error-stuck-duration, refused below TiCDC's 30 minutes as ValidateAndAdjust
    refuses it (the service's TICDC_SIM_ERROR_STUCK_S shortens it, for tests)."""
    text = _duration(value, where)
    if duration_ms(text) < _MIN_STUCK_S * 1000:
        raise ConfigError(
            f"{where}: The ChangefeedErrorStuckDuration:{duration_ms(text) / 1000:f} must be"
            f" larger than {_MIN_STUCK_S:f} Seconds"
        )
    return text


def _int_text(parse: Parse) -> Parse:
    """`parse` of a URI parameter's text, read first as Go's strconv.ParseInt reads it."""

    def from_text(text: str, where: str) -> Any:
        if not _GO_INT.fullmatch(text):
            plus = " (a + in a URI query is a space; a sign is %2B)" if " " in text else ""
            raise ConfigError(f"{where}: {shown(text)} is not an integer{plus}")
        return parse(int(text), where)

    return from_text


def _encoding_format(value: Any, where: str) -> str:
    text = _text(value, where).strip().lower()
    if text not in ("json", "avro"):
        raise ConfigError(
            f"{where}: {shown(value)}; the simple protocol's formats are json and avro"
        )
    return text


def _integrity_level(value: Any, where: str) -> bool:
    """[integrity] integrity-check-level: whether rows carry checksums (`correctness`)."""
    text = _text(value, where)
    if text not in ("none", "correctness"):
        raise ConfigError(f"{where}: {shown(value)} is not none or correctness")
    return text == "correctness"


def _corruption_level(value: Any, where: str) -> str:
    text = _text(value, where)  # what TiCDC does on a checksum mismatch: no effect on output
    if text not in ("warn", "error"):
        raise ConfigError(f"{where}: {shown(value)} is not warn or error")
    return text


def _registry_url(value: Any, where: str) -> str:
    """A Confluent schema registry's URL (TiCDC GETs it: an http or https URL)."""
    text = _text(value, where)
    try:
        parts = urlsplit(text)
        bad = parts.scheme not in ("http", "https") or not parts.hostname
    except ValueError:  # a malformed port or IPv6 address
        bad = True
    if text and bad:
        raise ConfigError(
            f"{where}: {shown(text)} is not a schema registry URL such as http://127.0.0.1:8081"
        )
    return text


def _avro_mode(option: str, choices: tuple[str, str]) -> Parse:
    """An avro-*-handling-mode; TiCDC's message (common/config.go Validate) when it is
    neither of its two values."""

    def parse(value: Any, where: str) -> str:
        text = _text(value, where)
        if text not in choices:
            raise ConfigError(
                f'{where}: {shown(text)}; {option} value could only be "{choices[0]}" or'
                f' "{choices[1]}" (ErrCodecInvalidConfig)'
            )
        return text

    return parse


_avro_decimal_mode = _avro_mode("avro-decimal-handling-mode", ("string", "precise"))
_avro_bigint_mode = _avro_mode("avro-bigint-unsigned-handling-mode", ("long", "string"))


def _not_at_start(value: Any, where: str) -> bool:
    if value:
        raise ConfigError(
            f"{where}: sending every table's BOOTSTRAP when the changefeed starts is not"
            " simulated yet (tables get theirs before their first row)"
        )
    return False


def _protocol(value: Any, where: str) -> str:
    """A protocol name, checked where it is written ("" leaves it to the URI or the file)."""
    name = _text(value, where).strip().lower()
    if name:
        _checked(check_protocol, name, where=where)
    return name


def _profile(value: Any, where: str) -> TiCDCProfile:
    text = _text(value, where)
    choices: tuple[str, ...] = get_args(TiCDCProfile)
    if text not in choices:
        raise ConfigError(
            f"{where}: unknown TiCDC version {shown(text)} (one of {', '.join(choices)})"
        )
    return text  # type: ignore[return-value]


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings, got {shown(value)}")
    return tuple(value)


def _filter_rules(value: Any, where: str) -> tuple[str, ...]:
    rules = _strings(value, where) or ("*.*",)  # filter/utils.go VerifyTableRules
    _checked(TableFilter, list(rules), where=where)
    return rules


def _topic(value: Any, where: str) -> str:
    text = _text(value, where)
    # Kafka's own rule for topic names; it also keeps a topic a safe directory name
    if not _TOPIC_NAME.fullmatch(text) or text in (".", ".."):
        raise ConfigError(
            f"{where}: {shown(text)} is not a Kafka topic name (letters, digits, `._-`)"
        )
    return text


def _checked(make: Callable[..., Any], *args: Any, where: str) -> None:
    """Build `make(*args)` to see that it can be: its ConfigError, located at `where`."""
    try:
        make(*args)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None


# [sink.kafka-config.large-message-handle] (pkg/config/large_message.go), checked in _adjust
_LARGE: dict[str, tuple[str, Parse]] = {
    "large-message-handle-option": ("large_message_handle_option", _text),
    "large-message-handle-compression": ("large_message_handle_compression", _text),
    "claim-check-storage-uri": ("claim_check_storage_uri", _text),
    "claim-check-raw-value": ("claim_check_raw_value", _bool),
}


# -- the sink URI -------------------------------------------------------------------------------

# parameter -> (setting, parser of its text); settings are Changefeed and CodecConfig fields
_URI_PARAMS: dict[str, tuple[str, Parse]] = {
    "protocol": ("protocol", _protocol),
    "topic": ("topic", _topic),
    "partition-num": ("partition_num", _int_text(_partition_num)),
    "max-message-bytes": ("max_message_bytes", _int_text(_positive)),
    "max-batch-size": ("max_batch_size", _int_text(_positive)),
    "enable-tidb-extension": ("enable_tidb_extension", parse_bool),
    "content-compatible": ("content_compatible", parse_bool),
    "only-output-updated-columns": ("only_output_updated_columns", parse_bool),
    "delete-only-output-handle-key-columns": ("delete_only_output_handle_key_columns", parse_bool),
    "ticdc-version": ("profile", _profile),
    "encoding-format": ("encoding_format", _encoding_format),
    "debezium-disable-schema": ("debezium_disable_schema", parse_bool),
    "debezium-include-start-ts": ("debezium_include_start_ts", parse_bool),  # ticdc's only
    "schema-registry": ("schema_registry", _registry_url),
    "avro-decimal-handling-mode": ("avro_decimal_handling_mode", _avro_decimal_mode),
    "avro-bigint-unsigned-handling-mode": ("avro_bigint_unsigned_handling_mode", _avro_bigint_mode),
    "avro-enable-watermark": ("avro_enable_watermark", parse_bool),
    "avro-include-before-value": ("avro_include_before_value", parse_bool),  # ticdc's only
    # TiCDC reads these from [sink.kafka-config.large-message-handle] only; ours in the URI too
    "large-message-handle-option": _LARGE["large-message-handle-option"],
    "large-message-handle-compression": _LARGE["large-message-handle-compression"],
    "claim-check-storage-uri": _LARGE["claim-check-storage-uri"],
    "claim-check-raw-value": ("claim_check_raw_value", parse_bool),
    # the storage sink's (cloudstorage/config.go Apply)
    "flush-interval": ("flush_interval", _duration),
    "file-size": ("file_size", _int_text(_any_int)),
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
        "max-retry",
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
        "simple-include-start-ts",
        "debezium-disable-schema",
        "debezium-include-start-ts",
        "debezium-decimal-handling-mode",
        "debezium-bigint-unsigned-handling-mode",
        "debezium-binary-handling-mode",
        "output-row-key",
    }
)
# the storage sink's tuning (cloudstorage/config.go): accepted, no effect on the files
_URI_STORAGE_IGNORED = frozenset(
    {"worker-count", "flush-concurrency", "file-expiration-days", "file-cleanup-cron-spec"}
)
# the s3:// sink's (TiDB br/pkg/storage/s3.go S3BackendOptions, which TiCDC's storage sink
# parses from its URI): a name is read lower-cased with `_` as `-` (parse.go
# ExtractQueryParameters), so `access_key` is `access-key`
S3_PARAMS = frozenset(
    {
        *("endpoint", "region", "provider", "force-path-style", "use-accelerate-endpoint"),
        *("access-key", "secret-access-key", "session-token", "role-arn", "external-id"),
        *("storage-class", "sse", "sse-kms-key-id", "acl", "object-lock-enabled"),
    }
)
_S3_BOOLS = ("force-path-style", "use-accelerate-endpoint", "object-lock-enabled")


@dataclass(frozen=True)
class S3Location:
    """Where an s3:// sink writes, and how its client connects (s3.go `Apply`,
    `NewS3Storage`): empty strings are unset, as in TiCDC."""

    bucket: str
    prefix: str  # without a trailing "/"; "" for the bucket's root
    endpoint: str = ""
    region: str = ""
    provider: str = ""
    force_path_style: bool = True  # parse.go: true unless the URI says otherwise
    use_accelerate_endpoint: bool = False
    access_key: str = ""
    secret_access_key: str = ""
    session_token: str = ""
    role_arn: str = ""
    external_id: str = ""
    storage_class: str = ""
    sse: str = ""
    sse_kms_key_id: str = ""
    acl: str = ""

    def url(self, name: str = "") -> str:
        """s3://BUCKET/PREFIX/NAME, how errors name an object."""
        return "s3://" + "/".join(p for p in (self.bucket, self.prefix, name) if p)


def s3_location(sink: SinkURI) -> S3Location:
    """An s3:// sink URI's bucket, prefix and options, refused where TiCDC refuses them."""
    bucket, _, prefix = sink.target.partition("/")
    options: dict[str, Any] = {
        k.replace("-", "_"): v for k, v in sink.params.items() if k in S3_PARAMS
    }
    for name in _S3_BOOLS:
        key = name.replace("-", "_")
        if key in options:
            options[key] = parse_bool(options[key], f"sink URI parameter {name}")
    options.pop("object_lock_enabled", None)  # BR's check of the bucket; no effect on writes
    found = S3Location(bucket, prefix.strip("/"), **options)
    where = shown(redacted(sink.text), 120)
    if found.endpoint:
        endpoint = urlsplit(found.endpoint)
        if not endpoint.scheme:
            raise ConfigError(
                f"sink URI {where}: scheme not found in endpoint {shown(found.endpoint)}"
            )
        if not endpoint.netloc:
            raise ConfigError(
                f"sink URI {where}: host not found in endpoint {shown(found.endpoint)}"
            )
    if bool(found.access_key) != bool(found.secret_access_key):
        missing = "secret_access_key" if found.access_key else "access_key"
        raise ConfigError(f"sink URI {where}: {missing} not found (ErrStorageInvalidConfig)")
    # s3.go Apply: these providers, and the accelerate endpoint, take virtual-hosted style
    if found.provider in ("alibaba", "netease") or found.use_accelerate_endpoint:
        found = replace(found, force_path_style=False)
    return replace(found, endpoint=found.endpoint.rstrip("/"))


# what those must look like all the same: TiCDC binds them to Go types (kafka/options.go
# urlConfig), and a value it refuses must not pass here
_URI_CHECKS: dict[str, Parse] = {
    "replication-factor": _int_text(_replication_factor),
    "required-acks": _int_text(_any_int),
    "max-retry": _int_text(_any_int),
    "dial-timeout": _duration,
    "write-timeout": _duration,
    "read-timeout": _duration,
    "worker-count": _int_text(_positive),
    "flush-concurrency": _int_text(_any_int),
    "file-expiration-days": _int_text(_any_int),
    **{
        name: parse_bool
        for name in (
            "auto-create-topic",
            "enable-tls",
            "insecure-skip-verify",
            "sasl-gssapi-disable-pafxfast",
            "debezium-disable-schema",
        )
    },
}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
# a broker: a host name, an IPv4 address or a bracketed IPv6 one, and a port
_BROKER = re.compile(r"(\[[0-9A-Fa-f:.]+(%[^\]]+)?\]|[A-Za-z0-9._-]+)(:([0-9]{1,5}))?")


# parse.go RedactURL: the keys an s3:// URI carries are not repeated in messages
_SECRET = re.compile(r"(?i)([?&](?:access[-_]key|secret[-_]access[-_]key|session[-_]token)=)[^&#]*")


def redacted(text: str) -> str:
    """A sink URI as messages show it: its S3 keys `redacted`, as TiDB's RedactURL does."""
    return _SECRET.sub(r"\1redacted", text)


def _fail(text: str, what: str) -> ConfigError:
    return ConfigError(f"sink URI {shown(redacted(text), 120)}: {what}")


def _unquoted(part: str, uri: str) -> str:
    """A URI part percent-decoded, as Go's url.Parse does; it must be UTF-8 without NUL."""
    bad = _BAD_ESCAPE.search(part)
    if bad is not None:
        raise _fail(uri, f"{shown(part[bad.start() : bad.start() + 3])} is not a %XX escape")
    try:
        found = unquote(part, errors="strict")
    except UnicodeDecodeError:
        raise _fail(uri, f"{shown(part)} is not UTF-8 once percent-decoded") from None
    if "\x00" in found:
        raise _fail(uri, f"{shown(part)} holds a NUL byte once percent-decoded")
    return found


def _query(query: str, text: str, scheme: str) -> dict[str, str]:
    if ";" in query:  # Go's url.ParseQuery refuses them since Go 1.17
        raise _fail(text, "';' does not separate parameters; use '&' (or %3B inside a value)")
    # br/pkg/storage parse.go ParseRawURL: in an s3:// URI a + is itself (secret keys hold
    # them), elsewhere a space as Go's url.ParseQuery reads it
    space = "+" if scheme == "s3" else " "
    s3 = S3_PARAMS if scheme == "s3" else frozenset()
    params: dict[str, str] = {}
    for item in filter(None, query.split("&")):
        raw_name, _, raw_value = item.partition("=")
        name = _unquoted(raw_name.replace("+", space), text)
        value = _unquoted(raw_value.replace("+", space), text)
        if name.lower().replace("_", "-") in s3:
            name = name.lower().replace("_", "-")
        if name in params:
            raise _fail(text, f"parameter {shown(name)} is given twice")
        params[name] = value
    unknown = [
        n
        for n in params
        if n not in _URI_PARAMS
        and n not in _URI_IGNORED
        and n not in _URI_STORAGE_IGNORED
        and n not in s3
    ]
    if unknown:
        names = ", ".join(map(shown, unknown[:5])) + (", ..." if len(unknown) > 5 else "")
        raise _fail(text, f"unknown parameter{'s' if len(unknown) > 1 else ''} {names}")
    for name, check in _URI_CHECKS.items():
        if name in params:
            check(params[name], f"sink URI parameter {name}")
    return params


def _brokers(netloc: str, text: str) -> str:
    if "@" in netloc:
        raise _fail(text, "credentials go in sasl-user and sasl-password, not before the host")
    if not netloc:
        raise _fail(text, "no broker; e.g. kafka://127.0.0.1:9092/topic")
    for broker in netloc.split(","):
        found = _BROKER.fullmatch(broker)
        if found is None:
            raise _fail(text, f"{shown(broker)} is not a broker address such as 127.0.0.1:9092")
        port = found.group(4)
        if port is not None and not 0 < int(port) < 65536:
            raise _fail(text, f"broker {shown(broker)}: port {port} is not 1 to 65535")
    return netloc


def parse_sink_uri(text: str) -> SinkURI:
    """`scheme://target?params`, checked: the scheme is simulated, every parameter is known
    and well-formed; the target is percent-decoded."""
    stripped = text.strip()
    control = _CONTROL.search(stripped)
    if control is not None:  # Go's url.Parse refuses them; urlsplit would drop some silently
        raise _fail(text, f"control character {control.group()!r} at position {control.start()}")
    try:
        parts = urlsplit(stripped)
    except ValueError:  # an unbalanced [IPv6] bracket
        raise _fail(text, "an IPv6 host needs its [ and ], e.g. kafka://[::1]:9092/t") from None
    scheme = parts.scheme.lower()
    simulated = ", ".join(s + "://" for s in SIMULATED_SCHEMES)
    if scheme in LATER_SCHEMES:
        raise _fail(text, f"the {scheme}:// sink is not simulated yet; use one of {simulated}")
    if not scheme:
        raise _fail(text, f"no scheme, e.g. jsonl:///tmp/out (simulated: {simulated})")
    if scheme not in SIMULATED_SCHEMES:
        raise _fail(text, f"unknown scheme {shown(parts.scheme)} (simulated: {simulated})")
    if parts.fragment or stripped.endswith("#"):
        raise _fail(text, "a sink URI has no #fragment (a '#' in a value is %23)")
    params = _query(parts.query, text, scheme)
    if scheme.startswith("kafka"):
        # TiCDC: the brokers are the host list, the topic is the path
        target = _brokers(parts.netloc, text)
        topic = _unquoted(parts.path, text).strip("/")
        if not topic:
            raise _fail(text, f"no topic; e.g. kafka://{target}/topic-name")
        if "topic" in params:
            raise _fail(text, "the topic is the path; drop ?topic=")
        params["topic"] = topic
        if scheme == "kafka+ssl":
            params.setdefault("enable-tls", "true")
        return SinkURI("kafka", target, params, text)
    if scheme == "s3":
        return _s3(parts.netloc, parts.path, params, text)
    target = _unquoted(parts.netloc + parts.path, text)
    if scheme in ("jsonl", "parquet", "file") and not target:
        raise _fail(text, f"{scheme}:// needs a directory, e.g. {scheme}:///tmp/out")
    if scheme in ("jsonl", "parquet", "file") and target.startswith("~"):  # a directory named ~
        raise _fail(text, f"~ is not your home in a URI; write {scheme}://$HOME/... instead")
    return SinkURI(scheme, target, params, text)


def _s3(netloc: str, path: str, params: dict[str, str], text: str) -> SinkURI:
    """s3://BUCKET/PREFIX (parse.go parseBackend): the target is BUCKET/PREFIX."""
    if not netloc:
        raise _fail(text, "please specify the bucket for s3, e.g. s3://bucket/prefix")
    if "@" in netloc or ":" in netloc:
        raise _fail(
            text, "the host is the bucket; credentials go in access-key and secret-access-key"
        )
    prefix = _unquoted(path, text).strip("/")
    sink = SinkURI("s3", f"{netloc}/{prefix}".rstrip("/"), params, text)
    s3_location(sink)  # its options checked now, not when the first file is written
    return sink


def sink_uri_text(scheme: str, target: str, query: str = "") -> str:
    """The text of a file sink's URI for `target`, a directory: what `parse_sink_uri` reads
    back as exactly that directory (percent-encoded where it must be)."""
    return f"{scheme}://{quote(target, safe='/')}" + (f"?{query}" if query else "")


# -- the changefeed config: TOML, or the open API's replica config (JSON) ------------------------

Path = tuple[str, ...]

# key path (TOML's spelling) -> (setting, parser)
# [sink.kafka-config] keys TiCDC merges into the sink URI's Kafka options, the URI's own
# winning (tiflow pkg/sink/kafka/options.go mergeConfig), each read with its Go type; they
# reach the Kafka sink as URI parameters
_KAFKA_FROM_CONFIG: dict[str, Parse] = {
    "replication-factor": _replication_factor,
    "kafka-version": _text,
    "compression": _text,
    "kafka-client-id": _text,
    "auto-create-topic": _bool,
    "dial-timeout": _duration,
    "write-timeout": _duration,
    "read-timeout": _duration,
    "required-acks": _any_int,
    "enable-tls": _bool,
    "ca": _text,
    "cert": _text,
    "key": _text,
    "insecure-skip-verify": _bool,
    "sasl-user": _text,
    "sasl-password": _text,
    "sasl-mechanism": _text,
    "sasl-gssapi-auth-type": _text,
    "sasl-gssapi-keytab-path": _text,
    "sasl-gssapi-kerberos-config-path": _text,
    "sasl-gssapi-service-name": _text,
    "sasl-gssapi-user": _text,
    "sasl-gssapi-password": _text,
    "sasl-gssapi-realm": _text,
    "sasl-gssapi-disable-pafxfast": _bool,
}
_KAFKA_PARAM = "kafka-param:"  # the setting name's prefix of those


# [sink.csv] (tiflow pkg/config/sink.go CSVConfig); checked in `_adjust`, as TiCDC checks
# them only for a storage sink
_CSV: dict[str, tuple[str, Parse]] = {
    "delimiter": ("csv_delimiter", _text),
    "quote": ("csv_quote", _text),
    "null": ("csv_null", _text),
    "include-commit-ts": ("csv_include_commit_ts", _bool),
    "binary-encoding-method": ("csv_binary_encoding_method", _text),
    "output-old-value": ("csv_output_old_value", _bool),
    "output-handle-key": ("csv_output_handle_key", _bool),
    "output-field-header": ("csv_output_field_header", _bool),
}


def _date_separator(value: Any, where: str) -> str:
    """DateSeparator.FromString (any case)."""
    text = _text(value, where)
    if text.lower() not in DATE_SEPARATORS:
        raise ConfigError(
            f"{where}: date separator in storage sink is invalid: {shown(text)}; none, year,"
            " month or day (ErrStorageSinkInvalidDateSeparator)"
        )
    return text.lower()


DATE_SEPARATORS = ("none", "year", "month", "day")
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_MS = {
    "ns": 1e-6,
    "us": 1e-3,
    "µs": 1e-3,
    "μs": 1e-3,
    "ms": 1,
    "s": 1e3,
    "m": 6e4,
    "h": 3.6e6,
}


def duration_ms(text: str) -> float:
    """A Go duration (checked by `_duration`) in milliseconds."""
    sign = -1 if text.startswith("-") else 1
    parts = _DURATION_PART.findall(text)
    return sign * sum(float(n) * _DURATION_MS[unit] for n, unit in parts)


# flush-interval and file-size: TiCDC overrides a value out of range, with a warning
_FLUSH_INTERVAL_MS = (2_000, 600_000)
_FILE_SIZE = (1 << 20, 512 << 20)


def _csv_errors(codec: CodecConfig) -> str | None:
    """CSVConfig.validateAndAdjust's refusal of the [sink.csv] options, if any: lengths in
    bytes, as Go's len; the messages of tiflow pkg/config/sink_test.go
    TestValidateAndAdjustCSVConfig."""
    quote, delimiter = codec.csv_quote.encode(), codec.csv_delimiter.encode()
    if len(quote) > 1:
        return "csv config quote contains more than one character"
    if quote in (b"\r", b"\n"):
        return "csv config quote cannot be line break character"
    if not delimiter:
        return "csv config delimiter cannot be empty"
    if b"\r" in delimiter or b"\n" in delimiter:
        return "csv config delimiter contains line break characters"
    if len(delimiter) > 3:
        return (
            "csv config delimiter contains more than three characters, note that escape"
            " sequences can only be used in double quotes in toml configuration items."
        )
    if quote and quote in delimiter:
        return "csv config quote and delimiter has common characters which is not allowed"
    if codec.csv_binary_encoding_method not in ("base64", "hex"):
        return "csv config binary-encoding-method can only be hex or base64"
    return None


def _as_param(value: Any) -> str:
    """A config value as the URI parameter's text."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


_TOML_SETTINGS: dict[Path, tuple[str, Parse]] = {
    ("case-sensitive",): ("case_sensitive", _bool),
    ("force-replicate",): ("force_replicate", _bool),
    ("enable-old-value",): ("enable_old_value", _bool),
    ("changefeed-error-stuck-duration",): ("error_stuck_duration", _stuck_duration),
    ("ticdc-version",): ("profile", _profile),  # ours: the fidelity profile
    ("filter", "rules"): ("filter_rules", _filter_rules),
    ("sink", "protocol"): ("protocol", _protocol),
    ("sink", "only-output-updated-columns"): ("only_output_updated_columns", _bool),
    ("sink", "delete-only-output-handle-key-columns"): (
        "delete_only_output_handle_key_columns",
        _bool,
    ),
    ("sink", "content-compatible"): ("content_compatible", _bool),
    ("sink", "open", "output-old-value"): ("open_output_old_value", _bool),
    ("sink", "debezium", "output-old-value"): ("debezium_output_old_value", _bool),
    ("sink", "debezium", "include-start-ts"): ("debezium_include_start_ts", _bool),
    ("sink", "debezium-disable-schema"): ("debezium_disable_schema", _bool),
    ("sink", "schema-registry"): ("schema_registry", _registry_url),
    ("sink", "kafka-config", "codec-config", "avro-decimal-handling-mode"): (
        "avro_decimal_handling_mode",
        _avro_decimal_mode,
    ),
    ("sink", "kafka-config", "codec-config", "avro-bigint-unsigned-handling-mode"): (
        "avro_bigint_unsigned_handling_mode",
        _avro_bigint_mode,
    ),
    ("sink", "kafka-config", "codec-config", "avro-enable-watermark"): (
        "avro_enable_watermark",
        _bool,
    ),
    ("sink", "kafka-config", "codec-config", "avro-include-before-value"): (
        "avro_include_before_value",
        _bool,
    ),
    ("sink", "kafka-config", "partition-num"): ("partition_num", _partition_num),
    ("sink", "kafka-config", "max-message-bytes"): ("max_message_bytes", _positive),
    **{
        ("sink", "kafka-config", name): (_KAFKA_PARAM + name, parse)
        for name, parse in _KAFKA_FROM_CONFIG.items()
    },
    ("sink", "kafka-config", "output-raw-change-event"): ("output_raw_change_event", _bool),
    ("sink", "kafka-config", "codec-config", "enable-tidb-extension"): (
        "enable_tidb_extension",
        _bool,
    ),
    ("sink", "kafka-config", "codec-config", "max-batch-size"): ("max_batch_size", _positive),
    ("sink", "kafka-config", "codec-config", "encoding-format"): (
        "encoding_format",
        _encoding_format,
    ),
    ("sink", "terminator"): ("terminator", _text),
    ("sink", "date-separator"): ("date_separator", _date_separator),
    ("sink", "enable-partition-separator"): ("enable_partition_separator", _bool),
    ("sink", "file-index-digit"): ("file_index_width", _any_int),
    # the sink URI's flush-interval and file-size win (cloudstorage/config.go mergeConfig)
    ("sink", "cloud-storage-config", "flush-interval"): ("flush_interval", _duration),
    ("sink", "cloud-storage-config", "file-size"): ("file_size", _any_int),
    **{("sink", "csv", k): v for k, v in _CSV.items()},
    ("sink", "send-bootstrap-interval-in-sec"): ("send_bootstrap_interval_in_sec", _count),
    ("sink", "send-bootstrap-in-msg-count"): ("send_bootstrap_in_msg_count", _count32),
    ("sink", "send-bootstrap-to-all-partition"): ("send_bootstrap_to_all_partition", _bool),
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
    ("faults", "label"): ("fault_label", _bool),
    ("faults", "seed"): ("fault_seed", _seed),
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
        ("sql-mode",),
        ("mounter",),
        ("consistent",),
        ("scheduler",),
        ("synced-status",),
        ("sink", "encoder-concurrency"),
        ("sink", "safe-mode"),
        ("sink", "advance-timeout-in-sec"),
        ("sink", "tidb-source-id"),
        ("sink", "enable-kafka-sink-v2"),
        ("sink", "debezium-disable-schema"),
        *(("sink", "kafka-config", k) for k in sorted(_URI_IGNORED - set(_KAFKA_FROM_CONFIG))),
        ("sink", "kafka-config", "sasl-oauth-client-id"),
        ("sink", "kafka-config", "sasl-oauth-client-secret"),
        ("sink", "kafka-config", "sasl-oauth-token-url"),
        ("sink", "kafka-config", "sasl-oauth-scopes"),
        ("sink", "kafka-config", "sasl-oauth-grant-type"),
        ("sink", "kafka-config", "sasl-oauth-audience"),
        ("sink", "kafka-config", "glue-schema-registry-config"),
        *(("sink", "kafka-config", "codec-config", k) for k in sorted(_URI_IGNORED)),
        ("sink", "debezium"),
        ("sink", "simple"),
        *(
            ("sink", "cloud-storage-config", k)
            for k in (
                "worker-count",
                "file-expiration-days",
                "file-cleanup-cron-spec",
                "flush-concurrency",
            )
        ),
        ("sink", "pulsar-config"),
        ("sink", "mysql-config"),
    }
)
# settings that change the messages but are not simulated yet (set to anything but Go's zero
# value: a replica config TiCDC printed has them all)
_TOML_LATER: dict[Path, str] = {
    ("filter", "event-filters"): "event filters are",
    ("filter", "ignore-txn-start-ts"): "ignored transactions are",
    ("sink", "column-selectors"): "column selectors are",
    ("sink", "transaction-atomicity"): "transaction atomicity is",
    ("sink", "cloud-storage-config", "output-column-id"): "schema files with column ids are",
}
_DISPATCHERS: Path = ("sink", "dispatchers")  # read by _Reader.dispatchers
_TABLES: frozenset[Path] = frozenset(p[:n] for p in _TOML_SETTINGS for n in range(1, len(p)))
_SEGMENTS = frozenset(
    k for p in (*_TOML_SETTINGS, *_TOML_IGNORED, *_TOML_LATER, _DISPATCHERS) for k in p
)
# the open API's JSON names (cdc/api/v2/model.go ReplicaConfig) where they are not the TOML
# names in snake case; `enable_old_value` is the deprecated field of v6 and v7
_JSON_NAMES = {
    "advance-timeout-in-sec": "advance_timeout",
    "file-index-digit": "file_index_width",
    "send-all-bootstrap-at-start": "send-all-bootstrap-at-start",
}
_FROM_JSON = {_JSON_NAMES.get(k, k.replace("-", "_")): k for k in _SEGMENTS}


@dataclass(frozen=True)
class _Spelling:
    """How a document names keys: TOML's kebab-case, or the open API's JSON."""

    name: str
    keys: Mapping[str, str]  # a key as written -> TOML's key
    other: Mapping[str, str]  # a key in the other spelling -> TOML's key
    rule_keys: frozenset[str]  # of a [[sink.dispatchers]] entry
    null_is_unset: bool  # JSON's null, as Go reads it into a pointer


_RULE_KEYS = frozenset({"matcher", "partition", "index", "columns", "topic"})
_TOML = _Spelling(
    "TOML",
    {k: k for k in _SEGMENTS},
    _FROM_JSON,
    _RULE_KEYS | {"dispatcher"},  # deprecated, but TiCDC still reads it
    False,
)
_JSON = _Spelling("the open API", _FROM_JSON, {k: k for k in _SEGMENTS}, _RULE_KEYS, True)


class _Reader:
    """One walk over a changefeed document, whatever its spelling: each key checked against
    the tables above, each error and warning naming the key path as the document wrote it."""

    def __init__(self, source: str, spelling: _Spelling) -> None:
        self.source, self.spelling = source, spelling
        self.settings: dict[str, Any] = {}
        self.warnings: list[str] = []

    def walk(self, table: Mapping[Any, Any], path: Path = (), shown_path: Path = ()) -> None:
        for key, value in table.items():
            written = (*shown_path, str(key))
            where = f"{self.source}: {'.'.join(written)}"
            here = (*path, self.spelling.keys.get(key, "")) if isinstance(key, str) else ()
            if not self._known(here):
                raise ConfigError(f"{where}: unknown configuration key{self._hint(path, key)}")
            if value is None and self.spelling.null_is_unset:
                continue
            if here == _DISPATCHERS:
                self.settings["rules"] = self.dispatchers(value, where)
            elif here in _TOML_SETTINGS:
                name, parse = _TOML_SETTINGS[here]
                self.settings[name] = parse(value, where)
            elif here in _TOML_LATER:
                if value not in (False, 0, "", [], {}):
                    raise ConfigError(f"{where}: {_TOML_LATER[here]} not simulated yet")
            elif here in _TABLES:
                if not isinstance(value, Mapping):
                    raise ConfigError(f"{where}: expected a table, got {shown(value)}")
                self.walk(value, here, written)

    @staticmethod
    def _known(path: Path) -> bool:
        if not all(path) or not path:
            return False
        if path in _TOML_SETTINGS or path in _TOML_LATER or path in _TABLES:
            return True
        if path == _DISPATCHERS:
            return True
        return any(path[: len(p)] == p for p in _TOML_IGNORED)

    def _hint(self, path: Path, key: Any) -> str:
        other = self.spelling.other.get(key) if isinstance(key, str) else None
        if other is None or not self._known((*path, other)):
            return ""
        spelt = next(k for k, v in self.spelling.keys.items() if v == other)
        return f" ({self.spelling.name} spells it {spelt})"

    def dispatchers(self, value: Any, where: str) -> tuple[DispatchRule, ...]:
        """[[sink.dispatchers]]: each rule checked as the router will build it, so that a bad
        matcher or topic fails here, and an unknown partition dispatcher is said here."""
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list of dispatcher rules, got {shown(value)}")
        return tuple(self._rule(entry, f"{where}[{i}]") for i, entry in enumerate(value))

    def _rule(self, entry: Any, at: str) -> DispatchRule:
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{at}: expected a table, got {shown(entry)}")
        if self.spelling.null_is_unset:
            entry = {k: v for k, v in entry.items() if v is not None}
        unknown = sorted(map(str, set(entry) - self.spelling.rule_keys))
        if unknown:
            # `dispatcher` is TOML's deprecated name; the open API knows only `partition`
            hint = "; the open API names it partition" if "dispatcher" in unknown else ""
            raise ConfigError(f"{at}: unknown key{'s' if len(unknown) > 1 else ''} {unknown}{hint}")
        matcher = _strings(entry.get("matcher", []), f"{at}.matcher")
        if not matcher:
            raise ConfigError(f"{at}.matcher: a rule needs at least one table filter")
        _checked(TableFilter, list(matcher), where=f"{at}.matcher")
        if entry.get("partition") and entry.get("dispatcher"):
            # tiflow pkg/config/sink.go validateAndAdjust
            raise ConfigError(f"{at}: `dispatcher` and `partition` cannot both be set")
        named = "dispatcher" if entry.get("dispatcher") else "partition"
        partition = _text(entry.get(named, ""), f"{at}.{named}") or "default"
        if partition.lower() not in PARTITION_DISPATCHERS:
            # event_router.go getPartitionDispatcher: a warning, and the default dispatcher
            self.warnings.append(
                f"{at}.{named}: partition dispatcher {shown(partition)} of rule {list(matcher)}"
                f" is unknown; TiCDC uses the default (table) dispatcher instead"
            )
            partition = "default"
        topic = _text(entry.get("topic", ""), f"{at}.topic")
        _checked(TopicDispatcher, topic, DEFAULT_TOPIC, where=f"{at}.topic")
        rule = DispatchRule(
            matcher=matcher,
            partition=partition,
            index=_text(entry.get("index", ""), f"{at}.index"),
            columns=_strings(entry.get("columns", []), f"{at}.columns"),
            topic=topic,
        )
        _checked(EventRouter, [rule], DEFAULT_TOPIC, where=at)  # what else the router checks
        return rule

    def result(self) -> dict[str, Any]:
        return (
            {**self.settings, "warnings": tuple(self.warnings)} if self.warnings else self.settings
        )


_TOML_POSITION = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)$")


def _toml_text(data: str | bytes, source: str) -> str:
    """The file's text: UTF-8, a byte order mark skipped as BurntSushi/toml skips it."""
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        utf16 = data[:2] in (b"\xff\xfe", b"\xfe\xff")
        raise ConfigError(
            f"{source}:{line}:{col}: byte 0x{data[e.start]:02x} is not UTF-8;"
            + (
                " the file is UTF-16, save it as UTF-8"
                if utf16
                else " a changefeed config is a TOML text file"
            )
        ) from None


def _toml_document(data: str | bytes, source: str) -> dict[str, Any]:
    """The TOML, parsed; every failure located as `file:line:col`."""
    text = _toml_text(data, source)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        message = str(e)
        found = _TOML_POSITION.search(message)
        if found is None:
            raise ConfigError(f"{source}: {message}") from None
        if found.group(1) is None:  # at the end of the document
            lines = text.split("\n")
            line, col = len(lines), len(lines[-1]) + 1
        else:
            line, col = int(found.group(1)), int(found.group(2))
        raise ConfigError(f"{source}:{line}:{col}: {message[: found.start()]}") from None
    except RecursionError:
        raise ConfigError(f"{source}: arrays or inline tables nested too deeply") from None


def parse_changefeed_toml(text: str | bytes, source: str = "changefeed.toml") -> dict[str, Any]:
    """The settings a changefeed TOML gives, by Changefeed/CodecConfig field name (and its
    warnings under `warnings`). Bytes are read as UTF-8, as TiCDC reads the file."""
    reader = _Reader(source, _TOML)
    reader.walk(_toml_document(text, source))
    return reader.result()


def parse_changefeed_mapping(document: Mapping[str, Any], source: str = "config") -> dict[str, Any]:
    """The settings of a changefeed TOML given as the mapping `tomllib` would read from it
    (the Python API's `config={"enable-old-value": False, "sink": {...}}`)."""
    if not isinstance(document, Mapping):
        raise ConfigError(f"{source}: expected a mapping, got {shown(document)}")
    reader = _Reader(source, _TOML)
    reader.walk(document)
    return reader.result()


def parse_faults(text: str, source: str = "--faults") -> dict[str, Any]:
    """`key=value,...` read as the [faults] table of a changefeed TOML (the CLI's
    `--faults`); a list in brackets (`restart-at=[100, 200]`, or `[100; 200]`). Each item is
    checked alone, so an error names it, not a line of the table made of them."""
    lines, names = ["[faults]"], set()
    for item in filter(None, (part.strip() for part in _FAULT_ITEMS.split(text))):
        name, _, value = (part.strip() for part in item.partition("="))
        if value.startswith("[") and value.endswith("]"):
            value = value.replace(";", ",")
        line = f"{name} = {value}"
        try:
            tomllib.loads(line)
        except tomllib.TOMLDecodeError:
            raise ConfigError(
                f"{source}: {item!r} is not key=value (the value a number, true or false, or"
                " a list such as [100, 200])"
            ) from None
        if name in names:
            raise ConfigError(f"{source}: {name} is given twice")
        names.add(name)
        lines.append(line)
    return parse_changefeed_toml("\n".join(lines), source)


_FAULT_ITEMS = re.compile(r",(?![^\[]*\])")  # the commas outside brackets


def parse_replica_config(
    document: Mapping[str, Any], source: str = "replica_config"
) -> dict[str, Any]:
    """The settings an open-API replica config gives: the TOML's keys in TiCDC's JSON names,
    read by the same reader, with the same errors and warnings. A null is an unset field, as
    Go reads it into a pointer."""
    if not isinstance(document, Mapping):
        raise ConfigError(f"{source}: expected an object, got {shown(document)}")
    reader = _Reader(source, _JSON)
    reader.walk(document)
    return reader.result()


# -- merging ------------------------------------------------------------------------------------

_CODEC_FIELDS = frozenset(CodecConfig.__dataclass_fields__)


def changefeed(
    sink_uri: str,
    toml_text: str | bytes | None = None,
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
    merged = {
        key[len(_KAFKA_PARAM) :]: _as_param(settings.pop(key))
        for key in [k for k in settings if k.startswith(_KAFKA_PARAM)]
    }
    if merged:
        sink = replace(sink, params={**merged, **sink.params})
    for name, value in sink.params.items():
        if name in _URI_PARAMS:
            setting, parse = _URI_PARAMS[name]
            settings[setting] = parse(value, f"sink URI parameter {name}")
    settings.update(overrides or {})
    protocol = settings.pop("protocol", "")
    if not protocol:
        raise ConfigError(
            f"sink URI {shown(sink_uri, 120)}: no protocol; add ?protocol=canal-json (or"
            " open-protocol),"
            " or `protocol` under [sink] in the changefeed config"
        )
    check_protocol(protocol)
    codec = CodecConfig(protocol, **{k: v for k, v in settings.items() if k in _CODEC_FIELDS})
    faults = Faults(**{k[6:]: settings.pop(k) for k in list(settings) if k.startswith("fault_")})
    settings["partition_num_set"] = "partition_num" in settings
    others = {k: v for k, v in settings.items() if k not in _CODEC_FIELDS}
    feed = Changefeed(sink, codec, faults=faults, **others)
    if toml_text is not None:
        source = toml_source or "changefeed.toml"
    else:
        source = "replica_config" if configured else ""
    return _adjust(feed, source)


# protocols of classic TiCDC only
_CLASSIC_ONLY = frozenset({"canal", "maxwell"})


def _check_csv(feed: Changefeed, codec: CodecConfig) -> None:
    """What TiCDC refuses of the csv protocol (tiflow pkg/config/sink.go validateAndAdjust,
    pkg/sink/codec/builder NewRowEventEncoderBuilder)."""
    if feed.sink.scheme not in STORAGE_SCHEMES:
        raise ConfigError(
            f"protocol csv is written by the storage sink only (file://, s3://); TiCDC's"
            f" {feed.sink.scheme} sink refuses it: unknown 'csv' message protocol for sink"
            " (ErrSinkUnknownProtocol)"
        )
    if codec.delete_only_output_handle_key_columns:
        raise ConfigError(
            "CSV protocol always output all columns for the delete event, do not set"
            " `delete-only-output-handle-key-columns` to true (ErrSinkInvalidConfig)"
        )
    error = _csv_errors(codec)
    if error is not None:
        raise ConfigError(f"[sink.csv]: {error} (ErrSinkInvalidConfig)")


# TiCDC's refusal of force-replicate with avro, by version (common/config.go Apply)
_AVRO_FORCE_REPLICATE: dict[TiCDCProfile, str] = {
    "v8.5": "force-replicate must be disabled, when using avro protocol",
    "new-arch": "force-replicate must be disabled, when using avro or debezium-avro protocol",
}


def _check_debezium(codec: CodecConfig, warnings: list[str]) -> CodecConfig:
    """What the new architecture refuses of debezium (ticdc pkg/sink/codec/common/config.go
    Validate): a schema registry (that is debezium-avro's), and its start-ts option with
    another protocol; v8.5 has no such option."""
    new_arch = codec.profile == "new-arch"
    if new_arch and codec.protocol == "debezium" and codec.schema_registry:
        raise ConfigError(
            'Debezium protocol does not support schema registry; use protocol "debezium-avro"'
            " (ErrCodecInvalidConfig)"
        )
    if not codec.debezium_include_start_ts:
        return codec
    if not new_arch:
        warnings.append(
            "debezium-include-start-ts is the new architecture's (ticdc-version=new-arch);"
            f" TiCDC {codec.profile} has no such option and ignores it"
        )
        return replace(codec, debezium_include_start_ts=False)
    if codec.protocol != "debezium":
        raise ConfigError(
            'debezium-include-start-ts only takes effect with protocol "debezium"'
            " (ErrCodecInvalidConfig)"
        )
    return codec


def _check_avro(
    feed: Changefeed, codec: CodecConfig, warnings: list[str], source: str
) -> CodecConfig:
    """What TiCDC refuses of avro (tiflow and ticdc pkg/sink/codec/common/config.go Apply,
    Validate): force-replicate, and row checksums but with the extension and both options as
    strings; the watermark mode is read only with the extension, and the before value only by
    the new architecture. A refusal names the config (`source`) and key that asked for it:
    both settings are the changefeed config's only."""
    if feed.force_replicate:
        said = f"{_AVRO_FORCE_REPLICATE[codec.profile]} (ErrCodecInvalidConfig)"
        raise ConfigError(_named(source, "force-replicate", said))
    if codec.avro_include_before_value and codec.profile != "new-arch":
        warnings.append(
            "avro-include-before-value is the new architecture's (ticdc-version=new-arch);"
            f" TiCDC {codec.profile} has no such option and ignores it"
        )
        codec = replace(codec, avro_include_before_value=False)
    if codec.enable_row_checksum and not (
        codec.enable_tidb_extension
        and codec.avro_decimal_handling_mode == "string"
        and codec.avro_bigint_unsigned_handling_mode == "string"
    ):
        said = (
            'Avro protocol with row level checksum, should set "enable-tidb-extension" to'
            ' "true", and set "avro-decimal-handling-mode" to "string" and'
            ' "avro-bigint-unsigned-handling-mode" to "string" (ErrCodecInvalidConfig)'
        )
        raise ConfigError(_named(source, "integrity.integrity-check-level", said))
    for rule in feed.rules:  # event_router.go getTopicDispatcher
        check_for_avro(rule.topic)
    for topic, rules in shared_topics(feed.rules, feed.topic).items():
        # TiCDC's docs: "one Kafka topic can only contain data for one table"; its code
        # does not check, and its registry refuses the second table's schema in the
        # topic's subject (a record's name must stay) once it has rows
        warnings.append(
            f"protocol avro: topic {topic!r} can carry more than one table"
            f" ({'; '.join(rules)}), and avro needs one table a topic: their schemas share"
            f" the subjects {topic}-key and {topic}-value, where a registry at BACKWARD"
            " refuses the second table's, failing the changefeed (ErrAvroSchemaAPIError);"
            " TiCDC's docs ask for [sink] dispatchers ="
            " [{matcher = ['*.*'], topic = \"tidb_{schema}_{table}\"}]"
        )
    if codec.avro_enable_watermark:
        if not codec.enable_tidb_extension:
            warnings.append(
                "avro-enable-watermark has no effect without enable-tidb-extension, as in TiCDC"
            )
            return replace(codec, avro_enable_watermark=False)
        warnings.append(
            "avro-enable-watermark is TiCDC's testing mode: DDL and checkpoint records that"
            " no Avro deserializer reads"
        )
    return codec


def _named(source: str, key: str, said: str) -> str:
    """An error of a config's `key`, as the config's other errors say where they are."""
    return f"{source}: {key}: {said}" if source else said


def _check_storage(feed: Changefeed) -> Changefeed:
    """The storage sink's protocol and settings (NewTxnEventEncoderBuilder; cloudstorage
    config.go Apply: out-of-range values overridden with a warning; sink.go: a file index
    width out of 6..20 is 20)."""
    protocol = feed.codec.protocol
    if feed.faults.active:
        raise ConfigError("[faults] are a Kafka sink's; the storage sink (file://, s3://) has none")
    if feed.codec.profile != "v8.5":
        # ticdc's writer orders data before index, its schema files carry ColumnElems, its
        # csv drops output-handle-key: none of it simulated
        raise ConfigError(
            f"ticdc-version={feed.codec.profile} with the storage sink is not simulated yet;"
            " the classic (v8.5) storage sink is"
        )
    if protocol not in STORAGE_PROTOCOLS:
        raise ConfigError(
            f"the storage sink writes protocol csv or canal-json; TiCDC refuses {protocol}:"
            f" unknown '{protocol}' message protocol for sink (ErrSinkUnknownProtocol)"
        )
    warnings = list(feed.warnings)
    low, high = _FLUSH_INTERVAL_MS
    interval = duration_ms(feed.flush_interval) if feed.flush_interval else 5_000
    if not low <= interval <= high:
        bound = "2s" if interval < low else "10m0s"
        warnings.append(
            f"flush-interval {feed.flush_interval} is too {'small' if interval < low else 'large'};"
            f" TiCDC uses {bound}"
        )
        feed = replace(feed, flush_interval=bound)
    feed = _clamp_file_size(feed, warnings)
    if not 6 <= feed.file_index_width <= 20:
        feed = replace(feed, file_index_width=20)
    return replace(feed, warnings=tuple(warnings))


def _clamp_file_size(feed: Changefeed, warnings: list[str]) -> Changefeed:
    """file-size within TiCDC's bounds (cloudstorage/config.go), else overridden with its
    warning; jsonl and parquet rotate at it too (`sinks/retention.py`)."""
    low, high = _FILE_SIZE
    if low <= feed.file_size <= high:
        return feed
    size = low if feed.file_size < low else high
    warnings.append(
        f"file-size {feed.file_size} is too {'small' if size == low else 'large'};"
        f" TiCDC uses {size}"
    )
    return replace(feed, file_size=size)


def _adjust(feed: Changefeed, source: str = "") -> Changefeed:
    """TiCDC's own adjustments of what the user asked for, each with the warning TiCDC logs;
    `source`: the changefeed config's name, for errors."""
    if feed.sink.scheme in STORAGE_SCHEMES:
        feed = _check_storage(feed)
    elif feed.sink.scheme in ("jsonl", "parquet"):
        warnings = list(feed.warnings)
        feed = _clamp_file_size(feed, warnings)
        feed = replace(feed, warnings=tuple(warnings))
    codec, warnings = feed.codec, list(feed.warnings)
    protocol = codec.protocol
    if codec.profile == "new-arch" and protocol in _CLASSIC_ONLY:
        # ticdc pkg/sink/codec/builder.go NewEventEncoder has no such encoder
        raise ConfigError(new_arch_error(protocol))
    if not feed.enable_old_value and protocol in ("canal-json", "canal", "maxwell"):
        # replica_config.go AdjustEnableOldValue
        warnings.append(f"enable-old-value is forced on for protocol {protocol}, as TiCDC does")
        feed = replace(feed, enable_old_value=True)
    if protocol == "debezium" or codec.debezium_include_start_ts:
        codec = _check_debezium(codec, warnings)
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
    if codec.avro_include_before_value and protocol != "avro":
        # common/config.go Apply reads it for avro only
        warnings.append(f"avro-include-before-value has no effect with protocol {protocol}")
        codec = replace(codec, avro_include_before_value=False)
    if codec.only_output_updated_columns and protocol not in ("canal-json", "open-protocol"):
        warnings.append(f"only-output-updated-columns has no effect with protocol {protocol}")
    if codec.delete_only_output_handle_key_columns and protocol == "simple":
        # simple's marshaller writes every column of a delete (handle keys only when too large)
        warnings.append("delete-only-output-handle-key-columns has no effect with protocol simple")
    if codec.encoding_format != "json" and protocol != "simple":
        warnings.append(f"encoding-format has no effect with protocol {protocol}")
    if protocol == "csv":
        _check_csv(feed, codec)
    if protocol == "avro":
        codec = _check_avro(feed, codec, warnings, source)
    if not codec.terminator:
        codec = replace(codec, terminator="\r\n")  # sink.go validateAndAdjust
    if codec.content_compatible and protocol != "canal-json":
        # common/config.go Apply reads content-compatible for canal-json only
        codec = replace(codec, content_compatible=False)
    return replace(feed, codec=codec, warnings=tuple(warnings))
