"""INSERT, REPLACE, UPDATE and DELETE compiled once into plans, run per execution.

`compile_dml(engine, node)` resolves the table, compiles every expression and returns
`plan(engine, params_rows)`. `params_rows` holds one parameter list per VALUES row when the
statement came from a shape template (`shapes.py`), or `[[]]` for a statement compiled from
its own parse. Plans hold table references, so the engine drops them on any DDL.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.evaluate import (
    Compiled,
    Context,
    Scope,
    collation_of,
    compare,
    compile_expr,
    sql_text,
    truth,
)
from ticdc_sim.generator.sql.shapes import (
    LITERAL_KINDS,
    Lexed,
    Param,
    literal_value,
    without_introducer,
)
from ticdc_sim.generator.sql.store import Index, collation_key
from ticdc_sim.generator.sql.values import (
    UBIGINT_MAX,
    BatchConverter,
    SqlMode,
    as_text,
    batch_converter,
)
from ticdc_sim.model.mysql import INTEGER_RANGES
from ticdc_sim.model.mysql import MySQLType as M

if TYPE_CHECKING:
    from ticdc_sim.generator.sql.store import TableData
    from ticdc_sim.generator.sql.target import DMLTarget
    from ticdc_sim.model.table import ColumnInfo

Row = tuple[Any, ...]
Plan = Callable[["DMLTarget", list[list[Any]]], None]
_VALUE_ERRORS = (1264, 1406, 1366, 1292, 1265, 1048)
DEFAULT: Any = type("_Default", (), {"__repr__": lambda self: "DEFAULT"})()


def compile_dml(engine: DMLTarget, node: exp.Expr) -> Plan:
    if node.args.get("returning") is not None:  # no plan: Engine.execute says where
        raise SQLError("RETURNING is not TiDB's", code=1064)
    if isinstance(node, exp.Insert):  # ReplaceInto too
        return _compile_insert(engine, node)
    if isinstance(node, exp.Update):
        return _compile_update(engine, node)
    if isinstance(node, exp.Delete):
        return _compile_delete(engine, node)
    raise SQLError(f"unsupported statement: {type(node).__name__}", code=1105)


# -- INSERT / REPLACE --------------------------------------------------------------------------


def _target_columns(table: TableData, node: exp.Insert) -> list[int]:
    target = node.this
    if not isinstance(target, exp.Schema):  # every column but TiDB's hidden ones
        return [i for i, c in enumerate(table.info.columns) if not c.hidden]
    offsets = []
    for ident in target.expressions:
        found = table.scope.columns.get(ident.name.lower())
        if found is None:
            raise SQLError(f"Unknown column '{ident.name}' in 'field list'", code=1054)
        offsets.append(found[0])
    return offsets


def _compile_insert(engine: DMLTarget, node: exp.Insert) -> Plan:
    target = node.this.this if isinstance(node.this, exp.Schema) else node.this
    table = engine.table_data(target)
    offsets = _target_columns(table, node)
    replace_mode = isinstance(node, d.ReplaceInto)
    ignore = bool(node.args.get("ignore"))
    conflict = node.args.get("conflict")
    assignments = _assignments(table, conflict.expressions) if conflict is not None else None
    source = node.expression
    columns = table.info.columns
    reads_row = False
    if isinstance(source, exp.Values):
        # a VALUES item may read columns of the row being built (`VALUES (1, a + 1)`)
        reads_row = source.find(exp.Column) is not None
        rows_fns: list[list[Compiled | None]] = [
            [
                None
                if isinstance(item, exp.Var) and item.name.upper() == "DEFAULT"
                else compile_expr(item, table.scope)
                for item in (tup.expressions if isinstance(tup, exp.Tuple) else [tup])
            ]
            for tup in source.expressions
        ]
    elif isinstance(source, exp.Select | exp.Union):
        select = compile_select(engine, source)
        rows_fns = []
    else:
        raise SQLError("unsupported INSERT source", code=1105)
    nulls = tuple([None] * len(columns))
    listed = set(offsets)
    volatile = {o for o, c in enumerate(columns) if o not in listed and _volatile_default(c)}

    def plan(engine: DMLTarget, params_rows: list[list[Any]]) -> None:
        defaults: dict[int, Any] = {}

        def default_at(offset: int) -> Any:
            # constant defaults (and CURRENT_TIMESTAMP) once per statement, expressions per row
            if offset in defaults:
                return defaults[offset]
            value = engine.default_value(columns[offset])
            if offset not in volatile:
                defaults[offset] = value
            return value

        ctx = Context(
            session=engine,
            row=nulls,
            defaults=default_at,
            division_by_zero_is_error=engine.sql_mode.division_by_zero_is_error,
        )
        base = [
            None
            if offset in listed or columns[offset].generated_expr is not None
            else (DEFAULT if offset in volatile else default_at(offset))
            for offset in range(len(columns))
        ]
        if rows_fns and reads_row:
            start = [None if value is DEFAULT else value for value in base]
            values_rows = (
                (params, _values_reading_row(ctx, fns, offsets, start))
                for params in params_rows
                for fns in rows_fns
                if _set_params(ctx, params)
            )
        elif rows_fns:
            values_rows = (
                (params, [DEFAULT if fn is None else fn(ctx) for fn in fns])
                for params in params_rows
                for fns in rows_fns
                if _set_params(ctx, params)
            )
        else:
            values_rows = ((params, list(row)) for params in params_rows for row in select(params))
        for number, (params, values) in enumerate(values_rows, start=1):
            if not values and rows_fns:
                values = [DEFAULT] * len(offsets)  # `VALUES ()`: every column its default
            if len(values) != len(offsets):
                raise SQLError(f"Column count doesn't match value count at row {number}", code=1136)
            try:
                _insert_row(
                    engine, table, offsets, values, replace_mode, ignore, assignments, params, base
                )
            except SQLError as e:
                if e.code in _VALUE_ERRORS and "at row" not in e.message:
                    raise SQLError(f"{e.message} at row {number}", code=e.code) from None
                raise

    bulk = _bulk_insert(engine, table, node, offsets, ignore, replace_mode, assignments)
    return plan if bulk is None else BulkPlan(plan, bulk)


class BulkPlan:
    """An INSERT plan that can also take a lexed multi-row statement's lexemes directly."""

    def __init__(self, plan: Plan, bulk: Callable[[DMLTarget, Lexed], bool]) -> None:
        self.plan, self.bulk = plan, bulk

    def __call__(self, engine: DMLTarget, params_rows: list[list[Any]]) -> None:
        self.plan(engine, params_rows)


