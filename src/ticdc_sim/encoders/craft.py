"""craft: TiCDC's binary protocol; several rows a record, laid out column by column.

Mirrors tiflow `pkg/sink/codec/craft/` (classic TiCDC only; the new architecture has no craft):
`message_encoder.go` (primitives, value bytes `EncodeTiDBType`, size tables), `model.go`
(headers, column groups, the term dictionary, the size estimate), `craft_encoder.go`
(batching) and `message_decoder.go`/`craft_decoder.go`. TiCDC documents it as "TiCDC Craft
Protocol"; the layout in its Chinese edition (docs-cn) is the code's, the English one's is not.

A record (no key) is
    uvarint(1) | headers | body per event | term dictionary | size tables | reversed uvarint
with the headers column by column (commit ts, type, partition, schema and table term ids), a
row's body its column groups (new image, then old), and every name a term id in first-use order.

FLOAT: from v8.2 TiCDC's encoder writes a FLOAT's 8 bytes into a 4-byte slot of a shared arena,
and the next value allocated there overwrites bytes 4..7 (research §2.7). Which bytes land there
depends on which of TiCDC's encoder goroutines takes the batch, so no simulator can reproduce it
byte for byte; we write the correct float64, as v5.3 to v6.5.1 did and as every decoder expects.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from decimal import Decimal
from itertools import repeat
from operator import add, is_, methodcaller, sub
from typing import Any, Literal

from ticdc_sim.encoders import (
    CodecConfig,
    Decoded,
    DecodedCheckpoint,
    DecodedDDL,
    DecodedRow,
    Message,
    Upstream,
    columnar,
)
from ticdc_sim.encoders.columnar import INSERT, UPDATE
from ticdc_sim.encoders.varints import SMALL_LIMIT, SMALL_VARINTS, uvarint, varint
from ticdc_sim.errors import ConfigError, DecodeError, EncodeError, shown
from ticdc_sim.golang.strconv import float32
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mounted import mounter
from ticdc_sim.model.mysql import INTEGER_TYPES, ColumnFlag
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.table import ColumnInfo, TableInfo

VERSION = 1  # model.go Version1
ROW, DDL, RESOLVED = 1, 2, 3  # cdc/model/sink.go MessageType
NEW, OLD = 1, 2  # model.go columnGroupTypeNew / columnGroupTypeOld
_M64 = (1 << 64) - 1
_F64 = struct.Struct("<d")

# -- primitives (message_encoder.go; uvarint and varint in `varints`) ------------------------------


# a nullable bytes chunk's length of a value: varint(len), varint(-1) = 01 for NULL
_LENGTHS = SMALL_VARINTS
_NULL_LENGTH = varint(-1)


def _length(value: bytes | None) -> bytes:
    if value is None:
        return _NULL_LENGTH
    n = len(value)
    return _LENGTHS[n] if n < len(_LENGTHS) else varint(n)


def delta_uvarint_chunk(values: Sequence[int]) -> bytes:
    last = values[0]
    out = [uvarint(last)]
    for v in values[1:]:
        out.append(uvarint((v - last) & _M64))
        last = v
    return b"".join(out)


def delta_varint_chunk(values: Sequence[int]) -> bytes:
    if len(values) == 1:
        return varint(values[0])
    deltas = list(map(sub, values[1:], values[:-1]))
    if max(deltas) >= 1 << 63 or min(deltas) < -(1 << 63):  # Go's int64 subtraction wraps
        deltas = list(map(_int64, deltas))
    return varint(values[0]) + b"".join(
        [SMALL_VARINTS[d] if 0 <= d < SMALL_LIMIT else varint(d) for d in deltas]
    )


def _int64(x: int) -> int:
    x &= _M64
    return x - (1 << 64) if x >= 1 << 63 else x


def _string_chunk(texts: Sequence[bytes]) -> bytes:
    return b"".join(map(uvarint, map(len, texts))) + b"".join(texts)


def _size_tables(tables: Sequence[Sequence[int]]) -> bytes:
    data = b"".join(uvarint(len(t)) + delta_varint_chunk(t) for t in tables)
    return data + uvarint(len(data))[::-1]  # read backwards from the end: reversed


# -- values (EncodeTiDBType) ----------------------------------------------------------------------

ValueBytes = Callable[[Any], bytes]
_utf8 = methodcaller("encode", "utf-8", "surrogateescape")


def _decimal(value: Decimal) -> bytes:
    text = str(value)
    return (format(value, "f") if "E" in text else text).encode()


def _float64(value: float) -> bytes:
    return _F64.pack(value)


_TEXT_TYPES = frozenset({M.DATE, M.NEWDATE, M.DATETIME, M.TIMESTAMP, M.DURATION, M.JSON})
_STRING_TYPES = frozenset(
    {M.STRING, M.VAR_STRING, M.VARCHAR, M.TINY_BLOB, M.MEDIUM_BLOB, M.LONG_BLOB, M.BLOB}
)
# types whose value is always written as NULL (EncodeTiDBType returns nil)
_NO_VALUE = frozenset({M.NULL, M.GEOMETRY})


def value_bytes(col: ColumnInfo) -> ValueBytes | None:
    """A column's mounted values -> their bytes; None for bytes as they are (binary strings)."""
    tp = col.tp
    if tp in _TEXT_TYPES or tp == M.TIDB_VECTOR_FLOAT32:
        return _utf8
    if tp == M.NEWDECIMAL:
        return _decimal
    if tp in (M.FLOAT, M.DOUBLE):  # a FLOAT is float64(float32) in 8 bytes
        return _float64
    if tp in (M.ENUM, M.SET):
        mount = mounter(col)
        assert mount is not None
        return lambda v: uvarint(mount(v))
    if tp == M.BIT:
        return uvarint
    if tp == M.YEAR:  # varint whatever the flags say
        return varint
    if tp in INTEGER_TYPES:
        return uvarint if col.unsigned else varint
    if tp in _STRING_TYPES:
        return None if col.is_binary_charset else _utf8
    if tp in _NO_VALUE:
        return _no_value
    raise EncodeError(f"craft cannot write column {col.name!r} of type {tp.name}")


