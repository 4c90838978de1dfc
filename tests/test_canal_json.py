"""canal-json against TiCDC's vectors (tests/vectors/canal_json.json), byte for byte."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from ticdc_sim.encoders import CodecConfig, DecodedCheckpoint, DecodedDDL, DecodedRow
from ticdc_sim.encoders.canal_json import REPLICATION_LAG_MS, Decoder, Encoder
from ticdc_sim.encoders.types import (
    java_type,
    promoted_java_type,
    short_type,
    unsigned_promotion,
)
from ticdc_sim.errors import EncodeError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.golang.json import EASYJSON, dumps
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.type_names import full_type

VECTORS = json.loads((Path(__file__).parent / "vectors" / "canal_json.json").read_text())
C4 = VECTORS["C4"]


def events(sql: str) -> list[Any]:
    return list(Engine().run(parse_statements("USE test;" + sql)))


def c4_event(case: dict[str, Any]) -> RowChangedEvent:
    """The vector's row event; the vectors run insert, update, delete in that order."""
    insert = "INSERT INTO tp_int VALUES (2, 127, 32767, 8388607, 2147483647, 9223372036854775807);"
    setup = {"delete": insert + "UPDATE tp_int SET c_int = 0, c_tinyint = 0;"}.get(
        case["name"], insert
    )
    if case["name"].startswith("insert"):
        setup = ""
    rows = [
        e for e in events(f"{C4['ddl']}; {setup} {case['sql']};") if isinstance(e, RowChangedEvent)
    ]
    return rows[-1]._replace(start_ts=1, commit_ts=C4["commit_ts"])


def wall_clock(value: bytes) -> bytes:
    """The vector's `ts` (TiCDC's wall clock at encoding) in place of ours (the commit's
    physical ms plus the simulated replication lag, checked here)."""
    doc = orjson.loads(value)
    assert doc["ts"] == doc["es"] + REPLICATION_LAG_MS
    return value.replace(f',"ts":{doc["ts"]},'.encode(), f',"ts":{C4["wall_ts"]},'.encode(), 1)


@pytest.mark.parametrize("case", C4["cases"], ids=lambda c: c["name"])
def test_c4_dml_bytes(case: dict[str, Any]) -> None:
    encoder = Encoder(CodecConfig("canal-json", **case["params"]))
    encoder.append_row(c4_event(case))
    (message,) = encoder.build()
    assert message.key is None
    assert message.value is not None
    assert wall_clock(message.value).decode() == case["value"]


def test_c4_ddl_and_watermark_bytes() -> None:
    encoder = Encoder(CodecConfig("canal-json", enable_tidb_extension=True))
    (ddl,) = [e for e in events(C4["ddl"]) if isinstance(e, DDLEvent)]
    ddl = replace(ddl, start_ts=1, commit_ts=C4["commit_ts"], query=C4["ddl_query"])
    message = encoder.encode_ddl(ddl)
    assert message.value is not None and wall_clock(message.value).decode() == C4["ddl_value"]
    watermark = encoder.encode_checkpoint(C4["commit_ts"])
    assert watermark is not None and watermark.value is not None
    assert wall_clock(watermark.value).decode() == C4["watermark_value"]
    assert Encoder(CodecConfig("canal-json")).encode_checkpoint(C4["commit_ts"]) is None


@pytest.mark.parametrize("case", VECTORS["C1"]["cases"], ids=lambda c: c[0])
def test_c1_mysql_types_and_java_types(case: list[Any]) -> None:
    column_type, short, full, java = case
    (ddl,) = [e for e in events(f"CREATE TABLE t (c {column_type})") if isinstance(e, DDLEvent)]
    assert ddl.table_info is not None
    col = ddl.table_info.columns[0]
    assert (short_type(col), full_type(col), java_type(col)) == (short, full, java)


@pytest.mark.parametrize("case", VECTORS["C1"]["promotions"], ids=lambda c: f"{c[0]}={c[1]}")
def test_c1_unsigned_promotion_by_value(case: list[Any]) -> None:
    column_type, value, java = case
    (ddl,) = [e for e in events(f"CREATE TABLE t (c {column_type})") if isinstance(e, DDLEvent)]
    assert ddl.table_info is not None
    col = ddl.table_info.columns[0]
    assert promoted_java_type(java_type(col), unsigned_promotion(col), value) == java


def test_c3_binary_values_are_latin1_then_easyjson() -> None:
    text = bytes(VECTORS["C3"]["bytes"]).decode("latin-1")
    assert dumps(text, EASYJSON).decode() == VECTORS["C3"]["json"]


