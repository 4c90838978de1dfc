"""Hostile records for every decoder: truncated, corrupted, foreign and hand-made ones are a
DecodeError that says what is wrong and where (the field, the byte), never a KeyError,
IndexError, struct.error, UnicodeDecodeError or a parser's own exception (issue 25).

Exact cases first, one row each; then bounded, seeded hypothesis fuzzing of every decoder
(canal-json, open protocol, craft, maxwell, simple JSON and Avro, compressed values, handle-key-only
and claim-check messages through an upstream that answers with damaged files): valid records
mutated byte-wise and field-wise, and random bytes.
"""

from __future__ import annotations

import base64
import functools
import struct
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import lz4.frame
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support_changelog import replay
from ticdc_sim.config import Changefeed, changefeed
from ticdc_sim.encoders import (
    DecodedBootstrap,
    DecodedCheckpoint,
    DecodedDDL,
    DecodedRow,
    Decoder,
    decoder_for,
)
from ticdc_sim.encoders.simple import Encoder as SimpleEncoder
from ticdc_sim.errors import DecodeError, SimError
from ticdc_sim.sinks import Record

_U64 = struct.Struct(">Q")
TS = 449000000000000000


# -- hand-made records -------------------------------------------------------------------------


def frames(*parts: bytes) -> bytes:
    """Open-protocol framing: each part after its u64be length."""
    return b"".join(_U64.pack(len(p)) + p for p in parts)


OPEN_KEY = _U64.pack(1)  # the batch version every open-protocol key starts with
MAXWELL_KEY = _U64.pack(1)  # and every maxwell row record's key
MAXWELL = b'{"database":"test","table":"t","type":"insert","ts":1712799072,"data":{"id":1}}'
INT_COLUMN = {"t": 3, "f": 11, "v": 1}  # INT, primary key
CANAL = {
    "id": 0,
    "database": "test",
    "table": "t",
    "pkNames": ["id"],
    "isDdl": False,
    "type": "INSERT",
    "es": 1,
    "ts": 2,
    "sql": "",
    "sqlType": {"id": 4, "price": 3},
    "mysqlType": {"id": "int", "price": "decimal(8,2)"},
    "old": None,
    "data": [{"id": "1", "price": "1.50"}],
    "_tidb": {"commitTs": TS},
}
SIMPLE_SCHEMA = {
    "schema": "test",
    "table": "t",
    "tableID": 100,
    "version": 7,
    "columns": [
        {"name": "id", "dataType": {"mysqlType": "int"}, "nullable": False},
        {"name": "b", "dataType": {"mysqlType": "blob"}, "nullable": True},
    ],
    "indexes": [{"primary": True, "unique": True, "columns": ["id"]}],
}
SIMPLE_DML = {
    "version": 1,
    "database": "test",
    "table": "t",
    "tableID": 100,
    "type": "INSERT",
    "commitTs": TS,
    "buildTs": 0,
    "schemaVersion": 7,
    "data": {"id": "1", "b": "AAE="},
}
_GONE = object()  # a field left out


def changed(base: Mapping[str, Any], **changes: Any) -> bytes:
    message = {**base, **changes}
    return orjson.dumps({k: v for k, v in message.items() if v is not _GONE})


def open_row(
    key: Mapping[str, Any] | None = None, value: bytes | None = None
) -> tuple[bytes, bytes]:
    row_key = {"ts": TS, "scm": "test", "tbl": "t", "t": 1, **(key or {})}
    row_value = value if value is not None else orjson.dumps({"u": {"id": INT_COLUMN}})
    return OPEN_KEY + frames(orjson.dumps(row_key)), frames(row_value)


def open_column(column: Mapping[str, Any]) -> tuple[bytes, bytes]:
    return open_row(value=orjson.dumps({"u": {"c": column}}))


URIS = {
    "canal-json": "memory://?protocol=canal-json&enable-tidb-extension=true",
    "canal-json-snappy": "memory://?protocol=canal-json&enable-tidb-extension=true"
    "&large-message-handle-compression=snappy",
    "open-protocol": "memory://?protocol=open-protocol",
    "open-protocol-lz4": "memory://?protocol=open-protocol&large-message-handle-compression=lz4",
    "craft": "memory://?protocol=craft",
    "maxwell": "memory://?protocol=maxwell",
    "canal": "memory://?protocol=canal",
    "simple": "memory://?protocol=simple",
    "simple-avro": "memory://?protocol=simple&encoding-format=avro",
    "debezium": "memory://?protocol=debezium",
}
# an lz4 frame header that claims a terabyte of content (python-lz4 allocates what it claims)
LZ4_TERABYTE = lz4.frame.LZ4FrameCompressor().begin(source_size=1 << 40) + bytes(8)


def _avro_with_trailing_bytes() -> bytes:
    encoder = SimpleEncoder(changefeed(URIS["simple-avro"]).codec)
    message = encoder.encode_checkpoint(TS)
    assert message is not None and message.value is not None
    return message.value + b"\x00\x00"


DEBEZIUM_KEY = b'{"payload":{"id":1}}'
DEBEZIUM_ROW = {
    "payload": {
        "source": {"db": "test", "table": "t", "commit_ts": TS},
        "ts_ms": 1,
        "op": "c",
        "before": None,
        "after": {"id": 1},
    },
    "schema": {"fields": [{"fields": [{"type": "int32", "field": "id"}]}]},
}


def debezium(**payload: Any) -> bytes:
    """DEBEZIUM_ROW with payload fields replaced (`_GONE` removes one)."""
    row = {**DEBEZIUM_ROW["payload"], **payload}
    body = {k: v for k, v in row.items() if v is not _GONE}
    return orjson.dumps({**DEBEZIUM_ROW, "payload": body})


