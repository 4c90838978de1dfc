"""canal-json: one Kafka record per row, no key; DDL and TIDB_WATERMARK records.

Mirrors tiflow `pkg/sink/codec/canal/canal_json_row_event_encoder.go` (the easyjson streaming
writer: field order `id database table pkNames isDdl type es ts sql sqlType mysqlType old data
_tidb`), `canal_json_message.go` (DDL and WATERMARK: goccy `json.Marshal`, `data` before `old`)
and `canal_entry.go` (values, Java types, DDL event types). Research:
ticdc-canal-simple-avro-debezium-csv.md §1.

`ts` is the wall clock in TiCDC; here it is the simulated clock: the physical time of the
commit ts the record carries, so a seed gives the same bytes. `mysqlType` is built from a Go
map in TiCDC and so comes out in random key order; we write table order.
"""

from __future__ import annotations

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
from ticdc_sim.encoders.types import (
    BLOB_TYPES,
    INTEGER_TYPES,
    full_type,
    java_type,
    promoted_java_type,
    short_type,
    unsigned_promotion,
)
from ticdc_sim.errors import EncodeError
from ticdc_sim.golang import float32
from ticdc_sim.model.actions import ActionType as A
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mounted import mounter
from ticdc_sim.model.mysql import ColumnFlag, TiDBFlag
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.table import ColumnInfo, TableInfo
from ticdc_sim.model.tso import PHYSICAL_SHIFT_BITS, physical_ms

# canal_entry.go convertDdlEventType; everything else is QUERY
DDL_TYPES: dict[A, str] = {
    A.CREATE_TABLE: "CREATE",
    A.RENAME_TABLE: "RENAME",
    A.RENAME_TABLES: "RENAME",
    A.ADD_INDEX: "CINDEX",
    A.ADD_FOREIGN_KEY: "CINDEX",
    A.ADD_PRIMARY_KEY: "CINDEX",
    A.DROP_INDEX: "DINDEX",
    A.DROP_FOREIGN_KEY: "DINDEX",
    A.DROP_PRIMARY_KEY: "DINDEX",
    A.DROP_TABLE: "ERASE",
    A.TRUNCATE_TABLE: "TRUNCATE",
    **{
        a: "ALTER"
        for a in (
            A.ADD_COLUMN,
            A.DROP_COLUMN,
            A.MODIFY_COLUMN,
            A.REBASE_AUTO_ID,
            A.SET_DEFAULT_VALUE,
            A.MODIFY_TABLE_COMMENT,
            A.RENAME_INDEX,
            A.ADD_TABLE_PARTITION,
            A.DROP_TABLE_PARTITION,
            A.MODIFY_TABLE_CHARSET_AND_COLLATE,
            A.TRUNCATE_TABLE_PARTITION,
            A.ALTER_INDEX_VISIBILITY,
            A.MULTI_SCHEMA_CHANGE,
            A.REORGANIZE_PARTITION,
            A.ALTER_TABLE_PARTITIONING,
            A.REMOVE_PARTITIONING,
        )
    },
}


def _template(col: ColumnInfo) -> tuple[str, Any]:
    """A column's value as the string canal-json writes (canal_entry.go formatValue): the
    expression template and what it calls."""
    tp = col.tp
    mount = mounter(col)
    if tp == M.FLOAT:
        return rowcode.FLOAT, None
    if tp == M.DOUBLE:
        return rowcode.DOUBLE, None
    if tp == M.NEWDECIMAL:
        return rowcode.DECIMAL, None
    if mount is not None:  # ENUM index, SET bits
        return "None if {v} is None else str(_mount({v}))", mount
    if _is_binary_string(col):
        return rowcode.LATIN1, None
    if tp in INTEGER_TYPES or tp in (M.BIT, M.YEAR):
        return rowcode.INTEGER, None
    return rowcode.AS_IS, None  # text, dates and times, JSON, VECTOR: already TiDB's strings


def _is_binary_string(col: ColumnInfo) -> bool:
    return col.is_binary_charset and (col.tp in BLOB_TYPES or col.tp in _STRING_TYPES)


_STRING_TYPES = (M.STRING, M.VARCHAR, M.VAR_STRING)


