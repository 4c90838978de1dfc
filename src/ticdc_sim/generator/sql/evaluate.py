"""MySQL expression semantics over sqlglot's AST, compiled once into Python closures.

`compile_expr(node, scope)` turns an expression into `fn(ctx) -> value`; a statement compiles
its expressions once and runs them per row. Values are the evaluation forms of `values.py`
(int, float, Decimal, str, bytes, None) plus `BinaryLiteral` for hex/bit literals, which are
numbers in numeric context and byte strings elsewhere, as in MySQL.

MySQL rules followed where Python differs: NULL propagation and three-valued logic, integer
arithmetic with BIGINT overflow errors, DECIMAL division with `div_precision_increment` 4,
string-to-number coercion (leading numeric prefix, else 0), PAD SPACE string comparison and
case-insensitive comparison under `_ci` collations. Functions are tables keyed by sqlglot
node class (or by name for sqlglot's `Anonymous`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import operator
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import (
    ROUND_CEILING,
    ROUND_DOWN,
    ROUND_FLOOR,
    ROUND_HALF_EVEN,
    ROUND_HALF_UP,
    Decimal,
    DecimalException,
)
from decimal import Context as DecimalContext
from typing import Any, Protocol

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.shapes import Param
from ticdc_sim.generator.sql.values import (
    BIGINT_MIN,
    UBIGINT_MAX,
    WIDE,
    BinaryLiteral,
    JSONValue,
    Key,
    Member,
    as_text,
    binary_literal,
    format_date,
    format_datetime,
    json_text,
    load_zone,
    number_literal,
    parse_datetime,
    parse_json,
    raw_bytes,
    round_half_away,
    utf8,
)

Compiled = Callable[["Context"], Any]
_NUMERIC_PREFIX = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


class SessionFunctions(Protocol):
    """What the evaluator needs from the session running the statement."""

    def now(self, fsp: int) -> str: ...
    def current_date(self) -> str: ...
    def unix_timestamp(self) -> Decimal: ...
    def rand(self) -> float: ...
    def uuid(self) -> str: ...
    def last_insert_id(self) -> int: ...
    def sleep(self, seconds: float | None) -> int: ...
    def time_zone(self) -> dt.tzinfo: ...
    def variable(self, name: str) -> Any: ...
    def sequence(self, op: str, schema: str | None, name: str, value: Any = None) -> Any: ...
    def user_variable(self, name: str) -> Any: ...
    def set_user_variable(self, name: str, value: Any) -> Any: ...


@dataclass(slots=True)
class Context:
    """The row being evaluated (table column order) and what else an expression can see."""

    session: SessionFunctions
    row: tuple[Any, ...] = ()
    inserted: tuple[Any, ...] = ()  # VALUES(col) in ON DUPLICATE KEY UPDATE
    defaults: Callable[[int], Any] | None = None
    params: list[Any] = field(default_factory=list)  # a shape template's literal values
    # strict sql_mode with ERROR_FOR_DIVISION_BY_ZERO, while computing values to store
    division_by_zero_is_error: bool = False
    # constant lists (`IN (...)`, ORs of equalities) evaluated once for these `params`
    memo: dict[int, tuple[list[Any], _Members]] | None = None


@dataclass(slots=True)
class Scope:
    """Column names visible to an expression: name -> (index in row, collation), and how the
    columns that are not compared or sorted as stored are (`values.comparison_keys`,
    `values.order_key`), by index."""

    columns: dict[str, tuple[int, str]] = field(default_factory=dict)
    table: str = ""
    comparison_keys: dict[int, tuple[Key, Key]] = field(default_factory=dict)
    order_keys: dict[int, Key] = field(default_factory=dict)
    # a join's: `table.column` -> as `columns`, and the bare names two tables share
    qualified: dict[str, tuple[int, str]] = field(default_factory=dict)
    ambiguous: frozenset[str] = frozenset()

    def resolve(self, node: exp.Column) -> tuple[int, str]:
        if self.qualified:
            return self._resolve_joined(node)
        found = self.columns.get(node.name.lower())
        qualifier = node.table
        if found is None or (qualifier and qualifier.lower() != self.table.lower()):
            where = f"{qualifier}.{node.name}" if qualifier else node.name
            raise SQLError(f"Unknown column '{where}' in 'field list'", code=1054)
        return found

    def _resolve_joined(self, node: exp.Column) -> tuple[int, str]:
        name, qualifier = node.name.lower(), node.table.lower()
        found = self.qualified.get(f"{qualifier}.{name}") if qualifier else self.columns.get(name)
        if found is not None:
            return found
        if not qualifier and name in self.ambiguous:
            raise SQLError(f"Column '{node.name}' in field list is ambiguous", code=1052)
        where = f"{node.table}.{node.name}" if qualifier else node.name
        raise SQLError(f"Unknown column '{where}' in 'field list'", code=1054)


# -- coercions ---------------------------------------------------------------------------------


_PLAIN_NUMBERS = frozenset({int, Decimal, float})  # exactly these types: not bool, not Member
_EXACT_NUMBERS = frozenset({int, Decimal})


def to_number(value: Any) -> int | float | Decimal:
    """MySQL's numeric context: strings by their numeric prefix (else 0)."""
    if type(value) in _PLAIN_NUMBERS:
        return value  # type: ignore[no-any-return]
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float | Decimal):
        return value
    if isinstance(value, BinaryLiteral):
        return value.as_int()
    if isinstance(value, Member):
        return value.number
    text = as_text(value)
    match = _NUMERIC_PREFIX.match(text)
    if not match:
        return 0
    number = match.group(0).strip()
    try:
        if re.fullmatch(r"[-+]?\d+", number):
            return int(number)
    except ValueError:  # more digits than Python reads: a double, as in MySQL
        pass
    # past a double's range: the largest double (TiDB `StrToFloat`, with a warning)
    return max(-DOUBLE_MAX, min(float(number), DOUBLE_MAX))


def truth(value: Any) -> bool | None:
    if value is None:
        return None
    number = to_number(value)
    return number != 0


# -- results past their type's range (MySQL error 1690) ----------------------------------------

DOUBLE_MAX = 1.7976931348623157e308
MAX_DECIMAL_DIGITS = 65  # integer digits of a DECIMAL (MySQL's DECIMAL(65, 0))


class OutOfRange(Exception):
    """A result past the range of its type; the operator or function it came from turns it
    into MySQL's error 1690, naming itself (`_out_of_range`)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


# what Python raises where MySQL's result is out of range, and the type MySQL names
_RANGE_ERRORS = (OutOfRange, OverflowError, ZeroDivisionError, DecimalException)


def _out_of_range(error: Exception, node: exp.Expr, params: list[Any]) -> SQLError:
    """Error 1690 naming the operator or function, with a statement shape's parameters
    (`params`) back in their places."""
    kind = error.kind if isinstance(error, OutOfRange) else "DOUBLE"
    if isinstance(error, DecimalException):
        kind = "DECIMAL"
    text = sql_text(node, params)
    if len(text) > 200:
        text = text[:197] + "..."
    return SQLError(f"{kind} value is out of range in '{text}'", code=1690)


def _as_literal(value: Any) -> exp.Expr:
    if value is None:
        return exp.Null()
    if isinstance(value, bytes):
        return exp.HexString(this=value.hex())
    if isinstance(value, int | float | Decimal):
        return exp.Literal.number(as_text(value))
    return exp.Literal.string(as_text(value))


def _int_result(value: int) -> int:
    if not BIGINT_MIN <= value <= UBIGINT_MAX:  # past the top only an unsigned one could be
        raise OutOfRange("BIGINT" if value < 0 else "BIGINT UNSIGNED")
    return value


def _double_result(value: float) -> float:
    if math.isinf(value) or math.isnan(value):
        raise OutOfRange("DOUBLE")
    return value


def _decimal_result(value: Decimal) -> Decimal:
    if not value.is_finite() or (value and value.adjusted() >= MAX_DECIMAL_DIGITS):
        raise OutOfRange("DECIMAL")
    return value


def _arith(
    op: Callable[[Any, Any], Any], decimal_op: Callable[[Decimal, Decimal], Decimal]
) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        if a is None or b is None:
            return None
        if type(a) is int and type(b) is int:
            return _int_result(op(a, b))
        x, y = to_number(a), to_number(b)
        if isinstance(x, float) or isinstance(y, float):
            return _double_result(float(op(float(x), float(y))))
        if isinstance(x, Decimal) or isinstance(y, Decimal):
            return _decimal_result(decimal_op(Decimal(x), Decimal(y)))
        return _int_result(op(x, y))

    return apply


def _scale(value: Decimal) -> int:
    exponent = value.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def divide(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    x, y = to_number(a), to_number(b)
    if y == 0:
        return None
    if isinstance(x, float) or isinstance(y, float):
        return _double_result(float(x) / float(y))
    dx = Decimal(x)
    quantum = Decimal(1).scaleb(-(min(_scale(dx), 30) + 4))  # div_precision_increment
    return _decimal_result(WIDE.quantize(WIDE.divide(dx, Decimal(y)), quantum))


def int_divide(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    x, y = to_number(a), to_number(b)
    if y == 0:
        return None
    quotient = WIDE.divide(Decimal(x), Decimal(y))
    return _int_result(int(quotient.to_integral_value(rounding=ROUND_DOWN)))


def modulo(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    x, y = to_number(a), to_number(b)
    if y == 0:
        return None
    if isinstance(x, float) or isinstance(y, float):
        return math.fmod(float(x), float(y))
    result = WIDE.remainder(Decimal(x).copy_abs(), Decimal(y).copy_abs())
    result = result.copy_negate() if x < 0 else result
    return int(result) if isinstance(x, int) and isinstance(y, int) else result


_UINT64_MASK = (1 << 64) - 1


def _uint64(value: Any) -> int:
    """A value as the BIGINT UNSIGNED bit operators work on: rounded, held within BIGINT's
    range (TiDB converts with a warning), negatives as their two's complement."""
    number = to_number(value)
    if not isinstance(number, int):
        number = round_half_away(Decimal(number))
    return max(BIGINT_MIN, min(number, UBIGINT_MAX)) & _UINT64_MASK