def _read_num(lexeme: str) -> Any:
    return int(lexeme) if lexeme.isdigit() else literal_value("num", lexeme)


def _read_str(lexeme: str) -> Any:
    body = lexeme[1:-1]
    if "\\" in body or lexeme[0] in body:
        return literal_value("str", lexeme)
    return body


# each literal kind's value from its lexeme; the two common kinds without a call to spare
_READERS: dict[str, Callable[[str], Any]] = {
    **{kind: functools.partial(literal_value, kind) for kind in LITERAL_KINDS},
    "num": _read_num,
    "str": _read_str,
}


def _column_batch(
    column: ColumnInfo, kind: str, mode: SqlMode, convert: Callable[[Any], Any]
) -> BatchConverter:
    """One column's literals converted at once: the batch form for its type and literal
    kind, else each by the column's converter. None from the batch sends the statement down
    the row path, which reports any error with its row."""
    batch = batch_converter(column, kind, mode)
    if batch is not None:
        return batch
    plain = batch_converter(column, "str", mode) if kind == "istr" else None
    if plain is not None:  # `N'..'`, `_utf8mb4 '..'`: the string after its introducer
        return lambda lexemes: plain(list(map(without_introducer, lexemes)))
    read = _READERS[kind]

    def each(lexemes: Sequence[str]) -> list[Any] | None:
        try:
            return [convert(read(lexeme)) for lexeme in lexemes]
        except SQLError:
            return None

    return each


def _bulk_insert(
    engine: DMLTarget,
    table: TableData,
    node: exp.Insert,
    offsets: list[int],
    ignore: bool,
    replace_mode: bool,
    assignments: list[Assignment] | None,
) -> Callable[[DMLTarget, Lexed], bool] | None:
    """The fast path of `INSERT ... VALUES (lit, ...), ...` with nothing but literals.

    Each column's converter reads the literal's lexeme directly; the general plan handles
    anything else (expressions, DEFAULT, generated columns, ON DUPLICATE KEY, REPLACE).
    """
    source = node.expression
    if not isinstance(source, exp.Values) or len(source.expressions) != 1:
        return None
    items = source.expressions[0].expressions
    columns = table.info.columns
    if (
        replace_mode
        or assignments is not None
        or table.generated
        or any(_volatile_default(c) for o, c in enumerate(columns) if o not in offsets)
        or not items  # `VALUES ()`: every column its default, the general plan
        or len(items) != len(offsets)
        or not all(isinstance(item, Param) for item in items)
    ):
        return None
    indexes = [item.this for item in items]
    # batch converters by literal kinds and sql_mode (tidb_skip_utf8_check included)
    batches: dict[tuple[Any, ...], list[Any]] = {}

    def run(engine: DMLTarget, lexed: Lexed) -> bool:
        head, width = lexed.head, lexed.width
        positions = [i - head for i in indexes]
        if any(not 0 <= p < width for p in positions):
            return False  # literals outside the row group: the general plan
        kinds = [lexed.literals[head + p][0] for p in positions]
        if not (table.uniques or ignore) and _insert_columns(
            engine, table, lexed, offsets, positions, kinds
        ):
            return True
        return _insert_rows(engine, table, lexed, offsets, positions, kinds, ignore)

    def _insert_columns(
        engine: DMLTarget,
        table: TableData,
        lexed: Lexed,
        offsets: list[int],
        positions: list[int],
        kinds: list[str],
    ) -> bool:
        """All rows column by column; False (nothing written) when a row needs the row path."""
        key = (*kinds, engine.sql_mode)
        if key not in batches:
            batches[key] = [
                _column_batch(columns[o], kind, engine.sql_mode, table.converters[o])
                for o, kind in zip(offsets, kinds, strict=True)
            ]
        lexeme_columns = lexed.columns()
        count = len(lexeme_columns[0])
        base = [engine.default_value(c) for c in columns]
        full: list[list[Any]] = []
        listed = dict(zip(offsets, positions, strict=True))
        converters = batches[key]
        for offset in range(len(columns)):
            if offset in listed:
                values = converters[offsets.index(offset)](lexeme_columns[listed[offset]])
                if values is None:
                    return False
                full.append(values)
            else:
                full.append([base[offset]] * count)
        auto = table.auto_offset
        if auto is not None:
            if auto not in listed:
                full[auto] = engine.allocate(table, count)
            elif None in full[auto] or 0 in full[auto]:
                return False  # ids to allocate between explicit ones: row by row
            else:
                engine.given_ids(table, full[auto])
        engine.require_defaults(table, [column[0] for column in full])
        rows = list(zip(*full, strict=True))
        if table.handle_offsets:
            if len(table.handle_offsets) == 1 and table.int_handle:
                handles: list[Any] = full[table.handle_offsets[0]]
            else:
                handles = [table.handle_of(row) for row in rows]
            if len(set(handles)) != count or not table.rows.keys().isdisjoint(handles):
                return False  # duplicates: the row path reports or skips them in order
        else:
            first = table.take_ids(count)  # `_tidb_rowid`
            handles = list(range(first, first + count))
        engine.write_new(table, handles, rows)
        return True

    return run


