"""csv: TiCDC's CSV rows (storage sink only), the schema files and `metadata` beside them.

Mirrors tiflow `pkg/sink/codec/csv/csv_message.go` (`encode`, `encodeMeta`, `formatValue`,
`formatWithQuotes`, `formatWithEscapes`, `fromColValToCsvVal`), `csv_encoder.go` (the header
as the key when `output-field-header`) and `pkg/config/sink.go` (`CSVConfig`). Research:
ticdc-other-protocols-pitfalls.md (e), ticdc-canal-simple-avro-debezium-csv.md §7.
TiCDC's txn encoder makes one message of a transaction's rows of a table; here each row is
one message, which the storage sink writes back to back: the same file bytes. Rows are
rendered column by column (`_column`), not value by value.

A row is `op, table, schema[, commit-ts][, is-update][, handle-key], columns...` joined by the
delimiter and ended by the terminator. Strings (and DECIMAL, dates, JSON, ENUM/SET names,
binary as base64/hex, VECTOR text) are quoted with the quote doubled inside, or, with an empty
quote, backslash-escaped (CR, LF, `\\` and every byte of the delimiter, as Go writes
`rune(delimiter[k])`); numbers are Go's `%v`, never quoted (floats like `1.234567e+06`);
NULL is the null string. An UPDATE is one `U` row of the new values, or with
`output-old-value` a `D` row of the old values then an `I` row of the new, both with
is-update `true`.

TiCDC's csv encoder does not encode DDL or checkpoints: the storage sink writes schema files
and the `metadata` file (`cloudstorage`). Here `encode_ddl` and `encode_checkpoint` answer
those documents with their relative path as the key, so a decoder fed what the storage sink
wrote walks it as TiCDC's storage consumer does: a schema file gives the table's columns, the
rows after it are read with them. CSV names no types, so values come back by the schema
file's `ColumnType`; ENUM and SET come back as their names (the file has no members).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import partial
from typing import Any, Literal

import orjson

from ticdc_sim.encoders import (
    CodecConfig,
    Decoded,
    DecodedCheckpoint,
    DecodedDDL,
    DecodedRow,
    Message,
    Upstream,
    cloudstorage,
)
from ticdc_sim.encoders.columnar import BatchEncoder
from ticdc_sim.encoders.reading import CONVERSION_ERRORS
from ticdc_sim.errors import DecodeError, shown
from ticdc_sim.golang.strconv import float32, format_v, shortest32
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mysql import BLOB_TYPES, INTEGER_TYPES
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.table import ColumnInfo, TableInfo

PROTOCOL = "csv"
HEADER_PREFIX = "ticdc-meta$"
_OPS = {"insert": "I", "delete": "D", "update": "U"}
_STRING_TYPES = BLOB_TYPES | {M.STRING, M.VARCHAR, M.VAR_STRING}
_BINARY: dict[str, Callable[[bytes], str]] = {
    "base64": lambda v: base64.b64encode(v).decode("ascii"),
    "hex": lambda v: v.hex(),
}
_UNBINARY: dict[str, Callable[[str], bytes]] = {
    "base64": lambda t: base64.b64decode(t, validate=True),
    "hex": bytes.fromhex,
}

# a column's values (no None among them) -> their fields as written
Column = Callable[[list[Any]], list[str]]


def go_v(value: float, bits: int) -> str:
    """`%v` of a float32 or float64, fast: Python's repr has Go's shortest digits and, where
    it uses an exponent, Go's layout (`1e-05`, `1.5e+16`); Go also uses one from 1e6 on."""
    if bits == 32:
        value = shortest32(value)
    text = repr(value)
    if "e" in text:
        return text
    if "n" in text or abs(value) >= 1e6:
        return format_v(value, bits)
    return text[:-2] if text.endswith(".0") else text


