"""Statement shapes: execute repeated statements without parsing them again.

A script of 20k `INSERT ... VALUES (1, 'a')` statements has a handful of shapes: the token
sequence with its literals taken out. `lex()` scans a statement with one regular expression into
its shape and its literals; the first statement of a shape is parsed by sqlglot into a template
whose literals became `Param` nodes, and every later statement of that shape reuses the
compiled template with its own literal values. Multi-row `VALUES` lists are one shape
whatever their row count: after the first row group, every further group of the same shape
is taken, literals and all, by one `findall`.

A template is only kept when a re-parse with marker literals lines up node for node with the
real parse; anything the lexer cannot account for (executable comments, hex literals, odd
tokens, rows of another shape) is simply parsed every time.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from ticdc_sim.generator.sql.values import BinaryLiteral, binary_literal, number_literal

# Charset introducers a script may put before a string (`_utf8mb4 'x'`); any other `_name`
# before a string is an identifier and its alias.
_INTRODUCERS = r"_(?:binary|utf8mb4|utf8mb3|utf8|latin1|ascii)"
# possessive: a 20 MB string is one run, not 20 million tries of the alternation
_QUOTED = r"""'(?:[^'\\]++|\\.|'')*+'|"(?:[^"\\]++|\\.|"")*+\""""
_COMMENT = r"--[^\n]*|\#[^\n]*|/\*(?!!|T!).*?\*/"
# Literal tokens by kind, in the order they are tried
_LITERAL_TOKENS = {
    "hex": r"[xX]'(?:[0-9a-fA-F]{2})*'|0x[0-9a-fA-F]+(?![\w$])",
    "bin": r"[bB]'[01]*'|0b[01]+(?![\w$])",
    "istr": rf"(?:(?i:{_INTRODUCERS})\s*|[nN](?='))(?:{_QUOTED})",
    "str": _QUOTED,
    "num": r"(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?(?![\w$])",
}
_IDENT = r"`(?:[^`]|``)*`|[A-Za-z_$@][\w$@]*|[0-9]+[A-Za-z_$][\w$]*"
_OP = r"<=>|<=|>=|<>|!=|:=|->>|->|\|\||&&|<<|>>|[-+*/%=<>(),.!~^&|?]"
# One token a match, after any whitespace and comments before it; `end` matches at the end
_TOKENS = re.compile(
    rf"(?:\s+|{_COMMENT})*+(?:"
    + "|".join(
        f"(?P<{kind}>{pattern})"
        for kind, pattern in [*_LITERAL_TOKENS.items(), ("ident", _IDENT), ("op", _OP)]
    )
    + r"|(?P<end>\Z))",
    re.S,
)
# The literals of a statement found by one search, each not inside a word, and comments and
# quoted identifiers stepped over: a statement's skeleton is its text with each literal
# replaced by a mark of its kind (`lex` checks once per skeleton that it agrees with `_TOKENS`)
_SCAN = re.compile(
    "|".join(f"(?<![\\w$@])({pattern})" for pattern in _LITERAL_TOKENS.values())
    + rf"|`(?:[^`]|``)*`|{_COMMENT}",
    re.S,
)
_SCAN_KINDS: tuple[str, ...] = ("", *_LITERAL_TOKENS)  # by group number
_MARKS = {kind: f"\x00{kind}\x00" for kind in _LITERAL_TOKENS}
_STRING_ESCAPES = {
    "0": "\0",
    "b": "\b",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "Z": "\x1a",
}
# Escapes inside a string: a backslash pair, or the string's own quote doubled (only its own:
# `'a""b'` keeps both double quotes).
_ESCAPES = {"'": re.compile(r"\\(.)|''", re.S), '"': re.compile(r'\\(.)|""', re.S)}


class Param(exp.Expression):
    """A literal taken out of a statement template; `this` is its index."""

    arg_types = {"this": True}


