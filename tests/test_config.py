"""Sink URIs and changefeed TOML, as TiCDC users write them; every mistake named."""

from __future__ import annotations

import pytest

from ticdc_sim.config import changefeed, parse_changefeed_toml, parse_replica_config, parse_sink_uri
from ticdc_sim.errors import ConfigError
from ticdc_sim.partitioning.router import DispatchRule


def test_uri_parameters_take_ticdc_names() -> None:
    feed = changefeed(
        "jsonl:///tmp/x?protocol=canal-json&partition-num=5&max-message-bytes=1048576"
        "&max-batch-size=8&enable-tidb-extension=true&content-compatible=1"
        "&only-output-updated-columns=T&delete-only-output-handle-key-columns=true"
        "&topic=cdc-events&ticdc-version=new-arch"
    )
    assert feed.sink.scheme == "jsonl" and feed.sink.target == "/tmp/x"
    assert (feed.topic, feed.partition_num) == ("cdc-events", 5)
    codec = feed.codec
    assert codec.protocol == "canal-json" and codec.profile == "new-arch"
    assert (codec.max_message_bytes, codec.max_batch_size) == (1048576, 8)
    assert codec.enable_tidb_extension and codec.content_compatible and codec.only_updated
    assert codec.delete_only_output_handle_key_columns


def test_debezium_options_take_ticdc_names_the_uri_winning() -> None:
    # common/config.go: debezium-disable-schema from the URI or [sink], the URI winning;
    # [sink.debezium] output-old-value
    text = "[sink]\ndebezium-disable-schema = true\n[sink.debezium]\noutput-old-value = false\n"
    codec = changefeed("memory://?protocol=debezium", text).codec
    assert (codec.debezium_disable_schema, codec.debezium_output_old_value) == (True, False)
    uri = "memory://?protocol=debezium&debezium-disable-schema=false"
    assert not changefeed(uri, text).codec.debezium_disable_schema
    codec = changefeed("memory://?protocol=debezium").codec
    assert (codec.debezium_disable_schema, codec.debezium_output_old_value) == (False, True)
    with pytest.raises(ConfigError, match="debezium-disable-schema: 'maybe' is not a boolean"):
        changefeed("memory://?protocol=debezium&debezium-disable-schema=maybe")
    codec = changefeed("memory://?protocol=debezium&ticdc-version=new-arch").codec
    assert (codec.protocol, codec.profile) == ("debezium", "new-arch")


# avro's topic rule as TiCDC's docs give it (one table a topic)
PER_TABLE = "[sink]\ndispatchers = [{matcher = ['*.*'], topic = 'tidb_{schema}_{table}'}]\n"


def test_avro_options_take_ticdc_names_and_types() -> None:
    # common/config.go: the URI's parameters win over [sink] schema-registry and
    # [sink.kafka-config.codec-config]; the watermark mode only with the extension
    text = (
        "[sink]\nschema-registry = 'http://registry:8081'\n"
        "dispatchers = [{matcher = ['*.*'], topic = 'tidb_{schema}_{table}'}]\n"
        "[sink.kafka-config.codec-config]\navro-decimal-handling-mode = 'string'\n"
        "avro-bigint-unsigned-handling-mode = 'string'\navro-enable-watermark = true\n"
        "enable-tidb-extension = true\n"
    )
    feed = changefeed("memory://?protocol=avro", text)
    codec = feed.codec
    assert (
        codec.schema_registry,
        codec.avro_decimal_handling_mode,
        codec.avro_bigint_unsigned_handling_mode,
        codec.avro_enable_watermark,
    ) == ("http://registry:8081", "string", "string", True)
    assert feed.warnings == (
        "avro-enable-watermark is TiCDC's testing mode: DDL and checkpoint records that no"
        " Avro deserializer reads",
    )
    uri = "memory://?protocol=avro&schema-registry=https://r&avro-decimal-handling-mode=precise"
    codec = changefeed(uri, text).codec
    assert (codec.schema_registry, codec.avro_decimal_handling_mode) == ("https://r", "precise")
    codec = changefeed("memory://?protocol=avro").codec
    assert (
        codec.schema_registry,
        codec.avro_decimal_handling_mode,
        codec.avro_bigint_unsigned_handling_mode,
        codec.avro_enable_watermark,
    ) == ("", "precise", "long", False)
    feed = changefeed("memory://?protocol=avro&avro-enable-watermark=true", PER_TABLE)
    assert not feed.codec.avro_enable_watermark
    assert feed.warnings == (
        "avro-enable-watermark has no effect without enable-tidb-extension, as in TiCDC",
    )
    with pytest.raises(ConfigError, match="avro-enable-watermark: 'on' is not a boolean"):
        changefeed("memory://?protocol=avro&avro-enable-watermark=on")


