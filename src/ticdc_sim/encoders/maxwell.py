"""maxwell: TiCDC's Maxwell-style JSON; every row of a batch in one record, DDL on their own.

Mirrors tiflow `pkg/sink/codec/maxwell/maxwell_message.go` (`rowChangeToMaxwellMsg`,
`ddlEventToMaxwellMsg`, `ddlToMaxwellType`, `columnToMaxwellType`), `maxwell_encoder.go`
(`BatchEncoder`) and `pkg/sink/codec/internal/message_key.go` (the DDL key). Classic TiCDC
only: the new architecture has no maxwell encoder (ticdc `pkg/sink/codec/builder.go`). Every
document is Go's `encoding/json`: struct fields in order, map keys sorted, `<>&` escaped.

A row record is keyed `00 00 00 00 00 00 00 01` (the batch version) and holds one JSON object
per row, concatenated without a separator:
    {"database":…,"table":…,"type":"insert|update|delete","ts":<commit second>,"data":{…},"old":{…}}
`ts` is the commit's physical time in whole seconds; `data` and `old` are left out when empty.
An insert has `data`; an update `data` and, in `old`, the columns whose value differs (Go `!=`
on the mounted values); a delete only `old` (handle-key columns with
delete-only-output-handle-key-columns). Values are the mounter's Go values: numbers, ENUM/SET
as their index/bits, BIT as uint, DECIMAL/dates/times/JSON as strings, binary strings base64.
Nothing in a row says a column's type or the row's key; the decoder gives values as the JSON
has them (a binary value as its base64 text, a DECIMAL as its string).

All rows of a batch go into one record: maxwell's encoder counts neither max-batch-size nor
max-message-bytes (Kafka refuses a record over max.message.bytes; so does this simulator).
Checkpoints are not sent (`EncodeCheckpointEvent` returns nil).

Where TiCDC's Go code panics, this module raises EncodeError saying so, rather than invent the
bytes a fixed TiCDC might send (the research notes guessed at the first only):
- an UPDATE of a binary string column non-NULL before and after: `value.Data[colName] !=
  v.Value` compares two `[]byte` in interfaces, a runtime panic;
- a NULL VECTOR value: `v.Value.(types.VectorFloat32)` on nil;
- a schema DDL (CREATE/DROP/ALTER DATABASE): its TableInfo wraps no table, and
  `e.TableInfo.TableInfo.Columns` dereferences nil.
And a quirk kept: an UPDATE lists every VECTOR column in `old`, changed or not (the code
compares against `value.Old`, not `value.Data`).
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Sequence
from itertools import repeat
from operator import rshift
from typing import Any, Literal

import orjson

from ticdc_sim.encoders import (
    MAX_RECORD_OVERHEAD,
    CodecConfig,
    Decoded,
    DecodedDDL,
    DecodedRow,
    Message,
    Upstream,
    columnar,
    new_arch_error,
)
from ticdc_sim.encoders.columnar import DELETE, INSERT, UPDATE, Writer
from ticdc_sim.encoders.reading import Fields, not_a
from ticdc_sim.errors import ConfigError, DecodeError, EncodeError, shown
from ticdc_sim.golang import json as gj
from ticdc_sim.model.actions import ActionType as A
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mounted import mounter
from ticdc_sim.model.mysql import BLOB_TYPES, ColumnFlag
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.table import ColumnInfo, TableInfo
from ticdc_sim.model.tso import PHYSICAL_SHIFT_BITS

PROTOCOL = "maxwell"
_JSON = gj.ENCODING_JSON
KEY = struct.pack(">Q", 1)  # pkg/sink/codec/encoder.go BatchVersion1: the key of every row record
DDL = 2  # cdc/model/sink.go MessageTypeDDL, the key's `t`

# columnToMaxwellType; any other type is ErrMaxwellInvalidData (see `_ddl_columns`)
COLUMN_TYPES: dict[M, str] = {
    M.TINY: "int",
    M.SHORT: "int",
    M.LONG: "int",
    M.INT24: "int",
    M.LONGLONG: "bigint",
    M.TINY_BLOB: "string",
    M.BLOB: "string",
    M.MEDIUM_BLOB: "string",
    M.LONG_BLOB: "string",
    M.STRING: "string",
    M.VARCHAR: "string",
    M.DATE: "date",
    M.TIMESTAMP: "datetime",
    M.DATETIME: "datetime",
    M.DURATION: "time",
    M.YEAR: "year",
    M.ENUM: "enum",
    M.SET: "set",
    M.BIT: "bit",
    M.JSON: "json",
    M.FLOAT: "float",
    M.DOUBLE: "float",
    M.NEWDECIMAL: "decimal",
    M.TIDB_VECTOR_FLOAT32: "string",
}

# ddlToMaxwellType: ActionAddColumn (5) .. ActionDropTablePartition (20), and these
_TABLE_ALTER_CODES = frozenset({*range(5, 21), 22, 23, 27, 28, 29, 33, 37, 38, 41, 42})
_DDL_TYPES: dict[int, str] = {
    A.CREATE_TABLE: "table-create",
    A.DROP_TABLE: "table-drop",
    A.CREATE_SCHEMA: "database-create",
    A.DROP_SCHEMA: "database-drop",
    A.MODIFY_SCHEMA_CHARSET_AND_COLLATE: "database-alter",
}
# the rest: TiDB's ActionType.String() (pkg/meta/model/job.go ActionMap), "none" if unnamed
_ACTION_NAMES: dict[int, str] = {
    A.CREATE_VIEW: "create view",
    A.DROP_VIEW: "drop view",
    A.RECOVER_TABLE: "recover table",
    A.SET_TIFLASH_REPLICA: "set tiflash replica",
    A.UPDATE_TIFLASH_REPLICA_STATUS: "update tiflash replica status",
    A.ADD_PRIMARY_KEY: "add primary key",
    A.CREATE_SEQUENCE: "create sequence",
    A.ALTER_SEQUENCE: "alter sequence",
    A.DROP_SEQUENCE: "drop sequence",
    A.MODIFY_TABLE_AUTO_ID_CACHE: "modify auto id cache",
    A.REBASE_AUTO_RANDOM_BASE: "rebase auto_random ID",
    A.ADD_CHECK_CONSTRAINT: "add check constraint",
    A.DROP_CHECK_CONSTRAINT: "drop check constraint",
    A.ALTER_CHECK_CONSTRAINT: "alter check constraint",
    A.RENAME_TABLES: "rename tables",
    A.ALTER_TABLE_ATTRIBUTES: "alter table attributes",
    A.ALTER_TABLE_PARTITION_ATTRIBUTES: "alter table partition attributes",
    A.CREATE_PLACEMENT_POLICY: "create placement policy",
    A.ALTER_PLACEMENT_POLICY: "alter placement policy",
    A.DROP_PLACEMENT_POLICY: "drop placement policy",
    A.ALTER_TABLE_PARTITION_PLACEMENT: "alter table partition placement",
    A.MODIFY_SCHEMA_DEFAULT_PLACEMENT: "modify schema default placement",
    A.ALTER_TABLE_PLACEMENT: "alter table placement",
    A.ALTER_CACHE_TABLE: "alter table cache",
    A.ALTER_TABLE_STATS_OPTIONS: "alter table statistics options",
    A.ALTER_NO_CACHE_TABLE: "alter table nocache",
    A.MULTI_SCHEMA_CHANGE: "alter table multi-schema change",
    A.FLASHBACK_CLUSTER: "flashback cluster",
    A.RECOVER_SCHEMA: "flashback schema",
    A.REORGANIZE_PARTITION: "alter table reorganize partition",
    A.ALTER_TTL_INFO: "alter table ttl",
    A.ALTER_TTL_REMOVE: "alter table no_ttl",
    A.CREATE_RESOURCE_GROUP: "create resource group",
    A.ALTER_RESOURCE_GROUP: "alter resource group",
    A.DROP_RESOURCE_GROUP: "drop resource group",
    A.ALTER_TABLE_PARTITIONING: "alter table partition by",
    A.REMOVE_PARTITIONING: "alter table remove partitioning",
    A.ADD_VECTOR_INDEX: "add vector index",
}
# DDL whose TableInfo wraps no table: the encoder dereferences nil on them
_SCHEMA_ACTIONS = frozenset(
    {A.CREATE_SCHEMA, A.DROP_SCHEMA, A.MODIFY_SCHEMA_CHARSET_AND_COLLATE, A.RECOVER_SCHEMA}
)


def ddl_type(action: int) -> str:
    """ddlToMaxwellType."""
    if action in _TABLE_ALTER_CODES:
        return "table-alter"
    return _DDL_TYPES.get(action) or _ACTION_NAMES.get(action, "none")


# -- rows --------------------------------------------------------------------------------------

_STRING_TYPES = frozenset({M.STRING, M.VAR_STRING, M.VARCHAR}) | BLOB_TYPES
_STRINGS = columnar.strings(_JSON)


def _base64(value: bytes) -> bytes:
    return base64.b64encode(value)


_BASE64 = columnar.mapped(_base64, columnar.plain_strings)


def _writer(col: ColumnInfo, binary: bool) -> Writer:
    """A column's values as encoding/json writes the mounter's Go value."""
    if col.tp in _STRING_TYPES:
        return _BASE64 if binary else _STRINGS  # []byte, or string([]byte)
    number = columnar.number_writer(col, quoted=False)
    return _STRINGS if number is None else number  # dates, times, JSON, VECTOR: strings


class _TableCodec:
    """Everything about one table version that does not depend on the rows."""

    def __init__(self, info: TableInfo, config: CodecConfig) -> None:
        self.info = info
        flags = info.ticdc_flags(config.profile)
        columns = info.visible_columns
        # the members of `data` and `old` in Go's map order: the names' bytes, sorted
        order = sorted(range(len(columns)), key=lambda i: columns[i].name.encode())
        self.columns = [columns[i] for i in order]
        self.offsets = [c.offset for c in self.columns]
        binary = [bool(flags[c.offset] & ColumnFlag.BINARY) for c in self.columns]
        self.binary = [
            b and c.tp in _STRING_TYPES for b, c in zip(binary, self.columns, strict=True)
        ]
        self.writers = [
            columnar.nullable(_writer(c, b)) for c, b in zip(self.columns, binary, strict=True)
        ]
        self.keys = [gj.dumps(c.name, _JSON) + b":" for c in self.columns]
        self.mounters = [mounter(c) for c in self.columns]
        self.vectors = [c.tp == M.TIDB_VECTOR_FLOAT32 for c in self.columns]
        every = list(range(len(self.columns)))
        handle = [i for i in every if flags[self.offsets[i]] & ColumnFlag.HANDLE_KEY]
        self.picked = {
            INSERT: every,
            UPDATE: every,
            DELETE: handle if config.delete_only_output_handle_key_columns else every,
        }
        self.head = (
            b'{"database":'
            + gj.dumps(info.schema, _JSON)
            + b',"table":'
            + gj.dumps(info.name, _JSON)
            + b',"type":"'
        )
        self.layouts: dict[str, columnar.Layout] = {}

    def encode(self, kind: str, events: list[RowChangedEvent]) -> list[bytes]:
        """Each row's JSON object."""
        picked = self.picked[kind]
        if any(self.vectors):
            self._check_vectors(kind, events)
        fields = columnar.image_fields(kind, events, picked, self.offsets, self.writers)
        ms = map(rshift, columnar.commit_ts(events), repeat(PHYSICAL_SHIFT_BITS))
        fields["ts"] = columnar.Field(b"%d", [t // 1000 for t in ms])
        if kind == UPDATE:
            olds = self._olds(events, picked, fields)
            fields["old"] = columnar.Field(b"%s", [b',"old":{%s}' % o if o else b"" for o in olds])
        layout = self.layouts.get(kind)
        if layout is None:
            layout = self.layouts[kind] = self._layout(kind, picked)
        return layout.fill(fields, len(events))

    def _layout(self, kind: str, picked: list[int]) -> columnar.Layout:
        parts: list[bytes | str] = [self.head + kind.encode() + b'","ts":', "ts"]
        if picked:  # an empty map is left out (omitempty)
            image = b"old" if kind == DELETE else b"data"
            parts += [b',"' + image + b'":{', *columnar.members(self.keys, "d", picked), b"}"]
        if kind == UPDATE:
            parts.append("old")
        parts.append(b"}")
        return columnar.Layout(parts)

    def _olds(
        self, events: list[RowChangedEvent], picked: list[int], fields: dict[str, columnar.Field]
    ) -> list[bytes]:
        """Per update, the `old` members: the columns Go's `!=` finds changed."""
        out = []
        for r, event in enumerate(events):
            pre, post = event.pre_columns, event.columns
            assert pre is not None and post is not None
            members = []
            for i in picked:
                o = self.offsets[i]
                before, after = pre[o], post[o]
                if self.vectors[i]:
                    changed = True  # compared with value.Old, which never holds it yet
                elif before is None:
                    changed = after is not None
                elif self.binary[i] and after is not None:
                    raise EncodeError(_binary_panic(event, self.columns[i]))
                else:
                    mount = self.mounters[i]
                    changed = before != after if mount is None else mount(before) != mount(after)
                if changed:
                    members.append(self.keys[i] + columnar.text(fields[f"p{i}"], r))
            out.append(b",".join(members))
        return out

    def _check_vectors(self, kind: str, events: list[RowChangedEvent]) -> None:
        images = [e.pre_columns for e in events] if kind != INSERT else []
        if kind != DELETE:
            images += [e.columns for e in events]
        # a delete of handle-key columns only never looks at the others
        for i in self.picked[kind] if kind == DELETE else range(len(self.columns)):
            column = self.columns[i]
            if self.vectors[i] and any(
                row is not None and row[column.offset] is None for row in images
            ):
                raise EncodeError(
                    f"maxwell cannot send a NULL in VECTOR column {column.name!r} of"
                    f" {self.info.schema}.{self.info.name}: TiCDC's encoder panics on it"
                    " (maxwell_message.go asserts types.VectorFloat32 on a nil value)"
                )


def _binary_panic(event: RowChangedEvent, col: ColumnInfo) -> str:
    return (
        f"maxwell cannot send an UPDATE of {event.table.schema}.{event.table.name} at commit ts"
        f" {event.commit_ts}: binary column {col.name!r} is not NULL before and after, and"
        " TiCDC's encoder panics comparing the two []byte values (maxwell_message.go"
        " rowChangeToMaxwellMsg)"
    )


class Encoder(columnar.BatchEncoder[_TableCodec]):
    def __init__(self, config: CodecConfig) -> None:
        super().__init__()
        if config.profile == "new-arch":
            raise ConfigError(new_arch_error(config.protocol))
        self.config = config

    def new_codec(self, info: TableInfo) -> _TableCodec:
        return _TableCodec(info, self.config)

    def encode_rows(self, events: Sequence[RowChangedEvent]) -> list[bytes]:
        texts: list[Any] = [None] * len(events)
        for kind, positions, chunk in columnar.shapes(events):
            encoded = self.codec(chunk[0].table).encode(kind, chunk)
            texts = columnar.place(texts, positions, encoded)
        return texts

    def build_groups(self, groups: Sequence[Sequence[RowChangedEvent]]) -> list[list[Message]]:
        texts = self.encode_rows([e for group in groups for e in group])
        out: list[list[Message]] = []
        start = 0
        for group in groups:
            if not group:
                out.append([])
                continue
            value = b"".join(texts[start : start + len(group)])
            start += len(group)
            size = len(KEY) + len(value) + MAX_RECORD_OVERHEAD
            if size > self.config.max_message_bytes:
                first = group[0].table
                raise EncodeError(
                    f"a maxwell record of {size} bytes ({len(group)} rows, the first of"
                    f" {first.schema}.{first.name}) exceeds max-message-bytes"
                    f" {self.config.max_message_bytes}; maxwell packs a whole batch into one"
                    " record and Kafka refuses it (TiCDC: MessageSizeTooLarge)"
                )
            ts = max(map(columnar.COMMIT_TS, group))
            first = group[0].table
            out.append([Message(KEY, value, ts, len(group), first.schema, first.name)])
        return out

    def encode_ddl(self, event: DDLEvent) -> Message:
        info = event.table_info or event.pre_table_info
        if info is None or event.action in _SCHEMA_ACTIONS:
            raise EncodeError(
                f"maxwell cannot send DDL {shown(event.query, 80)} (commit ts"
                f" {event.commit_ts}): TiCDC's encoder panics on a DDL without a table"
                " (maxwell_message.go ddlEventToMaxwellMsg dereferences its nil TableInfo)"
            )
        key: dict[str, Any] = {"ts": event.commit_ts}
        if event.schema:
            key["scm"] = event.schema
        if event.table:
            key["tbl"] = event.table
        key["t"] = DDL
        old: dict[str, Any] = {"database": "", "table": "", "columns": None}
        definition: dict[str, Any] = {"database": event.schema, "table": event.table}
        if event.pre_table_info is not None:
            pre = event.pre_table_info
            old |= {"database": pre.schema, "table": pre.name, "columns": _columns(pre)}
        columns, invalid = [], []
        for col in info.columns:
            found = COLUMN_TYPES.get(col.tp)
            if found is None:  # the error's text goes to `old`, an empty type to `def`
                text = f"[CDC:ErrMaxwellInvalidData]unsupported column type - {int(col.tp)}"
                invalid.append({"type": text, "name": col.name})
            columns.append({"type": found or "", "name": col.name})
        if invalid:
            old["columns"] = (old["columns"] or []) + invalid
        old["primary-key"] = None
        definition |= {"columns": columns or None, "primary-key": None}
        value = {
            "type": ddl_type(event.action),
            "database": event.schema,
            "table": event.table,
            "old": old,
            "def": definition,
            "ts": event.commit_ts,
            "sql": event.query,
        }
        return Message(
            gj.dumps(key, _JSON),
            gj.dumps(value, _JSON),
            event.commit_ts,
            0,
            event.schema,
            event.table,
        )

    def encode_checkpoint(self, ts: int) -> Message | None:
        return None  # "there is no such a corresponding type to ResolvedEvent"


def _columns(info: TableInfo) -> list[dict[str, str]] | None:
    """A table's columns as `old` lists them (the type "" where maxwell has none)."""
    found = [{"type": COLUMN_TYPES.get(c.tp, ""), "name": c.name} for c in info.columns]
    return found or None


# -- decoding ----------------------------------------------------------------------------------

_ROW_KINDS: dict[str, Literal["insert", "update", "delete"]] = {
    "insert": "insert",
    "update": "update",
    "delete": "delete",
}
_DECODER = orjson.loads


class Decoder:
    """Rows back from a record's concatenated objects, DDL from their own records; strict: a
    record that is not what TiCDC writes is a DecodeError naming the field."""

    def __init__(self, config: CodecConfig, upstream: Upstream | None = None) -> None:
        self.config = config

    def decode(self, key: bytes | None, value: bytes | None) -> list[Decoded]:
        if value is None:
            raise DecodeError(f"{not_a(PROTOCOL)}: a record without a value")
        if key == KEY:
            return [self._row(Fields(o, PROTOCOL, f"row {n}")) for n, o in _objects(value)]
        if not key:
            raise DecodeError(f"{not_a(PROTOCOL)}: a record without a key")
        key_fields = Fields(_document(key, "the key"), PROTOCOL, "key")
        if key_fields.integer("t") != DDL:
            raise key_fields.fail(f"`key.t` {shown(key_fields.values['t'])} is not {DDL} (DDL)")
        message = Fields(_document(value, "the value"), PROTOCOL)
        ts = message.ts("ts")
        if key_fields.ts("ts") != ts:
            raise message.fail(f"`ts` {ts} is not the key's {key_fields.values['ts']}")
        for part in ("old", "def"):
            message.nested(part)
        names = (message.text("database"), message.text("table"))
        return [DecodedDDL(*names, ts, message.text("sql"), message.text("type"))]

    @staticmethod
    def _row(message: Fields) -> DecodedRow:
        kind = _ROW_KINDS.get(message.text("type"))
        if kind is None:
            raise message.fail(
                f"{message.name('type')} {shown(message.values['type'])} is not insert, update"
                " or delete"
            )
        schema, table = message.text("database"), message.text("table")
        seconds = message.integer("ts")
        data = message.nested("data", optional=True).values or None
        old = message.nested("old", optional=True).values or None
        extra = {"ts": seconds}
        if kind == "insert":
            if data is None or old is not None:
                raise message.fail(f"{message.path}: an insert needs `data` and has no `old`")
            return DecodedRow("insert", schema, table, None, data, None, extra)
        if kind == "delete":
            if data is not None:
                raise message.fail(f"{message.path}: a delete has no `data`")
            return DecodedRow("delete", schema, table, None, None, old or {}, extra)
        if data is None:
            raise message.fail(f"{message.path}: an update without `data`")
        unknown = [name for name in old or {} if name not in data]
        if unknown:
            raise message.fail(
                f"{message.name('old')} names column {shown(unknown[0])}, which `data` lacks"
            )
        return DecodedRow("update", schema, table, None, data, {**data, **(old or {})}, extra)


def _document(data: bytes, what: str) -> Any:
    try:
        return _DECODER(data)
    except orjson.JSONDecodeError as e:
        raise DecodeError(
            f"{not_a(PROTOCOL)}: {what} is not JSON at byte {e.pos} ({e.msg})"
        ) from None


_SCANNER = json.JSONDecoder()


def _objects(value: bytes) -> list[tuple[int, Any]]:
    """The concatenated JSON objects of a row record."""
    try:
        text = value.decode()
    except UnicodeDecodeError as e:
        raise DecodeError(f"{not_a(PROTOCOL)}: byte {e.start} is not UTF-8") from None
    out, pos, n = [], 0, 0
    while pos < len(text):
        try:
            found, end = _SCANNER.raw_decode(text, pos)
        except RecursionError:
            raise DecodeError(f"{not_a(PROTOCOL)}: row {n} nests too deep") from None
        except json.JSONDecodeError as e:
            at = len(text[: e.pos].encode("utf-8", "surrogatepass"))
            raise DecodeError(
                f"{not_a(PROTOCOL)}: row {n} is not JSON at byte {at} ({e.msg})"
            ) from None
        out.append((n, found))
        pos, n = end, n + 1
    if not out:
        raise DecodeError(f"{not_a(PROTOCOL)}: a row record without rows")
    return out