def _floats(bits: int, values: list[float]) -> list[str]:
    """`%v` of a column of floats: orjson writes Go's shortest digits (a FLOAT column's as
    float32, through numpy) in Go's layout but for a trailing `.0`; what it writes with an
    exponent, non-finite values and magnitudes below 1e-4 or from 1e6 (where Go uses an
    exponent) go through `go_v`."""
    if bits == 32:
        import numpy  # here: a run without a FLOAT column never pays for its import

        data = orjson.dumps(
            numpy.array(values, dtype=numpy.float32), option=orjson.OPT_SERIALIZE_NUMPY
        )
    else:
        data = orjson.dumps(values)
    body = (data[1:-1] + b",").replace(b".0,", b",")[:-1].decode()
    texts = body.split(",")
    # orjson writes 1e-05 as 0.00001: Go's exponent starts below 1e-4
    if "e" in body or "n" in body or "0.0000" in body or max(map(abs, values)) >= 1e6:
        return [
            go_v(v, bits) if "e" in t or "n" in t or "0.0000" in t or abs(v) >= 1e6 else t
            for v, t in zip(values, texts, strict=True)
        ]
    return texts


def _decimals(values: list[Decimal]) -> list[str]:
    """Plain notation, as TiDB's decimal strings: `str` unless it picks an exponent."""
    texts = list(map(str, values))
    if "E" in "".join(texts):
        return [format(v, "f") for v in values]
    return texts


def _column(col: ColumnInfo, form: CSVFormat) -> Column:
    """fromColValToCsvVal, then `formatValue`: `%v` for what is not a Go string."""
    if col.tp in INTEGER_TYPES or col.tp in (M.BIT, M.YEAR):
        return lambda values: list(map(str, values))
    if col.tp in (M.FLOAT, M.DOUBLE):
        return partial(_floats, 32 if col.tp == M.FLOAT else 64)
    strings = form.strings
    if col.tp == M.NEWDECIMAL:
        return lambda values: strings(_decimals(values))
    if col.tp in _STRING_TYPES and col.is_binary_charset:
        encode = _BINARY[form.binary]
        return lambda values: strings(list(map(encode, values)))
    return strings


class CSVFormat:
    """The [sink.csv] options as `formatValue` applies them."""

    def __init__(self, config: CodecConfig) -> None:
        self.delimiter = config.csv_delimiter
        self.quote = config.csv_quote
        self.null = config.csv_null
        self.terminator = config.terminator
        self.commit_ts = config.csv_include_commit_ts
        self.old_value = config.csv_output_old_value
        self.handle_key = config.csv_output_handle_key
        self.header = config.csv_output_field_header
        self.binary = config.csv_binary_encoding_method
        self._doubled = self.quote * 2
        # formatWithEscapes: CR, LF, backslash, then each character of the delimiter
        self._escapes = [("\\", "\\\\"), ("\r", "\\r"), ("\n", "\\n")]
        # Go writes `rune(delimiter[k])`: each byte as a character (only ASCII survives)
        self._escaped_delimiter = "".join("\\" + chr(b) for b in self.delimiter.encode())
        self._quoted = self.quote + "%s" + self.quote
        self._specials = ("\\", "\r", "\n", self.delimiter)

    def string(self, value: str) -> str:
        if self.quote:
            return self.quote + value.replace(self.quote, self._doubled) + self.quote
        return self.escaped(value)

    def escaped(self, value: str) -> str:
        """formatWithEscapes: scanning left to right, a delimiter is replaced whole before
        any of its characters is looked at alone (`\\` in a delimiter is its own escape)."""
        parts = value.split(self.delimiter)
        for i, part in enumerate(parts):
            for raw, escape in self._escapes:
                if raw in part:
                    part = part.replace(raw, escape)
            parts[i] = part
        return self._escaped_delimiter.join(parts)

    def strings(self, values: list[str]) -> list[str]:
        """Many strings at once: quoted, or escaped where they need it."""
        joined = "".join(values)
        if self.quote:
            if self.quote in joined:
                return list(map(self.string, values))
            return list(map(self._quoted.__mod__, values))
        if any(c in joined for c in self._specials):
            return list(map(self.escaped, values))
        return values

    def header_names(self, names: Sequence[str]) -> list[str]:
        """encodeHeader's names, unquoted and unescaped as TiCDC writes them."""
        meta = ["operation", "table", "schema"]
        if self.commit_ts:
            meta.append("commit-ts")
        if self.old_value:
            meta.append("is-update")
        return [HEADER_PREFIX + m for m in meta] + list(names)


