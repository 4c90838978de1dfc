"""csv against TiCDC's vectors (tests/vectors/csv.json), byte for byte, and read back."""

from __future__ import annotations

import json
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from ticdc_sim.encoders import CodecConfig, DecodedCheckpoint, DecodedDDL, DecodedRow, cloudstorage
from ticdc_sim.encoders.csv import CSVFormat, Decoder, Encoder
from ticdc_sim.errors import DecodeError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.golang.json import ENCODING_JSON, dumps
from ticdc_sim.golang.strconv import float32, format_v
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.table import TableInfo

VECTORS = json.loads((Path(__file__).parent / "vectors" / "csv.json").read_text())
# the vectors' [sink.csv] names -> CodecConfig's
_OPTIONS = {
    "delimiter": "csv_delimiter",
    "quote": "csv_quote",
    "null": "csv_null",
    "include-commit-ts": "csv_include_commit_ts",
    "output-old-value": "csv_output_old_value",
    "output-handle-key": "csv_output_handle_key",
    "output-field-header": "csv_output_field_header",
    "binary-encoding-method": "csv_binary_encoding_method",
    "terminator": "terminator",
}


def config(options: dict[str, Any]) -> CodecConfig:
    return CodecConfig("csv", **{_OPTIONS[k]: v for k, v in options.items()})


def ddl(sql: str) -> DDLEvent:
    (event,) = Engine().run(parse_statements("USE test;" + sql))
    assert isinstance(event, DDLEvent)
    return event


def table(name: str, types: list[str]) -> TableInfo:
    columns = ", ".join(f"c{i} {t}" for i, t in enumerate(types))
    info = ddl(f"CREATE TABLE {name} ({columns})").table_info
    assert info is not None
    return info


def row_event(case: dict[str, Any]) -> RowChangedEvent:
    image = case["columns"] or case["pre_columns"]
    info = table(case["table"], [c["type"] for c in image])

    def values(cells: list[dict[str, Any]] | None) -> tuple[Any, ...] | None:
        return None if cells is None else tuple(c["value"] for c in cells)

    columns, pre = values(case["columns"]), values(case["pre_columns"])
    if case["kind"] == "delete":
        columns = None
    return RowChangedEvent(1, case["commit_ts"], info, info.id, columns, pre, case["handle"] or 0)


@pytest.mark.parametrize("case", VECTORS["encode"]["cases"], ids=lambda c: c["table"])
def test_csv_message_encode_vectors(case: dict[str, Any]) -> None:
    event = row_event(case)
    encoder = Encoder(config(case["config"]))
    encoder.append_row(event)
    (message,) = encoder.build()
    assert message.key is None  # output-field-header is off
    assert message.value == case["want"].encode()


@pytest.mark.parametrize("case", VECTORS["encode"]["cases"], ids=lambda c: c["table"])
def test_csv_vectors_read_back(case: dict[str, Any]) -> None:
    event = row_event(case)
    codec = config(case["config"])
    encoder, decoder = Encoder(codec), Decoder(codec)
    schema = encoder.encode_ddl(ddl_of(event.table))
    decoder.decode(schema.key, schema.value)
    encoder.append_row(event)
    (message,) = encoder.build()
    (got,) = decoder.decode(message.key, message.value)
    assert isinstance(got, DecodedRow)
    names = [c.name for c in event.table.columns]
    image = event.pre_columns if case["kind"] == "delete" else event.columns
    assert image is not None
    expected = dict(zip(names, image, strict=True))
    assert (got.columns or got.pre_columns) == expected
    without_old = case["kind"] == "update" and not codec.csv_output_old_value
    assert got.kind == case["kind"]
    assert got.pre_columns == (None if without_old else got.pre_columns)
    assert got.commit_ts == (case["commit_ts"] if codec.csv_include_commit_ts else None)
    if codec.csv_output_handle_key:
        assert got.extra == {"handle-key": "1"}


def ddl_of(info: TableInfo) -> DDLEvent:
    return DDLEvent(1, 2, 3, f"CREATE TABLE {info.name} (...)", info.schema, info.name, info, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "want"), VECTORS["quotes"]["cases"])
def test_format_with_quotes(value: str, want: str) -> None:
    assert CSVFormat(config({"quote": VECTORS["quotes"]["quote"]})).string(value) == want


@pytest.mark.parametrize(("delimiter", "value", "want"), VECTORS["escapes"]["cases"])
def test_format_with_escapes(delimiter: str, value: str, want: str) -> None:
    assert CSVFormat(config({"delimiter": delimiter, "quote": ""})).string(value) == want


def test_go_v_floats() -> None:
    """`%v`: shortest digits, an exponent below 1e-4 and from 1e21 ... and from 1e6."""
    cases = [
        (1e6, 64, "1e+06"),
        (1234567.0, 64, "1.234567e+06"),
        (1e-05, 64, "1e-05"),
        (123456.0, 64, "123456"),
        (0.0001, 64, "0.0001"),
        (12345.678, 64, "12345.678"),
        (-2.25e-7, 64, "-2.25e-07"),
        (3.140000104904175, 32, "3.14"),
        (16777216.0, 32, "1.6777216e+07"),
        (0.0, 64, "0"),
        (-0.0, 64, "-0"),
        (1e100, 64, "1e+100"),
    ]
    assert [format_v(v, bits) for v, bits, _ in cases] == [want for _, _, want in cases]


