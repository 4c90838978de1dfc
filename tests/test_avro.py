"""avro against TiCDC's vectors (tests/vectors/avro.json), goavro's binary (fastavro as the
plain library), and the registry a run keeps."""

from __future__ import annotations

import io
import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import fastavro
import pytest

from ticdc_sim.config import changefeed
from ticdc_sim.encoders import (
    CodecConfig,
    DecodedCheckpoint,
    DecodedDDL,
    DecodedRow,
    decoder_for,
    encoder_for,
)
from ticdc_sim.encoders.avro import (
    Encoder,
    _Column,
    avro_namespace,
    header,
    sanitize_name,
    signed_bytes,
    subjects,
)
from ticdc_sim.encoders.registry import MemoryRegistry
from ticdc_sim.encoders.varints import varint
from ticdc_sim.errors import DecodeError, EncodeError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.mysql import TiDBFlag
from ticdc_sim.model.table import ColumnInfo, IndexColumn, IndexInfo, TableInfo
from ticdc_sim.pipeline import Pipeline
from ticdc_sim.sinks.memory import MemorySink

VECTORS = json.loads((Path(__file__).parent / "vectors" / "avro.json").read_text())
BINARY = "binary"
# the vector's type names -> (type, flen, binary charset), TiDB's field types without a length
_TYPES: dict[str, tuple[M, int, bool]] = {
    "tinyint": (M.TINY, -1, False), "smallint": (M.SHORT, -1, False),
    "mediumint": (M.INT24, -1, False), "int": (M.LONG, -1, False),
    "bigint": (M.LONGLONG, -1, False), "float": (M.FLOAT, -1, False),
    "double": (M.DOUBLE, -1, False), "bit": (M.BIT, -1, False),
    "decimal": (M.NEWDECIMAL, -1, False), "tinytext": (M.TINY_BLOB, -1, False),
    "mediumtext": (M.MEDIUM_BLOB, -1, False), "text": (M.BLOB, -1, False),
    "longtext": (M.LONG_BLOB, -1, False), "varchar": (M.VARCHAR, -1, False),
    "varstring": (M.VAR_STRING, -1, False), "char": (M.STRING, -1, False),
    "tinyblob": (M.TINY_BLOB, -1, True), "mediumblob": (M.MEDIUM_BLOB, -1, True),
    "blob": (M.BLOB, -1, True), "longblob": (M.LONG_BLOB, -1, True),
    "varbinary": (M.VARCHAR, -1, True), "varbinary1": (M.VAR_STRING, -1, True),
    "binary": (M.STRING, -1, True), "enum('a','b')": (M.ENUM, -1, False),
    "set('a','b')": (M.SET, -1, False), "json": (M.JSON, -1, False),
    "date": (M.DATE, -1, False), "datetime": (M.DATETIME, -1, False),
    "timestamp": (M.TIMESTAMP, -1, False), "time": (M.DURATION, -1, False),
    "year": (M.YEAR, -1, False),
}  # fmt: skip


def _value(spec: Any) -> Any:
    if isinstance(spec, dict) and "hex" in spec:
        return bytes.fromhex(spec["hex"])
    return spec


def _column(cid: int, name: str, offset: int, kind: str, nullable: bool) -> ColumnInfo:
    tp, flen, binary = _TYPES[kind.removesuffix(" unsigned")]
    flag = TiDBFlag(0) if nullable else TiDBFlag.NOT_NULL
    if kind.endswith(" unsigned"):
        flag |= TiDBFlag.UNSIGNED
    elems = ("a", "b") if tp in (M.ENUM, M.SET) else ()
    charset = BINARY if binary else "utf8mb4"
    return ColumnInfo(cid, name, offset, tp, flen, -1, flag, charset, charset, elems)


