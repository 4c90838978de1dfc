"""Open protocol: batched Kafka records of (key JSON, value JSON) pairs with u64 lengths.

Mirrors tiflow `pkg/sink/codec/open/open_protocol_encoder.go` (framing and batching),
`open_protocol_message.go` (`messageRow`, `messageDDL`), `pkg/sink/codec/internal/column.go`
and `message_key.go`; the new architecture's `pkg/sink/codec/open/` in pingcap/ticdc where the
bytes differ (profile `new-arch`). Research: ticdc-open-craft-dispatch.md §1.

Record key = u64be(1) + per event u64be(len k) + k; value = per event u64be(len v) + v.
Rows batch up to max-batch-size per record and under max-message-bytes with TiCDC's arithmetic;
DDL and checkpoints travel alone.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Iterator, Sequence
from dataclasses import replace
from decimal import Decimal
from functools import partial
from operator import add, methodcaller
from typing import Any

from ticdc_sim.encoders import (
    MAX_RECORD_OVERHEAD,
    CodecConfig,
    Decoded,
    DecodedCheckpoint,
    DecodedDDL,
    DecodedRow,
    Message,
    Upstream,
    columnar,
    large,
)
from ticdc_sim.encoders.columnar import DELETE, UPDATE, Texts, Writer
from ticdc_sim.encoders.reading import Fields, json_document, not_a
from ticdc_sim.errors import DecodeError, EncodeError
from ticdc_sim.golang import json as gj
from ticdc_sim.golang.strconv import float32, go_quote_inner, go_unquote_inner
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mysql import BLOB_TYPES, INTEGER_TYPES, ColumnFlag
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.table import ColumnInfo, TableInfo

BATCH_VERSION = 1  # pkg/sink/codec/encoder.go BatchVersion1
ROW, DDL, RESOLVED = 1, 2, 3  # cdc/model/sink.go MessageType
_U64 = struct.Struct(">Q")
_STRING_TYPES = (M.STRING, M.VARCHAR, M.VAR_STRING)
_INT64_WRAP = 1 << 64
_VERSION = _U64.pack(BATCH_VERSION)  # a record key's first 8 bytes
_FRESH = 8 + MAX_RECORD_OVERHEAD  # a record before its rows: key = u64be(1), and the overhead
# a lone row's record beyond its key and value: the overhead, two lengths, the version
_ROW_OVERHEAD = MAX_RECORD_OVERHEAD + 16 + 8


# a row key's end when the row is sent as too large, by large-message option
_TAILS: dict[str, list[bytes | str]] = {
    "none": [],
    "handle-key-only": [b',"ohk":true'],
    "claim-check": [b',"ccl":', "ccl"],
}
_NEW_ARCH_TAILS: dict[str, list[bytes | str]] = {
    "none": [],
    "handle-key-only": [b',"ohk":true'],
    "claim-check": [b',"ohk":true,"ohk":false,"ccl":', "ccl"],
}


def _writer(col: ColumnInfo, flavor: gj.Flavor) -> Writer:
    """A mounted value as the `"v"` of a column object (research §1.4)."""
    number = columnar.number_writer(col, quoted=False)
    if number is not None:
        return number
    if col.tp in BLOB_TYPES:  # Go marshals []byte as base64, text columns included
        return _BASE64_BYTES if col.is_binary_charset else _BASE64_TEXT
    strings = columnar.strings(flavor)
    if col.tp in _STRING_TYPES and col.is_binary_charset:
        return columnar.mapped(go_quote_inner, strings)
    return strings


# canonical values: bytes in binary columns, str (invalid UTF-8 as surrogate escapes) in text
_BASE64_BYTES = columnar.mapped(partial(binascii.b2a_base64, newline=False), columnar.plain_strings)
_BASE64_TEXT = columnar.mapped(methodcaller("encode", "utf-8", "surrogateescape"), _BASE64_BYTES)


class _TableCodec:
    """Everything about one table version that does not depend on the rows."""

    def __init__(self, info: TableInfo, config: CodecConfig, flavor: gj.Flavor) -> None:
        self.info = info
        self.config = config
        self.flavor = flavor
        new_arch = config.profile == "new-arch"
        flags = info.ticdc_flags(config.profile)
        columns = info.visible_columns
        order = columns if new_arch else sorted(columns, key=lambda c: c.name.encode())
        self.offsets = [c.offset for c in order]
        self.writers = [columnar.nullable(_writer(c, flavor)) for c in order]
        # each column object up to its value: "name":{"t":3,"h":true,"f":11,"v":
        self.heads = [
            gj.dumps(c.name, flavor)
            + b':{"t":%d%s,"f":%d,"v":'
            % (
                c.tp,
                b',"h":true' if flags[c.offset] & ColumnFlag.HANDLE_KEY else b"",
                flags[c.offset],
            )
            for c in order
        ]
        self.handle_positions = [
            i for i, c in enumerate(order) if flags[c.offset] & ColumnFlag.HANDLE_KEY
        ]
        names = (
            b',"scm":' + gj.dumps(info.schema, flavor) + b',"tbl":' + gj.dumps(info.name, flavor)
        )
        ptn: list[bytes | str] = ["ptn"] if info.partition is not None else []
        # v8.5 `ts scm tbl [rid] [ptn] t [ohk] [ccl]`, new architecture `ts scm tbl t [ohk]
        # [ohk:false ccl] [ptn]` (no rid; a claim-check key says ohk twice, true then false)
        self.keys = {
            large: columnar.Layout(
                [b'{"ts":', "ts", names, b',"t":1', *_NEW_ARCH_TAILS[large], *ptn, b"}"]
                if new_arch
                else [b'{"ts":', "ts", names, "rid", *ptn, b',"t":1', *_TAILS[large], b"}"]
            )
            for large in _TAILS
        }
        self.new_arch = new_arch
        self.partitioned = info.partition is not None
        self._values: dict[tuple[str, str], columnar.Layout] = {}

    def picked(self, kind: str, large: str = "none") -> list[int]:
        """The positions a kind writes: all, or the handle key of a delete when asked and of
        a row too large to send whole (rowChangeToMsg)."""
        if large != "none" or (
            kind == DELETE and self.config.delete_only_output_handle_key_columns
        ):
            if not self.handle_positions:
                raise EncodeError(
                    f"{self.info.schema}.{self.info.name} has no handle key columns to send"
                    f" a {kind} with"
                    + (" (delete-only-output-handle-key-columns)" if large == "none" else "")
                )
            return self.handle_positions
        return list(range(len(self.offsets)))

    def value_layout(self, kind: str, large: str = "none") -> columnar.Layout:
        found = self._values.get((kind, large))
        if found is not None:
            return found
        picked = self.picked(kind, large)
        parts: list[bytes | str] = [b"{"]
        if kind == DELETE:
            parts += [b'"d":{', *self._object("d", picked), b"}"]
        else:
            if picked:  # a table of only virtual columns: Go omits the empty map
                parts += [b'"u":{', *self._object("d", picked), b"}"]
            if kind == UPDATE and self.config.open_output_old_value:
                if self.config.only_output_updated_columns:
                    parts.append("old")
                elif picked:
                    parts += [b',"p":{', *self._object("p", picked), b"}"]
        parts.append(b"}")
        layout = self._values[kind, large] = columnar.Layout(parts)
        return layout

    def _object(self, image: str, picked: list[int]) -> Iterator[bytes | str]:
        for n, i in enumerate(picked):
            yield (b"," if n else b"") + self.heads[i]
            yield f"{image}{i}"
            yield b"}"

    def encode(
        self,
        kind: str,
        events: list[RowChangedEvent],
        large: str = "none",
        locations: list[str] | None = None,
    ) -> tuple[Texts, Texts]:
        """The keys and values of events of one kind, in order. `large` and `locations`:
        re-encoded as too large, naming the claim-check files."""
        fields = {"ts": columnar.ints(columnar.commit_ts(events))}
        if locations is not None:
            fields["ccl"] = columnar.Field(b"%s", [gj.dumps(x, self.flavor) for x in locations])
        if self.partitioned:
            ptn = [e.physical_table_id for e in events]
            fields["ptn"] = columnar.prefixed(b',"ptn":', ptn)
        if not self.new_arch:
            fields["rid"] = _row_ids([e.row_id for e in events])
        picked = self.picked(kind, large)
        fields |= columnar.image_fields(kind, events, picked, self.offsets, self.writers)
        config = self.config
        if kind == UPDATE and config.open_output_old_value and config.only_output_updated_columns:
            changed = columnar.changed_members(
                events, picked, self.offsets, fields, self.heads, b"}"
            )
            fields["old"] = columnar.Field(
                b"%s", [b',"p":{' + body + b"}" if body else b"" for body in changed]
            )
        count = len(events)
        return self.keys[large].fill(fields, count), self.value_layout(kind, large).fill(
            fields, count
        )


def _row_ids(ids: list[int]) -> columnar.Field:
    """`"rid"` (Go's int64 of the handle), omitted when 0."""
    if 0 not in ids and max(ids) < 1 << 63:
        return columnar.prefixed(b',"rid":', ids)
    wrapped = [rid - _INT64_WRAP if rid >= 1 << 63 else rid for rid in ids]
    return columnar.Field(b"%s", [b',"rid":%d' % rid if rid else b"" for rid in wrapped])


class Encoder(columnar.BatchEncoder[_TableCodec]):
    def __init__(self, config: CodecConfig) -> None:
        super().__init__()
        self.config = config
        self.flavor = gj.JSONITER if config.profile == "new-arch" else gj.ENCODING_JSON
        self._new_arch = config.profile == "new-arch"

    def new_codec(self, info: TableInfo) -> _TableCodec:
        return _TableCodec(info, self.config, self.flavor)

    def _ddl_key(self, event: DDLEvent) -> bytes:
        """The key of a DDL; rows take theirs from the table's key layout."""
        key: dict[str, Any] = {"ts": event.commit_ts}
        if self._new_arch:  # ts scm tbl t, even when empty
            key |= {"scm": event.schema, "tbl": event.table}
        else:
            if event.schema:
                key["scm"] = event.schema
            if event.table:
                key["tbl"] = event.table
        key["t"] = DDL
        return gj.dumps(key, self.flavor)

    def encode_rows(self, events: list[RowChangedEvent]) -> tuple[Texts, Texts]:
        """Each row's key and value (compressed if asked), in order; a row too large for
        max-message-bytes is handled as large-message-handle-option says."""
        keys: list[Any] = [None] * len(events)
        values: list[Any] = [None] * len(events)
        compression = self.config.large_message_handle_compression
        limit = self.config.max_message_bytes - _ROW_OVERHEAD
        too_large: list[tuple[int, str]] = []  # (position, kind)
        for kind, positions, rows in columnar.shapes(events):
            k, v = self.codec(rows[0].table).encode(kind, rows)
            if compression != "none":
                v = [large.compress(compression, text) for text in v]
            if max(map(len, k)) + max(map(len, v)) > limit:  # a bound: most batches pass
                for at, size in enumerate(map(add, map(len, k), map(len, v))):
                    if size > limit:
                        too_large.append((at if positions is None else positions[at], kind))
            keys = columnar.place(keys, positions, k)
            values = columnar.place(values, positions, v)
        for i, kind in sorted(too_large):
            keys[i], values[i] = self._large(kind, events[i], keys[i], values[i])
        return keys, values

    def _large(
        self, kind: str, row: RowChangedEvent, key: bytes, value: bytes
    ) -> tuple[bytes, bytes]:
        """What is sent for a row too large to send whole (AppendRowChangedEvent)."""
        config = self.config
        option = config.large_message_handle_option
        if option == "none":
            raise EncodeError(_too_large(row, len(key) + len(value), config.max_message_bytes))
        locations = None
        if option == "claim-check":
            # the file holds the row as a record of its own (newMessage / enhancedKeyValue)
            claim = large.claim(_frame_keys([key]), _frame_values([value]), raw=False)
            self.claims.append(claim)
            locations = [large.location(config.claim_check_storage_uri, claim.name)]
        (key,), (text,) = self.codec(row.table).encode(kind, [row], option, locations)
        value = large.compress(config.large_message_handle_compression, text)
        if len(key) + len(value) + _ROW_OVERHEAD > config.max_message_bytes:
            raise EncodeError(
                _too_large(row, len(key) + len(value), config.max_message_bytes)
                + f", even with only its handle-key columns ({option})"
            )
        return key, value

    def row_key_value(self, event: RowChangedEvent) -> tuple[bytes, bytes]:
        (key,), (value,) = self.encode_rows([event])
        return key, value

    def build_groups(self, groups: Sequence[Sequence[RowChangedEvent]]) -> list[list[Message]]:
        events = [e for group in groups for e in group]
        keys, values = self.encode_rows(events)
        out, start = [], 0
        for group in groups:
            end = start + len(group)
            out.append(self._records(events[start:end], keys[start:end], values[start:end]))
            start = end
        return out

    def _records(self, events: list[RowChangedEvent], keys: Texts, values: Texts) -> list[Message]:
        """Rows batched into records: at most max-batch-size rows, and under
        max-message-bytes by TiCDC's arithmetic (open_protocol_encoder.go)."""
        if not events:
            return []
        limit, most = self.config.max_message_bytes, self.config.max_batch_size
        key_frames, value_frames = _frames(keys), _frames(values)
        sizes = list(map(add, map(len, key_frames), map(len, value_frames)))
        largest = max(sizes)
        if largest + _FRESH > limit:  # a row encode_rows let pass: only built by hand
            at = sizes.index(largest)
            raise EncodeError(_too_large(events[at], largest - 16, limit))
        if _FRESH + most * largest <= limit:  # no record can fill up: max-batch-size decides
            starts = list(range(0, len(sizes), most))
        else:
            starts, total = [0], _FRESH
            for i, size in enumerate(sizes):
                if i > starts[-1] and (i - starts[-1] >= most or total + size > limit):
                    starts.append(i)
                    total = _FRESH
                total += size
        ends = [*starts[1:], len(sizes)]
        return [
            Message(
                _VERSION + b"".join(key_frames[start:end]),
                b"".join(value_frames[start:end]),
                max(map(columnar.COMMIT_TS, events[start:end])),
                end - start,
            )
            for start, end in zip(starts, ends, strict=True)
        ]

    def encode_ddl(self, event: DDLEvent) -> Message:
        key = self._ddl_key(event)
        value = gj.dumps({"q": event.query, "t": int(event.action)}, self.flavor)
        value = large.compress(self.config.large_message_handle_compression, value)
        return Message(
            _frame_keys([key]),
            _frame_values([value]),
            event.commit_ts,
            0,
            event.schema,
            event.table,
        )

    def encode_checkpoint(self, ts: int) -> Message | None:
        key = gj.dumps({"ts": ts, "t": RESOLVED}, self.flavor)
        return Message(_frame_keys([key]), _U64.pack(0), ts)


def _too_large(row: RowChangedEvent, size: int, limit: int) -> str:
    """ErrMessageTooLarge; `size` the row's key and value, without framing."""
    return (
        f"an open-protocol row of {size + _ROW_OVERHEAD} bytes for {row.table.schema}."
        f"{row.table.name} at commit ts {row.commit_ts} exceeds max-message-bytes {limit}"
        " (TiCDC: ErrMessageTooLarge)"
    )


def _frames(texts: Texts) -> Texts:
    """Each text after its u64be length."""
    return list(map(add, map(_U64.pack, map(len, texts)), texts))


def _frame_keys(keys: list[bytes]) -> bytes:
    return _VERSION + b"".join(_frames(keys))


def _frame_values(values: list[bytes]) -> bytes:
    return b"".join(_frames(values))


# -- decoding ----------------------------------------------------------------------------------

PROTOCOL = "open-protocol"
_MYSQL_TYPES = {int(t): t for t in M}


def split_frames(data: bytes, start: int, what: str) -> list[bytes]:
    """The u64be-length-prefixed frames of a record's key (after its version) or value."""
    out, pos = [], start
    while pos < len(data):
        if len(data) - pos < 8:
            raise DecodeError(
                f"{not_a(PROTOCOL)}: {len(data) - pos} bytes at byte {pos} of the"
                f" {what}, too few for a length"
            )
        (size,) = _U64.unpack_from(data, pos)
        if size > len(data) - pos - 8:
            raise DecodeError(
                f"{not_a(PROTOCOL)}: the {what}'s event at byte {pos} claims"
                f" {size} bytes, {len(data) - pos - 8} are left"
            )
        out.append(data[pos + 8 : pos + 8 + size])
        pos += 8 + size
    return out


def parse_column(column: dict[str, Any]) -> Any:
    """A column object's `"v"` back into a value, by its type code and flags."""
    value = column["v"]
    if value is None:
        return None
    tp, flag = M(column["t"]), column["f"]
    binary = bool(flag & ColumnFlag.BINARY)
    if tp in INTEGER_TYPES or tp in (M.YEAR, M.BIT, M.ENUM, M.SET):
        return int(value)
    if tp == M.FLOAT:
        return float32(float(value))  # the float32 the column holds
    if tp == M.DOUBLE:
        return float(value)
    if tp == M.NEWDECIMAL:
        return Decimal(value)
    if tp in BLOB_TYPES:
        raw = base64.b64decode(value, validate=True)
        return raw if binary else raw.decode("utf-8", "surrogateescape")
    if tp in _STRING_TYPES and binary:
        return go_unquote_inner(value)
    return value


class Decoder:
    """open_protocol_decoder.go, strict: a record that is not what the open protocol writes
    is a DecodeError naming the event, the field or the byte (`reading`)."""

    def __init__(self, config: CodecConfig, upstream: Upstream | None = None) -> None:
        self.config = config
        self.upstream = upstream

    def decode(self, key: bytes | None, value: bytes | None, claimed: str = "") -> list[Decoded]:
        if key is None or len(key) < 8 or _U64.unpack_from(key, 0)[0] != BATCH_VERSION:
            raise DecodeError(f"{not_a(PROTOCOL)}: the key does not start with the batch version 1")
        keys = split_frames(key, 8, "key")
        values = split_frames(value or b"", 0, "value")
        if len(values) != len(keys):
            raise DecodeError(
                f"{not_a(PROTOCOL)}: {len(keys)} events in the key, {len(values)} in the value"
            )
        compression = self.config.large_message_handle_compression
        out: list[Decoded] = []
        for i, (raw_key, raw_value) in enumerate(zip(keys, values, strict=True)):
            k = Fields(json_document(raw_key, PROTOCOL, f"key[{i}]"), PROTOCOL, f"key[{i}]")
            kind = k.integer("t")
            if kind == RESOLVED:
                out.append(DecodedCheckpoint(k.ts("ts") or 0))
                continue
            data = large.decompress(compression, raw_value, PROTOCOL)
            v = Fields(json_document(data, PROTOCOL, f"value[{i}]"), PROTOCOL, f"value[{i}]")
            schema, table = k.maybe("scm", str) or "", k.maybe("tbl", str) or ""
            if kind == DDL:
                out.append(DecodedDDL(schema, table, k.ts("ts"), v.text("q"), v.integer("t")))
                continue
            if kind != ROW:
                raise k.fail(f"`key[{i}].t` {kind} is not 1 (row), 2 (DDL) or 3 (resolved)")
            row = _row(k, v, schema, table)
            location = k.maybe("ccl", str)
            if location and claimed:
                raise DecodeError(f"claim-check file {claimed!r} names another one, {location!r}")
            if k.maybe("ohk", bool):  # open_protocol_decoder.go NextRowChangedEvent
                row = large.from_upstream(row, self.upstream)
            elif location and self.upstream is not None:
                claim = large.read_claim(self.upstream, location, False, PROTOCOL)
                out += self.decode(*claim, claimed=location)
                continue
            named = location or claimed  # as sent without an upstream, or as read from the file
            out.append(
                replace(row, extra={**row.extra, "claimCheckLocation": named}) if named else row
            )
        return out


def _image(v: Fields, field: str) -> dict[str, Any] | None:
    """The columns of `u`, `p` or `d`, each `{"t": type, "f": flags, "v": value}`."""
    image = v.maybe(field, dict)
    if image is None:
        return None
    out = {}
    for name, raw in image.items():
        column = Fields(raw, PROTOCOL, f"{v.path}.{field}.{name}")
        tp = _MYSQL_TYPES.get(column.integer("t"))
        if tp is None:
            raise column.fail(f"`{column.path}.t` {column.values['t']} is not a MySQL type code")
        column.integer("f")
        if "v" not in column.values:
            raise column.fail(f"`{column.path}.v` is missing")
        column.maybe("v", (str, int, float))  # a JSON scalar (or null) for parse_column
        out[name] = column.convert("v", tp.name, parse_column, raw)
    return out


def _handle(image: dict[str, Any] | None, v: Fields, field: str) -> tuple[str, ...]:
    raw = v.values.get(field) if image is not None else None
    return tuple(n for n, c in (raw or {}).items() if c["f"] & ColumnFlag.HANDLE_KEY)


def _row(k: Fields, v: Fields, schema: str, table: str) -> DecodedRow:
    extra: dict[str, Any] = {name: k.values[name] for name in ("rid", "ptn") if name in k.values}
    new, old, gone = _image(v, "u"), _image(v, "p"), _image(v, "d")
    handle = _handle(gone, v, "d") or _handle(new, v, "u")
    ts = k.ts("ts")
    if gone is not None:
        return DecodedRow("delete", schema, table, ts, None, gone, extra, handle)
    if new is None:
        raise v.fail(f"`{v.path}` has no columns: none of u, p or d")
    if old is not None:
        return DecodedRow("update", schema, table, ts, new, {**new, **old}, extra, handle)
    return DecodedRow("insert", schema, table, ts, new, None, extra, handle)