def _insert_rows(
    engine: DMLTarget,
    table: TableData,
    lexed: Lexed,
    offsets: list[int],
    positions: list[int],
    kinds: list[str],
    ignore: bool,
) -> bool:
    """Row by row: each column's converter reads its literal's lexeme directly."""
    columns = table.info.columns
    head, width = lexed.head, lexed.width
    converters = table.ignore_converters if ignore else table.converters
    steps = [
        (offset, position, _READERS[kind], converters[offset])
        for offset, position, kind in zip(offsets, positions, kinds, strict=True)
    ]
    listed = set(offsets)
    base = [None if o in listed else engine.default_value(c) for o, c in enumerate(columns)]
    engine.require_defaults(table, base)
    auto = table.auto_offset
    first = tuple(lexeme for _, lexeme in lexed.literals[head : head + width])
    write, rows, uniques = engine.write, table.rows, table.uniques
    for number, lexemes in enumerate((first, *lexed.extra), start=1):
        values = base.copy()
        try:
            for offset, position, read, convert in steps:
                values[offset] = convert(read(lexemes[position]))
            if auto is not None:
                values[auto] = engine.auto_id(table, values[auto])
        except SQLError as e:
            if e.code in _VALUE_ERRORS and "at row" not in e.message:
                raise SQLError(f"{e.message} at row {number}", code=e.code) from None
            raise
        row = tuple(values)
        handle = engine.new_handle(table, row)
        if (table.handle_offsets and handle in rows) or (
            uniques and engine.conflicts(table, handle, row)
        ):
            if ignore:
                continue
            raise engine.duplicate_error(table, handle, row)
        write(table, handle, row)
    return True


def _values_reading_row(
    ctx: Context, fns: list[Compiled | None], offsets: list[int], start: list[Any]
) -> list[Any]:
    """Items left to right, each seeing the columns set before it (others: their defaults)."""
    if len(fns) != len(offsets):
        return [DEFAULT] * len(fns)  # the caller reports the count mismatch
    row = start.copy()
    values = []
    for offset, fn in zip(offsets, fns, strict=True):
        ctx.row = tuple(row)
        value = DEFAULT if fn is None else fn(ctx)
        values.append(value)
        if value is not DEFAULT:
            row[offset] = value
    return values


def _set_params(ctx: Context, params: list[Any]) -> bool:
    ctx.params = params
    return True


def _insert_row(
    engine: DMLTarget,
    table: TableData,
    offsets: list[int],
    values: list[Any],
    replace_mode: bool,
    ignore: bool,
    assignments: list[Assignment] | None,
    params: list[Any],
    base: list[Any],
) -> None:
    """Insert one VALUES row; `base` holds the defaults of the columns not listed (DEFAULT
    where the default is an expression evaluated for every row)."""
    full = base.copy()
    for offset, value in zip(offsets, values):  # noqa: B905 (lengths checked by the caller)
        full[offset] = value
    if DEFAULT in full:
        columns = table.info.columns
        for offset, value in enumerate(full):
            if value is DEFAULT and offset not in offsets:
                full[offset] = engine.default_value(columns[offset])
    if DEFAULT in values or table.generated:
        columns = table.info.columns
        for offset, value in zip(offsets, values):  # noqa: B905
            if value is DEFAULT:
                column = columns[offset]
                full[offset] = (
                    None if column.generated_expr is not None else engine.default_value(column)
                )
            elif columns[offset].generated_expr is not None:
                raise _generated_error(table, offset)
    row = engine.finish_row(table, full, ignore)
    handle = engine.new_handle(table, row)
    conflicts = engine.conflicts(table, handle, row)
    if not conflicts:
        engine.write(table, handle, row)
    elif replace_mode:
        if conflicts == [handle] and table.rows[handle] == row:
            return  # the same row again: TiDB writes nothing (executor/replace.go removeRow)
        for other in conflicts:
            engine.write(table, other, None)
        engine.write(table, handle, row)
    elif assignments is not None:
        existing = conflicts[0]
        try:
            updates = _Updates(engine, table, assignments, params, ignore)
            if _update_row(engine, table, existing, table.rows[existing], updates, row):
                engine.affected_adjust += 1  # an updated row counts 2 (MySQL)
            elif engine.found_rows:
                engine.affected_adjust += 1  # an unchanged one 1, with CLIENT_FOUND_ROWS
        except SQLError as e:  # IGNORE turns the update's own duplicate into a warning
            if not (ignore and e.code == 1062):
                raise
    elif not ignore:
        raise engine.duplicate_error(table, handle, row)


def _volatile_default(column: ColumnInfo) -> bool:
    """An expression default (NEXT VALUE FOR, UUID() ...) is evaluated anew for every row."""
    return column.default is not None and column.default.kind not in ("literal", "null", "now")


def _generated_error(table: TableData, offset: int) -> SQLError:
    return SQLError(
        f"The value specified for generated column '{table.info.columns[offset].name}' "
        f"in table '{table.info.name}' is not allowed.",
        code=3105,
    )


# -- UPDATE / DELETE ---------------------------------------------------------------------------


Assignment = tuple[int, Compiled, bool]  # (column offset, value, constant for a statement)