def _no_value(value: Any) -> bytes:
    raise AssertionError("a type craft writes as NULL")


# -- encoding -------------------------------------------------------------------------------------


class _Group:
    """One column group of a table version: which columns, and the bytes fixed for them."""

    def __init__(self, codec: _TableCodec, kind: int, positions: list[int]) -> None:
        self.kind = kind
        self.positions = positions
        self.names = [codec.names[i] for i in positions]
        self.offsets = [codec.offsets[i] for i in positions]
        self.encoders = [codec.encoders[i] for i in positions]
        # after the name ids: the type and flag chunks
        self.fixed = b"".join(uvarint(codec.types[i]) for i in positions) + b"".join(
            uvarint(codec.flags[i]) for i in positions
        )
        self.head = bytes([kind]) + uvarint(len(positions))
        self.estimate = sum(len(n) + 16 for n in self.names)  # model.go newColumnGroup

    def tails(
        self, columns: Sequence[Sequence[Any]], encoded: dict[int, tuple[list[bytes], list[bytes]]]
    ) -> tuple[list[bytes], list[int]]:
        """Per row: the group after its name ids, and its size estimate. `columns` are the
        images' columns; `encoded` the (lengths, values) of columns already written, by
        offset, which the columns written here join."""
        lengths, values = [], []
        for offset, encode in zip(self.offsets, self.encoders, strict=True):
            found = encoded.get(offset)
            if found is None:
                found = encoded[offset] = _encode_column(columns[offset], encode)
            lengths.append(found[0])
            values.append(found[1])
        joined = list(map(b"".join, zip(*values, strict=True)))
        heads = map(b"".join, zip(*lengths, strict=True))
        fmt = self.fixed.replace(b"%", b"%%") + b"%s%s"
        tails = list(map(fmt.__mod__, zip(heads, joined, strict=True)))
        return tails, list(map(add, repeat(self.estimate), map(len, joined)))


def _encode_column(
    column: Sequence[Any], encode: ValueBytes | None
) -> tuple[list[bytes], list[bytes]]:
    """A column's value lengths (nullable chunk varints) and value bytes (b"" for NULL)."""
    if encode is _no_value:
        column = (None,) * len(column)
    if any(map(is_, column, repeat(None))):
        data: list[Any] = [
            None if v is None else v if encode is None else encode(v) for v in column
        ]
        return list(map(_length, data)), [b"" if v is None else v for v in data]
    data = list(column) if encode is None else list(map(encode, column))
    sizes = list(map(len, data))
    if max(sizes) < len(_LENGTHS):
        return list(map(_LENGTHS.__getitem__, sizes)), data
    return list(map(_length, data)), data