@pytest.mark.parametrize(
    ("uri", "toml"),
    [
        ("memory://?protocol=avro", "[integrity]\nintegrity-check-level = 'correctness'\n"),
        (
            "memory://?protocol=avro&enable-tidb-extension=true&avro-decimal-handling-mode=string",
            "[integrity]\nintegrity-check-level = 'correctness'\n",
        ),
    ],
)
def test_avro_row_checksums_need_the_extension_and_strings(uri: str, toml: str) -> None:
    # common/config.go Validate
    with pytest.raises(ConfigError) as found:
        changefeed(uri, toml, "cf.toml")
    assert str(found.value) == (
        "cf.toml: integrity.integrity-check-level:"
        ' Avro protocol with row level checksum, should set "enable-tidb-extension" to "true",'
        ' and set "avro-decimal-handling-mode" to "string" and'
        ' "avro-bigint-unsigned-handling-mode" to "string" (ErrCodecInvalidConfig)'
    )
    uri = (
        "memory://?protocol=avro&enable-tidb-extension=true&avro-decimal-handling-mode=string"
        "&avro-bigint-unsigned-handling-mode=string"
    )
    assert changefeed(uri, toml).codec.enable_row_checksum


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        ("v8.5", "force-replicate must be disabled, when using avro protocol"),
        ("new-arch", "force-replicate must be disabled, when using avro or debezium-avro protocol"),
    ],
)
def test_avro_refuses_force_replicate(profile: str, message: str) -> None:
    uri = f"memory://?protocol=avro&ticdc-version={profile}"
    with pytest.raises(ConfigError) as found:
        changefeed(uri, "force-replicate = true\n", "cf.toml")
    assert str(found.value) == f"cf.toml: force-replicate: {message} (ErrCodecInvalidConfig)"
    with pytest.raises(ConfigError) as found:  # the service's replica_config
        changefeed(uri, configured={"force_replicate": True})
    assert str(found.value) == (
        f"replica_config: force-replicate: {message} (ErrCodecInvalidConfig)"
    )


def test_avro_include_before_value_is_the_new_architectures() -> None:
    uri = "memory://?protocol=avro&ticdc-version=new-arch"
    feed = changefeed(uri + "&avro-include-before-value=true", PER_TABLE)
    assert (feed.codec.avro_include_before_value, feed.warnings) == (True, ())
    toml = "[sink.kafka-config.codec-config]\navro-include-before-value = true\n"
    assert changefeed(uri, toml).codec.avro_include_before_value
    assert not changefeed(uri).codec.avro_include_before_value
    feed = changefeed("memory://?protocol=avro&avro-include-before-value=true", PER_TABLE)
    assert not feed.codec.avro_include_before_value
    assert feed.warnings == (
        "avro-include-before-value is the new architecture's (ticdc-version=new-arch);"
        " TiCDC v8.5 has no such option and ignores it",
    )
    feed = changefeed("memory://?protocol=canal-json&avro-include-before-value=true")
    assert not feed.codec.avro_include_before_value
    assert feed.warnings == ("avro-include-before-value has no effect with protocol canal-json",)
    with pytest.raises(ConfigError, match="avro-include-before-value: 'yes' is not a boolean"):
        changefeed(uri + "&avro-include-before-value=yes")


