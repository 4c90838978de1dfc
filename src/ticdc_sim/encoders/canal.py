"""canal (protobuf): the rows of a batch packed into one keyless Kafka record; DDL one each.

Mirrors tiflow `pkg/sink/codec/canal/canal_encoder.go` (`BatchEncoder`: every row appended
since the last `Build` is one marshalled `Entry` in `Messages.messages`, the whole batch one
`Packet{version=1, type=MESSAGES, body}`; a DDL its own packet; no checkpoint message) and
`canal_entry.go` (`buildHeader`, `buildColumn`, `formatValue`, `getJavaSQLType`,
`convertDdlEventType`), with the messages of `proto/EntryProtocol.proto` and
`proto/CanalProtocol.proto` (canal 1.1.4, proto3). Classic TiCDC only: the new
architecture has no canal encoder (its `NewEventEncoder` says ErrSinkUnknownProtocol).
Research: ticdc-canal-simple-avro-debezium-csv.md §2, ticdc-other-protocols-pitfalls.md (c).

The messages are built by the `protobuf` package from descriptors made here from field tables
(`_MESSAGES`), as protoc would describe the .proto files; serialising proto3 writes fields in
number order, leaves zero scalars out and writes a set oneof member even when it is zero or
false, as the gogo code TiCDC marshals with does (`isNull` 0x30 0x00, `isDdl`, versions).
Rows are written through one template Entry per table version and kind, whose constants are
set once: a row sets its values, formatted a column of the batch at a time with columnar's
number passes, and serialises the entry once (`_Template`; faster than the protobuf package
building a bare RowData of the row's values, see bench/encode.py).

Where the notes and the code differ, the code wins: DDL entries are ROWDATA entries whose
header has no `rowsCount` prop (`buildHeader(..., -1)`); Column `updated` is `!IsDelete()` for
every column of both images; `content-compatible` is not read for canal (common/config.go
Apply reads it for canal-json only), so `mysqlType` is always the short type name.

Go writes string fields without checking UTF-8; upb refuses a proto3 `string` that is not
UTF-8, so the two fields that carry user data as it came (Column.value, RowChange.sql) are
declared `bytes`: the same wire type and bytes, and a text column's invalid UTF-8 goes out raw.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from functools import partial
from itertools import repeat
from operator import itemgetter
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError as ProtoDecodeError
from google.protobuf.message import Message as ProtoMessage

from ticdc_sim.encoders import (
    CodecConfig,
    Decoded,
    DecodedDDL,
    DecodedRow,
    Message,
    Upstream,
)
from ticdc_sim.encoders.canal_json import parse_value
from ticdc_sim.encoders.columnar import (
    COLUMNS,
    PRE_COLUMNS,
    BatchEncoder,
    Writer,
    commit_ts,
    has_null,
    number_writer,
    place,
    shapes,
)
from ticdc_sim.encoders.types import (
    DDL_TYPES,
    java_type,
    promoted_java_type,
    short_type,
    unsigned_promotion,
)
from ticdc_sim.errors import DecodeError, shown
from ticdc_sim.golang.strconv import format_f
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mounted import mounter
from ticdc_sim.model.mysql import BLOB_TYPES, INTEGER_TYPES, ColumnFlag, TiDBFlag
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.table import ColumnInfo, TableInfo
from ticdc_sim.model.tso import physical_ms

PROTOCOL = "canal"
_NOT = f"not a {PROTOCOL} message"  # what every decoding error starts with
PACKAGE = "com.alibaba.otter.canal.protocol"

# -- the .proto files as tables --------------------------------------------------------------

_T = descriptor_pb2.FieldDescriptorProto
# field: (name, number, type, message/enum name or "", oneof or "", repeated)
Field = tuple[str, int, int, str, str, bool]
_I32, _I64, _BOOL, _STR, _BYTES = (
    _T.TYPE_INT32,
    _T.TYPE_INT64,
    _T.TYPE_BOOL,
    _T.TYPE_STRING,
    _T.TYPE_BYTES,
)
_MSG, _ENUM = _T.TYPE_MESSAGE, _T.TYPE_ENUM

_MESSAGES: dict[str, list[Field]] = {
    # CanalProtocol.proto
    "Packet": [
        ("magic_number", 1, _I32, "", "magic_number_present", False),
        ("version", 2, _I32, "", "version_present", False),
        ("type", 3, _ENUM, "PacketType", "", False),
        ("compression", 4, _ENUM, "Compression", "compression_present", False),
        ("body", 5, _BYTES, "", "", False),
    ],
    "Messages": [
        ("batch_id", 1, _I64, "", "", False),
        ("messages", 2, _BYTES, "", "", True),
    ],
    # EntryProtocol.proto
    "Entry": [
        ("header", 1, _MSG, "Header", "", False),
        ("entryType", 2, _ENUM, "EntryType", "entryType_present", False),
        ("storeValue", 3, _BYTES, "", "", False),
    ],
    "Header": [
        ("version", 1, _I32, "", "version_present", False),
        ("logfileName", 2, _STR, "", "", False),
        ("logfileOffset", 3, _I64, "", "", False),
        ("serverId", 4, _I64, "", "", False),
        ("serverenCode", 5, _STR, "", "", False),
        ("executeTime", 6, _I64, "", "", False),
        ("sourceType", 7, _ENUM, "Type", "sourceType_present", False),
        ("schemaName", 8, _STR, "", "", False),
        ("tableName", 9, _STR, "", "", False),
        ("eventLength", 10, _I64, "", "", False),
        ("eventType", 11, _ENUM, "EventType", "eventType_present", False),
        ("props", 12, _MSG, "Pair", "", True),
        ("gtid", 13, _STR, "", "", False),
    ],
    "Column": [
        ("index", 1, _I32, "", "", False),
        ("sqlType", 2, _I32, "", "", False),
        ("name", 3, _STR, "", "", False),
        ("isKey", 4, _BOOL, "", "", False),
        ("updated", 5, _BOOL, "", "", False),
        ("isNull", 6, _BOOL, "", "isNull_present", False),
        ("props", 7, _MSG, "Pair", "", True),
        ("value", 8, _BYTES, "", "", False),  # string in canal: see the docstring
        ("length", 9, _I32, "", "", False),
        ("mysqlType", 10, _STR, "", "", False),
    ],
    "RowData": [
        ("beforeColumns", 1, _MSG, "Column", "", True),
        ("afterColumns", 2, _MSG, "Column", "", True),
        ("props", 3, _MSG, "Pair", "", True),
    ],
    "RowChange": [
        ("tableId", 1, _I64, "", "", False),
        ("eventType", 2, _ENUM, "EventType", "eventType_present", False),
        ("isDdl", 10, _BOOL, "", "isDdl_present", False),
        ("sql", 11, _BYTES, "", "", False),  # string in canal: see the docstring
        ("rowDatas", 12, _MSG, "RowData", "", True),
        ("props", 13, _MSG, "Pair", "", True),
        ("ddlSchemaName", 14, _STR, "", "", False),
    ],
    "Pair": [("key", 1, _STR, "", "", False), ("value", 2, _STR, "", "", False)],
}
_ENUMS: dict[str, list[str]] = {
    "PacketType": ["PACKAGETYPECOMPATIBLEPROTO2", "HANDSHAKE", "CLIENTAUTHENTICATION", "ACK",
                   "SUBSCRIPTION", "UNSUBSCRIPTION", "GET", "MESSAGES", "CLIENTACK", "SHUTDOWN",
                   "DUMP", "HEARTBEAT", "CLIENTROLLBACK"],
    "Compression": ["COMPRESSIONCOMPATIBLEPROTO2", "NONE", "ZLIB", "GZIP", "LZF"],
    "EntryType": ["ENTRYTYPECOMPATIBLEPROTO2", "TRANSACTIONBEGIN", "ROWDATA", "TRANSACTIONEND",
                  "ENTRYHEARTBEAT", "GTIDLOG"],
    "EventType": ["EVENTTYPECOMPATIBLEPROTO2", "INSERT", "UPDATE", "DELETE", "CREATE", "ALTER",
                  "ERASE", "QUERY", "TRUNCATE", "RENAME", "CINDEX", "DINDEX", "GTID", "XACOMMIT",
                  "XAROLLBACK", "MHEARTBEAT"],
    "Type": ["TYPECOMPATIBLEPROTO2", "ORACLE", "MYSQL", "PGSQL"],
}  # fmt: skip


# Wire views: an embedded message is a length-delimited field, as `bytes` is, so a view that
# declares Entry's `storeValue` as the RowChange message it carries writes the very bytes
# Entry does with the RowChange serialised into `storeValue`, in one serialisation (the
# encoder's rows, see _Template)
_VIEWS: dict[str, tuple[str, dict[str, str]]] = {
    "EntryRows": ("Entry", {"storeValue": "RowChange"}),
}


def _view(name: str) -> list[Field]:
    message, parts = _VIEWS[name]
    return [
        (f, n, _MSG, parts[f], o, r) if f in parts else (f, n, k, t, o, r)
        for f, n, k, t, o, r in _MESSAGES[message]
    ]


def _file() -> descriptor_pb2.FileDescriptorProto:
    """Both .proto files as one (they share their package), as protoc would describe it."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="ticdc_sim/canal.proto", package=PACKAGE, syntax="proto3"
    )
    for name, values in _ENUMS.items():
        enum = proto.enum_type.add(name=name)
        for number, value in enumerate(values):
            enum.value.add(name=value, number=number)
    for name, fields in [*_MESSAGES.items(), *((v, _view(v)) for v in _VIEWS)]:
        message = proto.message_type.add(name=name)
        oneofs: list[str] = []
        for field, number, kind, type_name, oneof, repeated in fields:
            added = message.field.add(
                name=field,
                number=number,
                type=kind,
                label=_T.LABEL_REPEATED if repeated else _T.LABEL_OPTIONAL,
            )
            if type_name:
                added.type_name = f".{PACKAGE}.{type_name}"
            if oneof:
                oneofs.append(oneof)
                added.oneof_index = len(oneofs) - 1
                message.oneof_decl.add(name=oneof)
    return proto


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())


