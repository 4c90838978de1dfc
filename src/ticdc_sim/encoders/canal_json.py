"""canal-json: one Kafka record per row, no key; DDL and TIDB_WATERMARK records.

Mirrors tiflow `pkg/sink/codec/canal/canal_json_row_event_encoder.go` (the easyjson streaming
writer: field order `id database table pkNames isDdl type es ts sql sqlType mysqlType old data
_tidb`), `canal_json_message.go` (DDL and WATERMARK: goccy `json.Marshal`, `data` before `old`)
and `canal_entry.go` (values, Java types, DDL event types). Research:
ticdc-canal-simple-avro-debezium-csv.md §1.

`ts` is the time of encoding in TiCDC (`time.Now()`); here it is the simulated clock: the
commit's physical time (`es`) plus a replication lag of `REPLICATION_LAG_MS`, so it is never
earlier than `es`, grows with it, and a seed gives the same bytes. `mysqlType` is built from a Go
map in TiCDC and so comes out in random key order; we write table order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from itertools import repeat
from operator import add, rshift
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
    large,
)
from ticdc_sim.encoders.columnar import DELETE, UPDATE, Texts, Writer
from ticdc_sim.encoders.reading import Fields, json_document
from ticdc_sim.encoders.types import (
    DDL_TYPES,
    java_type,
    promoted_java_type,
    short_type,
    unsigned_promotion,
)
from ticdc_sim.errors import DecodeError, shown
from ticdc_sim.golang import json as gj
from ticdc_sim.golang.strconv import float32
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mysql import BLOB_TYPES, ColumnFlag, TiDBFlag
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.table import ColumnInfo, TableInfo
from ticdc_sim.model.tso import PHYSICAL_SHIFT_BITS, physical_ms
from ticdc_sim.model.type_names import full_type

PROTOCOL = "canal-json"
# from commit to encoding: TiCDC's resolved-ts interval and sink batching, simulated
REPLICATION_LAG_MS = 200

# what `_tidb` says of a row re-encoded as too large, by large-message option
_LARGE_TAILS: dict[str, list[bytes | str]] = {
    "none": [],
    "handle-key-only": [b',"onlyHandleKey":true'],
    "claim-check": [b',"claimCheckLocation":', "ccl"],
}


def _writer(col: ColumnInfo) -> Writer:
    """A column's values as the strings canal-json writes (canal_entry.go formatValue)."""
    number = columnar.number_writer(col, quoted=True)
    if number is not None:
        return number
    if _is_binary_string(col):
        return _LATIN1
    return _STRINGS  # text, dates and times, JSON, VECTOR: already TiDB's strings


_STRINGS = columnar.strings(gj.EASYJSON)
_LATIN1 = columnar.mapped(lambda v: v.decode("latin-1"), _STRINGS)
_STRING_TYPES = (M.STRING, M.VARCHAR, M.VAR_STRING)


def _is_binary_string(col: ColumnInfo) -> bool:
    return col.is_binary_charset and (col.tp in BLOB_TYPES or col.tp in _STRING_TYPES)