def test_defaults_are_ticdcs() -> None:
    feed = changefeed("memory://?protocol=open-protocol")
    assert (feed.topic, feed.partition_num, feed.filter_rules) == ("ticdc", 3, ("*.*",))
    assert feed.codec.max_message_bytes == 10 * 1024 * 1024 and feed.codec.max_batch_size == 16
    assert feed.codec.profile == "v8.5" and feed.enable_old_value


def test_producer_only_parameters_are_accepted_and_ignored() -> None:
    feed = changefeed(
        "blackhole://?protocol=open-protocol&kafka-version=2.4.0&replication-factor=3"
        "&compression=lz4&required-acks=-1&sasl-user=u&dial-timeout=5s"
    )
    assert feed.codec.protocol == "open-protocol"


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("jsonl:///x?protocol=canal-json&partition-nums=3", "unknown parameter 'partition-nums'"),
        ("jsonl:///x?protocol=canal-json&a=1&b=2", "unknown parameters 'a', 'b'"),
        ("kafka://127.0.0.1:9092?protocol=canal-json", "no topic; e.g. kafka://127.0.0.1:9092/"),
        ("kafka:///t?protocol=canal-json", "no broker"),
        ("kafka://h:9092/t?protocol=canal-json&topic=u", "the topic is the path"),
        ("parquet://?protocol=canal-json", "parquet:// needs a directory"),
        ("gcs://bucket/x?protocol=canal-json", "gcs:// sink is not simulated yet"),
        ("file://?protocol=csv", "file:// needs a directory"),
        ("ftp://x?protocol=canal-json", "unknown scheme 'ftp'"),
        ("jsonl://?protocol=canal-json", "jsonl:// needs a directory"),
        ("jsonl:///x", "no protocol"),
        (
            "jsonl:///x?protocol=avro&avro-decimal-handling-mode=exact",
            '\'exact\'; avro-decimal-handling-mode value could only be "string" or "precise"',
        ),
        (
            "jsonl:///x?protocol=avro&avro-bigint-unsigned-handling-mode=",
            '\'\'; avro-bigint-unsigned-handling-mode value could only be "long" or "string"',
        ),
        (
            "jsonl:///x?protocol=avro&schema-registry=localhost:8081",
            "'localhost:8081' is not a schema registry URL such as http://127.0.0.1:8081",
        ),
        ("file:///x?protocol=avro", "TiCDC refuses avro: unknown 'avro' message protocol"),
        (
            "jsonl:///x?protocol=avro&large-message-handle-option=claim-check",
            "large message handle is set to claim-check, protocol is avro, it's not supported",
        ),
        ("jsonl:///x?protocol=cannal-json", "unknown protocol 'cannal-json'"),
        ("jsonl:///x?protocol=canal-json&partition-num=0", "partition-num: must be greater"),
        ("jsonl:///x?protocol=canal-json&max-batch-size=x", "max-batch-size: 'x' is not an"),
        ("jsonl:///x?protocol=canal-json&enable-tidb-extension=yes", "'yes' is not a boolean"),
        ("jsonl:///x?protocol=canal-json&topic=../up", "'../up' is not a Kafka topic name"),
        ("jsonl:///x?protocol=canal-json&ticdc-version=v9", "unknown TiCDC version 'v9'"),
        ("jsonl:///x?protocol=canal-json&topic=a&topic=b", "'topic' is given twice"),
        (
            "jsonl:///x?protocol=canal&ticdc-version=new-arch",
            "unknown 'canal' message protocol for sink",
        ),
        # s3:// as TiDB's br/pkg/storage (parse.go, s3.go Apply) refuses it
        ("s3:///p?protocol=csv", "please specify the bucket for s3"),
        ("s3://b/p?protocol=csv&access-key=a", "secret_access_key not found"),
        ("s3://b/p?protocol=csv&secret-access-key=a", "access_key not found"),
        ("s3://b/p?protocol=csv&endpoint=minio.local", "scheme not found in endpoint"),
        ("s3://b/p?protocol=csv&endpoint=minio:9000", "host not found in endpoint"),
        ("s3://b/p?protocol=csv&endpoint=http://", "host not found in endpoint"),
        ("s3://b/p?protocol=csv&force-path-style=yes", "'yes' is not a boolean"),
        ("s3://b/p?protocol=csv&regoin=x", "unknown parameter 'regoin'"),
        ("s3://key:secret@b/p?protocol=csv", "the host is the bucket; credentials go in"),
        ("s3://b/p?protocol=open-protocol", "unknown 'open-protocol' message protocol"),
        ("file:///x?protocol=csv&region=x", "unknown parameter 'region'"),
        (
            "jsonl:///x?protocol=canal&large-message-handle-option=handle-key-only",
            "large message handle is set to handle-key-only, protocol is canal, it's not supported",
        ),
    ],
)
def test_bad_uris_say_what_is_wrong(uri: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("?", r"\?").replace(".", r"\.")):
        changefeed(uri)


