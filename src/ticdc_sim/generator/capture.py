"""What TiKV records of a transaction, and what a changefeed captures of it.

The upstream (the SQL engine, the workload generator, a user's row changes in
`spark/changes.py`) emits each transaction's net row changes as TiKV records them: one
change per row key, with its full before and after image, unsplit, in the order TiCDC's
sorter reads them. `RowKeys`, `add_change` and `in_order` build that stream:

- Rows leave by physical table, then by each row key's final mutation (delete < update <
  insert), then by row key (tiflow `cdc/processor/sourcemanager/sorter/pebble/encoding/
  key.go`). The row key is the integer handle, the clustered primary key's datums, or
  `_tidb_rowid` for a table with neither.
- A changed handle is two row keys to TiKV: a delete of the old one and a put of the new.

Each changefeed applies its own capture settings to that stream in its pipeline
(`Capture`), so one cluster feeds changefeeds of different settings, as TiCDC allows:

- An update that changes a handle-key or unique-key column is split into a delete and an
  insert, and the table's events are re-sorted by kind with Go's unstable sort (tiflow
  `cdc/model/sink.go` `trySplitAndSortUpdateEvent`), unless the changefeed has
  `output-raw-change-event`.
- Without old values (`enable-old-value = false`) an update is a Put without its old row:
  insert-shaped, and sorted among the inserts by row key; a delete carries what the row
  key holds, the handle's columns.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NamedTuple

from ticdc_sim.generator.sql.store import collation_key
from ticdc_sim.generator.sql.values import as_text
from ticdc_sim.golang.sort import go_sort
from ticdc_sim.model.events import Event, RowChangedEvent, Value
from ticdc_sim.model.mysql import ColumnFlag
from ticdc_sim.model.table import TableInfo

Image = tuple[Value, ...] | None
DELETE, UPDATE, INSERT = 0, 1, 2  # the sorter's order of a row key's final mutation


@dataclass(frozen=True)
class RowKeys:
    """A table's keys as TiKV and TiCDC see them."""

    info: TableInfo
    handle: str  # "int" (the integer primary key), "common" (a clustered primary key of
    # other types) or "rowid" (`_tidb_rowid`)
    key_offsets: tuple[int, ...]  # the primary key's columns
    handle_offsets: tuple[int, ...]  # the columns the row key holds (none for `_tidb_rowid`)
    split_offsets: tuple[int, ...]  # handle-key and unique-key columns
    # the columns whose change makes an update split: a moved handle is no update
    watched: tuple[int, ...]
    # a row's handle columns and watched columns, read in C (None: there are none)
    moved: Callable[[tuple[Value, ...]], Any] | None = field(init=False, compare=False)
    changed: Callable[[tuple[Value, ...]], Any] | None = field(init=False, compare=False)

    def __post_init__(self) -> None:
        keys = self.handle_offsets
        object.__setattr__(self, "moved", operator.itemgetter(*keys) if keys else None)
        watched = self.watched
        object.__setattr__(self, "changed", operator.itemgetter(*watched) if watched else None)

    @classmethod
    def of(cls, info: TableInfo) -> RowKeys:
        handle = "int" if info.pk_is_handle else "common" if info.is_common_handle else "rowid"
        if info.pk_handle_column is not None:
            keys: tuple[int, ...] = (info.pk_handle_column.offset,)
        else:
            primary = info.primary_index
            keys = tuple(c.offset for c in primary.columns) if primary is not None else ()
        flags = info.ticdc_flags()
        split_flags = ColumnFlag.HANDLE_KEY | ColumnFlag.UNIQUE_KEY
        split = tuple(i for i, f in enumerate(flags) if f & split_flags)
        held = () if handle == "rowid" else keys
        return cls(info, handle, keys, held, split, tuple(o for o in split if o not in held))

    def key_only(self, image: tuple[Value, ...]) -> tuple[Value, ...]:
        """The row as TiCDC decodes it from the row key alone: the handle's columns."""
        keep = self.handle_offsets
        return tuple(value if i in keep else None for i, value in enumerate(image))

    def row_key(self, image: tuple[Value, ...], rowid: int) -> tuple[Any, int]:
        """(the sorter's key, the event's row id) of a row; `rowid`: its `_tidb_rowid`
        (0 if unknown: then rows order by primary key)."""
        if self.handle == "int":
            handle = image[self.key_offsets[0]]
            return handle, int(handle)  # type: ignore[arg-type]
        if self.handle == "rowid" and rowid:
            return rowid, rowid
        columns = self.info.columns
        return key_order(
            tuple(collation_key(image[o], columns[o].collation, -1) for o in self.key_offsets)
        ), 0


class Change(NamedTuple):
    """A row event with where the sorter puts it."""

    table_id: int
    order: int
    key: Any
    event: RowChangedEvent


def add_change(
    out: list[Change],
    keys: RowKeys,
    before: Image,
    after: Image,
    start_ts: int,
    commit_ts: int,
    rowid: int = 0,
) -> None:
    """One row key's net change in a transaction (`before`/`after` None: born/gone), as the
    sorter reads it; nothing when both are None."""
    info = keys.info
    tid = info.id
    moved = keys.moved
    if before is None:
        if after is None:
            return
        order, image = INSERT, after
    elif after is None:
        order, image = DELETE, before
    elif moved is not None and moved(before) != moved(after):
        # the handle moved: TiKV deletes the old row key and puts the new one
        key, row_id = keys.row_key(before, rowid)
        event = RowChangedEvent(start_ts, commit_ts, info, tid, None, before, row_id)
        out.append(Change(tid, DELETE, key, event))
        order, image, before = INSERT, after, None
    else:
        order, image = UPDATE, after
    key, row_id = keys.row_key(image, rowid)
    event = RowChangedEvent(start_ts, commit_ts, info, tid, after, before, row_id)
    out.append(Change(tid, order, key, event))


