"""The upstream cluster, apart from any session: what TiDB's PD and TiKV hold for every
client alike.

- the catalog and the TSO clock (catalog.py; the clock is the catalog's, as DDL takes ts);
- the store: each table's rows by handle (store.py), dropped tables kept for RECOVER TABLE,
  and the sequences' next values;
- the open transactions, their row locks and the row versions their snapshots still read
  (locks.py), and their writes into the store, checked against each other's locks;
- commit: a transaction's first images folded into row events at its commit ts (commit.py),
  queued in `outbox` for the changefeeds.

The engine (engine.py) runs one session's statement at a time on it and hands it that
session's transaction; `running` names the session whose settings convert values (a table's
converters read the time zone and sql_mode of the statement running, as TiDB's do).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, cast

from ticdc_sim.errors import Location, SQLError
from ticdc_sim.generator.capture import key_order
from ticdc_sim.generator.sql.commit import emitted, row_events
from ticdc_sim.generator.sql.ddl import Catalog
from ticdc_sim.generator.sql.locks import Blocked, IndexKey, LockTable, Versions
from ticdc_sim.generator.sql.partition import route_partition
from ticdc_sim.generator.sql.session import Session
from ticdc_sim.generator.sql.store import (
    ENTRY_SIZE_LIMIT,
    Index,
    TableData,
    entry_size,
    entry_too_large,
)
from ticdc_sim.generator.sql.txn import BulkInsert, Transaction, Write
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.table import TableInfo

Event = RowChangedEvent | DDLEvent
Row = tuple[Any, ...]
Images = list[tuple[TableData, list[tuple[Any, Row | None]]]]  # rows to show, per table
# what a DDL's new columns give the rows a table holds (engine.py: defaults, conversion)
Migrate = Callable[[TableInfo, TableInfo, dict[Any, Row]], dict[Any, Row]]


class Upstream:
    """The cluster's state and the transactions on it (see the module's docstring)."""

    def __init__(self, catalog: Catalog, cdc_zone: Any, running: Callable[[], Session]):
        self.catalog = catalog
        self.cdc_zone = cdc_zone  # TiCDC's `tz`: how TIMESTAMP values leave at commit
        self.running = running
        self.tables: dict[int, TableData] = {}
        self.dropped: dict[int, TableData] = {}  # dropped tables' rows, for RECOVER TABLE
        self.sequences: dict[int, list[Any]] = {}  # sequence table id -> [next value, last]
        self.active: dict[Transaction, None] = {}  # every session's open transaction
        self.ended = 0  # transactions ended: a waiter's lock may be free
        self.locks = LockTable()
        self.versions = Versions()
        self.outbox: list[Event] = []  # committed, not yet taken by the changefeeds

    # -- transactions ------------------------------------------------------------------------

    def begin(self, location: Location | None, isolation: str) -> Transaction:
        self.catalog.clock.pause()  # simulated time moves on between transactions
        for other in self.active:
            if other.deferred:  # it is no longer alone: what it matched is locked now
                for table, matched in other.deferred:
                    self.lock_rows(other, table, matched, True)
                other.deferred.clear()
        txn = Transaction(self.catalog.clock.next(), location, isolation)
        self.active[txn] = None
        return txn

    def commit(self, txn: Transaction) -> None:
        """The transaction's changes, at a new commit ts, to `outbox`; its locks go."""
        if any(txn.first.values()):
            commit_ts = self.catalog.clock.next()
            if any(t.read_ts is not None for t in self.active if t is not txn):
                self.versions.keep(commit_ts, txn.first)  # an open snapshot reads before it
            self.outbox.extend(row_events(txn, commit_ts, self.cdc_zone))
        self.end(txn)

    def rollback(self, txn: Transaction) -> None:
        rollback_to(txn, 0)
        self.end(txn)

    def end(self, txn: Transaction) -> None:
        """A transaction ends: its locks go, and the versions no snapshot reads."""
        self.active.pop(txn, None)
        self.locks.release(txn)
        self.ended += 1
        if self.versions:
            snapshots = [t.read_ts for t in self.active if t.read_ts is not None]
            self.versions.purge(min(snapshots, default=None))

    def busy(self, besides: Transaction | None = None) -> Transaction | None:
        """An open transaction (other than `besides`) a DDL waits for: one that read, wrote
        or locked (MySQL's metadata locks), its deferred locks (`lock_rows`) included. Any
        wait is for one of these: one that only began holds nothing. Over a copy of the
        open transactions: `Cluster.may_run_at_once` asks it without the cluster's lock."""
        held = self.locks.holds
        return next(
            (
                t
                for t in list(self.active)
                if t is not besides and (t.first or t.read_ts or t.deferred or held(t))
            ),
            None,
        )

    # -- writes: in place, undone from the transaction's log (txn.py) ----------------------

    def write(self, txn: Transaction, table: TableData, handle: Any, row: Row | None) -> None:
        """Put or delete one row key inside `txn`."""
        if row is not None and table.large_rows:
            _check_entry(table, handle, row)
        if table not in txn.intents:
            intend(txn, table, True)
        if len(self.active) > 1:
            self._check_write(txn, table, handle, row)
        firsts = txn.first.get(table)
        if firsts is None:
            firsts = txn.first[table] = {}
        previous = table.rows.get(handle)
        first_touch = handle not in firsts
        if first_touch:
            firsts[handle] = previous
        txn.undo.append(Write(table, handle, previous, first_touch))
        table.put(handle, row)

    def write_new(
        self, txn: Transaction, table: TableData, handles: list[Any], rows: list[Row]
    ) -> None:
        """Insert rows under distinct handles that hold no row (checked by the caller)."""
        if table.large_rows:
            for handle, row in zip(handles, rows, strict=True):
                _check_entry(table, handle, row)
        if table not in txn.intents:
            intend(txn, table, True)
        if len(self.active) > 1:
            for handle, row in zip(handles, rows, strict=True):
                self._check_write(txn, table, handle, row)
        firsts = txn.first.get(table)
        if firsts is None:
            firsts = txn.first[table] = {}
        touched = [h for h in handles if h not in firsts] if firsts else handles
        firsts.update(dict.fromkeys(touched))
        txn.undo.append(BulkInsert(table, handles, touched))
        table.put_new(handles, rows)

    # -- locks (locks.py): only where another transaction is open ----------------------------

    def holder(
        self, txn: Transaction | None, table: TableData, handle: Any, exclusive: bool = True
    ) -> Any:
        """Another open transaction than `txn` that wrote or locked the row under `handle`,
        or None."""
        if txn is not None and handle in txn.first.get(table, ()):
            return None  # its own write: it holds the row
        for other in self.active:
            if other is not txn:
                firsts = other.first.get(table)
                if firsts is not None and handle in firsts:
                    return other
        key = (table, handle)
        return self.locks.blocker(txn, key, exclusive) or self.locks.ahead(txn, key, exclusive)

    def wait_for_holders(
        self, txn: Transaction | None, table: TableData, handles: list[Any]
    ) -> None:
        """A duplicate of a row another transaction holds is known once it ends: InnoDB's
        duplicate check waits for its lock (the row may be rolled back)."""
        for handle in handles:
            holder = self.holder(txn, table, handle, exclusive=False)
            if holder is not None:
                raise Blocked(holder, (table, handle))

    def _check_write(
        self, txn: Transaction, table: TableData, handle: Any, row: Row | None
    ) -> None:
        """A write waits for the transaction holding its row, or holding (as a row it
        changed) a unique key the new row takes."""
        holder = self.holder(txn, table, handle)
        if holder is not None:
            raise Blocked(holder, (table, handle))
        if row is None or not table.uniques:
            return
        keys = [(unique, unique.key(row)) for unique in table.uniques]
        for other in self.active:
            firsts = other.first.get(table) if other is not txn else None
            for h, before in (firsts or {}).items():
                if before is not None and any(
                    k is not None and u.key(before) == k for u, k in keys
                ):
                    raise Blocked(other, (table, h))

    def check_images(
        self, txn: Transaction | None, table: TableData, hits: Callable[[Row], bool]
    ) -> None:
        """A locking read waits for another transaction that changed a row it reads: one
        the statement's condition holds for before or after that change."""
        if len(self.active) < 2:
            return
        rows = table.rows
        for other in self.active:
            if other is txn:
                continue
            for h, before in (other.first.get(table) or {}).items():
                after = rows.get(h)
                if (before is not None and hits(before)) or (after is not None and hits(after)):
                    raise Blocked(other, (table, h))

    def lock_entries(
        self, txn: Transaction, table: TableData, index: Index, rows: list[Row], exclusive: bool
    ) -> None:
        """The entries of `rows` in the unique index a locking read found them through."""
        if not (txn.implicit and len(self.active) < 2):
            for row in rows:
                self.lock(txn, table, IndexKey(index.info.name, index.entry(row)), exclusive)

    def lock_rows(
        self,
        txn: Transaction,
        table: TableData,
        matched: list[tuple[Any, Row]],
        exclusive: bool,
        writes: bool = False,
    ) -> None:
        """The rows a locking read or an UPDATE/DELETE (`writes`) matched, locked to the end
        of the transaction; none for an autocommit statement alone on the cluster. The rows
        a statement of the only open transaction writes are locked when another transaction
        begins (`begin`): every row of every range otherwise, which no one could ask for."""
        if len(self.active) < 2:
            if txn.implicit:
                return
            if writes:
                txn.deferred.append((table, matched))
                return
        for handle, _ in matched:
            self.lock(txn, table, handle, exclusive)

    def lock(self, txn: Transaction, table: TableData, handle: Any, exclusive: bool) -> None:
        intend(txn, table, exclusive)
        if len(self.active) > 1:
            holder = self.holder(txn, table, handle, exclusive)
            if holder is not None:
                raise Blocked(holder, (table, handle))
        self.locks.take(txn, (table, handle), exclusive)

    def weight(self, txn: Transaction) -> int:
        """What a deadlock's victim loses, as MariaDB weighs it (`lock0lock.cc`): its undo
        records and its lock structures (a table's intention lock, one per index and mode).
        Checked against MariaDB 10.11: the lighter dies, the one closing the cycle on a tie."""
        undo = sum(len(e.handles) if isinstance(e, BulkInsert) else 1 for e in txn.undo)
        intents = sum(len(modes) for modes in txn.intents.values())
        return undo + len(self.locks.structs(txn)) + intents

    # -- what a read sees --------------------------------------------------------------------

    def snapshot(self, txn: Transaction | None) -> Images:
        """The rows a plain read of `txn` (None: an autocommit read) must see other than the
        tables hold them: other open transactions' writes undone, and what committed after
        its snapshot (REPEATABLE READ; READ COMMITTED and autocommit reads see every
        commit)."""
        read_ts = None
        if txn is not None and txn.isolation != "READ-COMMITTED":
            if txn.read_ts is None:
                txn.read_ts = self.catalog.clock.last
            read_ts = txn.read_ts
        images: dict[tuple[TableData, Any], Row | None] = {}
        for other in self.active:
            if other is not txn:
                for table, firsts in other.first.items():
                    for handle, before in firsts.items():
                        images[table, handle] = before
        if read_ts is not None and self.versions:
            for kept, handle, before in self.versions.before(read_ts):
                images[cast(TableData, kept), handle] = before
        if txn is not None and images:
            for table, firsts in txn.first.items():
                for handle in firsts:
                    images.pop((table, handle), None)
        by_table: dict[TableData, list[tuple[Any, Row | None]]] = {}
        for (table, handle), image in images.items():
            by_table.setdefault(table, []).append((handle, image))
        return list(by_table.items())

    def committed(self) -> Images:
        """The rows as committed: every open transaction's writes undone."""
        images: dict[TableData, dict[Any, Row | None]] = {}
        for txn in self.active:
            for table, firsts in txn.first.items():
                images.setdefault(table, {}).update(firsts)
        return [(table, list(firsts.items())) for table, firsts in images.items()]

    def table_states(self) -> Iterator[tuple[TableInfo, list[Row]]]:
        """Every table's rows now, as TiCDC's mounter hands them on, in key order."""
        for data in self.tables.values():
            if not (data.info.is_sequence or data.info.is_view):
                yield data.info, self._rows_of(data)

    def table_state(self, schema: str, name: str) -> tuple[TableInfo, list[Row]] | None:
        """One table's rows now, as `table_states`; None if there is no such table."""
        info = self.catalog.find_table(schema, name)
        data = None if info is None else self.tables.get(info.id)
        if data is None or data.info.is_sequence or data.info.is_view:
            return None
        return data.info, self._rows_of(data)

    def _rows_of(self, data: TableData) -> list[Row]:
        order = sorted(data.rows, key=None if data.int_handle else key_order)
        return [emitted(data, data.rows[h], self.cdc_zone) or () for h in order]

    # -- the store and DDL -------------------------------------------------------------------

    def table_data(self, info: TableInfo) -> TableData:
        """The rows of a table of the catalog (made empty on first use)."""
        data = self.tables.get(info.id)
        if data is None:
            data = self.tables[info.id] = self._new_table_data(info)
        return data

    def _new_table_data(self, info: TableInfo) -> TableData:
        # values are converted in the time zone and sql_mode of the session running the
        # statement, read at each use
        running = self.running
        return TableData(info, lambda: running().zone, lambda: running().sql_mode)

    def sync_table(self, event: DDLEvent, migrate: Migrate) -> None:
        """The store follows a DDL: tables made, dropped, truncated, recovered, reshaped
        (`migrate` fills and converts their rows) and partitions exchanged."""
        before, after = event.pre_table_info, event.table_info
        if _exchanges_partition(event) and before is not None and after is not None:
            self._exchange_partition(before, after)
            return
        if before is not None and (after is None or after.id != before.id):
            data = self.tables.pop(before.id, None)
            if data is not None and after is not None and not _drops_rows(event):
                self.tables[after.id] = data
            elif data is not None and event.action in (
                ActionType.DROP_TABLE,
                ActionType.TRUNCATE_TABLE,
            ):
                self.dropped[before.id] = data  # for RECOVER and FLASHBACK TABLE
        recovered = event.action == ActionType.RECOVER_TABLE and after is not None
        if recovered and after is not None and after.id in self.dropped:
            self.tables[after.id] = self.dropped.pop(after.id)
        if after is None or after.is_view:
            return
        data = self.tables.get(after.id)
        if data is None:
            self.tables[after.id] = self._new_table_data(after)
            return
        if before is not None and _drops_rows(event):
            data.rows.clear()
        if before is not None and _drops_partitions(event):
            # rows of truncated (re-numbered) or dropped partitions are gone
            kept = set(after.physical_ids)
            for handle, row in list(data.rows.items()):
                if route_partition(data, row) not in kept:
                    data.put(handle, None)
        if before is not None and data.info.columns != after.columns:
            data.rows = migrate(data.info, after, data.rows)
        data.bind(after)

    def sequence(self, op: str, info: TableInfo, target: int) -> Any:
        """NEXTVAL / LASTVAL / SETVAL (to `target`) of a sequence, as one TiDB server hands
        values out."""
        seq = info.sequence
        assert seq is not None
        state = self.sequences.setdefault(info.id, [seq.start, None])  # [next, last]
        if op == "LASTVAL":
            return state[1]
        if op == "SETVAL":
            ahead = target >= state[0] if seq.increment > 0 else target <= state[0]
            if not ahead:
                return None
            state[0] = target + seq.increment
            return target
        current = state[0]
        if not seq.min_value <= current <= seq.max_value:
            if not seq.cycle:
                raise SQLError(f"Sequence '{info.schema}.{info.name}' has run out", code=4135)
            current = seq.min_value if seq.increment > 0 else seq.max_value
        state[0], state[1] = current + seq.increment, current
        return current

    def _exchange_partition(self, before: TableInfo, after: TableInfo) -> None:
        """EXCHANGE PARTITION: the partition's rows and the other table's rows swap tables.

        TiDB swaps the two physical ids; the rows keep their handles.
        """
        (lost,) = set(before.physical_ids) - set(after.physical_ids)  # now the other table's
        (gained,) = set(after.physical_ids) - set(before.physical_ids)  # the other's old id
        data = self.tables[after.id]
        leaving = [(h, r) for h, r in data.rows.items() if route_partition(data, r) == lost]
        for handle, _ in leaving:
            data.put(handle, None)
        other = self.tables.pop(gained, None)
        arriving = list(other.rows.items()) if other is not None else []
        data.bind(after)
        for handle, row in arriving:
            data.put(handle, row)
        other_info = next(
            t
            for schema in self.catalog.schemas.values()
            for t in schema.tables.values()
            if t.id == lost
        )
        swapped = self._new_table_data(other_info)
        swapped.next_id = other.next_id if other is not None else swapped.next_id
        for handle, row in leaving:
            swapped.put(handle, row)
        self.tables[other_info.id] = swapped