def _bits(op: Callable[[int, int], int]) -> Callable[[Any, Any], Any]:
    return lambda a, b: None if a is None or b is None else op(_uint64(a), _uint64(b))


def _abs(value: int | float | Decimal) -> int | float | Decimal:
    return value.copy_abs() if isinstance(value, Decimal) else abs(value)  # every digit kept


def string_key(value: str, ci: bool) -> str:
    key = value.rstrip(" ")  # PAD SPACE collations
    return key.casefold() if ci else key


def compare(a: Any, b: Any, ci: bool) -> int | None:
    """-1/0/1 under MySQL's comparison rules, None when either side is NULL."""
    if a is None or b is None:
        return None
    if type(a) in _EXACT_NUMBERS and type(b) in _EXACT_NUMBERS:
        return int((a > b) - (a < b))
    if isinstance(a, str | bytes) and isinstance(b, str | bytes):  # hex literals too: bytes
        if isinstance(a, bytes) or isinstance(b, bytes):
            x: Any = a if isinstance(a, bytes) else utf8(a)
            y: Any = b if isinstance(b, bytes) else utf8(b)
        else:
            x, y = string_key(a, ci), string_key(b, ci)
    else:
        x, y = to_number(a), to_number(b)
        if isinstance(x, float) != isinstance(y, float):
            x, y = float(x), float(y)
    return int((x > y) - (x < y))


def like(value: Any, pattern: Any, escape: str, ci: bool) -> bool | None:
    if value is None or pattern is None:
        return None
    regex, text = [], as_text(pattern)
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == escape and i + 1 < len(text):
            regex.append(re.escape(text[i + 1]))
            i += 2
            continue
        regex.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    flags = re.DOTALL | (re.IGNORECASE if ci else 0)
    return re.fullmatch("".join(regex), as_text(value), flags) is not None


# -- compilation -------------------------------------------------------------------------------


def compile_expr(node: exp.Expr, scope: Scope) -> Compiled:
    if type(node) in _STEPS:
        return _chain(node, scope)
    builder = _BUILDERS.get(type(node))
    if builder is not None:
        return builder(node, scope)
    if isinstance(node, exp.Anonymous):
        return _anonymous(node, scope)
    if isinstance(node, exp.Func) and node.sql_name() in _NAMED:
        return _named(node.sql_name(), node, list(node.iter_expressions()), scope)
    raise SQLError(f"unsupported expression: {sql_text(node)[:80]}", code=1105)


def sql_text(node: exp.Expr, params: list[Any] | None = None) -> str:
    """A node's SQL for a message: a statement shape's parameters as their values, or as
    `?` where the values are not at hand; what nests deeper than a message needs as `...`
    (generating SQL recurses a level at a time, and a chain of terms is as deep as long)."""
    deep = _nested_past(node, _SHOWN_LEVELS)
    if deep or node.find(Param) is not None:
        node = node.copy()
        for far in _nested_past(node, _SHOWN_LEVELS):
            far.replace(exp.var("..."))
        for param in list(node.find_all(Param)):
            shown = exp.Placeholder() if params is None else _as_literal(params[param.this])
            param.replace(shown)
    return node.sql(dialect=d.TiDB)


_SHOWN_LEVELS = 24


def _nested_past(node: exp.Expr, levels: int) -> list[exp.Expr]:
    """The nodes `levels` below `node` that have nodes below them, found without recursion."""
    found: list[exp.Expr] = []
    stack = [(node, 0)]
    while stack:
        current, level = stack.pop()
        children = list(current.iter_expressions())
        if level == levels and children:
            found.append(current)
        elif level < levels:
            stack.extend((child, level + 1) for child in children)
    return found


def collation_of(node: exp.Expr, scope: Scope) -> str:
    """The collation of the first column (depth first) that has one, or ""."""
    for column in node.find_all(exp.Column, bfs=False):
        found = scope.resolve(column)[1]
        if found:
            return found
    return ""


def _operand_collation(node: exp.Expr, scope: Scope) -> str:
    """An operand's collation: its first column's, but none for an operator of a chain,
    whose value is a number (so a long chain is not walked again at every operator)."""
    while type(node) is exp.Paren:
        node = node.this
    return "" if type(node) in _STEPS else collation_of(node, scope)


def _is_ci(*nodes: exp.Expr, scope: Scope) -> bool:
    return any(_operand_collation(n, scope).endswith("_ci") for n in nodes)


def _literal(node: exp.Literal, scope: Scope) -> Compiled:
    if node.is_string:
        text = node.this
        return lambda ctx: text
    value = number_literal(node.this)
    return lambda ctx: value


def _binary_literal(node: exp.Expr, base: int) -> Compiled:
    value = binary_literal(node.this or "", base)
    return lambda ctx: value


def _column(node: exp.Column, scope: Scope) -> Compiled:
    index, _ = scope.resolve(node)
    return lambda ctx: ctx.row[index]


# -- left-deep chains ---------------------------------------------------------------------------
#
# `a + b - c ...`, `x OR y OR ...`, `a = b = c ...` and `x IS NOT NULL IS NOT NULL ...` reach
# us as left-deep trees, one level a term (an ORM's 10,000-term OR is 10,000 levels). Every
# binary operator and postfix predicate is compiled along its left spine into one loop of
# steps, so neither compiling nor running them recurses per term. A step is the value of one
# operator given its left operand's value; it evaluates its other operands itself.

Step = Callable[["Context", Any], Any]


def _chain(node: exp.Expr, scope: Scope) -> Compiled:
    steps: list[Step] = []
    before: type | None = None  # the operator of the previous step
    while True:
        kind = type(node)
        if kind is exp.Paren:  # the parser puts them around predicates it chains
            node = node.this
            continue
        build = _STEPS.get(kind)
        if build is None:
            first = compile_expr(node, scope)
            break
        # a run of ORs that pin columns to constants is one membership test (`_point_set`)
        points = _point_set(node) if isinstance(node, exp.Or) and before is not exp.Or else None
        if points is not None:
            columns, rows = points
            first = _membership(scope, list(columns), rows)
            break
        node, step = build(node, scope)
        steps.append(step)
        before = kind
    steps.reverse()
    if not steps:
        return first
    if len(steps) == 1:
        (only,) = steps
        return lambda ctx: only(ctx, first(ctx))
    if len(steps) == 2:  # `NOT a = 1`, `a + 1 > b`: as common, without the loop
        inner, outer = steps
        return lambda ctx: outer(ctx, inner(ctx, first(ctx)))

    def run(ctx: Context) -> Any:
        value = first(ctx)
        for step in steps:
            value = step(ctx, value)
        return value

    return run


StepBuilder = Callable[[Any, Scope], tuple[exp.Expr, Step]]