@dataclass(frozen=True, slots=True)
class Lexed:
    """A statement's shape key, its template's literals, and its further VALUES rows.

    `literals` are those of the template (the statement with only its first row group), in
    source order; `extra` holds the literal lexemes of row groups 2..n, a tuple a group, with
    the kinds of the first group's literals `literals[head:head + width]`.
    """

    key: tuple[str, ...]
    literals: tuple[tuple[str, str], ...]  # (kind, lexeme)
    extra: list[tuple[str, ...]]
    head: int  # literals before the first row group
    width: int  # literals per row group
    template_text: str

    def columns(self) -> list[tuple[str, ...]]:
        """Every row group's lexemes, one tuple per position in the group (first row first)."""
        first = tuple(lexeme for _, lexeme in self.literals[self.head : self.head + self.width])
        return list(zip(first, *self.extra, strict=True))


def _string_value(lexeme: str) -> str:
    quote = lexeme[0]
    body = lexeme[1:-1]
    if "\\" not in body and quote * 2 not in body:
        return body

    def unescape(match: re.Match[str]) -> str:
        text = match.group(0)
        if text == quote * 2:
            return quote
        char = match.group(1)
        if char in "%_":
            return "\\" + char  # MySQL keeps \% and \_ for LIKE
        return _STRING_ESCAPES.get(char, char)

    return _ESCAPES[quote].sub(unescape, body)


def _number_value(lexeme: str) -> Any:
    if lexeme.startswith("-"):  # a unary minus taken into the literal (`lex`)
        return number_literal(lexeme[1:], negative=True)
    return number_literal(lexeme)


def _binary_value(base: int) -> Callable[[str], BinaryLiteral]:
    def value(lexeme: str) -> BinaryLiteral:
        digits = lexeme[2:] if lexeme[1] in "xXbB" and lexeme[0] == "0" else lexeme[2:-1]
        return binary_literal(digits, base)

    return value


def without_introducer(lexeme: str) -> str:
    """The quoted string of an `istr` lexeme (`_utf8mb4 'x'`, `N'x'`)."""
    return lexeme[min(i for i in (lexeme.find("'"), lexeme.find('"')) if i >= 0) :]


def _introduced_value(lexeme: str) -> str:
    """`_utf8mb4 'x'` and `N'x'` are the string itself (as `evaluate` reads them)."""
    return _string_value(without_introducer(lexeme))


# The value of each literal kind, as the evaluator gives it for the parsed literal node
_VALUES: dict[str, Callable[[str], Any]] = {
    "num": _number_value,
    "str": _string_value,
    "hex": _binary_value(16),
    "bin": _binary_value(2),
    "istr": _introduced_value,
}
# What sqlglot makes of each kind: a template keeps a Param only where the real parse has one
# of these (a negative number parses as Neg of a number)
_NODES: dict[str, tuple[type[exp.Expr], ...]] = {
    "num": (exp.Literal, exp.Neg),
    "str": (exp.Literal,),
    "hex": (exp.HexString,),
    "bin": (exp.BitString,),
    "istr": (exp.Introducer, exp.National),
}


LITERAL_KINDS = tuple(_VALUES)


def literal_value(kind: str, lexeme: str) -> Any:
    """The value of a literal as the evaluator sees it (`evaluate._literal` and friends)."""
    return _VALUES[kind](lexeme)


# Literal patterns for row groups; possessive, since a literal never gives characters back.
_STRING = r"'(?:[^'\\]++|\\.|'')*+'" r'|"(?:[^"\\]++|\\.|"")*+"'
_LITERAL_PATTERNS = {
    "str": _STRING,
    "num": r"-?+(?:[0-9]++\.[0-9]*+|\.[0-9]++|[0-9]++)(?:[eE][-+]?[0-9]++)?(?![\w$])",
    "hex": r"x'(?:[0-9a-f]{2})*+'|(?-i:0x)[0-9a-f]++(?![\w$])",
    "bin": r"b'[01]*+'|(?-i:0b)[01]++(?![\w$])",
    "istr": f"(?:{_INTRODUCERS}\\s*+|n(?='))(?:{_STRING})",
}