def in_order(changes: list[Change]) -> list[RowChangedEvent]:
    """A transaction's changes in the sorter's order."""
    changes.sort(key=_SORTER_ORDER)
    return [c.event for c in changes]


class Capture:
    """A changefeed's capture of the upstream's transactions: `push` every event in commit
    order, `drain` at a flush or the end. Key-changing updates are split unless
    `raw_change_event`; without `old_value`, updates are insert-shaped and deletes cut to
    their row key's columns.

    TiCDC splits and sorts per transaction and physical table, so a run of rows is held
    until the next event shows that it ended."""

    def __init__(self, old_value: bool, raw_change_event: bool) -> None:
        self.old_value = old_value
        self.raw_change_event = raw_change_event
        self._run: list[RowChangedEvent] = []
        self._keys: dict[int, RowKeys] = {}  # by id(TableInfo); `RowKeys.info` keeps it alive

    @staticmethod
    def needed(old_value: bool, raw_change_event: bool) -> bool:
        """Whether the settings change anything: old values and raw events are the upstream's
        own stream."""
        return not (old_value and raw_change_event)

    def push(self, event: Event) -> list[Event]:
        """The events ready to go on once `event` arrived (maybe none)."""
        run = self._run
        if isinstance(event, RowChangedEvent):
            if run:
                head = run[0]
                if (
                    head.commit_ts != event.commit_ts
                    or head.physical_table_id != event.physical_table_id
                ):
                    self._run = [event]
                    return list(self._captured(run))
            run.append(event)
            return []
        ready: list[Event] = list(self.drain())
        ready.append(event)
        return ready

    def drain(self) -> list[RowChangedEvent]:
        """The rows held back."""
        run, self._run = self._run, []
        return self._captured(run) if run else run

    def _captured(self, run: list[RowChangedEvent]) -> list[RowChangedEvent]:
        """One physical table's changes in one transaction, as the changefeed sends them."""
        info = run[0].table
        keys = self._keys.get(id(info))
        if keys is None or keys.info is not info:
            keys = self._keys[id(info)] = RowKeys.of(info)
        if not self.old_value:
            return _without_old_values(run, keys)
        changed = keys.changed
        if self.raw_change_event or changed is None:
            return run
        for event in run:
            pre, post = event.pre_columns, event.columns
            if pre is not None and post is not None and changed(pre) != changed(post):
                return split_key_changes(run, keys.split_offsets)
        return run


def captured(
    events: Iterable[Event], old_value: bool = True, raw_change_event: bool = False
) -> Iterator[Event]:
    """The upstream's `events` as a changefeed of these settings captures them."""
    if not Capture.needed(old_value, raw_change_event):
        yield from events
        return
    capture = Capture(old_value, raw_change_event)
    upstream = iter(events)
    while True:
        try:
            event = next(upstream)
        except StopIteration:
            break
        except Exception:
            yield from capture.drain()  # what committed before the failure still goes out
            raise
        yield from capture.push(event)
    yield from capture.drain()


def _without_old_values(run: list[RowChangedEvent], keys: RowKeys) -> list[RowChangedEvent]:
    """Updates become Puts without their old row, sorted among the inserts by row key;
    deletes keep their row key's columns only."""
    out = []
    puts = False
    for event in run:
        pre, post = event.pre_columns, event.columns
        if pre is None:
            out.append(event)
        elif post is None:
            out.append(event._replace(pre_columns=keys.key_only(pre)))
        else:
            out.append(event._replace(pre_columns=None))
            puts = True
    if puts:  # the sorter's order again: deletes first, then every put by row key

        def order(event: RowChangedEvent) -> tuple[bool, Any]:
            image = event.columns
            if image is None:
                return False, 0  # deletes keep their order (a stable sort)
            return True, keys.row_key(image, event.row_id)[0]

        out.sort(key=order)
    return out


_SORTER_ORDER = operator.itemgetter(0, 1, 2)


def split_key_changes(
    events: list[RowChangedEvent], offsets: tuple[int, ...]
) -> list[RowChangedEvent]:
    """One physical table's events of a transaction, in sorter order, as MQ sinks send them:
    an update that changes a handle-key or unique-key column (`offsets`) becomes a delete
    and an insert, and then the whole list is re-sorted by kind with Go's unstable sort
    (tiflow `cdc/model/sink.go` `trySplitAndSortUpdateEvent`)."""
    out: list[RowChangedEvent] = []
    split = False
    for event in events:
        pre, post = event.pre_columns, event.columns
        if pre is not None and post is not None and any(pre[o] != post[o] for o in offsets):
            split = True
            out.append(event._replace(columns=None))
            out.append(event._replace(pre_columns=None))
        else:
            out.append(event)
    if split:
        go_sort(out, lambda a, b: _kind_order(a) < _kind_order(b))
    return out


def _kind_order(event: RowChangedEvent) -> int:
    kind = event.kind
    return 1 if kind == "delete" else 2 if kind == "update" else 3


def key_order(handle: Any) -> Any:
    """Row-key order within one table: signed int handles, or the common handle's datums."""
    if not isinstance(handle, tuple):
        return handle
    return tuple(_datum_key(v) for v in handle)


def _datum_key(value: Any) -> tuple[int, Any]:
    # memcomparable flags order types; within a type the natural order holds
    if value is None:
        return (0, 0)
    if isinstance(value, bytes):
        return (1, value)
    if isinstance(value, str):
        return (1, value.encode("utf-8", "surrogateescape"))
    if isinstance(value, int | float | Decimal):
        return (3, value)
    return (4, as_text(value))