def _assignments(table: TableData, items: list[exp.Expr]) -> list[Assignment]:
    out = []
    for item in items:
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
            raise SQLError(f"unsupported assignment: {sql_text(item)}", code=1105)
        offset, _ = table.scope.resolve(item.this)
        value = item.expression
        if isinstance(value, exp.Var) and value.name.upper() == "DEFAULT":
            value = d.DefaultOf(this=item.this.copy())
        constant = isinstance(value, Param | exp.Literal) or (
            isinstance(value, exp.Neg) and isinstance(value.this, Param | exp.Literal)
        )
        out.append((offset, compile_expr(value, table.scope), constant))
    return out


class _Updates:
    """One execution's SET: a constant's converted value is computed once, for its first row
    (so a value error still needs a row to happen), and every row reuses one Context.
    Under IGNORE (INSERT IGNORE ... ON DUPLICATE KEY UPDATE) values are converted as in a
    non-strict sql_mode: TiDB's statement context turns overflow and truncation into
    warnings for the whole statement."""

    def __init__(
        self,
        engine: DMLTarget,
        table: TableData,
        assignments: list[Assignment],
        params: list[Any],
        ignore: bool = False,
    ) -> None:
        columns = table.info.columns
        self.converters = table.ignore_converters if ignore else table.converters
        self.assignments = assignments
        self.assigned = {offset for offset, _, _ in assignments}
        self.constants: dict[int, Any] = {}  # by assignment index
        self.ctx = Context(
            session=engine,
            defaults=lambda o: engine.default_value(columns[o]),
            params=params,
            division_by_zero_is_error=engine.sql_mode.division_by_zero_is_error,
        )

    def apply(self, table: TableData, old: Row, inserted: Row) -> list[Any]:
        """The row after every assignment, left to right, each seeing the ones before."""
        columns = table.info.columns
        converters = self.converters
        ctx = self.ctx
        ctx.row, ctx.inserted = old, inserted
        values = list(old)
        constants = self.constants
        changed = False  # ctx.row is behind `values`
        for number, (offset, fn, constant) in enumerate(self.assignments):
            if columns[offset].generated_expr is not None:
                raise _generated_error(table, offset)
            if constant:
                if number not in constants:
                    constants[number] = converters[offset](fn(ctx))
                values[offset] = constants[number]
            else:
                if changed:
                    ctx.row = tuple(values)
                values[offset] = converters[offset](fn(ctx))
            changed = True
        return values


def _update_row(
    engine: DMLTarget,
    table: TableData,
    handle: Any,
    old: Row,
    updates: _Updates,
    inserted: Row = (),
) -> bool:
    """Apply one execution's SET to a row; False if it leaves the row unchanged."""
    columns = table.info.columns
    converters = updates.converters
    values = updates.apply(table, old, inserted)
    assigned = updates.assigned
    for offset, fn in table.generated:
        values[offset] = converters[offset](fn(Context(session=engine, row=tuple(values))))
    new = tuple(values)
    if new == old:
        return False
    if table.on_update:
        for offset in table.on_update:
            if offset not in assigned:
                values[offset] = converters[offset](engine.now(max(columns[offset].decimal, 0)))
        new = tuple(values)
    auto = table.auto_offset
    if auto is not None and auto in assigned and values[auto] is not None:
        engine.observe_id(table, values[auto])
    offsets = table.handle_offsets
    if not offsets or all(new[o] == old[o] for o in offsets):
        new_handle = handle  # the key columns as they were (generated ones included)
    else:
        new_handle = table.handle_of(new)
    if new_handle != handle and new_handle in table.rows:
        raise engine.duplicate_error(table, new_handle, new)
    for unique in table.uniques:
        key = unique.key(new)
        if key is not None:
            other = unique.entries.get(key)
            if other is not None and other != handle:
                raise engine.unique_error(table, unique, new)
    if new_handle != handle:
        engine.write(table, handle, None)
        engine.affected_adjust -= 1  # two writes, one row
    engine.write(table, new_handle, new)
    return True


Matcher = Callable[["DMLTarget", list[Any]], list[tuple[Any, Row]]]


def _compile_matcher(engine: DMLTarget, table: TableData, node: exp.Expr) -> Matcher:
    """Rows a WHERE / ORDER BY / LIMIT selects, in the order the statement visits them."""
    where = node.args.get("where")
    condition = compile_expr(where.this, table.scope) if where is not None else None
    access = _compile_access(table, where.this) if where is not None else None
    order = node.args.get("order")
    sort = compile_order(table.scope, order) if order is not None else None
    limit, offset = node.args.get("limit"), node.args.get("offset")
    if offset is not None and not isinstance(node, exp.Select):
        raise SQLError(_row_count_error("OFFSET", "a row count of UPDATE or DELETE"), code=1064)
    limit_fn = compile_expr(limit.expression, Scope()) if limit is not None else None
    offset_fn = compile_expr(offset.expression, Scope()) if offset is not None else None
    key_of = engine.key_order
    exclusive = _lock_mode(node)
    writes = isinstance(node, exp.Update | exp.Delete)
    # a point lookup through a unique index locks the index entry too
    via = access.index if isinstance(access, _Access) and access.point else None

    def match(engine: DMLTarget, params: list[Any]) -> list[tuple[Any, Row]]:
        ctx = Context(session=engine, params=params)
        handles = access.handles(ctx) if access is not None else None
        if handles is None:
            rows: Iterable[tuple[Any, Row]] = table.rows.items()
        else:
            get = table.rows.get
            rows = [(handle, row) for handle in handles if (row := get(handle)) is not None]
        if exclusive is not None:
            if via is not None:  # the index entry first, then the row (InnoDB's order)
                engine.lock_entries(table, via, [row for _, row in rows], exclusive)
            if len(engine.active) > 1:

                def hits(row: Row) -> bool:
                    ctx.row = row
                    return condition is None or bool(truth(condition(ctx)))

                engine.check_images(table, hits)
        matched = []
        for handle, row in rows:
            if condition is not None:
                ctx.row = row
                if not truth(condition(ctx)):
                    continue
            matched.append((handle, row))
        if sort is not None:
            matched = sort(engine, matched, params)
        elif len(matched) > 1:
            matched.sort(key=lambda hr: key_of(hr[0]))  # TiDB scans in key order
        if limit_fn is not None or offset_fn is not None:
            start = row_count(offset_fn(ctx), "OFFSET") if offset_fn is not None else 0
            count = row_count(limit_fn(ctx), "LIMIT") if limit_fn is not None else None
            matched = matched[start : None if count is None else start + count]
        if exclusive is not None:
            engine.lock_rows(table, matched, exclusive, writes)
        return matched

    return match


