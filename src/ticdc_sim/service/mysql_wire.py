"""What a MySQL client sends, read with bounds: packets, the handshake, query attributes and
prepared statements' parameters.

A packet is bounded by `max_allowed_packet` (TiDB's 64 MiB: a bigger one is error 1153) and
checked for its sequence id (1156); both end the connection, as in MySQL, since the stream
can no longer be followed. Its fields are read with bounds (`Packet`): a field past the end is
`Malformed` (1835), never a hang (mysql-mimic's `read_str_null` loops forever on a string
without its NUL) or a stray exception. Parameters are read for every type a driver binds
(TiDB `pkg/server/internal/parse` `parseBinaryParams`) and bound as literals the engine reads
back as the same values, never pasted as text.
"""

from __future__ import annotations

import asyncio
import math
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from mysql_mimic.charset import CharacterSet, Collation
from mysql_mimic.errors import MysqlError
from mysql_mimic.stream import MysqlStream
from mysql_mimic.types import Capabilities, ColumnType
from sqlglot import exp
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import TokenType

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.labels import select_labels
from ticdc_sim.generator.sql.script import parse_one
from ticdc_sim.generator.sql.sysvars import SERVER_VARIABLES

MAX_PACKET = int(SERVER_VARIABLES["max_allowed_packet"])  # what a client may send
MAX_PREPARED = 16382  # max_prepared_stmt_count
_HEADER = struct.Struct("<I")
_WHOLE = 0xFFFFFF  # a packet this long continues in the next one
DRAIN_BYTES = 256 << 10  # result rows framed before they are sent (and the client read them)
_ROWS_A_BATCH = 10_000


class ClientGone(Exception):
    """The client closed or reset the connection."""


class Fatal(Exception):
    """A packet error: answered with MySQL's error, then the connection is closed."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class Malformed(Exception):
    """A packet shorter than its fields, or with a field that cannot be read."""


def malformed() -> MysqlError:
    return MysqlError("Malformed communication packet.", 1835)


# -- reading packets ---------------------------------------------------------------------------


class Packet:
    """One packet's fields, read front to back; reading past the end is `Malformed`."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def done(self) -> bool:
        return self.at >= len(self.data)

    def fixed(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.data):
            raise Malformed
        self.at += size
        return self.data[self.at - size : self.at]

    def uint(self, size: int) -> int:
        return int.from_bytes(self.fixed(size), "little")

    def sint(self, size: int) -> int:
        return int.from_bytes(self.fixed(size), "little", signed=True)

    def lenenc(self) -> int:
        """A length-encoded integer (0xFB is NULL and 0xFF an error header: no lengths)."""
        first = self.uint(1)
        if first < 0xFB:
            return first
        size = _LENENC_SIZES.get(first)
        if size is None:
            raise Malformed
        return self.uint(size)

    def lenenc_bytes(self) -> bytes:
        return self.fixed(self.lenenc())

    def null_terminated(self) -> bytes:
        end = self.data.find(b"\0", self.at)
        if end < 0:
            raise Malformed
        found, self.at = self.data[self.at : end], end + 1
        return found

    def rest(self) -> bytes:
        found, self.at = self.data[self.at :], len(self.data)
        return found


_LENENC_SIZES = {0xFC: 2, 0xFD: 3, 0xFE: 8}


def text(data: bytes) -> str:
    """Client bytes as the engine reads scripts: UTF-8, other bytes kept (surrogate escapes),
    so the session's character_set_client can read them again."""
    return data.decode("utf-8", "surrogateescape")


def to_wire(value: str) -> bytes:
    return value.encode("utf-8", "surrogateescape")


@dataclass
class HandshakeResponse:
    capabilities: Capabilities
    max_packet_size: int
    charset: CharacterSet
    username: str = ""
    auth_response: bytes = b""
    database: str | None = None
    client_plugin: str | None = None
    connect_attrs: dict[str, str] = field(default_factory=dict)
    ssl_request: bool = False