BAD_RECORDS = [
    # debezium
    ("debezium", DEBEZIUM_KEY, b"{", "not JSON at byte 1 (unexpected end of data)"),
    ("debezium", DEBEZIUM_KEY, debezium(op="r"), "`payload.op` 'r' is not c, u, d or m"),
    ("debezium", DEBEZIUM_KEY, debezium(source=_GONE), "`payload.source` is missing"),
    ("debezium", None, debezium(), "a row's record has no key"),
    ("debezium", b"[", debezium(), "not JSON at byte 1 of the key (unexpected end of data)"),
    ("debezium", DEBEZIUM_KEY, debezium(before={"id": 1}), "`payload.before` is not null"),
    (
        "debezium",
        DEBEZIUM_KEY,
        debezium(after={"id": "1"}),
        "`payload.after.id` '1' is no Debezium value (a str)",
    ),
    (
        "debezium",
        DEBEZIUM_KEY,
        debezium(after={"ghost": 1}),
        "column 'ghost' of `payload.after` has no schema",
    ),
    # canal-json
    ("canal-json", None, b"", "not JSON at byte 0 (Input is a zero-length, empty document)"),
    ("canal-json", None, b"\x89PNG\r\n", "not JSON at byte 0 (byte 0x89 is not UTF-8)"),
    ("canal-json", None, b"[1, 2]", "the message is an array, not an object"),
    (
        "canal-json",
        None,
        changed(CANAL) + b"}",
        "not JSON at byte 271 (unexpected content after document)",
    ),
    ("canal-json", None, changed(CANAL, type=_GONE), "`type` is missing"),
    ("canal-json", None, changed(CANAL, type=3), "`type` is an integer, not a string"),
    (
        "canal-json",
        None,
        changed(CANAL, type="UPSERT"),
        "`type` 'UPSERT' is not INSERT, UPDATE, DELETE or a DDL",
    ),
    ("canal-json", None, changed(CANAL, isDdl="false"), "`isDdl` is a string, not a boolean"),
    (
        "canal-json",
        None,
        changed(CANAL, data=[{"id": "1"}, {"id": "2"}]),
        "`data` has 2 rows; canal-json writes one",
    ),
    ("canal-json", None, changed(CANAL, data=None), "`data` is null"),
    ("canal-json", None, changed(CANAL, data=["id=1"]), "data[0] is a string, not an object"),
    (
        "canal-json",
        None,
        changed(CANAL, data=[{"id": "1", "ghost": "x"}]),
        "column 'ghost' of `data` has no `mysqlType`",
    ),
    (
        "canal-json",
        None,
        changed(CANAL, data=[{"id": 1}]),
        "`data[0].id` is an integer, not a string",
    ),
    (
        "canal-json",
        None,
        changed(CANAL, data=[{"id": "one"}]),
        "`data[0].id` 'one' is no int value (invalid literal for int() with base 10: 'one')",
    ),
    (
        "canal-json",
        None,
        changed(CANAL, data=[{"id": "1", "price": "1.5.0"}]),
        "`data[0].price` '1.5.0' is no decimal(8,2) value (not a number)",
    ),
    (
        "canal-json",
        None,
        changed(CANAL, mysqlType={"id": "int", "b": "varbinary(4)"}, data=[{"b": "\u20ac"}]),
        "`data[0].b` '€' is no varbinary(4) value ('latin-1' codec can't encode character"
        " '\\u20ac' in position 0: ordinal not in range(256))",
    ),
    ("canal-json", None, changed(CANAL, _tidb=[1]), "`_tidb` is an array, not an object"),
    (
        "canal-json",
        None,
        changed(CANAL, _tidb={"commitTs": -1}),
        "`_tidb.commitTs` -1 is not a TSO",
    ),
    (
        "canal-json",
        None,
        changed(CANAL, type="TIDB_WATERMARK", _tidb={}),
        "`_tidb.watermarkTs` is missing",
    ),
    ("canal-json", None, changed(CANAL, type="UPDATE"), "`old` is null"),
    (
        "canal-json-snappy",
        None,
        changed(CANAL),
        "the value is not snappy-compressed (snappy: corrupt input (expected valid offset but"
        " got offset 25705; dst position: 0))",
    ),
    # open protocol
    ("open-protocol", None, b"", "the key does not start with the batch version 1"),
    ("open-protocol", b"\x00\x00", b"", "the key does not start with the batch version 1"),
    (
        "open-protocol",
        _U64.pack(2) + open_row()[0][8:],
        open_row()[1],
        "the key does not start with the batch version 1",
    ),
    (
        "open-protocol",
        OPEN_KEY + b"\x00\x00\x00",
        b"",
        "3 bytes at byte 8 of the key, too few for a length",
    ),
    (
        "open-protocol",
        OPEN_KEY + _U64.pack(1 << 40) + b"{}",
        b"",
        "the key's event at byte 8 claims 1099511627776 bytes, 2 are left",
    ),
    (
        "open-protocol",
        open_row()[0] + open_row()[0][8:],
        open_row()[1],
        "2 events in the key, 1 in the value",
    ),
    (
        "open-protocol",
        OPEN_KEY + frames(b"{ts:1}"),
        open_row()[1],
        "not JSON at byte 1 of key[0] (unexpected character, expected a string key)",
    ),
    (
        "open-protocol",
        open_row({"t": 9})[0],
        open_row()[1],
        "`key[0].t` 9 is not 1 (row), 2 (DDL) or 3 (resolved)",
    ),
    ("open-protocol", *open_row({"ts": "1"}), "`key[0].ts` is a string, not an integer"),
    ("open-protocol", *open_row(value=b"{}"), "`value[0]` has no columns: none of u, p or d"),
    ("open-protocol", open_row({"t": 2})[0], frames(b'{"t": 3}'), "`value[0].q` is missing"),
    (
        "open-protocol",
        *open_column({"t": 999, "f": 0, "v": 1}),
        "`value[0].u.c.t` 999 is not a MySQL type code",
    ),
    ("open-protocol", *open_column({"t": 3, "f": 0}), "`value[0].u.c.v` is missing"),
    (
        "open-protocol",
        *open_column({"t": 15, "f": 1, "v": [None]}),
        "`value[0].u.c.v` is an array, not an integer or a number or a string",
    ),
    (
        "open-protocol",
        *open_column({"t": 252, "f": 1, "v": "!!"}),
        "`value[0].u.c.v` '!!' is no BLOB value (Only base64 data is allowed)",
    ),
    (
        "open-protocol",
        *open_column({"t": 15, "f": 1, "v": "a\\"}),
        "`value[0].u.c.v` 'a\\\\' is no VARCHAR value (string index out of range)",
    ),
    (
        "open-protocol",
        *open_column({"t": 15, "f": 1, "v": "\\q"}),
        "`value[0].u.c.v` '\\\\q' is no VARCHAR value (bad escape \\q in a Go quoted string)",
    ),
    (
        "open-protocol-lz4",
        open_row()[0],
        frames(LZ4_TERABYTE),
        "the value is not lz4-compressed (it claims more than memory holds, MemoryError)",
    ),
    # an lz4-compressed value read as uncompressed: said so (was "not JSON at byte 6")
    *[
        (
            variant,
            open_row()[0] if variant == "open-protocol" else None,
            (frames if variant == "open-protocol" else bytes)(lz4.frame.compress(b"{}")),
            "the value is an lz4 frame (written with large-message-handle-compression lz4?"
            " decode needs it too, in the URI or --config)",
        )
        for variant in ("canal-json", "open-protocol", "simple")
    ],
    # canal (protobuf)
    ("canal", None, b"", "the packet has no `version`"),
    ("canal", None, b"\x10\x02\x18\x07", "the packet `version` is 2, TiCDC writes 1"),
    ("canal", None, b"\x10\x01\x18\x03", "the packet `type` is 3, TiCDC writes 7"),
    ("canal", None, b"\x10\x01\x18\x07", "the packet holds no entries"),
    (
        "canal",
        None,
        b"\x10\x01\x18\x07\x2a\x03\x12\x01\xff",
        "entry 0 does not parse as Entry (wire format was corrupt)",
    ),
    (
        "canal",
        None,
        changed(CANAL),
        "the record does not parse as Packet (wire format was corrupt)",
    ),
    # craft
    ("craft", None, b"", "0 bytes"),
    ("craft", None, b"\x01", "1 byte"),
    (
        "craft",
        None,
        changed(CANAL),
        "meta size table [-51, -34, -5, -67, -50, -103, -53, -36, -7, 10, -43, 12,..., expected"
        " [header size, dictionary size] at byte 258",
    ),
    # maxwell
    ("maxwell", MAXWELL_KEY, b"", "a row record without rows"),
    ("maxwell", MAXWELL_KEY, None, "a record without a value"),
    ("maxwell", MAXWELL_KEY, b"\xff", "byte 0 is not UTF-8"),
    (
        "maxwell",
        MAXWELL_KEY,
        MAXWELL + b'{"a":"\xc3\xa9"}x',
        "row 2 is not JSON at byte 89 (Expecting value)",
    ),
    ("maxwell", MAXWELL_KEY, MAXWELL + b"[1]", "row 1 is an array, not an object"),
    ("maxwell", MAXWELL_KEY, b"[" * 100000, "row 0 nests too deep"),
    (
        "maxwell",
        MAXWELL_KEY,
        MAXWELL.replace(b"insert", b"upsert"),
        "`row 0.type` 'upsert' is not insert, update or delete",
    ),
    (
        "maxwell",
        MAXWELL_KEY,
        MAXWELL.replace(b'"data"', b'"old"'),
        "row 0: an insert needs `data` and has no `old`",
    ),
    (
        "maxwell",
        MAXWELL_KEY,
        MAXWELL.replace(b"1712799072", b'"1"'),
        "`row 0.ts` is a string, not an integer",
    ),
    (
        "maxwell",
        MAXWELL_KEY,
        MAXWELL.replace(b'"insert"', b'"update"').replace(b"}}", b'},"old":{"x":2}}'),
        "`row 0.old` names column 'x', which `data` lacks",
    ),
    ("maxwell", None, b"{}", "a record without a key"),
    ("maxwell", b'{"ts":1,"t":1}', b"{}", "`key.t` 1 is not 2 (DDL)"),
    (
        "maxwell",
        b'{"ts":1,"t":2}',
        b'{"type":"table-create","database":"d","table":"t","old":{},"def":{},"ts":2,"sql":"x"}',
        "`ts` 2 is not the key's 1",
    ),
    # simple
    ("simple", None, None, "no value"),
    ("simple", None, b'"WATERMARK"', "the message is a string, not an object"),
    (
        "simple",
        None,
        orjson.dumps({"type": "BOOTSTRAP", "tableSchema": {**SIMPLE_SCHEMA, "columns": [{}]}}),
        "`tableSchema.columns[0].name` is missing",
    ),
    (
        "simple",
        None,
        orjson.dumps(
            {"type": "BOOTSTRAP", "tableSchema": {**SIMPLE_SCHEMA, "indexes": [{"columns": ["x"]}]}}
        ),
        "`tableSchema.indexes[0]` names columns ['x'] the table does not have",
    ),
    (
        "simple",
        None,
        changed(SIMPLE_DML, data={"id": "1", "ghost": "x"}),
        "column 'ghost' of `data` is not in test.t's schema version 7",
    ),
    (
        "simple",
        None,
        changed(SIMPLE_DML, data={"id": "1", "b": "not base64!"}),
        "`data.b` 'not base64!' is no blob value (Only base64 data is allowed)",
    ),
    (
        "simple",
        None,
        changed(SIMPLE_DML, checksum={"current": "x", "previous": 0}),
        "`checksum.current` is a string, not an integer",
    ),
    ("simple", None, changed(SIMPLE_DML, commitTs=1.5), "`commitTs` is a number, not an integer"),
    (
        "simple-avro",
        None,
        bytes(range(7, 40)),
        "unreadable at byte 33 (EOFError: 'Expected -7 bytes, read 26')",
    ),
    ("simple-avro", None, _avro_with_trailing_bytes(), "2 bytes left over after the message's 19"),
    ("simple-avro", None, b"\x05\xcd\xeaq", "an Avro UnsignedBigint"),  # another top-level type
    # the other encoding-format: said so (was only where it stopped being JSON or Avro)
    (
        "simple",
        None,
        _avro_with_trailing_bytes()[:-2],
        "not JSON at byte 4 (byte 0x80 is not UTF-8) (it reads as"
        " encoding-format avro: decode needs the writer's, in the URI or --config)",
    ),
    (
        "simple-avro",
        None,
        orjson.dumps({"type": "WATERMARK", "commitTs": TS}),
        "unreadable at byte 1 (IndexError: 'list index out of range') (it reads as"
        " encoding-format json: decode needs the writer's, in the URI or --config)",
    ),
]