def vector_table() -> tuple[TableInfo, tuple[Any, ...]]:
    """newLargeEvent's table and row: id, then each column and its nullable twin."""
    spec = VECTORS["table"]
    id_flag = TiDBFlag.NOT_NULL | TiDBFlag.PRI_KEY
    columns = [ColumnInfo(1000, "id", 0, M.LONG, -1, -1, id_flag, BINARY, BINARY)]
    values: list[Any] = [1]
    count = len(spec["columns"])
    for i, c in enumerate(spec["columns"], start=1):
        columns.append(_column(i, c["name"], len(columns), c["type"], False))
        columns.append(_column(i + count, c["name"] + "nullable", len(columns), c["type"], True))
        value = _value(c["value"])
        if c["type"] == "float":
            value = fastavro_float32(value)
        if c["type"] == "decimal":
            value = Decimal(value)
        values += [value, None]
    primary = IndexInfo(1, "PRIMARY", (IndexColumn("id", 0),), primary=True, unique=True)
    info = TableInfo(100, spec["schema"], spec["name"], tuple(columns), (primary,), True)
    return info, tuple(values)


def fastavro_float32(value: float) -> float:
    """A FLOAT's value as TiDB keeps it: rounded to float32."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, {"type": "float"}, value)
    return float(fastavro.schemaless_reader(io.BytesIO(out.getvalue()), {"type": "float"}))


def _encode(config: CodecConfig, info: TableInfo, row: tuple[Any, ...]) -> tuple[Any, ...]:
    registry = MemoryRegistry()
    encoder = Encoder(config, registry, lambda schema, table: "default")
    encoder.append_row(RowChangedEvent(1, VECTORS["table"]["commit_ts"], info, 100, row, None))
    (message,) = encoder.build()
    return encoder, registry, message


@pytest.mark.parametrize("case", VECTORS["schemas"], ids=lambda c: c["name"])
def test_ticdc_schemas_byte_for_byte_and_records_back(case: dict[str, Any]) -> None:
    info, row = vector_table()
    config = CodecConfig("avro", **case["config"])
    encoder, registry, message = _encode(config, info, row)
    codec = encoder.codec(info)
    assert codec.value_schema == case["schema"]
    assert codec.key_schema == (
        '{"type":"record","name":"avroencode","namespace":"default.testdb","fields":'
        '[{"name":"id","type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}}]}'
    )
    # subjects of the topic, ids in registration order: key first (encodeKey runs first)
    assert registry.to_json()["subjects"] == {"default-key": [1], "default-value": [2]}
    assert registry.schema(2) == case["schema"]
    assert (message.key[:5], message.value[:5]) == (header(1), header(2))
    # the value is what fastavro (the plain library) writes of the same record
    record = fastavro.schemaless_reader(
        io.BytesIO(message.value[5:]), fastavro.parse_schema(json.loads(case["schema"]))
    )
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(case["schema"])), record)
    assert out.getvalue() == message.value[5:]
    (decoded,) = decoder_for(config, registry=registry).decode(message.key, message.value)
    assert isinstance(decoded, DecodedRow)
    assert (decoded.kind, decoded.schema, decoded.table, decoded.keys) == (
        "insert",
        "testdb",
        "avroencode",
        ("id",),
    )
    mounted = {
        c.name: {"enum": 1, "set": 1}.get(c.name, v) for c, v in zip(info.columns, row, strict=True)
    }
    if config.avro_decimal_handling_mode == "precise":  # goavro truncates to the scale, 0
        mounted["decimal"] = Decimal(129012)
    assert decoded.columns == mounted
    if config.enable_tidb_extension:
        assert decoded.commit_ts == VECTORS["table"]["commit_ts"]
        assert decoded.extra["_tidb_commit_physical_time"] == decoded.commit_ts >> 18


def _native(spec: Any) -> Any:
    if isinstance(spec, dict) and "rat" in spec:
        return Fraction(spec["rat"])
    return _value(spec)


@pytest.mark.parametrize("column", VECTORS["table"]["columns"], ids=lambda c: c["name"])
def test_each_column_is_the_avro_binary_of_ticdcs_native_value(column: dict[str, Any]) -> None:
    """TestColumnToAvroData's native values, written by fastavro under our field schema:
    the bytes we write for the column's value."""
    info, row = vector_table()
    col = info.column(column["name"])
    assert col is not None
    ours = _Column(col, CodecConfig("avro"), nullable=False)
    native = _native(column["native"])
    schema = ours.field["type"]
    if isinstance(native, Fraction):  # goavro: the unscaled integer, truncated to the scale
        native = Decimal(int(native * 10 ** schema["scale"])).scaleb(-schema["scale"])
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), native)
    assert ours.values([row[col.offset]]) == [out.getvalue()]


