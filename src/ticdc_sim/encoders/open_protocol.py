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
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import orjson

from ticdc_sim.encoders import (
    MAX_RECORD_OVERHEAD,
    CodecConfig,
    Decoded,
    DecodedCheckpoint,
    DecodedDDL,
    DecodedRow,
    Message,
    rowcode,
)
from ticdc_sim.encoders import gojson as gj
from ticdc_sim.encoders.types import BLOB_TYPES, INTEGER_TYPES
from ticdc_sim.errors import EncodeError
from ticdc_sim.golang import float32, go_quote_inner, go_unquote_inner, json_number
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mounted import mounter
from ticdc_sim.model.mysql import ColumnFlag
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.table import ColumnInfo, TableInfo

BATCH_VERSION = 1  # pkg/sink/codec/encoder.go BatchVersion1
ROW, DDL, RESOLVED = 1, 2, 3  # cdc/model/sink.go MessageType
_U64 = struct.Struct(">Q")
_STRING_TYPES = (M.STRING, M.VARCHAR, M.VAR_STRING)
_INT64_WRAP = 1 << 64


def _template(col: ColumnInfo) -> tuple[str, Any]:
    """A mounted value as the `"v"` of a column object (research §1.4): the expression
    template and the function it calls, if any."""
    tp = col.tp
    mount = mounter(col)
    if tp in (M.FLOAT, M.DOUBLE):
        bits = 32 if tp == M.FLOAT else 64
        return "None if {v} is None else _call({v})", lambda v: gj.RawJSON(json_number(v, bits))
    if tp == M.NEWDECIMAL:
        return rowcode.DECIMAL, None
    if mount is not None:
        return "_call({v})", mount
    if tp in BLOB_TYPES:  # Go marshals []byte as base64, text columns included
        return "None if {v} is None else _call({v})", lambda v: base64.b64encode(_bytes(v)).decode()
    if tp in _STRING_TYPES and col.is_binary_charset:
        return "None if {v} is None else _call({v})", go_quote_inner
    return rowcode.AS_IS, None


def _bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")


class _TableCodec:
    def __init__(self, info: TableInfo, config: CodecConfig, flavor: gj.Flavor) -> None:
        self.info = info
        new_arch = config.profile == "new-arch"
        flags = info.ticdc_flags("new-arch" if new_arch else "classic")
        columns = info.visible_columns
        order = columns if new_arch else sorted(columns, key=lambda c: c.name.encode())
        env: dict[str, Any] = {}
        fields = []
        for i, c in enumerate(order):
            template, call = _template(c)
            if call is not None:
                env[f"_call{i}"] = call
                template = template.replace("_call(", f"_call{i}(")
            flag = int(flags[c.offset])
            handle = ', "h": True' if flag & ColumnFlag.HANDLE_KEY else ""
            column = f'{{"t": {int(c.tp)}{handle}, "f": {flag}, "v": ({template})}}'
            fields.append((c.name, c.offset, column))
        # the column objects of a whole image, and picked ones (only-updated, handle key only)
        self.image = rowcode.compile_row("open_protocol_columns", fields, env)
        self.offsets = {c.name: c.offset for c in order}
        self.handle_offsets = frozenset(
            c.offset for c in order if flags[c.offset] & ColumnFlag.HANDLE_KEY
        )
        # the row key, but ts, rid and ptn
        names = (
            b',"scm":' + gj.dumps(info.schema, flavor) + b',"tbl":' + gj.dumps(info.name, flavor)
        )
        self.key_head = b'{"ts":%d' + names.replace(b"%", b"%%")
        self.partitioned = info.partition is not None

    def columns(
        self, row: tuple[Any, ...], keep: Callable[[int], bool] | None = None
    ) -> dict[str, Any]:
        image = self.image(row)
        if keep is None:
            return image
        offsets = self.offsets
        return {name: column for name, column in image.items() if keep(offsets[name])}