class _TableCodec:
    """Everything about one table version that does not depend on the rows."""

    def __init__(self, info: TableInfo, config: CodecConfig) -> None:
        flags = info.ticdc_flags(config.profile)
        columns = info.visible_columns
        self.info = info
        self.names = [c.name.encode() for c in columns]
        self.offsets = [c.offset for c in columns]
        self.types = [int(c.tp) for c in columns]
        self.flags = [int(flags[c.offset]) for c in columns]
        self.encoders = [value_bytes(c) for c in columns]
        every = list(range(len(columns)))
        self.new = _Group(self, NEW, every)
        self.old = _Group(self, OLD, every)
        handle = [i for i in every if self.flags[i] & ColumnFlag.HANDLE_KEY]
        self.delete: _Group | None = self.old
        if config.delete_only_output_handle_key_columns:
            if not handle:  # TiCDC would dereference a nil group here (research §2.3)
                self.delete = None
            else:
                self.delete = _Group(self, OLD, handle)
        self.schema = info.schema.encode()
        self.table = info.name.encode()
        # appendHeader: "4 64-bits integers and two bytes array"
        self.header_estimate = 32 + len(self.schema) + len(self.table)

    def encode(self, kind: str, events: list[RowChangedEvent]) -> list[_Row]:
        """The rows of events of one kind: (event, codec, groups, their tails, estimate)."""
        count = len(events)
        if kind == UPDATE:
            new_columns = list(zip(*map(_COLUMNS, events), strict=True))
            old_columns = list(zip(*map(_PRE_COLUMNS, events), strict=True))
            encoded: dict[int, tuple[list[bytes], list[bytes]]] = {}
            new, new_sizes = self.new.tails(new_columns, encoded)
            # a column no update of the chunk touched holds the same objects: written once
            same = {
                o: encoded[o]
                for o in self.old.offsets
                if o in encoded and all(map(is_, new_columns[o], old_columns[o]))
            }
            old, old_sizes = self.old.tails(old_columns, same)
            estimates = map(add, map(add, new_sizes, old_sizes), repeat(self.header_estimate))
            groups: tuple[_Group, ...] = (self.new, self.old)
            return list(
                zip(
                    events,
                    repeat(self, count),
                    repeat(groups, count),
                    zip(new, old, strict=True),
                    estimates,
                    strict=True,
                )
            )
        group = self.new if kind == INSERT else self.delete
        if group is None:
            raise EncodeError(
                f"{self.info.schema}.{self.info.name} has no handle key columns to send a"
                " delete with (delete-only-output-handle-key-columns)"
            )
        images = map(_COLUMNS if kind == INSERT else _PRE_COLUMNS, events)
        tails, sizes = group.tails(list(zip(*images, strict=True)), {})
        estimates = map(add, sizes, repeat(self.header_estimate))
        return list(
            zip(
                events,
                repeat(self, count),
                repeat((group,), count),
                zip(tails, strict=True),
                estimates,
                strict=True,
            )
        )


# (event, codec, its column groups, their bytes after the name ids, TiCDC's size estimate):
# a plain tuple, made by zip without a Python call per row
_Row = tuple[RowChangedEvent, _TableCodec, tuple[_Group, ...], tuple[bytes, ...], int]
_COLUMNS, _PRE_COLUMNS = columnar.COLUMNS, columnar.PRE_COLUMNS


def _record(rows: Sequence[_Row]) -> Message:
    """One record of rows (RowChangedEventBuffer.Encode)."""
    terms: dict[bytes, int] = {}
    setdefault = terms.setdefault
    events = [r[0] for r in rows]
    codecs = [r[1] for r in rows]
    schema_ids = [setdefault(c.schema, len(terms)) for c in codecs]
    table_ids = [setdefault(c.table, len(terms)) for c in codecs]
    ts = [e.commit_ts for e in events]
    partitions = [
        e.physical_table_id if c.info.partition is not None else -1
        for e, c in zip(events, codecs, strict=True)
    ]
    headers = b"".join(
        (
            delta_uvarint_chunk(ts),
            uvarint(ROW) * len(rows),
            delta_varint_chunk(partitions),
            delta_varint_chunk(schema_ids),
            delta_varint_chunk(table_ids),
        )
    )
    heads: dict[int, bytes] = {}  # per group: its head with this record's name ids
    bodies: list[bytes] = []
    body_sizes: list[int] = []
    group_tables: list[bytes] = []  # each row's column-group size table
    for _, _, groups, tails, _ in rows:
        sizes = []
        for group, tail in zip(groups, tails, strict=True):
            head = heads.get(id(group))
            if head is None:
                ids = [setdefault(n, len(terms)) for n in group.names]
                head = heads[id(group)] = group.head + delta_varint_chunk(ids)
            bodies += (head, tail)
            sizes.append(len(head) + len(tail))
        if len(sizes) == 1:
            group_tables.append(b"\x01" + varint(sizes[0]))
            body_sizes.append(sizes[0])
        else:  # [new, old], the old as a delta
            new, old = sizes
            group_tables.append(b"\x02" + varint(new) + varint(old - new))
            body_sizes.append(new + old)
    dictionary = uvarint(len(terms)) + _string_chunk(list(terms)) if terms else b""
    tables = b"".join(
        (
            b"\x02" + varint(len(headers)) + varint(len(dictionary) - len(headers)),
            uvarint(len(body_sizes)) + delta_varint_chunk(body_sizes),
            *group_tables,
        )
    )
    value = b"".join((_VERSION, headers, *bodies, dictionary, tables, uvarint(len(tables))[::-1]))
    first = codecs[0].info
    return Message(None, value, max(ts), len(rows), first.schema, first.name)