def _binary(
    op: Callable[[Any, Any], Any], check: Callable[[Context, Any, Any], None] | None = None
) -> StepBuilder:
    """A binary operator's step; `check` sees both operands first."""

    def build(node: exp.Expr, scope: Scope) -> tuple[exp.Expr, Step]:
        right = compile_expr(node.expression, scope)

        def step(ctx: Context, a: Any) -> Any:
            b = right(ctx)
            if check is not None:
                check(ctx, a, b)
            try:
                return op(a, b)
            except _RANGE_ERRORS as e:
                raise _out_of_range(e, node, ctx.params) from None

        return node.this, step

    return build


def _divisor(ctx: Context, a: Any, b: Any) -> None:
    """/, DIV and MOD are NULL for a zero divisor, or MySQL error 1365 when storing a value."""
    strict = ctx.division_by_zero_is_error and a is not None and b is not None
    if strict and to_number(b) == 0:
        raise SQLError("Division by 0", code=1365)


def _comparison_keys(scope: Scope, nodes: list[exp.Expr]) -> list[Key | None]:
    """The key each operand is compared as (None: its value as it is): when one is a column
    with comparison keys (temporal, YEAR, ENUM, SET), such columns give their stored key and
    every other operand is read as a value of that column's type (`values.comparison_keys`)."""
    keys = [
        scope.comparison_keys.get(scope.resolve(n)[0]) if isinstance(n, exp.Column) else None
        for n in nodes
    ]
    pair = next((k for k in keys if k is not None), None)
    if pair is None:
        return [None] * len(nodes)
    stored_key, other_key = pair
    return [other_key if key is None else stored_key for key in keys]


def _compared(scope: Scope, *nodes: exp.Expr) -> list[Compiled]:
    """Operands compiled to the values they are compared as (`_comparison_keys`)."""
    keys = _comparison_keys(scope, list(nodes))
    return [_keyed(compile_expr(n, scope), key) for n, key in zip(nodes, keys, strict=True)]


def _keyed(fn: Compiled, key: Key | None) -> Compiled:
    if key is None:
        return fn
    return lambda ctx: key(fn(ctx))


def _predicate(
    node: exp.Expr, scope: Scope, others: list[exp.Expr]
) -> tuple[bool, Key | None, list[Compiled]]:
    """A predicate over its left operand and `others`: whether it compares case-insensitively,
    the key its left operand's value is compared as, and the others compiled."""
    ci = _is_ci(node.this, *others, scope=scope)
    left_key, *keys = _comparison_keys(scope, [node.this, *others])
    compiled = [_keyed(compile_expr(n, scope), k) for n, k in zip(others, keys, strict=True)]
    return ci, left_key, compiled


def _comparison(test: Callable[[int], bool]) -> StepBuilder:
    def build(node: exp.Expr, scope: Scope) -> tuple[exp.Expr, Step]:
        ci, key, (right,) = _predicate(node, scope, [node.expression])

        def step(ctx: Context, a: Any) -> int | None:
            result = compare(a if key is None else key(a), right(ctx), ci)
            return None if result is None else int(test(result))

        return node.this, step

    return build


def _null_safe_eq(node: exp.Expr, scope: Scope) -> tuple[exp.Expr, Step]:
    ci, key, (right,) = _predicate(node, scope, [node.expression])

    def step(ctx: Context, a: Any) -> int:
        a, b = a if key is None else key(a), right(ctx)
        if a is None or b is None:
            return int(a is None and b is None)
        return int(compare(a, b, ci) == 0)

    return node.this, step


def _and(node: exp.Expr, scope: Scope) -> tuple[exp.Expr, Step]:
    right = compile_expr(node.expression, scope)

    def step(ctx: Context, left: Any) -> int | None:
        a = truth(left)
        if a is False:
            return 0
        b = truth(right(ctx))
        if b is False:
            return 0
        return None if a is None or b is None else 1

    return node.this, step


def _or(node: exp.Expr, scope: Scope) -> tuple[exp.Expr, Step]:
    right = compile_expr(node.expression, scope)

    def step(ctx: Context, left: Any) -> int | None:
        a = truth(left)
        if a:
            return 1
        b = truth(right(ctx))
        if b:
            return 1
        return None if a is None or b is None else 0

    return node.this, step


def _xor(node: exp.Expr, scope: Scope) -> tuple[exp.Expr, Step]:
    right = compile_expr(node.expression, scope)

    def step(ctx: Context, left: Any) -> int | None:
        a, b = truth(left), truth(right(ctx))
        return None if a is None or b is None else int(a != b)

    return node.this, step


def _not_of(value: Any) -> int | None:
    truthy = truth(value)
    return None if truthy is None else int(not truthy)


def _not(node: exp.Expr, scope: Scope) -> tuple[exp.Expr, Step]:
    # a step, not a prefix operator only: `x IS NOT NULL`, `NOT BETWEEN` and `NOT IN` chain
    # through it, their NOT above the predicate and the next one's left operand
    return node.this, lambda ctx, value: _not_of(value)


def _neg(node: exp.Expr, scope: Scope) -> Compiled:
    operand = node.this
    if isinstance(operand, exp.Literal) and not operand.is_string:  # a negative literal
        value = number_literal(operand.this, negative=True)
        return lambda ctx: value
    inner = compile_expr(operand, scope)

    def run(ctx: Context) -> Any:
        value = inner(ctx)
        if value is None:
            return None
        number = to_number(value)
        if isinstance(number, int):
            if not BIGINT_MIN <= -number <= UBIGINT_MAX:
                raise _out_of_range(OutOfRange("BIGINT"), node, ctx.params)
            return -number
        return number.copy_negate() if isinstance(number, Decimal) else -number

    return run


def _paren(node: exp.Expr, scope: Scope) -> Compiled:
    return compile_expr(node.this, scope)


def _is(node: exp.Is, scope: Scope) -> tuple[exp.Expr, Step]:
    """IS [NOT] NULL / UNKNOWN / TRUE / FALSE (sqlglot marks some negations `negate`)."""
    target, negate = node.expression, bool(node.args.get("negate"))
    if isinstance(target, exp.Null):
        return node.this, lambda ctx, value: int((value is None) != negate)
    wanted = bool(target.this) if isinstance(target, exp.Boolean) else True

    def step(ctx: Context, value: Any) -> int:
        truthy = truth(value)
        return int((truthy is not None and truthy == wanted) != negate)

    return node.this, step


def _in(node: exp.In, scope: Scope) -> tuple[exp.Expr, Step]:
    if node.args.get("query") is not None:
        raise SQLError("IN (subquery) is not supported", code=1235)
    (key,), members = _members(scope, [node.this], [[option] for option in node.expressions])

    def step(ctx: Context, value: Any) -> int | None:
        value = value if key is None else key(value)
        return None if value is None else members(ctx).contains((value,))

    return node.this, step


def _point_set(node: exp.Or) -> tuple[list[exp.Column], list[list[exp.Expr]]] | None:
    """An OR of conjunctions that each pin the same columns to constants, as ORMs write
    point lookups (`id = 1 OR id = 2 ...`, `(a = 1 AND b = 2) OR ...`): the columns and,
    per disjunct, their constants in that order; None for any other OR."""
    columns: list[exp.Column] = []
    rows: list[list[exp.Expr]] = []
    for disjunct in node.flatten():
        inner = disjunct.unnest()
        terms = inner.flatten() if isinstance(inner, exp.And) else [inner]
        pinned: dict[str, exp.Expr] = {}
        for term in terms:
            pair = _column_equals_constant(term.unnest())
            if pair is None or pair[0].name.lower() in pinned:
                return None
            column, value = pair
            if not rows:
                columns.append(column)
            pinned[column.name.lower()] = value
        if len(pinned) != len(columns) or any(c.name.lower() not in pinned for c in columns):
            return None
        rows.append([pinned[c.name.lower()] for c in columns])
    return (columns, rows) if len(rows) > 1 else None


def _column_equals_constant(term: exp.Expr) -> tuple[exp.Column, exp.Expr] | None:
    if not isinstance(term, exp.EQ):
        return None
    for column, value in ((term.this, term.expression), (term.expression, term.this)):
        if isinstance(column, exp.Column) and is_constant(value):
            return column, value
    return None


def is_constant(node: exp.Expr) -> bool:
    """Whether a node has one value for a whole statement: literals, parameters of a
    statement shape and operators over them (no column, function call or variable)."""
    return node.find(exp.Column, exp.Func, exp.Parameter, exp.Select, exp.Placeholder) is None


