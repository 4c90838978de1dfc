"""Hostile changefeed configuration: sink URIs, changefeed TOML and the open API's replica
config, each refused with the exact located message (or accepted with the right result), and
the TOML and the JSON read by one reader with one behaviour (issue 25)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ticdc_sim.cli import app
from ticdc_sim.config import (
    changefeed,
    parse_changefeed_toml,
    parse_replica_config,
    parse_sink_uri,
    sink_uri_text,
)
from ticdc_sim.errors import ConfigError
from ticdc_sim.partitioning.router import DispatchRule


@pytest.fixture(autouse=True)
def _no_traceback_logged(caplog: pytest.LogCaptureFixture) -> Any:
    caplog.set_level(logging.DEBUG)
    yield
    logged = caplog.text
    assert "Traceback" not in logged and "internal error" not in logged.lower()


def refused(call: Any, *args: Any) -> str:
    with pytest.raises(ConfigError) as found:
        call(*args)
    return str(found.value)


# -- sink URIs ---------------------------------------------------------------------------------

BAD_URIS = [
    pytest.param(
        "",
        "sink URI '': no scheme, e.g. jsonl:///tmp/out (simulated: kafka://, kafka+ssl://, jsonl://, parquet://, memory://, blackhole://, file://, s3://)",
        id="empty",
    ),
    pytest.param(
        "/tmp/out",
        "sink URI '/tmp/out': no scheme, e.g. jsonl:///tmp/out (simulated: kafka://, kafka+ssl://, jsonl://, parquet://, memory://, blackhole://, file://, s3://)",
        id="no-scheme",
    ),
    pytest.param(
        "ftp://x/y?protocol=canal-json",
        "sink URI 'ftp://x/y?protocol=canal-json': unknown scheme 'ftp' (simulated: kafka://, kafka+ssl://, jsonl://, parquet://, memory://, blackhole://, file://, s3://)",
        id="unknown-scheme",
    ),
    pytest.param(
        "gcs://bucket/dir?protocol=canal-json",
        "sink URI 'gcs://bucket/dir?protocol=canal-json': the gcs:// sink is not simulated yet; use one of kafka://, kafka+ssl://, jsonl://, parquet://, memory://, blackhole://, file://, s3://",
        id="later-scheme",
    ),
    pytest.param(
        "kafka://[::1:9092/t?protocol=canal-json",
        "sink URI 'kafka://[::1:9092/t?protocol=canal-json': an IPv6 host needs its [ and ], e.g. kafka://[::1]:9092/t",
        id="unbalanced-ipv6",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json\n&partition-num=2",
        "sink URI 'jsonl:///x?protocol=canal-json\\n&partition-num=2': control character '\\n' at position 30",
        id="newline-inside",
    ),
    pytest.param(
        "jsonl:///x%00y?protocol=canal-json",
        "sink URI 'jsonl:///x%00y?protocol=canal-json': '/x%00y' holds a NUL byte once percent-decoded",
        id="nul-escaped-path",
    ),
    pytest.param(
        "jsonl:///%ff?protocol=canal-json",
        "sink URI 'jsonl:///%ff?protocol=canal-json': '/%ff' is not UTF-8 once percent-decoded",
        id="not-utf8-path",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json%zz",
        "sink URI 'jsonl:///x?protocol=canal-json%zz': '%zz' is not a %XX escape",
        id="bad-escape",
    ),
    pytest.param(
        "kafka://h:9092/t?protocol=canal-json#x",
        "sink URI 'kafka://h:9092/t?protocol=canal-json#x': a sink URI has no #fragment (a '#' in a value is %23)",
        id="fragment",
    ),
    pytest.param(
        "kafka://h:9092/t#frag?protocol=canal-json",
        "sink URI 'kafka://h:9092/t#frag?protocol=canal-json': a sink URI has no #fragment (a '#' in a value is %23)",
        id="fragment-before-query",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json;partition-num=2",
        "sink URI 'jsonl:///x?protocol=canal-json;partition-num=2': ';' does not separate parameters; use '&' (or %3B inside a value)",
        id="semicolon-separator",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&partition-nums=3",
        "sink URI 'jsonl:///x?protocol=canal-json&partition-nums=3': unknown parameter 'partition-nums'",
        id="unknown-param",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&a=1&b=2&c=3&d=4&e=5&f=6&g=7",
        "sink URI 'jsonl:///x?protocol=canal-json&a=1&b=2&c=3&d=4&e=5&f=6&g=7': unknown parameters 'a', 'b', 'c', 'd', 'e', ...",
        id="many-unknown-params",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&Protocol=open-protocol",
        "sink URI 'jsonl:///x?protocol=canal-json&Protocol=open-protocol': unknown parameter 'Protocol'",
        id="case-of-param",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&protocol=canal-json",
        "sink URI 'jsonl:///x?protocol=canal-json&protocol=canal-json': parameter 'protocol' is given twice",
        id="duplicate-param",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&%70rotocol=craft",
        "sink URI 'jsonl:///x?protocol=canal-json&%70rotocol=craft': parameter 'protocol' is given twice",
        id="duplicate-after-decoding",
    ),
    pytest.param(
        "jsonl:///x?=3&protocol=canal-json",
        "sink URI 'jsonl:///x?=3&protocol=canal-json': unknown parameter ''",
        id="empty-param-name",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&%ff=1",
        "sink URI 'jsonl:///x?protocol=canal-json&%ff=1': '%ff' is not UTF-8 once percent-decoded",
        id="not-utf8-param",
    ),
    pytest.param(
        "jsonl:///x",
        "sink URI 'jsonl:///x': no protocol; add ?protocol=canal-json (or open-protocol), or `protocol` under [sink] in the changefeed config",
        id="no-protocol",
    ),
    pytest.param(
        "jsonl:///x?protocol=",
        "sink URI 'jsonl:///x?protocol=': no protocol; add ?protocol=canal-json (or open-protocol), or `protocol` under [sink] in the changefeed config",
        id="empty-protocol",
    ),
    pytest.param(
        "jsonl:///x?protocol=cannal-json",
        "sink URI parameter protocol: unknown protocol 'cannal-json' (simulated: avro, canal, canal-json, craft, csv, debezium, maxwell, open-protocol, simple)",
        id="unknown-protocol",
    ),
    pytest.param(
        "jsonl:///x?protocol=avro&avro-bigint-unsigned-handling-mode=LONG",
        "sink URI parameter avro-bigint-unsigned-handling-mode: 'LONG';"
        ' avro-bigint-unsigned-handling-mode value could only be "long" or "string"'
        " (ErrCodecInvalidConfig)",
        id="avro-mode",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&partition-num=0",
        "sink URI parameter partition-num: must be greater than 0, got 0",
        id="partition-num-zero",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&partition-num=-2",
        "sink URI parameter partition-num: must be greater than 0, got -2",
        id="partition-num-negative",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&partition-num=99999999999999999999",
        "sink URI parameter partition-num: must be at most 10000 (the simulator's limit), got 99999999999999999999",
        id="partition-num-huge",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&partition-num=10001",
        "sink URI parameter partition-num: must be at most 10000 (the simulator's limit), got 10001",
        id="partition-num-over-limit",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&partition-num=3_000",
        "sink URI parameter partition-num: '3_000' is not an integer",
        id="partition-num-underscore",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&partition-num=%D9%A3",
        "sink URI parameter partition-num: '٣' is not an integer",
        id="partition-num-arabic-digit",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&partition-num=+3",
        "sink URI parameter partition-num: ' 3' is not an integer (a + in a URI query is a space; a sign is %2B)",
        id="partition-num-plus-is-space",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&partition-num=0x10",
        "sink URI parameter partition-num: '0x10' is not an integer",
        id="partition-num-hex",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&partition-num=1e3",
        "sink URI parameter partition-num: '1e3' is not an integer",
        id="partition-num-float",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&partition-num=",
        "sink URI parameter partition-num: '' is not an integer",
        id="partition-num-empty",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&max-message-bytes=9223372036854775808",
        "sink URI parameter max-message-bytes: must be at most 9223372036854775807, got 9223372036854775808",
        id="max-message-bytes-huge",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&max-batch-size=-1",
        "sink URI parameter max-batch-size: must be greater than 0, got -1",
        id="max-batch-size-negative",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&enable-tidb-extension=yes",
        "sink URI parameter enable-tidb-extension: 'yes' is not a boolean (true or false)",
        id="bool-yes",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&content-compatible=",
        "sink URI parameter content-compatible: '' is not a boolean (true or false)",
        id="bool-empty",
    ),
    pytest.param(
        "kafka://h:9092/t?protocol=canal-json&replication-factor=abc",
        "sink URI parameter replication-factor: 'abc' is not an integer",
        id="replication-factor-text",
    ),
    pytest.param(
        "kafka://h:9092/t?protocol=canal-json&replication-factor=40000",
        "sink URI parameter replication-factor: must be at most 32767, got 40000",
        id="replication-factor-int16",
    ),
    pytest.param(
        "kafka://h:9092/t?protocol=canal-json&required-acks=all",
        "sink URI parameter required-acks: 'all' is not an integer",
        id="required-acks-text",
    ),
    pytest.param(
        "kafka://h:9092/t?protocol=canal-json&dial-timeout=forever",
        "sink URI parameter dial-timeout: 'forever' is not a duration such as 10s or 1m30s",
        id="dial-timeout",
    ),
    pytest.param(
        "kafka://h:9092/t?protocol=canal-json&enable-tls=maybe",
        "sink URI parameter enable-tls: 'maybe' is not a boolean (true or false)",
        id="enable-tls-maybe",
    ),
    pytest.param(
        "jsonl:///x?protocol=simple&encoding-format=xml",
        "sink URI parameter encoding-format: 'xml'; the simple protocol's formats are json and avro",
        id="encoding-format",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&ticdc-version=v9",
        "sink URI parameter ticdc-version: unknown TiCDC version 'v9' (one of v8.5, new-arch)",
        id="ticdc-version",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&large-message-handle-option=bogus",
        "large-message-handle-option 'bogus' is not one of none, handle-key-only, claim-check",
        id="large-option",
    ),
    pytest.param(
        "jsonl:///x?protocol=open-protocol&large-message-handle-option=claim-check",
        "large message handle is set to claim-check, but the claim-check-storage-uri is empty",
        id="claim-check-without-storage",
    ),
    pytest.param(
        "kafka:///t?protocol=canal-json",
        "sink URI 'kafka:///t?protocol=canal-json': no broker; e.g. kafka://127.0.0.1:9092/topic",
        id="kafka-no-broker",
    ),
    pytest.param(
        "kafka://127.0.0.1:9092?protocol=canal-json",
        "sink URI 'kafka://127.0.0.1:9092?protocol=canal-json': no topic; e.g. kafka://127.0.0.1:9092/topic-name",
        id="kafka-no-topic",
    ),
    pytest.param(
        "kafka://h:9092//?protocol=canal-json",
        "sink URI 'kafka://h:9092//?protocol=canal-json': no topic; e.g. kafka://h:9092/topic-name",
        id="kafka-slash-only-topic",
    ),
    pytest.param(
        "kafka://h:9092/t?protocol=canal-json&topic=u",
        "sink URI 'kafka://h:9092/t?protocol=canal-json&topic=u': the topic is the path; drop ?topic=",
        id="kafka-topic-param",
    ),
    pytest.param(
        "kafka://h:9092/a/b?protocol=canal-json",
        "sink URI parameter topic: 'a/b' is not a Kafka topic name (letters, digits, `._-`)",
        id="kafka-nested-topic",
    ),
    pytest.param(
        "kafka://h:9092/%2e%2e?protocol=canal-json",
        "sink URI parameter topic: '..' is not a Kafka topic name (letters, digits, `._-`)",
        id="kafka-escaped-dotdot-topic",
    ),
    pytest.param(
        "kafka://h:9092/t%20x?protocol=canal-json",
        "sink URI parameter topic: 't x' is not a Kafka topic name (letters, digits, `._-`)",
        id="kafka-escaped-space-topic",
    ),
    pytest.param(
        "kafka://user:pw@h:9092/t?protocol=canal-json",
        "sink URI 'kafka://user:pw@h:9092/t?protocol=canal-json': credentials go in sasl-user and sasl-password, not before the host",
        id="kafka-credentials",
    ),
    pytest.param(
        "kafka://h:99999/t?protocol=canal-json",
        "sink URI 'kafka://h:99999/t?protocol=canal-json': broker 'h:99999': port 99999 is not 1 to 65535",
        id="kafka-port-range",
    ),
    pytest.param(
        "kafka://h:abc/t?protocol=canal-json",
        "sink URI 'kafka://h:abc/t?protocol=canal-json': 'h:abc' is not a broker address such as 127.0.0.1:9092",
        id="kafka-port-text",
    ),
    pytest.param(
        "kafka://h:/t?protocol=canal-json",
        "sink URI 'kafka://h:/t?protocol=canal-json': 'h:' is not a broker address such as 127.0.0.1:9092",
        id="kafka-port-empty",
    ),
    pytest.param(
        "kafka://h:9092,/t?protocol=canal-json",
        "sink URI 'kafka://h:9092,/t?protocol=canal-json': '' is not a broker address such as 127.0.0.1:9092",
        id="kafka-empty-broker",
    ),
    pytest.param(
        "kafka://h%209092/t?protocol=canal-json",
        "sink URI 'kafka://h%209092/t?protocol=canal-json': 'h%209092' is not a broker address such as 127.0.0.1:9092",
        id="kafka-broker-space",
    ),
    pytest.param(
        "jsonl://?protocol=canal-json",
        "sink URI 'jsonl://?protocol=canal-json': jsonl:// needs a directory, e.g. jsonl:///tmp/out",
        id="jsonl-no-dir",
    ),
    pytest.param(
        "parquet://?protocol=canal-json",
        "sink URI 'parquet://?protocol=canal-json': parquet:// needs a directory, e.g. parquet:///tmp/out",
        id="parquet-no-dir",
    ),
    pytest.param(
        "jsonl://~/out?protocol=canal-json",
        "sink URI 'jsonl://~/out?protocol=canal-json': ~ is not your home in a URI; write"
        " jsonl://$HOME/... instead",
        id="jsonl-tilde",  # made a directory named ~ in the working directory
    ),
    pytest.param(
        "parquet://~me?protocol=canal-json",
        "sink URI 'parquet://~me?protocol=canal-json': ~ is not your home in a URI; write"
        " parquet://$HOME/... instead",
        id="parquet-tilde-user",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&topic=",
        "sink URI parameter topic: '' is not a Kafka topic name (letters, digits, `._-`)",
        id="topic-empty",
    ),
    pytest.param(
        "memory://?protocol=canal-json&topic=a/b",
        "sink URI parameter topic: 'a/b' is not a Kafka topic name (letters, digits, `._-`)",
        id="topic-slash",
    ),
    pytest.param(
        "memory://?protocol=canal-json&topic=" + "t" * 250,
        "sink URI parameter topic: 'tttttttttttttttttttttttttttttttttttttttttttttttttttttttt... is not a Kafka topic name (letters, digits, `._-`)",
        id="topic-too-long",
    ),
    pytest.param(
        "jsonl:///x?protocol=canal-json&" + "a=1&" * 30000,
        "sink URI 'jsonl:///x?protocol=canal-json&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a...: parameter 'a' is given twice",
        id="huge-uri",
    ),
]


@pytest.mark.parametrize(("uri", "message"), BAD_URIS)
def test_bad_sink_uris(uri: str, message: str) -> None:
    assert refused(changefeed, uri) == message


GOOD_URIS = [
    # (uri, (scheme, target, topic, protocol)); targets are percent-decoded as Go decodes them
    pytest.param(
        "jsonl:///tmp/my%20dir?protocol=canal-json",
        ("jsonl", "/tmp/my dir", "ticdc", "canal-json"),
        id="escaped-space-in-directory",
    ),
    pytest.param(
        "jsonl:///tmp/caf%C3%A9?protocol=%63anal-json",
        ("jsonl", "/tmp/café", "ticdc", "canal-json"),
        id="escaped-utf8-and-escaped-value",
    ),
    pytest.param(
        "  JSONL:///x?protocol=CANAL-JSON \n",
        ("jsonl", "/x", "ticdc", "canal-json"),
        id="outer-whitespace-and-case",
    ),
    pytest.param(
        "jsonl:///x?&&protocol=canal-json&",
        ("jsonl", "/x", "ticdc", "canal-json"),
        id="empty-query-pieces",
    ),
    pytest.param(
        "kafka://[::1]:9092,[fe80::1%25eth0]:9093,broker-3/orders?protocol=open-protocol",
        ("kafka", "[::1]:9092,[fe80::1%25eth0]:9093,broker-3", "orders", "open-protocol"),
        id="ipv6-brokers",
    ),
    pytest.param(
        "kafka://h:9092/%6Frders?protocol=canal-json&dial-timeout=1m30s&max-retry=3",
        ("kafka", "h:9092", "orders", "canal-json"),
        id="escaped-topic-and-producer-parameters",
    ),
    pytest.param(
        "memory://?protocol=simple&topic=cdc.events_1&partition-num=%2B4",
        ("memory", "", "cdc.events_1", "simple"),
        id="escaped-plus-sign",
    ),
]


@pytest.mark.parametrize(("uri", "expected"), GOOD_URIS)
def test_good_sink_uris(uri: str, expected: tuple[str, str, str, str]) -> None:
    feed = changefeed(uri)
    assert (feed.sink.scheme, feed.sink.target, feed.topic, feed.codec.protocol) == expected


def test_kafka_ssl_turns_tls_on_unless_told_otherwise() -> None:
    assert parse_sink_uri("kafka+ssl://h:1/t?protocol=canal-json").params["enable-tls"] == "true"
    uri = parse_sink_uri("kafka+ssl://h:1/t?protocol=canal-json&enable-tls=false")
    assert uri.params["enable-tls"] == "false"


@pytest.mark.parametrize(
    "directory",
    ["/data/a%2F..%2F..%2Fetc", "/data/my dir/x?y#z", "/data/100%", "/data/é/ü"],
)
def test_a_directory_written_back_into_a_uri_reads_back_the_same(directory: str) -> None:
    # the service's guard rewrites file-sink URIs: a decoded '%2F..' must not decode twice
    text = sink_uri_text("jsonl", directory, "protocol=canal-json&partition-num=2")
    uri = parse_sink_uri(text)
    assert (uri.target, uri.params["partition-num"]) == (directory, "2")


# -- changefeed TOML -----------------------------------------------------------------------------

BAD_TOML = [
    pytest.param(
        bytes(range(0x80, 0xA0)),
        "cf.toml:1:1: byte 0x80 is not UTF-8; a changefeed config is a TOML text file",
        id="binary",
    ),
    pytest.param(
        b'[sink]\nprotocol = "canal-json"\n# caf\xe9\n',
        "cf.toml:3:6: byte 0xe9 is not UTF-8; a changefeed config is a TOML text file",
        id="latin1-in-a-string",
    ),
    pytest.param(
        "case-sensitive = true\n".encode("utf-16"),
        "cf.toml:1:1: byte 0xff is not UTF-8; the file is UTF-16, save it as UTF-8",
        id="utf16",
    ),
    pytest.param(
        b"case-sensitive = true\x00\n",
        "cf.toml:1:22: Expected newline or end of document after a statement",
        id="nul-byte",
    ),
    pytest.param(
        "[sink\n",
        "cf.toml:1:6: Expected ']' at the end of a table declaration",
        id="syntax-table-header",
    ),
    pytest.param("[sink]\nprotocol =", "cf.toml:2:11: Invalid value", id="syntax-end-of-document"),
    pytest.param(
        "[sink]\nprotocol = 'canal-json'\nprotocol = 'craft'\n",
        "cf.toml:3:19: Cannot overwrite a value",
        id="duplicate-key",
    ),
    pytest.param(
        "a = " + "[" * 5000 + "]" * 5000 + "\n",
        "cf.toml: arrays or inline tables nested too deeply",
        id="deep-arrays",
    ),
    pytest.param(
        "a = " + "{b = " * 3000 + "1" + "}" * 3000 + "\n",
        "cf.toml: arrays or inline tables nested too deeply",
        id="deep-inline-tables",
    ),
    pytest.param(
        "protocl = 'x'\n", "cf.toml: protocl: unknown configuration key", id="unknown-top-key"
    ),
    pytest.param(
        "[sink]\nprotocoll = 'x'\n",
        "cf.toml: sink.protocoll: unknown configuration key",
        id="unknown-sink-key",
    ),
    pytest.param(
        "[sink.kafka_config]\npartition-num = 3\n",
        "cf.toml: sink.kafka_config: unknown configuration key (TOML spells it kafka-config)",
        id="json-spelling-in-toml",
    ),
    pytest.param(
        "[sink.kafka-config.codec-config]\nbogus = 1\n",
        "cf.toml: sink.kafka-config.codec-config.bogus: unknown configuration key",
        id="unknown-nested",
    ),
    pytest.param(
        "sink = 'kafka'\n", "cf.toml: sink: expected a table, got 'kafka'", id="sink-not-a-table"
    ),
    pytest.param(
        "[[sink]]\nprotocol = 'canal-json'\n",
        "cf.toml: sink: expected a table, got [{'protocol': 'canal-json'}]",
        id="sink-array-of-tables",
    ),
    pytest.param(
        "[sink.dispatchers]\nmatcher = ['*.*']\n",
        "cf.toml: sink.dispatchers: expected a list of dispatcher rules, got {'matcher': ['*.*']}",
        id="dispatchers-a-table",
    ),
    pytest.param(
        "[sink]\ndispatchers = [1]\n",
        "cf.toml: sink.dispatchers[0]: expected a table, got 1",
        id="dispatcher-not-a-table",
    ),
    pytest.param(
        "[sink]\ndispatchers = [{matcher = ['*.*'], partition = 'columns'}]\n",
        "cf.toml: sink.dispatchers[0]: the columns dispatcher needs `columns = [...]`",
        id="columns-dispatcher-without-columns",
    ),
    pytest.param(
        "[sink]\ndispatchers = [{matcher = ['*.*'], partiton = 'ts'}]\n",
        "cf.toml: sink.dispatchers[0]: unknown key ['partiton']",
        id="dispatcher-unknown-key",
    ),
    pytest.param(
        "[sink]\ndispatchers = [{partition = 'ts'}]\n",
        "cf.toml: sink.dispatchers[0].matcher: a rule needs at least one table filter",
        id="dispatcher-no-matcher",
    ),
    pytest.param(
        "[sink]\ndispatchers = [{matcher = '*.*'}]\n",
        "cf.toml: sink.dispatchers[0].matcher: expected a list of strings, got '*.*'",
        id="dispatcher-matcher-string",
    ),
    pytest.param(
        "[sink]\ndispatchers = [{matcher = ['test.[a']}]\n",
        "cf.toml: sink.dispatchers[0].matcher: table filter 'test.[a': unterminated [",
        id="dispatcher-bad-matcher",
    ),
    pytest.param(
        "[sink]\ndispatchers = [{matcher = ['*.*'], topic = 'a/b'}]\n",
        "cf.toml: sink.dispatchers[0].topic: invalid topic expression 'a/b': use letters, digits, `._-` and at most one {schema} followed by at most one {table}",
        id="dispatcher-bad-topic",
    ),
    pytest.param(
        "[sink]\ndispatchers = [{matcher = ['*.*'], partition = 'ts', dispatcher = 'ts'}]\n",
        "cf.toml: sink.dispatchers[0]: `dispatcher` and `partition` cannot both be set",
        id="dispatcher-both-names",
    ),
    pytest.param(
        "[filter]\nrules = ['test']\n",
        "cf.toml: filter.rules: table filter 'test': expected `schema.table`",
        id="filter-rule-bad",
    ),
    pytest.param(
        "[filter]\nrules = 'test.*'\n",
        "cf.toml: filter.rules: expected a list of strings, got 'test.*'",
        id="filter-rules-string",
    ),
    pytest.param(
        "[sink.kafka-config]\npartition-num = '3'\n",
        "cf.toml: sink.kafka-config.partition-num: '3' is not an integer",
        id="quoted-integer",
    ),
    pytest.param(
        "[sink.kafka-config]\npartition-num = 3.0\n",
        "cf.toml: sink.kafka-config.partition-num: 3.0 is not an integer",
        id="float-integer",
    ),
    pytest.param(
        "[sink.kafka-config]\npartition-num = true\n",
        "cf.toml: sink.kafka-config.partition-num: true is not an integer",
        id="bool-integer",
    ),
    pytest.param(
        "[sink.kafka-config]\nmax-message-bytes = 99999999999999999999999\n",
        "cf.toml: sink.kafka-config.max-message-bytes: must be at most 9223372036854775807, got 99999999999999999999999",
        id="huge-integer",
    ),
    pytest.param(
        "[sink.kafka-config]\npartition-num = 2147483647\n",
        "cf.toml: sink.kafka-config.partition-num: must be at most 10000 (the simulator's limit), got 2147483647",
        id="partition-num-over-limit",
    ),
    pytest.param(
        "force-replicate = 'true'\n",
        "cf.toml: force-replicate: 'true' is not a boolean (true or false, write true without quotes)",
        id="quoted-bool",
    ),
    pytest.param(
        "force-replicate = 'yes'\n",
        "cf.toml: force-replicate: 'yes' is not a boolean (true or false)",
        id="yes-bool",
    ),
    pytest.param(
        "case-sensitive = 1\n",
        "cf.toml: case-sensitive: 1 is not a boolean (true or false)",
        id="int-bool",
    ),
    pytest.param(
        "[sink]\nprotocol = 3\n", "cf.toml: sink.protocol: 3 is not a string", id="protocol-number"
    ),
    pytest.param(
        "[faults]\nduplicate-rate = nan\n",
        "cf.toml: faults.duplicate-rate: nan is not a rate between 0 and 1",
        id="nan-rate",
    ),
    pytest.param(
        "[faults]\nduplicate-rate = inf\n",
        "cf.toml: faults.duplicate-rate: inf is not a rate between 0 and 1",
        id="inf-rate",
    ),
    pytest.param(
        "[faults]\nrestart-at = [100, -1]\n",
        "cf.toml: faults.restart-at: [100, -1] is not a list of whole numbers",
        id="negative-count-in-list",
    ),
    pytest.param(
        "[faults]\nseed = 99999999999999999999\n",
        "cf.toml: faults.seed: must be at most 9223372036854775807, got 99999999999999999999",
        id="seed-huge",
    ),
    pytest.param(
        "[sink]\nsend-bootstrap-in-msg-count = 2147483648\n",
        "cf.toml: sink.send-bootstrap-in-msg-count: must be at most 2147483647, got 2147483648",
        id="msg-count-int32",
    ),
    pytest.param(
        "[filter]\nevent-filters = [{matcher = ['*.*'], ignore-event = ['insert']}]\n",
        "cf.toml: filter.event-filters: event filters are not simulated yet",
        id="later-event-filters",
    ),
    pytest.param(
        "[integrity]\nintegrity-check-level = 'strict'\n",
        "cf.toml: integrity.integrity-check-level: 'strict' is not none or correctness",
        id="integrity-level",
    ),
    pytest.param(
        "[sink]\nsend-all-bootstrap-at-start = true\n",
        "cf.toml: sink.send-all-bootstrap-at-start: sending every table's BOOTSTRAP when the changefeed starts is not simulated yet (tables get theirs before their first row)",
        id="bootstrap-at-start",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD_TOML)
def test_bad_changefeed_toml(text: str | bytes, message: str) -> None:
    assert refused(parse_changefeed_toml, text, "cf.toml") == message


def test_a_megabyte_value_is_quoted_short() -> None:
    text = "[sink]\nprotocol = '" + "p" * 1_000_000 + "'\n"
    message = refused(changefeed, "memory://", text, "cf.toml")
    assert message == (
        "cf.toml: sink.protocol: unknown protocol '" + "p" * 37 + "...'"
        " (simulated: avro, canal, canal-json, craft, csv, debezium, maxwell, open-protocol, simple)"
    )


def test_a_byte_order_mark_is_skipped_as_ticdc_skips_it() -> None:
    text = "\ufeff[sink]\nprotocol = 'craft'\n".encode()
    assert parse_changefeed_toml(text, "cf.toml") == {"protocol": "craft"}


def test_empty_filter_rules_replicate_everything_as_ticdc() -> None:
    # filter/utils.go VerifyTableRules: no rules is `*.*`
    assert changefeed("memory://?protocol=craft", "[filter]\nrules = []\n").filter_rules == ("*.*",)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(
            b"\x89PNG\r\n\x1a\n\x00\x00",
            "{path}:1:1: byte 0x89 is not UTF-8; a changefeed config is a TOML text file",
            id="binary-file",
        ),
        pytest.param(
            b"[sink]\nprotocol = 'canal-json'\n[sink.kafka-config]\npartition-num = 0\n",
            "{path}: sink.kafka-config.partition-num: must be greater than 0, got 0",
            id="bad-value",
        ),
        pytest.param(
            b"[sink\n",
            "{path}:1:6: Expected ']' at the end of a table declaration",
            id="syntax",
        ),
    ],
)
def test_the_cli_reports_a_bad_config_file_in_one_line(
    tmp_path: Path, content: bytes, message: str
) -> None:
    script, config = tmp_path / "s.sql", tmp_path / "cf.toml"
    script.write_text("CREATE TABLE t (id INT PRIMARY KEY);\n")
    config.write_bytes(content)
    result = CliRunner().invoke(
        app, ["replay", str(script), "--sink-uri", "memory://", "--config", str(config)]
    )
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == f"error: {message.format(path=config)}\n"
    assert result.exception is None or isinstance(result.exception, SystemExit)


# -- the open API's replica config -----------------------------------------------------------

BAD_REPLICA_CONFIGS = [
    pytest.param(["sink"], "replica_config: expected an object, got ['sink']", id="not-an-object"),
    pytest.param(
        {"dispatcherz": [{"matcher": ["*.*"]}]},
        "replica_config: dispatcherz: unknown configuration key",
        id="unknown-top-key",
    ),
    pytest.param(
        {"sink": {"dispatcherz": None}},
        "replica_config: sink.dispatcherz: unknown configuration key",
        id="unknown-null-key",
    ),
    pytest.param(
        {"sink": {"dispatcherz": []}},
        "replica_config: sink.dispatcherz: unknown configuration key",
        id="unknown-empty-key",
    ),
    pytest.param(
        {"sink": {"kafka-config": {"partition-num": 3}}},
        "replica_config: sink.kafka-config: unknown configuration key (the open API spells it kafka_config)",
        id="toml-spelling",
    ),
    pytest.param(
        {"sink": {"kafka_config": {"partition-num": 3}}},
        "replica_config: sink.kafka_config.partition-num: unknown configuration key (the open API spells it partition_num)",
        id="toml-spelling-leaf",
    ),
    pytest.param(
        {"sink": {"advance-timeout-in-sec": 5}},
        "replica_config: sink.advance-timeout-in-sec: unknown configuration key (the open API spells it advance_timeout)",
        id="toml-advance-timeout",
    ),
    pytest.param({7: True}, "replica_config: 7: unknown configuration key", id="non-string-key"),
    pytest.param({"sink": []}, "replica_config: sink: expected a table, got []", id="sink-a-list"),
    pytest.param(
        {"sink": {"kafka_config": {"partition_num": "3"}}},
        "replica_config: sink.kafka_config.partition_num: '3' is not an integer",
        id="string-integer",
    ),
    pytest.param(
        {"sink": {"kafka_config": {"max_message_bytes": 1024.0}}},
        "replica_config: sink.kafka_config.max_message_bytes: 1024.0 is not an integer",
        id="float-integer",
    ),
    pytest.param(
        {"sink": {"kafka_config": {"partition_num": True}}},
        "replica_config: sink.kafka_config.partition_num: true is not an integer",
        id="bool-integer",
    ),
    pytest.param(
        {"sink": {"kafka_config": {"partition_num": 0}}},
        "replica_config: sink.kafka_config.partition_num: must be greater than 0, got 0",
        id="zero-partitions",
    ),
    pytest.param(
        {"sink": {"kafka_config": {"partition_num": 18446744073709551616}}},
        "replica_config: sink.kafka_config.partition_num: must be at most 10000 (the simulator's limit), got 18446744073709551616",
        id="huge-partitions",
    ),
    pytest.param(
        {"case_sensitive": "true"},
        "replica_config: case_sensitive: 'true' is not a boolean (true or false, write true without quotes)",
        id="string-bool",
    ),
    pytest.param(
        {"sink": {"protocol": {}}},
        "replica_config: sink.protocol: {} is not a string",
        id="protocol-object",
    ),
    pytest.param(
        {"sink": {"dispatchers": {"matcher": ["*.*"]}}},
        "replica_config: sink.dispatchers: expected a list of dispatcher rules, got {'matcher': ['*.*']}",
        id="dispatchers-object",
    ),
    pytest.param(
        {"sink": {"dispatchers": [{"matcher": ["*.*"], "dispatcher": "ts"}]}},
        "replica_config: sink.dispatchers[0]: unknown key ['dispatcher']; the open API names it partition",
        id="dispatcher-deprecated-name",
    ),
    pytest.param(
        {"sink": {"dispatchers": [{"matcher": ["*.*"], "partition_rule": "ts"}]}},
        "replica_config: sink.dispatchers[0]: unknown key ['partition_rule']",
        id="dispatcher-unknown-key",
    ),
    pytest.param(
        {"sink": {"dispatchers": [{"matcher": ["*.*"], "topic": "{table}{schema}"}]}},
        "replica_config: sink.dispatchers[0].topic: invalid topic expression '{table}{schema}': use letters, digits, `._-` and at most one {schema} followed by at most one {table}",
        id="dispatcher-bad-topic",
    ),
    pytest.param(
        {"sink": {"dispatchers": [{"matcher": None, "partition": "ts"}]}},
        "replica_config: sink.dispatchers[0].matcher: a rule needs at least one table filter",
        id="dispatcher-null-matcher",
    ),
    pytest.param(
        {"filter": {"rules": ["a.b.c"]}},
        "replica_config: filter.rules: table filter 'a.b.c': unexpected '.c'",
        id="filter-rule-bad",
    ),
    pytest.param(
        {"sink": {"column_selectors": [{"matcher": ["*.*"], "columns": ["a"]}]}},
        "replica_config: sink.column_selectors: column selectors are not simulated yet",
        id="later-column-selectors",
    ),
    pytest.param(
        {
            "sink": {
                "kafka_config": {
                    "large_message_handle": {"large_message_handle_optoin": "claim-check"}
                }
            }
        },
        "replica_config: sink.kafka_config.large_message_handle.large_message_handle_optoin: unknown configuration key",
        id="large-handle-typo",
    ),
    pytest.param(
        {"faults": {"duplicate_rate": 2}},
        "replica_config: faults.duplicate_rate: 2 is not a rate between 0 and 1",
        id="faults-rate",
    ),
    pytest.param(
        {"integrity": {"integrity_check_level": "none", "corruption_handle_level": "panic"}},
        "replica_config: integrity.corruption_handle_level: 'panic' is not warn or error",
        id="integrity",
    ),
    pytest.param(
        {"sink": {"kafka_config": {"codec_config": {"x": {"y": {"z": 1}}}}}},
        "replica_config: sink.kafka_config.codec_config.x: unknown configuration key",
        id="deep-unknown",
    ),
]


@pytest.mark.parametrize(("document", "message"), BAD_REPLICA_CONFIGS)
def test_bad_replica_configs(document: Any, message: str) -> None:
    assert refused(parse_replica_config, document) == message


def test_nulls_are_unset_fields_as_go_reads_them() -> None:
    document = {
        "case_sensitive": None,
        "sink": {
            "protocol": "canal-json",
            "csv": None,
            "column_selectors": [],
            "transaction_atomicity": "",
            "dispatchers": [{"matcher": ["*.*"], "partition": "ts", "index": None}],
        },
    }
    assert parse_replica_config(document) == {
        "protocol": "canal-json",
        "rules": (DispatchRule(("*.*",), "ts"),),
    }


def test_a_deep_document_is_refused_at_its_first_unknown_key() -> None:
    document: dict[str, Any] = {"x": None}
    for _ in range(100_000):  # no recursion follows an unknown key
        document = {"x": document}
    assert refused(parse_replica_config, {"sink": document}) == (
        "replica_config: sink.x: unknown configuration key"
    )


# -- one reader, one behaviour -----------------------------------------------------------------

TOML_AND_JSON = [
    pytest.param(
        """
