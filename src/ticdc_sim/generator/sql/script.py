"""Reading SQL scripts the way the mysql client does: statements split on `;`, each parsed
through the TiDB dialect and located by file, line and column.

Script bytes are decoded as UTF-8 with `surrogateescape`, so bytes in another charset
(`SET NAMES gbk` scripts) survive untouched and can be re-decoded once the connection charset
is known, as a server would.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType

from sqlglot import ErrorLevel, exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from ticdc_sim.errors import Location, SQLError
from ticdc_sim.generator.sql.dialect import TiDB

_DIALECT = TiDB()

# How deep expressions may nest: parentheses, function calls and CASE, with runs of unary
# operators counted as levels. TiDB's parser bounds nesting too (pingcap/tidb#70192); ORMs
# stay far below this. sqlglot's recursive-descent parser takes up to about 40 Python frames
# a level, so a statement that nests deeply is parsed with the interpreter's recursion
# limit raised for it (`_headroom`); every later pass over the tree takes a few a level.
MAX_NESTING = 100
_FRAMES_PER_LEVEL = 48
_OPENERS = frozenset({TokenType.L_PAREN, TokenType.CASE})
_CLOSERS = frozenset({TokenType.R_PAREN, TokenType.END})
_UNARY = frozenset(
    {TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE, TokenType.EXCLAMATION}
)


@dataclass(frozen=True, slots=True)
class Statement:
    """One parsed statement with where it came from."""

    expression: exp.Expr
    text: str
    location: Location


def decode_script(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")


def read_script(path: str | Path) -> str:
    return decode_script(Path(path).read_bytes())


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def split_tokens(text: str, file: str = "<sql>") -> Iterator[tuple[list[Token], str]]:
    """The statements of `text` split on `;`: each one's tokens and its text (empty ones dropped).

    The text runs from the first token to the `;`, so a trailing executable comment whose
    `*/` follows the last token stays whole.
    """
    try:
        tokens = _DIALECT.tokenize(text)
    except TokenError as e:
        line, col = _line_col(text, getattr(e, "start", 0) or 0)
        raise SQLError(
            "You have an error in your SQL syntax; check the manual that corresponds to your"
            f" TiDB version for the right syntax to use line {line} column {col} ({e})",
            location=Location(file, line, col),
            code=1064,
        ) from None
    current: list[Token] = []
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if current:
                yield current, text[current[0].start : token.start].rstrip()
            current = []
        else:
            current.append(token)
    if current:
        yield current, text[current[0].start :].rstrip()


# TiDB statements that change no data (accounts, privileges, maintenance, and the table
# locks and key switches every mysqldump file holds, which TiDB accepts as no-ops: its
# executor/ddl.go executeLockTables without enable-table-lock, ddl's AlterTableDisableKeys),
# which sqlglot reads as a bare Command: accepted with the no-effect warning, named by their
# first words
NO_DATA_COMMANDS = frozenset(
    {
        "GRANT",
        "REVOKE",
        "CREATE USER",
        "DROP USER",
        "ALTER USER",
        "CREATE ROLE",
        "DROP ROLE",
        "OPTIMIZE TABLE",
        "LOCK TABLES",
        "LOCK TABLE",
        "UNLOCK TABLES",
        "UNLOCK TABLE",
    }
)
_KEYS_SWITCH = re.compile(r"ALTER\s+TABLE\s+\S+\s+(DIS|EN)ABLE\s+KEYS\s*(\*/)?\s*", re.I)


# Statements of TiDB's that move data in from outside, which a script cannot hand the
# simulator; the parser would report a syntax error somewhere inside them instead
_NOT_SIMULATED: dict[tuple[str, ...], str] = {
    ("LOAD", "DATA"): "LOAD DATA is not simulated: insert the rows with INSERT",
    ("IMPORT", "INTO"): "IMPORT INTO is not simulated: insert the rows with INSERT",
}


def command_kind(text: str) -> str | None:
    """The kind of a statement in NO_DATA_COMMANDS (`GRANT`, `CREATE USER` ...), else None."""
    words = [w.upper() for w in text.split(None, 2)[:2]]
    for n in (2, 1):
        if " ".join(words[:n]) in NO_DATA_COMMANDS:
            return " ".join(words[:n])
    found = _KEYS_SWITCH.fullmatch(text)
    return f"ALTER TABLE ... {found.group(1).upper()}ABLE KEYS" if found else None


def syntax_error(line: int, col: int, near: str, reason: str) -> str:
    """TiDB's wording of a syntax error (ERROR 1064), with the reason after it (sqlglot's,
    its node classes by name: `Div`, not `<class 'sqlglot.expressions.core.Div'>`)."""
    named = _PYTHON_CLASS.sub(lambda found: found.group(1), reason)
    return (
        "You have an error in your SQL syntax; check the manual that corresponds to your"
        f' TiDB version for the right syntax to use line {line} column {col} near "{near}"'
        f" ({named})"
    )


_PYTHON_CLASS = re.compile(r"<class '(?:[\w.]+\.)?(\w+)'>")


def nesting(tokens: list[Token]) -> tuple[int, Token | None]:
    """How deep a statement's expressions nest (`MAX_NESTING`), and the first token past
    the limit (None when within it)."""
    depth = run = deepest = 0
    for token in tokens:
        kind = token.token_type
        if kind in _OPENERS:
            depth += 1
        elif kind in _CLOSERS:
            depth = max(depth - 1, 0)
        run = run + 1 if kind in _UNARY else 0
        deepest = max(deepest, depth + run)
        if deepest > MAX_NESTING:
            return deepest, token
    return deepest, None


_HEADROOM_LOCK = threading.Lock()


def _headroom(needed: int) -> None:
    """Room for `needed` more frames below this one: the interpreter's recursion limit is
    raised for a deeply nested statement, and never put back down. The limit is the whole
    process's, and a service parses on many threads: putting it back when one parse ends
    would fail another thread that is deep in its own (a parse, or a later pass over a tree
    it parsed under the raised limit). Only raising is safe, and it costs little: nesting is
    bounded before parsing (MAX_NESTING), so the limit stops at what the deepest statement
    allowed needs."""
    frame: FrameType | None = sys._getframe()
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    with _HEADROOM_LOCK:
        if depth + needed > sys.getrecursionlimit():
            sys.setrecursionlimit(depth + needed)


def _too_deep(text: str, file: str, token: Token, stmt_text: str) -> SQLError:
    line, col = _line_col(text, token.start)
    return SQLError(
        syntax_error(
            line,
            col,
            text[token.start : token.start + 20],
            f"expressions nest more than {MAX_NESTING} levels deep",
        ),
        location=Location(file, line, col),
        statement=stmt_text,
        code=1064,
    )


def parse_statements(text: str, file: str = "<sql>") -> Iterator[Statement]:
    """Parse every statement of a script; the first bad one raises a located SQLError."""
    for tokens, stmt_text in split_tokens(text, file):
        location = Location(file, *_line_col(text, tokens[0].start))
        refusal = _NOT_SIMULATED.get(tuple(t.text.upper() for t in tokens[:2]))
        if refusal is not None:
            raise SQLError(refusal, location=location, statement=stmt_text, code=1105)
        depth, past = nesting(tokens)
        if past is not None:
            raise _too_deep(text, file, past, stmt_text)
        try:
            if depth > 12:
                _headroom(200 + depth * _FRAMES_PER_LEVEL)
            parsed = _DIALECT.parser(error_level=ErrorLevel.RAISE).parse(tokens, text)
        except RecursionError:  # a nesting `nesting` does not count
            raise _too_deep(text, file, tokens[0], stmt_text) from None
        except ParseError as e:
            err = e.errors[0] if e.errors else {}
            line, col = err.get("line") or location.line, err.get("col") or location.col
            near = (err.get("highlight") or "") + (err.get("end_context") or "")
            raise SQLError(
                syntax_error(line, col, near.strip(), err.get("description") or str(e)),
                location=Location(file, line, col),
                statement=stmt_text,
                code=1064,
            ) from None
        expression = parsed[0] if parsed else None
        if expression is None:
            continue
        if isinstance(expression, exp.Command) and command_kind(stmt_text) is None:
            raise SQLError(
                "statement not supported by the TiDB dialect",
                location=location,
                statement=stmt_text,
                code=1105,
            )
        yield Statement(expression, stmt_text, location)


@dataclass(frozen=True, slots=True)
class RawStatement:
    """One statement's text, split off a script but not parsed yet."""

    text: str
    location: Location


