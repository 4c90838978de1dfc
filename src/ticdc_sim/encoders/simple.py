"""simple: one record per event, no key, JSON or Avro (`encoding-format`); DML carries values
only, and consumers learn the columns from BOOTSTRAP and DDL messages (`tableSchema`).

Mirrors tiflow `pkg/sink/codec/simple/` (`message.go`: the message struct, `newTableSchema`,
`encodeValue`, `getDDLType`; `avro.go`: the Avro maps; `encoder.go`: large messages) and the
new architecture's `pkg/sink/codec/simple/` in pingcap/ticdc where bytes differ; TiCDC's
documentation of it is "TiCDC Simple Protocol" (docs.pingcap.com).

JSON: Go `encoding/json` of the message struct (key order = field order), `data`/`old` are Go
maps and so sorted by column name. Avro: `simple_avro.json` beside this module is the schema
TiCDC's `message.json` defines (a union of 12 named records; every record is the `Message`
branch, first byte 0x16); fastavro writes it from a schema parsed once. goavro writes `data`
and `old` in Go's random map order; we write them sorted, so Avro DML bytes match TiCDC's up
to that order.

`buildTs` is the encoding time in TiCDC (`time.Now()`); here, as canal-json's `ts`, it is the
simulated clock: the event's physical time plus `REPLICATION_LAG_MS`. TIMESTAMP values name
TiCDC's time zone (`CodecConfig.time_zone`, TiCDC's `--tz`), the zone their text is in.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import datetime as dt
import io
import json
import struct
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from decimal import Decimal
from functools import partial
from importlib.resources import files
from itertools import repeat
from operator import add, is_, rshift
from typing import Any, Literal, NamedTuple

import fastavro

from ticdc_sim.encoders import (
    MAX_RECORD_OVERHEAD,
    CodecConfig,
    Decoded,
    DecodedBootstrap,
    DecodedCheckpoint,
    DecodedDDL,
    DecodedRow,
    Message,
    Upstream,
    columnar,
    large,
)
from ticdc_sim.encoders.canal_json import REPLICATION_LAG_MS
from ticdc_sim.encoders.columnar import DELETE, INSERT, UPDATE, Texts, Writer
from ticdc_sim.encoders.reading import Fields, json_document
from ticdc_sim.encoders.types import DDL_TYPES
from ticdc_sim.encoders.varints import SMALL_LIMIT as _SMALL_LIMIT
from ticdc_sim.encoders.varints import SMALL_VARINTS as _SMALL
from ticdc_sim.encoders.varints import varint
from ticdc_sim.errors import ConfigError, DecodeError, EncodeError, shown
from ticdc_sim.golang import json as gj
from ticdc_sim.golang.strconv import float32, format_f
from ticdc_sim.model.actions import ActionType as A
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mounted import mounter
from ticdc_sim.model.mysql import BLOB_TYPES, ColumnFlag, TiDBFlag
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.table import ColumnInfo, TableInfo
from ticdc_sim.model.tso import PHYSICAL_SHIFT_BITS, physical_ms
from ticdc_sim.model.type_names import type_to_str

VERSION = 1  # message.go defaultVersion
FORMATS = ("json", "avro")
# TiDB >= 8.4 writes row checksums of version 2 (rowcodec checksumVersionRawHandle); the
# message's checksums are the column-level ones TiCDC computes once that one verified
CHECKSUM_VERSION = 2
_JSON = gj.ENCODING_JSON
_M64 = (1 << 64) - 1

# the new architecture also calls EXCHANGE PARTITION an ALTER (research §9)
_NEW_ARCH_DDL_TYPES = {**DDL_TYPES, A.EXCHANGE_TABLE_PARTITION: "ALTER"}


# -- table schemas (newTableSchema, newTableSchemaMap) -------------------------------------------


def _flen(col: ColumnInfo) -> int:
    """TiDB's stored length; ENUM and SET derive theirs from their members."""
    if col.flen >= 0 or not col.elems:
        return col.flen
    sizes = [len(e.encode()) for e in col.elems]
    return max(sizes) if col.tp == M.ENUM else sum(sizes) + len(sizes) - 1


def column_default(col: ColumnInfo) -> str | int | None:
    """`ColumnInfo.GetDefaultValue()`: TiDB keeps a literal default as the text of the
    column's value; a BIT default is its number (newColumnSchema)."""
    default = col.default
    if default is None or default.kind == "null":
        return None
    if default.kind != "literal":  # CURRENT_TIMESTAMP(3), an expression: as written
        return default.sql
    from ticdc_sim.generator.sql.values import column_converter  # the SQL engine's tables

    try:
        value = column_converter(col, lambda: dt.UTC)(default.value)
    except Exception:  # a default the engine let through but cannot convert: as written
        value = default.value
    if col.tp == M.BIT and isinstance(value, int):
        return value
    return _text(col, value)


def _text(col: ColumnInfo, value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, float):
        return format_f(value, 32 if col.tp == M.FLOAT else 64)
    return str(value)


def _schema_columns(info: TableInfo, profile: str) -> list[ColumnInfo]:
    # tiflow sorts by column id; the new architecture keeps the table's order
    columns = list(info.columns)
    return columns if profile == "new-arch" else sorted(columns, key=lambda c: c.id)