def _label(variant: str) -> str:
    protocol = variant.removesuffix("-snappy").removesuffix("-lz4")
    if variant == "simple-avro":
        return "not a simple Avro message"
    if protocol == "simple":
        return "not a simple JSON message"
    return f"not {'an' if protocol == 'open-protocol' else 'a'} {protocol} message"


def _decoder(variant: str, upstream: Any = None) -> Decoder:
    decoder = decoder_for(changefeed(URIS[variant]).codec, upstream)
    if variant == "simple":  # the table schema the DML rows are read with
        decoder.decode(None, orjson.dumps({"type": "BOOTSTRAP", "tableSchema": SIMPLE_SCHEMA}))
    return decoder


@pytest.mark.parametrize(
    ("variant", "key", "value", "message"),
    [pytest.param(*case, id=f"{case[0]}:{i}") for i, case in enumerate(BAD_RECORDS)],
)
def test_bad_records(variant: str, key: bytes | None, value: bytes | None, message: str) -> None:
    with pytest.raises(DecodeError) as refused:
        _decoder(variant).decode(key, value)
    assert str(refused.value) == f"{_label(variant)}: {message}"


def test_a_simple_dml_before_its_schema_says_so() -> None:
    decoder = decoder_for(changefeed(URIS["simple"]).codec)
    with pytest.raises(DecodeError) as refused:
        decoder.decode(None, changed(SIMPLE_DML))
    assert str(refused.value) == (
        "simple DML of test.t at schema version 7 before any BOOTSTRAP or DDL message with that"
        " table schema"
    )