def _membership(scope: Scope, probes: list[exp.Expr], options: list[list[exp.Expr]]) -> Compiled:
    """Whether the probes' values equal one of the option rows (an OR of point equalities),
    in MySQL's three-valued logic."""
    keys, members = _members(scope, probes, options)
    probe_fns = [_keyed(compile_expr(p, scope), key) for p, key in zip(probes, keys, strict=True)]
    if len(probe_fns) == 1:
        (single,) = probe_fns

        def run_one(ctx: Context) -> int | None:
            value = single(ctx)
            return None if value is None else members(ctx).contains((value,))

        return run_one

    return lambda ctx: members(ctx).contains(tuple(fn(ctx) for fn in probe_fns))


def _members(
    scope: Scope, probes: list[exp.Expr], options: list[list[exp.Expr]]
) -> tuple[list[Key | None], Callable[[Context], _Members]]:
    """The option rows of a membership test (IN, an OR of point equalities), and the key
    each probe's value is compared as. Constant options are evaluated once per statement
    and hashed (`_Members`), so a 10,000-item list costs a lookup a row."""
    keys: list[Key | None] = []
    columns: list[list[Compiled]] = []
    cis: list[bool] = []
    for at, probe in enumerate(probes):
        values = [row[at] for row in options]
        probe_key, *value_keys = _comparison_keys(scope, [probe, *values])
        keys.append(probe_key)
        columns.append(
            [_keyed(compile_expr(v, scope), k) for v, k in zip(values, value_keys, strict=True)]
        )
        cis.append(_is_ci(probe, *values, scope=scope))
    option_fns = [list(row) for row in zip(*columns, strict=True)]
    constant = all(is_constant(v) for row in options for v in row)
    key = id(option_fns)

    def members(ctx: Context) -> _Members:
        if not constant:
            return _Members([[fn(ctx) for fn in row] for row in option_fns], cis)
        if ctx.memo is None:
            ctx.memo = {}
        found = ctx.memo.get(key)
        if found is None or found[0] is not ctx.params:  # a statement shape's next row
            found = ctx.memo[key] = (
                ctx.params,
                _Members([[fn(ctx) for fn in row] for row in option_fns], cis),
            )
        return found[1]

    return keys, members


def _hash_kind(value: Any) -> str | None:
    """How a value can be looked up by hash with `compare`'s equality: exact numbers by
    value, strings by their PAD SPACE key; None for the rest (compared one by one)."""
    kind = type(value)
    return "number" if kind in _EXACT_NUMBERS else "text" if kind is str else None


class _Members:
    """Option rows of a membership test, hashed where every value at a position is of one
    `_hash_kind` (and none NULL), else compared in turn."""

    def __init__(self, options: list[list[Any]], cis: list[bool]) -> None:
        self.options, self.cis = options, cis
        kinds = [{_hash_kind(row[at]) for row in options} for at in range(len(cis))]
        self.kinds = [next(iter(k)) if len(k) == 1 else None for k in kinds]
        self.hashed: set[tuple[Any, ...]] | None = None
        if options and None not in self.kinds:
            self.hashed = {self._key(row) for row in options}

    def _key(self, row: list[Any] | tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(
            string_key(v, ci) if kind == "text" else v
            for v, kind, ci in zip(row, self.kinds, self.cis, strict=True)
        )

    def contains(self, probe: tuple[Any, ...]) -> int | None:
        if self.hashed is not None and all(
            _hash_kind(v) == kind for v, kind in zip(probe, self.kinds, strict=True)
        ):
            return int(self._key(probe) in self.hashed)
        saw_null = False
        for row in self.options:
            result: int | None = 1
            for value, option, ci in zip(probe, row, self.cis, strict=True):
                order = compare(value, option, ci)
                if order is None:
                    result = None
                elif order:
                    result = 0
                    break
            if result == 1:
                return 1
            saw_null |= result is None
        return None if saw_null else 0


def _between(node: exp.Between, scope: Scope) -> tuple[exp.Expr, Step]:
    ci, key, (low, high) = _predicate(node, scope, [node.args["low"], node.args["high"]])

    def step(ctx: Context, v: Any) -> int | None:
        v = v if key is None else key(v)
        a, b = compare(v, low(ctx), ci), compare(v, high(ctx), ci)
        if a is None or b is None:
            return 0 if (a is not None and a < 0) or (b is not None and b > 0) else None
        return int(a >= 0 and b <= 0)

    return node.this, step


def _like(node: exp.Expr, scope: Scope, escape: str = "\\") -> tuple[exp.Expr, Step]:
    """[NOT] LIKE: sqlglot marks NOT LIKE `negate`, and wraps `... ESCAPE c` around the
    node as exp.Escape (`_escape`)."""
    ci = _is_ci(node.this, node.expression, scope=scope)
    pattern = compile_expr(node.expression, scope)
    negate = bool(node.args.get("negate"))

    def step(ctx: Context, value: Any) -> int | None:
        result = like(value, pattern(ctx), escape, ci)
        return None if result is None else int(result != negate)

    return node.this, step


def _escape(node: exp.Escape, scope: Scope) -> tuple[exp.Expr, Step]:
    return _like(node.this, scope, node.expression.this)


def _case(node: exp.Case, scope: Scope) -> Compiled:
    subject = compile_expr(node.this, scope) if node.this is not None else None
    ci = node.this is not None and _is_ci(node.this, scope=scope)
    branches = [
        (compile_expr(i.this, scope), compile_expr(i.args["true"], scope))
        for i in node.args.get("ifs") or []
    ]
    default = node.args.get("default")
    otherwise = compile_expr(default, scope) if default is not None else (lambda ctx: None)

    def run(ctx: Context) -> Any:
        value = subject(ctx) if subject is not None else None
        for cond, result in branches:
            hit = compare(value, cond(ctx), ci) == 0 if subject is not None else truth(cond(ctx))
            if hit:
                return result(ctx)
        return otherwise(ctx)

    return run


def _if(node: exp.If, scope: Scope) -> Compiled:
    cond = compile_expr(node.this, scope)
    then = compile_expr(node.args["true"], scope)
    false = node.args.get("false")
    otherwise = compile_expr(false, scope) if false is not None else (lambda ctx: None)
    return lambda ctx: then(ctx) if truth(cond(ctx)) else otherwise(ctx)


def _coalesce(node: exp.Expr, scope: Scope) -> Compiled:
    parts = [compile_expr(node.this, scope)] + [compile_expr(e, scope) for e in node.expressions]

    def run(ctx: Context) -> Any:
        for part in parts:
            value = part(ctx)
            if value is not None:
                return value
        return None

    return run


def _nullif(node: exp.Expr, scope: Scope) -> Compiled:
    ci = _is_ci(node.this, node.expression, scope=scope)
    left, right = _compared(scope, node.this, node.expression)

    def run(ctx: Context) -> Any:
        a = left(ctx)
        return None if compare(a, right(ctx), ci) == 0 else a

    return run


def _cast_decimal(to: exp.DataType) -> Callable[[Any], Decimal]:
    """CAST(x AS DECIMAL(M, D)): rounded to D places, held within DECIMAL(M, D) (TiDB
    clamps with a warning); M and D checked as a column's are."""
    params = [int(p.this.this) for p in to.expressions] or [10]
    precision, scale = params[0], params[1] if len(params) > 1 else 0
    if precision > 65:
        message = f"Too-big precision {precision} specified for 'CAST'. Maximum is 65."
        raise SQLError(message, code=1426)
    if scale > 30:
        message = f"Too big scale {scale} specified for column 'CAST'. Maximum is 30."
        raise SQLError(message, code=1425)
    if scale > precision:
        message = "For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column '')."
        raise SQLError(message, code=1427)
    quantum = Decimal(1).scaleb(-scale)
    top = WIDE.subtract(Decimal(10).scaleb(precision - scale - 1), quantum)

    def cast(value: Any) -> Decimal:
        number = Decimal(to_number(value))
        if number.copy_abs() > top:
            return top if number > 0 else top.copy_negate()
        return WIDE.quantize(number, quantum)

    return cast


def _cast_integer(value: Any, unsigned: bool) -> int:
    """CAST(x AS SIGNED | UNSIGNED): an integer wraps around 64 bits; other numbers are
    rounded and held within BIGINT's range first (TiDB, with a warning)."""
    number = to_number(value)
    if isinstance(number, int) and BIGINT_MIN <= number <= UBIGINT_MAX:
        wrapped = number & _UINT64_MASK
    else:
        rounded = number if isinstance(number, int) else round_half_away(Decimal(number))
        if unsigned:
            return max(0, min(rounded, UBIGINT_MAX))
        return max(BIGINT_MIN, min(rounded, 2**63 - 1))
    return wrapped if unsigned or wrapped < 2**63 else wrapped - 2**64


def _cast(node: exp.Cast, scope: Scope) -> Compiled:
    inner = compile_expr(node.this, scope)
    to = node.to
    kind = to.this
    decimal = _cast_decimal(to) if kind == exp.DType.DECIMAL else None

    def run(ctx: Context) -> Any:
        value = inner(ctx)
        if value is None:
            return None
        if kind in (exp.DType.BIGINT, exp.DType.INT, exp.DType.UBIGINT, exp.DType.UINT):
            return _cast_integer(value, kind in (exp.DType.UBIGINT, exp.DType.UINT))
        if decimal is not None:
            return decimal(value)
        if kind in (exp.DType.DOUBLE, exp.DType.FLOAT):
            return float(to_number(value))
        if kind in (exp.DType.DATE, exp.DType.DATETIME, exp.DType.TIMESTAMP):
            moment = parse_datetime(value, 6)
            if moment is None:
                return None
            if kind == exp.DType.DATE:
                return format_date(moment)
            return format_datetime(moment, 6 if moment.microsecond else 0)
        if kind == exp.DType.JSON:
            if isinstance(value, JSONValue):
                return value
            if isinstance(value, str | bytes):
                text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                return JSONValue(json_text(parse_json(text, _CAST_JSON, 3141)))
            return JSONValue(json_text(to_number(value)))
        if kind in (exp.DType.BINARY, exp.DType.VARBINARY):
            return value if isinstance(value, bytes) else utf8(as_text(value))
        return as_text(value)

    return run


_CAST_JSON = "in argument 1 to function cast_as_json"


def _interval_delta(unit: str, amount: Any) -> dt.timedelta | int:
    """A timedelta, or a month count for MONTH/QUARTER/YEAR units."""
    number = to_number(amount)
    unit = unit.upper()
    months = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}
    if unit in months:
        return int(number) * months[unit]
    seconds = {
        "MICROSECOND": 1e-6,
        "SECOND": 1,
        "MINUTE": 60,
        "HOUR": 3600,
        "DAY": 86400,
        "WEEK": 604800,
    }
    if unit not in seconds:
        raise SQLError(f"unsupported INTERVAL unit {unit}", code=1105)
    return dt.timedelta(seconds=float(number) * seconds[unit])


