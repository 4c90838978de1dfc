"""TiDB's front door: the MySQL protocol, one connection one session.

Every statement goes to the cluster's engine through the connection's `SessionState` (its
transaction, variables and current database; see `ticdc_sim.cluster`), and what commits reaches the
changefeeds as it commits. SHOW and DESCRIBE are answered from the catalog as TiDB prints it
(`generator.sql.show`). User `<cluster>.root` connects to that cluster, plain `root` to
`default`.

mysql-mimic supplies the packet writers, the password plugin and the encoding of result rows;
what a client sends is read by `mysql_wire`, with bounds, and the commands are dispatched here
from one table (`_COMMANDS`, after TiDB's `pkg/server/conn.go` `dispatch`; others answer
TiDB's "command N not supported now"), so a hostile or broken client never gets past an error
answer. A client that fails authentication is let go after its error (MySQL closes the
connection); one that goes mid-packet, mid-statement or mid-transaction is let go quietly,
its open transaction rolled back. Several statements in one COM_QUERY answer one result each
(SERVER_MORE_RESULTS_EXISTS), if the client asked for them (else TiDB's error 8130).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import re
import socket
import struct
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeVar

from mysql_mimic import MysqlServer, packets
from mysql_mimic.auth import AuthInfo, AuthState, IdentityProvider, Success, User
from mysql_mimic.auth import NativePasswordAuthPlugin as NativePassword
from mysql_mimic.charset import CharacterSet
from mysql_mimic.connection import Connection
from mysql_mimic.constants import DEFAULT_SERVER_CAPABILITIES
from mysql_mimic.errors import MysqlError
from mysql_mimic.results import ResultColumn, ResultSet
from mysql_mimic.session import BaseSession
from mysql_mimic.stream import MysqlStream
from mysql_mimic.types import (
    Capabilities,
    ColumnDefinition,
    ColumnType,
    Commands,
    ServerStatus,
    uint_len,
)
from mysql_mimic.variables import GlobalVariables, SessionVariables

from ticdc_sim.cluster import Cluster, MustWait, Outcome, SessionState, next_connection_id
from ticdc_sim.errors import SQLError, sqlstate
from ticdc_sim.generator.sql.script import RawStatement, split_script
from ticdc_sim.generator.sql.sysvars import SERVER_VARIABLES
from ticdc_sim.generator.sql.values import as_text
from ticdc_sim.model.mysql import CHARSET_CODECS, MySQLType
from ticdc_sim.service.mysql_wire import (
    MAX_PACKET,
    MAX_PREPARED,
    ClientGone,
    Fatal,
    Malformed,
    Packet,
    Prepared,
    Quoted,
    Stream,
    literal,
    malformed,
    placeholders,
    prepared_labels,
    read_handshake,
    read_params,
    text,
    to_wire,
)
from ticdc_sim.service.registry import Registry
from ticdc_sim.service.settings import Settings
from ticdc_sim.service.turns import LoopTurns

T = TypeVar("T")
logger = logging.getLogger(__name__)

# -- users ---------------------------------------------------------------------------------


class _Users(IdentityProvider):
    """Who may connect, and to which cluster: user `<cluster>.<name>` reaches that cluster
    (TiDB Cloud Serverless prefixes its user names so), a plain name the `default` one.
    With TICDC_SIM_MYSQL_PASSWORD every user needs that password; without, none."""

    def __init__(self, clusters: Registry, password: str | None) -> None:
        self.clusters = clusters
        self.auth_string = NativePassword.create_auth_string(password) if password else None

    def get_plugins(self) -> list[NativePassword]:
        return [NativePassword()]

    async def get_user(self, username: str) -> User | None:
        # a user of no cluster is refused as a wrong password is (1045), after the check
        known = cluster_of(self.clusters, username) is not None
        kind = User if known else _NoCluster
        return kind(name=username, auth_string=self.auth_string, auth_plugin=NativePassword.name)


class _NoCluster(User):
    """A user whose cluster prefix names no cluster."""


def _denied(info: AuthInfo) -> str:
    """TiDB's refusal (1045, 28000), and why when the user names no cluster."""
    password = "YES" if info.data else "NO"
    cluster = cluster_name(info.username)
    reason = f" (no cluster {cluster!r})" if isinstance(info.user, _NoCluster) else ""
    return f"Access denied for user '{info.username}'@'%' (using password: {password}){reason}"


def cluster_name(username: str) -> str:
    """The cluster a user reaches: `<cluster>.<name>`'s, `default` for a plain name."""
    prefix, dot, _ = username.partition(".")
    return prefix if dot else "default"


def cluster_of(clusters: Registry, username: str) -> Cluster | None:
    return clusters.clusters.get(cluster_name(username))


# -- sessions ------------------------------------------------------------------------------


