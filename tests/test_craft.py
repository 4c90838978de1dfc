"""craft against TiCDC's vectors (tests/vectors/craft.json), byte for byte, and its decoder
against every truncation and a set of corruptions of real messages."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ticdc_sim.encoders import CodecConfig, DecodedCheckpoint, DecodedDDL, DecodedRow
from ticdc_sim.encoders.craft import Decoder, Encoder
from ticdc_sim.encoders.varints import uvarint, varint
from ticdc_sim.errors import ConfigError, DecodeError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mysql import MySQLType, TiDBFlag
from ticdc_sim.model.table import ColumnInfo, TableInfo

V = json.loads((Path(__file__).parent / "vectors" / "craft.json").read_text())
CONFIG = CodecConfig("craft")


def c1_event() -> RowChangedEvent:
    """The document's row example: an update of eight NOT NULL columns, every flag 0."""
    case = V["C1"]
    columns = tuple(
        ColumnInfo(i + 1, name, i, MySQLType(tp), 0, 0, TiDBFlag.NOT_NULL, "utf8mb4", "utf8mb4_bin")
        for i, (name, tp, _, _) in enumerate(case["columns"])
    )
    info = TableInfo(100, case["schema"], case["table"], columns)
    old = tuple(c[2] for c in case["columns"])
    new = tuple(c[3] for c in case["columns"])
    return RowChangedEvent(1, case["commit_ts"], info, 100, new, old)


def c5_events() -> list[RowChangedEvent]:
    case = V["C5"]
    script = "USE test; " + "; ".join(case["ddl"] + case["sql"]) + ";"
    rows = [e for e in Engine().run(parse_statements(script)) if isinstance(e, RowChangedEvent)]
    # the vector's flags are inputs to TiCDC's encoder, given without BinaryFlag on numbers
    # (TiDB sets it: numeric columns have the binary charset); so here they are text-charset
    tables: dict[int, TableInfo] = {}
    for row in rows:
        info = row.table
        tables[id(info)] = replace(
            info,
            columns=tuple(
                c if c.tp in (MySQLType.BLOB, MySQLType.VARCHAR) else replace(c, charset="utf8mb4")
                for c in info.columns
            ),
        )
    out = []
    for index, commit_ts, *physical in case["rows"]:
        changes: dict[str, Any] = {"start_ts": 1, "commit_ts": commit_ts}
        changes["table"] = tables[id(rows[index].table)]
        if physical:
            changes["physical_table_id"] = physical[0]
        out.append(rows[index]._replace(**changes))
    return out


def encoded(events: list[RowChangedEvent], config: CodecConfig = CONFIG) -> list[bytes]:
    (messages,) = Encoder(config).build_groups([events])
    return [m.value or b"" for m in messages]


def ddl(case: dict[str, Any]) -> DDLEvent:
    action = ActionType(case["type"])
    return DDLEvent(
        1, case["commit_ts"], action, case["query"], case["schema"], case["table"], None, None
    )


def test_primitives_are_protobuf_varints() -> None:
    assert uvarint(0) == b"\x00" and uvarint(300) == b"\xac\x02"
    assert uvarint((1 << 64) - 1) == b"\xff" * 9 + b"\x01"
    assert (
        varint(-1) == b"\x01"
        and varint(1) == b"\x02"
        and varint(-(1 << 63)) == b"\xff" * 9 + b"\x01"
    )


def test_c1_the_documents_row_example() -> None:
    event = c1_event()
    assert encoded([event]) == [bytes.fromhex(V["C1"]["hex"])]
    (row,) = Decoder(CONFIG).decode(None, bytes.fromhex(V["C1"]["hex"]))
    assert isinstance(row, DecodedRow)
    names = [c[0] for c in V["C1"]["columns"]]
    assert (row.kind, row.schema, row.table, row.commit_ts) == (
        "update",
        "a",
        "b",
        V["C1"]["commit_ts"],
    )
    assert row.columns == dict(zip(names, event.columns or (), strict=True))
    assert row.pre_columns == dict(zip(names, event.pre_columns or (), strict=True))


def test_c4_the_float_defect_is_not_emulated() -> None:
    # v8.2+ clobbers bytes 4..7 of each FLOAT with the next value's bytes; we write the float
    ours, theirs = bytes.fromhex(V["C1"]["hex"]), bytes.fromhex(V["C4"]["hex"])
    differ = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
    assert len(differ) == 4 and encoded([c1_event()]) == [ours]  # two floats, two bytes each


@pytest.mark.parametrize("name", ["C2", "C7"])
def test_ddl_examples(name: str) -> None:
    case = V[name]
    message = Encoder(CONFIG).encode_ddl(ddl(case))
    assert message.key is None and (message.value or b"").hex() == case["hex"]
    assert Decoder(CONFIG).decode(None, message.value) == [
        DecodedDDL(case["schema"], case["table"], case["commit_ts"], case["query"], case["type"])
    ]


@pytest.mark.parametrize("name", ["C3", "C8"])
def test_resolved_examples(name: str) -> None:
    message = Encoder(CONFIG).encode_checkpoint(V[name]["ts"])
    assert message is not None and (message.value or b"").hex() == V[name]["hex"]
    assert Decoder(CONFIG).decode(None, message.value) == [DecodedCheckpoint(V[name]["ts"])]