def read_handshake(server: Capabilities, data: bytes) -> HandshakeResponse:
    """HandshakeResponse41 (or the SSLRequest before it)."""
    p = Packet(data)
    client = Capabilities(p.uint(4))
    capabilities = server & client
    response = HandshakeResponse(capabilities, p.uint(4), _charset(p.uint(1)))
    p.fixed(23)
    if p.done():
        response.ssl_request = True
        return response
    response.username = text(p.null_terminated())
    if Capabilities.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA in capabilities:
        response.auth_response = p.lenenc_bytes()
    else:
        response.auth_response = p.fixed(p.uint(1))
    if Capabilities.CLIENT_CONNECT_WITH_DB in capabilities and not p.done():
        response.database = text(p.null_terminated())
    if Capabilities.CLIENT_PLUGIN_AUTH in capabilities and not p.done():
        response.client_plugin = text(p.null_terminated())
    if Capabilities.CLIENT_CONNECT_ATTRS in capabilities and not p.done():
        attrs = Packet(p.lenenc_bytes())
        while not attrs.done():
            response.connect_attrs[text(attrs.lenenc_bytes())] = text(attrs.lenenc_bytes())
    return response


def _charset(collation_id: int) -> CharacterSet:
    try:
        return Collation(collation_id).charset
    except ValueError:
        return CharacterSet.utf8mb4  # a collation mimic does not know: TiDB's default