_DATE_UNITS = frozenset({"YEAR", "QUARTER", "MONTH", "WEEK", "DAY"})


def add_interval(value: Any, unit: str, amount: Any, sign: int) -> Any:
    """A date or datetime moved by an interval; NULL past year 9999 or before year 1
    (MySQL, with a warning)."""
    if value is None or amount is None:
        return None
    try:
        return _add_interval(value, unit, amount, sign)
    except (OverflowError, ValueError):
        return None


def _add_interval(value: Any, unit: str, amount: Any, sign: int) -> Any:
    moment = parse_datetime(value, 6)
    if moment is None:
        return None
    delta = _interval_delta(unit, amount)
    if isinstance(delta, int):
        months = moment.year * 12 + moment.month - 1 + sign * delta
        year, month = divmod(months, 12)
        month += 1
        days = [31, 29 if year % 4 == 0 and (year % 100 or year % 400 == 0) else 28, 31, 30,
                31, 30, 31, 31, 30, 31, 30, 31][month - 1]  # fmt: skip
        moment = moment.replace(year=year, month=month, day=min(moment.day, days))
    else:
        moment = moment + sign * delta
    # MySQL: a date moved by whole days or more stays a date (`'2024-01-31' + INTERVAL 1 DAY`
    # is '2024-02-01'); a datetime, or a move by hours or less, is a datetime
    has_time = isinstance(value, str) and len(value.strip()) > 10 or unit.upper() not in _DATE_UNITS
    if not has_time and moment.time() == dt.time():
        return format_date(moment)
    return format_datetime(moment, 6 if moment.microsecond else 0)


def _interval_arith(sign: int) -> StepBuilder:
    """+ and -: of numbers, or of a date and an INTERVAL (`INTERVAL 1 DAY + d` too)."""
    numeric = _binary(
        _arith(operator.add, WIDE.add) if sign > 0 else _arith(operator.sub, WIDE.subtract)
    )

    def build(node: exp.Expr, scope: Scope) -> tuple[exp.Expr, Step]:
        base, interval = node.this, node.expression
        unitless = isinstance(interval, exp.Interval) and interval.args.get("unit") is None
        if isinstance(base, exp.Interval) and unitless:
            # sqlglot reads the date of `INTERVAL 1 DAY + '2024-01-31'` as an INTERVAL
            interval = interval.this
        if not isinstance(interval, exp.Interval):
            if not (sign > 0 and isinstance(base, exp.Interval)):
                return numeric(node, scope)
            base, interval = interval, base
        amount = compile_expr(interval.this, scope)
        unit = interval.text("unit") or "DAY"
        return base, lambda ctx, value: add_interval(value, unit, amount(ctx), sign)

    return build


def _date_add(sign: int) -> Callable[[exp.Expr, Scope], Compiled]:
    def build(node: exp.Expr, scope: Scope) -> Compiled:
        base = compile_expr(node.this, scope)
        amount = compile_expr(node.expression, scope)
        unit = node.text("unit") or "DAY"
        return lambda ctx: add_interval(base(ctx), unit, amount(ctx), sign)

    return build


def _current_timestamp(node: exp.Expr, scope: Scope) -> Compiled:
    fsp = int(node.this.this) if node.this is not None else 0
    return lambda ctx: ctx.session.now(fsp)


def _strict(fn: Callable[..., Any], node: exp.Expr) -> Callable[[list[Compiled]], Compiled]:
    """A function of evaluated arguments that is NULL when any argument is NULL; a result
    past its type's range is error 1690 naming `node`."""

    def build(args: list[Compiled]) -> Compiled:
        def run(ctx: Context) -> Any:
            values = [a(ctx) for a in args]
            if any(v is None for v in values):
                return None
            try:
                return fn(*values)
            except _RANGE_ERRORS as e:
                raise _out_of_range(e, node, ctx.params) from None

        return run

    return build


def _args_of(node: exp.Expr) -> list[exp.Expr]:
    return [c for c in node.iter_expressions() if not isinstance(c, exp.DataType)]


def _function(fn: Callable[..., Any]) -> Callable[[exp.Expr, Scope], Compiled]:
    def build(node: exp.Expr, scope: Scope) -> Compiled:
        return _strict(fn, node)([compile_expr(a, scope) for a in _args_of(node)])

    return build


def _concat(*parts: Any) -> Any:
    if any(isinstance(p, bytes) for p in parts):
        return b"".join(p if isinstance(p, bytes) else utf8(as_text(p)) for p in parts)
    return "".join(as_text(p) for p in parts)


def _concat_ws(node: exp.Expr, scope: Scope) -> Compiled:
    sep, *parts = [compile_expr(e, scope) for e in node.expressions]

    def run(ctx: Context) -> Any:
        separator = sep(ctx)
        if separator is None:
            return None
        values = [as_text(v) for v in (p(ctx) for p in parts) if v is not None]
        return as_text(separator).join(values)

    return run


def _length(node: exp.Expr, scope: Scope) -> Compiled:
    inner = compile_expr(node.this, scope)
    in_bytes = bool(node.args.get("binary"))

    def run(ctx: Context) -> Any:
        value = inner(ctx)
        if value is None:
            return None
        if isinstance(value, bytes):
            return len(value)
        text = as_text(value)
        return len(utf8(text)) if in_bytes else len(text)

    return run


def _substring(text: Any, start: Any, length: Any = None) -> Any:
    s, pos = as_text(text), int(to_number(start))
    if pos == 0:
        return ""
    begin = pos - 1 if pos > 0 else len(s) + pos
    if begin < 0:
        return ""
    if length is None:
        return s[begin:]
    count = int(to_number(length))
    return s[begin : begin + count] if count > 0 else ""


# room for every digit of a double (309 before the point) at up to 400 places either side
_PLACES = DecimalContext(prec=1000)


