"""SELECTs of several tables: `FROM a JOIN b ON ...`, `LEFT JOIN`, `CROSS JOIN` and comma
joins, as ORMs write them (Django's lookups across a foreign key and `select_related`,
SQLAlchemy's joined loads, migration tools' information_schema queries).

The tables are joined in the order written, by nested loops over each one's rows in key
order (TiDB's scan order), then filtered by WHERE, sorted by ORDER BY, cut by LIMIT and
projected, each expression compiled against one scope of every table's columns (qualified
by the table's alias or name; a bare name two tables share is MySQL's error 1052). The cost
is the product of the tables' rows: right for an application's test data, not for a
benchmark. RIGHT JOIN, NATURAL JOIN and USING are refused with error 1105.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.capture import key_order
from ticdc_sim.generator.sql.dml import (
    GROUPING_CLAUSES,
    UNSUPPORTED_CLAUSES,
    compile_order,
    limited,
    order_by_items,
    row_item,
)
from ticdc_sim.generator.sql.evaluate import Compiled, Context, Scope, compile_expr, truth
from ticdc_sim.model.table import ColumnInfo

if TYPE_CHECKING:
    from ticdc_sim.generator.sql.store import TableData
    from ticdc_sim.generator.sql.target import DMLTarget

Row = tuple[Any, ...]


@dataclass(frozen=True)
class Source:
    """One table of the join: where its columns start in a joined row, and how it joins."""

    alias: str
    data: TableData
    offset: int
    left: bool = False  # LEFT JOIN: a row without a match still comes, NULLs for this table
    on: exp.Expr | None = None


def is_join(node: exp.Select) -> bool:
    return bool(node.args.get("joins"))


def sources(engine: DMLTarget, node: exp.Select) -> list[Source]:
    for clause, name in UNSUPPORTED_CLAUSES.items():
        if clause not in ("joins", *GROUPING_CLAUSES) and node.args.get(clause):
            raise SQLError(f"{name} is not supported here (with a join)", code=1105)
    from_ = node.args["from_"].this
    found: list[Source] = []
    offset = 0
    for table, join in [(from_, None), *[(j.this, j) for j in node.args["joins"]]]:
        if not isinstance(table, exp.Table):
            raise SQLError("a subquery in a join is not supported here", code=1105)
        side = join.text("side").upper() if join is not None else ""
        refused = _refused(join) if join is not None else None
        if refused is not None:
            raise SQLError(f"{refused} is not supported here (JOIN ... ON, LEFT JOIN)", code=1105)
        data = engine.read_table(table)
        on = join.args.get("on") if join is not None else None
        found.append(Source(table.alias_or_name, data, offset, side == "LEFT", on))
        offset += len(data.info.columns)
    return found


def _refused(join: exp.Join) -> str | None:
    """What a join asks that is not evaluated here (NATURAL, USING, RIGHT or FULL)."""
    if join.text("kind").upper() == "NATURAL":
        return "NATURAL JOIN"
    if join.args.get("using"):
        return "USING"
    side = join.text("side").upper()
    return f"{side} JOIN" if side in ("RIGHT", "FULL") else None


def scope(found: list[Source]) -> Scope:
    """Every table's columns: `alias.column`, and each bare name one table alone has."""
    joined = Scope(table="")
    seen: Counter[str] = Counter()
    for source in found:
        for column in source.data.info.columns:
            at = (source.offset + column.offset, column.collation)
            joined.qualified[f"{source.alias.lower()}.{column.name.lower()}"] = at
            joined.columns.setdefault(column.name.lower(), at)
            seen[column.name.lower()] += 1
            base = source.data.scope
            if column.offset in base.comparison_keys:
                joined.comparison_keys[at[0]] = base.comparison_keys[column.offset]
            if column.offset in base.order_keys:
                joined.order_keys[at[0]] = base.order_keys[column.offset]
    joined.ambiguous = frozenset(name for name, count in seen.items() if count > 1)
    for name in joined.ambiguous:
        del joined.columns[name]
    return joined


def shown(found: list[Source], item: exp.Expr) -> list[tuple[ColumnInfo, int]] | None:
    """The columns `*` or `t.*` stands for (with their place in a joined row), else None."""
    chosen = _starred(found, item)
    if chosen is None:
        return None
    return [(c, s.offset + c.offset) for s in chosen for c in s.data.info.columns if not c.hidden]


def items(found: list[Source], node: exp.Select) -> list[exp.Expr]:
    """The select list, `*` and `t.*` as the columns they stand for, qualified."""
    out: list[exp.Expr] = []
    for item in node.expressions:
        chosen = _starred(found, item)
        if chosen is None:
            out.append(item)
            continue
        out += [
            exp.column(c.name, table=s.alias, quoted=True)
            for s in chosen
            for c in s.data.info.columns
            if not c.hidden
        ]
    return out


def _starred(found: list[Source], item: exp.Expr) -> list[Source] | None:
    """The tables `*` or `t.*` takes the columns of, else None."""
    if isinstance(item, exp.Star):
        return found
    if isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
        chosen = [s for s in found if s.alias.lower() == item.table.lower()]
        if not chosen:
            raise SQLError(f"Unknown table '{item.table}'", code=1051)
        return chosen
    return None


def rows(engine: DMLTarget, node: exp.Select) -> list[Row]:
    """The joined SELECT's rows, projected."""
    found = sources(engine, node)
    joined = scope(found)
    current = joined_rows(engine, node, found, joined)
    ctx = Context(session=engine)
    order = _order(node)
    if order is not None:
        current = [
            r for _, r in compile_order(joined, order)(engine, [(None, r) for r in current], [])
        ]
    current = limited(node, current, ctx)
    projections = _projections(found, joined, node)
    out = []
    for row in current:
        ctx.row = row
        out.append(tuple(p(ctx) for p in projections))
    return out


def joined_rows(
    engine: DMLTarget, node: exp.Select, found: list[Source], joined: Scope
) -> list[Row]:
    """The joined rows the WHERE clause keeps, each every table's columns in turn."""
    width = sum(len(s.data.info.columns) for s in found)
    ctx = Context(session=engine)
    current: list[Row] = [()]
    for source in found:
        on = compile_expr(source.on, joined) if source.on is not None else None
        right = [
            row for _, row in sorted(source.data.rows.items(), key=lambda hr: key_order(hr[0]))
        ]
        pad = (None,) * (width - source.offset - len(source.data.info.columns))
        nulls = (None,) * len(source.data.info.columns)
        following: list[Row] = []
        for left in current:
            matched = False
            for row in right:
                whole = left + row
                if on is not None:
                    ctx.row = whole + pad
                    if not truth(on(ctx)):
                        continue
                following.append(whole)
                matched = True
            if source.left and not matched:
                following.append(left + nulls)
        current = following
    where = node.args.get("where")
    if where is not None:
        condition = compile_expr(where.this, joined)
        kept = []
        for row in current:
            ctx.row = row
            if truth(condition(ctx)):
                kept.append(row)
        current = kept
    return current


def _order(node: exp.Select) -> exp.Order | None:
    """ORDER BY with its select-list aliases and positions read as MySQL reads them."""
    found = node.args.get("order")
    if not isinstance(found, exp.Order):
        return None
    return order_by_items(node, found, [e.unalias() for e in node.expressions])


def _projections(found: list[Source], joined: Scope, node: exp.Select) -> list[Compiled]:
    projections: list[Compiled] = []
    for item in node.expressions:
        columns = shown(found, item)
        if columns is None:
            projections.append(compile_expr(item.unalias(), joined))
        else:
            projections += [row_item(at) for _, at in columns]
    return projections
