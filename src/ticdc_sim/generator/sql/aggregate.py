"""SELECT with aggregates and no GROUP BY, as clients send to check a table: COUNT, SUM,
MIN, MAX, AVG over the rows the WHERE clause keeps, with MySQL's result types (SUM of
integers and AVG of exact numbers are DECIMAL, AVG four digits finer than its argument:
`div_precision_increment`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.values import WIDE
from ticdc_sim.model.mysql import MySQLType
from ticdc_sim.model.table import ColumnInfo

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
    return float(sum(float(v) for v in values))


def _avg(values: list[Any]) -> Any:
    if not values:
        return None
    if _exact(values):
        mean = WIDE.divide(_exact_sum(values), len(values))
        return WIDE.quantize(mean, Decimal(1).scaleb(-(_scale(values) + 4)))
    return sum(float(v) for v in values) / len(values)


# function -> (how its values are folded); NULLs are left out first, as in MySQL
AGGREGATES: dict[type[exp.Expr], Aggregate] = {
    exp.Count: len,
    exp.Sum: _sum,
    exp.Avg: _avg,
    exp.Min: lambda vs: min(vs, default=None),
    exp.Max: lambda vs: max(vs, default=None),
}


def result_type(node: exp.Expr, columns: dict[str, ColumnInfo]) -> MySQLType | None:
    """The type a projection answers with: a column's own, an aggregate's (MySQL's), or
    None where only the values can tell."""
    if isinstance(node, exp.Column):
        found = columns.get(node.name.lower())
        return found.tp if found else None
    if isinstance(node, exp.Count):
        return MySQLType.LONGLONG
    if isinstance(node, exp.Min | exp.Max):
        return result_type(node.this, columns)
    if isinstance(node, exp.Sum | exp.Avg):
        argument = result_type(node.this, columns)
        exact = argument is not None and argument not in (MySQLType.FLOAT, MySQLType.DOUBLE)
        return MySQLType.NEWDECIMAL if exact else MySQLType.DOUBLE
    return None


def is_aggregate(node: exp.Select) -> bool:
    return any(
        isinstance(e.this if isinstance(e, exp.Alias) else e, tuple(AGGREGATES))
        for e in node.expressions
    ) or any(node.find_all(*AGGREGATES))


def split(node: exp.Select) -> tuple[exp.Select, list[Aggregate]]:
    """The SELECT of the aggregates' arguments (COUNT(*): a constant) and their folds."""
    if node.args.get("group") is not None or node.args.get("having") is not None:
        raise SQLError("GROUP BY and HAVING are not supported here", code=1105)
    arguments, folds = [], []
    for number, projection in enumerate(node.expressions, 1):
        call = projection.this if isinstance(projection, exp.Alias) else projection
        fold = AGGREGATES.get(type(call))
        if fold is None and any(call.find_all(*AGGREGATES)):
            raise SQLError(
                f"only plain aggregates are supported here, not '{call.sql(dialect=d.TiDB)}'",
                code=1105,
            )
        if fold is None:
            raise SQLError(
                f"In aggregated query without GROUP BY, expression #{number} of SELECT list"
                f" contains nonaggregated column '{call.sql(dialect=d.TiDB)}'; this is"
                " incompatible with sql_mode=only_full_group_by",
                code=1140,
            )
        if call.args.get("distinct") is not None or isinstance(call.this, exp.Distinct):
            raise SQLError("aggregates over DISTINCT are not supported here", code=1105)
        argument = call.this
        if isinstance(argument, exp.Star) or argument is None:
            argument = exp.Literal.number(1)
        arguments.append(argument.copy())
        folds.append(fold)
    inner = node.copy()
    inner.set("expressions", arguments)
    inner.set("order", None)
    inner.set("limit", None)
    return inner, folds


def fold(rows: list[tuple[Any, ...]], folds: list[Aggregate]) -> tuple[Any, ...]:
    return tuple(f([r[i] for r in rows if r[i] is not None]) for i, f in enumerate(folds))