_VERSION = uvarint(VERSION)


def _single(ts: int, kind: int, schema: str, table: str, body: bytes) -> bytes:
    """A DDL or resolved record: one header, its body (NewDDLEventEncoder and
    NewResolvedEventEncoder)."""
    terms = [t.encode() for t in dict.fromkeys(x for x in (schema, table) if x)]
    ids = {t: i for i, t in enumerate(terms)}
    headers = b"".join(
        (
            uvarint(ts),
            uvarint(kind),
            varint(-1),
            varint(ids[schema.encode()] if schema else -1),
            varint(ids[table.encode()] if table else -1),
        )
    )
    dictionary = uvarint(len(terms)) + _string_chunk(terms) if terms else b""
    sizes = _size_tables([(len(headers), len(dictionary)), (len(body),)])
    return b"".join((_VERSION, headers, body, dictionary, sizes))


class Encoder(columnar.BatchEncoder[_TableCodec]):
    def __init__(self, config: CodecConfig) -> None:
        super().__init__()
        if config.profile == "new-arch":
            raise ConfigError(
                "protocol craft does not exist in the new architecture (ticdc-version=new-arch);"
                " TiCDC's pkg/sink/codec/builder.go refuses it too"
            )
        self.config = config

    def new_codec(self, info: TableInfo) -> _TableCodec:
        return _TableCodec(info, self.config)

    def encode_rows(self, events: Sequence[RowChangedEvent]) -> list[_Row]:
        rows: list[Any] = [None] * len(events)
        for kind, positions, chunk in columnar.shapes(events):
            rows = columnar.place(rows, positions, self.codec(chunk[0].table).encode(kind, chunk))
        return rows

    def build_groups(self, groups: Sequence[Sequence[RowChangedEvent]]) -> list[list[Message]]:
        rows = self.encode_rows([e for group in groups for e in group])
        limit, most = self.config.max_message_bytes, self.config.max_batch_size
        out, start = [], 0
        for group in groups:
            messages, batch, size = [], [], 0
            for row in rows[start : start + len(group)]:
                batch.append(row)
                size += row[4]
                # AppendRowChangedEvent flushes after appending, on TiCDC's estimate; a record
                # may so exceed max-message-bytes, and TiCDC does not check it
                if size > limit or len(batch) >= most:
                    messages.append(_record(batch))
                    batch, size = [], 0
            if batch:
                messages.append(_record(batch))
            out.append(messages)
            start += len(group)
        return out

    def encode_ddl(self, event: DDLEvent) -> Message:
        query = event.query.encode()
        body = uvarint(int(event.action)) + uvarint(len(query)) + query
        value = _single(event.commit_ts, DDL, event.schema, event.table, body)
        return Message(None, value, event.commit_ts, 0, event.schema, event.table)

    def encode_checkpoint(self, ts: int) -> Message | None:
        return Message(None, _single(ts, RESOLVED, "", "", b""), ts)


# -- decoding -------------------------------------------------------------------------------------


