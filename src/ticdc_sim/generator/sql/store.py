"""One table's rows as TiKV holds them for the engine: rows by handle, indexes, the id allocator.

A `TableData` is the table store the statement executors use: they read `rows` (a dict by
handle) and look rows up through `scan`; they write only through the engine, whose upstream
(`Upstream.write`, `Upstream.write_new`) keeps the transaction's undo log and calls `put`
here. Unique indexes are kept at every write, since every insert checks them. Ordered
structures (for range scans and non-unique lookups) cost a sorted insert per write, so each
is built the first time a statement needs it and kept up to date from then on.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import Any, NamedTuple, cast

from sortedcontainers import SortedList

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.evaluate import Scope, compile_expr
from ticdc_sim.generator.sql.script import parse_one
from ticdc_sim.generator.sql.values import (
    DEFAULT_SQL_MODE,
    Converter,
    SqlMode,
    as_text,
    column_converter,
    comparison_keys,
    order_key,
)
from ticdc_sim.model.mysql import INTEGER_RANGES, ColumnFlag, MySQLType
from ticdc_sim.model.table import ColumnInfo, IndexInfo, PartitionInfo, TableInfo

Row = tuple[Any, ...]
Bound = tuple[tuple[Any, ...], bool] | None  # (key prefix, inclusive); None: unbounded


def collation_key(value: Any, collation: str, length: int) -> Any:
    """The value as an index compares it (PAD SPACE; `_ci` folds case)."""
    if isinstance(value, str):
        text = value[:length] if length > 0 else value
        text = text.rstrip(" ")
        return text.casefold() if collation.endswith("_ci") else text
    if isinstance(value, bytes) and length > 0:
        return value[:length]
    if isinstance(value, float):
        return Decimal(repr(value))
    return value


class Index:
    """A secondary index: its key of a row, the unique map, and an ordered list on demand."""

    def __init__(self, info: IndexInfo, table: TableInfo) -> None:
        self.info = info
        self.unique = info.unique
        self.offsets = tuple(ic.offset for ic in info.columns)
        self.collations = tuple(table.columns[ic.offset].collation for ic in info.columns)
        self.lengths = tuple(ic.length for ic in info.columns)
        self.entries: dict[tuple[Any, ...], Any] = {}  # unique indexes: key -> handle
        # (*entry, handle) tuples in order, once built: flat, so entries compare cheaply and
        # a key prefix is a lower bound of every entry that starts with it
        self.ordered: SortedList | None = None
        # non-unique indexes: entry -> handles, once built (equality on the whole key)
        self.members: dict[tuple[Any, ...], set[Any]] | None = None
        # the key uniqueness sees (None when a column is NULL: never collides), and the
        # entry every row has in the index's scans (NULL as NULL_KEY, first, as in MySQL)
        self.key = _key_function(self.offsets, self.collations, self.lengths, table, None)
        self.entry = cast(  # never None: a NULL column stands as NULL_KEY
            Callable[[Row], tuple[Any, ...]],
            _key_function(self.offsets, self.collations, self.lengths, table, NULL_KEY),
        )


@functools.total_ordering
class _NullKey:
    """NULL in an index entry: equal to itself, below every value (MySQL and TiDB sort NULL
    first in an index, so a range on the columns before it still finds the row)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return other is self

    def __lt__(self, other: object) -> bool:
        return other is not self

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "NULL"


NULL_KEY: Any = _NullKey()


def _key_function(
    offsets: tuple[int, ...],
    collations: tuple[str, ...],
    lengths: tuple[int, ...],
    table: TableInfo,
    null: Any,
) -> Callable[[Row], tuple[Any, ...] | None]:
    """A row's key in an index. A NULL column makes the whole key None when `null` is None,
    else stands as `null`."""
    if len(offsets) == 1 and table.columns[offsets[0]].tp in INTEGER_RANGES:
        (offset,) = offsets
        none = None if null is None else (null,)

        def integer_key(row: Row) -> tuple[Any, ...] | None:
            value = row[offset]
            return none if value is None else (value,)

        return integer_key

    def key(row: Row) -> tuple[Any, ...] | None:
        values = [row[o] for o in offsets]
        if None in values:
            if null is None:
                return None
            return tuple(
                null if v is None else collation_key(v, c, n)
                for v, c, n in zip(values, collations, lengths, strict=True)
            )
        return tuple(map(collation_key, values, collations, lengths))

    return key


def _keep(value: Any) -> Any:
    return value


def _for_input(columns: Iterable[ColumnInfo], converters: list[Converter]) -> list[Converter]:
    return [
        _keep if c.generated_expr is not None else conv
        for c, conv in zip(columns, converters, strict=True)
    ]