def _lock_mode(node: exp.Expr) -> bool | None:
    """How a statement locks the rows it matches: exclusive (UPDATE, DELETE, FOR
    UPDATE), shared (LOCK IN SHARE MODE, FOR SHARE) or not at all (a plain read)."""
    if isinstance(node, exp.Update | exp.Delete):
        return True
    locks = node.args.get("locks")
    if isinstance(node, exp.Select) and locks:
        return any(lock.args.get("update") for lock in locks)
    return None


def row_count(value: Any, clause: str) -> int:
    """LIMIT and OFFSET take an unsigned integer literal (TiDB's grammar: LengthNum)."""
    if type(value) is not int or not 0 <= value <= UBIGINT_MAX:
        raise SQLError(_row_count_error(clause, f"'{as_text(value)}'"), code=1064)
    return value


def _row_count_error(clause: str, found: str) -> str:
    return (
        "You have an error in your SQL syntax; check the manual that corresponds to your TiDB"
        f" version for the right syntax to use near '{clause}' ({clause} takes an unsigned"
        f" integer, not {found})"
    )


# -- access paths: which rows a WHERE can only match -----------------------------------------
#
# A WHERE's conjunction pins index columns with `=`, `IN` and ranges; the index that pins the
# most columns gives the candidate rows, and the whole condition is still applied to each. So
# a candidate set only has to be a superset: constants are converted to the column's type
# (which may round), bounds are taken inclusive after that, and a constant of another kind
# than the column's (a string against a number, a float against an integer, which MySQL
# compares as doubles) leaves the index unused.

_INTEGERS = frozenset(INTEGER_RANGES)
_PLAIN_STRINGS = frozenset(
    {M.VARCHAR, M.STRING, M.VAR_STRING, M.TINY_BLOB, M.BLOB, M.MEDIUM_BLOB, M.LONG_BLOB}
)
_TIMES = frozenset({M.DATE, M.DATETIME, M.TIMESTAMP})


def _constant_kinds(column: ColumnInfo) -> tuple[type, ...]:
    """Python types of constants an index on `column` can look up; () for none."""
    if column.tp in _INTEGERS or column.tp == M.NEWDECIMAL:
        return (int, Decimal)
    if column.tp in (M.FLOAT, M.DOUBLE):
        return (int, Decimal, float)
    if column.tp in _PLAIN_STRINGS:
        return (str, bytes) if column.charset == "binary" else (str,)
    if column.tp in _TIMES:
        return (str,)
    return ()


def _orderable(column: ColumnInfo) -> bool:
    """Keys in the order the column compares in: numbers and times (not strings, whose
    collations and PAD SPACE order differently from Python's)."""
    return (
        column.tp in _INTEGERS
        or column.tp in _TIMES
        or column.tp
        in (
            M.NEWDECIMAL,
            M.FLOAT,
            M.DOUBLE,
        )
    )


class _Terms:
    """The `column op constant` terms of a conjunction, by column offset."""

    def __init__(self, table: TableData, condition: exp.Expr) -> None:
        self.equal: dict[int, exp.Expr] = {}
        self.within: dict[int, list[exp.Expr]] = {}  # IN lists
        self.low: dict[int, list[exp.Expr]] = {}
        self.high: dict[int, list[exp.Expr]] = {}
        terms = condition.flatten() if isinstance(condition, exp.And) else [condition]
        for term in terms:
            self._add(table, term.unnest())

    def _add(self, table: TableData, term: exp.Expr) -> None:
        if isinstance(term, exp.Between):
            offset = _column_offset(table, term.this)
            low, high = term.args.get("low"), term.args.get("high")
            if offset is not None and _constant(low) and _constant(high):
                self.low.setdefault(offset, []).append(low)
                self.high.setdefault(offset, []).append(high)
            return
        if isinstance(term, exp.In):
            offset = _column_offset(table, term.this)
            items = term.expressions
            constant = all(_constant(item) for item in items)
            if offset is not None and items and constant and not term.args.get("query"):
                self.within[offset] = items
            return
        if not isinstance(term, exp.EQ | exp.GT | exp.GTE | exp.LT | exp.LTE):
            return
        for column, value, flipped in (
            (term.this, term.expression, False),
            (term.expression, term.this, True),
        ):
            offset = _column_offset(table, column)
            if offset is None or not _constant(value):
                continue
            if isinstance(term, exp.EQ):
                self.equal[offset] = value
            elif isinstance(term, exp.GT | exp.GTE) != flipped:
                self.low.setdefault(offset, []).append(value)
            else:
                self.high.setdefault(offset, []).append(value)
            return


def _column_offset(table: TableData, node: exp.Expr | None) -> int | None:
    if not isinstance(node, exp.Column):
        return None
    found = table.scope.columns.get(node.name.lower())
    return found[0] if found is not None else None


def _constant(node: exp.Expr | None) -> TypeGuard[exp.Expr]:
    return node is not None and node.find(exp.Column, exp.Select) is None


