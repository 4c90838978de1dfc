"""maxwell against the inputs of TiCDC's maxwell tests (tests/vectors/maxwell.json) byte for
byte, TiCDC's quirks and panics, and its decoder against truncations and flipped bytes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ticdc_sim.encoders import CodecConfig, DecodedDDL, DecodedRow
from ticdc_sim.encoders.maxwell import Decoder, Encoder, ddl_type
from ticdc_sim.errors import ConfigError, DecodeError, EncodeError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent, RowChangedEvent

V = json.loads((Path(__file__).parent / "vectors" / "maxwell.json").read_text())
CONFIG = CodecConfig("maxwell")


def run(sql: str) -> list[Any]:
    return list(Engine().run(parse_statements(sql)))


def rows_of(sql: str, commit_ts: int) -> list[RowChangedEvent]:
    return [e._replace(commit_ts=commit_ts) for e in run(sql) if isinstance(e, RowChangedEvent)]


@pytest.mark.parametrize("name", ["M1", "M2", "M3"])
def test_ticdc_test_inputs_encode_as_maxwell_message_go_writes(name: str) -> None:
    case = V[name]
    events = run(";".join([case["ddl"], *case["sql"]]) + ";")
    rows = [
        e._replace(commit_ts=case["commit_ts"]) for e in events if isinstance(e, RowChangedEvent)
    ]
    rows *= case.get("repeat", 1)
    encoder = Encoder(CONFIG)
    (messages,) = encoder.build_groups([rows])
    assert len(messages) == 1 and messages[0].rows == len(rows)  # what TiCDC's test asserts
    assert messages[0].key == bytes.fromhex(case["key"])
    assert messages[0].value == case["value"].encode()
    decoded = Decoder(CONFIG).decode(messages[0].key, messages[0].value)
    assert [d.kind for d in decoded if isinstance(d, DecodedRow)] == ["insert"] * len(rows)
    if "ddl_value" in case:
        (ddl,) = [e for e in events if isinstance(e, DDLEvent)]
        message = encoder.encode_ddl(replace(ddl, start_ts=1, commit_ts=case["ddl_commit_ts"]))
        assert (message.key, message.value) == (
            case["ddl_key"].encode(),
            case["ddl_value"].encode(),
        )
        assert Decoder(CONFIG).decode(message.key, message.value) == [
            DecodedDDL("test", "t", case["ddl_commit_ts"], ddl.query, "table-create")
        ]


def test_an_empty_build_is_no_message_and_checkpoints_are_not_sent() -> None:
    encoder = Encoder(CONFIG)
    assert encoder.build() == []
    assert encoder.encode_checkpoint(449000000001048576) is None


TABLE = "USE test; CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10), b DOUBLE, c BLOB);"


def test_update_old_holds_the_changed_columns_and_delete_its_row_in_old() -> None:
    rows = rows_of(
        TABLE
        + "INSERT INTO t VALUES (1, 'x', 1.5, NULL);"
        + "UPDATE t SET a = 'y', c = X'00ff' WHERE id = 1;"
        + "UPDATE t SET c = NULL WHERE id = 1;"
        + "DELETE FROM t WHERE id = 1;",
        449000000001048576,
    )
    (messages,) = Encoder(CONFIG).build_groups([rows[1:]])
    head = b'{"database":"test","table":"t","type":"'
    assert messages[0].value == (
        head + b'update","ts":1712799072,"data":{"a":"y","b":1.5,"c":"AP8=","id":1},'
        b'"old":{"a":"x","c":null}}'
        + head
        + b'update","ts":1712799072,"data":{"a":"y","b":1.5,"c":null,"id":1},"old":{"c":"AP8="}}'
        + head
        + b'delete","ts":1712799072,"old":{"a":"y","b":1.5,"c":null,"id":1}}'
    )
    decoded = Decoder(CONFIG).decode(messages[0].key, messages[0].value)
    assert decoded[0] == DecodedRow(
        "update",
        "test",
        "t",
        None,
        {"a": "y", "b": 1.5, "c": "AP8=", "id": 1},
        {"a": "x", "b": 1.5, "c": None, "id": 1},
        {"ts": 1712799072},
    )
    handle_only = replace(CONFIG, delete_only_output_handle_key_columns=True)
    (messages,) = Encoder(handle_only).build_groups([rows[3:]])
    assert messages[0].value == head + b'delete","ts":1712799072,"old":{"id":1}}'


def test_what_ticdc_panics_on_is_an_encode_error() -> None:
    rows = rows_of(
        TABLE + "INSERT INTO t VALUES (1, 'x', 1.5, X'01'); UPDATE t SET c = X'02' WHERE id = 1;",
        449000000001048576,
    )
    with pytest.raises(EncodeError) as raised:
        Encoder(CONFIG).build_groups([rows])
    assert str(raised.value) == (
        "maxwell cannot send an UPDATE of test.t at commit ts 449000000001048576: binary column"
        " 'c' is not NULL before and after, and TiCDC's encoder panics comparing the two []byte"
        " values (maxwell_message.go rowChangeToMaxwellMsg)"
    )
    (schema,) = [e for e in run("CREATE DATABASE d2;") if isinstance(e, DDLEvent)]
    with pytest.raises(EncodeError) as raised:
        Encoder(CONFIG).encode_ddl(schema)
    assert str(raised.value) == (
        f"maxwell cannot send DDL {schema.query!r} (commit ts {schema.commit_ts}): TiCDC's"
        " encoder panics on a DDL without a table (maxwell_message.go ddlEventToMaxwellMsg"
        " dereferences its nil TableInfo)"
    )


def test_a_batch_is_one_record_checked_against_max_message_bytes() -> None:
    rows = rows_of(
        TABLE + "INSERT INTO t VALUES (1, 'x', 1.5, NULL), (2, 'y', 2.5, NULL);", 449000000001048576
    )
    (messages,) = Encoder(replace(CONFIG, max_batch_size=1)).build_groups([rows])
    assert [m.rows for m in messages] == [2]
    limit = len(messages[0].value or b"") + 8 + 36
    Encoder(replace(CONFIG, max_message_bytes=limit)).build_groups([rows])
    with pytest.raises(
        EncodeError, match=f"of {limit} bytes .*exceeds max-message-bytes {limit - 1}"
    ):
        Encoder(replace(CONFIG, max_message_bytes=limit - 1)).build_groups([rows])


def test_new_arch_has_no_maxwell() -> None:
    with pytest.raises(ConfigError, match="unknown 'maxwell' message protocol for sink"):
        Encoder(replace(CONFIG, profile="new-arch"))


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (ActionType.CREATE_TABLE, "table-create"),
        (ActionType.DROP_TABLE, "table-drop"),
        (ActionType.ADD_COLUMN, "table-alter"),
        (ActionType.TRUNCATE_TABLE, "table-alter"),
        (ActionType.EXCHANGE_TABLE_PARTITION, "table-alter"),
        (ActionType.CREATE_VIEW, "create view"),
        (ActionType.RENAME_TABLES, "rename tables"),
        (ActionType.CREATE_SCHEMA, "database-create"),
    ],
)
def test_ddl_types_follow_ddl_to_maxwell_type(action: ActionType, expected: str) -> None:
    assert ddl_type(action) == expected


def valid_messages() -> list[tuple[bytes | None, bytes]]:
    events = run(
        TABLE + "INSERT INTO t VALUES (1, 'x', 1.5, NULL); UPDATE t SET a = 'y' WHERE id = 1;"
    )
    encoder = Encoder(CONFIG)
    out: list[tuple[bytes | None, bytes]] = []
    rows = [e for e in events if isinstance(e, RowChangedEvent)]
    (messages,) = encoder.build_groups([rows])
    out += [(m.key, m.value or b"") for m in messages]
    ddl = encoder.encode_ddl(next(e for e in events if isinstance(e, DDLEvent)))
    out.append((ddl.key, ddl.value or b""))
    return out


def test_every_prefix_and_flipped_byte_is_one_decode_error_or_decodes() -> None:
    decoder = Decoder(CONFIG)
    for key, value in valid_messages():
        whole = decoder.decode(key, value)
        for cut in range(len(value)):
            try:
                found = decoder.decode(key, value[:cut])
            except DecodeError as e:
                assert str(e).startswith("not a maxwell message")
            else:  # cut between two rows: a record of the rows before (concatenated JSON)
                assert 0 < len(found) < len(whole) and found == whole[: len(found)]
        for at in range(len(value)):
            for flip in (0x01, 0x80):
                bad = value[:at] + bytes([value[at] ^ flip]) + value[at + 1 :]
                try:
                    decoder.decode(key, bad)
                except DecodeError as e:
                    assert str(e).startswith("not a maxwell message")


VECTORS = "USE test; CREATE TABLE v (id INT PRIMARY KEY, x VECTOR(2), n INT);"


def test_an_update_lists_every_vector_column_in_old_and_a_null_vector_is_ticdcs_panic() -> None:
    rows = rows_of(
        VECTORS
        + "INSERT INTO v VALUES (1, '[1,2]', 1); UPDATE v SET n = 2 WHERE id = 1;"
        + "INSERT INTO v VALUES (2, NULL, 1); DELETE FROM v WHERE id = 2;",
        449000000001048576,
    )
    (messages,) = Encoder(CONFIG).build_groups([rows[1:2]])
    assert messages[0].value == (
        b'{"database":"test","table":"v","type":"update","ts":1712799072,'
        b'"data":{"id":1,"n":2,"x":"[1,2]"},"old":{"n":1,"x":"[1,2]"}}'
    )
    for row in rows[2:]:
        with pytest.raises(EncodeError) as raised:
            Encoder(CONFIG).build_groups([[row]])
        assert str(raised.value) == (
            "maxwell cannot send a NULL in VECTOR column 'x' of test.v: TiCDC's encoder panics"
            " on it (maxwell_message.go asserts types.VectorFloat32 on a nil value)"
        )
    # a delete of handle-key columns only never reads the vector
    handle_only = replace(CONFIG, delete_only_output_handle_key_columns=True)
    (messages,) = Encoder(handle_only).build_groups([rows[3:]])
    assert messages[0].value == (
        b'{"database":"test","table":"v","type":"delete","ts":1712799072,"old":{"id":2}}'
    )