def test_learning_from_garbage_teaches_nothing_and_raises_nothing() -> None:
    for variant in ("simple", "simple-avro"):
        decoder = decoder_for(changefeed(URIS[variant]).codec)
        for value in (b"", b"\x02\x04garbage", b'{"tableSchema": 1}', b"\xff" * 40, None):
            decoder.learn(value)  # type: ignore[attr-defined]
        assert decoder.schemas == {}  # type: ignore[attr-defined]


# -- claim-check and handle-key-only messages through an upstream ------------------------------


class HostileUpstream:
    """An upstream whose claim-check file and rows are whatever the test says: `row` for
    every lookup when `has_rows`."""

    def __init__(self, claim: bytes = b"", has_rows: bool = False, row: Any = None) -> None:
        self.claim, self.has_rows, self.row = claim, has_rows, row
        self.read: list[str] = []

    def read_claim(self, location: str) -> bytes:
        self.read.append(location)
        return self.claim

    def row_at(self, schema: str, table: str, ts: int, key: Mapping[str, Any]) -> Any:
        return self.row


CLAIMED = [
    (
        "canal-json",
        changed(CANAL, _tidb={"commitTs": TS, "claimCheckLocation": "file:///c/x\x00y"}),
    ),
    ("simple", changed(SIMPLE_DML, claimCheckLocation="file:///c/..")),
    ("open-protocol", OPEN_KEY + frames(orjson.dumps({"ts": TS, "t": 1, "ccl": "s3://b/"}))),
]


@pytest.mark.parametrize(("variant", "record"), CLAIMED, ids=[c[0] for c in CLAIMED])
def test_a_claim_check_location_must_name_a_file(variant: str, record: bytes) -> None:
    upstream = HostileUpstream()
    key, value = (record, open_row()[1]) if variant == "open-protocol" else (None, record)
    with pytest.raises(DecodeError) as refused:
        _decoder(variant, upstream).decode(key, value)
    named = {"canal-json": "'file:///c/x\\x00y'", "simple": "'file:///c/..'"}
    location = named.get(variant, "'s3://b/'")
    assert str(refused.value) == f"{_label(variant)}: claim-check location {location} names no file"
    assert upstream.read == []  # nothing was read for it