class _TableCodec:
    def __init__(self, info: TableInfo, form: CSVFormat) -> None:
        self.info = info
        self.form = form
        self.columns = info.visible_columns
        self.offsets = [c.offset for c in self.columns]
        self.writers = [_column(c, form) for c in self.columns]
        self.key: bytes | None = None
        if form.header:
            names = form.header_names([c.name for c in self.columns])
            self.key = (form.delimiter.join(names) + form.terminator).encode()
        # op, table, schema and the delimiter after them, by op
        self.heads = {
            op: form.delimiter.join(map(form.string, (op, info.name, info.schema)))
            for op in ("I", "U", "D")
        }

    def encode(self, events: Sequence[RowChangedEvent]) -> list[bytes]:
        """The rows of `events` (all of this table), one value each, column by column."""
        form = self.form
        lines: list[tuple[str, RowChangedEvent, Sequence[Any], bool]] = []
        for event in events:
            kind = event.kind
            if kind == "update" and form.old_value:
                assert event.pre_columns is not None and event.columns is not None
                lines.append(("D", event, event.pre_columns, True))
                lines.append(("I", event, event.columns, True))
            else:
                row = event.pre_columns if kind == "delete" else event.columns
                assert row is not None
                lines.append((_OPS[kind], event, row, kind == "update"))
        images = [line[2] for line in lines]
        fields = [self._meta(lines)]
        fields += [
            self._values(w, [r[o] for r in images])
            for o, w in zip(self.offsets, self.writers, strict=True)
        ]
        texts = list(map(form.delimiter.join, zip(*fields, strict=True)))
        out: list[bytes] = []
        at = 0
        end = form.terminator
        for event in events:
            text = texts[at] + end
            at += 1
            if event.pre_columns is not None and event.columns is not None and form.old_value:
                text += texts[at] + end
                at += 1
            out.append(text.encode("utf-8", "surrogateescape"))
        return out

    def _meta(self, lines: list[tuple[str, RowChangedEvent, Sequence[Any], bool]]) -> list[str]:
        form, heads, d = self.form, self.heads, self.form.delimiter
        out = [heads[op] for op, *_ in lines]
        if form.commit_ts:
            out = [f"{h}{d}{line[1].commit_ts}" for h, line in zip(out, lines, strict=True)]
        if form.old_value:
            out = [
                f"{h}{d}{'true' if line[3] else 'false'}"
                for h, line in zip(out, lines, strict=True)
            ]
        if form.handle_key:
            handles = form.strings([_handle(line[1]) for line in lines])
            out = [f"{h}{d}{k}" for h, k in zip(out, handles, strict=True)]
        return out

    def _values(self, write: Column, values: list[Any]) -> list[str]:
        if None not in values:
            return write(values)
        where = [i for i, v in enumerate(values) if v is not None]
        out = [self.form.null] * len(values)
        if not where:
            return out
        for i, text in zip(where, write([values[i] for i in where]), strict=True):
            out[i] = text
        return out


