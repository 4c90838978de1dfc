"""One client's session, apart from the cluster it runs on: its settings (sql_mode, time
zone, character sets, isolation level, autocommit, the variables it set), its current
database, its open transaction, its user variables, LAST_INSERT_ID() and its warnings.

The cluster's state (catalog, rows, TSO clock, the open transactions' locks and versions) is
upstream.py's; the engine (engine.py) runs each statement for the session it is given
(`Engine.session`): a service keeps one Session per MySQL connection and per HTTP request,
and hands it to the engine with each statement (cluster.py), so no setting of one session
ever reaches another. TiDB's `pkg/sessionctx/variable` (`SessionVars`) holds the same.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from ticdc_sim.errors import Warnings
from ticdc_sim.generator.sql.sysvars import CHARSET_VARIABLES
from ticdc_sim.generator.sql.txn import Transaction
from ticdc_sim.generator.sql.values import DEFAULT_SQL_MODE, SqlMode, load_zone


@dataclass(eq=False)
class Session:
    zone_name: str = "UTC"  # time_zone, as set
    zone: dt.tzinfo = dt.UTC
    database: str | None = None
    autocommit: bool = True
    txn: Transaction | None = None
    last_id: int = 0  # LAST_INSERT_ID(): the first id the last inserting statement took
    sql_mode: SqlMode = DEFAULT_SQL_MODE
    clustered_index: str = "ON"  # tidb_enable_clustered_index (DefTiDBEnableClusteredIndex)
    # character_set_client (how statements are read), _connection and _results
    charsets: dict[str, str | None] = field(
        default_factory=lambda: dict.fromkeys(CHARSET_VARIABLES, "utf8mb4")
    )
    noop_values: dict[str, Any] = field(default_factory=dict)  # KNOWN_VARIABLES it set
    warnings: Warnings = field(default_factory=Warnings)
    user_variables: dict[str, Any] = field(default_factory=dict)  # @x, by lower-case name
    found_rows: bool = False  # CLIENT_FOUND_ROWS: UPDATE counts the rows it matched
    user: str = "root@127.0.0.1"  # USER()
    connection_id: int = 1  # CONNECTION_ID()
    isolation: str = "REPEATABLE-READ"  # transaction_isolation
    next_isolation: str | None = None  # SET TRANSACTION ISOLATION LEVEL: the next one only

    @classmethod
    def of(cls, time_zone: str, database: str | None, **settings: Any) -> Session:
        """A new session as the server starts one: its time zone and default database."""
        return cls(zone_name=time_zone, zone=load_zone(time_zone), database=database, **settings)
