"""TiDB's front door: the MySQL protocol (mysql-mimic), one connection one session.

mysql-mimic's `Session` answers BEGIN, COMMIT, SET, USE and SHOW with its own middlewares
and never tells the caller (research/service-notes.md); a transaction would silently not be
one. So connections get a `BaseSession` of ours: every statement goes to the cluster's
engine through the connection's `SessionState` (its transaction, variables and current
database), and what commits reaches the changefeeds as it commits. The OK packet carries the
statement's affected rows (mimic's own OK has none; `init` wraps it per connection).
User `<cluster>.root` connects to that cluster, plain `root` to `default`.

What a driver sends on connect and the engine does not model (SHOW of variables, warnings,
collations ...) answers with an empty result set or from the catalog (SHOW DATABASES,
SHOW TABLES), so pymysql, the mysql and mariadb clients and ORMs connect.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any, TypeVar

from mysql_mimic import MysqlServer
from mysql_mimic import errors as mimic_errors
from mysql_mimic.auth import IdentityProvider, NativePasswordAuthPlugin, User
from mysql_mimic.charset import CharacterSet
from mysql_mimic.connection import Connection
from mysql_mimic.errors import MysqlError
from mysql_mimic.results import ResultColumn
from mysql_mimic.session import BaseSession
from mysql_mimic.types import ColumnType
from mysql_mimic.variables import GlobalVariables, SessionVariables

from ticdc_sim.errors import SQLSTATE, SQLError
from ticdc_sim.generator.sql.engine import SERVER_VARIABLES
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.model.mysql import MySQLType
from ticdc_sim.service.runtime import Cluster, Outcome, Registry, SessionState
from ticdc_sim.service.settings import Settings

T = TypeVar("T")
Result = tuple[Sequence[Sequence[Any]], Sequence[str]] | None


class _Users(IdentityProvider):
    """Who may connect, and to which cluster: user `<cluster>.<name>` reaches that cluster
    (TiDB Cloud Serverless prefixes its user names so), a plain name the `default` one.
    With TICDC_SIM_MYSQL_PASSWORD every user needs that password; without, none."""

    def __init__(self, clusters: Registry, password: str | None) -> None:
        self.clusters = clusters
        self.auth_string = (
            NativePasswordAuthPlugin.create_auth_string(password) if password else None
        )

    def get_plugins(self) -> list[NativePasswordAuthPlugin]:
        return [NativePasswordAuthPlugin()]

    async def get_user(self, username: str) -> User | None:
        if cluster_of(self.clusters, username) is None:
            return None  # the client reads "User ... does not exist"
        return User(
            name=username, auth_string=self.auth_string, auth_plugin=NativePasswordAuthPlugin.name
        )


def cluster_of(clusters: Registry, username: str) -> Cluster | None:
    prefix, dot, _ = username.partition(".")
    return clusters.clusters.get(prefix if dot else "default")


class SimSession(BaseSession):
    def __init__(self, clusters: Registry) -> None:
        self.clusters = clusters
        self.variables = SessionVariables(GlobalVariables())
        self.variables.set("version", SERVER_VARIABLES["version"], force=True)  # handshake
        self.username: str | None = None
        self.database: str | None = None
        self._cluster: Cluster | None = None
        self._state: SessionState | None = None
        self.affected = 0
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="mysql-session")

    @property
    def cluster(self) -> Cluster:
        assert self._cluster is not None, "a session's cluster is known once it has connected"
        return self._cluster

    @property
    def state(self) -> SessionState:
        assert self._state is not None, "a session's state is made once it has connected"
        return self._state

    async def init(self, connection: Connection) -> None:
        self.username = self.variables.get("external_user") or "root"
        cluster = cluster_of(self.clusters, self.username)
        if cluster is None:  # removed since the handshake
            raise MysqlError(f"Unknown cluster for user {self.username}", 1045)
        self._cluster = cluster
        self._state = cluster.session(f"{self.username}@127.0.0.1")
        chosen, self.state.database = self.database, None  # the handshake's database
        if chosen:
            await self.use(chosen)
        session = self

        def ok(**kwargs: Any) -> bytes:  # the OK packet with the statement's affected rows
            kwargs.setdefault("affected_rows", session.affected)
            return Connection.ok(connection, **kwargs)

        connection.ok = ok

    async def close(self) -> None:
        try:
            if self._state is not None:
                await self._call(self.cluster.end, self.state)
        finally:
            self.thread.shutdown(wait=False)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn` on the connection's own thread, as MySQL gives each connection one: a
        session waiting for another's lock never takes a thread that one needs to commit."""
        return await asyncio.get_running_loop().run_in_executor(self.thread, fn, *args)

    async def reset(self) -> None:
        await self._call(self.cluster.end, self.state)
        self._state = self.cluster.session(self.state.user)

    async def use(self, database: str) -> None:
        quoted = database.replace("`", "``")
        await self.handle_query(f"USE `{quoted}`", {})

    async def handle_query(self, sql: str, attrs: dict[str, str]) -> Result:
        result: Result = None
        self.affected = 0
        try:
            statements = list(split_script(sql.splitlines(keepends=True), "mysql"))
        except SQLError as e:  # unreadable (an unterminated quote): nothing runs
            raise MysqlError(e.message, e.code or 1064) from None
        for stmt in statements:
            shown = self._show(stmt.text)
            if shown is not None:
                result = shown
                continue
            outcome, _ = await self._call(self.cluster.run, self.state, stmt)
            result = self._result(outcome)
        self.database = self.state.database
        return result

    def _result(self, outcome: Outcome) -> Result:
        if outcome.error is not None:
            raise _mysql_error(outcome.error)
        self.affected = outcome.affected_rows
        if outcome.columns is not None:
            rows = [list(row) for row in outcome.rows or []]
            types = outcome.types or [None] * len(outcome.columns)
            columns = [
                _column(name, tp, [r[i] for r in rows])
                for i, (name, tp) in enumerate(zip(outcome.columns, types, strict=True))
            ]
            return rows, columns
        return None

    def _show(self, text: str) -> Result:
        """SHOW statements a client sends: databases and tables from the catalog, the rest
        an empty answer."""
        words = text.split()
        if not words or words[0].upper() != "SHOW":
            return None
        what = " ".join(w.upper() for w in words[1:3])
        catalog = self.cluster.engine.catalog
        with self.cluster.lock:
            if what.startswith(("DATABASES", "SCHEMAS")):
                return [[s.name] for s in catalog.schemas.values()], ["Database"]
            if what.startswith(("TABLES", "FULL TABLES")):
                schema = catalog.schemas.get((self.state.database or "").lower())
                names = sorted(schema.tables) if schema else []
                return [[n] for n in names], [f"Tables_in_{self.state.database}"]
        return [], ["Variable_name", "Value"] if "VARIABLES" in what else ["Value"]