def _indexes(info: TableInfo) -> list[dict[str, Any]]:
    """TiDB's `Indices` (an int primary key that is the handle has none), then a synthetic
    `primary` when no index is the primary key."""
    out = []
    for ix in info.indices:
        if ix.primary and info.pk_is_handle:
            continue
        out.append(
            {
                "name": ix.name,
                "unique": ix.unique or ix.primary,
                "primary": ix.primary,
                "nullable": any(not info.columns[c.offset].not_null for c in ix.columns),
                "columns": [c.name for c in ix.columns],
            }
        )
    if not any(ix["primary"] for ix in out):
        pk = [c.name for c in info.columns if c.flag & TiDBFlag.PRI_KEY]
        if pk:
            out.append(
                {
                    "name": "primary",
                    "unique": True,
                    "primary": True,
                    "nullable": False,
                    "columns": pk,
                }
            )
    return out


def table_schema(info: TableInfo, profile: str) -> dict[str, Any]:
    """`TableSchema` as the JSON encoding writes it (struct order, omitempty)."""
    columns = []
    for col in _schema_columns(info, profile):
        data_type: dict[str, Any] = {
            "mysqlType": type_to_str(col),
            "charset": col.charset,
            "collate": col.collation,
        }
        if flen := _flen(col):
            data_type["length"] = flen
        if col.tp not in (M.FLOAT, M.DOUBLE) and col.decimal:
            data_type["decimal"] = col.decimal
        if col.elems:
            data_type["elements"] = list(col.elems)
        if col.flag & TiDBFlag.UNSIGNED:
            data_type["unsigned"] = True
        if col.flag & TiDBFlag.ZEROFILL:
            data_type["zerofill"] = True
        columns.append(
            {
                "name": col.name,
                "dataType": data_type,
                "nullable": not col.not_null,
                "default": column_default(col),
            }
        )
    return {
        "schema": info.schema,
        "table": info.name,
        "tableID": info.id,
        "version": info.update_ts,
        "columns": columns,
        "indexes": _indexes(info),
    }


_AVRO_SIGNED = frozenset(
    {M.TINY, M.SHORT, M.INT24, M.LONG, M.LONGLONG, M.FLOAT, M.DOUBLE, M.BIT, M.YEAR, M.NEWDECIMAL}
)


def avro_table_schema(info: TableInfo, profile: str) -> dict[str, Any]:
    """`TableSchema` as the Avro encoding fills it (newTableSchemaMap): every length, the
    sign flags only for numbers, `decimal` only for DECIMAL, defaults unconverted."""
    columns = []
    for col in _schema_columns(info, profile):
        data_type: dict[str, Any] = {
            "mysqlType": type_to_str(col),
            "charset": col.charset,
            "collate": col.collation,
            "length": _flen(col),
            "decimal": col.decimal if col.tp == M.NEWDECIMAL else None,
            "elements": list(col.elems) if col.tp in (M.ENUM, M.SET) else None,
            "unsigned": bool(col.flag & TiDBFlag.UNSIGNED) if col.tp in _AVRO_SIGNED else None,
            "zerofill": bool(col.flag & TiDBFlag.ZEROFILL) if col.tp in _AVRO_SIGNED else None,
        }
        default = column_default(col)
        if col.tp == M.BIT and default is not None:  # the raw bytes TiDB keeps, as a string
            raw = col.default.value if col.default is not None else b""
            default = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else str(raw)
        columns.append(
            {
                "name": col.name,
                "dataType": data_type,
                "nullable": not col.not_null,
                "default": None if default is None else str(default),
            }
        )
    return {
        "database": info.schema,
        "table": info.name,
        "tableID": info.id,
        "version": _int64(info.update_ts),
        "columns": columns,
        "indexes": _indexes(info),
    }


