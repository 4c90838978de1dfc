"""A MySQL client at the wire, for tests that send what no driver would: packets built by hand,
sent with chosen sequence ids, and the server's answers read back raw."""

from __future__ import annotations

import hashlib
import socket
import struct
from dataclasses import dataclass, field
from typing import Any

# capability flags (MySQL `include/mysql_com.h`)
LONG_PASSWORD = 1
CONNECT_WITH_DB = 1 << 3
PROTOCOL_41 = 1 << 9
SSL = 1 << 11
TRANSACTIONS = 1 << 13
SECURE_CONNECTION = 1 << 15
MULTI_STATEMENTS = 1 << 16
MULTI_RESULTS = 1 << 17
PLUGIN_AUTH = 1 << 19
QUERY_ATTRIBUTES = 1 << 27
BASE = LONG_PASSWORD | PROTOCOL_41 | TRANSACTIONS | SECURE_CONNECTION | MULTI_RESULTS | PLUGIN_AUTH
UTF8MB4_BIN = 46


def scramble(password: str, nonce: bytes) -> bytes:
    """mysql_native_password's answer to the server's nonce."""
    if not password:
        return b""
    once = hashlib.sha1(password.encode()).digest()
    mix = hashlib.sha1(nonce + hashlib.sha1(once).digest()).digest()
    return bytes(a ^ b for a, b in zip(once, mix, strict=True))


def handshake_response(
    user: str = "root",
    auth: bytes = b"",
    database: str | None = None,
    capabilities: int = BASE,
    collation: int = UTF8MB4_BIN,
) -> bytes:
    if database is not None:
        capabilities |= CONNECT_WITH_DB
    body = struct.pack("<IIB", capabilities, 1 << 24, collation) + bytes(23)
    body += user.encode() + b"\0" + bytes([len(auth)]) + auth
    if database is not None:
        body += database.encode() + b"\0"
    return body + b"mysql_native_password\0"


@dataclass
class Answer:
    """One response: OK, an error, or a result set (its labels and rows, as text)."""

    kind: str  # "ok" | "error" | "rows" | "eof" | "raw"
    code: int = 0
    state: str = ""
    message: str = ""
    affected: int = 0
    insert_id: int = 0
    status: int = 0
    names: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    raw: bytes = b""
    packets: list[bytes] = field(default_factory=list)  # the rows as sent


def _lenenc(data: bytes, at: int) -> tuple[int, int]:
    first = data[at]
    size = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first)
    if size is None:
        return first, at + 1
    return int.from_bytes(data[at + 1 : at + 1 + size], "little"), at + 1 + size


def parse_error(packet: bytes) -> Answer:
    assert packet[:1] == b"\xff", packet
    code = int.from_bytes(packet[1:3], "little")
    return Answer("error", code, packet[4:9].decode(), packet[9:].decode("utf-8", "replace"))


def parse_ok(packet: bytes) -> Answer:
    affected, at = _lenenc(packet, 1)
    insert_id, at = _lenenc(packet, at)
    status = int.from_bytes(packet[at : at + 2], "little")
    return Answer("ok", affected=affected, insert_id=insert_id, status=status, raw=packet)


class Wire:
    """One connection, spoken to packet by packet."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.seq = 0
        self.nonce = b""

    def close(self) -> None:
        self.sock.close()

    def reset(self) -> None:
        """Close with a TCP reset, as a client that crashes does."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def _exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise EOFError("the server closed the connection")
            data += chunk
        return data

    def read(self) -> bytes:
        header = self._exactly(4)
        self.seq = header[3] + 1
        return self._exactly(int.from_bytes(header[:3], "little"))

    def closed(self) -> bool:
        """Whether the server has closed the connection (nothing more to read)."""
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, TimeoutError):
            return True

    def send(self, payload: bytes, seq: int | None = None) -> None:
        seq = self.seq if seq is None else seq
        self.sock.sendall(struct.pack("<I", len(payload) | (seq & 0xFF) << 24) + payload)
        self.seq = seq + 1

    def greeting(self) -> bytes:
        """The server's handshake; keeps its nonce."""
        data = self.read()
        at = data.index(b"\0", 1) + 1 + 4
        self.nonce = data[at : at + 8]
        at += 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10
        self.nonce += data[at : at + 12]
        return data

    def login(
        self,
        user: str = "root",
        password: str = "",
        database: str | None = "test",
        capabilities: int = BASE,
    ) -> Answer:
        self.greeting()
        auth = scramble(password, self.nonce)
        self.send(handshake_response(user, auth, database, capabilities), 1)
        return self.answer()

    def command(self, payload: bytes) -> None:
        self.send(payload, 0)

    def query(self, sql: str | bytes) -> Answer:
        self.command(b"\x03" + (sql.encode() if isinstance(sql, str) else sql))
        return self.answer()

    def answer(self, binary: bool = False) -> Answer:
        """A whole response (a result set is read to its end, in the EOF-terminated form;
        `binary`: rows in the binary protocol's form, of string columns)."""
        first = self.read()
        if first[:1] == b"\x00":
            return parse_ok(first)
        if first[:1] == b"\xff":
            return parse_error(first)
        if first[:1] == b"\xfe" and len(first) < 9:
            return Answer("eof", raw=first)
        count, _ = _lenenc(first, 0)
        if count > 250:
            return Answer("raw", raw=first)
        names = []
        for _ in range(count):
            column, at = self.read(), 0
            parts = []
            for _ in range(6):
                size, at = _lenenc(column, at)
                parts.append(column[at : at + size])
                at += size
            names.append(parts[4].decode("utf-8", "replace"))
        self.read()  # EOF after the column definitions
        rows, packets = [], []
        while True:
            row = self.read()
            if row[:1] == b"\xfe" and len(row) < 9:
                break
            if row[:1] == b"\xff":
                return parse_error(row)
            packets.append(row)
            values: list[Any] = []
            at = 1 + (count + 9) // 8 if binary else 0  # the header and NULL bitmap
            while at < len(row):
                if row[at] == 0xFB:
                    values.append(None)
                    at += 1
                    continue
                size, at = _lenenc(row, at)
                values.append(row[at : at + size].decode("utf-8", "replace"))
                at += size
            rows.append(tuple(values))
        return Answer("rows", names=names, rows=rows, packets=packets)

    def prepare(self, sql: str) -> tuple[int, int]:
        """COM_STMT_PREPARE: (statement id, parameter count); the definitions are read."""
        self.command(b"\x16" + sql.encode())
        head = self.read()
        assert head[:1] == b"\x00", parse_error(head)
        stmt_id, params = struct.unpack("<IxxH", head[1:9])
        if params:
            for _ in range(params + 1):  # the definitions and their EOF
                self.read()
        return stmt_id, params