def _handle(event: RowChangedEvent) -> str:
    """`HandleKey.String()`: the int handle (`kv.IntHandle`), or for a clustered common
    handle `kv.CommonHandle`'s `{v1, v2}`, each datum's `ToString` (bytes as they are)."""
    info = event.table
    if not info.is_common_handle or info.primary_index is None:
        return str(event.row_id)
    row = event.pre_columns if event.columns is None else event.columns
    assert row is not None
    values = [row[c.offset] for c in info.primary_index.columns]
    texts = [
        v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else str(v) for v in values
    ]
    return "{" + ", ".join(texts) + "}"


class Encoder(BatchEncoder[_TableCodec]):
    """csv_encoder.go: one message per row, the header as the key (output-field-header)."""

    protocol = PROTOCOL

    def __init__(self, config: CodecConfig) -> None:
        super().__init__()
        self.config = config
        self.form = CSVFormat(config)

    def new_codec(self, info: TableInfo) -> _TableCodec:
        return _TableCodec(info, self.form)

    def build_groups(self, groups: Sequence[Sequence[RowChangedEvent]]) -> list[list[Message]]:
        out = []
        for group in groups:
            messages: list[Message] = []
            start = 0
            while start < len(group):  # runs of one table version
                info = group[start].table
                end = start + 1
                while end < len(group) and group[end].table is info:
                    end += 1
                run = group[start:end]
                codec = self.codec(info)
                for event, value in zip(run, codec.encode(run), strict=True):
                    messages.append(
                        Message(codec.key, value, event.commit_ts, 1, info.schema, info.name)
                    )
                start = end
            out.append(messages)
        return out

    def encode_ddl(self, event: DDLEvent) -> Message:
        """The schema file the storage sink writes for the DDL, its path as the key."""
        definition = cloudstorage.ddl_definition(event)
        path = cloudstorage.schema_path(definition).encode()
        body = cloudstorage.schema_file(definition)
        return Message(path, body, event.commit_ts, 0, event.schema, event.table)

    def encode_checkpoint(self, ts: int) -> Message | None:
        """The `metadata` file the storage sink rewrites with the checkpoint."""
        return Message(cloudstorage.METADATA.encode(), cloudstorage.metadata(ts), ts)


# -- decoding ----------------------------------------------------------------------------------