def _int64(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


# -- row values ------------------------------------------------------------------------------------


def _is_binary_string(col: ColumnInfo) -> bool:
    return col.is_binary_charset and (col.tp in BLOB_TYPES or col.tp in _STRING_TYPES)


_STRING_TYPES = frozenset({M.STRING, M.VARCHAR, M.VAR_STRING})
_STRINGS = columnar.strings(_JSON)
_BASE64 = columnar.mapped(partial(binascii.b2a_base64, newline=False), columnar.plain_strings)


def _timestamps(time_zone: str) -> Writer:
    zone = gj.dumps(time_zone, _JSON).replace(b"%", b"%%")

    def write(values: Sequence[Any]) -> columnar.Field:
        spec, items = _STRINGS(values)
        return columnar.Field(b'{"location":' + zone + b',"value":' + spec + b"}", items)

    return write


def _writer(col: ColumnInfo, time_zone: str) -> Writer:
    """A column's values as `encodeValue` writes them: strings, a TIMESTAMP an object."""
    number = columnar.number_writer(col, quoted=True)
    if number is not None:
        return number
    if col.tp == M.TIMESTAMP:
        return _timestamps(time_zone)
    if _is_binary_string(col):
        return _BASE64
    return _STRINGS  # text, dates and times, JSON, VECTOR: TiDB's strings already


# Avro: ColumnValue = [null, long, float, double, string, bytes, Timestamp, UnsignedBigint]
AvroValue = Callable[[Any], Any]


def _avro_value(col: ColumnInfo, profile: str, time_zone: str) -> AvroValue:
    """A mounted value -> its ColumnValue branch (encodeValue4Avro), in fastavro's tuple
    notation where the value alone would not pick the branch TiCDC writes."""
    tp = col.tp
    if tp == M.BIT and profile == "new-arch":  # ticdc writes BIT's number as a string
        return lambda v: ("string", str(v))
    if tp == M.TIMESTAMP:
        stamp = "com.pingcap.simple.avro.Timestamp"
        return lambda v: (stamp, {"location": time_zone, "value": v})
    if tp == M.LONGLONG and col.unsigned:
        return lambda v: ("com.pingcap.simple.avro.UnsignedBigint", {"value": _int64(v)})
    if tp == M.FLOAT:
        return lambda v: ("float", v)
    if tp == M.DOUBLE:
        return lambda v: ("double", v)
    if tp == M.NEWDECIMAL:
        return lambda v: ("string", format(v, "f") if "E" in str(v) else str(v))
    if tp in (M.ENUM, M.SET):
        mount = mounter(col)
        assert mount is not None
        return lambda v: ("long", mount(v))
    if _is_binary_string(col):
        return lambda v: ("bytes", v)
    if isinstance(tp, M) and tp in _LONGS:
        return lambda v: ("long", v)
    return lambda v: ("string", v)


_LONGS = frozenset({M.TINY, M.SHORT, M.INT24, M.LONG, M.LONGLONG, M.YEAR, M.BIT})


# The same ColumnValue branches written directly: Avro's long is Go's zigzag varint, a string
# or bytes its varint length and the bytes, a union its branch's varint first. fastavro writes
# DML records about six times slower than this; tests hold the two byte for byte.
def _avro_string(text: str) -> bytes:
    data = text.encode("utf-8", "surrogateescape")
    n = len(data)
    return (_SMALL[n] if n < _SMALL_LIMIT else varint(n)) + data


# a long's branch and value, looked up for 0 <= v < 2^13
_LONG_VALUES = [b"\x02" + varint(v) for v in range(_SMALL_LIMIT)]


def _avro_long(v: int) -> bytes:
    return _LONG_VALUES[v] if 0 <= v < _SMALL_LIMIT else b"\x02" + varint(v)


def _avro_binary(col: ColumnInfo, profile: str, time_zone: str) -> Callable[[Any], bytes]:
    """A mounted value -> its ColumnValue bytes (branch index, then the value)."""
    tp = col.tp
    if tp == M.BIT and profile == "new-arch":
        return lambda v: b"\x08" + _avro_string(str(v))
    if tp == M.TIMESTAMP:
        zone = b"\x0c" + _avro_string(time_zone)
        return lambda v: zone + _avro_string(v)
    if tp == M.LONGLONG and col.unsigned:
        return lambda v: b"\x0e" + varint(_int64(v))
    if tp == M.FLOAT:
        return lambda v: b"\x04" + _F32.pack(v)
    if tp == M.DOUBLE:
        return lambda v: b"\x06" + _F64.pack(v)
    if tp == M.NEWDECIMAL:
        return lambda v: b"\x08" + _avro_string(format(v, "f") if "E" in str(v) else str(v))
    if tp in (M.ENUM, M.SET):
        mount = mounter(col)
        assert mount is not None
        return lambda v: _avro_long(mount(v))
    if _is_binary_string(col):
        return lambda v: b"\x0a" + varint(len(v)) + v
    if tp in _LONGS:
        return _avro_long
    return lambda v: b"\x08" + _avro_string(v)


# -- row checksums (TiDB rowcodec RowData.Checksum, the column-level checksum TiCDC sends) ---------

_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_F64 = struct.Struct("<d")
_F32 = struct.Struct("<f")


def _checksum_bytes(col: ColumnInfo) -> Callable[[Any], bytes] | None:
    """A mounted value's bytes in TiDB's checksum; None for a type TiDB cannot checksum."""
    tp = col.tp
    if tp in _LONGS or tp in (M.ENUM, M.SET):
        mount = mounter(col) if tp in (M.ENUM, M.SET) else None
        if mount is not None:
            return lambda v: _U64.pack(mount(v) & _M64)
        return lambda v: _U64.pack(v & _M64)
    if tp in (M.FLOAT, M.DOUBLE):
        return _F64.pack
    if tp == M.NEWDECIMAL:
        return lambda v: _length_value((format(v, "f") if "E" in str(v) else str(v)).encode())
    if tp in (M.NULL, M.GEOMETRY):
        return lambda v: b""
    if tp == M.TIDB_VECTOR_FLOAT32:
        return None
    # strings, blobs, dates and times (TIMESTAMP in UTC, as ours are), JSON
    return lambda v: _length_value(
        v if isinstance(v, bytes) else v.encode("utf-8", "surrogateescape")
    )


def _length_value(data: bytes) -> bytes:
    return _U32.pack(len(data)) + data


Checksummed = list[tuple[int, Callable[[Any], bytes]]]  # (column offset, its bytes) by id


def checksum_columns(info: TableInfo) -> Checksummed | None:
    """The columns a row checksum covers, in id order; None when one has a type TiDB cannot
    checksum (the row then carries none). Simple and avro send it."""
    by_id = sorted(info.visible_columns, key=lambda c: c.id)
    found = [_checksum_bytes(c) for c in by_id]
    if not all(f is not None for f in found):
        return None
    return [(c.offset, f) for c, f in zip(by_id, found, strict=True) if f]


def row_checksums(columns: Checksummed, images: Sequence[Any]) -> list[int]:
    """Each image's CRC32 over its columns in id order; 0 for no image."""
    out = []
    for row in images:
        if row is None:
            out.append(0)
            continue
        crc = 0
        for offset, to_bytes in columns:
            value = row[offset]
            if value is not None:
                crc = zlib.crc32(to_bytes(value), crc)
        out.append(crc)
    return out


# -- encoding ------------------------------------------------------------------------------------


class _TableCodec:
    """Everything about one table version that does not depend on the rows."""

    def __init__(self, info: TableInfo, config: CodecConfig) -> None:
        self.info = info
        self.config = config
        visible = info.visible_columns
        # data/old are Go maps: encoding/json sorts their keys (bytewise)
        self.columns = sorted(visible, key=lambda c: c.name.encode())
        self.offsets = [c.offset for c in self.columns]
        flags = info.ticdc_flags(config.profile)
        handle = [i for i, c in enumerate(self.columns) if flags[c.offset] & ColumnFlag.HANDLE_KEY]
        self.handle_positions = handle
        self.schema_version = info.update_ts
        self.checksum = checksum_columns(info) if config.enable_row_checksum else None
        if config.encoding_format == "avro":
            tz = config.time_zone
            self.avro_values = [_avro_value(c, config.profile, tz) for c in self.columns]
            self.names = [c.name for c in self.columns]
            self.binary = [_avro_binary(c, config.profile, tz) for c in self.columns]
            # each map entry starts with its key
            self.entry_keys = [_avro_string(c.name) for c in self.columns]
            # Message branch, DML type, DML branch, version 1, database, table
            self.avro_head = (
                b"\x16\x06\x06\x02" + _avro_string(info.schema) + _avro_string(info.name)
            )
            self.avro_version = varint(_int64(info.update_ts))
        else:
            self.writers = [columnar.nullable(_writer(c, config.time_zone)) for c in self.columns]
            self.keys = [gj.dumps(c.name, _JSON) + b":" for c in self.columns]
            self.head = (
                b'{"version":1,"database":'
                + gj.dumps(info.schema, _JSON)
                + b',"table":'
                + gj.dumps(info.name, _JSON)
            )
            self._layouts: dict[tuple[str, str], columnar.Layout] = {}

    def picked(self, large: str) -> list[int]:
        """The columns written: all, or the handle key of a row too large to send whole."""
        return self.handle_positions if large != "none" else list(range(len(self.columns)))

    def checksums(self, images: Sequence[Any]) -> list[int]:
        assert self.checksum is not None
        return row_checksums(self.checksum, images)

    # -- JSON

    def _layout(self, kind: str, large: str) -> columnar.Layout:
        parts: list[bytes | str] = [self.head, b',"tableID":', "ptn"]
        parts += [b',"type":"' + kind.upper().encode() + b'","commitTs":', "ts"]
        parts += [b',"buildTs":', "bt"]
        if self.schema_version:
            parts.append(b',"schemaVersion":%d' % self.schema_version)
        if large == "claim-check":
            parts += [b',"claimCheckLocation":', "ccl"]
        if large != "none":
            parts.append(b',"handleKeyOnly":true')
        if self.checksum is not None:
            parts += [b',"checksum":{"version":%d,"corrupted":false,"current":' % CHECKSUM_VERSION]
            parts += ["current", b',"previous":', "previous", b"}"]
        picked = self.picked(large)
        if picked:  # an empty map is omitted
            if kind != DELETE:
                parts += [b',"data":{', *self._object("d", picked), b"}"]
            if kind != INSERT:
                parts += [b',"old":{', *self._object("d" if kind == DELETE else "p", picked), b"}"]
        parts.append(b"}")
        return columnar.Layout(parts)

    def _object(self, image: str, picked: list[int]) -> Iterator[bytes | str]:
        return columnar.members(self.keys, image, picked)

    def json(
        self,
        kind: str,
        events: list[RowChangedEvent],
        ts: list[int],
        large: str = "none",
        locations: list[str] | None = None,
    ) -> Texts:
        es = list(map(rshift, ts, repeat(PHYSICAL_SHIFT_BITS)))
        fields = {
            "ts": columnar.Field(b"%d", ts),
            "bt": columnar.Field(b"%d", list(map(add, es, repeat(REPLICATION_LAG_MS)))),
            "ptn": columnar.Field(b"%d", [e.physical_table_id for e in events]),
        }
        if locations is not None:
            fields["ccl"] = columnar.Field(b"%s", [gj.dumps(x, _JSON) for x in locations])
        if self.checksum is not None:
            new = [e.columns for e in events]
            old = [e.pre_columns for e in events]
            fields["current"] = columnar.Field(b"%d", self.checksums(new))
            fields["previous"] = columnar.Field(b"%d", self.checksums(old))
        picked = self.picked(large)
        fields |= columnar.image_fields(kind, events, picked, self.offsets, self.writers)
        layout = self._layouts.get((kind, large))
        if layout is None:
            layout = self._layouts[kind, large] = self._layout(kind, large)
        return layout.fill(fields, len(events))

    # -- Avro

    def avro_records(
        self,
        kind: str,
        events: list[RowChangedEvent],
        large: str = "none",
        locations: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        picked = self.picked(large)
        info = self.info
        sums = None
        if self.checksum is not None:
            sums = zip(
                self.checksums([e.columns for e in events]),
                self.checksums([e.pre_columns for e in events]),
                strict=True,
            )
        out = []
        for n, event in enumerate(events):
            commit_ts = event.commit_ts
            record: dict[str, Any] = {
                "version": VERSION,
                "database": info.schema,
                "table": info.name,
                "tableID": event.physical_table_id,
                "type": kind.upper(),
                "commitTs": _int64(commit_ts),
                "buildTs": (commit_ts >> PHYSICAL_SHIFT_BITS) + REPLICATION_LAG_MS,
                "schemaVersion": _int64(info.update_ts),
                "claimCheckLocation": locations[n] if locations is not None else None,
                "handleKeyOnly": True if large != "none" else None,
                "checksum": None,
                "data": None if kind == DELETE else self._avro_map(event.columns, picked),
                "old": None if kind == INSERT else self._avro_map(event.pre_columns, picked),
            }
            if sums is not None:
                current, previous = next(sums)
                record["checksum"] = {
                    "version": CHECKSUM_VERSION,
                    "corrupted": False,
                    "current": current,
                    "previous": previous,
                }
            out.append(record)
        return out

    def avro(
        self,
        kind: str,
        events: list[RowChangedEvent],
        large: str = "none",
        locations: list[str] | None = None,
    ) -> Texts:
        """The DML records of events of one kind, written column by column; the same bytes
        fastavro writes from `avro_records`."""
        picked = self.picked(large)
        count = len(events)
        kind_byte = _DML_TYPES[kind]
        parts: list[list[bytes]] = [
            [self.avro_head + varint(e.physical_table_id) + kind_byte for e in events],
            [varint(_int64(e.commit_ts)) for e in events],
            [
                varint((e.commit_ts >> PHYSICAL_SHIFT_BITS) + REPLICATION_LAG_MS)
                + self.avro_version
                for e in events
            ],
        ]
        tail = b"\x02" + _avro_string(locations[0]) if locations is not None else b"\x00"
        tail += b"\x02\x01" if large != "none" else b"\x00"
        if self.checksum is None:
            parts.append([tail + b"\x00"] * count)
        else:
            version = tail + b"\x02" + varint(CHECKSUM_VERSION) + b"\x00"
            current = self.checksums([e.columns for e in events])
            previous = self.checksums([e.pre_columns for e in events])
            parts.append(
                [version + varint(c) + varint(p) for c, p in zip(current, previous, strict=True)]
            )
        if kind == DELETE:
            parts.append([b"\x00"] * count)
        else:
            parts.append(self._avro_block([e.columns for e in events], picked))
        if kind == INSERT:
            parts.append([b"\x00"] * count)
        else:
            parts.append(self._avro_block([e.pre_columns for e in events], picked))
        return list(map(b"".join, zip(*parts, strict=True)))

    def _avro_block(self, images: list[Any], picked: list[int]) -> list[bytes]:
        """Each image as a present map: its one block (count, entries) and the end."""
        if not picked:
            return [b"\x02\x00"] * len(images)
        columns = list(zip(*images, strict=True))
        entries = []
        for i in picked:
            key, write = self.entry_keys[i], self.binary[i]
            column = columns[self.offsets[i]]
            null = key + b"\x00"
            if any(map(is_, column, repeat(None))):
                entries.append([null if v is None else key + write(v) for v in column])
            else:
                entries.append(list(map(key.__add__, map(write, column))))
        head = b"\x02" + varint(len(picked))
        return [head + b"".join(row) + b"\x00" for row in zip(*entries, strict=True)]

    def _avro_map(self, row: Any, picked: list[int]) -> dict[str, Any]:
        names, offsets, values = self.names, self.offsets, self.avro_values
        out = {}
        for i in picked:
            value = row[offsets[i]]
            out[names[i]] = None if value is None else values[i](value)
        return out


_DML_TYPES = {INSERT: b"\x00", UPDATE: b"\x02", DELETE: b"\x04"}


def _schema() -> Any:
    text = files("ticdc_sim.encoders").joinpath("simple_avro.json").read_text()
    return fastavro.parse_schema(json.loads(text))


_AVRO: Any = None  # the parsed schema, once per process


def avro_schema() -> Any:
    global _AVRO
    if _AVRO is None:
        _AVRO = _schema()
    return _AVRO


def _avro_bytes(branch: str, kind: str, payload: dict[str, Any]) -> bytes:
    message = {"type": kind, "payload": (f"com.pingcap.simple.avro.{branch}", payload)}
    record = ("com.pingcap.simple.avro.Message", message)
    out = io.BytesIO()
    try:
        fastavro.schemaless_writer(out, avro_schema(), record)
    except UnicodeEncodeError:  # text that is not UTF-8 (surrogate escapes): its raw bytes
        out = io.BytesIO()
        fastavro.schemaless_writer(out, avro_schema(), _raw_strings(record))
    return out.getvalue()


class _Raw(str):
    """A str fastavro writes as its raw bytes: goavro writes a Go string's bytes as they
    are, valid UTF-8 or not."""

    __slots__ = ()

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        return str.encode(self, "utf-8", "surrogateescape")


def _raw_strings(value: Any) -> Any:
    if isinstance(value, str):
        return _Raw(value)
    if isinstance(value, dict):
        return {k: _raw_strings(v) for k, v in value.items()}
    if isinstance(value, tuple):  # a union branch: its name stays as it is
        return (value[0], _raw_strings(value[1]))
    if isinstance(value, list):
        return [_raw_strings(v) for v in value]
    return value


class Encoder(columnar.RowEncoder[_TableCodec]):
    protocol = "simple"

    def __init__(self, config: CodecConfig) -> None:
        super().__init__()
        if config.encoding_format not in FORMATS:
            raise ConfigError(
                f"encoding-format {config.encoding_format!r}: simple writes json or avro"
            )
        self.config = config
        self.avro = config.encoding_format == "avro"
        self.ddl_types = _NEW_ARCH_DDL_TYPES if config.profile == "new-arch" else DDL_TYPES
        if self.avro:
            avro_schema()

    def new_codec(self, info: TableInfo) -> _TableCodec:
        return _TableCodec(info, self.config)

    def values(
        self,
        codec: _TableCodec,
        kind: str,
        rows: list[RowChangedEvent],
        large: str = "none",
        locations: list[str] | None = None,
    ) -> Texts:
        if not self.avro:
            return codec.json(kind, rows, columnar.commit_ts(rows), large, locations)
        return codec.avro(kind, rows, large, locations)

    def _compressed(self, value: bytes) -> bytes:
        return large.compress(self.config.large_message_handle_compression, value)

    def encode_ddl(self, event: DDLEvent) -> Message:
        info = event.table_info if event.table_info is not None else event.pre_table_info
        pre = event.pre_table_info if event.action != A.CREATE_TABLE else None
        kind = self.ddl_types.get(event.action, "QUERY")
        build_ts = physical_ms(event.commit_ts) + REPLICATION_LAG_MS
        profile = self.config.profile
        if self.avro:
            payload = {
                "version": VERSION,
                "type": kind,
                "sql": event.query,
                "commitTs": _int64(event.commit_ts),
                "buildTs": build_ts,
                "tableSchema": _avro_schema_branch(info, profile),
                "preTableSchema": _avro_schema_branch(pre, profile),
            }
            value = _avro_bytes("DDL", "DDL", payload)
        else:
            message: dict[str, Any] = {"version": VERSION, "type": kind}
            if event.query:
                message["sql"] = event.query
            message |= {"commitTs": event.commit_ts, "buildTs": build_ts}
            if info is not None:
                message["tableSchema"] = table_schema(info, profile)
            if pre is not None:
                message["preTableSchema"] = table_schema(pre, profile)
            value = gj.dumps(message, _JSON)
        value = self._compressed(value)
        if len(value) + MAX_RECORD_OVERHEAD > self.config.max_message_bytes:
            raise EncodeError(
                f"a simple DDL message of {len(value) + MAX_RECORD_OVERHEAD} bytes at commit ts"
                f" {event.commit_ts} exceeds max-message-bytes {self.config.max_message_bytes}"
                " (TiCDC: ErrMessageTooLarge)"
            )
        return Message(None, value, event.commit_ts, 0, event.schema, event.table)

    def encode_checkpoint(self, ts: int) -> Message | None:
        build_ts = physical_ms(ts) + REPLICATION_LAG_MS
        if self.avro:
            payload = {"version": VERSION, "commitTs": _int64(ts), "buildTs": build_ts}
            value = _avro_bytes("Watermark", "WATERMARK", payload)
        else:
            message = {"version": VERSION, "type": "WATERMARK", "commitTs": ts, "buildTs": build_ts}
            value = gj.dumps(message, _JSON)
        return Message(None, self._compressed(value), ts)

    def encode_bootstrap(self, info: TableInfo, ts: int) -> Message:
        """A table's BOOTSTRAP (newBootstrapMessage), sent at simulated time `ts`: commitTs
        is 0, as TiCDC makes it."""
        build_ts = physical_ms(ts) + REPLICATION_LAG_MS
        profile = self.config.profile
        if self.avro:
            payload = {
                "version": VERSION,
                "buildTs": build_ts,
                "tableSchema": avro_table_schema(info, profile),
            }
            value = _avro_bytes("Bootstrap", "BOOTSTRAP", payload)
        else:
            message = {
                "version": VERSION,
                "type": "BOOTSTRAP",
                "commitTs": 0,
                "buildTs": build_ts,
                "tableSchema": table_schema(info, profile),
            }
            value = gj.dumps(message, _JSON)
        return Message(None, self._compressed(value), ts, 0, info.schema, info.name)


def _avro_schema_branch(info: TableInfo | None, profile: str) -> Any:
    if info is None:
        return None
    return ("com.pingcap.simple.avro.TableSchema", avro_table_schema(info, profile))


# -- decoding ------------------------------------------------------------------------------------

_INTEGER_NAMES = frozenset(
    {"tinyint", "smallint", "mediumint", "int", "bigint", "bit", "year", "enum", "set"}
)
_BINARY_NAMES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})