def _class(name: str) -> Any:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{PACKAGE}.{name}"))


Packet, Messages, Entry, Header, Column, RowData, RowChange, Pair = map(
    _class, ["Packet", "Messages", "Entry", "Header", "Column", "RowData", "RowChange", "Pair"]
)
(EntryRows,) = map(_class, _VIEWS)

PACKET_VERSION = 1  # CanalPacketVersion
PROTOCOL_VERSION = 1  # CanalProtocolVersion
SERVER_ENCODE = "UTF-8"  # CanalServerEncode
MESSAGES, ROWDATA, MYSQL = 7, 2, 2  # PacketType, EntryType, Type
EVENT_TYPES = {name: number for number, name in enumerate(_ENUMS["EventType"])}
_ROW_EVENT = {"insert": 1, "update": 2, "delete": 3}
_ROW_KINDS = {number: kind for kind, number in _ROW_EVENT.items()}
# isCanalDDL
_DDL_EVENTS = frozenset(
    EVENT_TYPES[t]
    for t in ("CREATE", "RENAME", "CINDEX", "DINDEX", "ALTER", "ERASE", "TRUNCATE", "QUERY")
)

# -- values --------------------------------------------------------------------------------

Format = Callable[[Any], bytes]
# a column's non-NULL values of a chunk of rows -> their texts
Texts = Callable[[Sequence[Any]], list[bytes]]