class _TableCodec:
    """Everything about one table version that does not depend on the row."""

    def __init__(self, info: TableInfo, config: CodecConfig) -> None:
        self.info = info
        self.columns = info.visible_columns
        self.names = [c.name for c in self.columns]
        env, fields = {}, []
        for i, c in enumerate(self.columns):
            template, mount = _template(c)
            if mount is not None:
                env[f"_mount{i}"] = mount
                template = template.replace("_mount(", f"_mount{i}(")
            fields.append((c.name, c.offset, template))
        self.render = rowcode.compile_row("canal_json_data", fields, env)
        self.java = [java_type(c) for c in self.columns]
        self.promotions = [unsigned_promotion(c) for c in self.columns]
        self.promoted = any(p is not None for p in self.promotions)
        describe = full_type if config.content_compatible else short_type
        self.mysql_types = {c.name: describe(c) for c in self.columns}
        flags = info.ticdc_flags("classic" if config.profile == "v8.5" else "new-arch")
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
        self.fixed_sql_type = None if self.promoted else self.sql_type(None, None)
        self.mysql_type_json = gj.dumps(self.mysql_types, gj.EASYJSON)
        handle = ColumnFlag.HANDLE_KEY
        self.handle_positions = [i for i, c in enumerate(self.columns) if flags[c.offset] & handle]
        # the whole record but kind, es, ts, old, data (and commitTs) when the types are fixed
        self.template: bytes | None = None
        if self.fixed_sql_type is not None:
            middle = (
                b',"sql":"","sqlType":'
                + self.fixed_sql_type
                + b',"mysqlType":'
                + self.mysql_type_json
            )
            tail = b',"_tidb":{"commitTs":%d}}' if config.enable_tidb_extension else b"}"
            self.template = (
                self.head.replace(b"%", b"%%")
                + b'%s","es":%d,"ts":%d'
                + middle.replace(b"%", b"%%")
                + b',"old":%s,"data":[%s]'
                + tail
            )

    def sql_type(self, row: list[Any] | None, positions: list[int] | None) -> bytes:
        picked = range(len(self.columns)) if positions is None else positions
        types = {
            self.names[i]: promoted_java_type(
                self.java[i], self.promotions[i], None if row is None else row[i]
            )
            for i in picked
        }
        return gj.dumps(types, gj.EASYJSON) if types else b"null"