class _Known(NamedTuple):
    """A table schema a consumer learnt: its columns' types (in the schema's order, the
    order checksums take) and the row's key."""

    types: dict[str, str]
    keys: tuple[str, ...]


def _known(schema: Fields) -> _Known:
    types: dict[str, str] = {}
    nullable: dict[str, bool] = {}
    for i, raw in enumerate(schema.need("columns", list)):
        column = Fields(raw, schema.protocol, f"{schema.path}.columns[{i}]")
        name = column.text("name")
        types[name] = column.nested("dataType").text("mysqlType")
        nullable[name] = bool(column.maybe("nullable", bool))
    # (primary, unique, columns) of each index, its columns the table's
    indexes: list[tuple[bool, bool, list[str]]] = []
    for i, raw in enumerate(schema.maybe("indexes", list) or []):
        index = Fields(raw, schema.protocol, f"{schema.path}.indexes[{i}]")
        named = index.strings("columns") or []
        unknown = [c for c in named if c not in types]
        if unknown:
            raise index.fail(f"`{index.path}` names columns {unknown} the table does not have")
        indexes.append(
            (bool(index.maybe("primary", bool)), bool(index.maybe("unique", bool)), named)
        )
    keys = next((named for primary, _, named in indexes if primary), None)
    if keys is None:  # the handle key: the NOT NULL unique index with the fewest columns
        unique = [
            named
            for _, is_unique, named in indexes
            if is_unique and not any(nullable[c] for c in named)
        ]
        keys = min(unique, key=len) if unique else []
    return _Known(types, tuple(keys))