# -- result columns: the type a client reads each column as --------------------------------------

# what a value answers as when no column says (an expression's result)
_BY_VALUE: list[tuple[type, ColumnType]] = [
    (bool, ColumnType.TINY),
    (int, ColumnType.LONGLONG),
    (float, ColumnType.DOUBLE),
    (Decimal, ColumnType.NEWDECIMAL),
    (bytes, ColumnType.BLOB),
]
_BINARY_CHARSET = frozenset(
    {ColumnType.BLOB, ColumnType.TINY_BLOB, ColumnType.MEDIUM_BLOB, ColumnType.LONG_BLOB}
)
# the engine answers these as text, as TiDB's text protocol sends them; the binary protocol
# (prepared statements) wants them as Python's values
_PARSE: dict[ColumnType, Callable[[str], Any]] = {
    ColumnType.DATE: dt.date.fromisoformat,
    ColumnType.DATETIME: dt.datetime.fromisoformat,
    ColumnType.TIMESTAMP: dt.datetime.fromisoformat,
    ColumnType.TIME: lambda text: _duration(text),
}


def _duration(text: str) -> dt.timedelta:
    sign = -1 if text.startswith("-") else 1
    hours, minutes, seconds = text.lstrip("-").split(":")
    return sign * dt.timedelta(hours=int(hours), minutes=int(minutes), seconds=float(seconds))


def _column(name: str, tp: MySQLType | None, values: list[Any]) -> ResultColumn:
    if tp is None or tp == MySQLType.BIT:  # BIT: the engine answers its number
        sample = next((v for v in values if v is not None), None)
        kind = next((k for t, k in _BY_VALUE if isinstance(sample, t)), ColumnType.VAR_STRING)
    else:
        kind = ColumnType(int(tp))
    binary_string = kind in _BINARY_CHARSET or any(isinstance(v, bytes) for v in values)
    charset = CharacterSet.binary if binary_string else CharacterSet.utf8mb4
    binary = None
    parse = _PARSE.get(kind)
    if parse is not None:
        default = ResultColumn(name, kind).binary_encoder

        def binary(col: ResultColumn, value: Any) -> bytes:
            try:
                return default(col, parse(value) if isinstance(value, str) else value)
            except ValueError:  # a zero date: no Python value, the empty binary form
                return b"\x00"

    return ResultColumn(name, kind, charset, text_encoder=_text, binary_encoder=binary)


def _text(col: ResultColumn, value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def _mysql_error(error: SQLError) -> MysqlError:
    return MysqlError(error.message, error.code or 1105)


class _AnsweredErrors(logging.Filter):
    """mimic logs every error it answers a client with: the client's errors, not the
    service's (a failure of ours still logs, with its traceback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not isinstance(record.msg, MysqlError)


logging.getLogger("mysql_mimic.connection").addFilter(_AnsweredErrors())

# mimic knows the SQLSTATE of its own few codes; clients read ours too (1062 -> 23000)
mimic_errors.SQLSTATES.update({code: state.encode() for code, state in SQLSTATE.items()})


async def start(settings: Settings, clusters: Registry) -> MysqlServer | None:
    """The MySQL port (TICDC_SIM_MYSQL_PORT; 0: none)."""
    if not settings.mysql_port:
        return None
    server = MysqlServer(
        session_factory=lambda: SimSession(clusters),
        identity_provider=_Users(clusters, settings.mysql_password),
    )
    await server.start_server(host=settings.host, port=settings.mysql_port)
    return server
