"""The TiDB tokenizer: MySQL's, with executable comments lexed as code.

TiDB `pkg/parser/lexer.go` treats `/*T![feature] ... */` and `/*!NNNNN ... */` as SQL.
"""

from __future__ import annotations

import re

from sqlglot.dialects.mysql import MySQL
from sqlglot.tokenizer_core import Token, TokenType

# TiDB feature ids whose `/*T![id] ... */` content TiDB executes (TiDB `pkg/parser/tidb`
# `FeatureIDs`); a comment naming any other id stays a comment, as in TiDB.
TIDB_FEATURE_IDS = frozenset(
    {
        "auto_rand",
        "auto_id_cache",
        "auto_rand_base",
        "clustered_index",
        "force_inc",
        "placement",
        "ttl",
        "resource_group",
        "global_index",
        "ddl_distribute",
        "vector_index",
        "ttl_enable",
        "ttl_job_interval",
    }
)


# Operators sqlglot's MySQL tokenizer takes from other dialects, which TiDB's lexer does not
# have (pkg/parser/lexer.go): with them `~~1` (two bitwise NOTs) was Postgres' LIKE and
# `1 #> 2` (a comment) a JSON path operator; the rest read what TiDB refuses.
_NOT_TIDB_OPERATORS = frozenset(
    {"~~", "~~~", "~~*", "~*", "#>", "#>>", "==", "::", "?::", "<->", "<<->>", "-|-", "&<", "&>",
     "|>", "=>", "??"}
)  # fmt: skip


class TiDBTokenizer(MySQL.Tokenizer):
    # RENAME and REPLACE are statements TiDB parses, not opaque commands.
    COMMANDS = MySQL.Tokenizer.COMMANDS - {TokenType.RENAME, TokenType.REPLACE}
    KEYWORDS = {k: v for k, v in MySQL.Tokenizer.KEYWORDS.items() if k not in _NOT_TIDB_OPERATORS}

    def tokenize(self, sql: str) -> list[Token]:
        """Tokenize, treating executable comments as code.

        `/*!...*/` and `/*T![id] ...*/` can only stand between tokens, so the gaps between the
        tokens of a first pass are scanned for them; if any is found, its markers are blanked
        (offsets, lines and columns stay exact) and the text is tokenized again.
        """
        toks = _signed_exponents(super().tokenize(sql))
        if "/*!" not in sql and "/*T!" not in sql:
            return toks
        spans = list(_executable_comment_markers(sql, toks))
        if not spans:
            return toks
        chars = list(sql)
        for start, end in spans:
            for i in range(start, end):
                if chars[i] not in "\r\n":
                    chars[i] = " "
        return _signed_exponents(super().tokenize("".join(chars)))


# sqlglot takes a sign anywhere after an exponent into the number: `1e100+0` (as TiDB's
# restore writes `1e100 + 0`) would be one number token, `1e2-1e1` one name; MySQL reads
# 1e100, +, 0 and 1e2, -, 1e1.
_EXPONENT_THEN_SIGN = re.compile(r"[0-9.]*[eE][-+]?[0-9]+(?=[-+])")
_NUMBER = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_SIGNS = {"+": TokenType.PLUS, "-": TokenType.DASH}
_NUMBER_LIKE = (TokenType.NUMBER, TokenType.VAR)


def _signed_exponents(tokens: list[Token]) -> list[Token]:
    if not any(t.token_type in _NUMBER_LIKE and _EXPONENT_THEN_SIGN.match(t.text) for t in tokens):
        return tokens
    out: list[Token] = []
    for token in tokens:
        text, start = token.text, token.start
        found = _EXPONENT_THEN_SIGN.match(text) if token.token_type in _NUMBER_LIKE else None
        if found is None:
            out.append(token)
            continue
        while found is not None:
            cut = found.end()
            out.append(_piece(token, TokenType.NUMBER, text[:cut], start))
            out.append(_piece(token, _SIGNS[text[cut]], text[cut], start + cut))
            text, start = text[cut + 1 :], start + cut + 1
            found = _EXPONENT_THEN_SIGN.match(text)
        kind = TokenType.NUMBER if _NUMBER.fullmatch(text) else token.token_type
        out.append(_piece(token, kind, text, start))
    return out


def _piece(token: Token, kind: TokenType, text: str, start: int) -> Token:
    end = start + len(text) - 1
    return Token(kind, text, token.line, token.col - (token.end - end), start, end)


def _executable_comment_markers(sql: str, toks: list[Token]) -> list[tuple[int, int]]:
    """(start, end) spans of executable-comment markers found between tokens."""
    spans: list[tuple[int, int]] = []
    gaps = [(0, toks[0].start if toks else len(sql))]
    gaps += [(a.end + 1, b.start) for a, b in zip(toks, toks[1:], strict=False)]
    if toks:
        gaps.append((toks[-1].end + 1, len(sql)))
    for lo, hi in gaps:
        i = lo
        while i < hi:
            if sql.startswith("--", i) or sql[i] == "#":
                nl = sql.find("\n", i, hi)
                i = hi if nl < 0 else nl + 1
            elif sql.startswith("/*", i):
                close = sql.find("*/", i + 2, hi)
                if close < 0:
                    break
                opener = _executable_opener(sql, i, close)
                if opener:
                    spans += [(i, i + opener), (close, close + 2)]
                i = close + 2
            else:
                i += 1
    return spans


def _executable_opener(sql: str, start: int, close: int) -> int:
    """Length of the `/*!NNNNN` or `/*T![id]` marker at `start`, or 0 for a plain comment."""
    if sql.startswith("/*!", start):
        i = start + 3
        while i < close and i - start < 8 and sql[i].isdigit():
            i += 1
        return i - start
    if sql.startswith("/*T!", start):
        i = start + 4
        if i < close and sql[i] == "[":
            end = sql.find("]", i, close)
            if end < 0:
                return 0
            features = {f.strip().lower() for f in sql[i + 1 : end].split(",")}
            if not features <= TIDB_FEATURE_IDS:
                return 0
            return end + 1 - start
        return i - start
    return 0
