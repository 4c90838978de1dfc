"""What TiCDC captures of a transaction's net row changes: the row events, in the order its
sorter reads them, as its MQ sinks send them.

- Rows leave by physical table, then by each row key's final mutation (delete < update <
  insert), then by row key (tiflow `cdc/processor/sourcemanager/sorter/pebble/encoding/
  key.go`). The row key is the integer handle, the clustered primary key's datums, or
  `_tidb_rowid` for a table with neither.
- A changed handle is two row keys to TiKV: a delete of the old one and a put of the new.
- An update that changes another handle-key or unique-key column is split into a delete
  and an insert, and the table's events are re-sorted by kind with Go's unstable sort
  (tiflow `cdc/model/sink.go` `trySplitAndSortUpdateEvent`), unless the changefeed has
  `output-raw-change-event`.
- Without old values (`enable-old-value = false`) an update is a Put without its old row:
  insert-shaped; a delete carries what the row key holds, the handle's columns.

The workload generator and the Spark job's `records_from_changes` build their events here.
The SQL engine (`sql/engine.py`) keeps a faster path over its own stores and shares the
order and the split; the tests hold the others to it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import groupby
from typing import Any, NamedTuple

from ticdc_sim.generator.sql.store import collation_key
from ticdc_sim.generator.sql.values import as_text
from ticdc_sim.golang.sort import go_sort
from ticdc_sim.model.events import RowChangedEvent, Value
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
    keys: RowKeys
    splits: bool  # an update whose handle-key or unique-key columns changed


def add_change(
    out: list[Change],
    keys: RowKeys,
    before: Image,
    after: Image,
    start_ts: int,
    commit_ts: int,
    old_value: bool,
    rowid: int = 0,
) -> None:
    """One row key's net change in a transaction (`before`/`after` None: born/gone), as the
    sorter reads it; nothing when both are None."""
    info = keys.info
    tid = info.id
    splits = False
    moved, changed = keys.moved, keys.changed
    if before is None:
        if after is None:
            return
        order, pre, post, image = INSERT, None, after, after
    elif after is None:
        order, pre, post, image = DELETE, before, None, before
    elif moved is not None and moved(before) != moved(after):
        # the handle moved: TiKV deletes the old row key and puts the new one
        key, row_id = keys.row_key(before, rowid)
        pre = before if old_value else keys.key_only(before)
        event = RowChangedEvent(start_ts, commit_ts, info, tid, None, pre, row_id)
        out.append(Change(tid, DELETE, key, event, keys, False))
        order, pre, post, image = INSERT, None, after, after
    elif old_value:
        order, pre, post, image = UPDATE, before, after, after
        splits = changed is not None and changed(before) != changed(after)
    else:  # a Put without its old value: TiCDC sees an insert-shaped row
        order, pre, post, image = INSERT, None, after, after
    if post is None and not old_value:
        pre = keys.key_only(before)  # type: ignore[arg-type]
    key, row_id = keys.row_key(image, rowid)
    event = RowChangedEvent(start_ts, commit_ts, info, tid, post, pre, row_id)
    out.append(Change(tid, order, key, event, keys, splits))


def in_order(changes: list[Change], raw_change_event: bool) -> list[RowChangedEvent]:
    """A transaction's changes as TiCDC's MQ sinks send them."""
    changes.sort(key=_SORTER_ORDER)
    if raw_change_event or not any(c.splits for c in changes):
        return [c.event for c in changes]
    out: list[RowChangedEvent] = []
    for _, group in groupby(changes, key=_TABLE_ID):
        found = list(group)
        events = [c.event for c in found]
        if any(c.splits for c in found):
            events = split_key_changes(events, found[0].keys.split_offsets)
        out += events
    return out


_SORTER_ORDER = operator.itemgetter(0, 1, 2)
_TABLE_ID = operator.itemgetter(0)


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