def _digits(value: Any) -> bytes:
    return b"%d" % value


def _decimal(value: Decimal) -> bytes:
    text = str(value)
    return (format(value, "f") if "E" in text else text).encode()


def _latin1(value: bytes) -> bytes:
    # formatValue: binary bytes through an ISO-8859-1 decoder, then Go's string (UTF-8)
    return value.decode("latin-1").encode()


def _text(value: str) -> bytes:
    return value.encode("utf-8", "surrogateescape")  # Go's string(v): the bytes as they are


_FORMATS: dict[M, Format] = {
    M.FLOAT: lambda v: format_f(v, 32).encode(),
    M.DOUBLE: lambda v: format_f(v, 64).encode(),
    M.NEWDECIMAL: _decimal,
    **dict.fromkeys((*INTEGER_TYPES, M.BIT, M.YEAR, M.ENUM, M.SET), _digits),
}
_STRING_TYPES = (M.STRING, M.VARCHAR, M.VAR_STRING)


def value_format(col: ColumnInfo) -> Format:
    """A column's non-NULL mounted values as formatValue writes them (canal_entry.go): the
    reference, one value at a time, that `value_texts` is tested against."""
    found = _FORMATS.get(col.tp)
    if found is not None:
        return found
    if col.is_binary_charset and (col.tp in BLOB_TYPES or col.tp in _STRING_TYPES):
        return _latin1
    return _text  # text, dates and times, JSON, VECTOR: already TiDB's strings