def _field(types: str, value: Any, method: str = "base64") -> str:
    info = table("t_convert", [types])
    event = RowChangedEvent(1, 2, info, info.id, (value,), None)
    encoder = Encoder(config({"binary-encoding-method": method, "terminator": "\n"}))
    encoder.append_row(event)
    (message,) = encoder.build()
    assert message.value is not None
    return message.value.decode().removeprefix('"I","t_convert","test",').removesuffix("\n")


@pytest.mark.parametrize("case", VECTORS["convert"]["cases"], ids=lambda c: c[0])
def test_column_values_as_tiflow_converts_them(case: list[Any]) -> None:
    types, value, want = case
    if "BLOB" in types or "BINARY" in types:
        value = value.encode()
    elif types.startswith("DECIMAL"):
        value = Decimal(value)
    elif types == "FLOAT":
        value = 3.140000104904175  # the float32 nearest 3.14, as the column holds it
    assert _field(types, value) == want


def test_binary_as_hex() -> None:
    ((types, value, want),) = VECTORS["convert"]["hex_cases"]
    assert _field(types, value.encode(), "hex") == want


@pytest.mark.parametrize("case", VECTORS["header"]["cases"], ids=str)
def test_header(case: list[Any]) -> None:
    delimiter, commit_ts, old_value, terminator, want = case
    form = CSVFormat(
        config(
            {
                "delimiter": delimiter,
                "include-commit-ts": commit_ts,
                "output-old-value": old_value,
            }
        )
    )
    assert delimiter.join(form.header_names(["col1", "col2"])) + terminator == want


def test_header_is_the_key_of_every_row() -> None:
    info = table("t_header", ["INT", "VARCHAR(8)"])
    encoder = Encoder(config({"output-field-header": True, "include-commit-ts": True}))
    encoder.append_row(RowChangedEvent(1, 2, info, info.id, (1, "x"), None))
    (message,) = encoder.build()
    assert message.key == (
        b"ticdc-meta$operation,ticdc-meta$table,ticdc-meta$schema,ticdc-meta$commit-ts,c0,c1\r\n"
    )
    assert message.value == b'"I","t_header","test",2,1,"x"\r\n'


def test_schema_file_paths_and_checksums() -> None:
    paths = VECTORS["schema_paths"]
    only = paths["schema_only"]
    schema_def = cloudstorage.definition(only["schema"], None, only["version"])
    assert cloudstorage.schema_path(schema_def) == only["path"]
    table_def = cloudstorage.definition("schema1", None, paths["table"]["version"])
    columns = paths["table"]["columns"]
    table_def |= {"Table": "table1", "TableColumns": columns, "TableColumnsTotal": len(columns)}
    assert cloudstorage.schema_path(table_def) == paths["table"]["path"]
    shuffled = table_def | {"TableColumns": columns[::-1]}  # TestTableDefinitionSum32
    assert cloudstorage.checksum(shuffled) == cloudstorage.checksum(table_def)


def test_schema_file_names() -> None:
    names = VECTORS["schema_file_names"]
    assert [cloudstorage.is_schema_path(p) for p in names["valid"]] == [True] * 3
    assert [cloudstorage.is_schema_path(p) for p in names["invalid"]] == [False] * 6


def test_schema_file_of_a_ddl_is_marshal_indent() -> None:
    event = ddl(
        "CREATE TABLE t_schema (id BIGINT UNSIGNED PRIMARY KEY, d DECIMAL(10,2) NOT NULL,"
        " ts TIMESTAMP(3) NULL, f FLOAT, v VARCHAR(8) DEFAULT 'x<y', e ENUM('a','b'))"
    )
    message = Encoder(config({})).encode_ddl(event)
    query = dumps(event.query, ENCODING_JSON).decode()
    assert "\\u003c" in query  # encoding/json escapes HTML
    definition = cloudstorage.ddl_definition(event)
    assert message.key == cloudstorage.schema_path(definition).encode()
    assert (
        message.key
        == (
            f"test/t_schema/meta/schema_{event.commit_ts}_{cloudstorage.checksum(definition):010d}.json"
        ).encode()
    )
    assert (
        message.value
        == (
            "{\n"
            '    "Table": "t_schema",\n'
            '    "Schema": "test",\n'
            '    "Version": 1,\n'
            f'    "TableVersion": {event.commit_ts},\n'
            f'    "Query": {query},\n'
            '    "Type": 3,\n'
            '    "TableColumns": [\n'
            "        {\n"
            '            "ColumnName": "id",\n'
            '            "ColumnType": "BIGINT UNSIGNED",\n'
            '            "ColumnPrecision": "20",\n'
            '            "ColumnNullable": "false",\n'
            '            "ColumnIsPk": "true"\n'
            "        },\n"
            "        {\n"
            '            "ColumnName": "d",\n'
            '            "ColumnType": "DECIMAL",\n'
            '            "ColumnPrecision": "10",\n'
            '            "ColumnScale": "2",\n'
            '            "ColumnNullable": "false"\n'
            "        },\n"
            "        {\n"
            '            "ColumnName": "ts",\n'
            '            "ColumnType": "TIMESTAMP",\n'
            '            "ColumnScale": "3"\n'
            "        },\n"
            "        {\n"
            '            "ColumnName": "f",\n'
            '            "ColumnType": "FLOAT",\n'
            '            "ColumnPrecision": "12"\n'
            "        },\n"
            "        {\n"
            '            "ColumnName": "v",\n'
            '            "ColumnType": "VARCHAR",\n'
            '            "ColumnDefault": "x\\u003cy",\n'
            '            "ColumnPrecision": "8"\n'
            "        },\n"
            "        {\n"
            '            "ColumnName": "e",\n'
            '            "ColumnType": "ENUM"\n'
            "        }\n"
            "    ],\n"
            '    "TableColumnsTotal": 6\n'
            "}"
        ).encode()
    )
    (got,) = Decoder(config({})).decode(message.key, message.value)
    assert got == DecodedDDL("test", "t_schema", event.commit_ts, event.query, 3)