def _value(mysql_type: str, value: Any) -> Any:
    """A `data`/`old` value back into the column's value, by its `mysqlType`."""
    if value is None:
        return None
    if isinstance(value, dict):  # a TIMESTAMP, or an Avro UnsignedBigint
        return value["value"] if "location" in value else value["value"] & _M64
    if mysql_type in _INTEGER_NAMES:
        return int(value)
    if mysql_type == "float":
        return float32(float(value))
    if mysql_type == "double":
        return float(value)
    if mysql_type == "decimal":
        return Decimal(value)
    if mysql_type in _BINARY_NAMES:
        return value if isinstance(value, bytes) else base64.b64decode(value, validate=True)
    if isinstance(value, str):
        return value
    raise ValueError(f"a {mysql_type} value {value!r}")


_CHECKSUM_INTS = _INTEGER_NAMES


def _checksum(image: dict[str, Any], known: _Known) -> int:
    """A decoded image's column-level checksum (verify_checksum.go calculateChecksum)."""
    crc = 0
    for name, mysql_type in known.types.items():
        value = image.get(name)
        if value is None:
            continue
        if mysql_type in _CHECKSUM_INTS:
            data = _U64.pack(value & _M64)
        elif mysql_type in ("float", "double"):
            data = _F64.pack(value)
        elif isinstance(value, bytes):
            data = _length_value(value)
        else:
            data = _length_value(str(value).encode("utf-8", "surrogateescape"))
        crc = zlib.crc32(data, crc)
    return crc


