"""TiDB table filters, as TiCDC's dispatcher `matcher` uses them.

Mirrors tidb-tools `pkg/table-filter` (`filter.Parse`, `CaseInsensitive`): each rule is
`schema.table` with `*`, `?` and `[a-z]`/`[!a-z]` wildcards, `\\` escapes, backquoted or
double-quoted literal parts, `/regex/` parts, and an optional leading `!` that excludes.
The last rule that matches a table decides; a table no rule matches is not matched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ticdc_sim.errors import ConfigError


@dataclass(frozen=True, slots=True)
class _Rule:
    positive: bool
    schema: re.Pattern[str]
    table: re.Pattern[str]
    any_table: bool  # the table part is `*`


class TableFilter:
    def __init__(self, rules: list[str], *, case_sensitive: bool = False) -> None:
        self.case_sensitive = case_sensitive
        self.rules = [self._parse(rule) for rule in rules if rule.strip()]

    def match(self, schema: str, table: str) -> bool:
        if not self.case_sensitive:
            schema, table = schema.lower(), table.lower()
        for rule in reversed(self.rules):
            if rule.schema.fullmatch(schema) and rule.table.fullmatch(table):
                return rule.positive
        return False

    def match_schema(self, schema: str) -> bool:
        """Whether any table of `schema` may match: schema-level DDL passes on this
        (tidb-tools `MatchSchema`; an exclusion drops the schema only when it excludes `s.*`)."""
        if not self.case_sensitive:
            schema = schema.lower()
        for rule in reversed(self.rules):
            if rule.schema.fullmatch(schema):
                return rule.positive or not rule.any_table
        return False

    def _parse(self, text: str) -> _Rule:
        rule = text.strip()
        positive = not rule.startswith("!")
        body = rule if positive else rule[1:]
        schema_re, rest = _pattern(body, text)
        if not rest.startswith("."):
            raise ConfigError(f"table filter {text!r}: expected `schema.table`")
        table_re, rest = _pattern(rest[1:], text)
        if rest.strip():
            raise ConfigError(f"table filter {text!r}: unexpected {rest!r}")
        flags = 0 if self.case_sensitive else re.IGNORECASE
        table = re.compile(table_re, flags)
        return _Rule(positive, re.compile(schema_re, flags), table, table_re == ".*")


def _pattern(text: str, rule: str) -> tuple[str, str]:
    """One part's regex and the text after it (which starts at the separating `.`)."""
    if text.startswith("/"):
        end = text.find("/", 1)
        if end < 0:
            raise ConfigError(f"table filter {rule!r}: unterminated /regex/")
        return f"(?:{text[1:end]})", text[end + 1 :]
    if text[:1] in ("`", '"'):
        quote, i, literal = text[0], 1, []
        while i < len(text):
            if text[i] == quote:
                if text[i + 1 : i + 2] == quote:
                    literal.append(quote)
                    i += 2
                    continue
                return re.escape("".join(literal)), text[i + 1 :]
            literal.append(text[i])
            i += 1
        raise ConfigError(f"table filter {rule!r}: unterminated {quote}")
    out: list[str] = []
    i = 0
    while i < len(text) and text[i] != ".":
        char = text[i]
        if char == "\\":
            if i + 1 >= len(text):
                raise ConfigError(f"table filter {rule!r}: a trailing backslash")
            out.append(re.escape(text[i + 1]))
            i += 2
            continue
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            end = text.find("]", i + 2)
            if end < 0:
                raise ConfigError(f"table filter {rule!r}: unterminated [")
            inner = text[i + 1 : end]
            if inner.startswith("!"):
                inner = "^" + inner[1:]
            out.append(f"[{inner}]")
            i = end + 1
            continue
        elif char.isalnum() or char in "_$-" or ord(char) > 0x7F:
            out.append(re.escape(char))
        else:
            raise ConfigError(f"table filter {rule!r}: unexpected character {char!r}")
        i += 1
    if not out:
        raise ConfigError(f"table filter {rule!r}: an empty schema or table pattern")
    return "".join(out), text[i:]