def test_checkpoint_is_the_metadata_file() -> None:
    message = Encoder(config({})).encode_checkpoint(433305438660591626)
    assert message is not None
    assert (message.key, message.value) == (b"metadata", b'{"checkpoint-ts":433305438660591626}')
    assert Decoder(config({})).decode(message.key, message.value) == [
        DecodedCheckpoint(433305438660591626)
    ]


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (b'"I","t","test",1\r\n', "a row of test.t before any schema file of it"),
        (b'"X","t","test"\r\n', "operation 'X' is not I, U or D"),
        (b'"I","t"\r\n', "a row of 2 fields; the options need 3 before the columns"),
        (b'"I,"t"\r\n', "at offset 4, 't\"\\r\\n' where a delimiter ',' or the terminator"),
        (b'"I","t","test', "the quoted field opened at offset 8 never ends"),
        (b'\xff"I"', "byte 0xff at offset 0 is not UTF-8"),
        (b"", "no row (the value is empty)"),
    ],
)
def test_bad_rows_are_one_clear_error(value: bytes, error: str) -> None:
    with pytest.raises(DecodeError, match="not a csv message: " + _escaped(error)):
        Decoder(config({})).decode(None, value)


def _escaped(text: str) -> str:
    import re

    return re.escape(text)


def test_handle_key_int_and_common() -> None:
    """output-handle-key: kv.IntHandle's digits, kv.CommonHandle's `{v1, v2}`."""
    options = {"output-handle-key": True, "terminator": "\n"}
    int_pk = table("t_int_pk", ["INT PRIMARY KEY", "VARCHAR(8)"])
    common = ddl("CREATE TABLE t_common (a VARCHAR(8), b INT, PRIMARY KEY (a, b) CLUSTERED)")
    assert common.table_info is not None and common.table_info.is_common_handle
    encoder = Encoder(config(options))
    encoder.append_row(RowChangedEvent(1, 2, int_pk, int_pk.id, (7, "x"), None, 7))
    info = common.table_info
    encoder.append_row(RowChangedEvent(1, 2, info, info.id, None, ("k", 3)))
    assert [m.value for m in encoder.build()] == [
        b'"I","t_int_pk","test","7",7,"x"\n',
        b'"D","t_common","test","{k, 3}","k",3\n',
    ]


def test_float_columns_are_go_v_whatever_the_fast_path() -> None:
    """A column of floats in one pass equals `format_v` value by value: exponents from 1e6
    and below 1e-4, float32 digits, values around every switch."""
    rng = random.Random(27)
    doubles = [1e6, 999999.9, 1234567.0, 1e-05, 0.0001, 123456.0, -2.25e-7, 1e21, 1e16, 0.5, -0.0]
    doubles += [rng.choice((-1, 1)) * 10 ** rng.uniform(-12, 25) for _ in range(300)]
    floats = [float32(v) for v in (1e6, 3.14, 16777216.0, 1e-05, 3.4028234663852886e38, 0.1)]
    floats += [float32(rng.choice((-1, 1)) * 10 ** rng.uniform(-12, 37)) for _ in range(200)]
    info = table("t_floats", ["DOUBLE", "FLOAT"])
    pairs = list(zip(doubles, floats + [None] * (len(doubles) - len(floats)), strict=True))
    encoder = Encoder(config({"terminator": "\n"}))
    for d, f in pairs:
        encoder.append_row(RowChangedEvent(1, 2, info, info.id, (d, f), None))
    got = [m.value for m in encoder.build()]
    null = "\\N"
    want = [
        f'"I","t_floats","test",{format_v(d, 64)},{null if f is None else format_v(f, 32)}\n'.encode()
        for d, f in pairs
    ]
    assert got == want