class Stream:
    """mimic's stream, with reads of ours: a packet over `MAX_PACKET` (1153) or out of
    sequence (1156) is fatal, and a client that goes mid-packet is `ClientGone`."""

    def __init__(self, inner: MysqlStream) -> None:
        self.inner = inner
        self.reader: asyncio.StreamReader = inner.reader
        self.seq = inner.seq

    async def read(self) -> bytes:
        data = bytearray()
        while True:
            header = await self._exactly(4)
            (word,) = _HEADER.unpack(header)
            length, sequence = word & _WHOLE, word >> 24
            expected = next(self.seq)
            if sequence != expected:
                raise Fatal(1156, "Got packets out of order")
            if len(data) + length > MAX_PACKET:
                raise Fatal(1153, "Got a packet bigger than 'max_allowed_packet' bytes")
            data += await self._exactly(length)
            if length < _WHOLE:
                return bytes(data)

    async def _exactly(self, size: int) -> bytes:
        try:
            return await self.reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            raise ClientGone from None

    async def write(self, data: bytes, drain: bool = True) -> None:
        await self._sending(self.inner.write(data, drain))

    def write_many(self, packets_: Sequence[bytes]) -> None:
        self.inner.write_many(packets_)

    async def write_text_rows(self, rows: Sequence[Sequence[Any]], columns: Sequence[Any]) -> None:
        """Rows in batches of about `DRAIN_BYTES`, each sent before the next is framed: a
        big result passes through the socket instead of sitting whole in the buffer (and
        the transport's, which asyncio does not bound), and other connections get their
        turn between batches."""
        at, batch = 0, 64  # rows a batch, then as many as make about DRAIN_BYTES
        while at < len(rows):
            before = len(self.inner._buffer)  # mimic frames into it; `drain` sends it
            self.inner.write_text_rows(rows[at : at + batch], columns)
            written = len(self.inner._buffer) - before
            at += batch
            batch = max(1, min(_ROWS_A_BATCH, batch * DRAIN_BYTES // max(written, 1)))
            if len(self.inner._buffer) >= DRAIN_BYTES:
                await self.drain()  # waits while the client reads more slowly than we write
            await asyncio.sleep(0)

    async def drain(self) -> None:
        await self._sending(self.inner.drain())

    async def _sending(self, sent: Awaitable[None]) -> None:
        """A write; a client that has gone is `ClientGone` (asyncio says so with a
        ConnectionError, uvloop with a RuntimeError about the closed transport)."""
        try:
            await sent
        except (ConnectionError, OSError):
            raise ClientGone from None
        except RuntimeError:
            if self.inner.writer.is_closing():
                raise ClientGone from None
            raise

    def reset_seq(self) -> None:
        self.inner.reset_seq()

    async def start_tls(self, ssl: Any) -> None:
        await self.inner.start_tls(ssl)


# -- prepared statements: parameters in MySQL's binary form ---------------------------------------


def _date(p: Packet, size: int) -> str:
    if size == 0:
        return "0000-00-00 00:00:00"
    year, month, day = p.uint(2), p.uint(1), p.uint(1)
    text_ = f"{year:04d}-{month:02d}-{day:02d}"
    if size >= 7:
        text_ += f" {p.uint(1):02d}:{p.uint(1):02d}:{p.uint(1):02d}"
    if size >= 11:
        text_ += f".{p.uint(4):06d}"
    return text_


def _time(p: Packet, size: int) -> str:
    if size == 0:
        return "00:00:00"
    negative, days = p.uint(1), p.uint(4)
    hours, minutes, seconds = p.uint(1), p.uint(1), p.uint(1)
    text_ = f"{'-' if negative else ''}{days * 24 + hours:02d}:{minutes:02d}:{seconds:02d}"
    if size >= 12:
        text_ += f".{p.uint(4):06d}"
    return text_


def _sized(read: Callable[[Packet, int], str]) -> Callable[[Packet, bool], Any]:
    def read_value(p: Packet, unsigned: bool) -> Any:
        size = p.uint(1)
        if size not in (0, 4, 7, 8, 11, 12):
            raise Malformed
        return Quoted(read(p, size))

    return read_value


class Quoted(str):
    """A value bound as a quoted string literal."""


class _Number(str):
    """A value bound as it is written: a DECIMAL parameter's digits."""


def _decimal(p: Packet, unsigned: bool) -> Any:
    digits = text(p.lenenc_bytes())
    try:
        Decimal(digits)
    except InvalidOperation:
        return Quoted(digits)  # the engine reads it as a string, and says what is wrong
    return _Number(digits)


def _integer(size: int) -> Callable[[Packet, bool], Any]:
    return lambda p, unsigned: p.uint(size) if unsigned else p.sint(size)


def _string(p: Packet, unsigned: bool) -> Any:
    return Quoted(text(p.lenenc_bytes()))


def _bytes(p: Packet, unsigned: bool) -> Any:
    return p.lenenc_bytes()


# COM_STMT_EXECUTE parameter readers by type (`pkg/server/internal/parse` `parseBinaryParams`)
_PARAMS: dict[int, Callable[[Packet, bool], Any]] = {
    ColumnType.NULL: lambda p, unsigned: None,
    ColumnType.TINY: _integer(1),
    ColumnType.SHORT: _integer(2),
    ColumnType.YEAR: _integer(2),
    ColumnType.LONG: _integer(4),
    ColumnType.INT24: _integer(4),
    ColumnType.LONGLONG: _integer(8),
    ColumnType.FLOAT: lambda p, unsigned: struct.unpack("<f", p.fixed(4))[0],
    ColumnType.DOUBLE: lambda p, unsigned: struct.unpack("<d", p.fixed(8))[0],
    ColumnType.DATE: _sized(lambda p, size: _date(p, size)[: 10 if size <= 4 else None]),
    ColumnType.DATETIME: _sized(_date),
    ColumnType.TIMESTAMP: _sized(_date),
    ColumnType.TIME: _sized(_time),
    ColumnType.DECIMAL: _decimal,
    ColumnType.NEWDECIMAL: _decimal,
    ColumnType.VARCHAR: _string,
    ColumnType.VAR_STRING: _string,
    ColumnType.STRING: _string,
    ColumnType.JSON: _string,
    ColumnType.ENUM: _string,
    ColumnType.SET: _string,
    ColumnType.BIT: _bytes,
    ColumnType.TINY_BLOB: _bytes,
    ColumnType.MEDIUM_BLOB: _bytes,
    ColumnType.LONG_BLOB: _bytes,
    ColumnType.BLOB: _bytes,
    ColumnType.GEOMETRY: _bytes,
}
_TEXT_TYPES = frozenset(
    {ColumnType.VARCHAR, ColumnType.VAR_STRING, ColumnType.STRING, ColumnType.JSON,
     ColumnType.ENUM, ColumnType.SET, ColumnType.DECIMAL, ColumnType.NEWDECIMAL}
)  # fmt: skip


def literal(value: Any) -> str:
    """A parameter as an SQL literal the engine reads back as that value."""
    if value is None:
        return "NULL"
    if isinstance(value, _Number):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, float) and not math.isfinite(value):
        raise MysqlError(f"the parameter {value!r} is no MySQL value", 1210)
    return repr(value) if isinstance(value, float) else str(value)


@dataclass
class Prepared:
    """A prepared statement: its text, where its `?` are, and what COM_STMT_SEND_LONG_DATA
    and earlier executions left."""

    id: int
    sql: str
    placeholders: list[tuple[int, int]]  # (start, end) of each `?`
    labels: list[str] | None = None  # its result columns' names, `?` as written
    types: list[tuple[int, bool]] = field(default_factory=list)  # bound by the last execute
    long_data: dict[int, bytearray] = field(default_factory=dict)
    too_long: str | None = None  # long data refused: what its next execute answers (1105)
    cursor: AsyncIterator[bytes] | None = None

    def bind(self, values: Sequence[Any]) -> str:
        sql = self.sql
        for (start, end), value in reversed(list(zip(self.placeholders, values, strict=True))):
            sql = sql[:start] + literal(value) + sql[end + 1 :]
        return sql


def prepared_labels(sql: str) -> list[str] | None:
    """A prepared SELECT's column names, from its text with the `?` in it (MySQL names a
    parameter's column `?`): the bound text would name it by the value."""
    try:
        node = parse_one(sql)
    except (SQLError, RecursionError):
        return None
    if not isinstance(node, exp.Select) or any(isinstance(e, exp.Star) for e in node.expressions):
        return None
    return select_labels(sql, node)


def placeholders(sql: str) -> list[tuple[int, int]]:
    """Where the statement's `?` are (not those in strings, names or comments)."""
    try:
        tokens = d.TiDB().tokenize(sql)
    except TokenError:
        return []  # the statement's own error comes when it runs
    return [(t.start, t.end) for t in tokens if t.token_type == TokenType.PLACEHOLDER]


def read_params(p: Packet, count: int, prepared: Prepared | None, named: bool) -> list[Any]:
    """`count` parameters: NULL bitmap, new-params-bound flag, types (and names, for query
    attributes), values."""
    if not count:
        return []
    nulls = p.fixed((count + 7) // 8)
    bound = p.uint(1)
    if bound:
        types = []
        for _ in range(count):
            kind, flags = p.uint(1), p.uint(1)
            if named:
                p.lenenc_bytes()
            types.append((kind, bool(flags & 0x80)))
        if prepared is not None:
            prepared.types = types
    elif prepared is not None and len(prepared.types) == count:
        types = prepared.types  # bound by an earlier execution
    else:
        raise Malformed
    values: list[Any] = []
    for i, (kind, unsigned) in enumerate(types):
        long_data = prepared.long_data.get(i) if prepared is not None else None
        if nulls[i // 8] >> (i % 8) & 1:
            values.append(None)
        elif long_data is not None:
            values.append(
                Quoted(text(bytes(long_data))) if kind in _TEXT_TYPES else bytes(long_data)
            )
        else:
            reader = _PARAMS.get(kind)
            if reader is None:
                raise MysqlError(
                    f"Incorrect arguments to mysqld_stmt_execute: unknown parameter type {kind}",
                    1210,
                )
            values.append(reader(p, unsigned))
    return values
