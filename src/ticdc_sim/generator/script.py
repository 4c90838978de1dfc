"""Reading SQL scripts the way the mysql client does: statements split on `;`, each parsed
through the TiDB dialect and located by file, line and column.

Script bytes are decoded as UTF-8 with `surrogateescape`, so bytes in another charset
(`SET NAMES gbk` scripts) survive untouched and can be re-decoded once the connection charset
is known, as a server would.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlglot import ErrorLevel, exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from ticdc_sim.errors import Location, SQLError
from ticdc_sim.generator.dialect import TiDB

_DIALECT = TiDB()


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
        raise SQLError(f"cannot tokenize: {e}", location=Location(file, line, col)) from None
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


def parse_statements(text: str, file: str = "<sql>") -> Iterator[Statement]:
    """Parse every statement of a script; the first bad one raises a located SQLError."""
    for tokens, stmt_text in split_tokens(text, file):
        location = Location(file, *_line_col(text, tokens[0].start))
        try:
            parsed = _DIALECT.parser(error_level=ErrorLevel.RAISE).parse(tokens, text)
        except ParseError as e:
            err = e.errors[0] if e.errors else {}
            at = Location(file, err.get("line") or location.line, err.get("col") or location.col)
            message = err.get("description") or str(e)
            raise SQLError(f"syntax error: {message}", location=at, statement=stmt_text) from None
        expression = parsed[0] if parsed else None
        if expression is None:
            continue
        if isinstance(expression, exp.Command):
            raise SQLError(
                "statement not supported by the TiDB dialect",
                location=location,
                statement=stmt_text,
            )
        yield Statement(expression, stmt_text, location)


def parse_one(sql: str) -> exp.Expr:
    """Parse a single statement (tests, tools); raises SQLError on anything else."""
    statements = list(parse_statements(sql))
    if len(statements) != 1:
        raise SQLError(f"expected one statement, found {len(statements)}", statement=sql)
    return statements[0].expression