def test_c5_four_rows_of_two_tables_in_one_record() -> None:
    events = c5_events()
    encoder = Encoder(CONFIG)
    rows = encoder.encode_rows(events)
    estimates = [sum(r[4] for r in rows[: i + 1]) for i in range(len(rows))]
    assert estimates == V["C5"]["estimates"]  # TiCDC's size estimate after each append
    assert encoded(events) == [bytes.fromhex(V["C5"]["hex"])]
    decoded = Decoder(CONFIG).decode(None, bytes.fromhex(V["C5"]["hex"]))
    assert [(d.kind, d.table, d.commit_ts) for d in decoded if isinstance(d, DecodedRow)] == [
        ("insert", "t1", 449000000000000000),
        ("update", "t1", 449000000000000000),
        ("insert", "t2", 449000000000262145),
        ("delete", "t1", 449000000000262145),
    ]
    t2 = decoded[2]
    assert isinstance(t2, DecodedRow) and t2.extra == {"ptn": 112} and t2.keys == ("id",)
    assert t2.columns == {
        "id": 2**64 - 1,
        "i8": -128,
        "d": __import__("decimal").Decimal("-12.50"),
        "e": 2,
        "s": 5,
        "bt": 0x102,
        "y": 2024,
        "bl": b"\x00\x01\x02\xff",
        "vb": b"\x00a\xff",
        "db": -0.1,
        "n": None,
    }


def test_c6_delete_with_only_handle_key_columns() -> None:
    delete = c5_events()[3]
    config = replace(CONFIG, delete_only_output_handle_key_columns=True)
    assert encoded([delete], config) == [bytes.fromhex(V["C6"]["hex"])]
    (row,) = Decoder(config).decode(None, bytes.fromhex(V["C6"]["hex"]))
    assert isinstance(row, DecodedRow) and row.pre_columns == {"id": 3} and row.kind == "delete"


def test_batches_close_on_max_batch_size_and_after_the_estimate_passes_the_limit() -> None:
    events = c5_events()
    assert [
        len(Decoder(CONFIG).decode(None, v))
        for v in encoded(events, replace(CONFIG, max_batch_size=3))
    ] == [3, 1]
    # rows estimated 79, 120, 270 and 79: a record closes once its sum exceeds the limit, so
    # the third row goes alone though it is over the limit by itself
    sizes = [
        len(Decoder(CONFIG).decode(None, v))
        for v in encoded(events, replace(CONFIG, max_message_bytes=198))
    ]
    assert sizes == [2, 1, 1]


def test_new_architecture_has_no_craft() -> None:
    with pytest.raises(ConfigError, match="new architecture"):
        Encoder(replace(CONFIG, profile="new-arch"))


def messages() -> list[bytes]:
    return [bytes.fromhex(V[name]["hex"]) for name in ("C1", "C2", "C3", "C5", "C6", "C7")]


@pytest.mark.parametrize("message", messages(), ids=["C1", "C2", "C3", "C5", "C6", "C7"])
def test_every_truncation_is_refused_clearly(message: bytes) -> None:
    decoder = Decoder(CONFIG)
    for end in range(len(message)):
        with pytest.raises(DecodeError, match="craft"):
            decoder.decode(None, message[:end])


@pytest.mark.parametrize("message", messages(), ids=["C1", "C2", "C3", "C5", "C6", "C7"])
def test_corrupted_bytes_are_refused_or_read_never_crash(message: bytes) -> None:
    # craft has no checksum: a flipped value byte can read as another value, so a corruption
    # must either be refused with a DecodeError or decode; any other exception is a bug
    decoder, rng = Decoder(CONFIG), random.Random(15)
    refused = 0
    for _ in range(400):
        data = bytearray(message)
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        try:
            decoder.decode(None, bytes(data))
        except DecodeError as e:
            assert "craft" in str(e)
            refused += 1
    assert refused > 100  # most flips break the structure


def _rows_of_aa(count: int) -> list[RowChangedEvent]:
    script = 'USE test; create table t(a varchar(10) primary key); insert into t values ("aa");'
    (row,) = [e for e in Engine().run(parse_statements(script)) if isinstance(e, RowChangedEvent)]
    return [row] * count


def test_tiflow_max_message_bytes_256() -> None:
    # tiflow craft_encoder_test.go TestCraftMaxMessageBytes: every record Length() <= 256
    (messages,) = Encoder(replace(CONFIG, max_message_bytes=256)).build_groups(
        [_rows_of_aa(10_000)]
    )
    assert all(m.length() <= 256 for m in messages)
    assert sum(m.rows for m in messages) == 10_000


def test_tiflow_max_batch_size_64() -> None:
    # TestCraftMaxBatchSize: at most 64 rows a record, all 10000 decoded back
    config = replace(CONFIG, max_batch_size=64)
    (messages,) = Encoder(config).build_groups([_rows_of_aa(10_000)])
    counts = [len(Decoder(config).decode(None, m.value)) for m in messages]
    assert max(counts) == 64 and sum(counts) == 10_000