def _unquoted(write: Writer) -> Texts:
    """canal-json's number writer (whose texts are formatValue's, quoted) without the quotes."""

    def run(values: Sequence[Any]) -> list[bytes]:
        spec, items = write(values)
        assert items is not None  # number writers give one item a value
        spec = spec[1:-1]
        return list(items) if spec == b"%s" else list(map(spec.__mod__, items))

    return run


def value_texts(col: ColumnInfo) -> Texts:
    """`value_format` over a column's non-NULL canonical values at once: numbers through
    columnar's passes over the whole column (they mount ENUM and SET, and write non-finite
    floats as the mounter's 0), the other types one value at a time (a C-level map)."""
    numbers = number_writer(col, quoted=True)
    if numbers is not None:
        return _unquoted(numbers)
    return partial(_each, value_format(col))


def _each(format_: Format, values: Sequence[Any]) -> list[bytes]:
    return list(map(format_, values))


def _nullable(texts: Texts, values: Sequence[Any]) -> Sequence[bytes | None]:
    if not has_null(values):
        return texts(values)
    where = [i for i, v in enumerate(values) if v is not None]
    out: list[bytes | None] = [None] * len(values)
    if not where:  # the number passes make one text of no values
        return out
    for i, text in zip(where, texts([values[i] for i in where]), strict=True):
        out[i] = text
    return out


# -- encoding ------------------------------------------------------------------------------


class _Template:
    """A kind of row's Entry with buildColumn's and buildHeader's constants in place, as the
    EntryRows view: each row sets `executeTime`, each column's value (`isNull` when NULL)
    and promoted Java types, and serialises the entry once. `cells` are the Column
    messages, after image then before; `slots` say which image and column each one shows."""

    def __init__(self, codec: _TableCodec, kind: str, handle_only: bool) -> None:
        deleted = kind == "delete"
        count = len(codec.columns)
        after = [] if deleted else range(count)
        before = [] if kind == "insert" else range(count)
        if deleted and handle_only:
            before = [i for i in before if codec.handle[i]]
        data = RowData(
            afterColumns=[codec.column(i, True) for i in after],
            beforeColumns=[codec.column(i, not deleted) for i in before],
        )
        event_type = _ROW_EVENT[kind]
        self.entry = EntryRows(
            header=Header(eventType=event_type, **codec.header),
            entryType=ROWDATA,
            storeValue=RowChange(eventType=event_type, isDdl=False, rowDatas=[data]),
        )
        self.header = self.entry.header
        stored = self.entry.storeValue.rowDatas[0]
        self.cells = [*stored.afterColumns, *stored.beforeColumns]
        self.slots = [(False, i) for i in after] + [(True, i) for i in before]
        self.nulled: list[Any] = []  # cells the last row made NULL, set back before the next