class _Access:
    """Candidate handles from one index: equality on its first columns, then `IN` or a
    range on the next one."""

    def __init__(
        self, table: TableData, index: Index | None, offsets: tuple[int, ...], terms: _Terms
    ) -> None:
        columns = table.info.columns
        self.table, self.index = table, index
        self.equal: list[tuple[int, Compiled]] = []
        for offset in offsets:
            if offset not in terms.equal or not _constant_kinds(columns[offset]):
                break
            self.equal.append((offset, compile_expr(terms.equal[offset], Scope())))
        self.point = len(self.equal) == len(offsets) and (index is None or index.unique)
        self.within: list[Compiled] = []
        self.low: list[Compiled] = []
        self.high: list[Compiled] = []
        self.next: int | None = None
        if not self.point and len(self.equal) < len(offsets):
            offset = offsets[len(self.equal)]
            column = columns[offset]
            if offset in terms.within and _constant_kinds(column):
                self.next = offset
                self.within = [compile_expr(n, Scope()) for n in terms.within[offset]]
            elif (offset in terms.low or offset in terms.high) and _orderable(column):
                self.next = offset
                self.low = [compile_expr(n, Scope()) for n in terms.low.get(offset, [])]
                self.high = [compile_expr(n, Scope()) for n in terms.high.get(offset, [])]
        self.width = len(self.equal) + (self.next is not None)

    def rank(self) -> tuple[bool, int, int, bool]:
        """Point lookups first, then the most columns pinned by equality, then by anything,
        then the handle; ties go to the index listed first."""
        return (self.point, len(self.equal), self.width, self.index is None)

    def _key(self, offset: int, value: Any) -> Any:
        """A constant as the index holds it; raises _Unusable when it cannot stand for it."""
        column = self.table.info.columns[offset]
        if (
            value is None
            or not isinstance(value, _constant_kinds(column))
            or isinstance(value, bool)
        ):
            raise _Unusable
        if isinstance(value, float) and column.tp not in (M.FLOAT, M.DOUBLE):
            raise _Unusable
        try:
            stored = self.table.converters[offset](value)
        except SQLError:
            raise _Unusable from None
        if self.index is None:
            return stored if self.table.int_handle else collation_key(stored, column.collation, -1)
        at = self.index.offsets.index(offset)
        return collation_key(stored, self.index.collations[at], self.index.lengths[at])

    def handles(self, ctx: Context) -> list[Any] | None:
        """Candidate handles, or None when the constants do not allow the index."""
        table = self.table
        try:
            prefix = tuple(self._key(offset, fn(ctx)) for offset, fn in self.equal)
            if self.point:
                if self.index is not None:
                    found = self.index.entries.get(prefix)
                    return [] if found is None else [found]
                handle = prefix[0] if table.int_handle else prefix
                return [handle] if handle in table.rows else []
            if self.next is None:
                return list(table.scan(self.index, (prefix, True), (prefix, True)))
            offset = self.next
            if self.within:
                keys = sorted({self._key(offset, fn(ctx)) for fn in self.within})
                found = []
                for key in keys:
                    bound = ((*prefix, key), True)
                    found.extend(table.scan(self.index, bound, bound))
                return found
            lows = [self._key(offset, fn(ctx)) for fn in self.low]
            highs = [self._key(offset, fn(ctx)) for fn in self.high]
        except _Unusable:
            return None
        low = ((*prefix, max(lows)), True) if lows else ((prefix, True) if prefix else None)
        high = ((*prefix, min(highs)), True) if highs else ((prefix, True) if prefix else None)
        if lows and highs and max(lows) > min(highs):
            return []
        return list(table.scan(self.index, low, high))


class _Unusable(Exception):
    """A constant the index cannot look up (the caller scans instead)."""


def _compile_access(table: TableData, condition: exp.Expr) -> _Access | _Union | None:
    """The best index for a WHERE, or None to scan every row."""
    condition = condition.unnest()
    if isinstance(condition, exp.Or):
        return _Union.of(table, condition)
    terms = _Terms(table, condition)
    choices = [_Access(table, None, table.handle_offsets, terms)] if table.handle_offsets else []
    choices += [_Access(table, index, index.offsets, terms) for index in table.indexes]
    usable = [choice for choice in choices if choice.width]
    best = max(usable, key=_Access.rank) if usable else None
    if (best is not None and best.point) or not isinstance(condition, exp.And):
        return best
    for conjunct in condition.flatten():  # `(a = 1 OR a = 2) AND ...`: the OR's rows
        inner = conjunct.unnest()
        union = _Union.of(table, inner) if isinstance(inner, exp.Or) else None
        if union is not None and (best is None or union.points):
            return union
    return best


class _Union:
    """Candidate handles of an OR: the union of each disjunct's (ORMs' `id = 1 OR id = 2
    ...` is a set of point lookups); only when every disjunct has an access path."""

    def __init__(self, parts: list[_Access | _Union]) -> None:
        self.parts = parts
        # point lookups only: preferred to any range of the other conjuncts
        self.points = all(isinstance(p, _Access) and p.point for p in parts)

    @classmethod
    def of(cls, table: TableData, condition: exp.Or) -> _Union | None:
        parts = []
        for disjunct in condition.flatten():
            access = _compile_access(table, disjunct)
            if access is None:
                return None
            parts.append(access)
        return cls(parts)

    def handles(self, ctx: Context) -> list[Any] | None:
        found: dict[Any, None] = {}
        for part in self.parts:
            handles = part.handles(ctx)
            if handles is None:
                return None
            found.update(dict.fromkeys(handles))
        return list(found)


