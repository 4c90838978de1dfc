"""The commit: a transaction's writes folded into the row events TiCDC sees, as TiKV folds a
transaction's mutations into one change per key (its first image before, the row now after)
and TiCDC's sorter orders them: by physical table id, then per key by its final mutation
(delete < update < insert), then by key (tiflow `sorter/pebble/encoding/key.go`).
"""

from __future__ import annotations

import datetime as dt
import functools
import operator
from itertools import repeat
from typing import Any

from ticdc_sim.generator.capture import key_order
from ticdc_sim.generator.sql.partition import route_partition
from ticdc_sim.generator.sql.store import Row, TableData
from ticdc_sim.generator.sql.txn import Transaction
from ticdc_sim.generator.sql.values import timestamp_in_zone
from ticdc_sim.model.events import RowChangedEvent
from ticdc_sim.model.table import TableInfo

# sorter order of a row key's final mutation (tiflow sorter encoding/key.go getDMLOrder)
_DELETE, _UPDATE, _INSERT = 1, 2, 3
_ORDER_AND_HANDLE = operator.itemgetter(0, 1)
# Bulk commits build events from tuples of fields, without a call per row; the order they
# are built in (`_insert_events`, `_plain_changes`) must be RowChangedEvent's, so adding a
# field fails here.
_new_row_event = functools.partial(tuple.__new__, RowChangedEvent)
BULK_EVENT_FIELDS = (
    "start_ts",
    "commit_ts",
    "table",
    "physical_table_id",
    "columns",
    "pre_columns",
    "row_id",
)
if RowChangedEvent._fields != BULK_EVENT_FIELDS:  # pragma: no cover - a programming error
    raise ImportError(f"_insert_events builds {BULK_EVENT_FIELDS}, not {RowChangedEvent._fields}")


def row_events(txn: Transaction, commit_ts: int, cdc_zone: dt.tzinfo) -> list[RowChangedEvent]:
    """(first image, final image) per written key -> row changes with both images, in
    sorter order: by physical table id, then per key's final mutation delete < update <
    insert, then by key (tiflow `sorter/pebble/encoding/key.go`)."""
    ordered: dict[int, tuple[TableData, list[RowChangedEvent]]] = {}  # physical id ->
    start_ts = txn.start_ts
    for table, firsts in txn.first.items():
        info = table.info
        plain = info.partition is None and not table.timestamps
        if plain and list(firsts.values()).count(None) == len(firsts):
            # only keys new to this transaction: inserts in key order
            rows = table.rows
            handles = [h for h in firsts if h in rows]
            handles.sort(key=None if table.int_handle else key_order)
            tid = info.id
            events = _insert_events(start_ts, commit_ts, info, handles, rows, table.int_handle)
            if events:
                ordered[tid] = (table, events)
            continue
        if plain:
            keyed = {info.id: _plain_changes(table, firsts, start_ts, commit_ts)}
        else:
            keyed = {}
            rows_get = table.rows.get
            for handle, before in firsts.items():
                after = rows_get(handle)
                _changes(table, handle, before, after, start_ts, commit_ts, keyed, cdc_zone)
        for pid, changes in keyed.items():
            changes.sort(key=_ORDER_AND_HANDLE if table.int_handle else _order_and_key)
            ordered[pid] = (table, [e for _, _, e in changes])
    return [event for pid in sorted(ordered) for event in ordered[pid][1]]


def _plain_changes(
    table: TableData, firsts: dict[Any, Row | None], start_ts: int, commit_ts: int
) -> list[tuple[int, Any, RowChangedEvent]]:
    """`_changes` of a table without partitions or TIMESTAMP columns, all keys at once:
    one physical id, rows emitted as stored."""
    info = table.info
    tid, int_handle, rows_get = info.id, table.int_handle, table.rows.get
    changes = []
    for handle, before in firsts.items():
        after = rows_get(handle)
        if before is None:
            if after is None:
                continue  # inserted and deleted again: TiKV keeps nothing
            order, pre, post = _INSERT, None, after
        elif after is None:
            order, pre, post = _DELETE, before, None
        else:
            order, pre, post = _UPDATE, before, after
        fields = (start_ts, commit_ts, info, tid, post, pre, handle if int_handle else 0)
        changes.append((order, handle, _new_row_event(fields)))
    return changes


def _changes(
    table: TableData,
    handle: Any,
    before: Row | None,
    after: Row | None,
    start_ts: int,
    commit_ts: int,
    keyed: dict[int, list[tuple[int, Any, RowChangedEvent]]],
    cdc_zone: dt.tzinfo,
) -> None:
    """One key's change, as (sorter order, key, event) under its physical table id: an
    update, or a delete and an insert when the row moved partition."""
    if before is None and after is None:
        return  # inserted and deleted again: TiKV keeps nothing
    old_pid = physical_id(table, before) if before is not None else None
    new_pid = physical_id(table, after) if after is not None else None
    parts: list[tuple[int, int, Row | None, Row | None]] = []
    if before is not None and after is not None and old_pid == new_pid:
        assert new_pid is not None
        parts.append((new_pid, _UPDATE, before, after))
    else:  # a row that moved partition is two row keys: a delete and an insert
        if before is not None:
            assert old_pid is not None
            parts.append((old_pid, _DELETE, before, None))
        if after is not None:
            assert new_pid is not None
            parts.append((new_pid, _INSERT, None, after))
    row_id = handle if table.int_handle else 0
    for pid, order, pre, post in parts:
        event = RowChangedEvent(
            start_ts=start_ts,
            commit_ts=commit_ts,
            table=table.info,
            physical_table_id=pid,
            columns=emitted(table, post, cdc_zone),
            pre_columns=emitted(table, pre, cdc_zone),
            row_id=row_id,
        )
        keyed.setdefault(pid, []).append((order, handle, event))


def emitted(table: TableData, row: Row | None, cdc_zone: dt.tzinfo) -> Row | None:
    """A stored row as TiCDC's mounter hands it on (TIMESTAMP in TiCDC's time zone)."""
    if row is None or not table.timestamps:
        return row
    values = list(row)
    for offset, fsp in table.timestamps:
        if values[offset] is not None:
            values[offset] = timestamp_in_zone(values[offset], cdc_zone, fsp)
    return tuple(values)


def physical_id(table: TableData, row: Row) -> int:
    info = table.info
    if info.partition is None:
        return info.id
    return route_partition(table, row)


def _insert_events(
    start_ts: int,
    commit_ts: int,
    info: TableInfo,
    handles: list[Any],
    rows: dict[Any, Row],
    int_handle: bool,
) -> list[RowChangedEvent]:
    """Insert events of the rows under `handles`, in that order; built column-wise without
    a Python-level call per row, as a bulk commit makes many of them."""
    n = len(handles)
    fields = zip(  # in BULK_EVENT_FIELDS order
        repeat(start_ts, n),
        repeat(commit_ts, n),
        repeat(info, n),
        repeat(info.id, n),
        map(rows.__getitem__, handles),
        repeat(None, n),
        handles if int_handle else repeat(0, n),
        strict=True,
    )
    return list(map(_new_row_event, fields))


def _order_and_key(change: tuple[int, Any, RowChangedEvent]) -> Any:
    return change[0], key_order(change[1])