def test_decoder_reads_rows_ddl_and_watermarks_back() -> None:
    config = CodecConfig("canal-json", enable_tidb_extension=True)
    encoder, decoder = Encoder(config), Decoder(config)
    case = C4["cases"][1]
    event = c4_event(case)
    encoder.append_row(event)
    (message,) = encoder.build()
    (row,) = decoder.decode(message.key, message.value)
    assert isinstance(row, DecodedRow)
    assert (row.kind, row.commit_ts, row.schema, row.table) == (
        "update",
        C4["commit_ts"],
        "test",
        "tp_int",
    )
    assert row.columns == dict(
        zip([c.name for c in event.table.columns], event.columns or (), strict=True)
    )
    assert row.pre_columns == dict(
        zip([c.name for c in event.table.columns], event.pre_columns or (), strict=True)
    )
    watermark = encoder.encode_checkpoint(7)
    assert watermark is not None
    assert decoder.decode(None, watermark.value) == [DecodedCheckpoint(7)]
    (ddl,) = [e for e in events(C4["ddl"]) if isinstance(e, DDLEvent)]
    (decoded,) = decoder.decode(None, encoder.encode_ddl(ddl).value)
    assert decoded == DecodedDDL("test", "tp_int", ddl.commit_ts, ddl.query, "CREATE")


def test_message_too_large_names_the_table_and_limit() -> None:
    encoder = Encoder(CodecConfig("canal-json", max_message_bytes=100))
    encoder.append_row(c4_event(C4["cases"][0]))
    with pytest.raises(EncodeError, match=r"test.tp_int .* exceeds max-message-bytes 100"):
        encoder.build()


def test_message_too_large_names_the_first_row_in_order_across_kinds() -> None:
    rows = [
        e
        for e in events(
            "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(300));"
            "INSERT INTO t VALUES (1, 'x'); UPDATE t SET a = REPEAT('y', 300);"
            "INSERT INTO t VALUES (2, REPEAT('z', 300));"
        )
        if isinstance(e, RowChangedEvent)
    ]
    update = rows[1]  # the second row; the insert after it is as large, but grouped first
    with pytest.raises(EncodeError, match=f"at commit ts {update.commit_ts} exceeds"):
        Encoder(CodecConfig("canal-json", max_message_bytes=560)).build_groups([rows])


def test_delete_only_handle_key_columns_and_only_updated_columns() -> None:
    rows = [
        e
        for e in events(
            "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(5));"
            "INSERT INTO t VALUES (1, 2, 'x'); UPDATE t SET a = 3; DELETE FROM t;"
        )
        if isinstance(e, RowChangedEvent)
    ]
    encoder = Encoder(
        CodecConfig(
            "canal-json",
            delete_only_output_handle_key_columns=True,
            only_output_updated_columns=True,
        )
    )
    for event in rows:
        encoder.append_row(event)
    insert, update, delete = (orjson.loads(m.value or b"") for m in encoder.build())
    assert update["old"] == [{"a": "2"}] and update["mysqlType"] == {
        "id": "int",
        "a": "int",
        "b": "varchar",
    }
    assert (
        delete["data"] == [{"id": "1"}]
        and delete["sqlType"] == {"id": 4}
        and delete["mysqlType"] == {"id": "int"}
    )
    assert insert["old"] is None and insert["data"] == [{"id": "1", "a": "2", "b": "x"}]


T1 = VECTORS["T1"]


def test_t1_every_column_type_as_tiflow_encodes_it() -> None:
    """One row holding each of tiflow's test columns; data, sqlType and mysqlType per column."""
    cases = T1["cases"]
    columns = ", ".join(f"`{name}` {definition}" for name, definition, *_ in cases)
    literals = ", ".join(literal for _, _, literal, *_ in cases)
    rows = [
        e
        for e in events(f"CREATE TABLE person ({columns}); INSERT INTO person VALUES ({literals});")
        if isinstance(e, RowChangedEvent)
    ]
    encoder = Encoder(CodecConfig("canal-json"))
    encoder.append_row(rows[0])
    (message,) = encoder.build()
    assert message.value is not None
    doc = json.loads(message.value)
    got = [
        [name, doc["mysqlType"][name], doc["sqlType"][name], doc["data"][0][name]]
        for name, *_ in cases
    ]
    expected = [[name, mysql, java, value] for name, _, _, mysql, java, value in cases]
    assert got == expected
    (decoded,) = Decoder(CodecConfig("canal-json")).decode(message.key, message.value)
    assert isinstance(decoded, DecodedRow)
    names = [name for name, *_ in cases]
    stored = dict(zip(names, rows[0].columns or (), strict=True))
    # ENUM and SET come back as their numbers, as tiflow's decoder gives them
    # (expectedDecodedValue: enum "1", set uint64(3))
    assert decoded.columns == {**stored, "enum": 1, "set": 3}