def compile_order(
    scope: Scope, order: exp.Order
) -> Callable[[DMLTarget, list[tuple[Any, Row]], list[Any]], list[tuple[Any, Row]]]:
    keys = [
        (
            _sort_value(o.this, scope),
            bool(o.args.get("desc")),
            collation_of(o.this, scope).endswith("_ci"),
        )
        for o in order.expressions
    ]

    how = [(desc, ci) for _, desc, ci in keys]

    def sort(
        engine: DMLTarget, rows: list[tuple[Any, Row]], params: list[Any]
    ) -> list[tuple[Any, Row]]:
        ctx = Context(session=engine, params=params)
        values = []
        for _, row in rows:
            ctx.row = row
            values.append([fn(ctx) for fn, _, _ in keys])
        return ordered(rows, values, how)

    return sort


T = TypeVar("T")


def ordered(items: list[T], values: list[list[Any]], how: list[tuple[bool, bool]]) -> list[T]:
    """`items` sorted by their ORDER BY `values`, each key's `how` (descending, case
    insensitive) as MySQL sorts: NULLs first ascending; ties keep their order."""

    def cmp(a: int, b: int) -> int:
        for (desc, ci), x, y in zip(how, values[a], values[b], strict=True):
            if x is None or y is None:
                result = (x is not None) - (y is not None)  # NULLs first ascending
            else:
                result = compare(x, y, ci) or 0
            if result:
                return -result if desc else result
        return 0

    return [items[i] for i in sorted(range(len(items)), key=functools.cmp_to_key(cmp))]


def _sort_value(node: exp.Expr, scope: Scope) -> Compiled:
    """What ORDER BY sorts on: ENUM and SET columns by number, TIME by duration."""
    fn = compile_expr(node, scope)
    if isinstance(node, exp.Column):
        by = scope.order_keys.get(scope.resolve(node)[0])
        if by is not None:
            return lambda ctx: by(fn(ctx))
    return fn


def _single_table(engine: DMLTarget, node: exp.Expr, verb: str, *joins: str) -> TableData:
    """The one table an UPDATE or DELETE works on; multi-table forms are refused."""
    target = node.this
    # sqlglot hangs `UPDATE a JOIN b ...` and `UPDATE a, b ...` on the table, not the statement
    if (
        not isinstance(target, exp.Table)
        or target.args.get("joins")
        or any(node.args.get(key) for key in joins)
    ):
        raise SQLError(f"multi-table {verb} is not supported", code=1105)
    return engine.table_data(target)


def _compile_update(engine: DMLTarget, node: exp.Update) -> Plan:
    table = _single_table(engine, node, "UPDATE", "from_", "joins")
    assignments = _assignments(table, node.expressions)
    match = _compile_matcher(engine, table, node)

    def plan(engine: DMLTarget, params_rows: list[list[Any]]) -> None:
        for params in params_rows:
            updates = _Updates(engine, table, assignments, params)
            for handle, _ in match(engine, params):
                current = table.rows.get(handle)
                changed = current is not None and _update_row(
                    engine, table, handle, current, updates
                )
                if not changed and engine.found_rows:
                    engine.affected_adjust += 1  # matched, with CLIENT_FOUND_ROWS

    return plan


def _compile_delete(engine: DMLTarget, node: exp.Delete) -> Plan:
    table = _single_table(engine, node, "DELETE", "using", "tables")
    match = _compile_matcher(engine, table, node)

    def plan(engine: DMLTarget, params_rows: list[list[Any]]) -> None:
        for params in params_rows:
            for handle, _ in match(engine, params):
                engine.write(table, handle, None)

    return plan


# -- SELECT as an INSERT source ----------------------------------------------------------------


# the parts of a SELECT the engine does not evaluate: refused, never ignored (an ignored
# DISTINCT or HAVING answered, and INSERT ... SELECT wrote, rows TiDB would not)
UNSUPPORTED_CLAUSES = {
    "with_": "WITH (a common table expression)",
    "distinct": "SELECT DISTINCT",
    "joins": "a join",
    "laterals": "LATERAL",
    "group": "GROUP BY",
    "having": "HAVING",
    "windows": "WINDOW",
    "qualify": "QUALIFY",
}


GROUPING_CLAUSES = frozenset({"distinct", "group", "having"})


def select_source(node: exp.Expr, grouped: bool = False) -> exp.From | None:
    """A SELECT's FROM, or None for constants alone (no FROM, or FROM DUAL); a SELECT of
    more than one table, or with a clause the engine does not evaluate, is refused (DISTINCT,
    GROUP BY and HAVING are a query's, `grouped`: grouping.py)."""
    if not isinstance(node, exp.Select):
        raise SQLError(f"{node.key.upper()} is not supported here, only SELECT", code=1105)
    for clause, name in UNSUPPORTED_CLAUSES.items():
        if node.args.get(clause) and not (grouped and clause in GROUPING_CLAUSES):
            where = (
                "in INSERT ... SELECT"
                if clause in GROUPING_CLAUSES
                else "(single-table SELECT only)"
            )
            raise SQLError(f"{name} is not supported here {where}", code=1105)
    from_ = node.args.get("from_")
    table = from_.this if from_ is not None else None
    if from_ is not None and not isinstance(table, exp.Table):
        raise SQLError(
            "a subquery in FROM is not supported here (single-table SELECT only)", code=1105
        )
    if isinstance(table, exp.Table) and not table.text("db") and table.name.upper() == "DUAL":
        return None
    return from_