case-sensitive = true
[filter]
rules = ["test.*", "!test.skip"]
[sink]
protocol = "open-protocol"
dispatchers = [
  {matcher = ["test.t?"], partition = "index-value", index = "uk"},
  {matcher = ["test.c*"], partition = "columns", columns = ["a", "b"], topic = "{schema}_{table}"},
]
send-all-bootstrap-at-start = false
[sink.open]
output-old-value = false
[sink.kafka-config]
partition-num = 6
max-message-bytes = 4096
kafka-version = "3.5.0"
[sink.kafka-config.codec-config]
max-batch-size = 4
[sink.kafka-config.large-message-handle]
large-message-handle-option = "none"
[integrity]
integrity-check-level = "none"
[faults]
duplicate-rate = 0.25
restart-at = [10, 20]
""",
        {
            "case_sensitive": True,
            "filter": {"rules": ["test.*", "!test.skip"]},
            "sink": {
                "protocol": "open-protocol",
                "dispatchers": [
                    {"matcher": ["test.t?"], "partition": "index-value", "index": "uk"},
                    {
                        "matcher": ["test.c*"],
                        "partition": "columns",
                        "columns": ["a", "b"],
                        "topic": "{schema}_{table}",
                    },
                ],
                "send-all-bootstrap-at-start": False,
                "open": {"output_old_value": False},
                "kafka_config": {
                    "partition_num": 6,
                    "max_message_bytes": 4096,
                    "kafka_version": "3.5.0",
                    "codec_config": {"max_batch_size": 4},
                    "large_message_handle": {"large_message_handle_option": "none"},
                },
            },
            "integrity": {"integrity_check_level": "none"},
            "faults": {"duplicate_rate": 0.25, "restart_at": [10, 20]},
        },
        id="accepted",
    ),
    pytest.param(
        "[sink]\ndispatcherz = [{matcher = ['*.*']}]\n",
        {"sink": {"dispatcherz": [{"matcher": ["*.*"]}]}},
        id="unknown-key",
    ),
    pytest.param(
        "[sink.kafka-config]\npartition-num = '3'\n",
        {"sink": {"kafka_config": {"partition_num": "3"}}},
        id="quoted-number",
    ),
    pytest.param(
        "[sink]\ndispatchers = [{matcher = ['*.*'], topic = 'a b'}]\n",
        {"sink": {"dispatchers": [{"matcher": ["*.*"], "topic": "a b"}]}},
        id="bad-topic-expression",
    ),
    pytest.param(
        "[filter]\nevent-filters = [{matcher = ['*.*']}]\n",
        {"filter": {"event_filters": [{"matcher": ["*.*"]}]}},
        id="not-simulated",
    ),
]


def _outcome(call: Any, *args: Any) -> Any:
    try:
        return call(*args)
    except ConfigError as e:
        return str(e)


def _toml_spelling(text: Any) -> Any:
    """An outcome with the JSON's key spellings written as the TOML's."""
    if not isinstance(text, str):
        return text
    for json_name, toml_name in (
        ("kafka_config", "kafka-config"),
        ("partition_num", "partition-num"),
        ("event_filters", "event-filters"),
    ):
        text = text.replace(json_name, toml_name)
    return text.replace("replica_config:", "cf.toml:")


@pytest.mark.parametrize(("toml", "document"), TOML_AND_JSON)
def test_the_toml_and_the_replica_config_read_alike(toml: str, document: Any) -> None:
    from_toml = _outcome(parse_changefeed_toml, toml, "cf.toml")
    from_json = _outcome(parse_replica_config, document)
    assert from_toml == _toml_spelling(from_json)
    if isinstance(from_toml, dict):
        made = changefeed("memory://", toml, "cf.toml")
        assert made == changefeed("memory://", configured=from_json)
        assert made.partition_num == 6 and not made.codec.open_output_old_value


def test_an_unknown_partition_dispatcher_is_warned_of_by_both() -> None:
    # issue 25: the open API took it silently where the TOML path warned
    toml = "[sink]\ndispatchers = [{matcher = ['test.*'], partition = 'bogus'}]\n"
    document = {"sink": {"dispatchers": [{"matcher": ["test.*"], "partition": "bogus"}]}}
    from_toml = changefeed("memory://?protocol=canal-json", toml, "cf.toml")
    from_json = changefeed(
        "memory://?protocol=canal-json", configured=parse_replica_config(document)
    )
    warning = (
        "{}: sink.dispatchers[0].partition: partition dispatcher 'bogus' of rule ['test.*'] is"
        " unknown; TiCDC uses the default (table) dispatcher instead"
    )
    assert from_toml.warnings == (warning.format("cf.toml"),)
    assert from_json.warnings == (warning.format("replica_config"),)
    # what TiCDC does: the table dispatcher, and the router has nothing left to warn of
    assert from_toml.rules == from_json.rules == (DispatchRule(("test.*",), "default"),)
