"""TiDB's front door: the MySQL protocol (mysql-mimic), one connection one session.

mysql-mimic's `Session` answers BEGIN, COMMIT, SET, USE and SHOW with its own middlewares
and never tells the caller (research/service-notes.md); a transaction would silently not be
one. So connections get a `BaseSession` of ours: every statement goes to the cluster's
engine through the connection's `SessionState` (its transaction, variables and current
database), and what commits reaches the changefeeds as it commits. The OK packet carries the
statement's affected rows (mimic's own OK has none; `init` wraps it per connection).

What a driver sends on connect and the engine does not model (SHOW of variables, warnings,
collations ...) answers with an empty result set or from the catalog (SHOW DATABASES,
SHOW TABLES), so pymysql, the mysql and mariadb clients and ORMs connect.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from mysql_mimic import MysqlServer
from mysql_mimic import errors as mimic_errors
from mysql_mimic.auth import IdentityProvider, NativePasswordAuthPlugin, User
from mysql_mimic.connection import Connection
from mysql_mimic.errors import MysqlError
from mysql_mimic.session import BaseSession
from mysql_mimic.variables import GlobalVariables, SessionVariables

from ticdc_sim.errors import SQLSTATE, SQLError
from ticdc_sim.generator.sql.engine import SERVER_VARIABLES
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.service.runtime import Cluster, Outcome, SessionState
from ticdc_sim.service.settings import Settings

Result = tuple[Sequence[Sequence[Any]], Sequence[str]] | None


class _Password(IdentityProvider):
    """Any user name, one password (TICDC_SIM_MYSQL_PASSWORD)."""

    def __init__(self, password: str) -> None:
        self.auth_string = NativePasswordAuthPlugin.create_auth_string(password)

    def get_plugins(self) -> list[NativePasswordAuthPlugin]:
        return [NativePasswordAuthPlugin()]

    async def get_user(self, username: str) -> User | None:
        return User(
            name=username,
            auth_string=self.auth_string,
            auth_plugin=NativePasswordAuthPlugin.name,
        )


class SimSession(BaseSession):
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.variables = SessionVariables(GlobalVariables())
        self.variables.set("version", SERVER_VARIABLES["version"], force=True)  # handshake
        self.username: str | None = None
        self.database: str | None = None
        self.state: SessionState = cluster.session()
        self.affected = 0

    async def init(self, connection: Connection) -> None:
        self.username = self.variables.get("external_user") or "root"
        self.state.user = f"{self.username}@127.0.0.1"
        self.state.values.clear()  # the user is part of a new session's defaults
        chosen, self.state.database = self.database, None  # the handshake's database
        if chosen:
            await self.use(chosen)
        session = self

        def ok(**kwargs: Any) -> bytes:  # the OK packet with the statement's affected rows
            kwargs.setdefault("affected_rows", session.affected)
            return Connection.ok(connection, **kwargs)

        connection.ok = ok

    async def close(self) -> None:
        await asyncio.to_thread(self.cluster.end, self.state)

    async def reset(self) -> None:
        await asyncio.to_thread(self.cluster.end, self.state)
        self.state = self.cluster.session(self.state.user)

    async def use(self, database: str) -> None:
        quoted = database.replace("`", "``")
        await self.handle_query(f"USE `{quoted}`", {})

    async def handle_query(self, sql: str, attrs: dict[str, str]) -> Result:
        result: Result = None
        self.affected = 0
        for stmt in split_script(sql.splitlines(keepends=True), "mysql"):
            shown = self._show(stmt.text)
            if shown is not None:
                result = shown
                continue
            outcome, _ = await asyncio.to_thread(self.cluster.run, self.state, stmt)
            result = self._result(outcome)
        self.database = self.state.database
        return result

    def _result(self, outcome: Outcome) -> Result:
        if outcome.error is not None:
            raise _mysql_error(outcome.error)
        self.affected = outcome.affected_rows
        if outcome.columns is not None:
            return [list(map(_cell, row)) for row in outcome.rows or []], outcome.columns
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


def _cell(value: Any) -> Any:
    return value


def _mysql_error(error: SQLError) -> MysqlError:
    return MysqlError(error.message, error.code or 1105)


# mimic knows the SQLSTATE of its own few codes; clients read ours too (1062 -> 23000)
mimic_errors.SQLSTATES.update({code: state.encode() for code, state in SQLSTATE.items()})


async def start(settings: Settings, cluster_of: Callable[[], Cluster]) -> MysqlServer | None:
    """The MySQL port, serving the `default` cluster (TICDC_SIM_MYSQL_PORT; 0: none)."""
    if not settings.mysql_port:
        return None
    provider = _Password(settings.mysql_password) if settings.mysql_password else None
    server = MysqlServer(
        session_factory=lambda: SimSession(cluster_of()), identity_provider=provider
    )
    await server.start_server(host=settings.host, port=settings.mysql_port)
    return server