_DML_KINDS: dict[str, Literal["insert", "update", "delete"]] = {
    "INSERT": "insert",
    "UPDATE": "update",
    "DELETE": "delete",
}


class Decoder:
    """Stateful, as TiCDC's: DML is read with the table schema its BOOTSTRAP or DDL message
    taught, looked up by (database, table, schemaVersion). Strict: a record that is not what
    simple writes is a DecodeError naming the field or the byte (`reading`)."""

    def __init__(self, config: CodecConfig, upstream: Upstream | None = None) -> None:
        self.config = config
        self.upstream = upstream
        self.avro = config.encoding_format == "avro"
        self.label = "simple Avro" if self.avro else "simple JSON"
        self.schemas: dict[tuple[str, str, int], _Known] = {}

    def decode(self, key: bytes | None, value: bytes | None) -> list[Decoded]:
        if value is None:
            raise DecodeError(f"not a {self.label} message: no value")
        return [self._decode(value)]

    def learn(self, value: bytes | None) -> None:
        """Take the table schema of a BOOTSTRAP or DDL message and pass over the others
        cheaply: what a consumer that reads records out of order (the service's pages of
        messages) is first shown, in sending order. A record it cannot read teaches nothing;
        decoding it says why."""
        if value is None:
            return
        try:
            data = large.decompress(self.config.large_message_handle_compression, value, "")
        except DecodeError:
            return
        # Avro: the Message branch, then its type (BOOTSTRAP 1, DDL 2: zigzag 02, 04)
        schema = data[1:2] in (b"\x02", b"\x04") if self.avro else b'"tableSchema"' in data
        if schema:
            with contextlib.suppress(DecodeError):
                self._decode(value)

    def _message(self, value: bytes) -> Fields:
        data = large.decompress(self.config.large_message_handle_compression, value, self.label)
        try:
            read = _avro_message(data) if self.avro else json_document(data, self.label)
        except DecodeError as e:  # written in the other encoding-format? said so
            other = "json" if self.avro else "avro"
            if not _reads_as(other, data):
                raise
            raise DecodeError(
                f"{e} (it reads as encoding-format {other}: decode needs the writer's, in the"
                " URI or --config)"
            ) from None
        return Fields(read, self.label)

    def _learn(self, message: Fields, field: str) -> tuple[str, str]:
        """The schema and table of the message's `field` table schema, learnt; ("", "")
        without one."""
        if message.maybe(field, dict) is None:
            return "", ""
        schema = message.nested(field)
        db, table = schema.text("schema"), schema.text("table")
        version = schema.integer("version")
        self.schemas[db, table, version] = _known(schema)
        return db, table

    def _decode(self, value: bytes, claimed: str = "") -> Decoded:
        message = self._message(value)
        kind = message.text("type")
        if kind == "WATERMARK":
            return DecodedCheckpoint(message.ts("commitTs") or 0)
        if kind == "BOOTSTRAP":
            db, table = self._learn(message, "tableSchema")
            schema = message.nested("tableSchema")
            return DecodedBootstrap(db, table, schema.integer("tableID"), schema.integer("version"))
        if kind not in _DML_KINDS and kind != "DML":
            self._learn(message, "preTableSchema")
            db, table = self._learn(message, "tableSchema")
            sql = message.maybe("sql", str) or ""
            return DecodedDDL(db, table, message.ts("commitTs"), sql, kind)
        return self._row(message, kind, claimed)

    def _row(self, message: Fields, kind: str, claimed: str) -> Decoded:
        db, table = message.text("database"), message.text("table")
        version = message.maybe("schemaVersion", int) or 0
        known = self.schemas.get((db, table, version))
        if known is None:
            raise DecodeError(
                f"simple DML of {db}.{table} at schema version {version} before any BOOTSTRAP"
                " or DDL message with that table schema"
            )

        def image(name: str) -> dict[str, Any] | None:
            got = message.maybe(name, dict)
            if got is None:
                return None
            values, out = message.nested(name), {}
            for column, raw in got.items():
                mysql_type = known.types.get(column)
                if mysql_type is None:
                    raise message.fail(
                        f"column {shown(column)} of `{name}` is not in {db}.{table}'s schema"
                        f" version {version}"
                    )
                out[column] = values.convert(column, mysql_type, _value, mysql_type, raw)
            return out

        data, old = image("data"), image("old")
        row_kind = _DML_KINDS.get(kind) or (
            "insert" if old is None else "delete" if data is None else "update"
        )
        commit_ts = message.ts("commitTs")
        extra: dict[str, Any] = {"tableID": message.integer("tableID"), "schemaVersion": version}
        checksum = message.nested("checksum", optional=True)
        if checksum.values:  # common.VerifyChecksum, as TiCDC's consumer does
            extra["checksum"] = checksum.values
            for got, field in ((data, "current"), (old, "previous")):
                want = checksum.integer(field) & 0xFFFFFFFF
                if got is None or not want:
                    continue
                if checksum.convert(field, "checksum", _checksum, got, known) != want:
                    raise DecodeError(
                        f"simple DML of {db}.{table} at commit ts {commit_ts}: the {field}"
                        f" checksum {want} does not match its values (checksum corrupted)"
                    )
        row = DecodedRow(row_kind, db, table, commit_ts, data, old, extra, known.keys)
        location = message.maybe("claimCheckLocation", str)
        if location and claimed:
            raise DecodeError(f"claim-check file {claimed!r} names another one, {location!r}")
        if location and self.upstream is not None:
            _, whole = large.read_claim(
                self.upstream, location, self.config.claim_check_raw_value, self.label
            )
            return self._decode(whole, location)
        if message.maybe("handleKeyOnly", bool):
            return large.from_upstream(row, self.upstream)
        named = location or claimed  # as sent without an upstream, or as read from the file
        return replace(row, extra={**extra, "claimCheckLocation": named}) if named else row