TOML = """
case-sensitive = true
force-replicate = true
enable-old-value = true
memory-quota = 1073741824
ticdc-version = "new-arch"

[mounter]
worker-num = 16

[filter]
rules = ['test.*', '!test.skip']

[sink]
protocol = "open-protocol"
encoder-concurrency = 8
dispatchers = [
  {matcher = ['test.t?'], partition = "index-value", index = "uk"},
  {matcher = ['test.c*'], dispatcher = "columns", columns = ["a", "b"], topic = "{schema}_{table}"},
  {matcher = ['test.*'], partition = "ts"},
]

[sink.open]
output-old-value = false

[sink.kafka-config]
partition-num = 6
max-message-bytes = 4096
kafka-version = "3.5.0"
output-raw-change-event = true

[sink.kafka-config.codec-config]
max-batch-size = 4
enable-tidb-extension = true

[sink.kafka-config.large-message-handle]
large-message-handle-option = "none"
"""


def test_the_changefeed_toml() -> None:
    feed = changefeed("memory://", TOML, "cf.toml")
    assert feed.case_sensitive and feed.force_replicate and feed.output_raw_change_event
    assert feed.filter_rules == ("test.*", "!test.skip")
    assert feed.partition_num == 6
    codec = feed.codec
    assert codec.protocol == "open-protocol" and codec.profile == "new-arch"
    assert (codec.max_message_bytes, codec.max_batch_size) == (4096, 4)
    assert not codec.open_output_old_value and codec.enable_tidb_extension
    assert feed.rules == (
        DispatchRule(("test.t?",), "index-value", index="uk"),
        DispatchRule(("test.c*",), "columns", columns=("a", "b"), topic="{schema}_{table}"),
        DispatchRule(("test.*",), "ts"),
    )
    assert any("enable-tidb-extension has no effect" in w for w in feed.warnings)


def test_the_uri_wins_over_the_file() -> None:
    feed = changefeed("memory://?protocol=canal-json&partition-num=2&max-batch-size=9", TOML)
    assert feed.codec.protocol == "canal-json"
    assert (feed.partition_num, feed.codec.max_batch_size) == (2, 9)
    assert feed.codec.max_message_bytes == 4096  # from the file


def test_canal_json_forces_old_value_on_as_ticdc() -> None:
    feed = changefeed("memory://?protocol=canal-json", "enable-old-value = false\n")
    assert feed.enable_old_value
    assert any("enable-old-value is forced on" in w for w in feed.warnings)
    assert not changefeed(
        "memory://?protocol=open-protocol", "enable-old-value = false\n"
    ).enable_old_value