class Encoder:
    def __init__(self, config: CodecConfig) -> None:
        self.config = config
        self._tables: dict[int, _TableCodec] = {}
        self._messages: list[Message] = []
        self._plain_updates = not config.only_updated
        self._plain_deletes = not config.delete_only_output_handle_key_columns

    def _new_codec(self, info: TableInfo) -> _TableCodec:
        # callers look up `_tables` inline (it is per row); ids are reused once a version is gone
        codec = self._tables[id(info)] = _TableCodec(info, self.config)
        return codec

    def append_row(self, event: RowChangedEvent) -> None:
        info = event.table
        codec = self._tables.get(id(info))
        if codec is None or codec.info is not info:
            codec = self._new_codec(info)
        value = self._row_value(codec, event)
        if len(value) + MAX_RECORD_OVERHEAD > self.config.max_message_bytes:
            raise EncodeError(
                f"a canal-json message of {len(value) + MAX_RECORD_OVERHEAD} bytes for"
                f" {info.schema}.{info.name} at commit ts {event.commit_ts} exceeds"
                f" max-message-bytes {self.config.max_message_bytes} (TiCDC: ErrMessageTooLarge)"
            )
        self._messages.append(Message(None, value, event.commit_ts, 1, info.schema, info.name))

    def _row_value(self, codec: _TableCodec, event: RowChangedEvent) -> bytes:
        pre, post = event.pre_columns, event.columns
        template = codec.template
        if template is not None:  # the common shapes, in one format
            es = event.commit_ts >> PHYSICAL_SHIFT_BITS
            ext = (event.commit_ts,) if self.config.enable_tidb_extension else ()
            if pre is None:
                assert post is not None
                data = gj.dumps(codec.render(post), gj.EASYJSON)
                return template % (b"INSERT", es, es, b"null", data, *ext)
            if post is None:
                if self._plain_deletes:
                    data = gj.dumps(codec.render(pre), gj.EASYJSON)
                    return template % (b"DELETE", es, es, b"null", data, *ext)
            elif self._plain_updates:
                data = gj.dumps(codec.render(post), gj.EASYJSON)
                old = b"[" + gj.dumps(codec.render(pre), gj.EASYJSON) + b"]"
                return template % (b"UPDATE", es, es, old, data, *ext)
        return self._row_value_general(codec, event)

    def _row_value_general(self, codec: _TableCodec, event: RowChangedEvent) -> bytes:
        """Value-dependent sqlType (unsigned promotions), only-updated columns and
        handle-key-only deletes."""
        names = codec.names
        pre, post = event.pre_columns, event.columns
        kind = b"INSERT" if pre is None else b"DELETE" if post is None else b"UPDATE"
        row = post if post is not None else pre
        assert row is not None
        values = [row[c.offset] for c in codec.columns]
        positions: list[int] | None = None
        if kind == b"DELETE" and self.config.delete_only_output_handle_key_columns:
            positions = codec.handle_positions
        picked = range(len(names)) if positions is None else positions
        rendered = codec.render(row)
        data = {names[i]: rendered[names[i]] for i in picked}
        old: bytes = b"null"
        if kind == b"UPDATE":
            assert pre is not None
            before = codec.render(pre)
            kept = (
                [i for i in picked if pre[codec.columns[i].offset] != values[i]]
                if self.config.only_updated
                else picked
            )
            old = b"[" + gj.dumps({names[i]: before[names[i]] for i in kept}, gj.EASYJSON) + b"]"
        if positions is None and codec.fixed_sql_type is not None:
            sql_type = codec.fixed_sql_type
            mysql_type = codec.mysql_type_json
        else:
            sql_type = codec.sql_type(values, positions)
            types = {names[i]: codec.mysql_types[names[i]] for i in picked}
            mysql_type = gj.dumps(types, gj.EASYJSON)
        es = str(physical_ms(event.commit_ts)).encode()
        parts = [
            codec.head,
            kind,
            b'","es":',
            es,
            b',"ts":',
            es,
            b',"sql":"","sqlType":',
            sql_type,
            b',"mysqlType":',
            mysql_type,
            b',"old":',
            old,
            b',"data":[',
            gj.dumps(data, gj.EASYJSON),
            b"]",
        ]
        if self.config.enable_tidb_extension:
            parts.append(b',"_tidb":{"commitTs":' + str(event.commit_ts).encode() + b"}")
        parts.append(b"}")
        return b"".join(parts)

    def build(self) -> list[Message]:
        messages, self._messages = self._messages, []
        return messages

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
            "ts": es,
            "sql": event.query,
            "sqlType": None,
            "mysqlType": None,
            "data": None,
            "old": None,
        }
        if self.config.enable_tidb_extension:
            value["_tidb"] = {"commitTs": event.commit_ts}
        return Message(
            None, gj.dumps(value, gj.GOCCY), event.commit_ts, 0, event.schema, event.table
        )

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
            "ts": es,
            "sql": "",
            "sqlType": None,
            "mysqlType": None,
            "data": None,
            "old": None,
            "_tidb": {"watermarkTs": ts},
        }
        return Message(None, gj.dumps(value, gj.GOCCY), ts)


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


class Decoder:
    def __init__(self, config: CodecConfig) -> None:
        self.config = config

    def decode(self, key: bytes | None, value: bytes | None) -> list[Decoded]:
        if value is None:
            return []
        message = orjson.loads(value)
        tidb = message.get("_tidb") or {}
        if message["type"] == "TIDB_WATERMARK":
            return [DecodedCheckpoint(tidb["watermarkTs"])]
        commit_ts = tidb.get("commitTs")
        schema, table = message["database"], message["table"]
        if message["isDdl"]:
            return [DecodedDDL(schema, table, commit_ts, message["sql"], message["type"])]
        types = message["mysqlType"] or {}
        (data,) = message["data"]
        columns = {k: parse_value(types[k], v) for k, v in data.items()}
        kind = message["type"].lower()
        extra = {"es": message["es"], "pkNames": message["pkNames"], "sqlType": message["sqlType"]}
        keys = tuple(message["pkNames"] or ())
        if kind == "delete":
            return [DecodedRow("delete", schema, table, commit_ts, None, columns, extra, keys)]
        if kind == "insert":
            return [DecodedRow("insert", schema, table, commit_ts, columns, None, extra, keys)]
        (old,) = message["old"]
        pre = {**columns, **{k: parse_value(types[k], v) for k, v in old.items()}}
        return [DecodedRow("update", schema, table, commit_ts, columns, pre, extra, keys)]