class _Reader:
    """Bytes read forward with every read checked against `end`."""

    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes, pos: int, end: int) -> None:
        self.data, self.pos, self.end = data, pos, end

    def fail(self, what: str) -> DecodeError:
        return DecodeError(f"not a craft message: {what} at byte {self.pos}")

    def uvarint(self, what: str) -> int:
        x, shift, data = 0, 0, self.data
        while True:
            if self.pos >= self.end:
                raise self.fail(f"{what} runs past its section")
            b = data[self.pos]
            self.pos += 1
            if shift == 63 and b > 1:
                raise self.fail(f"{what} overflows 64 bits")
            x |= (b & 0x7F) << shift
            if b < 0x80:
                return x
            shift += 7

    def varint(self, what: str) -> int:
        z = self.uvarint(what)
        return (z >> 1) ^ -(z & 1)

    def length(self, what: str) -> int:
        n = self.uvarint(what)
        if n > self.end - self.pos:
            raise self.fail(f"{what} {n} exceeds the {self.end - self.pos} bytes left")
        return n

    def take(self, n: int, what: str) -> bytes:
        if n > self.end - self.pos:
            raise self.fail(f"{what} of {n} bytes runs past its section")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def delta_uvarints(self, n: int, what: str) -> list[int]:
        out = [self.uvarint(what)] if n else []
        for _ in range(n - 1):
            out.append((out[-1] + self.uvarint(what)) & _M64)
        return out

    def delta_varints(self, n: int, what: str) -> list[int]:
        out = [self.varint(what)] if n else []
        for _ in range(n - 1):
            out.append(_int64(out[-1] + self.varint(what)))
        return out

    def done(self, what: str) -> None:
        if self.pos != self.end:
            raise self.fail(f"{self.end - self.pos} bytes left over after {what}")


def _trailer(data: bytes) -> tuple[int, int]:
    """The size tables' length, read backwards from the end, and the trailer's own length."""
    x, shift = 0, 0
    for used, b in enumerate(reversed(data[-10:]), start=1):
        x |= (b & 0x7F) << shift
        if b < 0x80:
            return x, used
        shift += 7
    raise DecodeError("not a craft message: no size-table length at its end")


def _value(tp: M, flag: int, raw: bytes, where: _Reader) -> Any:
    """Value bytes back into the value the column held (craft_decoder DecodeTiDBType)."""
    if tp in _TEXT_TYPES or tp == M.TIDB_VECTOR_FLOAT32:
        return _text(raw, where)
    if tp == M.NEWDECIMAL:
        try:
            return Decimal(_text(raw, where))
        except ArithmeticError:
            raise where.fail(f"decimal value {raw!r} is not a number") from None
    if tp in (M.FLOAT, M.DOUBLE):
        if len(raw) != 8:
            raise where.fail(f"a float value of {len(raw)} bytes")
        (number,) = _F64.unpack(raw)
        return float32(number) if tp == M.FLOAT else number
    if tp in _STRING_TYPES:
        return raw if flag & ColumnFlag.BINARY else raw.decode("utf-8", "surrogateescape")
    reader = _Reader(raw, 0, len(raw))
    if tp in (M.ENUM, M.SET, M.BIT) or (tp in INTEGER_TYPES and flag & ColumnFlag.UNSIGNED):
        number = reader.uvarint("an unsigned value")
    elif tp in INTEGER_TYPES or tp == M.YEAR:
        number = reader.varint("a signed value")
    else:
        raise where.fail(f"a value for type {tp.name}, which craft writes as NULL")
    reader.done("a number")
    return number


def _text(raw: bytes, where: _Reader) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise where.fail("a text value that is not UTF-8") from None


_TYPES = {int(t): t for t in M}
_KINDS: dict[tuple[bool, bool], Literal["insert", "update", "delete"]] = {
    (True, False): "insert",
    (True, True): "update",
    (False, True): "delete",
}