def test_maxwell_forces_old_value_on_and_has_no_new_architecture() -> None:
    feed = changefeed("memory://?protocol=maxwell", "enable-old-value = false\n")
    assert feed.enable_old_value and feed.codec.protocol == "maxwell"
    assert "enable-old-value is forced on for protocol maxwell, as TiCDC does" in feed.warnings
    with pytest.raises(ConfigError) as raised:
        changefeed("memory://?protocol=maxwell&ticdc-version=new-arch")
    assert str(raised.value) == (
        "protocol maxwell does not exist in the new architecture (ticdc-version=new-arch):"
        " unknown 'maxwell' message protocol for sink (TiCDC: ErrSinkUnknownProtocol)"
    )
    with pytest.raises(
        ConfigError,
        match="large message handle is set to handle-key-only,"
        " protocol is maxwell, it's not supported",
    ):
        changefeed("memory://?protocol=maxwell&large-message-handle-option=handle-key-only")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("protocl = 'x'\n", "cf.toml: protocl: unknown configuration key"),
        ("[sink]\nprotocoll = 'x'\n", "cf.toml: sink.protocoll: unknown configuration key"),
        ("[sink.kafka-config]\nbogus = 1\n", "sink.kafka-config.bogus: unknown"),
        (
            "[sink]\ndispatchers = [{matcher = ['*.*'], partiton = 'ts'}]\n",
            r"dispatchers\[0\]: unknown key",
        ),
        ("[sink]\ndispatchers = [{partition = 'ts'}]\n", r"dispatchers\[0\].matcher: a rule needs"),
        (
            "[sink]\ndispatchers = [{matcher = ['*.*'], partition = 'ts', dispatcher = 'ts'}]\n",
            "`dispatcher` and `partition` cannot both be set",
        ),
        ("force-replicate = 'yes'\n", "force-replicate: 'yes' is not a boolean"),
        ("[sink.kafka-config]\npartition-num = -1\n", "partition-num: must be greater than 0"),
        (
            "[sink]\ncolumn-selectors = [{matcher = ['*.*'], columns = ['a']}]\n",
            "column selectors are not simulated yet",
        ),
        ("[filter]\nevent-filters = [{matcher = ['*.*']}]\n", "event filters are not simulated"),
        (
            "[sink.kafka-config.large-message-handle]\nlarge-message-handle = 'claim-check'\n",
            "sink.kafka-config.large-message-handle.large-message-handle: unknown configuration key",
        ),
        ("[sink.kafka-config]\nlarge-message-handle = 1\n", "expected a table, got 1"),
        ("sink = 'kafka'\n", "cf.toml: sink: expected a table, got 'kafka'"),
        ("[sink\n", "cf.toml:1:6: Expected ']' at the end of a table declaration"),
        ("ticdc-version = 'v4.0'\n", "unknown TiCDC version 'v4.0'"),
    ],
)
def test_bad_toml_names_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_changefeed_toml(text, "cf.toml")


def test_a_bad_matcher_is_reported_when_the_config_is_read() -> None:
    with pytest.raises(ConfigError) as found:
        changefeed(
            "memory://?protocol=canal-json",
            "[sink]\ndispatchers = [{matcher = ['test.[a'], partition = 'ts'}]\n",
            "cf.toml",
        )
    assert str(found.value) == (
        "cf.toml: sink.dispatchers[0].matcher: table filter 'test.[a': unterminated ["
    )


def test_relative_jsonl_directories() -> None:
    assert parse_sink_uri("jsonl://out/dir?protocol=canal-json").target == "out/dir"


@pytest.mark.parametrize(
    ("uri", "target"),
    [
        ("jsonl:///tmp/out?protocol=canal-json", "/tmp/out"),  # the documented form
        ("jsonl://relative/dir?protocol=canal-json", "relative/dir"),  # relative to the cwd
        ("jsonl:/tmp/x?protocol=canal-json", "/tmp/x"),  # one slash: the same absolute path
    ],
)
def test_jsonl_directories_absolute_or_relative(uri: str, target: str) -> None:
    assert parse_sink_uri(uri).target == target