def _to_places(rounding: str, double_rounding: str) -> Callable[..., Any]:
    """ROUND and TRUNCATE to `places` decimals, negative ones left of the point: exact
    numbers keep at most 30 decimals (MySQL's DECIMAL scale) and round half away from zero,
    doubles round half to even (TiDB types.RoundFloat, math.RoundToEven)."""

    def run(value: Any, places: Any = 0) -> Any:
        number = to_number(value)
        digits = max(-400, min(int(to_number(places)), 400))
        if not isinstance(number, float):
            digits = min(digits, 30)
        exact = Decimal(repr(number)) if isinstance(number, float) else Decimal(number)
        mode = double_rounding if isinstance(number, float) else rounding
        result = exact.quantize(Decimal(1).scaleb(-digits), mode, _PLACES)
        if isinstance(number, float):
            return float(result)
        return int(result) if isinstance(number, int) and digits <= 0 else result

    return run


def _ceil_floor(rounding: str) -> Callable[[Any], Any]:
    """CEIL and FLOOR keep their argument's kind: a double stays a double (MySQL)."""

    def run(value: Any) -> Any:
        number = to_number(value)
        if isinstance(number, int):
            return number
        result = Decimal(repr(number) if isinstance(number, float) else number)
        whole = result.to_integral_value(rounding, _PLACES)
        return float(whole) if isinstance(number, float) else int(whole)

    return run


def _pow(base: Any, exponent: Any) -> float:
    try:
        return _double_result(math.pow(float(to_number(base)), float(to_number(exponent))))
    except ValueError:  # 0 to a negative power, a negative base to a fraction (TiDB: 1690)
        raise OutOfRange("DOUBLE") from None


# TiDB's max_allowed_packet: REPEAT, LPAD and RPAD give NULL past it (with a warning)
MAX_ALLOWED_PACKET = 67108864


def _repeat(text: Any, count: Any) -> Any:
    s, n = as_text(text), int(to_number(count))
    if n > 0 and len(s) * n > MAX_ALLOWED_PACKET:
        return None
    return s * max(n, 0)


def _pad(node: exp.Expr, scope: Scope) -> Compiled:
    left = bool(node.args.get("is_left"))
    args = [compile_expr(a, scope) for a in _args_of(node)]

    def pad(text: Any, length: Any, fill: Any = " ") -> Any:
        s, n, f = as_text(text), int(to_number(length)), as_text(fill)
        if n < 0 or n > MAX_ALLOWED_PACKET:
            return None
        if len(s) >= n:
            return s[:n]
        if not f:
            return None
        filler = (f * (n // len(f) + 1))[: n - len(s)]
        return filler + s if left else s + filler

    return _strict(pad, node)(args)


def _extreme(pick: Callable[[list[Any]], Any]) -> Callable[[exp.Expr, Scope], Compiled]:
    def build(node: exp.Expr, scope: Scope) -> Compiled:
        parts = [compile_expr(node.this, scope)] + [
            compile_expr(e, scope) for e in node.expressions
        ]

        def run(ctx: Context) -> Any:
            values = [p(ctx) for p in parts]
            if any(v is None for v in values):
                return None
            if all(isinstance(v, str) for v in values):
                return pick(values)
            numbers = [to_number(v) for v in values]
            return pick(numbers)

        return run

    return build


def _json_object(node: exp.Expr, scope: Scope) -> Compiled:
    pairs = [
        (compile_expr(kv.this, scope), compile_expr(kv.expression, scope))
        for kv in node.expressions
    ]

    def run(ctx: Context) -> JSONValue:
        doc = {as_text(k(ctx)): _json_doc(v(ctx)) for k, v in pairs}
        return JSONValue(json_text(doc))

    return run


def _json_array(node: exp.Expr, scope: Scope) -> Compiled:
    items = [compile_expr(e, scope) for e in node.expressions]
    return lambda ctx: JSONValue(json_text([_json_doc(i(ctx)) for i in items]))


def _json_doc(value: Any) -> Any:
    if isinstance(value, JSONValue):
        return json.loads(value.text, parse_float=Decimal)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str) and not value.isascii():
        return raw_bytes(value).decode("utf-8", "replace")  # bytes not UTF-8: U+FFFD
    return value


_JSON_PATH_STEP = re.compile(r"\s*(?:\.\s*(\"[^\"]*\"|[A-Za-z_$][\w$]*)|\[\s*(\d+)\s*\])")


def _json_path_steps(path: str) -> list[str | int]:
    """The member names and array indexes of a JSON path (`$.a[0]."b c"`); anything else
    is MySQL's error 3143 (wildcards are not modelled here)."""
    text = path.strip()
    at = 1 if text.startswith("$") else 0
    steps: list[str | int] = []
    while at and at < len(text):
        found = _JSON_PATH_STEP.match(text, at)
        if found is None:
            break
        key, index = found.groups()
        steps.append(int(index) if index is not None else key.strip('"'))
        at = found.end()
    if not at or at < len(text):
        raise SQLError(
            f"Invalid JSON path expression. The error is around character position {max(at, 1)}.",
            code=3143,
        )
    return steps


def _json_path_of(path: exp.Expr, scope: Scope) -> Callable[[Context], list[str | int]]:
    if isinstance(path, exp.Literal | exp.JSONPath):
        fixed = _json_path_steps(path.sql(dialect="mysql").strip("'"))
        return lambda ctx: fixed
    text = compile_expr(path, scope)  # a statement shape's parameter, or an expression
    return lambda ctx: _json_path_steps(as_text(text(ctx)))


def _json_extract(unquote: bool) -> Callable[[exp.Expr, Scope], Compiled]:
    name = "json_unquote(json_extract)" if unquote else "json_extract"

    def build(node: exp.Expr, scope: Scope) -> Compiled:
        doc = compile_expr(node.this, scope)
        path_of = _json_path_of(node.expression, scope)

        def run(ctx: Context) -> Any:
            value = doc(ctx)
            if value is None:
                return None
            current = parse_json(as_text(value), f"in argument 1 to function {name}", 3141)
            for step in path_of(ctx):
                if isinstance(step, int):
                    found = isinstance(current, list) and step < len(current)
                else:
                    found = isinstance(current, dict) and step in current
                if not found:
                    return None
                current = current[step]
            if unquote and isinstance(current, str):
                return current
            return JSONValue(json_text(current))

        return run

    return build


def _introducer(node: exp.Expr, scope: Scope) -> Compiled:
    return compile_expr(node.expression, scope)


def _default_of(node: exp.Expr, scope: Scope) -> Compiled:
    index, _ = scope.resolve(node.this)

    def run(ctx: Context) -> Any:
        if ctx.defaults is None:
            raise SQLError("DEFAULT(col) is only allowed in INSERT/UPDATE values", code=1105)
        return ctx.defaults(index)

    return run


def _hex(value: Any) -> str:
    if isinstance(value, int | float | Decimal) and not isinstance(value, BinaryLiteral):
        return format(int(to_number(value)), "X")
    data = value if isinstance(value, bytes) else utf8(as_text(value))
    return data.hex().upper()


def _unhex(value: Any) -> Any:
    digits = as_text(value)
    try:
        return bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits)
    except ValueError:
        return None


def _md5(value: Any) -> str:
    data = value if isinstance(value, bytes) else utf8(as_text(value))
    return hashlib.md5(data).hexdigest()


def _sha1(value: Any) -> str:
    data = value if isinstance(value, bytes) else utf8(as_text(value))
    return hashlib.sha1(data).hexdigest()


def _date_part(fmt: Callable[[dt.datetime], Any]) -> Callable[[Any], Any]:
    def run(value: Any) -> Any:
        moment = parse_datetime(value, 6)
        return None if moment is None else fmt(moment)

    return run


_DATE_FORMATS = {
    "%Y": "%Y", "%m": "%m", "%d": "%d", "%H": "%H", "%i": "%M", "%s": "%S", "%S": "%S",
    "%y": "%y", "%M": "%B", "%b": "%b", "%a": "%a", "%W": "%A", "%j": "%j", "%p": "%p",
    "%T": "%H:%M:%S", "%%": "%%", "%e": "%-d", "%c": "%-m", "%k": "%-H", "%h": "%I",
    "%I": "%I", "%l": "%-I",
}  # fmt: skip


def _date_format(value: Any, fmt: Any) -> Any:
    """DATE_FORMAT: each `%x` of the format as MySQL reads it, the rest as it is (never
    handed to strftime, which reads the user's text its own way)."""
    moment = parse_datetime(value, 6)
    if moment is None:
        return None

    def one(found: re.Match[str]) -> str:
        spec = found.group(0)
        if spec == "%f":
            return f"{moment.microsecond:06d}"
        if spec == "%Y":  # strftime pads years below 1000 only on some platforms
            return f"{moment.year:04d}"
        directive = _DATE_FORMATS.get(spec)
        return spec[1:] if directive is None else moment.strftime(directive)

    return re.sub(r"%.?", one, as_text(fmt), flags=re.DOTALL)


