"""A workload's transactions, as the upstream cluster commits them: DDL events for its tables,
the initial rows, then the operation mix.

The schedule is a pure function of the seed, so it can be cut anywhere and recomputed:
- transaction j has `size(j)` events and commits at a TSO of simulated time
  `j / commit_rate` (logical parts stepped by a hash, so TiCDC's `ts` dispatcher spreads);
- event n picks its table (the transaction's, or its own in a multi-table transaction) and
  its operation by weights, from hashes of (seed, n);
- each table's live rows are the row ids [dead, born): an insert appends row `born`, a
  delete removes the oldest live row (retention, as a purge job does), an update picks a
  live row by the key distribution (hot keys are the most recent rows); an update or delete
  of a table with no live row writes nothing. So `born` is a prefix count of inserts and
  the live count a walk reflected at 0: both scans, which a parallel engine can compute;
- values are those of `values.py` at version 0 (the insert) or at the event index of the
  update that last wrote them, so an update's old image is the previous new image;
- key columns are a sequence over a serial: the row id, or, where key updates are on, 2 *
  row id for a new row and 2 * j + 1 for the table's j-th key update, so keys never collide.

Within a transaction each row yields one event (TiCDC folds: insert+update -> insert,
update+update -> one update, insert+delete -> nothing, update+delete -> delete), as TiKV
records it (`generator/capture.py`: both images, sorter order, a moved handle as a delete and
an insert), with `_tidb_rowid` = row id + 1, as TiDB numbers the rows of a table without a
clustered key in insert order. What a changefeed captures of them is its pipeline's work.
"""

from __future__ import annotations

import datetime as dt
import gc
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ticdc_sim.errors import SimError, SQLError
from ticdc_sim.generator import capture
from ticdc_sim.generator.capture import RowKeys
from ticdc_sim.generator.sql.engine import Engine, EngineConfig
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.generator.sql.values import column_converter
from ticdc_sim.generator.workload import schedule
from ticdc_sim.generator.workload import values as v
from ticdc_sim.generator.workload.spec import (
    Chapter,
    Column,
    Keys,
    KeyUpdates,
    SpecError,
    SpecPath,
    Workload,
)
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.table import ColumnInfo, TableInfo
from ticdc_sim.model.tso import LOGICAL_MASK, compose_ts, physical_ms

Change = RowChangedEvent | DDLEvent
# per reference column (by id): the other table's live rows [lo, hi), and where it has hot
# rows, those born [hot_lo, hot_hi)
Anchors = dict[int, tuple[int, ...]]
_NOWHERE = (0, 0)
_BLOCK_TXNS = 2048  # transactions scheduled and drawn together
_LOGICAL_SLOT = 33  # logical values a transaction's TSO may take within its millisecond


@dataclass
class TableState:
    """One table of the workload: its model, its columns' generators, its live rows."""

    info: TableInfo
    generators: list[v.Values]
    references: dict[int, str]  # column offset -> referenced table name
    touched: np.ndarray  # bool per column: written by updates
    keys: RowKeys  # the row key, the primary key, the columns TiCDC's split rule watches
    weight: float
    initial: int
    rekey_share: float = 0.0  # of updates, those that give the row new keys ...
    rekey_columns: frozenset[int] = frozenset()  # ... in these key columns
    distribution: Keys = field(default_factory=Keys)  # which rows its updates take
    hot_count: int = 0  # its fixed hot rows: row ids [hot_from, hot_from + hot_count) ...
    hot_from: int = 0  # ... never deleted (from TRUNCATE on, the rows inserted after it)
    unique: frozenset[int] = frozenset()  # columns drawn distinct outside the keys
    born: int = 0  # row ids [dead, born) are live, and the hot rows born
    dead: int = 0
    rekeyed: int = 0  # key updates so far (the next one's serial)
    rows: RowState = field(default_factory=lambda: RowState())  # versions and key serials
    # columns a chapter added: offset -> (events before it, rows before it, their value)
    added: dict[int, tuple[int, int, Any]] = field(default_factory=dict)
    anchors: dict[int, Anchors] = field(default_factory=dict)  # row -> its references' anchors
    # initial rows from a file (`initial_from`): column id -> values of rows [0, seed_rows)
    seeded: dict[int, list[Any]] = field(default_factory=dict)
    seed_rows: int = 0

    def __post_init__(self) -> None:
        self.rows.pin(self.hot_from, self.hot_count)


@dataclass
class Block:
    """Consecutive transactions, scheduled: their sizes, each event's table (an index into
    the tables of `epoch`, the storyline chapters before it) and planned row."""

    first_txn: int
    n: int  # operations before it (an update's version is its event index + 1)
    sizes: np.ndarray
    tables: np.ndarray
    planned: schedule.Plan
    epoch: int