@pytest.mark.parametrize("name", ["decimal", "longlongunsigned"])
def test_string_modes_as_ticdc(name: str) -> None:
    info, row = vector_table()
    col = info.column(name)
    assert col is not None
    config = CodecConfig(
        "avro", avro_decimal_handling_mode="string", avro_bigint_unsigned_handling_mode="string"
    )
    ours = _Column(col, config, nullable=False)
    want = VECTORS["string_modes"][name]
    assert ours.field == {"name": name, "type": want["schema"]}
    value = Decimal(want["native"]) if name == "decimal" else row[col.offset]
    encoded = want["native"].encode()
    assert ours.values([value]) == [bytes([len(encoded) * 2]) + encoded]


def test_the_confluent_envelope() -> None:
    case = VECTORS["envelope"]
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(case["schema"]), case["record"])
    assert header(case["schema_id"]) == bytes.fromhex(case["header"])
    assert header(case["schema_id"]) + out.getvalue() == bytes.fromhex(case["envelope"])


def test_names_as_ticdc_sanitizes_them() -> None:
    for name, want in VECTORS["sanitize_name"]["cases"]:
        assert sanitize_name(name) == want
    for namespace, schema, want in VECTORS["namespace"]["cases"]:
        assert avro_namespace(namespace, schema) == want
    assert subjects("t.person") == ("t_person-key", "t_person-value")


@pytest.mark.parametrize(
    ("unscaled", "data"),
    [
        (0, "00"),
        (127, "7f"),
        (128, "0080"),
        (-1, "ff"),
        (-128, "80"),
        (-129, "ff7f"),
        (-256, "ff00"),
    ],  # noqa: E501
)
def test_decimals_are_goavros_minimal_twos_complement(unscaled: int, data: str) -> None:
    assert signed_bytes(unscaled) == bytes.fromhex(data)


PERSON = """
USE test;
CREATE TABLE person (id INT NOT NULL PRIMARY KEY, age INT NULL);
INSERT INTO person VALUES (1, 25);
DELETE FROM person WHERE id = 1;
"""


def _run(script: str, uri: str) -> Any:
    feed = changefeed(uri)
    sink = MemorySink()
    pipeline = Pipeline(feed, sink)
    pipeline.run(events(script))
    return feed, sink.records(), pipeline.registry


def events(script: str) -> list[Any]:
    return list(Engine().run(parse_statements(script)))


def _row_ts(script: str) -> list[int]:
    return [e.commit_ts for e in events(script) if isinstance(e, RowChangedEvent)]


def test_the_research_notes_person_record_and_its_tombstone() -> None:
    # research §8.4 A3 (derived from the code): the value schema registered exactly, key
    # `000000000102`, value header id 2, age's union branch 1, then the extension fields
    uri = "memory://?protocol=avro&enable-tidb-extension=true&topic=t.person&partition-num=1"
    feed, records, registry = _run(PERSON, uri)
    assert registry.to_json()["subjects"] == {"t_person-key": [1], "t_person-value": [2]}
    assert registry.schema(2) == (
        '{"type":"record","name":"person","namespace":"default.test","fields":[{"name":"id",'
        '"type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}},{"default":null,'
        '"name":"age","type":["null",{"type":"int","connect.parameters":{"tidb_type":"INT"}}]},'
        '{"default":"","name":"_tidb_op","type":"string"},{"default":0,"name":"_tidb_commit_ts",'
        '"type":"long"},{"default":0,"name":"_tidb_commit_physical_time","type":"long"}]}'
    )
    insert, delete = records  # no DDL, no checkpoint records
    ts = _row_ts(PERSON)[0]
    assert insert.key == delete.key == bytes.fromhex("000000000102")
    assert insert.value == bytes.fromhex("00000000020202320263") + varint(ts) + varint(ts >> 18)
    assert delete.value is None
    decoder = decoder_for(feed.codec, registry=registry)
    assert decoder.decode(delete.key, delete.value) == [
        DecodedRow("delete", "test", "person", None, None, {"id": 1}, {}, ("id",))
    ]