def unaliased(node: exp.Select) -> exp.Select:
    """A single-table SELECT with its table's alias read as the table's name (`FROM t AS x
    WHERE x.a = 1` as `FROM t WHERE t.a = 1`, as ORMs write subqueries), so that the one
    scope of the table answers it."""
    from_ = node.args.get("from_")
    table = from_.this if from_ is not None else None
    if node.args.get("joins") or not isinstance(table, exp.Table) or not table.alias:
        return node
    alias, name = table.alias.lower(), table.name.lower()
    node = node.copy()
    table = node.args["from_"].this
    table.set("alias", None)
    # the query's own columns: a subquery's are read in its own scope (subquery.py)
    own = node.walk(prune=lambda n: n is not node and isinstance(n, exp.Select | exp.Subquery))
    for column in (n for n in own if isinstance(n, exp.Column)):
        qualifier = column.table.lower()
        if qualifier == name and name != alias:  # the alias hides the table's name
            if isinstance(column.this, exp.Star):
                raise SQLError(f"Unknown table '{column.table}'", code=1051)
            raise SQLError(f"Unknown column '{sql_text(column)}' in 'field list'", code=1054)
        if qualifier == alias:
            column.set("table", exp.to_identifier(table.name))
    return node


def compile_select(engine: DMLTarget, node: exp.Expr) -> Callable[[list[Any]], list[Row]]:
    """A single-table (or table-less) SELECT, evaluated to a snapshot of rows."""
    if isinstance(node, exp.Select):
        node = unaliased(node)
    from_ = select_source(node)
    assert isinstance(node, exp.Select)  # select_source refused the rest
    if from_ is None:
        constants = [
            compile_expr(e.this if isinstance(e, exp.Alias) else e, Scope())
            for e in node.expressions
        ]

        def constant_row(params: list[Any]) -> list[Row]:
            ctx = Context(session=engine, params=params)
            return [tuple(fn(ctx) for fn in constants)]

        return constant_row
    source = from_.this
    assert isinstance(source, exp.Table)  # select_source refused the rest
    table = engine.read_table(source)
    projections = [
        row_item(at) if at is not None else compile_expr(e.unalias(), table.scope)
        for e, at in select_items(node, table)
    ]
    match = _compile_matcher(engine, table, _select_order(node, table))

    def rows(params: list[Any]) -> list[Row]:
        ctx = Context(session=engine, params=params)
        snapshot = []
        for _, row in match(engine, params):
            ctx.row = row
            snapshot.append(tuple(p(ctx) for p in projections))
        return snapshot

    return rows


def select_items(node: exp.Select, table: TableData) -> list[tuple[exp.Expr, int | None]]:
    """The select list of a single-table SELECT, `*` and `t.*` as the table's visible
    columns (TiDB `unfoldWildStar`), each with the offset in the row of the column it is
    (None for the rest). A bare `*` after the first item is TiDB's error 8122."""
    out: list[tuple[exp.Expr, int | None]] = []
    for i, item in enumerate(node.expressions):
        if isinstance(item, exp.Star) and i > 0:
            message = "Wildcard fields without any table name appears in wrong place"
            raise SQLError(message, code=8122)
        if not is_star(item):
            out.append((item, None))
            continue
        if isinstance(item, exp.Column) and item.table.lower() != table.info.name.lower():
            raise SQLError(f"Unknown table '{item.table}'", code=1051)
        out += [
            (exp.column(c.name, quoted=True), at)
            for at, c in enumerate(table.info.columns)
            if not c.hidden
        ]
    return out


def is_star(item: exp.Expr) -> bool:
    """`*` or `t.*`."""
    return isinstance(item, exp.Star) or (
        isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
    )


def where_rows(engine: DMLTarget, table: TableData, node: exp.Select) -> list[Row]:
    """The rows of `table` a SELECT's WHERE keeps (locked as the SELECT asks), in key
    order: what grouping.py groups."""
    plain = node.copy()
    for clause in ("order", "limit", "offset"):
        plain.set(clause, None)
    return [row for _, row in _compile_matcher(engine, table, plain)(engine, [])]


def _select_order(node: exp.Select, table: TableData) -> exp.Select:
    """A SELECT's ORDER BY as MySQL reads it: a number is the select list's item at that
    position (1054 past its end), a name an item's alias before a column (MySQL searches
    the select list first)."""
    order = node.args.get("order")
    if order is None:
        return node
    items: list[exp.Expr] = []
    for e in node.expressions:
        if isinstance(e, exp.Star):
            items += [exp.column(c.name, quoted=True) for c in table.info.columns if not c.hidden]
        else:
            items.append(e.unalias())
    order = order_by_items(node, order, items)
    resolved = node.copy()
    resolved.set("order", order)
    return resolved


def order_by_items(node: exp.Select, order: exp.Order, items: list[exp.Expr]) -> exp.Order:
    """`order` with a number read as the select list's item at that position (1054 past its
    end) and a bare name as an item's alias before a column (MySQL searches the select list
    first); `items` are the select list's expressions, `*` expanded."""
    aliases = {e.alias.lower(): e.this for e in node.expressions if isinstance(e, exp.Alias)}
    order = order.copy()
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int:
            if not 1 <= int(key.name) <= len(items):
                raise SQLError(f"Unknown column '{key.name}' in 'order clause'", code=1054)
            ordered.set("this", items[int(key.name) - 1].copy())
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliases:
            ordered.set("this", aliases[key.name.lower()].copy())
    return order


def limited(node: exp.Select, current: list[Row], ctx: Context) -> list[Row]:
    """`current` cut by the SELECT's LIMIT and OFFSET."""
    limit, offset = node.args.get("limit"), node.args.get("offset")
    start = row_count(compile_expr(offset.expression, Scope())(ctx), "OFFSET") if offset else 0
    if limit is None:
        return current[start:]
    count = row_count(compile_expr(limit.expression, Scope())(ctx), "LIMIT")
    return current[start : start + count]


def row_item(index: int) -> Compiled:
    return lambda ctx: ctx.row[index]