def rollback_to(txn: Transaction, mark: int) -> None:
    """The transaction's writes after the first `mark` of its undo log, undone."""
    undo, first = txn.undo, txn.first
    while len(undo) > mark:
        entry = undo.pop()
        if isinstance(entry, BulkInsert):
            for handle in entry.handles:
                entry.table.put(handle, None)
            firsts = first[entry.table]
            for handle in entry.touched:
                del firsts[handle]
            continue
        table, handle, previous, first_touch = entry
        table.put(handle, previous)
        if first_touch:
            del first[table][handle]


def intend(txn: Transaction, table: TableData, exclusive: bool) -> None:
    """The table's intention lock a row lock needs: IX covers IS, IS not IX."""
    held = txn.intents.get(table, ())
    if "IX" not in held and (exclusive or "IS" not in held):
        txn.intents[table] = (*held, "IX" if exclusive else "IS")


@contextlib.contextmanager
def showing(images: Images) -> Iterator[None]:
    """The tables with `images` put under their keys while the caller (alone on them) reads
    them, and the rows they hold now put back after."""
    now = [(table, [(h, table.rows.get(h)) for h, _ in rows]) for table, rows in images]
    put_rows(images)
    try:
        yield
    finally:
        put_rows(now)


def put_rows(images: Images) -> None:
    """Rows put under their keys: every key emptied first, so no unique key is held twice
    midway (each set of images is whole: a table's state before or after)."""
    for table, rows in images:
        for handle, _ in rows:
            table.put(handle, None)
    for table, rows in images:
        for handle, row in rows:
            if row is not None:
                table.put(handle, row)


def _check_entry(table: TableData, handle: Any, row: Row) -> None:
    """TiDB's txn-entry-size-limit: no key and value over 6 MiB (error 8025)."""
    size = entry_size(table, handle, row)
    if size > ENTRY_SIZE_LIMIT:
        raise entry_too_large(size)


def _drops_rows(event: DDLEvent) -> bool:
    return event.action in (ActionType.TRUNCATE_TABLE, ActionType.DROP_TABLE)


def _exchanges_partition(event: DDLEvent) -> bool:
    return event.action == ActionType.EXCHANGE_TABLE_PARTITION


def _drops_partitions(event: DDLEvent) -> bool:
    return event.action in (ActionType.TRUNCATE_TABLE_PARTITION, ActionType.DROP_TABLE_PARTITION)
