"""canal (protobuf) against TiCDC's vectors (tests/vectors/canal.json) and its packing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ticdc_sim.config import changefeed
from ticdc_sim.encoders import CodecConfig, DecodedDDL, DecodedRow
from ticdc_sim.encoders.canal import (
    Column,
    Decoder,
    Encoder,
    Entry,
    Messages,
    Packet,
    RowChange,
)
from ticdc_sim.errors import ConfigError, DecodeError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.model.events import DDLEvent, RowChangedEvent

VECTORS = json.loads((Path(__file__).parent / "vectors" / "canal.json").read_text())
CONFIG = CodecConfig("canal")
EVENT_TYPES = {1: "INSERT", 2: "UPDATE", 3: "DELETE", 4: "CREATE"}


def events(sql: str) -> list[Any]:
    return list(Engine().run(parse_statements("USE test;" + sql)))


def rows(sql: str) -> list[RowChangedEvent]:
    return [e for e in events(sql) if isinstance(e, RowChangedEvent)]


def entries(value: bytes) -> list[Any]:
    packet = Packet.FromString(value)
    assert (packet.version, packet.type) == (1, 7)  # CanalPacketVersion, MESSAGES
    return [Entry.FromString(m) for m in Messages.FromString(packet.body).messages]


def fields(column: Any) -> list[Any]:
    value = column.value.decode()
    if column.mysqlType == "blob":  # the Go test reads it back through ISO-8859-1
        value = value.encode("latin-1").decode()
    return [
        column.name,
        column.sqlType,
        column.isKey,
        column.updated,
        column.isNull,
        value,
        column.mysqlType,
    ]


@pytest.mark.parametrize("case", VECTORS["rows"], ids=lambda c: c["source"].split()[-1])
def test_tiflow_entry_vectors(case: dict[str, Any]) -> None:
    found = rows(f"{case['setup']}; {case['sql']};")
    event = found[-1]
    if case.get("pre_from_first"):
        event = event._replace(pre_columns=found[0].columns)
    message = Encoder(CONFIG).build_groups([[event]])[0][0]
    assert message.key is None
    (entry,) = entries(message.value)
    header = entry.header
    assert (entry.entryType, header.sourceType, header.serverenCode) == (2, 2, "UTF-8")
    assert header.executeTime == event.commit_ts >> 18
    assert (header.schemaName, header.tableName) == ("test", "t")
    assert EVENT_TYPES[header.eventType] == case["event_type"]
    assert [(p.key, p.value) for p in header.props] == [("rowsCount", "1")]
    change = RowChange.FromString(entry.storeValue)
    assert change.HasField("isDdl") and change.isDdl is False
    (data,) = change.rowDatas
    assert [fields(c) for c in data.afterColumns] == case["after"]
    assert [fields(c) for c in data.beforeColumns] == case["before"]
    (decoded,) = Decoder(CONFIG).decode(message.key, message.value)
    assert isinstance(decoded, DecodedRow)
    assert decoded.kind == case["event_type"].lower()
    assert decoded.keys == ("id",)


def test_tiflow_ddl_vector() -> None:
    case = VECTORS["ddl"]
    (ddl,) = [e for e in events(case["sql"] + ";") if isinstance(e, DDLEvent)]
    message = Encoder(CONFIG).encode_ddl(ddl)
    (entry,) = entries(message.value)
    assert entry.entryType == 2 and not entry.header.props
    assert EVENT_TYPES[entry.header.eventType] == case["event_type"]
    change = RowChange.FromString(entry.storeValue)
    assert (change.isDdl, change.ddlSchemaName) == (case["is_ddl"], case["ddl_schema_name"])
    assert change.sql.decode() == ddl.query
    assert Decoder(CONFIG).decode(None, message.value) == [
        DecodedDDL("test", "person", None, ddl.query, "CREATE")
    ]


@pytest.mark.parametrize("count", VECTORS["batches"]["cases"])
def test_tiflow_batch_vector_one_record_per_build(count: int) -> None:
    case = VECTORS["batches"]
    found = rows(f"{case['setup']}; {case['sql']};")[:count]
    encoder = Encoder(CONFIG)
    assert encoder.build() == []
    for event in found:
        encoder.append_row(event)
    (message,) = encoder.build()
    assert (message.key, message.rows, message.ts) == (None, count, found[-1].commit_ts)
    assert len(entries(message.value)) == count
    decoded = Decoder(CONFIG).decode(None, message.value)
    assert [d.columns for d in decoded if isinstance(d, DecodedRow)] == [
        {"a": "aa"},
        {"a": "bb"},
    ][:count]
    assert encoder.encode_checkpoint(found[-1].commit_ts) is None


def test_delete_entry_bytes_as_derived_from_the_gogo_marshaller() -> None:
    case = VECTORS["delete_bytes"]
    event = rows("create table t(id int primary key); insert into t values(1); delete from t;")[-1]
    event = event._replace(commit_ts=case["commit_ts"])
    message = Encoder(CONFIG).build_groups([[event]])[0][0]
    body = Messages(messages=[bytes.fromhex(case["entry_hex"])]).SerializeToString()
    assert message.value == Packet(version=1, type=7, body=body).SerializeToString()
    assert message.value.startswith(bytes.fromhex("10011807"))  # version 1, then MESSAGES


def test_oneofs_are_written_when_false_and_negative_java_types_take_ten_bytes() -> None:
    column = Column(sqlType=-6, isNull=False)
    assert column.SerializeToString() == bytes.fromhex("10faffffffffffffffff013000")


def test_delete_only_handle_key_columns_keeps_the_handle_of_deletes_only() -> None:
    found = rows(
        "create table t(id int primary key, v int); insert into t values(1, 2);"
        " update t set v = 3; delete from t;"
    )
    config = CodecConfig("canal", delete_only_output_handle_key_columns=True)
    decoded = Decoder(config).decode(None, Encoder(config).build_groups([found])[0][0].value)
    assert [(d.pre_columns, d.columns) for d in decoded if isinstance(d, DecodedRow)] == [
        (None, {"id": 1, "v": 2}),
        ({"id": 1, "v": 2}, {"id": 1, "v": 3}),
        ({"id": 1}, None),
    ]


def test_unsigned_java_types_are_promoted_by_value() -> None:
    (event,) = rows(
        "create table t(a int unsigned, b int unsigned); insert into t values(4294967295, 1);"
    )
    (entry,) = entries(Encoder(CONFIG).build_groups([[event]])[0][0].value)
    (data,) = RowChange.FromString(entry.storeValue).rowDatas
    assert [c.sqlType for c in data.afterColumns] == [-5, 4]  # BIGINT, INTEGER


def test_new_architecture_has_no_canal() -> None:
    with pytest.raises(ConfigError, match="unknown 'canal' message protocol for sink"):
        changefeed("kafka://k/t?protocol=canal&ticdc-version=new-arch")


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (b"", "the packet has no `version`"),
        (b"\x10\x02\x18\x07", "the packet `version` is 2, TiCDC writes 1"),
        (b"\x10\x01\x18\x07", "the packet holds no entries"),
        (b"\x10\x01\x18\x07\x2a\x02\x12\x00", "entry 0 has no `entryType`"),
        (b"\xff", "not a canal message: the record does not parse as Packet"),
    ],
)
def test_bad_packets_say_what_is_wrong(value: bytes, error: str) -> None:
    with pytest.raises(DecodeError, match=error):
        Decoder(CONFIG).decode(None, value)


@pytest.mark.parametrize("handle_only", [False, True])
def test_entries_from_parts_are_the_whole_messages_bytes(handle_only: bool) -> None:
    from test_encoders import SCRIPT

    found = [e for e in Engine().run(parse_statements(SCRIPT)) if isinstance(e, RowChangedEvent)]
    found += rows(
        "create table u(id int unsigned primary key, v tinyint unsigned, w varchar(3));"
        " insert into u values (4294967295, 255, NULL), (1, 1, 'x');"
        " update u set v = 200, w = 'y'; delete from u;"
    )
    assert {e.kind for e in found} == {"insert", "update", "delete"}
    encoder = Encoder(CONFIG)
    for event in found:
        codec = encoder.codec(event.table)
        assert codec.entry(event, handle_only) == codec.entry_message(event, handle_only)


def test_the_pipeline_packs_each_partitions_batch_and_sends_ddl_to_partition_zero() -> None:
    from support_changelog import decode, replay

    script = (
        "CREATE TABLE a (id INT PRIMARY KEY); CREATE TABLE b (id INT PRIMARY KEY);"
        " BEGIN; INSERT INTO a VALUES (1), (2), (3); INSERT INTO b VALUES (1), (2); COMMIT;"
        " UPDATE a SET id = 4 WHERE id = 1;"
    )
    run = replay(script, "memory://?protocol=canal&partition-num=3")
    records = list(run.sink.records())
    decoded = decode(run.pipeline.feed, records)
    ddl = [(r.partition, e.table) for r, e in decoded if isinstance(e, DecodedDDL)]
    assert ddl == [(0, "a"), (0, "b")]
    packed: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for r, e in decoded:
        if isinstance(e, DecodedRow):
            packed.setdefault((r.partition, r.offset), []).append((e.table, e.kind))
    # the table dispatcher puts a table in one partition; the rows of a 15 ms window share
    # its record (both of a's commits here), the key-changing update as a delete and an insert
    assert sorted(packed.values()) == [
        [("a", "insert")] * 3 + [("a", "delete"), ("a", "insert")],
        [("b", "insert")] * 2,
    ]
    assert len({p for p, _ in packed}) == 2
    assert all(r.key is None for r in records)


@pytest.mark.parametrize("handle_only", [False, True])
def test_a_window_of_mixed_rows_is_each_rows_whole_messages(handle_only: bool) -> None:
    """A window goes through the templates a column at a time: kinds and tables interleave,
    a NULL is set back for the next row, Java types are promoted row by row, and the number
    passes write what formatValue does (exponents, float32 digits, tiny decimals)."""
    from test_encoders import SCRIPT

    found = [e for e in Engine().run(parse_statements(SCRIPT)) if isinstance(e, RowChangedEvent)]
    found += rows(
        "create table u(id int unsigned primary key, v int unsigned, d double, f float,"
        " c decimal(30,10), e enum('a','b'));"
        " insert into u values (4294967295, 1, 1e-7, 3.4e38, 0.0000001, 'b'),"
        " (1, NULL, NULL, NULL, NULL, NULL), (2, 4294967295, 1e21, 1.1, 1, 'a');"
        " update u set v = 4294967295, d = -1.5e-300 where id = 1;"
        " insert into u values (3, 7, 0.1, NULL, 12345678901234567890.5, NULL);"
        " delete from u where id = 2; update u set v = NULL where id = 4294967295;"
    )
    config = CodecConfig("canal", delete_only_output_handle_key_columns=handle_only)
    encoder = Encoder(config)
    (message,) = encoder.build_groups([found])[0]
    packet = Packet.FromString(message.value)
    wanted = [encoder.codec(e.table).entry_message(e, handle_only) for e in found]
    assert list(Messages.FromString(packet.body).messages) == wanted