class _TableCodec:
    """What a table version's columns write whatever the row: buildColumn's constants, and
    the templates rows are written through. `entry_message` builds each row's messages
    anew, the reference the templates are tested against."""

    def __init__(self, info: TableInfo) -> None:
        self.info = info
        self.columns = info.visible_columns
        self.offsets = [c.offset for c in self.columns]
        self.mounters = [mounter(c) for c in self.columns]
        self.formats = [value_format(c) for c in self.columns]
        self.texts = [value_texts(c) for c in self.columns]
        self.java = [java_type(c) for c in self.columns]
        self.promotions = [unsigned_promotion(c) for c in self.columns]
        self.names = [c.name for c in self.columns]
        self.keys = [bool(c.flag & TiDBFlag.PRI_KEY) for c in self.columns]
        self.mysql_types = [short_type(c) for c in self.columns]
        flags = info.ticdc_flags("v8.5")
        self.handle = [bool(flags[c.offset] & ColumnFlag.HANDLE_KEY) for c in self.columns]
        self.header = {
            "version": PROTOCOL_VERSION,
            "serverenCode": SERVER_ENCODE,
            "sourceType": MYSQL,
            "schemaName": info.schema,
            "tableName": info.name,
            "props": [Pair(key="rowsCount", value="1")],
        }
        self.templates: dict[tuple[str, bool], _Template] = {}

    def column(self, i: int, updated: bool) -> Any:
        """Column i's constants: all but its value (and a promoted Java type)."""
        return Column(
            sqlType=self.java[i],
            name=self.names[i],
            isKey=self.keys[i],
            updated=updated,
            isNull=False,
            mysqlType=self.mysql_types[i],
        )

    def entries(
        self, kind: str, events: Sequence[RowChangedEvent], handle_only: bool
    ) -> list[bytes]:
        """fromRowEvent over rows of one kind: each one's Entry, marshalled. Values are
        formatted a column at a time, then each row fills the kind's template."""
        template = self.templates.get((kind, handle_only))
        if template is None:
            template = self.templates[kind, handle_only] = _Template(self, kind, handle_only)
        images = {False: list(map(COLUMNS, events)), True: list(map(PRE_COLUMNS, events))}
        texts: list[Sequence[bytes | None]] = []
        java: list[tuple[Any, list[int]]] = []  # promoted cells and their types a row
        for cell, (pre, i) in zip(template.cells, template.slots, strict=True):
            values = list(map(itemgetter(self.offsets[i]), images[pre]))
            texts.append(_nullable(self.texts[i], values))
            promotion = self.promotions[i]
            if promotion is not None:
                java.append(
                    (cell, [promoted_java_type(self.java[i], promotion, v) for v in values])
                )
        times = map(physical_ms, commit_ts(events))
        rows = zip(*texts, strict=True) if texts else repeat((), len(events))
        header, serialize, cells = template.header, template.entry.SerializeToString, template.cells
        nulled = template.nulled
        out = []
        for n, (ms, row) in enumerate(zip(times, rows, strict=True)):
            header.executeTime = ms
            for cell in nulled:
                cell.isNull = False
            nulled.clear()
            for cell, text in zip(cells, row, strict=True):
                if text is None:
                    cell.isNull = True
                    cell.value = b""
                    nulled.append(cell)
                else:
                    cell.value = text
            for cell, types in java:
                cell.sqlType = types[n]
            out.append(serialize())
        return out

    def entry(self, event: RowChangedEvent, handle_only_deletes: bool) -> bytes:
        """One row's Entry, through the templates."""
        return self.entries(event.kind, [event], handle_only_deletes)[0]

    def _values(self, row: Sequence[Any], handle_only: bool) -> Iterator[tuple[int, Any, int]]:
        """(position, mounted value, Java type) of each column an image writes."""
        for i, offset in enumerate(self.offsets):
            if handle_only and not self.handle[i]:
                continue
            value = row[offset]
            mount = self.mounters[i]
            if mount is not None:
                value = mount(value)
            yield i, value, promoted_java_type(self.java[i], self.promotions[i], value)

    def _text(self, i: int, value: Any) -> bytes:
        return b"" if value is None else self.formats[i](value)

    def column_messages(self, row: Sequence[Any], updated: bool, handle_only: bool) -> list[Any]:
        """buildRowData's columns of one image, as whole messages."""
        return [
            Column(
                sqlType=java,
                name=self.names[i],
                isKey=self.keys[i],
                updated=updated,
                isNull=value is None,
                value=self._text(i, value),
                mysqlType=self.mysql_types[i],
            )
            for i, value, java in self._values(row, handle_only)
        ]

    def entry_message(self, event: RowChangedEvent, handle_only_deletes: bool) -> bytes:
        """The same Entry built as whole messages (the reference `entry` is tested against)."""
        deleted = event.columns is None
        kind = "insert" if event.pre_columns is None else "delete" if deleted else "update"
        event_type = _ROW_EVENT[kind]
        data = RowData()
        if event.columns is not None:
            data.afterColumns.extend(self.column_messages(event.columns, True, False))
        if event.pre_columns is not None:
            handle_only = handle_only_deletes and deleted
            data.beforeColumns.extend(
                self.column_messages(event.pre_columns, not deleted, handle_only)
            )
        change = RowChange(eventType=event_type, isDdl=False, rowDatas=[data])
        header = Header(
            executeTime=physical_ms(event.commit_ts), eventType=event_type, **self.header
        )
        return _entry(header, change)