class RowState:
    """Per live row of a table: the version its columns are at (the event index + 1 of the
    update that last wrote it; 0: as inserted) and its key serial (-1: its own), in arrays
    indexed by row id from `base` (rows below the oldest live one are let go), and for the
    fixed hot rows [pinned, pinned + hot), which live on, arrays of their own (grown as
    they are born)."""

    def __init__(self) -> None:
        self.base = 0
        self.version = np.zeros(0, dtype=np.int64)
        self.serial = np.zeros(0, dtype=np.int64)
        self.pin(0, 0)

    def pin(self, first: int, count: int) -> None:
        """Rows [first, first + count) are the hot rows (their state kept apart)."""
        self.pinned, self.hot = first, count
        self.hot_version = np.zeros(0, dtype=np.int64)
        self.hot_serial = np.zeros(0, dtype=np.int64)

    def grow(self, born: int, low: int) -> None:
        """Room for rows [low, born); rows below `low` (hot rows aside) are not asked for
        again."""
        if low - self.base > max(len(self.version) // 2, 4096):
            cut = low - self.base
            self.version, self.serial = self.version[cut:], self.serial[cut:]
            self.base = low
        need = born - self.base
        if need > len(self.version):
            size = max(need, 2 * len(self.version), 1024)
            extra = size - len(self.version)
            self.version = np.concatenate([self.version, np.zeros(extra, dtype=np.int64)])
            self.serial = np.concatenate([self.serial, np.full(extra, -1, dtype=np.int64)])
        extra = min(self.hot, max(born - self.pinned, 0)) - len(self.hot_version)
        if extra > 0:
            self.hot_version = np.concatenate([self.hot_version, np.zeros(extra, np.int64)])
            self.hot_serial = np.concatenate([self.hot_serial, np.full(extra, -1, np.int64)])

    def _hot(self, rows: np.ndarray) -> np.ndarray:
        return (rows >= self.pinned) & (rows < self.pinned + self.hot)

    def get(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The version and key serial of `rows`."""
        hot = self._hot(rows)
        at = np.where(hot, 0, rows - self.base)
        version, serial = self.version[at], self.serial[at]
        if hot.any():
            pin = rows[hot] - self.pinned
            version[hot], serial[hot] = self.hot_version[pin], self.hot_serial[pin]
        return version, serial

    def put(self, rows: np.ndarray, version: np.ndarray, serial: np.ndarray) -> None:
        hot = self._hot(rows)
        cold = ~hot
        self.version[rows[cold] - self.base] = version[cold]
        self.serial[rows[cold] - self.base] = serial[cold]
        pin = rows[hot] - self.pinned
        self.hot_version[pin], self.hot_serial[pin] = version[hot], serial[hot]


@dataclass
class Writes:
    """Consecutive transactions' net writes, one per (transaction, row), as columns in
    transaction order; `states[table[i]]` is write i's table."""

    states: list[TableState]
    txn: np.ndarray  # the transaction, from the block's first (0)
    table: np.ndarray
    row: np.ndarray
    before: np.ndarray  # the version before the transaction; -1: born in it
    after: np.ndarray  # the version after; -1: deleted in it
    serial_before: np.ndarray  # the key serial before and after (-1: the row's own)
    serial_after: np.ndarray
    # per reference column (by id), the other table's live rows [lo, hi) when it was
    # written; None where the table has no references
    anchor_before: list[Anchors | None]
    anchor_after: list[Anchors | None]

    def __len__(self) -> int:
        return len(self.row)


class Generator:
    """The workload's events, in commit order (`events()`), from its spec."""

    def __init__(self, spec: Workload, datasets: Mapping[int, pa.Table] | None = None) -> None:
        """`datasets`: the files of the tables' `initial_from`, read, by table index."""
        self.spec = spec
        self.seed = spec.seed
        self.engine = Engine(EngineConfig(seed=spec.seed, database=None))
        self.ddl: list[DDLEvent] = []
        self._origins: list[SpecPath] = []  # the spec's DDL each of `ddl` came from
        name = spec.database.replace("`", "``")
        self._run_ddl(f"CREATE DATABASE IF NOT EXISTS `{name}`; USE `{name}`", ("database",))
        created: list[int] = []  # each entry's table id
        for i, table in enumerate(spec.tables):
            path: SpecPath = ("tables", i, "ddl" if table.ddl is not None else "ddl_file")
            text = table.ddl if table.ddl is not None else _read(table.ddl_file, path)
            events = self._run_ddl(text, path)
            tables = [e.table_info for e in events if e.action == ActionType.CREATE_TABLE]
            if len(tables) != 1:
                raise SpecError(
                    f"{len(tables)} CREATE TABLE statements: an entry of `tables` is one table",
                    path,
                )
            assert tables[0] is not None
            created.append(tables[0].id)
        self.tables: dict[str, TableState] = {}
        for i, table_id in enumerate(created):
            table = spec.tables[i]
            info = self._created(i, table_id)
            state = self._state(
                ("tables", i),
                info,
                table.columns,
                table.update,
                table.weight,
                table.rows,
                table.key_updates,
                spec.table_keys(i),
            )
            if table.initial_from is not None:
                data = (datasets or {}).get(i)
                where = ("tables", i, "initial_from")
                if data is None:
                    raise SpecError("the file was not read", where)
                self._seed(where, state, data)
            _keys_fit(state)
            self.tables[info.name] = state
        self.order = list(self.tables.values())
        self.index = {t.info.name: i for i, t in enumerate(self.order)}
        self.epoch = 0  # storyline chapters applied
        weights = np.array([t.weight for t in self.order], dtype=np.float64)
        if weights.sum() <= 0:
            raise SpecError("tables: at least one needs a weight above 0")
        self.table_cdf = np.cumsum(weights) / weights.sum()
        mix = spec.operations.mix
        kinds = np.array([mix.insert, mix.update, mix.delete], dtype=np.float64)
        self.kind_cdf = np.cumsum(kinds) / kinds.sum()
        self.base_ms = physical_ms(self.ddl[-1].commit_ts) + 1 if self.ddl else 0

    def _run_ddl(self, text: str, path: SpecPath) -> list[DDLEvent]:
        """Run the DDL of a table entry (or the database's): its events, or a spec error
        at `path` (located within the spec's DDL text)."""
        events: list[DDLEvent] = []
        try:
            for event in self.engine.run(split_script(text.splitlines(keepends=True), "ddl")):
                if not isinstance(event, DDLEvent):
                    raise SpecError(
                        f"writes rows ({event.table.name}): a table's `ddl` creates it; its"
                        " rows come from `rows` or `initial_from`",
                        path,
                    )
                events.append(event)
        except SQLError as e:
            own = path != ("database",)  # the database's statement is ours: no line, column
            raise SpecError(sql_problem(e if own else replace_location(e)), path) from None
        self.ddl.extend(events)
        self._origins.extend([path] * len(events))
        return events

    def _created(self, index: int, table_id: int) -> TableInfo:
        """The table entry `index` created, as the entries' DDL left it; an entry whose DDL
        (or a later entry's) dropped or replaced it is an error naming that DDL."""
        for schema in self.engine.catalog.schemas.values():
            for info in schema.tables.values():
                if info.id == table_id:
                    return info
        for event, origin in zip(self.ddl, self._origins, strict=True):
            before = event.pre_table_info
            if before is not None and before.id == table_id:
                raise SpecError(
                    f"{event.query} leaves no table {before.name}, which tables[{index}]"
                    " creates; DDL during the run goes in the storyline",
                    origin,
                )
        raise SpecError("the table it creates is gone", ("tables", index, "ddl"))

    def _state(
        self,
        where: SpecPath,
        info: TableInfo,
        columns: dict[str, Column],
        update: list[str] | None,
        weight: float,
        initial: int,
        rekey: KeyUpdates | None,
        keys_spec: Keys,
        previous: TableState | None = None,
    ) -> TableState:
        """A table's generators, update set and key updates; after a chapter's DDL
        (`previous`), the columns it kept keep their generators (their values stay those of
        before)."""
        names = {c.name.lower(): c for c in info.columns}
        given: dict[str, tuple[str, Column | None]] = {}
        for name, entry in columns.items():
            if name.lower() not in names:
                raise SpecError(f"{info.name} has no such column", (*where, "columns", name))
            if name.lower() in given:
                raise SpecError(
                    f"given twice (as {given[name.lower()][0]} too)", (*where, "columns", name)
                )
            given[name.lower()] = (name, entry)
        if info.partition is not None:
            raise SpecError(f"{info.name} is partitioned; not simulated in workloads yet", where)
        generated = [c.name for c in info.columns if c.is_generated]
        if generated:
            raise SpecError(
                f"{info.name}.{generated[0]} is a generated column; not simulated in workloads yet",
                where,
            )
        primary = primary_key(info)
        if not primary:
            raise SpecError(f"{info.name} needs a primary key (the rows' identity)", where)
        keys = _key_offsets(info)
        kept = {}
        if previous is not None:
            kept = {c.id: i for i, c in enumerate(previous.info.columns)}
        references: dict[int, str] = {}
        generators: list[v.Values] = []
        unique: set[int] = set()
        for col in info.columns:
            name, column = given.get(col.name.lower()) or (col.name, None)
            path = (*where, "columns", name)
            if previous is not None and col.id in kept:
                if column is not None:
                    raise SpecError(
                        f"{info.name}.{col.name} is there before this DDL: its values stay"
                        " drawn as before (only columns the DDL adds take generators here)",
                        path,
                    )
                offset = kept[col.id]
                generators.append(previous.generators[offset])
                if offset in previous.references:
                    references[col.offset] = previous.references[offset]
                if offset in previous.unique:
                    unique.add(col.offset)
                continue
            if column is not None and column.ref is not None:
                references[col.offset] = column.ref.split(".")[0]
            if column is not None and column.unique:
                unique.add(col.offset)
            key = col.offset in keys
            generators.append(
                v.values_for(path, info.name, col, column, self.seed, key, self._reference(path))
            )
        if update is None and previous is not None:
            chosen = {
                col.offset
                for col in info.columns
                if col.id in kept and previous.touched[kept[col.id]]
            }
        elif update is None:
            chosen = {c.offset for c in info.columns if c.offset not in keys | unique}
        else:
            unknown = [n for n in update if n.lower() not in names]
            if unknown:
                raise SpecError(f"{info.name} has no column {unknown[0]}", (*where, "update"))
            chosen = {names[n.lower()].offset for n in update}
        if chosen & keys:
            raise SpecError(
                "key columns change by `key_updates` only (with fresh values, so keys never"
                " collide)",
                (*where, "update"),
            )
        if chosen & unique:
            named = info.columns[min(chosen & unique)].name
            raise SpecError(
                f"{named} is `unique`: its values are written by inserts only (a unique"
                " value is drawn once a row)",
                (*where, "update"),
            )
        rekeyed: set[int] = set()
        if rekey is not None:
            for name in rekey.columns or []:
                found = names.get(name.lower())
                if found is None or found.offset not in keys:
                    raise SpecError(
                        f"{name} is not a primary or unique key column of {info.name}",
                        (*where, "key_updates", "columns"),
                    )
                rekeyed.add(found.offset)
            rekeyed = rekeyed or set(keys)
        hot = keys_spec.hot
        return TableState(
            info=info,
            generators=generators,
            references=references,
            touched=np.array([c.offset in chosen for c in info.columns], dtype=bool),
            keys=RowKeys.of(info),
            weight=weight,
            initial=initial,
            rekey_share=0.0 if rekey is None else rekey.share,
            rekey_columns=frozenset(rekeyed),
            distribution=keys_spec,
            hot_count=0 if hot is None else hot.count,
            unique=frozenset(unique),
        )

    def _seed(self, where: SpecPath, state: TableState, data: pa.Table) -> None:
        """Initial rows from a file: its columns' values, converted as TiDB stores them;
        keys of later rows continue above the file's largest."""
        info = state.info
        uniques = [ix.name for ix in info.indices if ix.unique and not ix.primary]
        if uniques or state.unique:
            which = f"unique key {uniques[0]}" if uniques else "a `unique` column"
            raise SpecError(
                f"{info.name} has {which} besides the primary key: its later values could"
                " collide with the file's",
                where,
            )
        primary = state.keys.key_offsets
        sequence = state.generators[primary[0]]
        int_key = isinstance(sequence, v.KeySequence) and sequence.form == "int"
        if len(primary) != 1 or not int_key:
            raise SpecError(
                f"needs an integer primary key drawn as a sequence ({info.name} has none)", where
            )
        if state.rekey_columns:
            raise SpecError(
                f"{info.name} has key_updates; their keys could collide with the file's (not"
                " simulated yet)",
                where,
            )
        by_name = {c.name.lower(): c for c in info.columns}
        key = info.columns[primary[0]]
        names = {n.lower(): n for n in data.column_names}
        unknown = sorted(set(names) - set(by_name))
        if unknown:
            raise SpecError(f"column {names[unknown[0]]!r}: {info.name} has none", where)
        if key.name.lower() not in names:
            raise SpecError(f"needs the primary key column {key.name}", where)
        for lower, name in names.items():
            col = by_name[lower]
            kind = data.schema.field(name).type
            if pa.types.is_nested(kind):  # its Python repr would be stored as text
                raise SpecError(
                    f"column {name}: a {kind} column; a column of the file holds plain values",
                    where,
                )
            convert = column_converter(col, lambda: dt.UTC)
            values = []
            for row, value in enumerate(data.column(name).to_pylist()):
                try:
                    values.append(convert(_plain(value)))
                except SQLError as e:
                    raise SpecError(f"row {row + 1}, column {name}: {e}", where) from None
            state.seeded[col.id] = values
        keys = state.seeded[key.id]
        if len(set(keys)) != len(keys) or None in keys:
            raise SpecError(f"primary key {key.name} repeats or is NULL", where)
        state.initial = state.seed_rows = data.num_rows
        assert isinstance(sequence, v.KeySequence)
        if keys and sequence.step <= 0:
            raise SpecError("the key's sequence must go up (step > 0)", where)
        top = max(keys, default=sequence.start - sequence.step)
        start = int(top) + sequence.step * (1 - len(keys))  # row len(keys) gets top + step
        state.generators[key.offset] = replace(sequence, start=start)

    def _reference(self, where: SpecPath) -> Callable[[str], tuple[v.Values, float]]:
        """A `ref: table.column`: the other table's single-column primary key, as drawn,
        and the share of references its hot rows take."""

        def find(ref: str) -> tuple[v.Values, float]:
            at = (*where, "ref")
            name, column = ref.split(".")
            for event in self.ddl:
                info = event.table_info
                if info is None or info.name.lower() != name.lower():
                    continue
                col = info.column(column)
                index = self._entry(info.id)
                if col is not None and index is not None and primary_key(info) == [col.offset]:
                    table = self.spec.tables[index]
                    if table.initial_from is not None:
                        raise SpecError(
                            f"{name}'s rows come from initial_from; references to them are not"
                            " simulated yet",
                            at,
                        )
                    rekey = table.key_updates
                    if rekey is not None and (
                        rekey.columns is None or col.name.lower() in map(str.lower, rekey.columns)
                    ):
                        raise SpecError(
                            f"{name}'s key_updates change {col.name}; references to such keys"
                            " are not simulated yet",
                            at,
                        )
                    given = {k.lower(): c for k, c in table.columns.items()}.get(col.name.lower())
                    target = v.values_for(
                        ("tables", index, "columns", col.name),
                        info.name,
                        col,
                        given,
                        self.seed,
                        True,
                    )
                    hot = self.spec.table_keys(index).hot
                    return target, 0.0 if hot is None else hot.share
            raise SpecError(f"{ref} is not the one-column primary key of a table here", at)

        return find

    def _entry(self, table_id: int) -> int | None:
        """The index of the `tables` entry whose DDL created table `table_id`."""
        creates = [e for e in self.ddl if e.action == ActionType.CREATE_TABLE]
        for index, event in enumerate(creates):
            if event.table_info is not None and event.table_info.id == table_id:
                return index
        return None

    def planned_events(self) -> int | None:
        """About how many events the run yields (a progress bar's total): DDL, initial
        rows and operations (folding in transactions makes it a little less)."""
        ops = self.spec.operations
        if ops.events is None:
            return None
        return len(self.ddl) + sum(t.initial for t in self.order) + ops.events

    # -- the schedule --------------------------------------------------------------------------

    def _rate(self) -> tuple[int, int]:
        rate = Fraction(self.spec.operations.commit_rate).limit_denominator(1_000_000)
        return rate.numerator, rate.denominator  # transactions per second = p / q

    def first_txn_at(self, ms: int) -> int:
        """The first transaction committing at physical time `ms` or later."""
        p, q = self._rate()
        return max(0, -(-(ms - self.base_ms) * p // (1000 * q)))

    def commit_ts(self, first: int, count: int = 1) -> list[int]:
        """The TSOs of transactions `first`.. (`count` of them): simulated time at the commit
        rate (exact, in integers), logical parts stepped by a hash, so they strictly increase
        and TiCDC's `ts` dispatcher spreads them."""
        p, q = self._rate()
        txns = np.arange(first, first + count, dtype=np.uint64)
        steps = (v.mix(txns ^ np.uint64(v.derive(self.seed, "logical"))) % np.uint64(32)).tolist()
        out = []
        for txn, step in zip(range(first, first + count), steps, strict=True):
            offset = txn * 1000 * q // p  # its millisecond, from the first transaction's
            slot = txn - -(-offset * p // (1000 * q))  # transactions before it in that ms
            logical = slot * _LOGICAL_SLOT + 1 + step
            if logical > LOGICAL_MASK:
                raise SimError(f"commit_rate {p / q}: more transactions a ms than TSOs")
            if self.base_ms + offset >= _PHYSICAL_LIMIT:
                raise SimError(
                    f"commit_rate {p / q}: transaction {txn} commits past what a TSO's 46-bit"
                    " physical time holds (the year 4199): a higher rate or fewer events"
                )
            out.append(compose_ts(self.base_ms + offset, logical))
        return out

    def events(self) -> Iterator[Change]:
        """DDL, the initial rows, then the operations: every event in commit order.

        The rows, events and records a run makes hold no reference cycles, so Python's
        cycle collector would only scan them, over and over as they pile up in a sink's
        buffers (a fifth of the run's time): it is paused while a block's events are
        consumed, and collects the young ones between blocks."""
        yield from self.ddl
        for item in self.blocks():
            if isinstance(item, Block):
                with cycles_paused():
                    yield from self.emit(item.first_txn, self.fold(item), len(item.sizes))
            else:
                yield item

    def blocks(self) -> Iterator[Block | DDLEvent]:
        """The run's transactions as blocks (which rows each event takes: cheap, numpy),
        with the storyline's DDL between them; each block is folded (`fold`) before the next
        is drawn, as chapters reshape the tables."""
        txn = 0
        for t, table in enumerate(self.order):  # the initial rows, table by table
            while table.born < table.initial:
                rows = table.initial - table.born
                batch = self.spec.initial_batch
                sizes = np.full(min(_BLOCK_TXNS, -(-rows // batch)), batch, dtype=np.int64)
                sizes[-1] = min(batch, rows - batch * (len(sizes) - 1))
                events = int(sizes.sum())
                tables = np.full(events, t, dtype=np.int64)
                kinds = np.full(events, schedule.INSERT, dtype=np.int64)
                yield self._block(txn, 0, sizes, tables, kinds, np.zeros(events))
                txn += len(sizes)
        yield from self._operations(txn)

    def _block(
        self,
        txn: int,
        n: int,
        sizes: np.ndarray,
        tables: np.ndarray,
        kinds: np.ndarray,
        u_key: np.ndarray,
    ) -> Block:
        """Plan a block's events from the tables' counters, and move the counters on."""
        planned = schedule.plan(
            tables,
            kinds,
            u_key,
            np.array([t.born for t in self.order]),
            np.array([t.born - t.dead for t in self.order]),
            [t.distribution for t in self.order],
            np.array([t.rekeyed for t in self.order]),
            np.array([t.hot_from for t in self.order], dtype=np.int64),
        )
        for t, table in enumerate(self.order):
            table.born = int(planned.born_after[t])
            table.dead = table.born - int(planned.live_after[t])
            table.rekeyed = int(planned.rekeyed_after[t])
        return Block(txn, n, sizes, tables, planned, self.epoch)

    def _operations(self, first_txn: int) -> Iterator[Block | DDLEvent]:
        """The operation mix, a block of transactions at a time: their schedule drawn in a
        few numpy calls."""
        ops = self.spec.operations
        total = ops.events
        last_txn = None
        if total is None:
            last_txn = first_txn + int((ops.duration_s or 0.0) * ops.commit_rate)
        n, txn = 0, first_txn
        draw_sizes = self._sizes()
        key_txn, key_event = v.derive(self.seed, "txn"), v.derive(self.seed, "event")
        key_rekey = np.uint64(v.derive(self.seed, "rekey"))
        pending = list(enumerate(self.spec.storyline))
        while (total is None or n < total) and (last_txn is None or txn < last_txn):
            while pending and self._due(pending[0][1], n, txn - first_txn):
                yield from self._chapter(*pending.pop(0), txn, n)
            count = _BLOCK_TXNS if last_txn is None else min(_BLOCK_TXNS, last_txn - txn)
            chapter = pending[0][1] if pending else None
            if chapter is not None and chapter.at_time_s is not None:
                due = first_txn + self._txns_in(chapter.at_time_s)
                count = min(count, due - txn)
            h = v.mix(np.arange(txn, txn + count, dtype=np.uint64) ^ np.uint64(key_txn))
            sizes = draw_sizes(h)
            if total is not None:  # the last block stops at `events`
                ends = np.cumsum(sizes)
                keep = int(np.searchsorted(ends, total - n, side="left")) + 1
                sizes = sizes[:keep]
                sizes[-1] -= max(0, int(ends[min(keep, len(ends)) - 1]) - (total - n))
                count = len(sizes)
            if chapter is not None and chapter.at_event is not None:
                starts = n + np.cumsum(sizes) - sizes  # each transaction's first event
                count = int(np.searchsorted(starts, chapter.at_event, side="left"))
                sizes = sizes[:count]
            multi = v.unit(v.mix(h[:count])) < ops.multi_table
            own = v.unit(h[:count])  # a single-table transaction's table
            events = int(sizes.sum())
            draws = v.mix(np.arange(n, n + events, dtype=np.uint64) ^ np.uint64(key_event))
            txn_of = np.repeat(np.arange(count), sizes)
            u_table = np.where(multi[txn_of], v.unit(draws), own[txn_of])
            last = len(self.order) - 1
            tables = np.minimum(np.searchsorted(self.table_cdf, u_table, side="right"), last)
            kinds = np.minimum(np.searchsorted(self.kind_cdf, v.unit(v.mix(draws)), "right"), 2)
            shares = np.array([t.rekey_share for t in self.order])
            if shares.any():  # key updates: a share of each table's updates
                rekey = v.unit(v.mix(draws ^ key_rekey)) < shares[tables]
                kinds = np.where((kinds == schedule.UPDATE) & rekey, schedule.REKEY, kinds)
            u_key = v.unit(v.mix(v.mix(draws)))
            yield self._block(txn, n, sizes, tables, kinds, u_key)
            n += events
            txn += count
        for index, chapter in pending:  # the run ended first: it would never happen
            seconds = (txn - first_txn) / ops.commit_rate
            at = ("at_event", "at_time_s")[chapter.at_event is None]
            raise SpecError(
                f"{at} {getattr(chapter, at):g} is past the run's end ({n:,} events, {seconds:g}"
                " simulated seconds): the chapter would never run",
                ("storyline", index, at),
            )

    def _sizes(self) -> Callable[[np.ndarray], np.ndarray]:
        """Transaction sizes from the transactions' hashes: uniform or by weights."""
        given = self.spec.operations.transaction_size
        if given.choice is None:
            low, high = np.uint64(given.min), np.uint64(given.max - given.min + 1)
            return lambda h: (low + h % high).astype(np.int64)
        options = np.array(list(given.choice), dtype=np.int64)
        weights = np.array(list(given.choice.values()), dtype=np.float64)
        cdf = np.cumsum(weights) / weights.sum()
        salt = np.uint64(v.derive(self.seed, "size"))
        last = len(options) - 1
        return lambda h: options[
            np.minimum(np.searchsorted(cdf, v.unit(v.mix(h ^ salt)), side="right"), last)
        ]

    def fold(self, block: Block, owned: np.ndarray | None = None) -> Writes:
        """A block's net writes per transaction (TiCDC's folding: insert+update -> insert,
        update+update -> one update, insert+delete -> nothing), in a few numpy passes over
        its events sorted by row; with `owned` (a mask of its events), only those events'
        rows: a parallel engine's task owns some rows."""
        planned, states = block.planned, self.order
        keep = planned.kinds != schedule.SKIPPED
        if owned is not None:
            keep &= owned
        k = np.flatnonzero(keep)
        if not len(k):  # every update and delete found no live row, or no row is owned
            none = np.empty(0, dtype=np.int64)
            return Writes(list(states), none, none, none, none, none, none, none, [], [])
        txn_of = np.repeat(np.arange(len(block.sizes)), block.sizes)
        t, r, kind, txn = block.tables[k], planned.rows[k], planned.kinds[k], txn_of[k]
        order = np.lexsort((k, r, t))  # by row, then event
        t, r, kind, txn, k = t[order], r[order], kind[order], txn[order], k[order]
        m = len(k)
        index = np.arange(m)
        new_row = np.ones(m, dtype=bool)
        new_row[1:] = (t[1:] != t[:-1]) | (r[1:] != r[:-1])
        new_group = new_row.copy()
        new_group[1:] |= txn[1:] != txn[:-1]
        # each row's version and serial before the block, from its table's state
        version0 = np.zeros(m, dtype=np.int64)
        serial0 = np.full(m, -1, dtype=np.int64)
        for ti in np.unique(t).tolist():
            state = states[ti]
            mine = t == ti
            # rows below the oldest live one after the block are gone for good, but this
            # block may delete some of them first
            cold = r[mine][r[mine] >= state.hot_from + state.hot_count]
            state.rows.grow(state.born, min(state.dead, int(cold.min(initial=state.dead))))
            version0[mine], serial0[mine] = state.rows.get(r[mine])
        # running version (updates set theirs, inserts 0) and serial (key updates set
        # theirs) along each row's events, carried from the state at the row's first
        segment = np.maximum.accumulate(np.where(new_row, index, 0))
        updates = (kind == schedule.UPDATE) | (kind == schedule.REKEY)
        sets_version = updates | (kind == schedule.INSERT)
        own_version = np.where(updates, block.n + k + 1, 0)
        last = np.maximum.accumulate(np.where(sets_version, index, -1))
        version = np.where(last >= segment, own_version[last], version0)
        rekeys = kind == schedule.REKEY
        own_serial = 2 * planned.serials[k] + 1
        last = np.maximum.accumulate(np.where(rekeys, index, -1))
        serial = np.where(last >= segment, own_serial[last], serial0)
        starts = np.flatnonzero(new_group)
        ends = np.append(starts[1:], m) - 1
        first_kind, last_kind = kind[starts], kind[ends]
        carried = starts > segment[starts]  # an earlier transaction of the block wrote it
        prior = np.maximum(starts - 1, 0)
        born = first_kind == schedule.INSERT
        before = np.where(born, -1, np.where(carried, version[prior], version0[starts]))
        serial_before = np.where(born, -1, np.where(carried, serial[prior], serial0[starts]))
        gone = last_kind == schedule.DELETE
        after = np.where(gone, -1, version[ends])
        serial_after = np.where(gone, -1, serial[ends])
        row_ends = np.append(np.flatnonzero(new_row)[1:], m) - 1
        for ti in np.unique(t).tolist():  # the state after the block
            state = states[ti]
            mine = row_ends[t[row_ends] == ti]
            state.rows.put(r[mine], version[mine], serial[mine])
        anchors = self._fold_anchors(block, t, r, kind, txn, k, starts, new_group)
        real = ~(born & gone)  # born and gone in one transaction: nothing
        pick = starts[real]
        by_txn = np.argsort(txn[pick], kind="stable")
        pick, groups = pick[by_txn], np.flatnonzero(real)[by_txn]
        anchor_before: list[Anchors | None] = [None] * len(pick)
        anchor_after: list[Anchors | None] = [None] * len(pick)
        if anchors is not None:
            anchor_before = [anchors[0][g] for g in groups.tolist()]
            anchor_after = [anchors[1][g] for g in groups.tolist()]
        return Writes(
            list(states),
            txn[pick],
            t[pick],
            r[pick],
            before[groups],
            after[groups],
            serial_before[groups],
            serial_after[groups],
            anchor_before,
            anchor_after,
        )

    def _fold_anchors(
        self,
        block: Block,
        t: np.ndarray,
        r: np.ndarray,
        kind: np.ndarray,
        txn: np.ndarray,
        k: np.ndarray,
        starts: np.ndarray,
        new_group: np.ndarray,
    ) -> tuple[list[Anchors | None], list[Anchors | None]] | None:
        """Where each group's references point from, before and after it (None: no table
        of the block has references), by the events of referencing tables in their order:
        each write of a reference column anchors it at the other table's live rows then."""
        referencing = [i for i, state in enumerate(self.order) if state.references]
        if not referencing:
            return None
        group = np.cumsum(new_group) - 1
        count = len(starts)
        anchor_before: list[Anchors | None] = [None] * count
        anchor_after: list[Anchors | None] = [None] * count
        seen = np.zeros(count, dtype=bool)
        events = np.flatnonzero(np.isin(t, referencing))
        for e in events[np.argsort(k[events], kind="stable")].tolist():
            table, row, g, what = self.order[int(t[e])], int(r[e]), int(group[e]), kind[e]
            if not seen[g]:
                seen[g] = True
                anchor_before[g] = table.anchors.get(row)
            if what == schedule.DELETE:
                table.anchors.pop(row, None)
                anchor_after[g] = None
                continue
            current = None if what == schedule.INSERT else table.anchors.get(row)
            anchor_after[g] = table.anchors[row] = self._anchors(
                table, current, block.planned, int(k[e])
            )
        return anchor_before, anchor_after

    def _txns_in(self, seconds: float) -> int:
        return -int(-seconds * self.spec.operations.commit_rate // 1)  # ceil

    def _due(self, chapter: Chapter, n: int, txns: int) -> bool:
        if chapter.at_event is not None:
            return n >= chapter.at_event
        assert chapter.at_time_s is not None
        return txns >= self._txns_in(chapter.at_time_s)

    def _chapter(self, index: int, chapter: Chapter, txn: int, n: int) -> Iterator[DDLEvent]:
        """A storyline DDL before transaction `txn`: run on the catalog, stamped with a TSO
        between the transactions around it; the tables it changes follow the new schema."""
        where: SpecPath = ("storyline", index)
        try:
            statements = split_script(chapter.ddl.splitlines(keepends=True), "ddl")
            changes = list(self.engine.run(statements))
        except SQLError as e:
            raise SpecError(sql_problem(e), (*where, "ddl")) from None
        if not changes or not all(isinstance(e, DDLEvent) for e in changes):
            raise SpecError("a storyline DDL changes schemas, not rows", (*where, "ddl"))
        ts = self.ddl_ts(txn)
        for event in changes:
            assert isinstance(event, DDLEvent)
            info = event.table_info
            if info is not None:
                info = info.evolve(update_ts=ts)
                self.engine.catalog.schemas[info.schema.lower()].tables[info.name.lower()] = info
            event = replace(event, start_ts=ts - 1, commit_ts=ts, table_info=info)
            before = event.pre_table_info
            if before is not None and before.name in self.tables:
                self._reshape(where, chapter, self.tables.pop(before.name), info, n)
                if event.action == ActionType.TRUNCATE_TABLE and info is not None:
                    emptied = self.tables[info.name]
                    emptied.dead = emptied.born  # its rows are gone; new ones go on above
                    emptied.hot_from = emptied.born  # and the hot rows are the next ones
                    emptied.rows.pin(emptied.born, emptied.hot_count)
            yield event
        for state in self.tables.values():
            for offset, name in state.references.items():
                if name not in self.tables:
                    column = state.info.columns[offset].name
                    raise SpecError(
                        f"{state.info.name}.{column} takes `ref:` keys of {name}, and after"
                        f" this DDL there is no table {name} (a reference names its table;"
                        " dropping or renaming it is not simulated)",
                        (*where, "ddl"),
                    )
        self.order = list(self.tables.values())
        self.index = {t.info.name: i for i, t in enumerate(self.order)}
        self.epoch += 1
        weights = np.array([t.weight for t in self.order], dtype=np.float64)
        if not self.order or weights.sum() <= 0:
            raise SpecError("no table left to write to", (*where, "ddl"))
        self.table_cdf = np.cumsum(weights) / weights.sum()

    def _reshape(
        self, where: SpecPath, chapter: Chapter, old: TableState, info: TableInfo | None, n: int
    ) -> None:
        """A table after a DDL: the same rows, the new columns (rows from before the DDL hold
        the column's default until an update writes it)."""
        if info is None:
            return  # dropped: no more writes to it
        before = {c.id: c for c in old.info.columns}
        old_keys = {old.info.columns[o].id for o in _key_offsets(old.info)}
        for col in info.columns:
            was = before.get(col.id)
            if was is not None and (was.tp, was.flen, was.decimal) != (
                col.tp,
                col.flen,
                col.decimal,
            ):
                raise SpecError(
                    f"changes the type of {info.name}.{col.name}; not simulated", (*where, "ddl")
                )
            key = col.offset in _key_offsets(info)
            if was is not None and key and col.id not in old_keys:
                raise SpecError(
                    f"makes {info.name}.{col.name} a key column, but its values were not drawn"
                    " to be distinct (TiDB would refuse the DDL over a duplicate); declare the"
                    " key in the table's ddl",
                    (*where, "ddl"),
                )
        state = self._state(
            where,
            info,
            chapter.columns,
            chapter.update,
            old.weight,
            old.initial,
            None,
            old.distribution,
            old,
        )
        for col in info.columns:  # an update set only grows by the columns the DDL adds
            was = before.get(col.id)
            if was is not None and state.touched[col.offset] != old.touched[was.offset]:
                change = "joins" if state.touched[col.offset] else "leaves"
                raise SpecError(
                    f"{col.name} {change} the columns updates write; only columns this DDL adds"
                    " may join (each column of a row is at the version of the last update that"
                    " wrote it)",
                    (*where, "update"),
                )
        state.born, state.dead, state.rows, state.anchors = (
            old.born,
            old.dead,
            old.rows,
            old.anchors,
        )
        state.hot_from = old.hot_from
        state.rekeyed, state.rekey_share = old.rekeyed, old.rekey_share
        old_ids = {old.info.columns[o].id for o in old.rekey_columns}
        state.rekey_columns = frozenset(c.offset for c in info.columns if c.id in old_ids)
        state.seeded, state.seed_rows = old.seeded, old.seed_rows
        for col in info.columns:  # the key sequence goes on above the file's keys
            was = before.get(col.id)
            if was is not None and col.offset in state.keys.key_offsets:
                state.generators[col.offset] = old.generators[was.offset]
        offsets = {c.id: c.offset for c in info.columns}
        for offset, added in old.added.items():
            column = old.info.columns[offset].id
            if column in offsets:
                state.added[offsets[column]] = added
        for col in info.columns:
            if col.id not in before:
                backfill = self._backfill(col)
                if col.offset in _key_offsets(info) and backfill is not None and old.born:
                    raise SpecError(
                        f"adds key column {info.name}.{col.name} whose rows would all hold"
                        f" {backfill!r} (TiDB would refuse the DDL over a duplicate)",
                        (*where, "ddl"),
                    )
                state.added[col.offset] = (n, old.born, backfill)
        self.tables[info.name] = state

    def _backfill(self, col: ColumnInfo) -> Any:
        """What TiDB gives the rows already there for an added column: its default, or
        the type's zero value for NOT NULL without one."""
        value = self.engine.default_value(col)
        if value is None or isinstance(value, int | float | str | bytes | Decimal):
            return value
        convert = column_converter(col, lambda: dt.UTC)
        for zero in (0, "", "0000-00-00 00:00:00"):
            try:
                return convert(zero)
            except SQLError:
                continue
        return None

    def ddl_ts(self, txn: int) -> int:
        """A TSO just before transaction `txn`'s: the logical value its slot leaves free."""
        ts = self.commit_ts(txn)[0]
        logical = ts & LOGICAL_MASK
        return ts - (logical - logical // _LOGICAL_SLOT * _LOGICAL_SLOT)

    def _anchors(
        self, table: TableState, current: Anchors | None, planned: schedule.Plan, k: int
    ) -> Anchors:
        """Where a write's references point from: the other tables' live rows [lo, hi) at
        event `k` of the plan (and their hot rows born by then, where they have some), for
        the reference columns it writes (all, for a new row)."""
        out = dict(current or {})
        for offset, name in table.references.items():
            if current is None or table.touched[offset]:
                o = self.index[name]
                target = self.order[o]
                born = int(planned.born_before[o, k])
                live: tuple[int, ...] = (born - int(planned.live_before[o, k]), born)
                if target.hot_count:
                    hot = min(max(born - target.hot_from, 0), target.hot_count)
                    live += (target.hot_from, target.hot_from + hot)
                out[table.info.columns[offset].id] = live
        return out

    # -- events --------------------------------------------------------------------------------

    def emit(self, first_txn: int, writes: Writes, count: int) -> Iterator[RowChangedEvent]:
        """`count` consecutive transactions' row events, from their writes, each
        transaction's in TiCDC's order."""
        olds = np.full(len(writes), None, dtype=object)
        news = np.full(len(writes), None, dtype=object)
        for ti in np.unique(writes.table).tolist():
            self._images(writes, np.flatnonzero(writes.table == ti), olds, news)
        stamps = self.commit_ts(first_txn, count)
        bounds = np.searchsorted(writes.txn, np.arange(count + 1)).tolist()
        keys = [state.keys for state in writes.states]
        table_of, rowid_of = writes.table.tolist(), (writes.row + 1).tolist()
        old_list, new_list = olds.tolist(), news.tolist()
        add = capture.add_change
        for txn, commit_ts in enumerate(stamps):
            lo, hi = bounds[txn], bounds[txn + 1]
            if lo == hi:
                continue
            changes: list[capture.Change] = []
            start_ts = commit_ts - 1
            for i in range(lo, hi):
                before, after = old_list[i], new_list[i]
                if before != after:  # an update that changed nothing: TiDB writes no row
                    # `_tidb_rowid`s: TiDB numbers a table's rows in insert order
                    key = keys[table_of[i]]
                    add(changes, key, before, after, start_ts, commit_ts, rowid_of[i])
            yield from capture.in_order(changes)

    def _images(
        self, writes: Writes, which: np.ndarray, olds: np.ndarray, news: np.ndarray
    ) -> None:
        """The old and new images of writes `which` (all of one table) into `olds` and
        `news`, every column drawn in one call for them all."""
        table = writes.states[int(writes.table[which[0]])]
        old = which[writes.before[which] >= 0]
        new = which[writes.after[which] >= 0]
        row_array = np.concatenate([writes.row[old], writes.row[new]])
        version_array = np.concatenate([writes.before[old], writes.after[new]])
        zero = np.zeros(len(row_array), dtype=np.int64)
        serial_array = row_array
        if table.rekey_columns:  # key serials: 2 * row, or the key update's
            serial_array = np.concatenate([writes.serial_before[old], writes.serial_after[new]])
            serial_array = np.where(serial_array < 0, 2 * row_array, serial_array)
        anchors: list[Anchors | None] = []
        if table.references:
            anchors = [writes.anchor_before[i] for i in old.tolist()]
            anchors += [writes.anchor_after[i] for i in new.tolist()]
        columns = []
        for offset, generator in enumerate(table.generators):
            at = version_array if table.touched[offset] else zero
            if offset in table.rekey_columns:
                columns.append(generator(serial_array, at, None))
                continue
            live = None
            if offset in table.references:
                column = table.info.columns[offset].id
                found = [(a.get(column, _NOWHERE) if a else _NOWHERE) + _NOWHERE for a in anchors]
                lo, hi, hot_lo, hot_hi = (np.array([f[i] for f in found]) for i in range(4))
                live = (lo, hi, hot_lo, hot_hi)
            values = generator(row_array, at, live)
            if offset in table.added:  # rows from before the column: its backfill
                events_before, rows_before, backfill = table.added[offset]
                early = (row_array < rows_before) & (at <= events_before)
                for index in np.flatnonzero(early).tolist():
                    values[index] = backfill
            seeded = table.seeded.get(table.info.columns[offset].id)
            if seeded is not None:  # rows from the file, as long as no update wrote them
                from_file = (row_array < table.seed_rows) & (at == 0)
                for index in np.flatnonzero(from_file).tolist():
                    values[index] = seeded[int(row_array[index])]
            columns.append(values)
        images = np.fromiter(zip(*columns, strict=True), dtype=object, count=len(row_array))
        olds[old] = images[: len(old)]
        news[new] = images[len(old) :]


@contextmanager
def cycles_paused() -> Iterator[None]:
    """Python's cycle collector off for a while (a block of events and what consumes
    them), then the young objects collected."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)


def check(spec: Workload, datasets: Mapping[int, pa.Table] | None = None) -> None:
    """What would fail mid-run, found before any record is written: a chapter that cannot
    run, a key column too small for the rows, a template's longest row number, a generator
    out of distinct values. Where the most rows the run could make fit every column and
    nothing needs counting (no storyline, no distinct draws), from that bound alone; else by
    walking the schedule without drawing a row (numpy, ~10M events/s) and asking each column
    for the last value the run needs (distinct values so drawn are kept for the run)."""
    gen = Generator(spec, datasets)
    counted = bool(spec.storyline) or any(
        isinstance(values, v.Distinct) for state in gen.order for values in state.generators
    )
    if not counted:
        most = _most_events(spec)
        try:
            for state in gen.order:
                _last_values(state, state.initial + most, most)
            return
        except SpecError:
            pass  # the bound does not fit: count what the run makes
    states = {id(state): state for state in gen.order}
    for _ in gen.blocks():
        states.update((id(state), state) for state in gen.order)
    for state in states.values():
        _last_values(state, state.born, state.rekeyed)


def _most_events(spec: Workload) -> int:
    """An upper bound of the run's operation events."""
    ops = spec.operations
    if ops.events is not None:
        return ops.events
    sizes = ops.transaction_size
    largest = max(sizes.choice) if sizes.choice else sizes.max
    return int((ops.duration_s or 0) * ops.commit_rate + 1) * largest


def _last_values(state: TableState, born: int, rekeyed: int) -> None:
    """Each column of `state` asked for the last value `born` rows and `rekeyed` key updates
    need: a key sequence's last key, a template's longest {row}, the distinct values."""
    for offset, values in enumerate(state.generators):
        count = born
        if offset in state.rekey_columns:  # serials 2 * row and 2 * key update + 1
            count = max(2 * born - 1, 2 * rekeyed)
        if isinstance(values, v.Distinct):
            values.reserve(count)
        ends = isinstance(values, v.KeySequence) and count > state.seed_rows
        if ends or (isinstance(values, v.Template) and count):
            values(np.array([count - 1]), np.zeros(1, dtype=np.int64), None)


_PHYSICAL_LIMIT = 1 << 46  # a TSO is 46 bits of milliseconds and 18 logical bits


def _keys_fit(state: TableState) -> None:
    """The last initial row's keys, drawn once up front: a key column too small for the
    initial rows is an error before the run starts, not after millions of rows."""
    last = state.initial - 1
    if last < state.seed_rows:  # no initial rows, or all of them from a file
        return
    for offset, values in enumerate(state.generators):
        if isinstance(values, v.KeySequence):
            serial = 2 * last if offset in state.rekey_columns else last
            values(np.array([serial], dtype=np.int64), np.zeros(1, dtype=np.int64), None)


def _key_offsets(info: TableInfo) -> set[int]:
    """The offsets of the columns of the primary key and of every unique key."""
    keys = {ic.offset for ix in info.indices if ix.primary or ix.unique for ic in ix.columns}
    return keys | set(primary_key(info))


def replace_location(error: SQLError) -> SQLError:
    """The error without its place (in a statement the user did not write)."""
    return SQLError(error.message, code=error.code)


def sql_problem(error: SQLError) -> str:
    """A SQL error inside a spec's DDL: where in that text, MySQL's code, the message."""
    where = f"line {error.location.line} column {error.location.col}: " if error.location else ""
    code = f"ERROR {error.code} ({error.sqlstate}): " if error.code else ""
    return f"{where}{code}{error.message}"


def primary_key(info: TableInfo) -> list[int]:
    """The offsets of the primary key's columns (an int handle has no index of its own)."""
    if info.pk_handle_column is not None:
        return [info.pk_handle_column.offset]
    index = info.primary_index
    return [ic.offset for ic in index.columns] if index is not None else []


def _plain(value: Any) -> Any:
    """A value read from a file, as a SQL literal would give it."""
    if isinstance(value, dt.datetime):  # an instant (a zone given) as UTC, the session's
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
        return value.replace(tzinfo=None).isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bool):
        return int(value)
    return value


def _read(path: Path | None, where: SpecPath) -> str:
    assert path is not None
    try:
        data = path.read_bytes()
    except OSError as e:
        raise SpecError(f"{path}: {e.strerror}", where) from None
    if b"\0" in data:
        raise SpecError(f"{path} is not a SQL script: binary data", where)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise SpecError(f"{path}: not UTF-8 text (byte offset {e.start})", where) from None