LOCATED = {"commitTs": TS, "claimCheckLocation": "file:///c/f.json"}


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        (b"", "not JSON at byte 0 (Input is a zero-length, empty document)"),
        (b"[]", "the file is an array, not an object"),
        (b'{"key": null}', "`value` is missing"),
        (b'{"key": 3, "value": ""}', "`key` is an integer, not a string"),
        (
            b'{"key": null, "value": "%%"}',
            "`value` '%%' is no base64 value (Only base64 data is allowed)",
        ),
    ],
)
def test_a_damaged_claim_check_file_is_said(claim: bytes, message: str) -> None:
    with pytest.raises(DecodeError) as refused:
        _decoder("canal-json", HostileUpstream(claim)).decode(None, changed(CANAL, _tidb=LOCATED))
    assert str(refused.value) == f"not a claim-check file: {message}"


def test_a_claim_check_file_that_names_another_is_refused() -> None:
    inner = changed(CANAL, _tidb=LOCATED)
    claim = orjson.dumps({"key": None, "value": base64.b64encode(inner).decode()})
    with pytest.raises(DecodeError) as refused:
        _decoder("canal-json", HostileUpstream(claim)).decode(None, inner)
    assert str(refused.value) == (
        "claim-check file 'file:///c/f.json' names another one, 'file:///c/f.json'"
    )


def test_a_handle_key_only_row_not_upstream_is_said() -> None:
    only_key = changed(CANAL, _tidb={"commitTs": TS, "onlyHandleKey": True})
    with pytest.raises(DecodeError) as refused:
        _decoder("canal-json", HostileUpstream(has_rows=True)).decode(None, only_key)
    assert str(refused.value) == (
        f"handle-key-only insert of test.t at commit ts {TS}: no row"
        f" {{'id': 1, 'price': Decimal('1.50')}} upstream at ts {TS}"
    )


# -- fuzzing ------------------------------------------------------------------------------------

SCRIPT = """CREATE TABLE t (id INT PRIMARY KEY, u BIGINT UNSIGNED, f FLOAT, d DOUBLE,
  dec DECIMAL(10,2), s VARCHAR(20), b VARBINARY(10), bl BLOB, tx TEXT, e ENUM('a','b'),
  st SET('x','y'), bt BIT(8), y YEAR, dt DATETIME, ts TIMESTAMP, j JSON, tm TIME, da DATE);
INSERT INTO t VALUES (1, 18446744073709551615, 1.5, 2.5, 3.25, 'héllo', X'00ff', X'0102',
  'text', 'b', 'x,y', b'101', 2024, '2024-01-02 03:04:05', '2024-01-02 03:04:05',
  '{"a": [1, 2]}', '12:34:56', '2024-01-02');
UPDATE t SET s = 'bye', dec = -1.5 WHERE id = 1;
DELETE FROM t WHERE id = 1;
ALTER TABLE t ADD COLUMN extra INT;
INSERT INTO t (id, s) VALUES (2, NULL);
INSERT INTO t (id, tx) VALUES (3, REPEAT('z', 7000));
"""
# maxwell: TiCDC's encoder panics on an UPDATE of a binary column non-NULL before and after
SCRIPTS = {"maxwell": SCRIPT.replace("SET s = 'bye',", "SET s = 'bye', b = NULL, bl = NULL,")}
_CANAL = "protocol=canal-json&enable-tidb-extension=true"
# variant -> (URI parameters, large-message-handle option): every decoder and large-message path
VARIANTS: dict[str, tuple[str, str]] = {
    "canal-json": (_CANAL, "none"),
    "canal-json-snappy": (f"{_CANAL}&large-message-handle-compression=snappy", "none"),
    "canal-json-handle-key-only": (f"{_CANAL}&max-message-bytes=2000", "handle-key-only"),
    "canal-json-claim-check": (f"{_CANAL}&max-message-bytes=2000", "claim-check"),
    "open-protocol": ("protocol=open-protocol", "none"),
    "open-protocol-lz4": ("protocol=open-protocol&large-message-handle-compression=lz4", "none"),
    "open-protocol-handle-key-only": (
        "protocol=open-protocol&max-message-bytes=2000",
        "handle-key-only",
    ),
    "open-protocol-claim-check": ("protocol=open-protocol&max-message-bytes=2000", "claim-check"),
    "craft": ("protocol=craft", "none"),
    "maxwell": ("protocol=maxwell", "none"),
    "canal": ("protocol=canal", "none"),
    "canal-handle-key-deletes": (
        "protocol=canal&delete-only-output-handle-key-columns=true",
        "none",
    ),
    "simple": ("protocol=simple", "none"),
    "simple-avro": ("protocol=simple&encoding-format=avro", "none"),
    "simple-avro-lz4": (
        "protocol=simple&encoding-format=avro&large-message-handle-compression=lz4",
        "none",
    ),
    "simple-handle-key-only": ("protocol=simple&max-message-bytes=6000", "handle-key-only"),
    "simple-claim-check": ("protocol=simple&max-message-bytes=6000", "claim-check"),
    "debezium": ("protocol=debezium&enable-tidb-extension=true", "none"),
    "debezium-no-schema-lz4": (
        "protocol=debezium&enable-tidb-extension=true&debezium-disable-schema=true"
        "&large-message-handle-compression=lz4",
        "none",
    ),
    "debezium-new-arch": (
        "protocol=debezium&enable-tidb-extension=true&ticdc-version=new-arch"
        "&debezium-include-start-ts=true",
        "none",
    ),
}
WITHOUT_CHECKPOINTS = ("canal", "canal-handle-key-deletes", "maxwell")  # they send none
JSON_VARIANTS = (
    "canal-json",
    "canal-json-handle-key-only",
    "simple",
    "simple-handle-key-only",
    "debezium",
    "debezium-new-arch",
)