def _from_unixtime(ctx: Context, seconds: Any) -> Any:
    number = to_number(seconds)
    if not 0 <= number <= _LAST_UNIX_SECOND:  # MySQL: NULL outside TIMESTAMP's range
        return None
    moment = dt.datetime.fromtimestamp(float(number), ctx.session.time_zone())
    return format_datetime(moment.replace(tzinfo=None), 6 if moment.microsecond else 0)


_LAST_UNIX_SECOND = 32536771199.999999  # 3001-01-18 23:59:59.999999 UTC, MySQL 8.0's last


def _convert_tz(source: Any, target: Any, value: Any) -> Any:
    """CONVERT_TZ(dt, from, to) (sqlglot's ConvertTimezone, the zones first): NULL for a zone
    MySQL does not know, as MySQL answers."""
    moment = parse_datetime(value, 6)
    if moment is None:
        return None
    try:
        zones = load_zone(as_text(source)), load_zone(as_text(target))
    except SQLError:
        return None
    moved = moment.replace(tzinfo=zones[0]).astimezone(zones[1]).replace(tzinfo=None)
    return format_datetime(moved, 6 if moved.microsecond else 0)


def _unix_timestamp(ctx: Context, value: Any = ...) -> Any:
    if value is ...:
        return ctx.session.unix_timestamp()
    moment = parse_datetime(value, 6)
    if moment is None:
        return 0
    seconds = moment.replace(tzinfo=ctx.session.time_zone()).timestamp()
    return int(seconds) if not moment.microsecond else Decimal(repr(seconds))


# Functions needing the session (NOW, RAND ...) or several arities, by upper-case name.
_SESSION_FUNCS: dict[str, Callable[..., Any]] = {
    "NOW": lambda ctx, fsp=0: ctx.session.now(int(fsp)),
    "SYSDATE": lambda ctx, fsp=0: ctx.session.now(int(fsp)),
    "LOCALTIME": lambda ctx, fsp=0: ctx.session.now(int(fsp)),
    "LOCALTIMESTAMP": lambda ctx, fsp=0: ctx.session.now(int(fsp)),
    "CURDATE": lambda ctx: ctx.session.current_date(),
    "CURTIME": lambda ctx, fsp=0: ctx.session.now(int(fsp))[11:],
    "UTC_TIMESTAMP": lambda ctx, fsp=0: ctx.session.now(int(fsp)),
    "UNIX_TIMESTAMP": _unix_timestamp,
    "FROM_UNIXTIME": _from_unixtime,
    "RAND": lambda ctx, seed=None: ctx.session.rand(),
    "UUID": lambda ctx: ctx.session.uuid(),
    "LAST_INSERT_ID": lambda ctx: ctx.session.last_insert_id(),
    # nothing waits: the simulated clock moves on (TSOClock), so a script can pass a
    # changefeed's flush interval or a date boundary at once
    "SLEEP": lambda ctx, seconds: ctx.session.sleep(
        None if seconds is None else float(to_number(seconds))
    ),
    # what drivers ask on connect; the session answers by these pseudo-variable names
    "DATABASE": lambda ctx: ctx.session.variable("database()"),
    "SCHEMA": lambda ctx: ctx.session.variable("database()"),
    "VERSION": lambda ctx: ctx.session.variable("version"),
    "USER": lambda ctx: ctx.session.variable("user()"),
    "CURRENT_USER": lambda ctx: ctx.session.variable("user()"),
    "SESSION_USER": lambda ctx: ctx.session.variable("user()"),
    "SYSTEM_USER": lambda ctx: ctx.session.variable("user()"),
    "CONNECTION_ID": lambda ctx: ctx.session.variable("connection_id()"),
}

# Pure functions by upper-case name, NULL in -> NULL out.
_NAMED: dict[str, Callable[..., Any]] = {
    "CONCAT": _concat,
    "CONVERT_TIMEZONE": _convert_tz,
    "UPPER": lambda s: as_text(s).upper(),
    "UCASE": lambda s: as_text(s).upper(),
    "LOWER": lambda s: as_text(s).lower(),
    "LCASE": lambda s: as_text(s).lower(),
    "SUBSTRING": _substring,
    "SUBSTR": _substring,
    "MID": _substring,
    "LEFT": lambda s, n: as_text(s)[: max(int(to_number(n)), 0)],
    "RIGHT": lambda s, n: as_text(s)[-int(to_number(n)) :] if int(to_number(n)) > 0 else "",
    "REPLACE": lambda s, a, b: as_text(s).replace(as_text(a), as_text(b)) if a != "" else s,
    "REPEAT": _repeat,
    "REVERSE": lambda s: as_text(s)[::-1],
    "TRIM": lambda s: as_text(s).strip(" "),
    "LTRIM": lambda s: as_text(s).lstrip(" "),
    "RTRIM": lambda s: as_text(s).rstrip(" "),
    "ABS": lambda n: _abs(to_number(n)),
    "CEIL": _ceil_floor(ROUND_CEILING),
    "CEILING": _ceil_floor(ROUND_CEILING),
    "FLOOR": _ceil_floor(ROUND_FLOOR),
    "ROUND": _to_places(ROUND_HALF_UP, ROUND_HALF_EVEN),
    "TRUNCATE": _to_places(ROUND_DOWN, ROUND_DOWN),
    "TRUNC": _to_places(ROUND_DOWN, ROUND_DOWN),
    "MOD": modulo,
    "POW": _pow,
    "POWER": _pow,
    "SQRT": lambda a: math.sqrt(float(to_number(a))) if to_number(a) >= 0 else None,
    "SIGN": lambda a: (to_number(a) > 0) - (to_number(a) < 0),
    "HEX": _hex,
    "UNHEX": _unhex,
    "MD5": _md5,
    "SHA1": _sha1,
    "SHA": _sha1,
    "ASCII": lambda s: (utf8(as_text(s))[:1] or b"\0")[0],
    "DATE": _date_part(format_date),
    "YEAR": _date_part(lambda m: m.year),
    "MONTH": _date_part(lambda m: m.month),
    "DAY": _date_part(lambda m: m.day),
    "DAYOFMONTH": _date_part(lambda m: m.day),
    "HOUR": _date_part(lambda m: m.hour),
    "MINUTE": _date_part(lambda m: m.minute),
    "SECOND": _date_part(lambda m: m.second),
    "DATE_FORMAT": _date_format,
    "TO_DAYS": _date_part(lambda m: m.toordinal() + 365),
    "DATEDIFF": lambda a, b: (
        None
        if parse_datetime(a, 0) is None or parse_datetime(b, 0) is None
        else (parse_datetime(a, 0).date() - parse_datetime(b, 0).date()).days  # type: ignore[union-attr]
    ),
}


def _named(name: str, node: exp.Expr, arg_nodes: list[exp.Expr], scope: Scope) -> Compiled:
    return _strict(_NAMED[name], node)([compile_expr(a, scope) for a in arg_nodes])


def _anonymous(node: exp.Anonymous, scope: Scope) -> Compiled:
    name = node.name.upper()
    if name in ("NEXTVAL", "LASTVAL", "SETVAL") and node.expressions:
        target, *rest = node.expressions
        return _sequence_call(name, target, rest[0] if rest else None, scope)
    if name == "VALUES" and len(node.expressions) == 1:
        column = node.expressions[0]
        index, _ = scope.resolve(exp.column(column.name))
        return lambda ctx: ctx.inserted[index] if ctx.inserted else None
    if name in ("ADDDATE", "SUBDATE") and len(node.expressions) == 2:
        # DATE_ADD and DATE_SUB, whose second argument may also be a number of days
        date, moved = node.expressions
        unit, days = "DAY", moved
        if isinstance(moved, exp.Interval):
            unit, days = moved.text("unit") or "DAY", moved.this
        base, amount = compile_expr(date, scope), compile_expr(days, scope)
        sign = 1 if name == "ADDDATE" else -1
        return lambda ctx: add_interval(base(ctx), unit, amount(ctx), sign)
    args = [compile_expr(a, scope) for a in node.expressions]
    session_fn = _SESSION_FUNCS.get(name)
    if session_fn is not None:
        return lambda ctx: session_fn(ctx, *[a(ctx) for a in args])
    if name in _NAMED:
        return _strict(_NAMED[name], node)(args)
    raise SQLError(f"FUNCTION {name} does not exist", code=1305)