def test_defaults_flip_the_union_and_float_defaults_go_through_float32() -> None:
    script = (
        "USE test; CREATE TABLE d (id INT PRIMARY KEY, f FLOAT DEFAULT 3.14, b BIT(10) DEFAULT"
        " b'101', v VARBINARY(4) DEFAULT 'ab', n INT NOT NULL DEFAULT 7, e ENUM('x,y','z')"
        " DEFAULT 'z', u BIGINT UNSIGNED DEFAULT 18446744073709551615);"
        " INSERT INTO d (id, f) VALUES (1, NULL);"
    )
    _, records, registry = _run(script, "memory://?protocol=avro&partition-num=1")
    fields = json.loads(registry.schema(2))["fields"]
    assert [f.get("default") for f in fields] == [
        None, 3.140000104904175, "BQ==", "YWI=", 7, "z", -1,
    ]  # fmt: skip
    assert fields[1]["type"][1] == "null" and fields[2]["type"][0]["connect.parameters"] == {
        "length": "10",
        "tidb_type": "BIT",
    }
    assert fields[5]["type"][0]["connect.parameters"]["allowed"] == "x\\,y,z"
    assert '"default":3.140000104904175,' in registry.schema(2)
    # f is NULL: branch 1 of [float, "null"]
    (record,) = records
    assert record.value[5:7] == b"\x02\x02"


def test_a_new_table_version_registers_new_schemas_under_the_same_subjects() -> None:
    script = (
        "USE test; CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);"
        " ALTER TABLE t ADD COLUMN c INT; INSERT INTO t VALUES (2, 3);"
        " ALTER TABLE t COMMENT 'same columns'; INSERT INTO t VALUES (4, 5);"
    )
    _, records, registry = _run(script, "memory://?protocol=avro&partition-num=1")
    # the first value schema is the key's text (id alone): one id under both subjects, as
    # Confluent keeps it; the second version adds one; the comment changes no schema
    assert registry.to_json()["subjects"] == {"ticdc-key": [1], "ticdc-value": [1, 2]}
    assert [r.value[:5] for r in records] == [header(1), header(2), header(2)]


def test_watermark_mode_ddl_and_checkpoint_records() -> None:
    # TiCDC's testing mode: 0x01 + encoding/json of the DDL, 0x02 + the ts big-endian
    uri = "memory://?protocol=avro&enable-tidb-extension=true&avro-enable-watermark=true"
    config = changefeed(uri).codec
    encoder = encoder_for(config)
    assert encoder.encode_checkpoint(429918007904436226).value == bytes.fromhex(
        "0205f760267fb00002"
    )
    (ddl,) = [e for e in Engine().run(parse_statements(PERSON)) if isinstance(e, DDLEvent)]
    message = encoder.encode_ddl(ddl)
    assert message is not None and message.key is None
    assert message.value == (
        b'\x01{"query":"CREATE TABLE `person` (`id` INT NOT NULL PRIMARY KEY,`age` INT NULL)",'
        b'"type":3,"schema":"test","table":"person","commitTs":%d}' % ddl.commit_ts
    )
    decoder = decoder_for(config)
    assert decoder.decode(None, message.value) == [
        DecodedDDL("test", "person", ddl.commit_ts, ddl.query, 3)
    ]
    assert decoder.decode(None, bytes.fromhex("0205f760267fb00002")) == [
        DecodedCheckpoint(429918007904436226)
    ]
    plain = encoder_for(changefeed("memory://?protocol=avro").codec)
    assert (plain.encode_ddl(ddl), plain.encode_checkpoint(1)) == (None, None)


