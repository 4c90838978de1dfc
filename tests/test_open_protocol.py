"""Open protocol against TiCDC's vectors (tests/vectors/open_protocol.json), byte for byte."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ticdc_sim.encoders import CodecConfig, DecodedCheckpoint, DecodedDDL, DecodedRow
from ticdc_sim.encoders.open_protocol import Decoder, Encoder
from ticdc_sim.errors import EncodeError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent, RowChangedEvent

V = json.loads((Path(__file__).parent / "vectors" / "open_protocol.json").read_text())
CONFIG = CodecConfig("open-protocol")


def last_row(case: dict[str, Any]) -> RowChangedEvent:
    # JSON cannot hold a lone surrogate: a script's invalid byte 0xff reads as U+DCFF; TiDB
    # stores it in a VARCHAR only with its UTF-8 check off (strict mode refuses it, 1366)
    sql = case["sql"].replace("\\udcff", "\udcff")
    script = f"USE test; SET tidb_skip_utf8_check = 1; {case['ddl']}; {sql};"
    events = Engine().run(parse_statements(script))
    event = [e for e in events if isinstance(e, RowChangedEvent)][-1]
    changes: dict[str, Any] = {"start_ts": 1}
    if "commit_ts" in case:
        changes["commit_ts"] = case["commit_ts"]
    if "physical_table_id" in case:
        changes["physical_table_id"] = case["physical_table_id"]
    return event._replace(**changes)


@pytest.mark.parametrize("name", ["O1", "O2", "O3"])
def test_row_key_and_value(name: str) -> None:
    key, value = Encoder(CONFIG).row_key_value(last_row(V[name]))
    assert (key.decode(), value.decode()) == (V[name]["key"], V[name]["value"])


def test_o1_record_bytes_and_tiflow_max_message_bytes_188() -> None:
    event = last_row(V["O1"])
    encoder = Encoder(CONFIG)
    encoder.append_row(event)
    (message,) = encoder.build()
    assert (message.key or b"").hex() == V["O1"]["kafka_key"]
    assert (message.value or b"").hex() == V["O1"]["kafka_value"]
    assert message.length() == V["O1"]["length"]
    assert Encoder(replace(CONFIG, max_message_bytes=188)).build_groups([[event]])  # just fits
    with pytest.raises(EncodeError, match="exceeds max-message-bytes 187"):
        Encoder(replace(CONFIG, max_message_bytes=187)).build_groups([[event]])


def test_o4_three_rows_batch_into_one_record_and_split_by_max_batch_size() -> None:
    rows = [last_row(V[name]) for name in ("O1", "O2", "O3")]
    encoder = Encoder(CONFIG)
    for row in rows:
        encoder.append_row(row)
    (message,) = encoder.build()
    assert ((message.key or b"").hex(), (message.value or b"").hex()) == (
        V["O4"]["kafka_key"],
        V["O4"]["kafka_value"],
    )
    assert message.rows == 3 and message.ts == V["O3"]["commit_ts"]
    small = Encoder(replace(CONFIG, max_batch_size=2))
    for row in rows:
        small.append_row(row)
    assert [m.rows for m in small.build()] == [2, 1]


def test_records_split_on_max_message_bytes_with_ticdc_arithmetic() -> None:
    row = last_row(V["O1"])  # key 54, value 74 bytes: one row adds 54 + 74 + 16 = 144
    limit = 44 + 2 * 144  # a fresh record is Length() 44; two rows fit exactly
    encoder = Encoder(replace(CONFIG, max_message_bytes=limit))
    for _ in range(3):
        encoder.append_row(row)
    messages = encoder.build()
    assert [m.rows for m in messages] == [2, 1]
    assert messages[0].length() == limit


def test_o5_type_zoo() -> None:
    _, value = Encoder(CONFIG).row_key_value(last_row(V["O5"]))
    assert value.decode() == V["O5"]["value"]


def test_o6_ddl_and_o7_resolved_bytes() -> None:
    events = Engine().run(parse_statements("USE test; CREATE TABLE t (a INT PRIMARY KEY);"))
    (ddl,) = [e for e in events if isinstance(e, DDLEvent)]
    ddl = replace(ddl, start_ts=1, commit_ts=V["O6"]["commit_ts"], query=V["O6"]["query"])
    assert ddl.action == ActionType(V["O6"]["action"])
    message = Encoder(CONFIG).encode_ddl(ddl)
    assert ((message.key or b"").hex(), (message.value or b"").hex()) == (
        V["O6"]["kafka_key"],
        V["O6"]["kafka_value"],
    )
    resolved = Encoder(CONFIG).encode_checkpoint(V["O7"]["ts"])
    assert resolved is not None
    assert ((resolved.key or b"").hex(), (resolved.value or b"").hex()) == (
        V["O7"]["kafka_key"],
        V["O7"]["kafka_value"],
    )


def test_decoder_reads_every_kind_back() -> None:
    encoder, decoder = Encoder(CONFIG), Decoder(CONFIG)
    rows = [last_row(V[name]) for name in ("O1", "O2", "O3", "O5")]
    for row in rows:
        encoder.append_row(row)
    decoded = [d for m in encoder.build() for d in decoder.decode(m.key, m.value)]
    assert [d.kind for d in decoded if isinstance(d, DecodedRow)] == [
        "insert",
        "update",
        "delete",
        "insert",
    ]
    zoo = decoded[-1]
    assert isinstance(zoo, DecodedRow) and zoo.columns is not None
    source = rows[-1]
    names = [c.name for c in source.table.columns]
    expected = dict(zip(names, source.columns or (), strict=True))
    expected.update(c_enum=2, c_set=5)  # mounted: ENUM index, SET bits
    expected["c_varchar_invalid_utf8"] = "a\ufffdb"  # Go's JSON replaced the invalid byte
    assert zoo.columns == expected
    update = decoded[1]
    assert isinstance(update, DecodedRow) and update.extra == {"rid": 1, "ptn": 115}
    assert update.pre_columns == {"id": 1, "v": "x"} and update.columns == {"id": 1, "v": "y"}
    resolved = encoder.encode_checkpoint(9)
    assert resolved is not None and decoder.decode(resolved.key, resolved.value) == [
        DecodedCheckpoint(9)
    ]
    events = Engine().run(parse_statements("USE test; CREATE TABLE t (a INT PRIMARY KEY);"))
    (ddl,) = [e for e in events if isinstance(e, DDLEvent)]
    message = encoder.encode_ddl(ddl)
    assert decoder.decode(message.key, message.value) == [
        DecodedDDL("test", "t", ddl.commit_ts, ddl.query, 3)
    ]


def test_new_architecture_key_order_and_table_order_columns() -> None:
    config = replace(CONFIG, profile="new-arch")
    key, value = Encoder(config).row_key_value(last_row(V["O2"]))
    assert key.decode() == '{"ts":449000000000000001,"scm":"test","tbl":"t2","t":1,"ptn":115}'
    assert value.decode().startswith('{"u":{"id":')
    zoo_key, _ = Encoder(config).row_key_value(last_row(V["O5"]))
    assert b'"rid"' not in zoo_key


def test_handle_key_only_deletes_need_a_handle_key() -> None:
    events = Engine().run(
        parse_statements(
            "USE test; CREATE TABLE nokey (a INT); INSERT INTO nokey VALUES (1); DELETE FROM nokey;"
        )
    )
    delete = [e for e in events if isinstance(e, RowChangedEvent)][-1]
    encoder = Encoder(replace(CONFIG, delete_only_output_handle_key_columns=True))
    encoder.append_row(delete)
    with pytest.raises(EncodeError, match="test.nokey has no handle key columns"):
        encoder.build()


def test_o8_max_message_bytes_just_holds_the_row() -> None:
    case = V["O8"]
    rows = [
        e for e in Engine().run(parse_statements(case["sql"])) if isinstance(e, RowChangedEvent)
    ]
    row = rows[0]._replace(start_ts=1, commit_ts=case["commit_ts"])
    encoder = Encoder(replace(CONFIG, max_message_bytes=case["fits"]))
    encoder.append_row(row)
    (message,) = encoder.build()
    assert message.length() == case["fits"]
    smaller = Encoder(replace(CONFIG, max_message_bytes=case["fits"] - 1))
    smaller.append_row(row)
    with pytest.raises(EncodeError, match="exceeds max-message-bytes 172"):
        smaller.build()