class _TableCodec:
    """Everything about one table version that does not depend on the rows."""

    def __init__(self, info: TableInfo, config: CodecConfig) -> None:
        self.info = info
        self.config = config
        self.columns = info.visible_columns
        self.offsets = [c.offset for c in self.columns]
        self.writers = [columnar.nullable(_writer(c)) for c in self.columns]
        self.keys = [gj.dumps(c.name, gj.EASYJSON) + b":" for c in self.columns]
        self.java = [java_type(c) for c in self.columns]
        self.promotions = [unsigned_promotion(c) for c in self.columns]
        describe = full_type if config.content_compatible else short_type
        self.mysql_types = [describe(c) for c in self.columns]
        flags = info.ticdc_flags(config.profile)
        handle = ColumnFlag.HANDLE_KEY
        self.handle_positions = [i for i, c in enumerate(self.columns) if flags[c.offset] & handle]
        pk_names = [c.name for c in self.columns if c.flag & TiDBFlag.PRI_KEY]
        self.head = (
            b'{"id":0,"database":'
            + gj.dumps(info.schema, gj.EASYJSON)
            + b',"table":'
            + gj.dumps(info.name, gj.EASYJSON)
            + b',"pkNames":'
            + gj.dumps(pk_names, gj.EASYJSON)
            + b',"isDdl":false,"type":"'
        )
        self.layouts: dict[tuple[str, str], columnar.Layout] = {}
        self.sql_types: dict[tuple[str, str], columnar.Field] = {}

    def picked(self, kind: str, large: str = "none") -> list[int]:
        """The positions a kind writes: all, or the handle key of a delete when asked and of
        a row too large to send whole."""
        if large != "none" or (
            kind == DELETE and self.config.delete_only_output_handle_key_columns
        ):
            return self.handle_positions
        return list(range(len(self.columns)))

    def sql_type(self, row: tuple[Any, ...] | None, picked: list[int]) -> bytes:
        """`sqlType`: Java types, unsigned ones promoted by the row's values."""
        if not picked:
            return b"null"
        types = {
            self.columns[i].name: promoted_java_type(
                self.java[i], self.promotions[i], None if row is None else row[self.offsets[i]]
            )
            for i in picked
        }
        return gj.dumps(types, gj.EASYJSON)

    def _layout(self, kind: str, large: str) -> columnar.Layout:
        """A kind's record; `large` the large-message option it is re-encoded for, if any."""
        picked = self.picked(kind, large)
        mysql_types = {self.columns[i].name: self.mysql_types[i] for i in picked}
        parts: list[bytes | str] = [
            self.head + kind.upper().encode() + b'","es":',
            "es",
            b',"ts":',
            "ts",
            b',"sql":"","sqlType":',
            "sqlType",
            b',"mysqlType":' + gj.dumps(mysql_types, gj.EASYJSON) + b',"old":',
        ]
        if kind != UPDATE:
            parts.append(b"null")
        elif self.config.only_updated:
            parts.append("old")
        else:
            parts += [b"[{", *self._object("p", picked), b"}]"]
        parts += [b',"data":[{', *self._object("d", picked), b"}]"]
        if self.config.enable_tidb_extension:
            parts += [b',"_tidb":{"commitTs":', "commitTs", *_LARGE_TAILS[large], b"}"]
        parts.append(b"}")
        return columnar.Layout(parts)

    def _object(self, image: str, picked: list[int]) -> Iterator[bytes | str]:
        return columnar.members(self.keys, image, picked)

    def encode(
        self,
        kind: str,
        events: list[RowChangedEvent],
        ts: list[int],
        large: str = "none",
        locations: list[str] | None = None,
    ) -> Texts:
        """The records of events of one kind, in order; `ts` their commit ts. `large` and
        `locations`: re-encoded as too large (newJSONMessageForDML's messageTooLarge), with
        the claim-check files they name."""
        fields = {
            "es": columnar.Field(b"%d", es := list(map(rshift, ts, repeat(PHYSICAL_SHIFT_BITS)))),
            "ts": columnar.Field(b"%d", list(map(add, es, repeat(REPLICATION_LAG_MS)))),
            "commitTs": columnar.Field(b"%d", ts),
        }
        if locations is not None:
            fields["ccl"] = columnar.Field(b"%s", [gj.dumps(x, gj.EASYJSON) for x in locations])
        picked = self.picked(kind, large)
        fields |= columnar.image_fields(kind, events, picked, self.offsets, self.writers)
        if kind == UPDATE and self.config.only_updated:
            changed = columnar.changed_members(events, picked, self.offsets, fields, self.keys)
            fields["old"] = columnar.Field(b"[{%s}]", [body or b"" for body in changed])
        shape = (kind, large)
        layout = self.layouts.get(shape)
        if layout is None:
            layout = self.layouts[shape] = self._layout(kind, large)
            constant = self.sql_type(None, picked).replace(b"%", b"%%")
            self.sql_types[shape] = columnar.Field(constant)
        fields["sqlType"] = self.sql_types[shape]
        if any(self.promotions[i] is not None for i in picked):
            rows = columnar.images(kind, events)
            if self._promoted(rows, picked):
                sql_types = [self.sql_type(r, picked) for r in rows]
                fields["sqlType"] = columnar.Field(b"%s", sql_types)
        return layout.fill(fields, len(events))

    def _promoted(self, rows: list[Any], picked: list[int]) -> bool:
        """Whether an unsigned value beyond the signed range moves a Java type up."""
        for i in picked:
            promotion = self.promotions[i]
            if promotion is not None:
                offset = self.offsets[i]
                if any(r[offset] is not None and r[offset] > promotion[0] for r in rows):
                    return True
        return False


class Encoder(columnar.RowEncoder[_TableCodec]):
    protocol = "canal-json"

    def __init__(self, config: CodecConfig) -> None:
        super().__init__()
        self.config = config

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
        return codec.encode(kind, rows, columnar.commit_ts(rows), large, locations)

    def encode_ddl(self, event: DDLEvent) -> Message:
        es = physical_ms(event.commit_ts)
        value: dict[str, Any] = {
            "id": 0,
            "database": event.schema,
            "table": event.table,
            "pkNames": None,
            "isDdl": True,
            "type": DDL_TYPES.get(event.action, "QUERY"),
            "es": es,
            "ts": es + REPLICATION_LAG_MS,
            "sql": event.query,
            "sqlType": None,
            "mysqlType": None,
            "data": None,
            "old": None,
        }
        if self.config.enable_tidb_extension:
            value["_tidb"] = {"commitTs": event.commit_ts}
        text = large.compress(
            self.config.large_message_handle_compression, gj.dumps(value, gj.GOCCY)
        )
        return Message(None, text, event.commit_ts, 0, event.schema, event.table)

    def encode_checkpoint(self, ts: int) -> Message | None:
        if not self.config.enable_tidb_extension:
            return None  # canal-json sends checkpoints only as the TiDB extension
        es = physical_ms(ts)
        value = {
            "id": 0,
            "database": "",
            "table": "",
            "pkNames": None,
            "isDdl": False,
            "type": "TIDB_WATERMARK",
            "es": es,
            "ts": es + REPLICATION_LAG_MS,
            "sql": "",
            "sqlType": None,
            "mysqlType": None,
            "data": None,
            "old": None,
            "_tidb": {"watermarkTs": ts},
        }
        text = large.compress(
            self.config.large_message_handle_compression, gj.dumps(value, gj.GOCCY)
        )
        return Message(None, text, ts)


