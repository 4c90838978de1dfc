"""Errors with a location: every bad input names the file, line, column and statement."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Location:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


# MySQL's SQLSTATE of the error codes the engine raises (HY000 for the rest), as the mysql
# client prints them: `ERROR 1064 (42000): ...`
SQLSTATE = {
    1046: "3D000",
    1048: "23000",
    1049: "42000",
    1050: "42S01",
    1051: "42S02",
    1054: "42S22",
    1059: "42000",
    1060: "42S21",
    1061: "42000",
    1062: "23000",
    1063: "42000",
    1064: "42000",
    1067: "42000",
    1068: "42000",
    1069: "42000",
    1070: "42000",
    1071: "42000",
    1072: "42000",
    1074: "42000",
    1091: "42000",
    1097: "HY000",
    1102: "42000",
    1103: "42000",
    1113: "42000",
    1115: "42000",
    1117: "42000",
    1136: "21S01",
    1146: "42S02",
    1166: "42000",
    1170: "42000",
    1172: "42000",
    1222: "21000",
    1231: "42000",
    1264: "22003",
    1265: "01000",
    1292: "22007",
    1298: "HY000",
    1300: "HY000",
    1305: "42000",
    1365: "22012",
    1366: "HY000",
    1367: "22007",
    1406: "22001",
    1425: "42000",
    1426: "42000",
    1427: "42000",
    1439: "42000",
    1499: "HY000",
    1690: "22003",
    1818: "HY000",
    3140: "22032",
    3141: "22032",
    3143: "42000",
    3157: "22032",
    8025: "HY000",
}


_UNPRINTABLE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """Text that can be printed and sent as JSON: the bytes of a script that are not UTF-8
    (kept as surrogate escapes) shown as `\\xNN`, as MySQL shows them, other lone
    surrogates as `\\uNNNN`."""
    if text.isascii() or _UNPRINTABLE.search(text) is None:
        return text
    return _UNPRINTABLE.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    point = ord(found.group())
    return f"\\x{point - 0xDC00:02X}" if 0xDC80 <= point <= 0xDCFF else f"\\u{point:04X}"


class SimError(Exception):
    """Base of every error ticdc-sim reports to a user."""


class SQLError(SimError):
    """A statement that cannot be parsed or applied.

    `code` is MySQL's error number where one applies (e.g. 1050 table exists).
    """

    def __init__(
        self,
        message: str,
        *,
        location: Location | None = None,
        statement: str | None = None,
        code: int | None = None,
    ) -> None:
        message = printable(message)
        super().__init__(message)
        self.message = message
        self.location = location
        self.statement = printable(statement) if statement is not None else None
        self.code = code

    @property
    def sqlstate(self) -> str:
        return SQLSTATE.get(self.code, "HY000") if self.code else "HY000"

    def with_context(self, location: Location, statement: str) -> SQLError:
        """The same error, located at `location` (kept if already set) in `statement`."""
        return SQLError(
            self.message,
            location=self.location or location,
            statement=self.statement or statement,
            code=self.code,
        )

    def __str__(self) -> str:
        head = f"{self.location}: " if self.location else ""
        code = f"ERROR {self.code} ({SQLSTATE.get(self.code, 'HY000')}): " if self.code else ""
        text = f"{head}{code}{self.message}"
        if self.statement:
            stmt = " ".join(self.statement.split())
            if len(stmt) > 200:
                stmt = stmt[:197] + "..."
            text += f"\n  in: {stmt}"
        return text


class ConfigError(SimError):
    """A sink URI, changefeed config or dispatcher that TiCDC would reject; says which part."""


class DecodeError(SimError):
    """A record that cannot be made whole: a claim-check file or an upstream row missing."""


class EncodeError(SimError):
    """An event an encoder cannot write, e.g. a message over max-message-bytes
    (TiCDC's ErrMessageTooLarge)."""


@dataclass(slots=True)
class WarningEntry:
    """One kind of warning: its first message, where that happened, and how often."""

    kind: str
    message: str
    location: Location | None = None
    count: int = 1

    def __str__(self) -> str:
        head = f"{self.location}: " if self.location else ""
        more = f" ({self.count} times)" if self.count > 1 else ""
        return f"{head}{self.message}{more}"


class Warnings:
    """The one channel for what is accepted but changes nothing, or is not what TiCDC would
    do: the engine, the router and the changefeed config all report here, one entry per
    kind (the first occurrence located, the rest counted), in the order kinds first came."""

    def __init__(self) -> None:
        self._by_kind: dict[str, WarningEntry] = {}

    def warn(self, kind: str, message: str, location: Location | None = None) -> None:
        found = self._by_kind.get(kind)
        if found is None:
            self._by_kind[kind] = WarningEntry(kind, printable(message), location)
        else:
            found.count += 1

    def __iter__(self) -> Iterator[WarningEntry]:
        return iter(list(self._by_kind.values()))

    def __len__(self) -> int:
        return len(self._by_kind)

    def messages(self) -> list[str]:
        return [w.message for w in self._by_kind.values()]
