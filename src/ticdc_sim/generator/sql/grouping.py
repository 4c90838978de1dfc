"""SELECTs that group: GROUP BY, HAVING, DISTINCT and aggregates, over the rows a query reads
(one table's, or a join's, after WHERE).

As TiDB's planner builds them (pkg/planner/core/logical_plan_builder.go `buildAggregation`,
`resolveHavingAndOrderBy`): the rows are grouped by their GROUP BY values (all of them one
group when there are aggregates and no GROUP BY, each row its own group without either);
each group's aggregates are folded (aggregate.py's folds), and the select list, HAVING and
ORDER BY are evaluated on the group: an aggregate as its folded value, a column as the
group's first row holds it (TiDB's `firstrow`). DISTINCT then keeps the first of equal
result rows, and ORDER BY and LIMIT apply last. Groups come in the order their first rows
were read (TiDB's is its hash aggregation's: a client that needs an order says ORDER BY).

Under ONLY_FULL_GROUP_BY (TiDB's default) a column outside GROUP BY that no unique key of
its table in GROUP BY determines is error 1055 (`checkOnlyFullGroupByWithGroupClause`), and
an ORDER BY of a column DISTINCT drops is error 3065.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.aggregate import AGGREGATES, Aggregate
from ticdc_sim.generator.sql.dml import limited, order_by_items, ordered
from ticdc_sim.generator.sql.evaluate import (
    Compiled,
    Context,
    Scope,
    collation_of,
    compile_expr,
    sql_text,
    string_key,
    truth,
)
from ticdc_sim.generator.sql.shapes import Param
from ticdc_sim.model.mysql import TiDBFlag
from ticdc_sim.model.table import TableInfo

if TYPE_CHECKING:
    from ticdc_sim.generator.sql.target import DMLTarget

Row = tuple[Any, ...]


@dataclass(frozen=True)
class Read:
    """What a grouped SELECT reads: the rows its WHERE kept, the scope its expressions
    resolve in, each table with the place of its first column in a row, and the select list
    (`*` as its columns)."""

    scope: Scope
    rows: list[Row]
    tables: list[tuple[str, int, TableInfo]]  # alias, first column's place, table
    items: list[exp.Expr]


def is_grouped(node: exp.Select) -> bool:
    clauses = ("group", "having", "distinct")
    return any(node.args.get(c) for c in clauses) or aggregates(node)


def aggregates(node: exp.Select) -> bool:
    """Whether the select list or ORDER BY calls an aggregate (one in WHERE is error 1111,
    evaluate.py's)."""
    order = node.args.get("order")
    found = [*node.expressions, *(order.expressions if order else [])]
    return any(e.find(exp.AggFunc) is not None for e in found)


def answer(engine: DMLTarget, node: exp.Select, read: Read) -> list[Row]:
    """The SELECT's rows (see the module's docstring)."""
    _refuse_unsupported(node)
    group = _group_by(node, read)
    order = node.args.get("order")
    order_items = order_by_items(node, order, read.items).expressions if order else []
    if group and "ONLY_FULL_GROUP_BY" in engine.sql_mode.names:
        raw_order = order.expressions if order else []
        _check_full_group_by(node, read, group, [o.this for o in raw_order])
    distinct = bool(node.args.get("distinct"))
    if distinct and order_items:
        _check_distinct_order(read, order_items)
    folds = _Folds(read.scope)
    items = [_compiled(folds, e, read.scope) for e in read.items]
    having = node.args.get("having")
    if having is not None:
        _check_having(node, read, group, having.this)
    condition = _compiled(folds, _aliased(node, having.this), read.scope) if having else None
    keys = [_compiled(folds, o.this, read.scope) for o in order_items]
    how = [
        (bool(o.args.get("desc")), collation_of(o.this, read.scope).endswith("_ci"))
        for o in order_items
    ]
    ctx = Context(session=engine)
    out: list[Row] = []
    sort_values: list[list[Any]] = []
    seen: set[tuple[Any, ...]] = set()
    nulls = (None,) * _width(read)  # the row of a group of none
    for rows in _groups(engine, read, group, folds):
        ctx.params = folds.fold(ctx, rows)
        ctx.row = rows[0] if rows else nulls
        if condition is not None and not truth(condition(ctx)):
            continue
        result = tuple(fn(ctx) for fn in items)
        if distinct:
            key = tuple(_group_key(v, False) for v in result)
            if key in seen:
                continue
            seen.add(key)
        out.append(result)
        sort_values.append([fn(ctx) for fn in keys])
    if keys:
        out = ordered(out, sort_values, how)
    return limited(node, out, ctx)


def _refuse_unsupported(node: exp.Select) -> None:
    """What is not folded here is refused by name, never taken for a plain expression."""
    found = node.args.get("group")
    if found is not None and any(found.args.get(k) for k in ("rollup", "cube", "grouping_sets")):
        raise SQLError("GROUP BY ... WITH ROLLUP is not supported here", code=1105)
    for call in node.find_all(exp.AggFunc):
        if type(call) not in AGGREGATES:
            name = call.sql_name() if not isinstance(call, exp.GroupConcat) else "GROUP_CONCAT"
            raise SQLError(f"the aggregate {name} is not supported here", code=1105)


class _Folds:
    """The aggregates a query names (each call once, however often written), their
    arguments compiled, and their values per group as the `Param`s that stand for them."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.index: dict[str, int] = {}
        self.calls: list[tuple[list[Compiled], bool, Aggregate]] = []

    def rewrite(self, node: exp.Expr) -> exp.Expr:
        """`node` with each aggregate call as the Param of its value."""
        return node.copy().transform(self._replace)

    def _replace(self, node: exp.Expr) -> exp.Expr:
        fold = AGGREGATES.get(type(node))
        if fold is None:
            return node
        argument = node.this
        if argument is not None and any(argument.find_all(*AGGREGATES)):
            raise SQLError("Invalid use of group function", code=1111)
        text = node.sql()
        if text not in self.index:
            distinct = isinstance(argument, exp.Distinct)
            if distinct:
                arguments = list(argument.expressions)
            elif isinstance(argument, exp.Star) or argument is None:
                arguments = [exp.Literal.number(1)]  # COUNT(*): every row
            else:
                arguments = [argument]
            compiled = [compile_expr(a, self.scope) for a in arguments]
            self.index[text] = len(self.calls)
            self.calls.append((compiled, distinct, fold))
        return Param(this=self.index[text])

    def fold(self, ctx: Context, rows: list[Row]) -> list[Any]:
        values: list[Any] = []
        for arguments, distinct, fold in self.calls:
            column: list[Any] = []
            for row in rows:
                ctx.row = row
                found = [fn(ctx) for fn in arguments]
                # COUNT(DISTINCT a, b) counts the rows where none is NULL
                column.append(found[0] if len(found) == 1 else _row_value(found))
            if distinct:
                column = list({_group_key(v, False): v for v in column}.values())
            values.append(fold(column))
        return values


def _row_value(values: list[Any]) -> tuple[Any, ...] | None:
    return None if any(v is None for v in values) else tuple(values)


def _compiled(folds: _Folds, node: exp.Expr, scope: Scope) -> Compiled:
    return compile_expr(folds.rewrite(node.unalias()), scope)


def _groups(
    engine: DMLTarget, read: Read, group: list[exp.Expr], folds: _Folds
) -> Iterator[list[Row]]:
    """The rows of each group, in the order their first rows were read."""
    if not group:
        if folds.calls:
            yield read.rows  # one group, even of no row
        else:
            yield from ([row] for row in read.rows)
        return
    keys = [
        (compile_expr(e, read.scope), collation_of(e, read.scope).endswith("_ci")) for e in group
    ]
    ctx = Context(session=engine)
    groups: dict[tuple[Any, ...], list[Row]] = {}
    for row in read.rows:
        ctx.row = row
        key = tuple(_group_key(fn(ctx), ci) for fn, ci in keys)
        found = groups.get(key)
        if found is None:
            groups[key] = [row]
        else:
            found.append(row)
    yield from groups.values()


def _group_key(value: Any, ci: bool) -> Any:
    """What equal values share: strings under their collation (trailing spaces padded, case
    folded where insensitive); numbers already hash alike whatever their type."""
    return string_key(value, ci) if isinstance(value, str) else value


def _width(read: Read) -> int:
    return sum(len(info.columns) for _, _, info in read.tables)


def _group_by(node: exp.Select, read: Read) -> list[exp.Expr]:
    """GROUP BY's expressions: a number is the select list's item at that position, a name
    no table has an item's alias (TiDB `gbyResolver`); an aggregate is error 1056."""
    found = node.args.get("group")
    if found is None:
        return []
    aliases: dict[str, exp.Expr] = {
        e.alias.lower(): e.this for e in node.expressions if isinstance(e, exp.Alias)
    }
    out: list[exp.Expr] = []
    for item in found.expressions:
        if isinstance(item, exp.Literal) and item.is_int:
            if not 1 <= int(item.name) <= len(read.items):
                raise SQLError(f"Unknown column '{item.name}' in 'group statement'", code=1054)
            item = read.items[int(item.name) - 1]
        elif isinstance(item, exp.Column) and not item.table and not _resolves(read, item):
            item = aliases.get(item.name.lower(), item)
        if any(item.find_all(*AGGREGATES)):
            raise SQLError(f"Can't group on '{sql_text(item)}'", code=1056)
        out.append(item.unalias())
    return out


def _aliased(node: exp.Select, having: exp.Expr) -> exp.Expr:
    """HAVING with the select list's aliases read as their items (MySQL's resolution)."""
    aliases: dict[str, exp.Expr] = {
        e.alias.lower(): e.this for e in node.expressions if isinstance(e, exp.Alias)
    }

    def resolve(found: exp.Expr) -> exp.Expr:
        if isinstance(found, exp.Column) and not found.table:
            item = aliases.get(found.name.lower())
            if item is not None:
                return item.copy()
        return found

    return having.copy().transform(resolve)


def _check_having(node: exp.Select, read: Read, group: list[exp.Expr], having: exp.Expr) -> None:
    """HAVING reads, outside aggregates, the select list's aliases and the columns the
    select list and GROUP BY name; any other column is error 1054 (TiDB
    `havingWindowAndOrderbyExprResolver`, MySQL's extension of the standard)."""
    aliases = {e.alias.lower() for e in node.expressions if isinstance(e, exp.Alias)}
    plain = [e.unalias().unnest() for e in [*read.items, *group]]
    allowed = {at for e in plain if (at := _place(read, e)) is not None}
    for column in _columns_outside_aggregates(having):
        if not column.table and column.name.lower() in aliases:
            continue
        at = _place(read, column)
        if at is not None and at not in allowed:
            raise SQLError(f"Unknown column '{sql_text(column)}' in 'having clause'", code=1054)


def _resolves(read: Read, column: exp.Column) -> bool:
    try:
        read.scope.resolve(column)
    except SQLError:
        return False
    return True


# -- ONLY_FULL_GROUP_BY and DISTINCT's ORDER BY --------------------------------------------------


def _check_full_group_by(
    node: exp.Select, read: Read, group: list[exp.Expr], order: list[exp.Expr]
) -> None:
    """TiDB's check with a GROUP BY clause (tidb_enable_new_only_full_group_by_check OFF):
    every column the select list and ORDER BY read outside aggregates and ANY_VALUE is in
    GROUP BY, is inside an expression GROUP BY names, or belongs to a table whose primary
    key or NOT NULL unique key is in GROUP BY (directly, or equal to a column there by the
    WHERE clause or an ON condition)."""
    grouped = {at for e in group if (at := _place(read, e.unnest())) is not None}
    expressions = [e.unnest() for e in group if not isinstance(e.unnest(), exp.Column)]
    missing: dict[int, tuple[int, str, exp.Expr]] = {}
    for where, items in (("SELECT list", read.items), ("ORDER BY clause", order)):
        for offset, item in enumerate(items):
            for at in _outside(read, item.unalias().unnest(), expressions):
                if at not in grouped:
                    missing.setdefault(at, (offset, where, item))
    if not missing:
        return
    equal = _equalities(node, read)
    for at, (offset, where, item) in missing.items():
        alias, first, info = _table_of(read, at)
        if _determined(info, first, grouped, equal):
            continue
        shown = (
            f"{info.schema}.{alias}.{info.columns[at - first].name}"
            if where == "SELECT list"
            else sql_text(item)
        )
        raise SQLError(
            f"Expression #{offset + 1} of {where} is not in GROUP BY clause and contains"
            f" nonaggregated column '{shown}' which is not functionally dependent on columns"
            " in GROUP BY clause; this is incompatible with sql_mode=only_full_group_by",
            code=1055,
        )


def _outside(read: Read, node: exp.Expr, expressions: list[exp.Expr]) -> list[int]:
    """The places of the columns `node` reads outside aggregates and ANY_VALUE, unless it is
    an aggregate or an expression GROUP BY names."""
    if isinstance(node, tuple(AGGREGATES)) or (
        not isinstance(node, exp.Column) and any(node == e for e in expressions)
    ):
        return []
    # an alias of the select list is no table's column: no place
    places = [_place(read, column) for column in _columns_outside_aggregates(node)]
    return [at for at in places if at is not None]


def _columns_outside_aggregates(node: exp.Expr) -> list[exp.Column]:
    """The columns `node` reads outside aggregates (and ANY_VALUE), in the order written."""
    found: list[exp.Column] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, exp.Column):
            found.append(current)
        elif not isinstance(current, tuple(AGGREGATES)):
            stack.extend(reversed(list(current.iter_expressions())))
    return found