# -- decoding ----------------------------------------------------------------------------------

_INTEGER_NAMES = ("tinyint", "smallint", "mediumint", "int", "bigint", "bit", "year", "enum", "set")
_BINARY_NAMES = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")


def parse_value(mysql_type: str, text: str | None) -> Any:
    """A `data`/`old` string back into a value, by the column's `mysqlType`."""
    if text is None:
        return None
    name = mysql_type.split("(")[0].split(" ")[0]
    if name in _INTEGER_NAMES:
        return int(text)
    if name == "float":
        return float32(float(text))  # the float32 the column holds
    if name == "double":
        return float(text)
    if name == "decimal":
        return Decimal(text)
    if name in _BINARY_NAMES:
        return text.encode("latin-1")
    return text


_ROW_KINDS: dict[str, Literal["insert", "update", "delete"]] = {
    "INSERT": "insert",
    "UPDATE": "update",
    "DELETE": "delete",
}


class Decoder:
    """canal_json_decoder.go, strict: a record that is not what canal-json writes is a
    DecodeError naming the field (`reading`)."""

    def __init__(self, config: CodecConfig, upstream: Upstream | None = None) -> None:
        self.config = config
        self.upstream = upstream

    def decode(self, key: bytes | None, value: bytes | None) -> list[Decoded]:
        return [] if value is None else [self._decode(value)]

    def _decode(self, value: bytes, claimed: str = "") -> Decoded:
        data = large.decompress(self.config.large_message_handle_compression, value, PROTOCOL)
        message = Fields(json_document(data, PROTOCOL), PROTOCOL)
        tidb = message.nested("_tidb", optional=True)
        kind = message.text("type")
        if kind == "TIDB_WATERMARK":
            return DecodedCheckpoint(tidb.integer("watermarkTs"))
        commit_ts = tidb.ts("commitTs", optional=True)
        if message.need("isDdl", bool):
            return DecodedDDL(
                message.text("database"),
                message.text("table"),
                commit_ts,
                message.text("sql"),
                kind,
            )
        # canal_json_decoder.go NextRowChangedEvent: handle-key-only first, then claim-check
        row = self._row(message, kind, commit_ts)
        if tidb.maybe("onlyHandleKey", bool):
            return large.from_upstream(row, self.upstream)
        location = tidb.maybe("claimCheckLocation", str)
        if location and claimed:
            raise DecodeError(f"claim-check file {claimed!r} names another one, {location!r}")
        if location and self.upstream is not None:
            _, whole = large.read_claim(
                self.upstream, location, self.config.claim_check_raw_value, PROTOCOL
            )
            return self._decode(whole, location)
        named = location or claimed  # as sent without an upstream, or as read from the file
        return replace(row, extra={**row.extra, "claimCheckLocation": named}) if named else row

    def _row(self, message: Fields, kind: str, commit_ts: int | None) -> DecodedRow:
        row_kind = _ROW_KINDS.get(kind)
        if row_kind is None:
            raise message.fail(f"`type` {shown(kind)} is not INSERT, UPDATE, DELETE or a DDL")
        schema, table = message.text("database"), message.text("table")
        types = message.nested("mysqlType", optional=True)
        columns = self._image(message, "data", types)
        names = message.strings("pkNames")
        extra = {
            "es": message.integer("es"),
            "pkNames": names,
            "sqlType": message.nested("sqlType", optional=True).values or None,
        }
        keys = tuple(names or ())
        if row_kind == "delete":
            return DecodedRow("delete", schema, table, commit_ts, None, columns, extra, keys)
        if row_kind == "insert":
            return DecodedRow("insert", schema, table, commit_ts, columns, None, extra, keys)
        pre = {**columns, **self._image(message, "old", types)}
        return DecodedRow("update", schema, table, commit_ts, columns, pre, extra, keys)

    @staticmethod
    def _image(message: Fields, field: str, types: Fields) -> dict[str, Any]:
        """`data` or `old`: an array of one object of column texts, read by `mysqlType`."""
        found = message.need(field, list)
        if len(found) != 1:
            raise message.fail(f"`{field}` has {len(found)} rows; canal-json writes one")
        image = Fields(found[0], PROTOCOL, f"{field}[0]")
        out = {}
        for name in image.values:
            text = image.maybe(name, str)
            mysql_type = types.maybe(name, str)
            if mysql_type is None:
                raise message.fail(f"column {shown(name)} of `{field}` has no `mysqlType`")
            out[name] = image.convert(name, mysql_type, parse_value, mysql_type, text)
        return out