def _no_arg_session(name: str) -> Callable[[exp.Expr, Scope], Compiled]:
    def build(node: exp.Expr, scope: Scope) -> Compiled:
        fn = _SESSION_FUNCS[name]
        return lambda ctx: fn(ctx)

    return build


def _date_trunc_to_date(node: exp.Expr, scope: Scope) -> Compiled:
    return _named("DATE", node, [node.this], scope)


def _boolean(node: exp.Boolean, scope: Scope) -> Compiled:
    value = int(bool(node.this))
    return lambda ctx: value


def _time_to_str(node: exp.Expr, scope: Scope) -> Compiled:
    target = node.this
    if isinstance(target, exp.TsOrDsToTimestamp | exp.TsOrDsToDate):
        target = target.this
    return _strict(_date_format, node)(
        [compile_expr(target, scope), compile_expr(node.args["format"], scope)]
    )


def _param(node: exp.Expr, scope: Scope) -> Compiled:
    index = node.this
    return lambda ctx: ctx.params[index]


def _placeholder(node: exp.Expr, scope: Scope) -> Compiled:
    raise SQLError("placeholders are not supported in scripts", code=1105)


def _group_function(node: exp.Expr, scope: Scope) -> Compiled:
    """An aggregate where no group is (WHERE, SET, VALUES): MySQL's error 1111 (a query's
    select list, HAVING and ORDER BY have theirs folded by grouping.py first)."""
    raise SQLError("Invalid use of group function", code=1111)


def _tuple(node: exp.Expr, scope: Scope) -> Compiled:
    if len(node.expressions) != 1:
        raise SQLError(f"row values are not supported: {sql_text(node)}", code=1105)
    return compile_expr(node.expressions[0], scope)


def _sequence_call(op: str, target: exp.Expr, value: exp.Expr | None, scope: Scope) -> Compiled:
    """NEXT VALUE FOR / NEXTVAL / LASTVAL / SETVAL on the sequence `target` names."""
    if not isinstance(target, exp.Column | exp.Table):
        raise SQLError(f"{op} needs a sequence name", code=1105)
    schema, name = target.text("table") or target.text("db") or None, target.name
    value_fn = compile_expr(value, scope) if value is not None else None

    def run(ctx: Context) -> Any:
        given = value_fn(ctx) if value_fn is not None else None
        return ctx.session.sequence(op, schema, name, given)

    return run


def _session_call(name: str, arg_nodes: list[exp.Expr], scope: Scope) -> Compiled:
    fn = _SESSION_FUNCS[name]
    args = [compile_expr(a, scope) for a in arg_nodes]

    def run(ctx: Context) -> Any:
        values = [a(ctx) for a in args]
        return None if any(v is None for v in values) else fn(ctx, *values)

    return run


def _session_variable(node: exp.Expr, scope: Scope) -> Compiled:
    name = node.name.lower()
    return lambda ctx: ctx.session.variable(name)


def _user_variable(node: exp.Parameter, scope: Scope) -> Compiled:
    name = node.name.lower()  # user variable names are case-insensitive (MySQL)
    return lambda ctx: ctx.session.user_variable(name)


def _assign(node: exp.PropertyEQ, scope: Scope) -> Compiled:
    """`@x := expr` inside an expression: assigns, and is the value assigned."""
    target = node.this
    if not isinstance(target, exp.Parameter):
        raise SQLError(f"unsupported assignment: {sql_text(node)[:80]}", code=1105)
    name, value = target.name.lower(), compile_expr(node.expression, scope)
    return lambda ctx: ctx.session.set_user_variable(name, value(ctx))


_BUILDERS: dict[type, Callable[[Any, Scope], Compiled]] = {
    exp.SessionParameter: _session_variable,
    exp.Parameter: _user_variable,
    exp.PropertyEQ: _assign,
    exp.NextValueFor: lambda node, scope: _sequence_call("NEXTVAL", node.this, None, scope),
    exp.UnixToTime: lambda node, scope: _session_call("FROM_UNIXTIME", [node.this], scope),
    exp.Literal: _literal,
    exp.Null: lambda node, scope: lambda ctx: None,
    exp.Boolean: _boolean,
    exp.HexString: lambda node, scope: _binary_literal(node, 16),
    exp.BitString: lambda node, scope: _binary_literal(node, 2),
    exp.Column: _column,
    exp.Paren: _paren,
    exp.Tuple: _tuple,
    exp.Neg: _neg,
    exp.BitwiseNot: lambda node, scope: _strict(lambda a: ~_uint64(a) & _UINT64_MASK, node)(
        [compile_expr(node.this, scope)]
    ),
    exp.Case: _case,
    exp.If: _if,
    exp.Coalesce: _coalesce,
    exp.Nullif: _nullif,
    exp.Cast: _cast,
    exp.TryCast: _cast,
    exp.DateAdd: _date_add(1),
    exp.DateSub: _date_add(-1),
    exp.CurrentTimestamp: _current_timestamp,
    exp.CurrentDate: _no_arg_session("CURDATE"),
    exp.Rand: _no_arg_session("RAND"),
    exp.Uuid: _no_arg_session("UUID"),
    exp.CurrentSchema: _no_arg_session("DATABASE"),
    exp.CurrentVersion: _no_arg_session("VERSION"),
    exp.CurrentUser: _no_arg_session("CURRENT_USER"),
    exp.Concat: _function(_concat),
    exp.ConcatWs: _concat_ws,
    exp.Length: _length,
    exp.Pad: _pad,
    exp.Greatest: _extreme(max),
    exp.Least: _extreme(min),
    exp.JSONObject: _json_object,
    exp.JSONArray: _json_array,
    exp.JSONExtract: _json_extract(unquote=False),
    exp.JSONExtractScalar: _json_extract(unquote=True),
    exp.Introducer: _introducer,
    exp.National: lambda node, scope: _literal(exp.Literal.string(node.this), scope),
    exp.TsOrDsToDate: _date_trunc_to_date,
    exp.TimeToStr: _time_to_str,
    exp.Placeholder: _placeholder,
    **dict.fromkeys((exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max), _group_function),
    d.DefaultOf: _default_of,
    Param: _param,
}


# Operators compiled as steps of a left-deep chain (`_chain`): every binary operator, the
# predicates that take their left operand first, and NOT (which IS NOT, NOT BETWEEN and NOT
# IN chain through).
_STEPS: dict[type, StepBuilder] = {
    exp.Add: _interval_arith(1),
    exp.Sub: _interval_arith(-1),
    exp.Mul: _binary(_arith(operator.mul, WIDE.multiply)),
    exp.Div: _binary(divide, _divisor),
    exp.IntDiv: _binary(int_divide, _divisor),
    exp.Mod: _binary(modulo, _divisor),
    exp.BitwiseAnd: _binary(_bits(operator.and_)),
    exp.BitwiseOr: _binary(_bits(operator.or_)),
    exp.BitwiseXor: _binary(_bits(operator.xor)),
    exp.BitwiseLeftShift: _binary(_bits(lambda x, n: x << n & _UINT64_MASK if n < 64 else 0)),
    exp.BitwiseRightShift: _binary(_bits(lambda x, n: x >> n if n < 64 else 0)),
    exp.And: _and,
    exp.Or: _or,
    exp.Xor: _xor,
    exp.EQ: _comparison(lambda r: r == 0),
    exp.NEQ: _comparison(lambda r: r != 0),
    exp.GT: _comparison(lambda r: r > 0),
    exp.GTE: _comparison(lambda r: r >= 0),
    exp.LT: _comparison(lambda r: r < 0),
    exp.LTE: _comparison(lambda r: r <= 0),
    exp.NullSafeEQ: _null_safe_eq,
    exp.Like: _like,
    exp.ILike: _like,
    exp.Escape: _escape,
    exp.Is: _is,
    exp.In: _in,
    exp.Between: _between,
    exp.Not: _not,
}


def evaluate_constant(node: exp.Expr, session: SessionFunctions) -> Any:
    """Evaluate an expression that references no column (DEFAULT exprs, SET values)."""
    return compile_expr(node, Scope())(Context(session=session))


def stable_uuid(seed: int, counter: int) -> str:
    """A version-1-shaped UUID drawn from (seed, counter): deterministic, unique per call."""
    digest = hashlib.sha256(f"{seed}:{counter}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=1))