def _entry(header: Any, change: Any) -> bytes:
    entry = Entry(header=header, entryType=ROWDATA, storeValue=change.SerializeToString())
    data: bytes = entry.SerializeToString()
    return data


def _packet(entries: list[bytes]) -> bytes:
    body = Messages(messages=entries).SerializeToString()
    data: bytes = Packet(version=PACKET_VERSION, type=MESSAGES, body=body).SerializeToString()
    return data


class Encoder(BatchEncoder[_TableCodec]):
    """BatchEncoder: rows queue; a build packs their marshalled entries into one record."""

    protocol = PROTOCOL

    def __init__(self, config: CodecConfig) -> None:
        super().__init__()  # `claims` stays empty: canal has no large-message handling
        self.config = config

    def new_codec(self, info: TableInfo) -> _TableCodec:
        return _TableCodec(info)

    def build_groups(self, groups: Sequence[Sequence[RowChangedEvent]]) -> list[list[Message]]:
        """One record per batch, carrying its rows' largest commit ts. TiCDC's encoder does
        not check the record against max-message-bytes (its Kafka producer does)."""
        handle_only = self.config.delete_only_output_handle_key_columns
        out: list[list[Message]] = []
        for group in groups:
            if not group:
                out.append([])
                continue
            entries: list[bytes] = [b""] * len(group)
            for kind, positions, events in shapes(group):
                texts = self.codec(events[0].table).entries(kind, events, handle_only)
                entries = place(entries, positions, texts)
            ts = max(e.commit_ts for e in group)
            first = group[0].table
            out.append([Message(None, _packet(entries), ts, len(group), first.schema, first.name)])
        return out

    def encode_ddl(self, event: DDLEvent) -> Message:
        """fromDDLEvent: its own packet; a ROWDATA entry without `rowsCount`."""
        event_type = EVENT_TYPES[DDL_TYPES.get(event.action, "QUERY")]
        header = Header(
            version=PROTOCOL_VERSION,
            serverenCode=SERVER_ENCODE,
            executeTime=physical_ms(event.commit_ts),
            sourceType=MYSQL,
            schemaName=event.schema,
            tableName=event.table,
            eventType=event_type,
        )
        change = RowChange(
            eventType=event_type,
            isDdl=event_type in _DDL_EVENTS,
            sql=_text(event.query),
            ddlSchemaName=event.schema,
        )
        value = _packet([_entry(header, change)])
        return Message(None, value, event.commit_ts, 0, event.schema, event.table)

    def encode_checkpoint(self, ts: int) -> Message | None:
        return None  # EncodeCheckpointEvent: canal has no resolved event


# -- decoding ------------------------------------------------------------------------------