@functools.cache
def recorded(
    variant: str, storage: Path
) -> tuple[Changefeed, tuple[Record, ...], tuple[bytes, ...]]:
    """The changefeed, the records it sent for SCRIPT, and its claim-check files."""
    params, option = VARIANTS[variant]
    toml = None
    if option != "none":
        toml = (
            f"[sink.kafka-config.large-message-handle]\nlarge-message-handle-option = '{option}'\n"
        )
        if option == "claim-check":
            toml += f"claim-check-storage-uri = '{(storage / variant).as_uri()}'\n"
    uri = f"memory://?{params}&partition-num=1"
    run = replay(SCRIPTS.get(variant, SCRIPT), uri, toml)
    claims = tuple(p.read_bytes() for p in sorted((storage / variant).glob("*.json")))
    assert option != "claim-check" or claims, "the script makes a claim-check file"
    return changefeed(uri, toml), tuple(run.sink.records()), claims


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("claims")


DECODED = (DecodedRow, DecodedDDL, DecodedCheckpoint, DecodedBootstrap)


def decodes_or_refuses(
    feed: Changefeed,
    records: tuple[Record, ...],
    key: bytes | None,
    value: bytes | None,
    upstream: Any = None,
) -> None:
    """The one promise: events, or the package's own error with a message; nothing else."""
    decoder = decoder_for(feed.codec, upstream)
    learn: Callable[[bytes | None], None] | None = getattr(decoder, "learn", None)
    if learn is not None:  # simple: every table schema known, so only the damage can fail
        for record in records:
            learn(record.value)
    try:
        events = decoder.decode(key, value)
    except SimError as e:
        assert str(e) and "Traceback" not in str(e)
        return
    assert all(isinstance(event, DECODED) for event in events)