def _place(read: Read, node: exp.Expr) -> int | None:
    """Where a column sits in a read row; None for what is no column of the tables."""
    if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
        return None
    try:
        return read.scope.resolve(node)[0]
    except SQLError:
        return None


def _table_of(read: Read, at: int) -> tuple[str, int, TableInfo]:
    return next(t for t in reversed(read.tables) if t[1] <= at)


def _equalities(node: exp.Select, read: Read) -> dict[int, set[int]]:
    """Columns said equal to others by the WHERE clause's and the inner joins' conjuncts
    (TiDB `buildWhereFuncDepend`, `buildJoinFuncDepend`)."""
    terms: list[exp.Expr] = []
    where = node.args.get("where")
    if where is not None:
        terms.append(where.this)
    for join in node.args.get("joins") or []:
        if join.text("side").upper() != "LEFT" and join.args.get("on") is not None:
            terms.append(join.args["on"])
    equal: dict[int, set[int]] = {}
    while terms:
        term = terms.pop().unnest()
        if isinstance(term, exp.And):
            terms += [term.this, term.expression]
        elif isinstance(term, exp.EQ):
            left, right = _place(read, term.this), _place(read, term.expression)
            if left is not None and right is not None:
                equal.setdefault(left, set()).add(right)
                equal.setdefault(right, set()).add(left)
    return equal