# What matters for splitting: whole one-line quoted strings (skipped in one step), quotes,
# comment starts and ends, escapes and `;`.
_QUOTED = r"""'(?:[^'\\\n]|\\.|'')*'(?!')|"(?:[^"\\\n]|\\.|"")*"(?!")|`[^`\n]*`(?!`)"""
_SPLIT_SPECIAL = re.compile(_QUOTED + r"""|['"`;\\]|/\*|\*/|--|#""")


# What can end a string or comment that spans lines: its closer, or an escape before one.
_INSIDE = {
    "'": re.compile(r"[\\']"),
    '"': re.compile(r'[\\"]'),
    "`": re.compile("`"),
    "*/": re.compile(r"\*/"),
}


# A run of text that holds no statement end: plain characters and whole one-line strings.
_PLAIN_RUN = re.compile(  # possessive: nothing here is worth backtracking into
    r"""(?:[^'"`;\\/#\-\n]++|'(?:[^'\\\n]++|\\.|'')*+'(?!')|"(?:[^"\\\n]++|\\.|"")*+"(?!")"""
    r"""|`[^`\n]*+`(?!`)|/(?!\*)|-(?!-))++"""
)


def _ends_one_statement(line: str) -> bool:
    """Whether a line needs no scanning: its one `;` ends the statement it holds or ends.

    That is a line without double quotes, backquotes, backslashes or comment starts, whose
    single quotes pair up and whose only `;` is its last visible character: with an even
    number of quotes before it (doubled quotes count twice), that `;` is outside any string.
    """
    if line.count(";") != 1 or not line.rstrip().endswith(";") or line.count("'") % 2:
        return False
    return not any(hard in line for hard in _HARD)