class ConverterSet(NamedTuple):
    """A table's value converters under one sql_mode, by column offset."""

    plain: list[Converter]
    # INSERT IGNORE turns strict mode's value errors into warnings: values are clipped or
    # truncated as in non-strict mode (MySQL and TiDB alike)
    ignore: list[Converter]
    # a new row's: generated columns are computed after the others, so they are left be
    plain_input: list[Converter]
    ignore_input: list[Converter]


def _converter_set(
    columns: tuple[ColumnInfo, ...], zone: Callable[[], dt.tzinfo], mode: SqlMode
) -> ConverterSet:
    plain = [column_converter(c, zone, mode) for c in columns]
    lenient = mode.without_strict()
    ignore = [column_converter(c, zone, lenient) for c in columns]
    return ConverterSet(plain, ignore, _for_input(columns, plain), _for_input(columns, ignore))


class TableData:
    """One table's rows (by handle), its indexes and its id allocator.

    Values are converted under the sql_mode of the session running the statement (`mode`,
    read at each use: a service's sessions take turns on one engine), with one converter
    set per mode seen, built when first needed."""

    router: tuple[PartitionInfo, Callable[[Row], int]] | None = None  # built on first use

    def __init__(
        self,
        info: TableInfo,
        zone: Callable[[], dt.tzinfo],
        mode: Callable[[], SqlMode] = lambda: DEFAULT_SQL_MODE,
    ) -> None:
        self.rows: dict[Any, Row] = {}
        self.next_id = max(info.auto_increment_base, 1)
        self.zone = zone
        self.mode = mode
        self._sets: dict[SqlMode, ConverterSet] = {}
        self.bind(info)

    def converter_set(self) -> ConverterSet:
        """The converters under the running session's sql_mode."""
        mode = self.mode()
        found = self._sets.get(mode)
        if found is None:
            found = self._sets[mode] = _converter_set(self.info.columns, self.zone, mode)
        return found

    @property
    def converters(self) -> list[Converter]:
        return self.converter_set().plain

    @property
    def ignore_converters(self) -> list[Converter]:
        return self.converter_set().ignore

    @property
    def input_converters(self) -> list[Converter]:
        return self.converter_set().plain_input

    @property
    def ignore_input_converters(self) -> list[Converter]:
        return self.converter_set().ignore_input

    def bind(self, info: TableInfo) -> None:
        """(Re)derive everything that depends on the table's schema."""
        self.info = info
        self.next_id = max(self.next_id, info.auto_increment_base)  # ALTER ... AUTO_INCREMENT
        self._sets.clear()  # of the columns as they were
        self.scope = Scope(
            {c.name.lower(): (i, c.collation) for i, c in enumerate(info.columns)},
            info.name,
            {
                c.offset: pair
                for c in info.columns
                if (pair := comparison_keys(c, self.zone)) is not None
            },
            {c.offset: by for c in info.columns if (by := order_key(c)) is not None},
        )
        pk = info.primary_index
        if info.pk_is_handle:
            col = info.pk_handle_column
            assert col is not None
            self.handle_offsets: tuple[int, ...] = (col.offset,)
            self.int_handle = True
        elif info.is_common_handle and pk is not None:
            self.handle_offsets = tuple(ic.offset for ic in pk.columns)
            self.int_handle = False
        else:
            self.handle_offsets = ()  # `_tidb_rowid`
            self.int_handle = True
        self.pk_int_handle = info.pk_is_handle
        self.handle_index = pk if (info.pk_is_handle or info.is_common_handle) else None
        self.indexes = [Index(ix, info) for ix in info.indices if ix is not self.handle_index]
        self.uniques = [index for index in self.indexes if index.unique]
        self.ordered_handles: SortedList | None = None
        self._built: list[Index] = []  # indexes whose ordered list is kept
        for unique in self.uniques:
            for handle, row in self.rows.items():
                key = unique.key(row)
                if key is not None:
                    if key in unique.entries:
                        raise duplicate_error(info, unique.info, row, unique.offsets)
                    unique.entries[key] = handle
        self.auto_offset = next(
            (c.offset for c in info.columns if c.auto_increment or c.auto_random_bits), None
        )
        self.generated = [
            (
                c.offset,
                compile_expr(parse_one(f"SELECT {c.generated_expr}").expressions[0], self.scope),
            )
            for c in info.columns
            if c.generated_expr is not None
        ]
        self.on_update = [c.offset for c in info.columns if c.on_update_now]
        self.timestamps = [
            (c.offset, max(c.decimal, 0)) for c in info.columns if c.tp == MySQLType.TIMESTAMP
        ]
        flags = info.ticdc_flags()
        self.split_offsets = tuple(
            i for i, f in enumerate(flags) if f & (ColumnFlag.HANDLE_KEY | ColumnFlag.UNIQUE_KEY)
        )
        # only a table whose rows can reach TiDB's entry size limit has them measured
        self.large_rows = sum(map(_max_bytes, info.columns)) > ENTRY_SIZE_LIMIT // 2

    # -- reading -----------------------------------------------------------------------------

    def key_only(self, row: Row) -> Row:
        """The row as TiCDC decodes it from the row key alone: handle columns, others NULL."""
        keep = set(self.handle_offsets)
        return tuple(v if i in keep else None for i, v in enumerate(row))

    def handle_of(self, row: Row) -> Any:
        if len(self.handle_offsets) == 1 and self.int_handle:
            return row[self.handle_offsets[0]]
        return tuple(
            collation_key(row[o], self.info.columns[o].collation, -1) for o in self.handle_offsets
        )

    def scan(self, index: Index | None, low: Bound, high: Bound) -> Iterator[Any]:
        """Handles whose key in `index` (None: the handle) lies between two key prefixes,
        in key order within the index. Builds the structure it needs on first use."""
        if index is None:
            if self.int_handle and low and high and high[0][0] - low[0][0] <= _PROBE_LIMIT:
                # a bounded range of integers: look each one up, no ordered list to keep
                first = low[0][0] + (not low[1])
                last = high[0][0] - (not high[1])
                rows = self.rows
                yield from (h for h in range(first, last + 1) if h in rows)
                return
            if self.ordered_handles is None:
                self.ordered_handles = SortedList(self.rows)
            ordered = self.ordered_handles
            if self.int_handle:  # plain integers, a one-column key
                yield from ordered.irange(
                    low[0][0] if low else None,
                    high[0][0] if high else None,
                    (low[1] if low else True, high[1] if high else True),
                )
                return
            yield from _prefix_range(ordered, low, high)
            return
        whole_key = low and high and low == high and low[1] and len(low[0]) == len(index.offsets)
        if whole_key and index.ordered is None:
            assert low is not None
            if index.members is None:
                index.members = {}
                for handle, row in self.rows.items():
                    self._add_member(index, index.entry(row), handle)
                self._built.append(index)
            yield from sorted(index.members.get(low[0], ()))
            return
        if index.ordered is None:
            entry_of = index.entry
            index.ordered = SortedList(
                (*entry_of(row), handle) for handle, row in self.rows.items()
            )
            if index.members is None:
                self._built.append(index)
        for entry in _prefix_range(index.ordered, low, high):
            yield entry[-1]

    @staticmethod
    def _add_member(index: Index, key: tuple[Any, ...] | None, handle: Any) -> None:
        if key is not None:
            assert index.members is not None
            found = index.members.get(key)
            if found is None:
                index.members[key] = {handle}
            else:
                found.add(handle)

    # -- writing (through the engine's transaction) ------------------------------------------

    def put(self, handle: Any, row: Row | None) -> None:
        """Set (or, with None, delete) the row under `handle`, keeping every index."""
        old = self.rows.get(handle)
        if old is not None:
            for unique in self.uniques:
                key = unique.key(old)
                if key is not None and unique.entries.get(key) == handle:
                    del unique.entries[key]
        for index in self._built:
            old_key = index.entry(old) if old is not None else None
            new_key = index.entry(row) if row is not None else None
            if old_key == new_key:
                continue
            if index.ordered is not None:
                if old_key is not None:
                    index.ordered.remove((*old_key, handle))
                if new_key is not None:
                    index.ordered.add((*new_key, handle))
            if index.members is not None:
                if old_key is not None:
                    members = index.members[old_key]
                    members.discard(handle)
                    if not members:
                        del index.members[old_key]
                self._add_member(index, new_key, handle)
        if row is None:
            if old is not None:
                del self.rows[handle]
                if self.ordered_handles is not None:
                    self.ordered_handles.remove(handle)
            return
        self.rows[handle] = row
        if old is None and self.ordered_handles is not None:
            self.ordered_handles.add(handle)
        for unique in self.uniques:
            key = unique.key(row)
            if key is not None:
                unique.entries[key] = handle

    def put_new(self, handles: list[Any], rows: list[Row]) -> None:
        """Rows under distinct handles that hold none (checked by the caller)."""
        self.rows.update(zip(handles, rows, strict=True))
        for unique in self.uniques:
            for handle, row in zip(handles, rows, strict=True):
                key = unique.key(row)
                if key is not None:
                    unique.entries[key] = handle
        if self.ordered_handles is not None:
            self.ordered_handles.update(handles)
        for index in self._built:
            keys = [index.entry(row) for row in rows]
            if index.ordered is not None:
                index.ordered.update(
                    (*key, handle) for key, handle in zip(keys, handles, strict=True)
                )
            if index.members is not None:
                for key, handle in zip(keys, handles, strict=True):
                    self._add_member(index, key, handle)

    # -- ids -----------------------------------------------------------------------------------

    def take_ids(self, count: int) -> int:
        """The first of `count` consecutive ids from the table's allocator, which
        AUTO_INCREMENT, AUTO_RANDOM's incremental bits and `_tidb_rowid` share (TiDB
        `meta/autoid`, one allocator per table unless AUTO_ID_CACHE 1)."""
        first = self.next_id
        self.next_id += count
        return first

    def observe_id(self, value: int) -> None:
        """An explicit id: later ids come after it."""
        self.next_id = max(self.next_id, value + 1)