class Decoder:
    def __init__(self, config: CodecConfig, upstream: Upstream | None = None) -> None:
        self.config = config

    def decode(self, key: bytes | None, value: bytes | None) -> list[Decoded]:
        """A record's events; DecodeError saying what and where for anything else."""
        data = value or b""
        if len(data) < 2:
            raise DecodeError(f"not a craft message: {len(data)} byte{'' if data else 's'}")
        tables_size, trailer = _trailer(data)
        end = len(data) - trailer
        if tables_size > end:
            raise DecodeError(
                f"not a craft message: size tables of {tables_size} bytes in a {len(data)}-byte"
                " message"
            )
        sizes = _Reader(data, end - tables_size, end)
        meta = sizes.delta_varints(sizes.length("the meta size table's length"), "a meta size")
        if len(meta) != 2 or min(meta) < 0:
            raise sizes.fail(
                f"meta size table {shown(meta)}, expected [header size, dictionary size]"
            )
        count = sizes.length("the event count")
        bodies = sizes.delta_varints(count, "a body size")
        if not count or min(bodies) < 0:
            raise sizes.fail(f"body sizes {shown(bodies)}")
        reader = _Reader(data, 0, end - tables_size)
        if reader.uvarint("the version") != VERSION:
            raise reader.fail(f"version, expected {VERSION}")
        header_end = reader.pos + meta[0]
        dict_start = header_end + sum(bodies)
        if dict_start + meta[1] != reader.end:
            raise reader.fail(
                f"sections of {meta[0]}+{sum(bodies)}+{meta[1]} bytes in a message whose size"
                f" tables leave {reader.end - reader.pos}"
            )
        terms = self._terms(_Reader(data, dict_start, reader.end))
        head = _Reader(data, reader.pos, header_end)
        ts = head.delta_uvarints(count, "a commit ts")
        types = [head.uvarint("an event type") for _ in range(count)]
        partitions = head.delta_varints(count, "a partition")
        schemas = [_term(terms, i, head) for i in head.delta_varints(count, "a schema id")]
        tables = [_term(terms, i, head) for i in head.delta_varints(count, "a table id")]
        head.done("the headers")
        out: list[Decoded] = []
        pos = header_end
        for i, kind in enumerate(types):
            body = _Reader(data, pos, pos + bodies[i])
            pos = body.end
            if kind == RESOLVED:
                body.done("a resolved event")
                out.append(DecodedCheckpoint(ts[i]))
            elif kind == DDL:
                action = body.uvarint("a DDL type")
                query = _text(body.take(body.length("a DDL query's length"), "a query"), body)
                body.done("a DDL event")
                out.append(DecodedDDL(schemas[i], tables[i], ts[i], query, action))
            elif kind == ROW:
                groups = sizes.delta_varints(sizes.length("a group count"), "a group size")
                extra = {} if partitions[i] == -1 else {"ptn": partitions[i]}
                out.append(self._row(body, groups, terms, (schemas[i], tables[i], ts[i]), extra))
            else:
                raise head.fail(f"event type {kind}")
        sizes.done("the size tables")
        return out

    @staticmethod
    def _terms(reader: _Reader) -> list[str]:
        if reader.pos == reader.end:
            return []
        count = reader.length("the term count")
        lengths = [reader.uvarint("a term's length") for _ in range(count)]
        terms = [_text(reader.take(n, "a term"), reader) for n in lengths]
        reader.done("the term dictionary")
        return terms

    def _row(
        self,
        body: _Reader,
        group_sizes: list[int],
        terms: list[str],
        where: tuple[str, str, int],
        extra: dict[str, Any],
    ) -> DecodedRow:
        images: dict[int, dict[str, Any]] = {}
        keys: list[str] = []
        for size in group_sizes:
            if size < 0:
                raise body.fail(f"column group size {size}")
            group = _Reader(body.data, body.pos, body.pos + size)
            if group.end > body.end:
                raise body.fail("a column group runs past its event")
            body.pos = group.end
            kind = group.take(1, "a column group type")[0]
            if kind not in (NEW, OLD) or kind in images:
                raise group.fail(f"column group type {kind}")
            n = group.length("a column count")
            names = [_term(terms, i, group) for i in group.delta_varints(n, "a name id")]
            types = [group.uvarint("a column type") for _ in range(n)]
            flags = [group.uvarint("a column flag") for _ in range(n)]
            lengths = [group.varint("a value length") for _ in range(n)]
            image: dict[str, Any] = {}
            for name, code, flag, length in zip(names, types, flags, lengths, strict=True):
                tp = _TYPES.get(code)
                if tp is None:
                    raise group.fail(f"column {name!r} of type code {code}")
                if length == -1:
                    image[name] = None
                elif length < 0:
                    raise group.fail(f"value length {length}")
                else:
                    image[name] = _value(tp, flag, group.take(length, "a value"), group)
                if flag & ColumnFlag.HANDLE_KEY and name not in keys:
                    keys.append(name)
            group.done("a column group")
            images[kind] = image
        body.done("a row event")
        new, old = images.get(NEW), images.get(OLD)
        row_kind = _KINDS.get((new is not None, old is not None))
        if row_kind is None:
            raise body.fail("a row event without column groups")
        return DecodedRow(row_kind, *where, new, old, extra, tuple(keys))


def _term(terms: list[str], i: int, where: _Reader) -> str:
    if i == -1:
        return ""
    if not 0 <= i < len(terms):
        raise where.fail(f"term id {i} outside the {len(terms)}-term dictionary")
    return terms[i]