_HARD = ('"', "`", "\\", "#", "--", "/*")


# the mysql client's `DELIMITER x` (or `\\d x`) where a statement would start: its argument
_DELIMITER_COMMAND = re.compile(r"[ \t]*(?:delimiter[ \t]+|\\d[ \t]*)(.*)", re.IGNORECASE)


def _delimiter(argument: str, at: Location) -> str:
    """The new delimiter: the argument's first word, or a quoted string (mysql.cc
    com_delimiter); no quote, backslash or comment start can be one (they would hide it)."""
    text = argument.strip()
    quoted = re.match(r"(['\"`])(.+?)\1", text)
    word = quoted.group(2) if quoted else text.split()[0] if text else ""
    if not word or any(c in word for c in "'\"`\\") or word.startswith(("--", "#", "/*")):
        raise SQLError(
            f"DELIMITER {text!r}: a delimiter is a word without quotes, backslashes or comment"
            " starts, e.g. DELIMITER //",
            location=at,
            code=1064,
        )
    return word


def _special(delimiter: str) -> re.Pattern[str]:
    """`_SPLIT_SPECIAL` with `delimiter` where `;` ends a statement."""
    return re.compile(_QUOTED + "|" + re.escape(delimiter) + r"""|['"`\\]|/\*|\*/|--|#""")


