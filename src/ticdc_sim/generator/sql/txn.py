"""A transaction and its undo log: what the engine writes in place is undone from here (a
statement's writes on its error, a transaction's on ROLLBACK), and committed from its first
images (TiKV's fold of a transaction's mutations into one change per key).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ticdc_sim.errors import Location
from ticdc_sim.generator.sql.store import Row, TableData


class Write(NamedTuple):
    """Undo record of one key's write."""

    table: TableData
    handle: Any
    previous: Row | None
    first_touch: bool  # the transaction's first write of this key


class BulkInsert(NamedTuple):
    """Undo record of `Upstream.write_new`: rows put under keys that held none."""

    table: TableData
    handles: list[Any]
    touched: list[Any]  # the handles this transaction had not written before


@dataclass(eq=False)  # one object per transaction: locks and waits are keyed by it
class Transaction:
    start_ts: int
    location: Location | None = None  # the statement that began it
    isolation: str = "REPEATABLE-READ"
    implicit: bool = False  # an autocommit statement's own, committed at its end
    # the snapshot its plain SELECTs read (REPEATABLE READ: taken at its first read)
    read_ts: int | None = None
    killed: bool = False  # chosen as a deadlock's victim while it waited
    # InnoDB's table intention locks, IS then IX, in the order taken (a deadlock's weight)
    intents: dict[TableData, tuple[str, ...]] = field(default_factory=dict)
    # per table, each written key's row as it was before the transaction (None: no row)
    first: dict[TableData, dict[Any, Row | None]] = field(default_factory=dict)
    undo: list[Write | BulkInsert] = field(default_factory=list)
    savepoints: dict[str, int] = field(default_factory=dict)
    # rows its UPDATEs and DELETEs matched while it was the only transaction open, to be
    # locked (exclusive) once another begins: until then no one could ask for them
    deferred: list[tuple[TableData, list[tuple[Any, Row]]]] = field(default_factory=list)