_INTEGER_NAMES = frozenset({"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "BIT", "YEAR"})
_INTEGER = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?")
_KINDS: dict[str, Literal["insert", "update", "delete"]] = {
    "I": "insert",
    "U": "update",
    "D": "delete",
}


def _parse(column_type: str, text: str, binary: str) -> Any:
    """A field back into the value it was written from, by the schema file's ColumnType
    (fromCsvValToColValue)."""
    name = column_type.removesuffix(" UNSIGNED")
    if name in _INTEGER_NAMES:
        if _INTEGER.fullmatch(text) is None:  # int() would take "1_0" and other digits
            raise ValueError("not an integer")
        return int(text)
    if name == "FLOAT":
        return float32(float(text))
    if name == "DOUBLE":
        return float(text)
    if name == "DECIMAL":
        if _DECIMAL.fullmatch(text) is None:  # Decimal() would take NaN and 1E+2
            raise ValueError("not a decimal")
        return Decimal(text)
    if "BLOB" in name or "BINARY" in name:
        return _UNBINARY[binary](text)
    return text


class Record:
    """One CSV line split into fields: each field's text and whether it was quoted."""

    __slots__ = ("fields", "quoted")

    def __init__(self) -> None:
        self.fields: list[str] = []
        self.quoted: list[bool] = []


class Reader:
    """Lines of TiCDC's CSV split into fields, strictly: an unterminated quote, a stray
    quote or a trailing backslash is a DecodeError at its offset."""

    def __init__(self, form: CSVFormat) -> None:
        self.form = form

    def records(self, text: str) -> list[Record]:
        form = self.form
        delimiter, terminator, quote = form.delimiter, form.terminator, form.quote
        out: list[Record] = []
        at, end = 0, len(text)
        while at < end:
            record = Record()
            while True:
                if quote and text.startswith(quote, at):
                    value, at = self._quoted(text, at)
                    record.fields.append(value)
                    record.quoted.append(True)
                else:
                    value, at = self._plain(text, at)
                    record.fields.append(value)
                    record.quoted.append(False)
                if text.startswith(delimiter, at):
                    at += len(delimiter)
                    continue
                if text.startswith(terminator, at):
                    at += len(terminator)
                    break
                what = "the end" if at >= end else f"{shown(text[at : at + 10])}"
                raise DecodeError(
                    f"not a csv message: at offset {at}, {what} where a delimiter"
                    f" {shown(delimiter)} or the terminator {shown(terminator)} belongs"
                )
            out.append(record)
        return out

    def _quoted(self, text: str, at: int) -> tuple[str, int]:
        quote = self.form.quote
        opened, at = at, at + len(quote)
        parts = []
        while True:
            close = text.find(quote, at)
            if close < 0:
                raise DecodeError(
                    f"not a csv message: the quoted field opened at offset {opened} never ends"
                )
            parts.append(text[at:close])
            at = close + len(quote)
            if text.startswith(quote, at):  # a doubled quote
                parts.append(quote)
                at += len(quote)
                continue
            return "".join(parts), at

    def _plain(self, text: str, at: int) -> tuple[str, int]:
        """An unquoted field up to the next delimiter or terminator; with an empty quote,
        backslash escapes undone (`\\n` is LF, `\\r` CR, any other `\\x` is x)."""
        form = self.form
        escaping = not form.quote
        stops = (form.delimiter, form.terminator)
        out = []
        start = at
        end = len(text)
        while at < end:
            char = text[at]
            if escaping and char == "\\":
                if at + 1 >= end:
                    raise DecodeError(
                        f"not a csv message: a backslash ends the text at offset {at}"
                    )
                nxt = text[at + 1]
                out.append({"n": "\n", "r": "\r"}.get(nxt, nxt))
                at += 2
                continue
            if text.startswith(stops, at):
                break
            if form.quote and text.startswith(form.quote, at):
                raise DecodeError(
                    f"not a csv message: a quote inside an unquoted field at offset {at}"
                )
            out.append(char)
            at += 1
        raw = text[start:at]
        if raw == form.null:
            return form.null, at
        return "".join(out), at


class Decoder:
    """What TiCDC's storage consumer does with what the storage sink wrote: schema files
    name a table's columns, rows are read with the latest one, `metadata` is the checkpoint.
    Strict: every field is checked; anything else is one DecodeError saying where."""

    def __init__(self, config: CodecConfig, upstream: Upstream | None = None) -> None:
        self.config = config
        self.form = CSVFormat(config)
        self.reader = Reader(self.form)
        # (schema, table) -> the columns of its latest schema file
        self.tables: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def decode(self, key: bytes | None, value: bytes | None) -> list[Decoded]:
        if value is None:
            return []
        name = (key or b"").decode("utf-8", "replace")
        if name == cloudstorage.METADATA:
            return [DecodedCheckpoint(cloudstorage.read_metadata(value))]
        if cloudstorage.is_schema_path(name):
            learned = self.schema(value, name)
            return [] if learned is None else [learned]
        if not value:
            raise DecodeError("not a csv message: no row (the value is empty)")
        return self.rows(value)

    def schema(self, data: bytes, path: str = "") -> DecodedDDL | None:
        """A schema file: the table's columns from now on, and the DDL that wrote it (None
        for the file of a table version no DDL made, whose Query is empty)."""
        found = cloudstorage.read_definition(data, path)
        schema, table = found["Schema"], found["Table"]
        if found["TableColumns"] is not None and table:
            self.tables[(schema, table)] = found["TableColumns"]
        if not found["Query"]:
            return None
        return DecodedDDL(schema, table, found["TableVersion"], found["Query"], found["Type"])

    def rows(self, data: bytes) -> list[Decoded]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError(
                f"not a csv message: byte 0x{data[e.start]:02x} at offset {e.start} is not UTF-8"
            ) from None
        out: list[Decoded] = []
        pending: DecodedRow | None = None  # the D half of an update, waiting for its I
        for record in self.reader.records(text):
            row, is_update = self._row(record)
            if pending is not None:
                if not (is_update and row.kind == "insert" and row.commit_ts == pending.commit_ts):
                    raise DecodeError(
                        "not a csv message: the old values of an update (D, is-update true)"
                        " are not followed by its new values (I, is-update true)"
                    )
                out.append(
                    DecodedRow(
                        "update",
                        row.schema,
                        row.table,
                        row.commit_ts,
                        row.columns,
                        pending.pre_columns,
                        row.extra,
                        row.keys,
                    )
                )
                pending = None
            elif is_update and row.kind == "delete":
                pending = row
            else:
                out.append(row)
        if pending is not None:
            raise DecodeError(
                "not a csv message: the old values of an update (D, is-update true) end it"
            )
        return out

    def _row(self, record: Record) -> tuple[DecodedRow, bool]:
        form = self.form
        fields, quoted = record.fields, record.quoted
        meta = 3 + form.commit_ts + form.old_value + form.handle_key
        if len(fields) < meta:
            raise DecodeError(
                f"not a csv message: a row of {len(fields)} fields; the options need {meta}"
                " before the columns"
            )
        kind = _KINDS.get(fields[0])
        if kind is None:
            raise DecodeError(f"not a csv message: operation {shown(fields[0])} is not I, U or D")
        table, schema = fields[1], fields[2]
        columns = self.tables.get((schema, table))
        if columns is None:
            raise DecodeError(
                f"not a csv message: a row of {schema}.{table} before any schema file of it"
            )
        at = 3
        commit_ts = None
        extra: dict[str, Any] = {}
        if form.commit_ts:
            commit_ts = self._ts(fields[at])
            at += 1
        is_update = False
        if form.old_value:
            if fields[at] not in ("true", "false"):
                raise DecodeError(
                    f"not a csv message: is-update {shown(fields[at])} is not true or false"
                )
            is_update = fields[at] == "true"
            at += 1
        if form.handle_key:
            extra["handle-key"] = fields[at]
            at += 1
        values = fields[at:]
        if len(values) != len(columns):
            raise DecodeError(
                f"not a csv message: {schema}.{table} has {len(columns)} columns in its schema"
                f" file, the row {len(values)} values: written with other [sink.csv] options"
                " (include-commit-ts, output-old-value, output-handle-key), or the table has"
                " virtual generated columns, which the schema file lists and the rows leave out"
            )
        image: dict[str, Any] = {}
        for col, text, was_quoted in zip(columns, values, quoted[at:], strict=True):
            name = col["ColumnName"]
            if text == form.null and not was_quoted:
                image[name] = None
                continue
            try:
                image[name] = _parse(col["ColumnType"], text, form.binary)
            except CONVERSION_ERRORS as e:
                raise DecodeError(
                    f"not a csv message: column {shown(name)} {shown(text)} is no"
                    f" {col['ColumnType']} value ({e})"
                ) from None
        keys = tuple(c["ColumnName"] for c in columns if c.get("ColumnIsPk") == "true")
        if kind == "delete":
            return DecodedRow(
                "delete", schema, table, commit_ts, None, image, extra, keys
            ), is_update
        if kind == "insert":
            return DecodedRow(
                "insert", schema, table, commit_ts, image, None, extra, keys
            ), is_update
        return DecodedRow("update", schema, table, commit_ts, image, None, extra, keys), is_update

    @staticmethod
    def _ts(text: str) -> int:
        if _INTEGER.fullmatch(text) is None or not 0 <= int(text) < 1 << 64:
            raise DecodeError(f"not a csv message: commit-ts {shown(text)} is not a TSO")
        return int(text)