def test_kafka_uri_brokers_topic_and_tls() -> None:
    uri = parse_sink_uri("kafka+ssl://h1:9092,h2:9092/orders?protocol=canal-json&sasl-user=u")
    assert (uri.scheme, uri.target, uri.params["topic"]) == ("kafka", "h1:9092,h2:9092", "orders")
    from ticdc_sim.sinks.kafka import client_config

    config = client_config(uri)
    assert config["bootstrap.servers"] == "h1:9092,h2:9092"
    assert (config["security.protocol"], config["sasl.mechanism"]) == ("SASL_SSL", "PLAIN")
    assert changefeed("kafka://h:1/orders?protocol=canal-json").topic == "orders"


def test_kafka_config_producer_keys_merge_into_the_sink_uri_the_uri_winning() -> None:
    """tiflow pkg/sink/kafka/options.go mergeConfig: [sink.kafka-config]'s TLS, SASL and
    producer keys reach the Kafka producer; a URI parameter of the same name wins."""
    from ticdc_sim.sinks.kafka import client_config

    toml = (
        "[sink.kafka-config]\n"
        'sasl-user = "from-config"\nsasl-password = "secret"\nsasl-mechanism = "plain"\n'
        'required-acks = 1\nkafka-client-id = "sim"\ninsecure-skip-verify = false\n'
    )
    feed = changefeed("kafka://127.0.0.1:9092/t?protocol=canal-json&sasl-user=from-uri", toml)
    config = client_config(feed.sink)
    assert config["sasl.username"] == "from-uri"
    assert config["sasl.password"] == "secret"
    assert config["sasl.mechanism"] == "PLAIN"
    assert config["security.protocol"] == "SASL_PLAINTEXT"
    assert config["client.id"] == "sim"
    assert feed.sink.params["required-acks"] == "1"
    json_config = {"sink": {"kafka_config": {"sasl_user": "u", "enable_tls": True}}}
    feed = changefeed(
        "kafka://127.0.0.1:9092/t?protocol=canal-json",
        configured=parse_replica_config(json_config),
    )
    assert (feed.sink.params["sasl-user"], feed.sink.params["enable-tls"]) == ("u", "true")
    with pytest.raises(ConfigError, match="required-acks: '1' is not an integer"):
        changefeed(
            "kafka://h:9092/t?protocol=canal-json", '[sink.kafka-config]\nrequired-acks = "1"\n'
        )


def test_canal_reads_neither_content_compatible_nor_the_tidb_extension() -> None:
    feed = changefeed(
        "jsonl:///x?protocol=canal&content-compatible=true&enable-tidb-extension=true"
    )
    # common/config.go Apply reads content-compatible for canal-json only
    assert (feed.codec.protocol, feed.codec.content_compatible) == ("canal", False)
    assert feed.warnings == ("enable-tidb-extension has no effect with protocol canal",)


def test_sink_csv_options_are_read_with_their_go_types() -> None:
    settings = parse_changefeed_toml(
        "[sink]\nprotocol = 'csv'\nterminator = '\\n'\n"
        "[sink.csv]\ndelimiter = '|@|'\nquote = ''\nnull = 'NULL'\ninclude-commit-ts = true\n"
        "binary-encoding-method = 'hex'\noutput-old-value = true\noutput-handle-key = true\n"
        "output-field-header = true\n",
        "cf.toml",
    )
    assert settings == {
        "protocol": "csv",
        "terminator": "\\n",
        "csv_delimiter": "|@|",
        "csv_quote": "",
        "csv_null": "NULL",
        "csv_include_commit_ts": True,
        "csv_binary_encoding_method": "hex",
        "csv_output_old_value": True,
        "csv_output_handle_key": True,
        "csv_output_field_header": True,
    }
    with pytest.raises(
        ConfigError, match="cf.toml: sink.csv.include-commit-ts: 'yes' is not a boolean"
    ):
        parse_changefeed_toml("[sink.csv]\ninclude-commit-ts = 'yes'\n", "cf.toml")