@functools.lru_cache(maxsize=256)
def _row_pattern(tokens: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    """A regex for one `, (...)` row group shaped like `tokens` (the first group's),
    capturing its literals, or else capturing the whole rest of the text.

    One `findall` from the end of the first group then returns every following group of
    that shape, and as its last item the text after them: the rows are taken in one pass
    and known to be contiguous.
    """
    parts = [r"\s*+,\s*+"]
    previous = ","
    for kind, lexeme in tokens:
        if kind in _LITERAL_PATTERNS:
            if previous[-1:].isalnum() or previous[-1:] in "_$.":
                parts.append(r"(?<![\w$.])")  # `x1` and `1.5` are single tokens
            parts.append(f"({_LITERAL_PATTERNS[kind]})")
        else:
            parts.append(re.escape(lexeme))
        parts.append(r"\s*+")
        previous = lexeme if kind not in _LITERAL_PATTERNS else "0"
    if not any(kind in _LITERAL_PATTERNS for kind, _ in tokens):
        parts.append("()")  # findall gives tuples only with two groups or more
    return re.compile("".join(parts) + r"|(.++)", re.IGNORECASE | re.S)


def _token(text: str, pos: int, previous: str) -> tuple[str, str, int, int] | None:
    """The token after `pos`: (kind, lexeme, its start, its end). A `-` right before a number
    is taken into it where it can only be a sign: after an operator other than `)`
    (`(1, -5)`, `x = -5`), so negative values stay literals of the shape. `previous` is the
    last token's kind, or its lexeme for an operator."""
    match = _TOKENS.match(text, pos)
    if match is None:
        return None
    kind = match.lastgroup or ""
    lexeme, start = match.group(kind), match.start(kind)
    if lexeme == "-" and previous not in ("", ")", "ident") and previous not in _VALUES:
        number = _TOKENS.match(text, start + 1)
        if number is not None and number.lastgroup == "num" and number.start("num") == start + 1:
            return "num", "-" + number.group("num"), start, number.end()
    return kind, lexeme, start, match.end()


# Skeletons whose lexing is known: skeleton -> (key, head, width, indexes of negative numbers)
_KNOWN: dict[str, tuple[tuple[str, ...], int, int, tuple[int, ...]]] = {}
_KNOWN_LIMIT = 1 << 14  # skeletons kept (a cache: forgetting one costs a tokenization)
_SCANNED_LENGTH = 4096  # longer statements (many-row INSERTs) are tokenized directly


def lex(text: str) -> Lexed | None:
    """Shape and literals of a statement, or None when the fast path should not try.

    A statement whose skeleton (`_SCAN`) was lexed before takes that lexing with its own
    literals: one regex search instead of a match per token. Otherwise `_tokens` reads it
    token by token, and its skeleton is remembered when both readings agree.
    """
    if len(text) > _SCANNED_LENGTH:
        return _tokens(text)
    pieces: list[str] = []
    found: list[tuple[str, str]] = []
    pos = 0
    for match in _SCAN.finditer(text):
        group = match.lastindex
        if group is None:
            continue  # a comment or a quoted identifier: part of the skeleton
        start, end = match.span()
        kind = _SCAN_KINDS[group]
        pieces += (text[pos:start], _MARKS[kind])
        found.append((kind, match.group()))
        pos = end
    pieces.append(text[pos:])
    skeleton = "".join(pieces)
    known = _KNOWN.get(skeleton)
    if known is not None:
        key, head, width, negative = known
        for index in negative:
            found[index] = ("num", "-" + found[index][1])
        return Lexed(key, tuple(found), [], head, width, text)
    lexed = _tokens(text)
    if lexed is not None and not lexed.extra and len(_KNOWN) < _KNOWN_LIMIT:
        agreed = _agreement(lexed.literals, found)
        if agreed is not None:
            _KNOWN[skeleton] = (lexed.key, lexed.head, lexed.width, agreed)
    return lexed


def _agreement(
    literals: tuple[tuple[str, str], ...], found: list[tuple[str, str]]
) -> tuple[int, ...] | None:
    """Where the tokenizer took a sign into a number, if it read the same literals as the
    search; None when they differ (the skeleton is then not remembered)."""
    if len(literals) != len(found):
        return None
    negative = []
    for index, ((kind, lexeme), (scanned_kind, scanned)) in enumerate(
        zip(literals, found, strict=True)
    ):
        if kind != scanned_kind:
            return None
        if lexeme != scanned:
            if lexeme != "-" + scanned:
                return None
            negative.append(index)
    return tuple(negative)


def _tokens(text: str) -> Lexed | None:
    """`lex` token by token. After the first `VALUES (...)` group, further groups of the same
    shape are taken by one `findall` (`_row_pattern`) and folded into the key as `<rows>`."""
    key: list[str] = []
    literals: list[tuple[str, str]] = []
    pos, end = 0, len(text)
    values_at = -1
    depth = 0
    rows = row_width = head = 0
    extra: list[tuple[str, ...]] = []
    group: list[tuple[str, str]] | None = None  # tokens of the first VALUES group, being read
    first_stop = last_stop = -1
    previous = ""
    match_token = _TOKENS.match
    while True:
        match = match_token(text, pos)
        if match is None:
            return None
        kind = match.lastgroup or ""
        if kind == "end":
            break
        lexeme = match.group(kind)
        if lexeme == "-":  # perhaps a sign: `_token` decides
            kind, lexeme, _, pos = _token(text, pos, previous)  # type: ignore[misc]
        else:
            pos = match.end()
        previous = kind if kind != "op" else lexeme
        if group is not None:
            group.append((kind, lexeme))
        if kind in _VALUES:
            literals.append((kind, lexeme))
            key.append("?" + kind)
            continue
        upper = lexeme.upper() if kind == "ident" and not lexeme.startswith("`") else lexeme
        if upper == "VALUES" and depth == 0 and values_at < 0:
            values_at = len(key)
        if lexeme == "(":
            if depth == 0 and values_at >= 0 and key[-1] in ("VALUES", ","):
                if rows:
                    return None  # a group the row pattern did not take: parse this one
                group = [(kind, lexeme)]
                head = len(literals)
            depth += 1
        elif lexeme == ")":
            depth -= 1
        key.append(upper)
        if depth == 0 and group is not None:  # the first group is complete
            first_stop = last_stop = pos
            row_width = len(literals) - head
            shape = tuple((k, "" if k in _LITERAL_PATTERNS else v) for k, v in group)
            found = _row_pattern(shape).findall(text, pos)
            rest = found.pop()[-1] if found and found[-1][-1] else ""
            if found:
                extra = [row[:row_width] for row in found]
                last_stop = pos = end - len(rest)
            group, rows = None, 1
            key.append("<rows>")
    template = text[:first_stop] + text[last_stop:] if extra else text
    return Lexed(tuple(key), tuple(literals), extra, head, row_width, template)


MARKER_BASE = 7_300_000_000_000_000_000  # number markers: far from any real literal


def marked_template(lexed: Lexed) -> str | None:
    """The template text with literal i replaced by a marker sqlglot keeps verbatim: a number
    for a number (its sign left out), a string for any other kind."""
    out: list[str] = []
    text = lexed.template_text
    pos, index, previous = 0, 0, ""
    while True:
        token = _token(text, pos, previous)
        if token is None:
            return None
        kind, lexeme, start, end = token
        out.append(text[pos:start])  # whitespace and comments as written
        pos = end
        if kind == "end":
            break
        previous = kind if kind != "op" else lexeme
        if kind == "num":
            out.append(str(MARKER_BASE + index))
            index += 1
        elif kind in _VALUES:
            out.append(f"'\x01{index}\x01'")
            index += 1
        else:
            out.append(lexeme)
    return "".join(out)


def template_values(lexed: Lexed) -> list[Any]:
    """The literal values of the template itself (head, first row, tail)."""
    return [literal_value(kind, lexeme) for kind, lexeme in lexed.literals]


def row_params(lexed: Lexed) -> list[list[Any]]:
    """Each VALUES row's parameter list: head literals, its own row literals, tail literals."""
    values = template_values(lexed)
    if not lexed.extra:
        return [values]
    head, width = lexed.head, lexed.width
    prefix, tail = values[:head], values[head + width :]
    kinds = [kind for kind, _ in lexed.literals[head : head + width]]
    rows = [values]
    for lexemes in lexed.extra:
        row = [literal_value(k, v) for k, v in zip(kinds, lexemes, strict=True)]
        rows.append(prefix + row + tail)
    return rows


def parameterize(marked: exp.Expr, plain: exp.Expr, kinds: list[str]) -> exp.Expr | None:
    """`marked` with its marker literals turned into Params (in place), checked against
    `plain`.

    `plain` is the same template parsed with its real literals: the two trees must have
    the same shape, and each marker must stand where the real parse has a literal node of
    its kind (`kinds`, by literal index).
    """
    seen: set[int] = set()
    if not _lines_up(marked, plain, kinds, seen) or seen != set(range(len(kinds))):
        return None
    # Swapped in place, each list argument set once: sqlglot's `transform` re-parents a
    # whole list per item it replaces, which is quadratic in a 10,000-item IN list.
    lists: dict[tuple[int, str], tuple[exp.Expr, str, list[Any]]] = {}
    for node in list(marked.find_all(exp.Literal)):
        index = _marker_index(node)
        parent, key = node.parent, node.arg_key
        if index is None or parent is None or key is None:
            continue
        if node.index is None:
            parent.set(key, Param(this=index))
            continue
        found = lists.get((id(parent), key))
        if found is None:
            found = lists[(id(parent), key)] = (parent, key, list(parent.args[key]))
        found[2][node.index] = Param(this=index)
    for parent, key, items in lists.values():
        parent.set(key, items)
    return marked


def _lines_up(marked: exp.Expr, plain: exp.Expr, kinds: list[str], seen: set[int]) -> bool:
    # a walk with a stack of its own: a long OR or `+` chain is a tree as deep as it is long
    pairs = [(marked, plain)]
    while pairs:
        ours, theirs = pairs.pop()
        if isinstance(ours, exp.Literal):
            if not _marker_lines_up(ours, theirs, kinds, seen):
                return False
            continue
        if type(ours) is not type(theirs):
            return False
        children, others = list(ours.iter_expressions()), list(theirs.iter_expressions())
        if len(children) != len(others):
            return False
        pairs.extend(zip(children, others, strict=True))
    return True


def _marker_lines_up(
    marked: exp.Literal, plain: exp.Expr, kinds: list[str], seen: set[int]
) -> bool:
    index = _marker_index(marked)
    if index is None or index in seen or index >= len(kinds):
        return False
    kind = kinds[index]
    if not isinstance(plain, _NODES[kind]):
        return False
    if isinstance(plain, exp.Neg):  # a negative number: its sign is in the lexeme
        plain = plain.this
        if not isinstance(plain, exp.Literal):
            return False
    if isinstance(plain, exp.Literal) and plain.is_string != (kind == "str"):
        return False
    seen.add(index)
    return True


def _marker_index(node: exp.Literal) -> int | None:
    text = node.this
    if node.is_string:
        if len(text) >= 3 and text[0] == "\x01" and text[-1] == "\x01" and text[1:-1].isdigit():
            return int(text[1:-1])
        return None
    if text.isdigit() and int(text) >= MARKER_BASE:
        return int(text) - MARKER_BASE
    return None