def _determined(info: TableInfo, first: int, grouped: set[int], equal: dict[int, set[int]]) -> bool:
    """Whether GROUP BY holds (or holds what equals) every column of one of the table's
    NOT NULL unique keys, or of its primary key (TiDB `checkColFuncDepend`)."""

    def held(offset: int) -> bool:
        at = first + offset
        return at in grouped or bool(equal.get(at, set()) & grouped)

    if any(
        index.unique
        and all(info.columns[c.offset].not_null and held(c.offset) for c in index.columns)
        for index in info.indices
    ):
        return True
    primary = [c.offset for c in info.columns if c.flag & TiDBFlag.PRI_KEY]
    return bool(primary) and all(held(offset) for offset in primary)


def _check_distinct_order(read: Read, order: list[exp.Expr]) -> None:
    """With DISTINCT, ORDER BY may sort on the select list only (TiDB's error 3065)."""
    shown = {at for item in read.items if (at := _place(read, item.unalias())) is not None}
    selected = [item.unalias() for item in read.items]
    for offset, ordered_item in enumerate(order):
        key = ordered_item.this
        if any(key == item for item in selected):
            continue
        for at in _outside(read, key, []):
            if at not in shown:
                alias, first, info = _table_of(read, at)
                name = f"{info.schema}.{alias}.{info.columns[at - first].name}"
                raise SQLError(
                    f"Expression #{offset + 1} of ORDER BY clause is not in SELECT list,"
                    f" references column '{name}' which is not in SELECT list; this is"
                    " incompatible with DISTINCT",
                    code=3065,
                )