def _mutated(data: bytes, draw: Any) -> bytes:
    """`data` with a few bytes flipped, cut, inserted, deleted or replaced."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "delete", "tail"]))
        at = draw(st.integers(0, len(out)))
        if kind == "flip" and out:
            out[min(at, len(out) - 1)] ^= 1 << draw(st.integers(0, 7))
        elif kind == "cut":
            del out[at:]
        elif kind == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del out[at : at + draw(st.integers(1, 8))]
        else:
            out[at:] = draw(st.binary(max_size=16))
    return bytes(out)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=5,
)


def _json_mutated(document: Any, draw: Any) -> Any:
    """`document` with one field (at any depth) removed or replaced by another JSON value."""
    places: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node)
            if isinstance(node, list)
            else ()
        )
        for key, child in items:
            places.append((node, key))
            walk(child)

    walk(document)
    if not places:
        return draw(JSON_VALUES)
    parent, key = draw(st.sampled_from(places))
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[key]
    else:
        parent[key] = draw(JSON_VALUES)
    return document


FUZZ = settings(
    max_examples=60,
    derandomize=True,  # seeded by the test: the same cases every run
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("variant", VARIANTS)
@FUZZ
@given(data=st.data())
def test_mutated_records(variant: str, storage: Path, data: st.DataObject) -> None:
    feed, records, claims = recorded(variant, storage)
    record = data.draw(st.sampled_from(records))
    key, value = record.key, record.value
    if key is not None and data.draw(st.booleans()):
        key = _mutated(key, data.draw)
    else:
        value = _mutated(value or b"", data.draw)
    upstream = _upstream(claims, data.draw) if claims or "handle-key-only" in variant else None
    decodes_or_refuses(feed, records, key, value, upstream)


def _upstream(claims: tuple[bytes, ...], draw: Any) -> HostileUpstream:
    """Claim-check files, whole or damaged, and rows that are there or not."""
    claim = draw(st.sampled_from(claims)) if claims else b""
    if claim and draw(st.booleans()):
        claim = _mutated(claim, draw)
    row = draw(
        st.none() | st.dictionaries(st.sampled_from(["id", "s", "x"]), JSON_VALUES, max_size=3)
    )
    return HostileUpstream(claim, has_rows=draw(st.booleans()), row=row)


@pytest.mark.parametrize("variant", JSON_VARIANTS)
@FUZZ
@given(data=st.data())
def test_json_records_with_a_field_changed(
    variant: str, storage: Path, data: st.DataObject
) -> None:
    feed, records, claims = recorded(variant, storage)
    record = data.draw(st.sampled_from([r for r in records if r.value]))
    document = _json_mutated(orjson.loads(record.value or b""), data.draw)
    value = orjson.dumps(document, option=orjson.OPT_NON_STR_KEYS)
    decodes_or_refuses(feed, records, record.key, value, _upstream(claims, data.draw))


@FUZZ
@given(data=st.data())
def test_open_protocol_events_with_a_field_changed(storage: Path, data: st.DataObject) -> None:
    feed, records, _ = recorded("open-protocol", storage)
    record = data.draw(st.sampled_from(records))
    keys = _frames_of(record.key or b"", 8)
    values = _frames_of(record.value or b"", 0)
    side = data.draw(st.sampled_from(["key", "value"]))
    events = keys if side == "key" else values
    i = data.draw(st.integers(0, len(events) - 1))
    events[i] = orjson.dumps(_json_mutated(orjson.loads(events[i] or b"null"), data.draw))
    decodes_or_refuses(feed, records, OPEN_KEY + frames(*keys), frames(*values))


def _frames_of(data: bytes, pos: int) -> list[bytes]:
    out = []
    while pos < len(data):
        (size,) = _U64.unpack_from(data, pos)
        out.append(data[pos + 8 : pos + 8 + size])
        pos += 8 + size
    return out


@pytest.mark.parametrize("variant", VARIANTS)
@FUZZ
@given(key=st.none() | st.binary(max_size=24), value=st.none() | st.binary(max_size=200))
def test_random_bytes(variant: str, storage: Path, key: bytes | None, value: bytes | None) -> None:
    feed, records, _ = recorded(variant, storage)
    if variant.startswith("open-protocol") and key is not None:
        key = OPEN_KEY + key  # past the version check, into the framing
    decodes_or_refuses(feed, records, key, value)


def test_the_fuzzed_records_are_the_real_ones(storage: Path) -> None:
    # what the fuzzing starts from decodes whole: the damage, not the base, is what fails
    for variant in VARIANTS:
        feed, records, claims = recorded(variant, storage)
        decoder = decoder_for(feed.codec)
        kinds = {type(e).__name__ for r in records for e in decoder.decode(r.key, r.value)}
        checkpoints = set() if variant in WITHOUT_CHECKPOINTS else {"DecodedCheckpoint"}
        assert {"DecodedRow", "DecodedDDL", *checkpoints} <= kinds, variant
        assert bool(claims) == variant.endswith("claim-check"), variant


# -- the decode command ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "key", "value", "message"),
    [
        (
            "canal-json",
            None,
            b'{"type": 3}',
            "not a canal-json message: `type` is an integer, not a string",
        ),
        (
            "open-protocol",
            b"\x00" * 8,
            b"",
            "not an open-protocol message: the key does not start with the batch version 1",
        ),
        ("craft", None, b"\xff", "not a craft message: 1 byte"),
        ("canal", None, b"\x10\x01\x18\x07", "not a canal message: the packet holds no entries"),
        (
            "simple",
            None,
            b"\xc3\x28",
            "not a simple JSON message: not JSON at byte 0 (byte 0xc3 is not UTF-8)",
        ),
    ],
)
def test_the_decode_command_names_the_record_it_cannot_read(
    tmp_path: Path, protocol: str, key: bytes | None, value: bytes, message: str
) -> None:
    from typer.testing import CliRunner

    from ticdc_sim.cli import app

    partition = tmp_path / "ticdc" / "partition-0.jsonl"
    partition.parent.mkdir()
    line = {
        "offset": 0,
        "key": None if key is None else base64.b64encode(key).decode(),
        "value": base64.b64encode(value).decode(),
        "headers": {},
    }
    partition.write_bytes(orjson.dumps(line) + b"\n")
    result = CliRunner().invoke(app, ["decode", f"jsonl://{tmp_path}?protocol={protocol}"])
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == f"error: {partition} offset 0: {message}\n"


# -- csv: what the storage sink writes, cut and flipped -----------------------------------------


def _csv_records(options: dict[str, Any]) -> list[tuple[bytes | None, bytes]]:
    """The schema files, rows and checkpoint of SCRIPT, as the csv encoder makes them."""
    from ticdc_sim.encoders import CodecConfig, encoder_for
    from ticdc_sim.generator.sql.engine import Engine
    from ticdc_sim.generator.sql.script import parse_statements
    from ticdc_sim.model.events import DDLEvent

    encoder = encoder_for(CodecConfig("csv", **options))
    out: list[tuple[bytes | None, bytes]] = []
    for event in Engine().run(parse_statements(SCRIPT)):
        if isinstance(event, DDLEvent):
            message = encoder.encode_ddl(event)
        else:
            encoder.append_row(event)
            (message,) = encoder.build()
        assert message.value is not None
        out.append((message.key, message.value))
    checkpoint = encoder.encode_checkpoint(TS)
    assert checkpoint is not None and checkpoint.value is not None
    return [*out, (checkpoint.key, checkpoint.value)]


CSV_OPTIONS = {
    "csv": {"csv_include_commit_ts": True, "csv_output_old_value": True},
    "csv-escaped": {"csv_quote": "", "csv_delimiter": "|@|", "csv_output_handle_key": True},
}


@pytest.mark.parametrize("variant", CSV_OPTIONS)
def test_csv_every_prefix_and_flipped_byte_is_events_or_one_clear_error(variant: str) -> None:
    from ticdc_sim.encoders import CodecConfig

    config = CodecConfig("csv", **CSV_OPTIONS[variant])
    records = _csv_records(CSV_OPTIONS[variant])
    schemas = [(k, v) for k, v in records if k is not None and k.endswith(b".json")]
    checked = 0
    for key, value in records:
        cuts = range(0, len(value), max(1, len(value) // 256))  # every byte of short ones
        damaged = {value[:n] for n in cuts}
        damaged |= {value[:i] + bytes([value[i] ^ 0x21]) + value[i + 1 :] for i in cuts}
        for data in damaged:
            decoder = decoder_for(config)
            for schema_key, schema in schemas:  # every table known: only the damage can fail
                decoder.decode(schema_key, schema)
            try:
                events = decoder.decode(key, data)
            except DecodeError as e:
                assert str(e).startswith(("not a csv message: ", "not a storage ")), str(e)
                checked += 1
                continue
            assert all(isinstance(event, DECODED) for event in events)
            checked += 1
    assert checked > 1000


# -- avro: records through the registry their schema ids name ----------------------------------

AVRO_URI = (
    "memory://?protocol=avro&enable-tidb-extension=true&avro-enable-watermark=true&partition-num=1"
)


# the string modes and row checksums, which the decoder verifies
AVRO_CHECKSUMS = (
    AVRO_URI + "&avro-decimal-handling-mode=string&avro-bigint-unsigned-handling-mode=string",
    "[integrity]\nintegrity-check-level = 'correctness'\n",
)


@functools.cache
def _avro_run(uri: str = AVRO_URI, toml: str | None = None) -> tuple[Decoder, tuple[Record, ...]]:
    run = replay(SCRIPT, uri, toml)
    decoder = decoder_for(changefeed(uri, toml).codec, registry=run.pipeline.registry)
    return decoder, tuple(run.sink.records())


AVRO_BAD = [
    (None, None, "not an avro message: a record with neither key nor value"),
    (
        None,
        b"",
        "not an avro message: the value does not start with the magic byte 0 and a"
        " 4-byte schema id",
    ),  # fmt: skip
    (
        None,
        b"\x00\x00\x00\x00",
        "not an avro message: the value does not start with the magic"
        " byte 0 and a 4-byte schema id",
    ),  # fmt: skip
    (None, b"\x00\x00\x00\x01\x00", "the value names schema 256: schema 256 not found"),
    (None, b"\x02\x00", "not an avro message: a checkpoint is 0x02 and an 8-byte ts, not 2 bytes"),
    (None, b"\x01{", "not an avro message: not JSON at byte 1 of the DDL (unexpected end of data)"),
    (None, b'\x01{"query":"x"}', "not an avro message: `schema` is missing"),
    (
        b"\x00\x00\x00\x00\x01\x81\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",
        None,
        "not an avro message: the key has a number longer than 10 bytes at byte 15",
    ),
    (b"\x00\x00\x00\x00\x01", None, "not an avro message: the key ends at byte 5, inside a number"),
    (
        b"\x00\x00\x00\x00\x01\x02\x00",
        None,
        "not an avro message: the key has 1 bytes after its record",
    ),  # fmt: skip
]


@pytest.mark.parametrize(("key", "value", "message"), AVRO_BAD)
def test_bad_avro_records(key: bytes | None, value: bytes | None, message: str) -> None:
    decoder, _ = _avro_run()
    with pytest.raises(DecodeError) as refused:
        decoder.decode(key, value)
    assert str(refused.value) == message


# the new architecture's: old rows as `_ticdc_before` records, or deletes as 0x03 watermarks
AVRO_NEW_ARCH = AVRO_URI + "&ticdc-version=new-arch"
AVRO_BEFORE = AVRO_NEW_ARCH + "&avro-include-before-value=true"
AVRO_NEW_ARCH_BAD = [
    (
        b"\x00\x00\x00\x00\x01\x02",
        b"\x03\x00",
        "not an avro message: a watermark delete is 0x03 and an 8-byte commit ts, not 2 bytes",
    ),
    (None, b"\x03" + bytes(8), "not an avro message: a watermark delete without a key"),
    (b"\x03", b"\x03" + bytes(8), "not an avro message: the key does not start with the magic"
     " byte 0 and a 4-byte schema id"),
]  # fmt: skip


@pytest.mark.parametrize(("key", "value", "message"), AVRO_NEW_ARCH_BAD)
def test_bad_new_architecture_avro_records(
    key: bytes | None, value: bytes | None, message: str
) -> None:
    decoder, _ = _avro_run(AVRO_NEW_ARCH)
    with pytest.raises(DecodeError) as refused:
        decoder.decode(key, value)
    assert str(refused.value) == message


@pytest.mark.parametrize(
    "options",
    [(AVRO_URI, None), AVRO_CHECKSUMS, (AVRO_NEW_ARCH, None), (AVRO_BEFORE, None)],
    ids=["avro", "checksums", "new-arch", "new-arch-before"],
)
def test_avro_every_prefix_and_flipped_byte_is_events_or_one_clear_error(
    options: tuple[str, str | None],
) -> None:
    decoder, records = _avro_run(*options)
    kinds = {type(e).__name__ for r in records for e in decoder.decode(r.key, r.value)}
    assert kinds == {"DecodedRow", "DecodedDDL", "DecodedCheckpoint"}
    checked = 0
    for record in records:
        for side in ("key", "value"):
            data = getattr(record, side)
            if data is None:
                continue
            cuts = range(0, len(data), max(1, len(data) // 256))
            damaged = {data[:n] for n in cuts}
            damaged |= {data[:i] + bytes([data[i] ^ 0x21]) + data[i + 1 :] for i in cuts}
            for bad in damaged:
                key, value = (bad, record.value) if side == "key" else (record.key, bad)
                try:
                    events = decoder.decode(key, value)
                except DecodeError as e:
                    assert str(e).startswith(
                        (
                            "not an avro message: ",
                            "the key names schema",
                            "the value names schema",
                            "avro row of test.t at commit ts",
                        )
                    ), str(e)
                else:
                    assert all(isinstance(event, DECODED) for event in events)
                checked += 1
    assert checked > 1000


@FUZZ
@given(key=st.none() | st.binary(max_size=24), value=st.none() | st.binary(max_size=200))
def test_avro_random_bytes(key: bytes | None, value: bytes | None) -> None:
    decoder, _ = _avro_run()
    for head in (b"", b"\x00\x00\x00\x00\x01", b"\x00\x00\x00\x00\x02"):  # past the framing
        try:
            events = decoder.decode(key and head + key, value and head + value)
        except SimError as e:
            assert str(e) and "Traceback" not in str(e)
        else:
            assert all(isinstance(event, DECODED) for event in events)
