"""Row locks and row versions of the upstream's open transactions: TiDB's pessimistic
transactions as an application sees them, with InnoDB's REPEATABLE READ as the oracle.

A transaction locks every row it writes and every row a locking read (`SELECT ... FOR
UPDATE`, `LOCK IN SHARE MODE`, the rows UPDATE and DELETE match, the row an INSERT finds
under its key) returns: exclusive or shared, held to its commit or rollback. A statement
that needs a row another transaction holds is undone and waits (`Blocked`); the waits form
a graph, and a wait that closes a cycle is a deadlock, whose victim `victim` chooses.

Readers never lock. A plain SELECT reads a snapshot: the rows as committed when the
transaction first read (REPEATABLE READ) or when the statement began (READ COMMITTED, and
every autocommit statement). Rows are written in place, so the snapshot is what the tables
hold now with two kinds of rows put back: the first image of every row another open
transaction wrote (its uncommitted write is invisible), and the image before every commit
newer than the snapshot. `Versions` keeps those images only while a snapshot older than
them is open, so with no open snapshot it keeps nothing (InnoDB's purge).

Where this differs from InnoDB, as TiDB does: locks are on rows (and on the keys of rows
that do not exist), never on the gaps between them, so an insert next to a locked row or
into a scanned range does not wait; a statement locks the rows it matches, not every row
its scan visits. Mirrors TiDB's `pkg/sessiontxn/isolation` (the read ts of RR and RC) and
TiKV's lock and waiter manager (`src/storage/lock_manager`), with the victim rule of
MariaDB's `lock0lock.cc` (`Deadlock::report`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import Any, NamedTuple

Row = tuple[Any, ...]
Key = tuple[Hashable, Any]  # (table, handle)

LOCK_WAIT_TIMEOUT = (1205, "Lock wait timeout exceeded; try restarting transaction")
DEADLOCK = (1213, "Deadlock found when trying to get lock; try restarting transaction")


class IndexKey(NamedTuple):
    """A unique index's entry as a lock key, beside the rows' handles: a read through the
    index locks the entry, then the row (InnoDB's secondary index record, TiDB's index key)."""

    name: str
    entry: tuple[Any, ...]


class Blocked(Exception):
    """The statement needs a row `holder` has locked: it is undone and runs again once
    `holder` ends (the caller waits; it is no error of the statement's)."""

    def __init__(self, holder: Hashable, key: Key | None) -> None:
        super().__init__(f"waiting for a lock on {key!r}" if key else "waiting for a table")
        self.holder = holder
        self.key = key


class LockTable:
    """Who holds which row, and who waits for whom. An owner is any hashable: the
    upstream's open transactions."""

    def __init__(self) -> None:
        self._holders: dict[Key, dict[Hashable, bool]] = {}  # key -> owner -> exclusive
        self._held: dict[Hashable, set[Key]] = {}
        self._waits: dict[Hashable, Hashable] = {}  # waiter -> the holder it waits for
        # who waits for each key, first come first served (InnoDB's lock queue): a key
        # freed goes to its first waiter, and a new request queues behind the waiters
        self._queues: dict[Key, list[Hashable]] = {}
        self._queued: dict[Hashable, Key] = {}

    def __len__(self) -> int:
        return len(self._holders)

    def blocker(self, owner: Hashable, key: Key, exclusive: bool) -> Hashable | None:
        """Another owner whose lock on `key` conflicts with this request, or None."""
        holders = self._holders.get(key)
        if not holders:
            return None
        for other, other_exclusive in holders.items():
            if other is not owner and (exclusive or other_exclusive):
                return other
        return None

    def ahead(self, owner: Hashable, key: Key, exclusive: bool) -> Hashable | None:
        """The first waiter queued for `key` before `owner` (which holds no such lock on
        it already), or None."""
        queue = self._queues.get(key)
        if not queue or queue[0] is owner:
            return None
        held = self._holders.get(key, {}).get(owner)
        if held is not None and (held or not exclusive):
            return None
        return queue[0]

    def enqueue(self, waiter: Hashable, key: Key) -> None:
        """`waiter` waits for `key`: at the end of its queue, or where it was already."""
        if self._queued.get(waiter) == key:
            return
        self.dequeue(waiter)
        self._queues.setdefault(key, []).append(waiter)
        self._queued[waiter] = key

    def dequeue(self, waiter: Hashable) -> None:
        key = self._queued.pop(waiter, None)
        if key is not None:
            queue = self._queues[key]
            queue.remove(waiter)
            if not queue:
                del self._queues[key]

    def take(self, owner: Hashable, key: Key, exclusive: bool) -> None:
        """Lock `key` for `owner` (a shared lock its sole holder asks exclusive is upgraded);
        raises `Blocked` with the holder in the way."""
        holders = self._holders.get(key)
        if holders is None:
            self._holders[key] = {owner: exclusive}
        else:
            other = self.blocker(owner, key, exclusive)
            if other is not None:
                raise Blocked(other, key)
            holders[owner] = exclusive or holders.get(owner, False)
        self._held.setdefault(owner, set()).add(key)

    def holds(self, owner: Hashable) -> int:
        return len(self._held.get(owner, ()))

    def structs(self, owner: Hashable) -> set[tuple[Hashable, str, bool]]:
        """The lock structures InnoDB would keep for `owner`'s row locks: one per table,
        index and mode (the rows of a small table share a page's bitmap)."""
        found = set()
        for table, handle in self._held.get(owner, ()):
            index = handle.name if isinstance(handle, IndexKey) else "PRIMARY"
            found.add((table, index, self._holders[table, handle][owner]))
        return found

    def keys_of(self, owner: Hashable) -> Iterable[Key]:
        return self._held.get(owner, ())

    def release(self, owner: Hashable) -> None:
        """Every lock of `owner` goes (its commit or rollback), and it waits for no one."""
        for key in self._held.pop(owner, ()):
            holders = self._holders[key]
            del holders[owner]
            if not holders:
                del self._holders[key]
        self._waits.pop(owner, None)
        self.dequeue(owner)

    def wait(self, waiter: Hashable, holder: Hashable) -> list[Hashable] | None:
        """`waiter` waits for `holder`; the cycle this wait closes (waiter first, then
        whom each waits for), or None. Each owner waits for at most one other."""
        self._waits[waiter] = holder
        cycle = [waiter]
        at: Hashable | None = holder
        while at is not None and at is not waiter:
            if at in cycle:  # a cycle further on, not through this waiter
                return None
            cycle.append(at)
            at = self._waits.get(at)
        return cycle if at is waiter else None

    def waiting_for(self, waiter: Hashable) -> Hashable | None:
        return self._waits.get(waiter)

    def stop_waiting(self, waiter: Hashable) -> None:
        self._waits.pop(waiter, None)


def victim(cycle: list[Any], weight: dict[Any, int]) -> Any:
    """The transaction a deadlock rolls back: the lightest (fewest rows written and locked),
    the one whose wait closed the cycle on a tie, as MariaDB's `Deadlock::report` chooses
    (TiDB's detector always picks the one that closed it)."""
    return min(cycle, key=lambda owner: (weight[owner], owner is not cycle[0]))


class Versions:
    """Images of rows before recent commits, for the snapshots still open: per table and
    handle, (commit ts, the row before that commit) oldest first."""

    def __init__(self) -> None:
        self._chains: dict[Hashable, dict[Any, list[tuple[int, Row | None]]]] = {}

    def __bool__(self) -> bool:
        return bool(self._chains)

    def keep(self, commit_ts: int, firsts: dict[Any, dict[Any, Row | None]]) -> None:
        """A commit's first images (per table, per handle), while a snapshot needs them."""
        for table, images in firsts.items():
            chains = self._chains.setdefault(table, {})
            for handle, before in images.items():
                chains.setdefault(handle, []).append((commit_ts, before))

    def purge(self, oldest_read_ts: int | None) -> None:
        """Drop what no snapshot at or after `oldest_read_ts` reads (None: no snapshot)."""
        if oldest_read_ts is None:
            self._chains.clear()
            return
        for table in list(self._chains):
            chains = self._chains[table]
            for handle in list(chains):
                kept = [v for v in chains[handle] if v[0] > oldest_read_ts]
                if kept:
                    chains[handle] = kept
                else:
                    del chains[handle]
            if not chains:
                del self._chains[table]

    def before(self, read_ts: int) -> Iterator[tuple[Hashable, Any, Row | None]]:
        """(table, handle, image) of every row a commit after `read_ts` changed: the image
        before the oldest such commit, which is the row the snapshot at `read_ts` holds."""
        for table, chains in self._chains.items():
            for handle, versions in chains.items():
                for commit_ts, image in versions:
                    if commit_ts > read_ts:
                        yield table, handle, image
                        break