def split_script(
    lines: Iterable[str], file: str = "<sql>", *, client: bool = False
) -> Iterator[RawStatement]:
    """Split a script into statement texts lazily, line by line, as the mysql client does.

    Only the statement being read is held in memory. Quotes (with backslash and doubled
    escapes), backquotes and comments hide `;`. With `client` (a script file, which the
    mysql client reads; not what a client sends a server), its `DELIMITER //` command where
    a statement would start makes `//` end statements until `DELIMITER ;` (mysql.cc
    com_delimiter: the rest of the line's first word, quotes allowed).
    """
    quote = ""  # the open quote character, or "" outside quotes
    block = False  # inside /* ... */
    opened = Location(file, 1, 1)  # where the last /* opened
    pending: list[str] = []
    start: Location | None = None
    delimiter, special = ";", _SPLIT_SPECIAL
    for number, line in enumerate(lines, start=1):
        if client and start is None and not quote and not block:
            command = _DELIMITER_COMMAND.match(line)
            if command is not None:
                delimiter = _delimiter(command.group(1), Location(file, number, 1))
                special = _SPLIT_SPECIAL if delimiter == ";" else _special(delimiter)
                continue
        if delimiter == ";" and not quote and not block and _ends_one_statement(line):
            if start is None:
                stripped = len(line) - len(line.lstrip())
                start, pending = Location(file, number, stripped + 1), []
            pending.append(line[: line.rindex(";")])
            text = "".join(pending).strip()
            if text:
                yield RawStatement(text, start)
            pending, start = [], None
            continue
        pos = 0
        chunk_start = 0
        while True:
            if start is None:
                stripped = len(line) - len(line[pos:].lstrip())
                if stripped < len(line) and not quote and not block:
                    rest = line[stripped:]
                    if not rest.startswith(("--", "#", "/*")) or rest.startswith(("/*!", "/*T!")):
                        start = Location(file, number, stripped + 1)
                        pending, chunk_start = [], stripped  # drop leading comments
            if start is not None and not quote and not block and delimiter == ";":
                plain = _PLAIN_RUN.match(line, pos)  # skip what cannot end a statement
                if plain is not None:
                    pos = plain.end()
            if quote or block:  # only the closer (or an escape) matters inside
                match = _INSIDE[quote or "*/"].search(line, pos)
            else:
                match = special.search(line, pos)
            if match is None:
                break
            token, pos = match.group(0), match.end()
            if len(token) >= 2 and token[0] in "'\"`" and not block and not quote:
                if start is None:
                    start = Location(file, number, match.start() + 1)
                    pending, chunk_start = [], match.start()
                continue  # a whole quoted string on this line
            if block:
                block = token != "*/"
            elif quote:
                if token == "\\" and quote != "`":
                    pos += 1  # the escaped character
                elif token == quote:
                    if line.startswith(quote, pos):
                        pos += 1  # a doubled quote stays inside
                    else:
                        quote = ""
            elif token in ("'", '"', "`"):
                quote = token
                if start is None:
                    start = Location(file, number, match.start() + 1)
                    pending, chunk_start = [], match.start()
            elif token == "/*":
                block, opened = True, Location(file, number, match.start() + 1)
            elif token in ("--", "#"):
                break  # the rest of the line is a comment
            elif token == delimiter:
                pending.append(line[chunk_start : match.start()])
                text = "".join(pending).strip()
                if text and start is not None:
                    yield RawStatement(text, start)
                pending, start, chunk_start = [], None, pos
        pending.append(line[chunk_start:])
    text = "".join(pending).strip()
    if block and start is not None:  # cut off, as an open quote is (alone, it is no statement)
        raise SQLError("unterminated /* comment at end of script", location=opened, code=1064)
    if text and start is not None and not quote:
        yield RawStatement(text, start)
    elif quote:
        raise SQLError(
            f"unterminated {quote} quote at end of script",
            location=start or Location(file, 1, 1),
            code=1064,
        )


def parse_raw(raw: RawStatement) -> Statement | None:
    """Parse one split-off statement; locations point into the original script."""
    base = raw.location
    try:
        statements = list(parse_statements(raw.text, base.file))
    except SQLError as e:
        raise SQLError(
            e.message,
            location=_shift(e.location, base) if e.location else base,
            statement=raw.text,
            code=e.code,
        ) from None
    if not statements:
        return None
    if len(statements) > 1:  # an executable comment hid a `;` from the splitter
        raise SQLError("more than one statement in one", location=base, statement=raw.text)
    return replace(statements[0], location=base)


def _shift(at: Location, base: Location) -> Location:
    if at.line == 1:
        return Location(base.file, base.line, base.col + at.col - 1)
    return Location(base.file, base.line + at.line - 1, at.col)


def parse_one(sql: str) -> exp.Expr:
    """Parse a single statement (tests, tools); raises SQLError on anything else."""
    statements = list(parse_statements(sql))
    if len(statements) != 1:
        raise SQLError(f"expected one statement, found {len(statements)}", statement=sql)
    return statements[0].expression