# -- TiDB's txn-entry-size-limit ---------------------------------------------------------------

ENTRY_SIZE_LIMIT = 6 * 1024 * 1024  # TiDB config.DefTxnEntrySizeLimit: a key and its value
_MAX_STRING_BYTES = {"utf8mb4": 4, "utf8": 3, "utf8mb3": 3}
_FIXED_WIDTH = 8  # a number, date or time in TiDB's row format (rowcodec), at most


def _max_bytes(column: ColumnInfo) -> int:
    if column.tp == MySQLType.JSON:
        return 1 << 32
    if column.tp in _LOB_LIMITS:
        return _LOB_LIMITS[column.tp]
    if column.tp in (MySQLType.VARCHAR, MySQLType.STRING, MySQLType.VAR_STRING):
        return max(column.flen, 0) * _MAX_STRING_BYTES.get(column.charset, 1)
    return _FIXED_WIDTH + max(column.flen, 0)  # DECIMAL and BIT count by their length too


_LOB_LIMITS = {
    MySQLType.TINY_BLOB: 255,
    MySQLType.BLOB: 65535,
    MySQLType.MEDIUM_BLOB: 16777215,
    MySQLType.LONG_BLOB: 4294967295,
}


def _data_bytes(value: Any) -> int:
    """A value's bytes in TiDB's row format (rowcodec v2), closely enough: integers compact,
    strings and bytes as long as they are."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogateescape"))
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, int):
        return (
            1
            if -128 <= value < 128
            else 2
            if -32768 <= value < 32768
            else 4
            if -(2**31) <= value < 2**31
            else 8
        )
    if isinstance(value, Decimal):
        return 2 + (len(value.as_tuple().digits) + 1) // 2
    return _FIXED_WIDTH


def entry_size(table: TableData, handle: Any, row: Row) -> int:
    """The bytes of a row's key and value as TiKV stores them: the key `t{id}_r{handle}`, the
    value rowcodec's header, column ids, offsets and data (TiDB util/rowcodec)."""
    key = 19 if table.int_handle else 11 + sum(map(_data_bytes, handle)) + len(handle)
    data = sum(_data_bytes(v) for v in row if v is not None)
    present = sum(v is not None for v in row)
    large = data > 65535 or len(row) > 255  # 4-byte ids and offsets
    return key + 6 + (4 if large else 1) * len(row) + (4 if large else 2) * present + data


def entry_too_large(size: int) -> SQLError:
    return SQLError(
        f"entry too large, the max entry size is {ENTRY_SIZE_LIMIT}, the size of data is {size}",
        code=8025,
    )


# widest bounded range of integer handles looked up one by one instead of in an ordered list
_PROBE_LIMIT = 1 << 16


def _prefix_range(ordered: SortedList, low: Bound, high: Bound) -> Iterator[Any]:
    """Entries (key tuples, maybe followed by more) whose start lies within the bounds."""
    start = 0 if low is None else ordered.bisect_left(low[0])
    for entry in ordered.islice(start):
        if low is not None and not low[1] and entry[: len(low[0])] == low[0]:
            continue
        if high is not None:
            cut = entry[: len(high[0])]
            if cut > high[0] or (cut == high[0] and not high[1]):
                return
        yield entry


def duplicate_error(
    info: TableInfo, index: IndexInfo, row: Row, offsets: Iterable[int]
) -> SQLError:
    shown = "-".join(as_text(row[o]) for o in offsets)
    return SQLError(f"Duplicate entry '{shown}' for key '{info.name}.{index.name}'", code=1062)
