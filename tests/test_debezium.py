"""debezium against TiCDC's vectors (tests/vectors/debezium.json) and its value rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from support_changelog import replay
from ticdc_sim.encoders import CodecConfig, DecodedCheckpoint, DecodedDDL, DecodedRow
from ticdc_sim.encoders.canal_json import REPLICATION_LAG_MS
from ticdc_sim.encoders.debezium import Decoder, Encoder, schema_topic_name
from ticdc_sim.errors import EncodeError
from ticdc_sim.generator.sql.engine import Engine, EngineConfig
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mysql import MySQLType, TiDBFlag
from ticdc_sim.model.table import ColumnInfo, TableInfo

VECTORS = json.loads((Path(__file__).parent / "vectors" / "debezium.json").read_text())
_TYPES = {"tinyint": (MySQLType.TINY, 4), "int": (MySQLType.LONG, 11)}


def table(spec: dict[str, Any]) -> TableInfo:
    """A table as tiflow's `model.BuildTableInfo` makes it in the vector's test."""
    columns = []
    for offset, c in enumerate(spec["columns"]):
        tp, flen = _TYPES[c["type"]]
        flag = TiDBFlag(0)
        if c["pk"]:
            flag |= TiDBFlag.PRI_KEY
        if not c["nullable"]:
            flag |= TiDBFlag.NOT_NULL
        columns.append(
            ColumnInfo(offset + 1, c["name"], offset, tp, c.get("flen", flen), 0, flag, "", "")
        )
    return TableInfo(
        1, spec["schema"], spec["name"], tuple(columns), pk_is_handle=True,
        charset=spec.get("charset", "utf8mb4"),
    )  # fmt: skip


def wall_clock(value: bytes) -> bytes:
    """The vector's `payload.ts_ms` (TiCDC's wall clock) in place of ours (the commit's
    physical ms plus the simulated replication lag, checked here)."""
    payload = orjson.loads(value)["payload"]
    ours = payload["ts_ms"]
    assert ours == payload["source"]["ts_ms"] + REPLICATION_LAG_MS
    return value.replace(b'},"ts_ms":%d,' % ours, b'},"ts_ms":%d,' % VECTORS["now_ms"], 1)


def encode(case: dict[str, Any]) -> tuple[bytes | None, bytes | None, CodecConfig]:
    config = CodecConfig("debezium", cluster_id=VECTORS["cluster_id"], **case["config"])
    encoder, event = Encoder(config), case["event"]
    if event["kind"] == "checkpoint":
        message = encoder.encode_checkpoint(event["ts"])
    elif event["kind"] == "ddl":
        pre = event.get("pre_table")
        ddl = DDLEvent(
            0, 1, ActionType[event["action"]], event["query"], event["table"]["schema"],
            event["table"]["name"], table(event["table"]), pre and table(pre),
        )  # fmt: skip
        message = encoder.encode_ddl(ddl)
    else:
        info = table(case["table"])
        new, old = event.get("columns"), event.get("pre_columns")
        row = RowChangedEvent(0, 1, info, 1, new and tuple(new), old and tuple(old))
        encoder.append_row(row)
        (message,) = encoder.build()
    assert message is not None
    return message.key, message.value, config


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: c["name"])
def test_ticdc_vectors_byte_for_byte_and_back(case: dict[str, Any]) -> None:
    key, value, config = encode(case)
    assert key is not None and value is not None
    ours = wall_clock(value)
    # TiCDC's tests compare with require.JSONEq; the literals written in emission order
    # (`key_in_order`, `value_in_order`) are compared byte for byte too
    assert (orjson.loads(key), orjson.loads(ours)) == (
        orjson.loads(case["key"]),
        orjson.loads(case["value"]),
    )
    assert (key.decode() == case["key"], ours.decode() == case["value"]) == (
        case["key_in_order"],
        case["value_in_order"],
    )
    (decoded,) = Decoder(config).decode(key, value)
    event = case["event"]
    if event["kind"] == "checkpoint":
        assert decoded == DecodedCheckpoint(event["ts"])
    elif event["kind"] == "ddl":
        assert isinstance(decoded, DecodedDDL)
        assert (decoded.schema, decoded.commit_ts, decoded.query) == ("test", 1, event["query"])
    else:
        assert isinstance(decoded, DecodedRow)
        assert decoded.kind == event["kind"] and decoded.keys == ("tiny",)
        image = {"insert": "columns", "update": "columns", "delete": "pre_columns"}
        row = decoded.columns if event["kind"] != "delete" else decoded.pre_columns
        assert row == {"tiny": event[image[event["kind"]]][0]}


def test_schema_topic_name_sanitizes_as_ticdc() -> None:
    # helper_test.go TestGetSchemaTopicName
    assert schema_topic_name("default", "1A.B", "columnNameWith中文") == (
        "default._1A_B.columnNameWith__"
    )


def rows(sql: str, **config: Any) -> list[dict[str, Any]]:
    """The `after` (else `before`) payload of each row the script changes."""
    encoder = Encoder(CodecConfig("debezium", **config))
    out = []
    for event in Engine().run(parse_statements("USE test;" + sql)):
        if isinstance(event, RowChangedEvent):
            encoder.append_row(event)
            (message,) = encoder.build()
            assert message.value is not None
            payload = orjson.loads(message.value)["payload"]
            out.append(payload["after"] or payload["before"])
    return out


def test_null_is_sent_as_the_column_default_as_ticdc_does() -> None:
    # writeDebeziumFieldValue: `if value == nil { value = col.GetDefaultValue() }`
    (row,) = rows(
        "CREATE TABLE t (id INT PRIMARY KEY, n INT DEFAULT 7, s VARCHAR(5) DEFAULT 'x',"
        " d DATETIME DEFAULT CURRENT_TIMESTAMP, z INT);"
        "INSERT INTO t VALUES (1, NULL, NULL, NULL, NULL)"
    )
    assert row == {"id": 1, "n": 7, "s": "x", "d": 0, "z": None}


def test_a_default_with_a_charset_introducer_or_n_is_its_string() -> None:
    # TiDB evaluates `_utf8mb4'x'` and `N'x'` to the string x; neither is an expression (found
    # by the random differential test, where debezium sent the text "_utf8mb4 ''" for a NULL)
    (row,) = rows(
        "CREATE TABLE t (id INT PRIMARY KEY, e VARCHAR(5) DEFAULT _utf8mb4'',"
        " s VARCHAR(5) DEFAULT _latin1'x', n VARCHAR(5) DEFAULT N'y');"
        " INSERT INTO t VALUES (1, NULL, NULL, NULL)"
    )
    assert row == {"id": 1, "e": "", "s": "x", "n": "y"}


def test_bigint_unsigned_above_int64_wraps_as_ticdc_does() -> None:
    (row,) = rows("CREATE TABLE t (id BIGINT UNSIGNED PRIMARY KEY); INSERT INTO t VALUES (1 << 63)")
    assert row == {"id": -9223372036854775808}


def test_unsupported_ddl_sends_nothing_and_checkpoints_need_the_extension() -> None:
    # encoder.go EncodeDDLEvent: ErrDDLUnsupportType is logged and nothing is sent
    info = table(VECTORS["cases"][0]["table"])
    lock = DDLEvent(0, 1, ActionType.LOCK_TABLE, "LOCK TABLES t READ", "test", "t", info, info)
    encoder = Encoder(CodecConfig("debezium"))
    assert encoder.encode_ddl(lock) is None
    assert encoder.encode_checkpoint(5) is None


def test_timestamp_is_read_in_ticdcs_zone_and_sent_in_utc() -> None:
    # writeDebeziumFieldValue: StrToDateTime in config.TimeZone, then UTC with fsp digits
    encoder = Encoder(CodecConfig("debezium", time_zone="+08:00", debezium_disable_schema=True))
    sql = "USE test; CREATE TABLE t (id INT PRIMARY KEY, ts TIMESTAMP(2));"
    sql += "INSERT INTO t VALUES (1, '2023-11-30 20:34:56.5')"
    engine = Engine(EngineConfig(time_zone="+08:00"))
    (row,) = [e for e in engine.run(parse_statements(sql)) if isinstance(e, RowChangedEvent)]
    encoder.append_row(row)
    (message,) = encoder.build()
    assert message.value is not None
    assert orjson.loads(message.value)["payload"]["after"] == {
        "id": 1,
        "ts": "2023-11-30T12:34:56.50Z",
    }
    decoder = Decoder(CodecConfig("debezium", time_zone="+08:00"))
    encoder = Encoder(CodecConfig("debezium", time_zone="+08:00"))
    encoder.append_row(row)
    (message,) = encoder.build()
    (decoded,) = decoder.decode(message.key, message.value)
    assert isinstance(decoded, DecodedRow)
    assert decoded.columns == {"id": 1, "ts": "2023-11-30 20:34:56.50"}


def test_a_changefeed_sends_no_record_for_unsupported_ddl_and_refuses_a_too_large_row() -> None:
    script = (
        "USE test;\nCREATE TABLE t (id INT PRIMARY KEY, s TEXT);\nCREATE SEQUENCE q;\n"
        "INSERT INTO t VALUES (1, 'x');\n"
    )
    run = replay(script, "memory://?protocol=debezium&partition-num=2")
    ddls = [r for r in run.sink.records() if b'"ddl":' in (r.value or b"")]
    # CREATE TABLE on both partitions; CREATE SEQUENCE has no Debezium change type
    assert [orjson.loads(r.value or b"")["payload"]["ddl"] for r in ddls] == [
        "CREATE TABLE `t` (`id` INT PRIMARY KEY,`s` TEXT)"
    ] * 2
    big = script.replace("'x'", "REPEAT('x', 3000)")
    with pytest.raises(
        EncodeError, match="exceeds max-message-bytes 2048 .*ErrMessageSizeTooLarge"
    ):
        replay(big, "memory://?protocol=debezium&max-message-bytes=2048")


# pingcap/ticdc's debezium_test.go TestDataTypes reads the same testdata files (byte-identical)
@pytest.mark.parametrize("profile", ["v8.5", "new-arch"])
@pytest.mark.parametrize("disable_schema", [False, True])
def test_real_debeziums_datatype_output(disable_schema: bool, profile: str) -> None:
    vector = VECTORS["datatype"]
    sql = f"USE test; SET sql_mode = ''; {vector['ddl']}; {vector['dml']}"
    (row,) = [e for e in Engine().run(parse_statements(sql)) if isinstance(e, RowChangedEvent)]
    config = CodecConfig(
        "debezium",
        cluster_id=vector["cluster_id"],
        debezium_disable_schema=disable_schema,
        profile=profile,  # type: ignore[arg-type]
    )
    encoder = Encoder(config)
    encoder.append_row(row)
    (message,) = encoder.build()
    assert message.key is not None and message.value is not None
    key, value = orjson.loads(message.key), orjson.loads(message.value)
    want_key, want_value = dict(vector["key"]), dict(vector["value"])
    for doc in (value, want_value):  # what requireDebeziumJSONEq ignores
        doc["payload"] = {k: v for k, v in doc["payload"].items() if k not in ("source", "ts_ms")}
    if disable_schema:
        assert "schema" not in key and "schema" not in value
        want_key.pop("schema")
        want_value.pop("schema")
    assert (key, value) == (want_key, want_value)


def test_ddl_table_changes_read_the_ddl_text_as_ticdc_does() -> None:
    # codec.go EncodeDDLEvent + helper.go parseColumns/getLen/getExpressionAndName/parseBit:
    # a column the DDL defines loses its comment and takes the precision written there
    sql = (
        "USE test; CREATE TABLE t (id INT UNSIGNED PRIMARY KEY AUTO_INCREMENT COMMENT 'k',"
        " dt DATETIME, t3 TIME(3) NOT NULL, b BIT(10) DEFAULT b'101', d DECIMAL(6,2),"
        " e ENUM('x','y'), v VARCHAR(9))"
    )
    (ddl,) = [e for e in Engine().run(parse_statements(sql)) if isinstance(e, DDLEvent)]
    message = Encoder(CodecConfig("debezium", debezium_disable_schema=True)).encode_ddl(ddl)
    assert message is not None and message.value is not None
    (change,) = orjson.loads(message.value)["payload"]["tableChanges"]
    columns = {c["name"]: c for c in change["table"]["columns"]}
    picked = ("jdbcType", "comment", "typeName", "typeExpression", "length", "scale", "optional")
    got = {name: tuple(c[k] for k in picked) for name, c in columns.items()}
    assert got == {
        "id": (4, None, "INT UNSIGNED", "INT UNSIGNED", None, None, False),
        "dt": (93, None, "DATETIME", "DATETIME", None, None, True),
        "t3": (92, None, "TIME", "TIME", 3, None, False),
        "b": (-7, None, "BIT", "BIT", 10, None, True),
        "d": (3, None, "DECIMAL", "DECIMAL", 6, 2, True),
        "e": (1, None, "ENUM", "ENUM", 1, None, True),
        "v": (12, None, "VARCHAR", "VARCHAR", 9, None, True),
    }
    assert columns["b"]["defaultValueExpression"] == "0000000101"
    assert columns["e"]["enumValues"] == ["'x'", "'y'"]
    assert (columns["id"]["autoIncremented"], columns["id"]["generated"]) == (True, True)
    assert (change["type"], change["id"], change["table"]["primaryKeyColumnNames"]) == (
        "CREATE",
        '"test"."t"',
        ["id"],
    )
