"""Errors with a location: every bad input names the file, line, column and statement."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Location:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


_LITERALS = {True: "true", False: "false", None: "null"}


def shown(value: object, limit: int = 60) -> str:
    """How an error quotes a value it refuses: `repr`, cut, so that a hostile megabyte is not
    echoed back; true, false and null as TOML and JSON write them."""
    text = _LITERALS[value] if value is None or isinstance(value, bool) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# MySQL's SQLSTATE of an error code, as TiDB maps them (pkg/parser/mysql/state.go `MySQLState`,
# the codes from pkg/parser/mysql/errcode.go); every other code is HY000. The mysql client
# prints it (`ERROR 1064 (42000): ...`), drivers raise by it, HTTP answers carry it.
# fmt: off
_CODES_BY_STATE: dict[str, tuple[int, ...]] = {
    "01000": (1249, 1261, 1262, 1265, 1311, 1642),
    "02000": (1329, 1643),
    "08004": (1040, 1251),
    "08S01": (1042, 1043, 1047, 1053, 1080, 1081, 1152, 1153, 1154, 1155, 1156, 1157, 1158,
              1159, 1160, 1161, 1184, 1189, 1190, 1218),
    "0A000": (1312, 1314, 1335, 1336, 1415, 1845, 1846),
    "0K000": (1645,),
    "20000": (1339,),
    "21000": (1222, 1241, 1242),
    "21S01": (1058, 1136),
    "22001": (1406,),
    "22003": (1264, 1416, 1690),
    "22004": (1138, 1263),
    "22007": (1292, 1367),
    "22008": (1441,),
    "22012": (1365,),
    "22018": (3903,),
    "22032": (3069, 3140, 3141, 3146, 3157, 3158, 3853),
    "23000": (1022, 1048, 1052, 1062, 1169, 1216, 1217, 1451, 1452, 1557, 1586, 1761, 1762,
              1859),
    "24000": (1325, 1326),
    "25000": (1179, 1207),
    "25001": (1568,),
    "25006": (1792,),
    "28000": (1045, 1698),
    "2F003": (1303,),
    "2F005": (1321,),
    "35000": (1758,),
    "3D000": (1046,),
    "40001": (1213,),
    "42000": (1044, 1049, 1055, 1056, 1057, 1059, 1061, 1063, 1064, 1065, 1066, 1067, 1068,
              1069, 1070, 1071, 1072, 1073, 1074, 1075, 1083, 1084, 1090, 1091, 1101, 1102,
              1103, 1104, 1106, 1107, 1110, 1112, 1113, 1115, 1118, 1120, 1121, 1131, 1132,
              1133, 1139, 1140, 1141, 1142, 1143, 1144, 1145, 1147, 1148, 1149, 1162, 1163,
              1164, 1166, 1167, 1170, 1171, 1172, 1173, 1176, 1177, 1178, 1203, 1211, 1226,
              1227, 1230, 1231, 1232, 1234, 1235, 1239, 1248, 1250, 1252, 1253, 1280, 1281,
              1286, 1304, 1305, 1308, 1309, 1310, 1313, 1315, 1316, 1318, 1319, 1320, 1322,
              1323, 1324, 1327, 1330, 1331, 1332, 1333, 1337, 1338, 1370, 1403, 1407, 1410,
              1413, 1414, 1425, 1426, 1427, 1437, 1439, 1453, 1458, 1460, 1461, 1463, 1582,
              1583, 1584, 1630, 1641, 1687, 1701, 3143, 3149, 3152, 3153, 3154, 3165),
    "42S01": (1050,),
    "42S02": (1051, 1109, 1146),
    "42S12": (1082,),
    "42S21": (1060,),
    "42S22": (1054, 1247),
    "70100": (1317,),
    "HY001": (1037, 1038),
    "XA100": (1402,),
    "XA102": (1614,),
    "XA106": (1613,),
    "XAE03": (1401,),
    "XAE04": (1397,),
    "XAE05": (1398,),
    "XAE07": (1399,),
    "XAE08": (1440,),
    "XAE09": (1400,),
}
# fmt: on
SQLSTATE: dict[int, str] = {
    code: state for state, codes in _CODES_BY_STATE.items() for code in codes
}


def sqlstate(code: int | None) -> str:
    """The SQLSTATE of a MySQL error code (HY000 when none is known)."""
    return SQLSTATE.get(code, "HY000") if code else "HY000"


# What text holds where its bytes were not UTF-8: the surrogate escapes of bytes decoded
# with `surrogateescape` (a script's, `script.decode_script`; a client's), or other lone
# surrogates. The one definition of it, for every check and message.
NOT_UTF8 = re.compile("[\ud800-\udfff]")


def not_utf8(text: str) -> bool:
    """Whether text holds what is not UTF-8 (`NOT_UTF8`); ASCII text costs nothing."""
    return not text.isascii() and NOT_UTF8.search(text) is not None


def printable(text: str) -> str:
    """Text that can be printed and sent as JSON: the bytes of a script that are not UTF-8
    (kept as surrogate escapes) shown as `\\xNN`, as MySQL shows them, other lone
    surrogates as `\\uNNNN`."""
    if not not_utf8(text):
        return text
    return NOT_UTF8.sub(_escape, text)


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
        # the Python API's `execute`: what the statements before it in the call did
        self.results: list[Any] = []

    @property
    def sqlstate(self) -> str:
        return sqlstate(self.code)

    @property
    def line(self) -> int | None:
        """The statement's line in its script (1-based), where known."""
        return self.location.line if self.location else None

    @property
    def column(self) -> int | None:
        return self.location.col if self.location else None

    def with_context(self, location: Location, statement: str) -> SQLError:
        """The same error (of the same class), located at `location` (kept if already set)
        in `statement`."""
        return type(self)(
            self.message,
            location=self.location or location,
            statement=self.statement or statement,
            code=self.code,
        )

    def __str__(self) -> str:
        head = f"{self.location}: " if self.location else ""
        code = f"ERROR {self.code} ({self.sqlstate}): " if self.code else ""
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


class CheckError(SimError):
    """A consumer check that cannot run: an --expect directory or a downstream database
    that cannot be read, a table named that the expected state does not hold."""


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