def _reads_as(encoding_format: str, data: bytes) -> bool:
    """Whether `data` is a message in that encoding format."""
    try:
        _avro_message(data) if encoding_format == "avro" else json_document(data, "")
    except DecodeError:
        return False
    return True


def _avro_message(data: bytes) -> dict[str, Any]:
    """An Avro Message read into the JSON message's shape; fastavro's failure on bytes that
    are not one is said with the byte it stopped at."""
    stream = io.BytesIO(data)
    try:
        read: Any = fastavro.schemaless_reader(
            stream,
            avro_schema(),
            None,
            return_record_name=True,
            handle_unicode_errors="surrogateescape",
        )
    except Exception as e:  # fastavro raises EOFError, ValueError, IndexError ... on garbage
        raise DecodeError(
            f"not a simple Avro message: unreadable at byte {stream.tell()}"
            f" ({type(e).__name__}: {shown(str(e), 80)})"
        ) from None
    if stream.tell() != len(data):
        raise DecodeError(
            f"not a simple Avro message: {len(data) - stream.tell()} bytes left over after"
            f" the message's {stream.tell()}"
        )
    name, body = read  # the schema is a union of named types; a record is its Message
    if name != "com.pingcap.simple.avro.Message":
        raise DecodeError(f"not a simple Avro message: an Avro {name.rsplit('.', 1)[-1]}")
    _, payload = body["payload"]
    message = {**payload, "type": payload.get("type", body["type"])}
    for field in ("tableSchema", "preTableSchema"):
        branch = message.get(field)
        if isinstance(branch, tuple):
            branch = branch[1]
        if branch is not None:
            message[field] = {"schema": branch["database"], **branch}
    for field in ("data", "old"):
        image = message.get(field)
        if image is not None:
            message[field] = {k: v[1] if isinstance(v, tuple) else v for k, v in image.items()}
    checksum = message.get("checksum")
    if isinstance(checksum, tuple):
        message["checksum"] = checksum[1]
    return message
