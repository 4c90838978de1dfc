"""Aggregates: COUNT, SUM, MIN, MAX, AVG and ANY_VALUE, each a fold of its argument's values
over a group's rows (grouping.py groups them), with MySQL's result types (SUM of integers and
AVG of exact numbers are DECIMAL, AVG four digits finer than its argument:
`div_precision_increment`); and TiDB's ONLY_FULL_GROUP_BY check of an aggregated query
without GROUP BY (`check_full_group_by`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.evaluate import to_number
from ticdc_sim.generator.sql.values import WIDE
from ticdc_sim.model.mysql import INTEGER_TYPES, MySQLType
from ticdc_sim.model.table import ColumnInfo, TableInfo

Aggregate = Callable[[list[Any]], Any]


def _scale(values: list[Any]) -> int:
    exponents = [v.as_tuple().exponent for v in values if isinstance(v, Decimal)]
    return max((-e for e in exponents if isinstance(e, int)), default=0)


def _exact(values: list[Any]) -> bool:
    return all(isinstance(v, int | Decimal) for v in values)


def _exact_sum(values: list[Any]) -> Decimal:
    # every digit kept: DECIMAL(65, 30) needs more than the default context's 28
    return functools.reduce(WIDE.add, map(Decimal, values), Decimal(0))


def _sum(values: list[Any]) -> Any:
    if not values:
        return None
    if _exact(values):
        return WIDE.quantize(_exact_sum(values), Decimal(1).scaleb(-_scale(values)))
    return float(sum(float(to_number(v)) for v in values))  # strings by their numeric prefix


def _avg(values: list[Any]) -> Any:
    if not values:
        return None
    if _exact(values):
        mean = WIDE.divide(_exact_sum(values), len(values))
        return WIDE.quantize(mean, Decimal(1).scaleb(-(_scale(values) + 4)))
    return sum(float(to_number(v)) for v in values) / len(values)


def _non_null(aggregate: Aggregate) -> Aggregate:
    return lambda values: aggregate([v for v in values if v is not None])


def _first(values: list[Any]) -> Any:
    """TiDB's `firstrow`: the first row's value, NULL where no row is."""
    return values[0] if values else None


# function -> how a result column is folded from its argument's values, one per row; the
# aggregates leave NULLs out, as in MySQL
AGGREGATES: dict[type[exp.Expr], Aggregate] = {
    exp.Count: _non_null(len),
    exp.Sum: _non_null(_sum),
    exp.Avg: _non_null(_avg),
    exp.Min: _non_null(lambda vs: min(vs, default=None)),
    exp.Max: _non_null(lambda vs: max(vs, default=None)),
    exp.AnyValue: _first,
}


# what SUM and AVG add exactly, as DECIMAL (MySQL's INT_RESULT and DECIMAL_RESULT); the
# rest (floats, strings by their numeric prefix, dates) as DOUBLE
_EXACT_TYPES = INTEGER_TYPES | {MySQLType.NEWDECIMAL, MySQLType.YEAR, MySQLType.BIT}


def result_type(node: exp.Expr, columns: dict[str, ColumnInfo]) -> MySQLType | None:
    """The type a projection answers with: a column's own, an aggregate's (MySQL's), or
    None where only the values can tell."""
    if isinstance(node, exp.Distinct) and len(node.expressions) == 1:
        node = node.expressions[0]  # SUM(DISTINCT x) is typed as SUM(x)
    if isinstance(node, exp.Column):
        found = columns.get(node.name.lower())
        return found.tp if found else None
    if isinstance(node, exp.Count):
        return MySQLType.LONGLONG
    if isinstance(node, exp.Min | exp.Max | exp.AnyValue):
        return result_type(node.this, columns)
    if isinstance(node, exp.Sum | exp.Avg):
        argument = result_type(node.this, columns)
        return MySQLType.NEWDECIMAL if argument in _EXACT_TYPES else MySQLType.DOUBLE
    return None


def check_full_group_by(node: exp.Select, table: TableInfo) -> None:
    """ONLY_FULL_GROUP_BY for an aggregated query without GROUP BY, as TiDB checks it by
    default (pkg/planner/core/logical_plan_builder.go `checkOnlyFullGroupByWithOutGroupClause`,
    `tidb_enable_new_only_full_group_by_check` OFF): a column outside the aggregates must be
    pinned to a value by the WHERE clause (`col = value`), or every column of a NOT NULL unique
    index be pinned (directly or through `col = other` where the other is), which determines the
    row. Else TiDB's error 8123, naming the field and the column as written."""
    where = node.args.get("where")
    pinned, equal = _pinned(where.this) if where is not None else (set(), {})
    determined = any(
        index.unique
        and not (index.primary and table.pk_is_handle)  # TiDB's Indices hold no int handle
        and all(
            table.columns[ic.offset].not_null
            and (
                table.columns[ic.offset].name.lower() in pinned
                or equal.get(table.columns[ic.offset].name.lower()) in pinned
            )
            for ic in index.columns
        )
        for index in table.indices
    )
    for number, projection in enumerate(node.expressions, 1):
        for name in _outside_aggregates(projection, table):
            if determined or name.lower() in pinned:
                continue
            raise SQLError(
                f"In aggregated query without GROUP BY, expression #{number} of SELECT list"
                f" contains nonaggregated column '{name}'; this is incompatible with"
                " sql_mode=only_full_group_by",
                code=8123,
            )


def _outside_aggregates(node: exp.Expr, table: TableInfo) -> list[str]:
    """The columns an expression reads outside its aggregates, in the order written and as
    written (`*`: the table's columns)."""
    found: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, exp.Star):
            found += [c.name for c in table.columns if not c.hidden]
        elif isinstance(current, exp.Column) and not isinstance(current.this, exp.Star):
            found.append(current.name)
        elif not isinstance(current, tuple(AGGREGATES)):
            stack.extend(reversed(list(current.iter_expressions())))
    return found


_VALUES = (exp.Literal, exp.Null, exp.Boolean, exp.HexString, exp.BitString, exp.Introducer)


def _pinned(where: exp.Expr) -> tuple[set[str], dict[str, str]]:
    """Columns the WHERE clause's conjuncts pin to a value (`col = 1`, `-1 = col`), and the
    pairs of columns they say are equal (TiDB `extractSingeValueColNamesFromWhere`,
    `buildWhereFuncDepend`), by lower-case name."""
    pinned: set[str] = set()
    equal: dict[str, str] = {}
    stack = [where]
    while stack:  # the conjuncts, through parentheses (TiDB `splitWhere`)
        term = stack.pop().unnest()
        if isinstance(term, exp.And):
            stack += [term.expression, term.this]
            continue
        if not isinstance(term, exp.EQ):
            continue
        left, right = term.this, term.expression
        if isinstance(left, exp.Column) and isinstance(right, exp.Column):
            equal[left.name.lower()] = right.name.lower()
            equal[right.name.lower()] = left.name.lower()
            continue
        for column, value in ((left, right), (right, left)):
            value = value.this if isinstance(value, exp.Neg) else value
            if isinstance(column, exp.Column) and isinstance(value, _VALUES):
                pinned.add(column.name.lower())
    return pinned, equal