@pytest.mark.parametrize("uri", ["jsonl:///x", "memory://", "kafka://127.0.0.1:9092/t"])
def test_csv_is_for_the_storage_sink_only(uri: str) -> None:
    with pytest.raises(
        ConfigError,
        match="protocol csv is written by the storage sink only .*"
        r"unknown 'csv' message protocol for sink \(ErrSinkUnknownProtocol\)",
    ):
        changefeed(uri + ("&" if "?" in uri else "?") + "protocol=csv")


def _shared(topic: str, rules: str) -> str:
    return (
        f"protocol avro: topic {topic!r} can carry more than one table ({rules}), and avro"
        f" needs one table a topic: their schemas share the subjects {topic}-key and"
        f" {topic}-value, where a registry at BACKWARD refuses the second table's, failing the"
        " changefeed (ErrAvroSchemaAPIError); TiCDC's docs ask for [sink] dispatchers ="
        " [{matcher = ['*.*'], topic = \"tidb_{schema}_{table}\"}]"
    )


@pytest.mark.parametrize(
    ("dispatchers", "warned"),
    [
        ("", [("t", "tables no rule matches")]),
        ("{matcher = ['*.*'], topic = 'tidb_{schema}_{table}'}", []),
        ("{matcher = ['*.*'], topic = '{schema}.{table}-cdc'}", []),
        # a fixed topic for one table is TiCDC's own form; the rest still go to t
        (
            "{matcher = ['db.a'], topic = 'a'}, {matcher = ['*.*'], topic = '{schema}_{table}'}",
            [],
        ),
        (
            "{matcher = ['db.a'], topic = 'x'}, {matcher = ['db.b'], topic = 'x'},"
            " {matcher = ['*.*'], topic = '{schema}_{table}'}",
            [("x", "rule ['db.a']; rule ['db.b']")],
        ),
        (
            "{matcher = ['db.*'], topic = 'x'}, {matcher = ['*.*'], topic = '{schema}_{table}'}",
            [("x", "rule ['db.*']")],
        ),
        # a negation leaves tables to the implicit rule and its default topic
        (
            "{matcher = ['*.*', '!db.a'], topic = '{schema}_{table}'}",
            [("t", "tables no rule matches")],
        ),
        ("{matcher = ['db.a'], topic = 't'}", [("t", "rule ['db.a']; tables no rule matches")]),
    ],
)
def test_an_avro_topic_that_can_carry_two_tables_is_warned_of(
    dispatchers: str, warned: list[tuple[str, str]]
) -> None:
    """TiCDC's docs: one table a topic with avro; its code does not check (a fixed topic is
    taken as it is), and its registry refuses the second table's schema: said up front."""
    toml = f"[sink]\ndispatchers = [{dispatchers}]\n" if dispatchers else None
    feed = changefeed("kafka://127.0.0.1:9092/t?protocol=avro&schema-registry=http://r", toml)
    assert list(feed.warnings) == [_shared(topic, rules) for topic, rules in warned]


@pytest.mark.parametrize("topic", ["{schema}", "{table}", "cdc_{table}", "{schema}_all"])
def test_an_avro_topic_expression_names_schema_and_table(topic: str) -> None:
    # event_router.go validateTopicExpression: Expression.ValidateForAvro
    toml = f"[sink]\ndispatchers = [{{matcher = ['*.*'], topic = '{topic}'}}]\n"
    with pytest.raises(ConfigError) as caught:
        changefeed("memory://?protocol=avro", toml)
    assert str(caught.value) == (
        f"invalid topic expression {topic!r}: topic rule for Avro must contain {{schema}} and"
        " {table} (ErrKafkaInvalidTopicExpression)"
    )
    changefeed("memory://?protocol=canal-json", toml)  # other protocols take it