def _parse(cls: Any, data: bytes, what: str) -> Any:
    message = cls()
    try:
        message.ParseFromString(data)
    except ProtoDecodeError as e:
        # upb says "Error parsing message with type '<full name>': <reason>"
        reason = str(e).rsplit(": ", 1)[-1].lower()
        raise DecodeError(f"{_NOT}: {what} does not parse as {cls.__name__} ({reason})") from None
    return message


def _one_of(message: ProtoMessage, field: str, what: str) -> Any:
    if not message.HasField(field):
        raise DecodeError(f"{_NOT}: {what} has no `{field}`")
    return getattr(message, field)


def _expect(found: Any, wanted: Any, what: str) -> None:
    if found != wanted:
        raise DecodeError(f"{_NOT}: {what} is {shown(found)}, TiCDC writes {wanted}")


class Decoder:
    """Packets back into rows and DDL, strict: what TiCDC does not write is a DecodeError
    naming the field. Canal carries no commit ts (only `executeTime`, its physical ms)."""

    def __init__(self, config: CodecConfig, upstream: Upstream | None = None) -> None:
        self.config = config

    def decode(self, key: bytes | None, value: bytes | None) -> list[Decoded]:
        if value is None:
            return []
        packet = _parse(Packet, value, "the record")
        _expect(_one_of(packet, "version", "the packet"), PACKET_VERSION, "the packet `version`")
        _expect(packet.type, MESSAGES, "the packet `type`")
        messages = _parse(Messages, packet.body, "the packet `body`")
        if not messages.messages:
            raise DecodeError(f"{_NOT}: the packet holds no entries")
        return [self._entry(data, n) for n, data in enumerate(messages.messages)]

    def _entry(self, data: bytes, n: int) -> Decoded:
        where = f"entry {n}"
        entry = _parse(Entry, data, where)
        _expect(_one_of(entry, "entryType", where), ROWDATA, f"{where} `entryType`")
        header = _one_of(entry, "header", where)
        event_type = _one_of(header, "eventType", f"{where} header")
        change = _parse(RowChange, entry.storeValue, f"{where} `storeValue`")
        change_type = _one_of(change, "eventType", f"{where} row change")
        _expect(change_type, event_type, f"{where} row change `eventType`")
        is_ddl = _one_of(change, "isDdl", f"{where} row change")
        schema, table = header.schemaName, header.tableName
        if is_ddl:
            if event_type not in _DDL_EVENTS:
                raise DecodeError(f"{_NOT}: {where} is a DDL of event type {event_type}")
            query = change.sql.decode("utf-8", "surrogateescape")
            return DecodedDDL(schema, table, None, query, _ENUMS["EventType"][event_type])
        kind = _ROW_KINDS.get(event_type)
        if kind is None:
            raise DecodeError(
                f"{_NOT}: {where} has event type {event_type}, not INSERT, UPDATE or DELETE"
            )
        if len(change.rowDatas) != 1:
            raise DecodeError(f"{_NOT}: {where} has {len(change.rowDatas)} rows; TiCDC writes one")
        data_ = change.rowDatas[0]
        before = _image(data_.beforeColumns, f"{where} beforeColumns")
        after = _image(data_.afterColumns, f"{where} afterColumns")
        keys = tuple(c.name for c in (*data_.afterColumns, *data_.beforeColumns) if c.isKey)
        keys = tuple(dict.fromkeys(keys))
        extra = {"executeTime": header.executeTime}
        if kind == "insert":
            return DecodedRow("insert", schema, table, None, after, None, extra, keys)
        if kind == "delete":
            return DecodedRow("delete", schema, table, None, None, before, extra, keys)
        return DecodedRow("update", schema, table, None, after, before, extra, keys)


def _image(columns: Sequence[Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in columns:
        at = f"{where} column {shown(column.name)}"
        if _one_of(column, "isNull", at):
            out[column.name] = None
            continue
        text = column.value.decode("utf-8", "surrogateescape")
        try:
            out[column.name] = parse_value(column.mysqlType, text)
        except (ValueError, ArithmeticError, UnicodeError) as e:
            raise DecodeError(
                f"{_NOT}: {at}: value {shown(text)} is not a {column.mysqlType} ({e})"
            ) from None
    return out