class Encoder:
    def __init__(self, config: CodecConfig) -> None:
        self.config = config
        self.flavor = gj.JSONITER if config.profile == "new-arch" else gj.ENCODING_JSON
        self._new_arch = config.profile == "new-arch"
        self._tables: dict[int, _TableCodec] = {}
        self._records: list[tuple[list[bytes], list[bytes], int, int]] = []  # keys, values, ts, n
        self._sizes: list[int] = []  # each record's Length()

    def _new_codec(self, info: TableInfo) -> _TableCodec:
        # callers look up `_tables` inline (it is per row); ids are reused once a version is gone
        codec = self._tables[id(info)] = _TableCodec(info, self.config, self.flavor)
        return codec

    def _ddl_key(self, event: DDLEvent) -> bytes:
        """The key of a DDL; rows take theirs from `_row_key`."""
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

    def _row_key(self, codec: _TableCodec, event: RowChangedEvent) -> bytes:
        """A row's key, from the table's pre-written head: classic `ts scm tbl [rid] [ptn] t`,
        new architecture `ts scm tbl t [ptn]` (no rid)."""
        key = codec.key_head % event.commit_ts
        ptn = b',"ptn":%d' % event.physical_table_id if codec.partitioned else b""
        if self._new_arch:
            return key + b',"t":1' + ptn + b"}"
        rid = event.row_id
        if rid:
            key += b',"rid":%d' % (rid - _INT64_WRAP if rid >= 1 << 63 else rid)
        return key + ptn + b',"t":1}'

    def row_key_value(self, event: RowChangedEvent) -> tuple[bytes, bytes]:
        info = event.table
        codec = self._tables.get(id(info))
        if codec is None or codec.info is not info:
            codec = self._new_codec(info)
        key = self._row_key(codec, event)
        pre, post = event.pre_columns, event.columns
        value: dict[str, Any] = {}
        if post is not None:
            value["u"] = codec.image(post)
            if pre is not None and self.config.open_output_old_value:
                keep = None
                if self.config.only_output_updated_columns:
                    keep = lambda o: pre[o] != post[o]  # noqa: E731
                old = codec.columns(pre, keep)
                if old:
                    value["p"] = old
        elif pre is not None:
            keep = None
            if self.config.delete_only_output_handle_key_columns:
                handles = codec.handle_offsets
                if not handles:
                    raise EncodeError(
                        f"delete-only-output-handle-key-columns: {info.schema}.{info.name} has"
                        " no handle key columns"
                    )
                keep = handles.__contains__
            value["d"] = codec.columns(pre, keep)
        if not value.get("u", True):  # a table of only virtual columns: Go omits empty maps
            del value["u"]
        return key, gj.dumps(value, self.flavor)

    def append_row(self, event: RowChangedEvent) -> None:
        key, value = self.row_key_value(event)
        limit = self.config.max_message_bytes
        length = len(key) + len(value) + MAX_RECORD_OVERHEAD + 16 + 8
        if length > limit:
            raise EncodeError(
                f"an open-protocol row of {length} bytes for {event.table.schema}."
                f"{event.table.name} at commit ts {event.commit_ts} exceeds max-message-bytes"
                f" {limit} (TiCDC: ErrMessageTooLarge)"
            )
        added = len(key) + len(value) + 16
        if (
            not self._records
            or self._records[-1][3] >= self.config.max_batch_size
            or self._sizes[-1] + added > limit
        ):
            self._records.append(([], [], 0, 0))
            self._sizes.append(8 + MAX_RECORD_OVERHEAD)  # a fresh record: key = u64be(1)
        keys, values, ts, count = self._records[-1]
        keys.append(key)
        values.append(value)
        self._records[-1] = (keys, values, max(ts, event.commit_ts), count + 1)
        self._sizes[-1] += added

    def build(self) -> list[Message]:
        out = [
            Message(_frame_keys(keys), _frame_values(values), ts, count)
            for keys, values, ts, count in self._records
        ]
        self._records, self._sizes = [], []
        return out

    def encode_ddl(self, event: DDLEvent) -> Message:
        key = self._ddl_key(event)
        value = gj.dumps({"q": event.query, "t": int(event.action)}, self.flavor)
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


def _frame_keys(keys: list[bytes]) -> bytes:
    return _U64.pack(BATCH_VERSION) + b"".join(_U64.pack(len(k)) + k for k in keys)


def _frame_values(values: list[bytes]) -> bytes:
    return b"".join(_U64.pack(len(v)) + v for v in values)


# -- decoding ----------------------------------------------------------------------------------


def _split(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        (size,) = _U64.unpack_from(data, pos)
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
        raw = base64.b64decode(value)
        return raw if binary else raw.decode("utf-8", "surrogateescape")
    if tp in _STRING_TYPES and binary:
        return go_unquote_inner(value)
    return value


class Decoder:
    def __init__(self, config: CodecConfig) -> None:
        self.config = config

    def decode(self, key: bytes | None, value: bytes | None) -> list[Decoded]:
        if key is None or len(key) < 8 or _U64.unpack_from(key, 0)[0] != BATCH_VERSION:
            raise ValueError("not an open-protocol record: the key lacks the batch version")
        keys = _split(key[8:])
        values = _split(value or b"")
        out: list[Decoded] = []
        for i, raw_key in enumerate(keys):
            k = orjson.loads(raw_key)
            kind = k["t"]
            if kind == RESOLVED:
                out.append(DecodedCheckpoint(k["ts"]))
                continue
            v = orjson.loads(values[i])
            schema, table = k.get("scm", ""), k.get("tbl", "")
            if kind == DDL:
                out.append(DecodedDDL(schema, table, k["ts"], v["q"], v["t"]))
                continue
            extra = {name: k[name] for name in ("rid", "ptn") if name in k}
            new = {n: parse_column(c) for n, c in v["u"].items()} if "u" in v else None
            old = {n: parse_column(c) for n, c in v["p"].items()} if "p" in v else None
            image = v.get("d") or v.get("u") or {}
            handle = tuple(n for n, c in image.items() if c["f"] & ColumnFlag.HANDLE_KEY)
            ts = k["ts"]
            if "d" in v:
                gone = {n: parse_column(c) for n, c in v["d"].items()}
                out.append(DecodedRow("delete", schema, table, ts, None, gone, extra, handle))
            elif old is not None:
                pre = {**(new or {}), **old}
                out.append(DecodedRow("update", schema, table, ts, new, pre, extra, handle))
            else:
                out.append(DecodedRow("insert", schema, table, ts, new, None, extra, handle))
        return out
