"""Subqueries that read nothing of the statement around them (uncorrelated), answered once
before the statement runs and put in as their values, as TiDB's planner evaluates such a
subquery when it plans the statement (pkg/planner/core/expression_rewriter.go
`handleInSubquery`, `handleExistSubquery`, `handleScalarSubQuery`):

- `x [NOT] IN (SELECT ...)`: the list of the values it answered (none: FALSE, TRUE for NOT
  IN, whatever `x`);
- `EXISTS (SELECT ...)`: TRUE or FALSE;
- `(SELECT ...)` as a value: its one value, NULL for no row (error 1242 for more than one
  row, 1241 for more than one column).

A subquery that reads a column of the statement around it (correlated) and `ANY`/`ALL`/`SOME`
are refused with error 1235 naming them; a subquery in FROM is the engine's refusal.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.evaluate import sql_text
from ticdc_sim.generator.sql.values import format_double

Row = tuple[Any, ...]
Answer = Callable[[exp.Select], list[Row]]  # a subquery's rows, as a client reads them
Columns = Callable[[exp.Table], set[str]]  # a table's column names, lower case (none: {})


def present(node: exp.Expr) -> bool:
    """Whether `node` holds a subquery this module answers."""
    kinds = (exp.Subquery, exp.Exists, exp.Any, exp.All)
    return any(not _derived(found) for found in node.find_all(*kinds))


def inline(node: exp.Expr, answer: Answer, columns: Columns) -> exp.Expr:
    """A copy of `node` with its subqueries answered; `columns` tells which columns a table
    has, so that one of the statement's own tables read in a subquery is known as such."""
    outer = {t.alias_or_name.lower(): columns(t) for t in _tables(node)}

    def replace(found: exp.Expr) -> exp.Expr:
        if isinstance(found, exp.Any | exp.All):
            raise SQLError(f"{found.key.upper()} (subquery) is not supported here", code=1235)
        if isinstance(found, exp.In) and found.args.get("query") is not None:
            values = _column(_rows(found.args["query"].this, answer, outer, columns))
            if not values:  # nothing is IN an empty set, even NULL (MySQL)
                return exp.false()
            probe = found.this.copy().transform(replace)  # a subquery of its own, too
            return exp.In(this=probe, expressions=[_literal(v) for v in values])
        if isinstance(found, exp.Exists):
            return exp.true() if _rows(found.this, answer, outer, columns) else exp.false()
        if isinstance(found, exp.Subquery) and not _derived(found):
            rows = _rows(found.this, answer, outer, columns)
            if len(rows) > 1:
                raise SQLError("Subquery returns more than 1 row", code=1242)
            values = _column(rows)
            return _literal(values[0] if values else None)
        return found

    return node.copy().transform(replace)


def _derived(found: exp.Expr) -> bool:
    """A subquery in FROM or a join (a derived table), not a value."""
    return isinstance(found, exp.Subquery) and isinstance(found.parent, exp.From | exp.Join)


def _tables(node: exp.Expr) -> list[exp.Table]:
    """The tables `node` reads itself, not through a subquery."""
    return [
        t for t in node.find_all(exp.Table) if t.find_ancestor(exp.Subquery, exp.Exists) is None
    ]


def _rows(
    query: exp.Expr, answer: Answer, outer: dict[str, set[str]], columns: Columns
) -> list[Row]:
    if not isinstance(query, exp.Select):
        raise SQLError(f"{query.key.upper()} in a subquery is not supported here", code=1235)
    correlated = _correlated(query, outer, columns)
    if correlated is not None:
        raise SQLError(
            f"a correlated subquery (it reads '{correlated}' of the statement around it) is"
            " not supported here",
            code=1235,
        )
    return answer(query)


def _correlated(query: exp.Select, outer: dict[str, set[str]], columns: Columns) -> str | None:
    """A column of the statement around the subquery that the subquery reads: qualified by
    one of its tables and not of the subquery's own, or a name only such a table has."""
    if any(_derived(found) for found in query.find_all(exp.Subquery)):
        return None  # its own columns are not known here: the engine refuses it by name
    own = {t.alias_or_name.lower(): columns(t) for t in query.find_all(exp.Table)}
    mine = set().union(*own.values())
    theirs = set().union(*outer.values())
    for column in query.find_all(exp.Column):
        table, name = column.table.lower(), column.name.lower()
        if (table and table in outer and table not in own) or (
            not table and name not in mine and name in theirs
        ):
            return sql_text(column)
    return None


def _column(rows: list[Row]) -> list[Any]:
    if rows and len(rows[0]) != 1:
        raise SQLError("Operand should contain 1 column(s)", code=1241)
    return [row[0] for row in rows]


def _literal(value: Any) -> exp.Expr:
    """A value a subquery answered, as the literal TiDB would compare it as."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int | Decimal):
        return exp.Literal.number(str(value))
    if isinstance(value, float):
        return exp.Literal.number(format_double(value))
    if isinstance(value, bytes | bytearray):
        return exp.HexString(this=bytes(value).hex())
    return exp.Literal.string(str(value))