def test_unsigned_bigint_wraps_as_a_long_and_is_text_as_a_string() -> None:
    script = (
        "USE test; CREATE TABLE u (id BIGINT UNSIGNED PRIMARY KEY);"
        " INSERT INTO u VALUES (18446744073709551615);"
    )
    _, (long_mode,), _ = _run(script, "memory://?protocol=avro")
    assert long_mode.key[5:] == b"\x01"  # zigzag of -1
    feed, (string_mode,), registry = _run(
        script, "memory://?protocol=avro&avro-bigint-unsigned-handling-mode=string"
    )
    assert string_mode.key[5:] == b"\x28" + b"18446744073709551615"
    (decoded,) = decoder_for(feed.codec, registry=registry).decode(
        string_mode.key, string_mode.value
    )
    assert isinstance(decoded, DecodedRow) and decoded.columns == {"id": 2**64 - 1}


def test_a_record_over_max_message_bytes_is_ticdcs_error() -> None:
    script = (
        "USE test; CREATE TABLE t (id INT PRIMARY KEY, s TEXT);"
        " INSERT INTO t VALUES (1, REPEAT('x', 200));"
    )
    with pytest.raises(EncodeError) as found:
        _run(script, "memory://?protocol=avro&max-message-bytes=100")
    # key 6 bytes, value 5 + 1 (id) + 1 (union) + 2 + 200 (s), and 36 of overhead
    assert str(found.value) == (
        f"an avro message of 251 bytes for test.t at commit ts {_row_ts(script)[0]} exceeds"
        " max-message-bytes 100 (TiCDC: ErrMessageTooLarge)"
    )


def test_a_decoder_without_the_registry_says_what_it_needs() -> None:
    _, (record, _), _ = _run(PERSON, "memory://?protocol=avro&partition-num=1")
    with pytest.raises(DecodeError) as found:
        decoder_for(CodecConfig("avro")).decode(record.key, record.value)
    assert str(found.value) == (
        "the value names schema 2, and no schema registry was given to look it up in"
        " (schema-registry=URL in the URI: a service's changefeed's is"
        " http://HOST:PORT/sim/v1/clusters/{cluster}/schema-registry; or the"
        " schema-registry.json a replay wrote beside its records)"
    )
    with pytest.raises(DecodeError) as found:
        decoder_for(CodecConfig("avro"), registry=MemoryRegistry()).decode(None, record.value)
    assert str(found.value) == "the value names schema 2: schema 2 not found"


# -- the CLI: a replay keeps its registry beside the records, decode reads it ---------------


@pytest.mark.parametrize("scheme", ["jsonl", "parquet"])
def test_a_replay_keeps_its_schemas_beside_the_records_and_decode_reads_them(
    tmp_path: Path, scheme: str
) -> None:
    from typer.testing import CliRunner

    from ticdc_sim.cli import app

    script = tmp_path / "person.sql"
    script.write_text(PERSON)
    out = tmp_path / "out"
    uri = f"{scheme}://{out}?protocol=avro&enable-tidb-extension=true&partition-num=1"
    ran = CliRunner().invoke(app, ["replay", str(script), "--sink-uri", uri])
    assert ran.exit_code == 0, ran.stderr
    saved = json.loads((out / "schema-registry.json").read_text())
    assert saved["subjects"] == {"ticdc-key": [1], "ticdc-value": [2]}
    assert MemoryRegistry.from_json(saved).schema(1) == (
        '{"type":"record","name":"person","namespace":"default.test","fields":[{"name":"id",'
        '"type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}}]}'
    )
    decoded = CliRunner().invoke(app, ["decode", uri])
    assert decoded.exit_code == 0, decoded.stderr
    lines = [json.loads(line) for line in decoded.stdout.splitlines()]
    assert [(line["type"], line["columns"] or line["pre_columns"]) for line in lines] == [
        ("insert", {"id": 1, "age": 25}),
        ("delete", {"id": 1}),
    ]
    # a second replay into the same directory with --overwrite replaces the file too
    again = CliRunner().invoke(app, ["replay", str(script), "--sink-uri", uri, "--overwrite"])
    assert again.exit_code == 0, again.stderr
    assert json.loads((out / "schema-registry.json").read_text()) == saved


