"""The names a SELECT's result columns get, as TiDB gives them.

TiDB names a select-list column by its alias, by the column's name as written for a column
reference, and otherwise by the field's own text as written (TiDB
`pkg/planner/core/logical_plan_builder.go` `buildProjectionFieldNameFromExpressions`):
`SELECT DATABASE(), NOW() IS NOT NULL` answers columns `DATABASE()` and `NOW() IS NOT NULL`,
not a regenerated `SCHEMA()`. Literals are the exceptions: a string is named by its content,
NULL, TRUE and FALSE by those words, a number by its text without enclosing parentheses or a
leading `+`. Names are cut to 256 bytes (`mysql.MaxAliasIdentifierLen`, TiDB
`pkg/server/internal/column` for issue 10513).

The field texts come from the statement's tokens: the select list runs from SELECT (and its
options) to the first FROM, INTO, WHERE ... outside parentheses, split at the commas there.
"""

from __future__ import annotations

import unicodedata

from sqlglot import exp
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import Token, TokenType

from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.evaluate import sql_text

MAX_LABEL_BYTES = 256

# words between SELECT and its first field (TiDB parser.y `SelectStmtOpts`)
_SELECT_OPTIONS = frozenset(
    {"ALL", "DISTINCT", "DISTINCTROW", "HIGH_PRIORITY", "STRAIGHT_JOIN", "SQL_SMALL_RESULT",
     "SQL_BIG_RESULT", "SQL_BUFFER_RESULT", "SQL_CACHE", "SQL_NO_CACHE", "SQL_CALC_FOUND_ROWS"}
)  # fmt: skip
# what ends the select list outside parentheses
_LIST_END = frozenset(
    {TokenType.FROM, TokenType.INTO, TokenType.WHERE, TokenType.GROUP_BY, TokenType.HAVING,
     TokenType.ORDER_BY, TokenType.LIMIT, TokenType.WINDOW, TokenType.FOR, TokenType.LOCK,
     TokenType.UNION, TokenType.EXCEPT, TokenType.INTERSECT, TokenType.SEMICOLON}
)  # fmt: skip
_OPEN = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE})
_CLOSE = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE})


def select_labels(text: str, node: exp.Select) -> list[str]:
    """Each select-list expression's column name; regenerated SQL where the statement's
    text cannot be split into the same fields (it always can for what the parser read)."""
    fields = field_texts(text)
    if fields is None or len(fields) != len(node.expressions):
        fields = [sql_text(e) for e in node.expressions]
    return [label(e, written) for e, written in zip(node.expressions, fields, strict=True)]


def field_texts(text: str) -> list[str] | None:
    """The select list's fields as written in a SELECT statement's text."""
    try:
        tokens = d.TiDB().tokenize(text)
    except TokenError:
        return None
    start = next((i for i, t in enumerate(tokens) if t.token_type == TokenType.SELECT), None)
    if start is None:
        return None
    i = start + 1
    while i < len(tokens) and tokens[i].text.upper() in _SELECT_OPTIONS:
        i += 1
    fields: list[list[Token]] = [[]]
    depth = 0
    for token in tokens[i:]:
        kind = token.token_type
        if depth == 0 and kind in _LIST_END:
            break
        depth += (kind in _OPEN) - (kind in _CLOSE)
        if depth == 0 and kind == TokenType.COMMA:
            fields.append([])
        else:
            fields[-1].append(token)
    if not all(fields):
        return None
    return [text[f[0].start : f[-1].end + 1] for f in fields]


def label(node: exp.Expr, written: str) -> str:
    """TiDB's name for one select-list expression, `written` as it is in the statement."""
    if isinstance(node, exp.Alias):
        return _cut(node.alias)
    inner = node
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if isinstance(inner, exp.Column) and not isinstance(inner.this, exp.Star):
        return _cut(inner.name)
    if isinstance(inner, exp.Literal) and inner.is_string:
        # leading spaces and other non-graphic characters are trimmed (TiDB issues 3686, 3994)
        content = inner.this
        start = next((i for i, ch in enumerate(content) if _graphic(ch)), len(content))
        return _cut(content[start:])
    if isinstance(inner, exp.Null):
        return "NULL"
    if isinstance(inner, exp.Boolean):
        return "TRUE" if inner.this else "FALSE"
    if isinstance(inner, exp.Literal):  # a number: without enclosing parentheses or `+`
        return _cut(written.lstrip("\t\n +(").rstrip("\t\n )"))
    return _cut(written)


def _graphic(ch: str) -> bool:
    """TiDB's `mysql.RangeGraph` (letters, marks, numbers, punctuation, symbols): leading
    spaces and controls are trimmed from a string's label, as MySQL trims them."""
    return unicodedata.category(ch)[0] in "LMNPS"


def _cut(name: str) -> str:
    """At most 256 bytes of UTF-8, never half a character."""
    data = name.encode("utf-8", "surrogateescape")
    if len(data) <= MAX_LABEL_BYTES:
        return name
    return data[:MAX_LABEL_BYTES].decode("utf-8", "ignore")