class SimSession(BaseSession):
    """One connection's session: its cluster and its `SessionState`, statements run on
    the event loop in their turn when they cannot wait (`Cluster.at_once`), else on the
    connection's own thread."""

    def __init__(self, clusters: Registry, turns: LoopTurns) -> None:
        self.clusters, self.turns = clusters, turns
        self.variables = SessionVariables(GlobalVariables())
        self.variables.set("version", SERVER_VARIABLES["version"], force=True)  # handshake
        self.username: str | None = None
        self.database: str | None = None
        self._cluster: Cluster | None = None
        self._state: SessionState | None = None
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="mysql-session")
        self.connection_id = next_connection_id()  # the handshake's, and CONNECTION_ID()
        self.found_rows = False  # the client's CLIENT_FOUND_ROWS: UPDATE counts matched rows

    @property
    def cluster(self) -> Cluster:
        assert self._cluster is not None, "a session's cluster is known once it has connected"
        return self._cluster

    @property
    def state(self) -> SessionState:
        assert self._state is not None, "a session's state is made once it has connected"
        return self._state

    async def init(self, connection: Connection | None = None) -> None:
        """A new session on the user's cluster, in the database the client asked for."""
        username = self.username or "root"
        cluster = cluster_of(self.clusters, username)
        if cluster is None:  # removed since the handshake
            raise MysqlError(f"Unknown cluster for user {username}", 1045)
        self._cluster = cluster
        database, self.database = self.database, None
        # the connection's id, kept by COM_RESET_CONNECTION and COM_CHANGE_USER (MySQL)
        self._state = cluster.session(f"{username}@127.0.0.1", self.connection_id)
        if connection is not None:
            self.found_rows = Capabilities.CLIENT_FOUND_ROWS in connection.capabilities
        self.state.found_rows = self.found_rows
        self.state.database = None
        charset = str(self.variables.get("character_set_client"))
        if charset not in ("utf8mb4", "utf8", "utf8mb3", "binary"):  # as SET NAMES would
            # a charset the engine does not read: the connection reads UTF-8 (TiDB too
            # answers in its own charsets only), rather than refusing the client
            with contextlib.suppress(MysqlError):
                await self.query_one(f"SET NAMES {charset}")
        if database:
            await self.use(database)

    async def close(self) -> None:
        try:
            if self._state is not None:
                await self.call(self.cluster.end, self.state)
        finally:
            self.thread.shutdown(wait=False)

    async def reset(self) -> None:
        """COM_RESET_CONNECTION: the open transaction rolled back, variables as new, the
        current database kept."""
        await self.reopen(self.state.database)

    async def reopen(self, database: str | None) -> None:
        """A new session in place of this one (for the user authenticated last)."""
        await self.call(self.cluster.end, self.state)
        self._state, self.database = None, database
        await self.init()

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn` on the connection's own thread, as MySQL gives each connection one: a
        session waiting for another's lock never takes a thread that one needs to commit."""
        return await asyncio.get_running_loop().run_in_executor(self.thread, fn, *args)

    async def use(self, database: str) -> None:
        await self.query_one(f"USE `{database.replace('`', '``')}`")

    def statements(self, sql: str) -> list[RawStatement]:
        try:
            return list(split_script(sql.splitlines(keepends=True), "mysql"))
        except SQLError as e:  # unreadable (an unterminated quote): nothing runs
            raise MysqlError(e.message, e.code or 1064) from None

    async def run(self, stmt: RawStatement) -> Outcome:
        async with self.turns.at_once(self.cluster, len(stmt.text), self.state) as now:
            if now:  # on the event loop: it cannot wait
                try:
                    outcome, _ = self.cluster.run(self.state, stmt)
                except MustWait:  # it could after all: undone, run again where it may
                    now = False
        if not now:
            outcome, _ = await self.call(self.cluster.run, self.state, stmt)
        if outcome.error is not None:
            raise _mysql_error(outcome.error)
        self.database = self.state.database
        return outcome

    async def query_one(self, sql: str) -> Outcome | None:
        outcome = None
        for stmt in self.statements(sql):
            outcome = await self.run(stmt)
        return outcome

    async def handle_query(self, sql: str, attrs: dict[str, str]) -> Any:
        outcome = await self.query_one(sql)
        if outcome is None or not outcome.columns:
            return None
        found = result_set(outcome, self.results_charset())
        return ResultSet(found.rows, found.columns)

    def results_charset(self) -> str | None:
        """character_set_results: what result text is sent in (None: as stored)."""
        charsets = self.state.session.charsets
        found: str | None = charsets.get("character_set_results", "utf8mb4")
        return found

    def status(self) -> ServerStatus:
        """The server status flags of an OK or EOF packet."""
        flags = ServerStatus(0)
        if self._state is None:
            return ServerStatus.SERVER_STATUS_AUTOCOMMIT
        if self.state.txn is not None:
            flags |= ServerStatus.SERVER_STATUS_IN_TRANS
        if self.state.session.autocommit:
            flags |= ServerStatus.SERVER_STATUS_AUTOCOMMIT
        return flags


def _mysql_error(error: SQLError) -> MysqlError:
    return MysqlError(error.message, error.code or 1105)


# -- result columns: the type a client reads each column as --------------------------------------

# what a value answers as when no column says (an expression's result)
_BY_VALUE: list[tuple[type, ColumnType]] = [
    (bool, ColumnType.TINY),
    (int, ColumnType.LONGLONG),
    (float, ColumnType.DOUBLE),
    (Decimal, ColumnType.NEWDECIMAL),
    (bytes, ColumnType.BLOB),
]
# numbers, narrowest first: a mix of them is the widest; any other mix (`IF(id = 1, -1, 'x')`)
# is text, as TiDB types it (VARCHAR)
_NUMBERS = [ColumnType.TINY, ColumnType.LONGLONG, ColumnType.NEWDECIMAL, ColumnType.DOUBLE]
_BINARY_CHARSET = frozenset(
    {ColumnType.BLOB, ColumnType.TINY_BLOB, ColumnType.MEDIUM_BLOB, ColumnType.LONG_BLOB}
)
# the binary protocol's integers (TiDB `pkg/server/internal/column` dumpBinaryRow): the
# struct format of each integer type, signed; an unsigned column's is the capital
_INTEGERS: dict[ColumnType, str] = {
    ColumnType.TINY: "b",
    ColumnType.SHORT: "h",
    ColumnType.YEAR: "h",
    ColumnType.INT24: "i",
    ColumnType.LONG: "i",
    ColumnType.LONGLONG: "q",
}
_DATETIME = re.compile(r"(\d+)-(\d+)-(\d+)(?:[ T](\d+):(\d+):(\d+)(?:\.(\d{1,6}))?)?")


@dataclass
class Results:
    """A result set as a client reads it: rows, columns, and the flags (UNSIGNED) of each
    column's definition (mimic's columns, compiled, carry none)."""

    rows: list[list[Any]]
    columns: list[ResultColumn]
    flags: list[ColumnDefinition]


def _binary_datetime(col: ResultColumn, value: Any) -> bytes:
    """A DATE, DATETIME or TIMESTAMP as the engine prints it, in the binary protocol (TiDB
    `pkg/server/internal/dump` BinaryDateTime): read from its text, so the zero date and
    years Python has no date for are sent as they are."""
    found = _DATETIME.match(str(value))
    if found is None:
        raise ValueError(f"not a date: {value!r}")
    year, month, day, hour, minute, second = (int(f or 0) for f in found.groups()[:6])
    micro = int((found.group(7) or "0").ljust(6, "0"))
    if micro:
        body = struct.pack("<HBBBBBI", year, month, day, hour, minute, second, micro)
    elif hour or minute or second:
        body = struct.pack("<HBBBBB", year, month, day, hour, minute, second)
    elif year or month or day:
        body = struct.pack("<HBB", year, month, day)
    else:
        body = b""
    return bytes([len(body)]) + body


def _binary_time(col: ResultColumn, value: Any) -> bytes:
    """A TIME as the engine prints it (`-838:59:59.5`), in the binary protocol (TiDB
    `pkg/server/internal/dump` BinaryTime): sign, days, hours, minutes, seconds, micros."""
    delta = _duration(value) if isinstance(value, str) else value
    if not delta:
        return b"\x00"
    negative, delta = delta < dt.timedelta(0), abs(delta)
    minutes, seconds = divmod(delta.seconds, 60)
    hours, minutes = divmod(minutes, 60)
    body = struct.pack("<BIBBB", negative, delta.days, hours, minutes, seconds)
    if delta.microseconds:
        body += struct.pack("<I", delta.microseconds)
    return bytes([len(body)]) + body


def _duration(text: str) -> dt.timedelta:
    sign = -1 if text.startswith("-") else 1
    hours, minutes, seconds = text.lstrip("-").split(":")
    return sign * dt.timedelta(hours=int(hours), minutes=int(minutes), seconds=float(seconds))


# the binary protocol's values that are not length-encoded text (integers: `_integers`)
_BINARY_ENCODERS: dict[ColumnType, Callable[[ResultColumn, Any], bytes]] = {
    ColumnType.DATE: _binary_datetime,
    ColumnType.DATETIME: _binary_datetime,
    ColumnType.TIMESTAMP: _binary_datetime,
    ColumnType.TIME: _binary_time,
    ColumnType.FLOAT: lambda col, value: struct.pack("<f", float(value)),
    ColumnType.DOUBLE: lambda col, value: struct.pack("<d", float(value)),
}


def result_set(outcome: Outcome, results: str | None = None) -> Results:
    """An outcome's rows as the client reads them: text in the session's
    character_set_results (`results`; None, as NULL asks: as stored, UTF-8)."""
    assert outcome.columns is not None
    rows = [list(row) for row in outcome.rows or []]
    types = outcome.types or [None] * len(outcome.columns)
    codec = CHARSET_CODECS.get(results) if results else None
    charset = CharacterSet[results] if codec is not None and results else CharacterSet.utf8mb4
    text = _text if codec is None else _text_in(codec)
    columns = [
        _column(name, tp, [r[i] for r in rows], charset, text)
        for i, (name, tp) in enumerate(zip(outcome.columns, types, strict=True))
    ]
    return Results(rows, [c for c, _ in columns], [f for _, f in columns])


def _column(
    name: str,
    tp: MySQLType | None,
    values: list[Any],
    text_charset: CharacterSet,
    text: Callable[[ResultColumn, Any], bytes],
) -> tuple[ResultColumn, ColumnDefinition]:
    if tp is None or tp == MySQLType.BIT:  # BIT: the engine answers its number
        kind = _value_kind(values)
    elif tp == MySQLType.VARCHAR:  # sent as VAR_STRING (TiDB column/convert.go, as MySQL)
        kind = ColumnType.VAR_STRING
    else:
        kind = ColumnType(int(tp))
    # BLOB is TEXT's type too: the values say which (bytes, or text in the session's charset)
    binary_string = any(isinstance(v, bytes) for v in values) or (
        kind in _BINARY_CHARSET and all(v is None for v in values)
    )
    charset = CharacterSet.binary if binary_string else text_charset
    flags = ColumnDefinition(0)
    binary = _BINARY_ENCODERS.get(kind)
    if kind in _INTEGERS:
        kind, flags, binary = _integers(kind, values)
    elif binary is None:  # every kind of string, and DECIMAL: length-encoded text

        def binary(col: ResultColumn, value: Any) -> bytes:
            return uint_len(len(encoded := text(col, value))) + encoded

    shown = to_wire(name).decode("utf-8", "replace")  # a label from undecodable bytes
    column = ResultColumn(shown, kind, charset, text_encoder=text, binary_encoder=binary)
    return column, flags


def _value_kind(values: list[Any]) -> ColumnType:
    """The type of a column no table types: its values' own, or the one their mix widens to."""
    kinds = {
        next((k for t, k in _BY_VALUE if isinstance(v, t)), ColumnType.VAR_STRING)
        for v in values
        if v is not None
    }
    if len(kinds) <= 1:
        return kinds.pop() if kinds else ColumnType.VAR_STRING
    return max(kinds, key=_NUMBERS.index) if kinds <= set(_NUMBERS) else ColumnType.VAR_STRING


def _integers(
    kind: ColumnType, values: list[Any]
) -> tuple[ColumnType, ColumnDefinition, Callable[[ResultColumn, Any], bytes] | None]:
    """An integer column's type, flags and binary form: UNSIGNED when a value needs it (a
    client reads the binary integer as the flag says); values no integer of the type
    holds (an expression's) go as DECIMAL, in text."""
    signed = _INTEGERS[kind]
    bits = struct.calcsize(signed) * 8
    numbers = [v for v in values if v is not None]
    if not all(isinstance(n, int) for n in numbers):  # a typed column answering otherwise
        return ColumnType.VAR_STRING, ColumnDefinition(0), None
    unsigned = any(n >= 1 << (bits - 1) for n in numbers)
    low, high = (0, 1 << bits) if unsigned else (-(1 << (bits - 1)), 1 << (bits - 1))
    if not all(low <= n < high for n in numbers):
        return ColumnType.NEWDECIMAL, ColumnDefinition(0), None
    form = struct.Struct("<" + (signed.upper() if unsigned else signed))
    flags = ColumnDefinition.UNSIGNED_FLAG if unsigned else ColumnDefinition(0)
    return kind, flags, lambda col, value: form.pack(int(value))


def _text(col: ResultColumn, value: Any) -> bytes:
    return value if isinstance(value, bytes) else to_wire(as_text(value))


def _text_in(codec: str) -> Callable[[ResultColumn, Any], bytes]:
    """Text in another charset than UTF-8; what it cannot hold is `?`, as TiDB writes it."""

    def text(col: ResultColumn, value: Any) -> bytes:
        return value if isinstance(value, bytes) else as_text(value).encode(codec, "replace")

    return text


# -- the connection ---------------------------------------------------------------------------

# Long data past max_allowed_packet is dropped and said at the statement's execute, the
# connection kept (MySQL `Item_param::set_longdata`, and MariaDB: 1105 HY000, this text). MySQL
# bounds each parameter; the service also bounds a connection's parameters together, or
# one connection could hold 64 MiB times 16382 statements.
_PARAMETER_TOO_LONG = (
    "Parameter of prepared statement which is set through mysql_send_long_data() is longer"
    " than 'max_allowed_packet' bytes"
)
_CONNECTION_TOO_LONG = (
    "Parameters of prepared statements set through mysql_send_long_data() on this connection"
    " are longer than 'max_allowed_packet' bytes together; execute or reset the statements"
    " that hold some"
)


def _preparable(session: SimSession, sql: str) -> tuple[list[tuple[int, int]], list[str] | None]:
    """A statement COM_STMT_PREPARE may take: its `?` and its result's column names. TiDB
    prepares one statement (8115) of at most 65535 parameters (1390), whose text it can
    read (the statement's own error, as in TiDB)."""
    if len(session.statements(sql)) > 1:
        raise MysqlError("Can not prepare multiple statements", 8115)
    marks = placeholders(sql)
    if len(marks) > 0xFFFF:  # the count is two bytes in the OK packet
        raise MysqlError("Prepared statement contains too many placeholders", 1390)
    words = sql.lstrip().lstrip("(").split(None, 1)
    select = bool(words) and words[0].upper() in ("SELECT", "WITH")
    return marks, prepared_labels(sql) if select else None


# MySQL's connect_timeout (and TiDB's): a client has this long to finish the handshake
CONNECT_TIMEOUT_S = 10.0


class SimConnection(Connection):
    """A client's connection: the handshake, then commands until it quits or goes."""

    session: SimSession
    stream: Stream

    def __init__(self, *args: Any, admitted: Callable[[], bool], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.admitted = admitted  # whether the server takes one more connection
        self.prepared: dict[int, Prepared] = {}
        self.next_statement = 1
        self.long_data = 0  # bytes of COM_STMT_SEND_LONG_DATA held, in all statements

    async def _start(self) -> None:
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                if not await self.connection_phase():
                    return  # refused: the error is sent, the connection ends (MySQL)
                await self.session.init(self)  # the database asked for: 1049, not the OK
                await self.stream.write(self._ok())
            self.stream.reset_seq()
        except TimeoutError:  # MySQL's connect_timeout: the socket is closed, nothing said
            return
        except (ClientGone, asyncio.CancelledError):
            return
        except MysqlError as e:
            await self._error(e.code, e.msg)
            return
        except Fatal as e:
            await self._error(e.code, e.message)
            return
        except (Malformed, ValueError):
            await self._error(1043, "Bad handshake")
            return
        try:
            await self.command_phase()
        except (ClientGone, asyncio.CancelledError):
            pass
        except Fatal as e:
            await self._error(e.code, e.message)
        finally:
            await self.session.close()

    async def connection_phase(self) -> bool:
        """The handshake up to the password's check: whether the client is in."""
        plugin = self.identity_provider.get_default_plugin()
        auth_data, auth_state = await plugin.start()
        assert isinstance(auth_data, bytes)
        self.handshake_auth_data, self.handshake_auth_plugin = auth_data, plugin.name
        await self.stream.write(
            packets.make_handshake_v10(
                capabilities=self.server_capabilities,
                server_charset=self.server_charset,
                server_version=str(self.session.variables.get("version")),
                connection_id=self.connection_id,
                auth_data=auth_data,
                # autocommit on, as MySQL's and TiDB's greeting says: pymysql takes it
                # for the session's, and with 0 here never sends `autocommit=False`'s SET
                status_flags=self.session.status(),
                auth_plugin_name=plugin.name,
            )
        )
        response = read_handshake(self.server_capabilities, await self.stream.read())
        if response.ssl_request:
            raise Fatal(1043, "Bad handshake")  # no TLS here
        self.capabilities = response.capabilities
        if not self.admitted():  # after the client's answer, before its password (TiDB)
            raise Fatal(1040, "Too many connections")
        self.max_packet_size = response.max_packet_size
        self.session.variables.set("character_set_client", response.charset.name)
        self.session.database = response.database
        self.client_plugin_name = response.client_plugin
        self.client_connect_attrs = response.connect_attrs
        self.session.variables.set("external_user", response.username, force=True)
        return await self.check_password(
            response.username, response.auth_response, response.client_plugin, auth_state
        )

    async def check_password(
        self,
        username: str,
        auth_response: bytes,
        client_plugin: str | None,
        auth_state: AuthState | None = None,
    ) -> bool:
        """mysql_native_password's exchange (mimic's `authenticate`, without the OK it
        sends: the session opens first, and may fail): whether the password is right. A
        refusal is answered here."""
        plugin = self.identity_provider.get_default_plugin()
        info = AuthInfo(
            username=username,
            data=auth_response,
            connect_attrs=self.client_connect_attrs,
            user=await self.identity_provider.get_user(username),
            client_plugin_name=client_plugin,
            handshake_auth_data=self.handshake_auth_data,
            handshake_plugin_name=self.handshake_auth_plugin or plugin.name,
        )
        if client_plugin != plugin.client_plugin_name:  # switch the client to ours
            decision, auth_state = await plugin.start()
            assert isinstance(decision, bytes)
            switch = b"\xfe" + plugin.client_plugin_name.encode() + b"\0" + decision
            await self.stream.write(switch)
            info = info.copy(await self.stream.read())
            decision = await auth_state.asend(info)
        elif auth_state is not None:  # the handshake's nonce answered
            decision = await auth_state.asend(info)
        else:
            decision, auth_state = await plugin.start(info)
        while isinstance(decision, bytes):
            await self.stream.write(b"\x01" + decision)
            info = info.copy(await self.stream.read())
            decision = await auth_state.asend(info)
        if isinstance(decision, Success) and not isinstance(info.user, _NoCluster):
            self.session.username = decision.authenticated_as
            return True
        await self._error(1045, _denied(info))
        return False

    async def command_phase(self) -> None:
        while True:
            data = await self.stream.read()
            try:
                # an empty packet is COM_SLEEP, which no client may send (MySQL)
                command, rest = (data[0], data[1:]) if data else (Commands.COM_SLEEP, b"")
                handler = _COMMANDS.get(command)
                if handler is None:
                    raise MysqlError(f"command {command} not supported now", 1105)
                if await handler(self, rest) is False:
                    return  # COM_QUIT
            except MysqlError as e:
                await self._error(e.code, e.msg)
            except Malformed:
                await self._error(1835, "Malformed communication packet.")
            except (ClientGone, Fatal, asyncio.CancelledError):
                raise
            except Exception as e:  # a bug of ours: said, with its traceback in the log
                logger.exception("the MySQL port failed on a command")
                await self._error(1105, f"internal error ({type(e).__name__}: {e})")
            finally:
                self.stream.reset_seq()

    async def _error(self, code: int, message: str) -> None:
        body = b"\xff" + code.to_bytes(2, "little")
        if not self.capabilities or Capabilities.CLIENT_PROTOCOL_41 in self.capabilities:
            body += b"#" + sqlstate(code).encode()
        with contextlib.suppress(ClientGone):
            await self.stream.write(body + to_wire(message)[:512])

    def _ok(self, affected: int = 0, insert_id: int = 0, more: bool = False) -> bytes:
        self.status_flags = self.session.status()
        if more:
            self.status_flags |= ServerStatus.SERVER_MORE_RESULTS_EXISTS
        warnings = len(self.session.state.last_warnings) if self.session._state else 0
        return self.ok(affected_rows=affected, last_insert_id=insert_id, warnings=warnings)

    # -- commands -------------------------------------------------------------------------

    async def com_quit(self, data: bytes) -> bool:
        return False

    async def com_ping(self, data: bytes) -> None:
        await self.stream.write(self._ok())

    async def com_statistics(self, data: bytes) -> None:
        await self.stream.write(
            b"Uptime: 0  Threads: 0  Questions: 0  Slow queries: 0  Opens: 0  Flush tables: 0"
            b"  Open tables: 0  Queries per second avg: 0.000"
        )

    async def com_init_db(self, data: bytes) -> None:
        await self.session.use(text(data))
        await self.stream.write(self._ok())

    async def com_query(self, data: bytes) -> None:
        p = Packet(data)
        if Capabilities.CLIENT_QUERY_ATTRIBUTES in self.capabilities:
            count = p.lenenc()
            p.lenenc()  # parameter sets: always 1
            read_params(p, count, None, named=True)
        sql = text(p.rest().removesuffix(b"\0"))  # a trailing NUL is no part of it (TiDB)
        statements = self.session.statements(sql)
        if len(statements) > 1 and Capabilities.CLIENT_MULTI_STATEMENTS not in self.capabilities:
            raise MysqlError(  # TiDB's tidb_multi_statement_mode=OFF
                "client has multi-statement capability disabled. Run SET GLOBAL"
                " tidb_multi_statement_mode='ON' after you understand the security risk",
                8130,
            )
        if not statements:
            await self.stream.write(self._ok())
        for i, stmt in enumerate(statements):
            outcome = await self.session.run(stmt)
            await self._answer(outcome, more=i < len(statements) - 1)

    async def _answer(self, outcome: Outcome, more: bool) -> None:
        if outcome.columns is None:
            await self.stream.write(self._ok(outcome.affected_rows, outcome.insert_id, more))
            return
        self._ok(more=more)  # the status flags of the EOF/OK that ends the rows
        await self._text_rows(result_set(outcome, self.session.results_charset()))

    def _definitions(self, results: Results) -> list[bytes]:
        return [
            packets.make_column_definition_41(
                server_charset=self.server_charset,
                name=column.name,
                column_type=column.type,
                character_set=column.character_set,
                flags=flags,
            )
            for column, flags in zip(results.columns, results.flags, strict=True)
        ]

    async def _text_rows(self, results: Results) -> None:
        """mimic's write_text_resultset, with each column's flags in its definition."""
        columns, rows = results.columns, results.rows
        count = packets.make_column_count(self.capabilities, len(columns))
        header = [count, *self._definitions(results)]
        if not self.deprecate_eof():
            header.append(self.eof())
        self.stream.write_many(header)
        await self.stream.write_text_rows(rows, columns)
        await self.stream.write(self.ok_or_eof(affected_rows=len(rows)), drain=False)
        await self.stream.drain()

    async def com_field_list(self, data: bytes) -> None:
        p = Packet(data)
        table, wildcard = text(p.null_terminated()), text(p.rest())
        sql = f"SHOW COLUMNS FROM `{table.replace('`', '``')}`"
        if wildcard:
            sql += " LIKE " + literal(Quoted(wildcard))
        outcome = await self.session.query_one(sql)
        for row in outcome.rows or [] if outcome is not None else []:
            await self.stream.write(
                packets.make_column_definition_41(
                    server_charset=self.server_charset,
                    table=table,
                    name=row[0],
                    is_com_field_list=True,
                    default=row[4],
                ),
                drain=False,
            )
        await self.stream.write(self._eof())

    def _eof(self, flags: int = 0) -> bytes:
        self.status_flags = self.session.status()
        return self.ok_or_eof(flags=flags)

    async def com_set_option(self, data: bytes) -> None:
        option = Packet(data).uint(2)
        if option == 0:
            self.capabilities |= Capabilities.CLIENT_MULTI_STATEMENTS
        elif option == 1:
            self.capabilities &= ~Capabilities.CLIENT_MULTI_STATEMENTS
        else:
            raise malformed()
        self.status_flags = self.session.status()
        await self.stream.write(self.eof())

    async def com_reset_connection(self, data: bytes) -> None:
        self._forget_statements()
        await self.session.reset()
        await self.stream.write(self._ok())

    async def com_change_user(self, data: bytes) -> bool | None:
        p = Packet(data)
        username = text(p.null_terminated())
        if Capabilities.CLIENT_SECURE_CONNECTION in self.capabilities:
            auth_response = p.fixed(p.uint(1))
        else:
            auth_response = p.null_terminated()
        database = text(p.null_terminated()) if not p.done() else ""
        plugin = None
        if not p.done():
            p.uint(2)  # the character set
            if Capabilities.CLIENT_PLUGIN_AUTH in self.capabilities and not p.done():
                plugin = text(p.null_terminated())
        if not await self.check_password(username, auth_response, plugin):
            return False  # refused: MySQL closes the connection
        self._forget_statements()
        await self.session.reopen(database or None)
        await self.stream.write(self._ok())
        return None

    async def com_stmt_prepare(self, data: bytes) -> None:
        if len(self.prepared) >= MAX_PREPARED:
            raise MysqlError(
                "Can't create more than max_prepared_stmt_count statements"
                f" (current value: {MAX_PREPARED})",
                1461,
            )
        sql = text(data.removesuffix(b"\0"))
        # reading a statement may take seconds (megabytes of it): not on the event loop,
        # which every connection and HTTP request shares
        marks, labels = await self.session.call(_preparable, self.session, sql)
        stmt = Prepared(self.next_statement, sql, marks, labels)
        self.next_statement += 1
        self.prepared[stmt.id] = stmt
        count = len(stmt.placeholders)
        head = b"\x00" + stmt.id.to_bytes(4, "little") + b"\x00\x00"
        out = [head + count.to_bytes(2, "little") + b"\x00\x00\x00"]
        if count:
            out += [
                packets.make_column_definition_41(server_charset=self.server_charset, name="?")
            ] * count
            if not self.deprecate_eof():
                out.append(self.eof())
        for packet in out:
            await self.stream.write(packet, drain=False)
        await self.stream.drain()

    def _statement(self, stmt_id: int, command: str) -> Prepared:
        found = self.prepared.get(stmt_id)
        if found is None:
            raise MysqlError(
                f"Unknown prepared statement handler ({stmt_id}) given to {command}", 1243
            )
        return found

    async def com_stmt_send_long_data(self, data: bytes) -> None:
        p = Packet(data)
        stmt = self.prepared.get(p.uint(4))
        param = p.uint(2)
        if stmt is None or param >= len(stmt.placeholders):
            return  # no answer to this command, whatever it carries (MySQL)
        chunk = p.rest()
        if stmt.too_long is None:
            held = len(stmt.long_data.get(param, b""))
            if held + len(chunk) > MAX_PACKET:
                stmt.too_long = _PARAMETER_TOO_LONG
            elif self.long_data + len(chunk) > MAX_PACKET:
                stmt.too_long = _CONNECTION_TOO_LONG
        if stmt.too_long is not None:
            self._forget_long_data(stmt)  # held no longer: the execute says why
            return
        stmt.long_data.setdefault(param, bytearray()).extend(chunk)
        self.long_data += len(chunk)

    def _forget_statements(self) -> None:
        self.prepared.clear()
        self.long_data = 0

    def _forget_long_data(self, stmt: Prepared) -> None:
        self.long_data -= sum(len(chunk) for chunk in stmt.long_data.values())
        stmt.long_data.clear()

    async def com_stmt_execute(self, data: bytes) -> None:
        p = Packet(data)
        stmt = self._statement(p.uint(4), "mysqld_stmt_execute")
        if stmt.too_long is not None:
            said, stmt.too_long = stmt.too_long, None
            raise MysqlError(said, 1105)
        flags = p.uint(1)
        p.uint(4)  # iteration count: always 1
        count = len(stmt.placeholders)
        named = Capabilities.CLIENT_QUERY_ATTRIBUTES in self.capabilities
        if named and (count or flags & 0x08):  # PARAMETER_COUNT_AVAILABLE
            count = p.lenenc()
        values = read_params(p, count, stmt, named)
        self._forget_long_data(stmt)
        if len(values) < len(stmt.placeholders):
            raise MysqlError("Incorrect arguments to mysqld_stmt_execute", 1210)
        outcome = await self.session.query_one(stmt.bind(values[: len(stmt.placeholders)]))
        if outcome is None or outcome.columns is None:
            affected = outcome.affected_rows if outcome else 0
            await self.stream.write(self._ok(affected, outcome.insert_id if outcome else 0))
            return
        if stmt.labels is not None and len(stmt.labels) == len(outcome.columns):
            outcome.columns = stmt.labels
        results = result_set(outcome, self.session.results_charset())
        await self._binary_rows(stmt, results, use_cursor=bool(flags & 0x01))

    async def _binary_rows(self, stmt: Prepared, results: Results, use_cursor: bool) -> None:
        columns = results.columns
        await self.stream.write(uint_len(len(columns)), drain=False)
        for definition in self._definitions(results):
            await self.stream.write(definition, drain=False)
        rows = [packets.make_binary_resultrow(r, columns) for r in results.rows]
        if use_cursor:
            stmt.cursor = _iterate(rows)
            await self.stream.write(self._eof(flags=ServerStatus.SERVER_STATUS_CURSOR_EXISTS))
            return
        if not self.deprecate_eof():
            await self.stream.write(self._eof(), drain=False)
        for row in rows:
            await self.stream.write(row, drain=False)
        await self.stream.write(self._eof())

    async def com_stmt_fetch(self, data: bytes) -> None:
        p = Packet(data)
        stmt_id = p.uint(4)
        stmt, wanted = self._statement(stmt_id, "mysqld_stmt_fetch"), p.uint(4)
        if stmt.cursor is None:
            raise MysqlError(f"The statement ({stmt_id}) has no open cursor.", 1421)
        sent = 0
        async for row in stmt.cursor:
            await self.stream.write(row, drain=False)
            sent += 1
            if sent >= wanted:
                break
        done = sent < wanted
        if done:
            stmt.cursor = None
        flag = (
            ServerStatus.SERVER_STATUS_LAST_ROW_SENT
            if done
            else ServerStatus.SERVER_STATUS_CURSOR_EXISTS
        )
        await self.stream.write(self._eof(flags=flag))

    async def com_stmt_reset(self, data: bytes) -> None:
        stmt = self._statement(Packet(data).uint(4), "mysqld_stmt_reset")
        self._forget_long_data(stmt)
        stmt.too_long = None
        stmt.cursor = None
        await self.stream.write(self._ok())

    async def com_stmt_close(self, data: bytes) -> None:
        stmt = self.prepared.pop(Packet(data).uint(4), None)  # no answer (MySQL)
        if stmt is not None:
            self._forget_long_data(stmt)


async def _iterate(rows: list[bytes]) -> AsyncIterator[bytes]:
    for row in rows:
        yield row


# what each command byte runs (TiDB `pkg/server/conn.go` `dispatch`); others answer 1105
_COMMANDS: dict[int, Callable[[SimConnection, bytes], Any]] = {
    Commands.COM_QUIT: SimConnection.com_quit,
    Commands.COM_INIT_DB: SimConnection.com_init_db,
    Commands.COM_QUERY: SimConnection.com_query,
    Commands.COM_FIELD_LIST: SimConnection.com_field_list,
    Commands.COM_STATISTICS: SimConnection.com_statistics,
    Commands.COM_PING: SimConnection.com_ping,
    Commands.COM_CHANGE_USER: SimConnection.com_change_user,
    Commands.COM_STMT_PREPARE: SimConnection.com_stmt_prepare,
    Commands.COM_STMT_EXECUTE: SimConnection.com_stmt_execute,
    Commands.COM_STMT_SEND_LONG_DATA: SimConnection.com_stmt_send_long_data,
    Commands.COM_STMT_CLOSE: SimConnection.com_stmt_close,
    Commands.COM_STMT_RESET: SimConnection.com_stmt_reset,
    Commands.COM_SET_OPTION: SimConnection.com_set_option,
    Commands.COM_STMT_FETCH: SimConnection.com_stmt_fetch,
    Commands.COM_RESET_CONNECTION: SimConnection.com_reset_connection,
}


# -- the server ------------------------------------------------------------------------------

# what the server offers: mimic's, and TiDB's (`pkg/server/server.go` defaultCapability)
# multi-statements, transactions and found rows (no LOAD DATA LOCAL: no local files)
CAPABILITIES = (
    DEFAULT_SERVER_CAPABILITIES
    | Capabilities.CLIENT_LONG_FLAG
    | Capabilities.CLIENT_TRANSACTIONS
    | Capabilities.CLIENT_FOUND_ROWS
    | Capabilities.CLIENT_MULTI_STATEMENTS
    | Capabilities.CLIENT_MULTI_RESULTS
)


class SimServer(MysqlServer):
    """mimic's server with connections of ours; closing it ends every connection (each
    rolls back its open transaction) instead of leaving them to the event loop's end.
    `connections`: the clients past the handshake, at most `max_connections` (TiDB
    `pkg/server/server.go` checkConnectionCount: one more is answered 1040 in the OK's
    place); `len(server.connections)` is what the metrics show."""

    def __init__(
        self, clusters: Registry, turns: LoopTurns, password: str | None, max_connections: int
    ) -> None:
        super().__init__(identity_provider=_Users(clusters, password), capabilities=CAPABILITIES)
        self.clusters, self.turns = clusters, turns
        self.max_connections = max_connections
        self.connections: set[SimConnection] = set()
        self.tasks: set[asyncio.Task[None]] = set()  # every socket, in the handshake or past

    async def _client_connected_cb(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        connection: SimConnection
        if len(self.tasks) - len(self.connections) >= self.max_connections:
            # as many sockets in the handshake as connections may be open: one more is
            # closed at once (each holds a file descriptor the HTTP port needs too)
            writer.close()
            return

        def admitted() -> bool:
            if len(self.connections) >= self.max_connections:
                return False
            self.connections.add(connection)
            return True

        connection = SimConnection(
            stream=Stream(MysqlStream(reader, writer)),
            session=SimSession(self.clusters, self.turns),
            control=self.control,
            server_capabilities=self.capabilities,
            identity_provider=self.identity_provider,
            admitted=admitted,
        )
        connection.connection_id = connection.session.connection_id
        task = asyncio.current_task()
        if task is not None:
            self.tasks.add(task)
        try:
            await connection._start()
        except asyncio.CancelledError:
            pass  # the server is closing
        finally:
            if task is not None:
                self.tasks.discard(task)
            self.connections.discard(connection)
            writer.close()

    def close(self) -> None:
        super().close()
        for task in list(self.tasks):
            task.cancel()

    async def wait_closed(self) -> None:
        await super().wait_closed()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)


async def start(
    settings: Settings, clusters: Registry, turns: LoopTurns, sock: socket.socket | None = None
) -> SimServer | None:
    """The MySQL port (TICDC_SIM_MYSQL_PORT; 0: none), on `sock` when `serve` bound it;
    `turns`: the event loop's, shared with the HTTP port."""
    if not settings.mysql_port:
        return None
    server = SimServer(clusters, turns, settings.mysql_password, settings.max_connections)
    if sock is not None:
        await server.start_server(host=None, port=None, sock=sock)
    else:
        await server.start_server(host=settings.host, port=settings.mysql_port)
    return server