def test_decode_without_the_registry_file_says_what_is_missing(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ticdc_sim.cli import app

    script = tmp_path / "person.sql"
    script.write_text(PERSON)
    out = tmp_path / "out"
    uri = f"jsonl://{out}?protocol=avro&partition-num=1"
    assert CliRunner().invoke(app, ["replay", str(script), "--sink-uri", uri]).exit_code == 0
    (out / "schema-registry.json").unlink()
    decoded = CliRunner().invoke(app, ["decode", uri])
    assert (decoded.exit_code, decoded.stdout) == (1, "")
    assert decoded.stderr == (
        f"error: {out}/ticdc/partition-0.jsonl offset 0: the value names schema 2: no schema"
        f" registry to look it up in: {out}/schema-registry.json (the one a replay writes beside"
        " its records) is not there, and the URI names no schema-registry; add"
        " ?schema-registry=URL of the registry the records were written with (a service's"
        " changefeed: its cluster's, http://HOST:PORT/sim/v1/clusters/{cluster}/schema-registry)\n"
    )


def test_a_replay_to_kafka_needs_a_schema_registry(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ticdc_sim.cli import app

    script = tmp_path / "person.sql"
    script.write_text(PERSON)
    ran = CliRunner().invoke(
        app, ["replay", str(script), "--sink-uri", "kafka://127.0.0.1:1/t?protocol=avro"]
    )
    assert ran.exit_code == 1
    assert ran.stderr.endswith(
        'error: Avro protocol requires parameter "schema-registry" to specify the schema'
        " registry (ErrCodecInvalidConfig): add ?schema-registry=http://HOST:PORT to the sink"
        " URI or schema-registry under [sink] (a Confluent registry, or the one `ticdc-sim"
        " serve` serves); jsonl:// and parquet:// keep the schemas beside the records instead\n"
    )


def test_a_simulators_avro_changefeeds_share_its_registry() -> None:
    """The cluster's registry, which the service serves: every changefeed without a
    `schema-registry` registers there, and a test reads schemas by the ids records name."""
    from ticdc_sim.api import Simulator

    with Simulator(seed=1) as sim:
        one = sim.changefeed("memory://?protocol=avro&enable-tidb-extension=true")
        two = sim.changefeed("memory://?protocol=avro&topic=other")
        sim.execute(PERSON)
        (insert, delete) = one.records()
        assert (
            json.loads(sim.registry.schema(int.from_bytes(insert.value[1:5], "big")))["name"]
            == "person"
        )
        # registered at a table version's first row, as TiCDC does: `two` has sent nothing yet
        assert sim.registry.subjects() == ["ticdc-key", "ticdc-value"]
        assert [e["type"] for e in one.events()] == ["insert", "delete"]
        assert [e["columns"] for e in two.events()] == [{"id": 1, "age": 25}, None]
        assert sim.registry.subjects() == ["other-key", "other-value", "ticdc-key", "ticdc-value"]
        assert delete.value is None


def test_the_python_apis_generate_keeps_the_registry_beside_a_directorys_records(
    tmp_path: Path,
) -> None:
    from ticdc_sim.api import generate

    spec = {
        "tables": [{"ddl": "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(8))", "rows": 5}],
        "operations": {"events": 20},
    }
    out = tmp_path / "out"
    records = generate(spec, f"jsonl://{out}?protocol=avro", seed=3)
    saved = MemoryRegistry.from_json(json.loads((out / "schema-registry.json").read_text()))
    assert saved.subjects() == ["ticdc-key", "ticdc-value"]
    decoder = decoder_for(CodecConfig("avro"), registry=saved)
    decoded = [e for r in records for e in decoder.decode(r.key, r.value)]
    assert len(records) >= 20 and [type(e) for e in decoded] == [DecodedRow] * len(records)


def test_current_timestamp_defaults_are_tidbs_text() -> None:
    script = (
        "USE test; CREATE TABLE t (id INT PRIMARY KEY, a TIMESTAMP NULL DEFAULT NOW(),"
        " b DATETIME(3) DEFAULT CURRENT_TIMESTAMP(3), c DATETIME DEFAULT '2024-01-01 00:00:00');"
        " INSERT INTO t (id) VALUES (1);"
    )
    _, _, registry = _run(script, "memory://?protocol=avro")
    fields = json.loads(registry.schema(2))["fields"]
    assert [f.get("default") for f in fields] == [
        None,
        "CURRENT_TIMESTAMP",
        "CURRENT_TIMESTAMP(3)",
        "2024-01-01 00:00:00",
    ]


def test_row_checksums_are_verified_as_ticdcs_consumer_does() -> None:
    uri = (
        "memory://?protocol=avro&enable-tidb-extension=true&avro-decimal-handling-mode=string"
        "&avro-bigint-unsigned-handling-mode=string"
    )
    toml = "[integrity]\nintegrity-check-level = 'correctness'\n"
    feed = changefeed(uri, toml)
    sink = MemorySink()
    pipeline = Pipeline(feed, sink)
    pipeline.run(events(PERSON.replace("(1, 25)", "(1, 25), (2, 31)")))
    first, *_ = sink.records()
    decoder = decoder_for(feed.codec, registry=pipeline.registry)
    (row,) = decoder.decode(first.key, first.value)
    assert isinstance(row, DecodedRow)
    assert (row.extra["_tidb_corrupted"], row.extra["_tidb_checksum_version"]) == (False, 2)
    changed = first.value.replace(b"\x02\x32", b"\x02\x34", 1)  # age 25 -> 26
    with pytest.raises(DecodeError) as found:
        decoder.decode(first.key, changed)
    want = row.extra["_tidb_row_level_checksum"]
    assert str(found.value) == (
        f"avro row of test.person at commit ts {row.commit_ts}: the checksum '{want}' does not"
        " match its values (checksum corrupted)"
    )


@pytest.mark.parametrize(
    "script",
    [
        # a table version that sends no row: TiCDC never registers its schemas, so a registry
        # at BACKWARD never sees the NOT NULL column without a default
        "CREATE TABLE t1 (id INT PRIMARY KEY, a INT);\nINSERT INTO t1 VALUES (1,1);\n"
        "ALTER TABLE t1 ADD COLUMN b INT NOT NULL;\nALTER TABLE t1 DROP COLUMN b;\n"
        "INSERT INTO t1 VALUES (2,2);\n",
        # a second table on the topic that sends no row
        "CREATE TABLE t1 (id INT PRIMARY KEY);\n"
        "CREATE TABLE t2 (id INT PRIMARY KEY, x VARCHAR(3));\nINSERT INTO t1 VALUES (1);\n",
    ],
    ids=["transient-version", "silent-table"],
)
def test_a_script_registers_a_table_version_at_its_first_row(script: str) -> None:
    """TiCDC's GetCachedOrRegister runs as a row is encoded (avro.go AppendRowChangedEvent):
    a table version without rows registers nothing, and a script TiCDC completes completes."""
    from ticdc_sim.api import Simulator

    with Simulator(seed=1) as sim:
        feed = sim.changefeed("memory://?protocol=avro")
        sim.execute(script)
        ids = [int.from_bytes(r.value[1:5], "big") for r in feed.records()]
        assert sim.registry.subjects() == ["ticdc-key", "ticdc-value"]
        assert len(sim.registry.versions("ticdc-value")) == 1  # the {id, a} or {id} schema
        assert set(ids) == {sim.registry.version("ticdc-value", 1)[0]}
