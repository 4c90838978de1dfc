"""Column values as TiDB stores them: MySQL strict-mode conversion into canonical Python values.

Canonical forms (what `RowChangedEvent` carries and encoders render):
integers, BIT and YEAR -> int; FLOAT -> float rounded to float32; DOUBLE -> float;
DECIMAL -> Decimal at the column's scale; DATE/DATETIME/TIMESTAMP/TIME -> TiDB's text
(`Time.String()`/`Duration.String()`, fsp digits); TIMESTAMP is kept in UTC;
CHAR/VARCHAR/TEXT/ENUM/SET -> str (ENUM the member, SET members in definition order joined by
`,`); BINARY/VARBINARY/BLOB -> bytes; JSON -> the TiDB text of the document.

`column_converter(column)` builds one closure per column so the hot path is a single call.
Errors carry MySQL's codes and messages (strict mode, TiDB's default sql_mode).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import re
import struct
import zoneinfo
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import MAX_PREC, ROUND_HALF_UP, Decimal, InvalidOperation
from decimal import Context as DecimalContext
from itertools import repeat
from typing import Any

from ticdc_sim.errors import NOT_UTF8, SQLError, not_utf8
from ticdc_sim.model.mysql import INTEGER_RANGES, MySQLType
from ticdc_sim.model.table import ColumnInfo

M = MySQLType
Converter = Callable[[Any], Any]
# DECIMAL arithmetic: DECIMAL(65, 30) needs more than the default context's 28 digits, and
# MySQL rounds half away from zero. Every Decimal operation names this context.
WIDE = DecimalContext(prec=100, rounding=ROUND_HALF_UP)
# literal text -> Decimal with every digit kept (range checks come after rounding to scale)
EXACT = DecimalContext(prec=MAX_PREC, rounding=ROUND_HALF_UP)

TIDB_DEFAULT_SQL_MODE = (
    "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
    "ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION"
)


# the sql_mode names TiDB reads (pkg/parser/mysql/const.go Str2SQLMode)
SQL_MODES = frozenset(
    {
        "REAL_AS_FLOAT", "PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "NOT_USED",
        "ONLY_FULL_GROUP_BY", "NO_UNSIGNED_SUBTRACTION", "NO_DIR_IN_CREATE", "POSTGRESQL",
        "ORACLE", "MSSQL", "DB2", "MAXDB", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS",
        "NO_FIELD_OPTIONS", "MYSQL323", "MYSQL40", "ANSI", "NO_AUTO_VALUE_ON_ZERO",
        "NO_BACKSLASH_ESCAPES", "STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "NO_ZERO_IN_DATE",
        "NO_ZERO_DATE", "ALLOW_INVALID_DATES", "ERROR_FOR_DIVISION_BY_ZERO", "TRADITIONAL",
        "NO_AUTO_CREATE_USER", "HIGH_NOT_PRECEDENCE", "NO_ENGINE_SUBSTITUTION",
        "PAD_CHAR_TO_FULL_LENGTH", "TIME_TRUNCATE_FRACTIONAL",
    }
)  # fmt: skip


@dataclass(frozen=True)
class SqlMode:
    """The sql_mode flags that change how values are stored, and the session's
    tidb_skip_utf8_check (which lets strings that are not UTF-8 into character columns)."""

    names: frozenset[str]
    check_utf8: bool = True

    @classmethod
    def parse(cls, text: str) -> SqlMode:
        """A sql_mode value; a name MySQL does not know is error 1231."""
        names = frozenset(n.strip().upper() for n in text.split(",") if n.strip())
        unknown = names - SQL_MODES
        if unknown:
            raise SQLError(f"Variable 'sql_mode' can't be set to the value of '{text}'", code=1231)
        return cls(names)

    @property
    def strict(self) -> bool:
        return bool(self.names & {"STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "TRADITIONAL"})

    @property
    def allow_zero_date(self) -> bool:
        return not (self.strict and "NO_ZERO_DATE" in self.names)

    @property
    def division_by_zero_is_error(self) -> bool:
        """INSERT/UPDATE values that divide by zero fail (SELECT and WHERE give NULL)."""
        return self.strict and "ERROR_FOR_DIVISION_BY_ZERO" in self.names

    @property
    def allow_zero_in_date(self) -> bool:
        """Dates with a zero month or day ('2024-00-10') are stored as they are."""
        return not (self.strict and "NO_ZERO_IN_DATE" in self.names)

    def without_strict(self) -> SqlMode:
        return replace(
            self, names=self.names - {"STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "TRADITIONAL"}
        )

    def __str__(self) -> str:
        return ",".join(sorted(self.names))


DEFAULT_SQL_MODE = SqlMode.parse(TIDB_DEFAULT_SQL_MODE)

_DATE_RE = re.compile(
    r"\s*(\d{1,4})-(\d{1,2})-(\d{1,2})"
    r"(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d*))?)?)?\s*$"
)
_COMPACT_RE = re.compile(r"\s*(\d{4})(\d{2})(\d{2})(?:(\d{2})(\d{2})(\d{2})(?:\.(\d*))?)?\s*$")
_TIME_RE = re.compile(r"\s*(-)?(?:(\d+) )?(\d{1,3}):(\d{1,2})(?::(\d{1,2})(?:\.(\d*))?)?\s*$")
_NUMBER_RE = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$")
_ZERO_DATE_RE = re.compile(
    r"\s*0{1,4}-0{1,2}-0{1,2}(?:[ T]0{1,2}:0{1,2}(?::0{1,2}(?:\.0*)?)?)?\s*$"
)
_TIMESTAMP_MIN = dt.datetime(1970, 1, 1, 0, 0, 1)
_TIMESTAMP_MAX = dt.datetime(2038, 1, 19, 3, 14, 7, 999999)
_MAX_TIME_SECONDS = 838 * 3600 + 59 * 60 + 59


def _out_of_range(col: ColumnInfo) -> SQLError:
    return SQLError(f"Out of range value for column '{col.name}'", code=1264)


def _incorrect(kind: str, value: Any, col: ColumnInfo, code: int = 1366) -> SQLError:
    shown = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return SQLError(f"Incorrect {kind} value: '{shown}' for column '{col.name}'", code=code)


BIGINT_MIN, BIGINT_MAX, UBIGINT_MAX = -(2**63), 2**63 - 1, 2**64 - 1


class BinaryLiteral(bytes):
    """x'..', 0x.., b'..' literals: a number in numeric context, bytes otherwise."""

    def as_int(self) -> int:
        return int.from_bytes(self, "big")


# -- numbers -----------------------------------------------------------------------------------


def number_literal(raw: str, negative: bool = False) -> int | float | Decimal:
    """A numeric literal's value, MySQL's way: integers past BIGINT UNSIGNED (or, negated,
    below BIGINT) are DECIMAL, a literal with an exponent is DOUBLE, any other is DECIMAL
    with every digit kept (no rounding to a context's precision)."""
    if raw.isdigit():
        number = -int(raw) if negative else int(raw)
        return number if BIGINT_MIN <= number <= UBIGINT_MAX else Decimal(number)
    if "e" in raw or "E" in raw:
        double = float(raw)
        if math.isinf(double):  # TiDB's parser (yy_parser.go toFloat)
            raise SQLError(f"Illegal double '{raw}' value found during parsing", code=1367)
        return -double if negative else double
    value = Decimal(raw)
    return value.copy_negate() if negative else value


def binary_literal(digits: str, base: int) -> BinaryLiteral:
    """`X'..'` / `0x..` (base 16) and `b'..'` / `0b..` (base 2): the bytes they spell;
    `X''` and `b''` are the empty string."""
    if not digits:
        return BinaryLiteral(b"")
    if base == 16:
        return BinaryLiteral(bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits))
    return BinaryLiteral(int(digits, 2).to_bytes((len(digits) + 7) // 8, "big"))


def to_decimal(value: Any) -> Decimal | None:
    """MySQL's numeric reading of a value, or None when it is not a number at all."""
    if isinstance(value, bool):
        return Decimal(int(value))
    if isinstance(value, BinaryLiteral):
        return Decimal(value.as_int())
    if isinstance(value, int | Decimal):
        return Decimal(value)
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else Decimal(repr(value))
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str) and _NUMBER_RE.match(value):
        try:
            return Decimal(value.strip())
        except InvalidOperation:
            return None
    return None


# integers beyond this stand for themselves as ±_HUGE: whoever rounds checks a 64-bit range,
# and `int(Decimal('1e999999'))` would build a million digits to find it out of range
_HUGE = 10**40


def round_half_away(value: Decimal) -> int:
    if value.is_finite() and value.adjusted() > 40:
        return _HUGE if value > 0 else -_HUGE
    return int(value.to_integral_value(rounding=ROUND_HALF_UP))


def _integer(col: ColumnInfo) -> Converter:
    signed_min, signed_max, unsigned_max = INTEGER_RANGES[col.tp]
    lo, hi = (0, unsigned_max) if col.unsigned else (signed_min, signed_max)

    def convert(value: Any) -> int:
        if type(value) is int:
            number = value
        else:
            dec = to_decimal(value)
            if dec is None:
                raise _incorrect("integer", value, col)
            number = round_half_away(dec)
        if not lo <= number <= hi:
            raise _out_of_range(col)
        return number

    return convert


def _float(col: ColumnInfo, single: bool) -> Converter:
    limit = 3.4028234663852886e38 if single else 1.7976931348623157e308
    unsigned, scaled = col.unsigned, col.flen > 0 and col.decimal >= 0

    def convert(value: Any) -> float:
        if isinstance(value, float):
            number = value
        else:
            dec = to_decimal(value)
            if dec is None:
                raise _incorrect("double", value, col)
            number = float(dec)
        if math.isinf(number) or abs(number) > limit:
            raise _out_of_range(col)
        if unsigned and number < 0:
            raise _out_of_range(col)
        if scaled:  # FLOAT(M,D)/DOUBLE(M,D) round and bound
            if abs(number) >= 10 ** (col.flen - col.decimal):
                raise _out_of_range(col)
            number = float(WIDE.quantize(Decimal(repr(number)), Decimal(1).scaleb(-col.decimal)))
            if abs(number) >= 10 ** (col.flen - col.decimal):
                raise _out_of_range(col)
        return struct.unpack("f", struct.pack("f", number))[0] if single else number

    return convert


def _decimal_limits(col: ColumnInfo) -> tuple[Decimal, Decimal]:
    """DECIMAL(M, D): the quantum values round to, and the bound their magnitude stays below."""
    return Decimal(1).scaleb(-col.decimal), Decimal(10) ** (col.flen - col.decimal)


def _decimal(col: ColumnInfo) -> Converter:
    quantum, bound = _decimal_limits(col)
    unsigned = col.unsigned

    whole_digits = col.flen - col.decimal

    def convert(value: Any) -> Decimal:
        dec = value if type(value) is Decimal else to_decimal(value)
        if dec is None:
            raise _incorrect("decimal", value, col)
        if dec and dec.adjusted() >= whole_digits:  # too many digits before the point
            raise _out_of_range(col)
        dec = dec.quantize(quantum, rounding=ROUND_HALF_UP, context=WIDE)
        if dec.copy_abs() >= bound or (unsigned and dec < 0):
            raise _out_of_range(col)
        return dec if dec else dec.copy_abs()  # no negative zero

    return convert


def _bit(col: ColumnInfo) -> Converter:
    limit = 1 << col.flen

    def convert(value: Any) -> int:
        if isinstance(value, bytes):
            number = int.from_bytes(value, "big")
        elif isinstance(value, str):
            number = int.from_bytes(utf8(value), "big")
        else:
            dec = to_decimal(value)
            if dec is None:
                raise _incorrect("bit", value, col)
            number = round_half_away(dec)
        if not 0 <= number < limit:
            raise SQLError(f"Data too long for column '{col.name}'", code=1406)
        return number

    return convert


def _year(col: ColumnInfo) -> Converter:
    """TiDB `Datum.ConvertToMysqlYear` + `AdjustYear` (pkg/types/datum.go, time.go): 1..99
    are two-digit years from a number or a string of any length (`'0018'` is 2018, where
    MySQL refuses it); zero is 0000, but 2000 from the strings '0', '00' and '000'."""

    def convert(value: Any) -> int:
        dec = to_decimal(value)
        if dec is None:
            raise _incorrect("integer", value, col)
        year = round_half_away(dec)
        if year == 0:
            text = value.strip() if isinstance(value, str) else ""
            return 2000 if text.startswith("0") and len(value) != 4 else 0
        if 1 <= year <= 69:
            year += 2000
        elif 70 <= year <= 99:
            year += 1900
        if not 1901 <= year <= 2155:
            raise _out_of_range(col)
        return year

    return convert


# -- strings -----------------------------------------------------------------------------------


def utf8(text: str) -> bytes:
    """Text as bytes; surrogate escapes (undecodable script bytes) turn back into the bytes."""
    return text.encode("utf-8", "surrogateescape")


def as_text(value: Any) -> str:
    """MySQL's string form of a value (numbers as MySQL prints them)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return format_double(value)
    if isinstance(value, Decimal):
        return format_decimal(value)
    return str(value)


def format_decimal(value: Decimal) -> str:
    """MySQL's text for a DECIMAL: its digits, never an exponent (Python's str of a zero
    quotient is '0E-7', MySQL's 0.0000000), and no sign on zero ('-0.000' is 0.000)."""
    text = format(value, "f")
    return text.lstrip("-") if value.is_zero() else text


def format_double(value: float) -> str:
    """MySQL's text for a DOUBLE: shortest round-trip digits, exponent from 1e15 on."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa}e{int(exponent):+d}"
    return text


# What a character column cannot hold: what is not UTF-8 (errors.NOT_UTF8); utf8 (utf8mb3)
# columns also refuse characters beyond the BMP (TiDB's check-mb4-value-in-utf8).
_NOT_UTF8MB3 = re.compile(f"{NOT_UTF8.pattern}|[\U00010000-\U0010ffff]")


def raw_bytes(text: str) -> bytes:
    """The bytes a text stands for: surrogate escapes back to the script's bytes, any other
    lone surrogate as its (invalid) UTF-8 form."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return b"".join(
            ch.encode("utf-8", "surrogateescape" if "\udc80" <= ch <= "\udcff" else "surrogatepass")
            for ch in text
        )


def _peek(data: bytes, at: int) -> int:
    """How many bytes TiDB takes as one character at `at` (charset `encodingUTF8.Peek`)."""
    lead = data[at]
    width = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return min(width, len(data) - at)


def _first_invalid(data: bytes, mb3: bool) -> int | None:
    """Where the first byte that starts no character the charset holds is, or None."""
    try:
        valid, invalid = data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        valid, invalid = data[: e.start].decode("utf-8"), e.start
    if mb3:  # decoded text: only characters beyond the BMP match
        found = _NOT_UTF8MB3.search(valid)
        if found is not None:
            return len(valid[: found.start()].encode("utf-8"))
    return invalid


def checked_text(text: str, col: ColumnInfo) -> str:
    """Text stored into a character column: valid in the column's charset, or TiDB's error
    1366 naming the first bad character's bytes (table `convertToIncorrectStringErr`)."""
    mb3 = col.charset in ("utf8", "utf8mb3")
    if text.isascii() or (_NOT_UTF8MB3 if mb3 else NOT_UTF8).search(text) is None:
        return text
    data = raw_bytes(text)
    at = _first_invalid(data, mb3)
    if at is None:
        return text
    shown = "".join(f"\\x{b:02X}" for b in data[at : at + _peek(data, at)])
    raise SQLError(f"Incorrect string value '{shown}' for column '{col.name}'", code=1366)


def replace_invalid(text: str, col: ColumnInfo) -> str:
    """A non-strict sql_mode's (or IGNORE's) version of `checked_text`: each bad character
    (as TiDB peeks it) becomes '?' (charset `OpReplace`)."""
    data, parts, at = raw_bytes(text), [], 0
    mb3 = col.charset in ("utf8", "utf8mb3")
    while True:
        bad = _first_invalid(data[at:], mb3)
        if bad is None:
            parts.append(data[at:].decode("utf-8"))
            return "".join(parts)
        parts += [data[at : at + bad].decode("utf-8"), "?"]
        at += bad + _peek(data, at + bad)
        if at >= len(data):
            return "".join(parts)


def _utf8_text(data: bytes, col: ColumnInfo) -> str:
    """Bytes stored into a character column (a hex literal's, say): valid, or error 1366."""
    return checked_text(data.decode("utf-8", "surrogateescape"), col)


def _string(
    col: ColumnInfo,
    *,
    binary: bool,
    fixed: bool,
    limit: int,
    in_bytes: bool = False,
    check_utf8: bool = True,
) -> Converter:
    checked = functools.partial(checked_text, col=col) if check_utf8 else _same

    def convert(value: Any) -> str | bytes:
        if binary:  # plain bytes: a hex literal's type does not outlive the statement
            data = bytes(value) if isinstance(value, bytes) else utf8(as_text(value))
            if len(data) > limit:
                raise SQLError(f"Data too long for column '{col.name}'", code=1406)
            # BINARY(n) pads with 0x00 (TiDB keeps the padding)
            return data.ljust(limit, b"\0") if fixed else data
        text = _utf8_text(value, col) if isinstance(value, bytes) else checked(as_text(value))
        if in_bytes:  # TEXT types are bounded in bytes
            if len(utf8(text)) > limit:
                raise SQLError(f"Data too long for column '{col.name}'", code=1406)
        elif len(text) > limit:
            # spaces past the length are dropped silently (MySQL), anything else is an error
            if text[limit:].strip(" "):
                raise SQLError(f"Data too long for column '{col.name}'", code=1406)
            text = text[:limit]
        # CHAR drops trailing spaces on read (PAD_CHAR_TO_FULL_LENGTH off)
        return text.rstrip(" ") if fixed else text

    return convert


_TEXT_TYPES = frozenset({M.VARCHAR, M.STRING, M.VAR_STRING})
_BLOB_LIMITS = {
    M.TINY_BLOB: 255,
    M.BLOB: 65535,
    M.MEDIUM_BLOB: 16777215,
    M.LONG_BLOB: 4294967295,
}


def _member_key(col: ColumnInfo) -> Callable[[str], str]:
    # members match under the column's collation: case-insensitively only for `_ci`
    return str.casefold if col.collation.endswith("_ci") else str


_EMPTY_ENUM: Any = type("_EmptyEnum", (), {})()  # the '' error member of non-strict mode


def _enum(col: ColumnInfo) -> Converter:
    fold = _member_key(col)
    members = {fold(m): m for m in col.elems}

    def convert(value: Any) -> str:
        if value is _EMPTY_ENUM:
            return ""
        if isinstance(value, int | Decimal) and not isinstance(value, bool):
            index = int(value)
            if 1 <= index <= len(col.elems):
                return col.elems[index - 1]
        else:
            text = as_text(value).rstrip(" ")
            found = members.get(fold(text))
            if found is not None:
                return found
        raise SQLError(f"Data truncated for column '{col.name}'", code=1265)

    return convert


def _set(col: ColumnInfo) -> Converter:
    fold = _member_key(col)
    order = {fold(m): i for i, m in enumerate(col.elems)}

    def convert(value: Any) -> str:
        if isinstance(value, int) and not isinstance(value, bool):
            if not 0 <= value < 1 << len(col.elems):
                raise SQLError(f"Data truncated for column '{col.name}'", code=1265)
            return ",".join(m for i, m in enumerate(col.elems) if value >> i & 1)
        text = as_text(value)
        if text == "":
            return ""
        picked: set[int] = set()
        for part in text.split(","):
            index = order.get(fold(part.rstrip(" ")))
            if index is None:
                raise SQLError(f"Data truncated for column '{col.name}'", code=1265)
            picked.add(index)
        return ",".join(col.elems[i] for i in sorted(picked))

    return convert


def _json(col: ColumnInfo) -> Converter:
    def convert(value: Any) -> str:
        if isinstance(value, JSONValue):
            return value.text
        return json_text(parse_json(as_text(value), f"in value for column '{col.name}'"))

    return convert


MAX_JSON_DEPTH = 100  # TiDB types/json_binary.go maxJSONDepth
_DOUBLE_MAX = Decimal("1.7976931348623157e308")


def parse_json(text: str, where: str, code: int = 3140) -> Any:
    """A JSON document as TiDB reads one: bytes that are not UTF-8 become U+FFFD (Go's
    encoding/json), numbers past a double's range, NaN and Infinity are not JSON, and
    containers nest at most MAX_JSON_DEPTH deep (error 3157). Invalid text is error `code`
    (3140 in a column's value, 3141 in a function's argument), saying `where`."""
    if not_utf8(text):
        text = raw_bytes(text).decode("utf-8", "replace")
    try:
        doc = json.loads(text, parse_float=Decimal, parse_constant=_not_json)
    except RecursionError:
        raise SQLError("The JSON document exceeds the maximum depth.", code=3157) from None
    except ValueError:
        raise SQLError(
            f'Invalid JSON text: "The document root must not be followed by other values." '
            f"at position 0 {where}.",
            code=code,
        ) from None
    level: list[tuple[Any, int]] = [(doc, 0)]
    while level:
        node, depth = level.pop()
        if isinstance(node, dict | list):
            if depth >= MAX_JSON_DEPTH:
                raise SQLError("The JSON document exceeds the maximum depth.", code=3157)
            values = node.values() if isinstance(node, dict) else node
            level.extend((v, depth + 1) for v in values)
        elif isinstance(node, Decimal | int) and Decimal(node).copy_abs() > _DOUBLE_MAX:
            raise SQLError(
                f"Invalid JSON text: the number {node} {where} is out of a double's range",
                code=code,
            )
    return doc


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


class JSONValue:
    """A JSON document produced by a JSON function (not to be re-parsed as text)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def json_text(doc: Any) -> str:
    """TiDB's `BinaryJSON.String()`: `, ` and `: ` separators, object keys in byte order."""
    if isinstance(doc, dict):
        # TiDB `appendBinaryObject` sorts keys by their bytes (MySQL sorts by length first)
        items = sorted(doc.items(), key=lambda kv: utf8(kv[0]))
        return "{" + ", ".join(f"{json.dumps(k)}: {json_text(v)}" for k, v in items) + "}"
    if isinstance(doc, list):
        return "[" + ", ".join(json_text(v) for v in doc) + "]"
    if isinstance(doc, Decimal):
        return format_double(float(doc))
    if isinstance(doc, float):
        return format_double(doc)
    return json.dumps(doc, ensure_ascii=False)


# -- vectors ---------------------------------------------------------------------------------


def _float32_shortest(value: float) -> str:
    """Go's `strconv.AppendFloat(buf, float64(f), 'f', -1, 32)` (TiDB `VectorFloat32.String`):
    the shortest digits that round-trip through float32, always positional."""
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    for digits in range(1, 10):
        text = f"{value:.{digits}e}" if digits > 1 else f"{value:.0e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == value:
            break
    mantissa, exponent = text.split("e")
    return format(Decimal(f"{mantissa}e{int(exponent)}").normalize(), "f")


def _vector(col: ColumnInfo) -> Converter:
    """TiDB's VECTOR(FLOAT32): `[x,y,...]` text, float32 elements, the declared dimension."""
    dimension = col.flen if col.flen > 0 else None

    def convert(value: Any) -> str:
        text = as_text(value).strip()
        try:
            items = json.loads(text)
        except ValueError:
            items = None
        if not isinstance(items, list) or not all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in items
        ):
            raise SQLError(f"Invalid vector text: {text!r} for column '{col.name}'", code=1105)
        if dimension is not None and len(items) != dimension:
            raise SQLError(
                f"vector has {len(items)} dimensions, does not fit VECTOR({dimension})", code=1105
            )
        floats = [struct.unpack("f", struct.pack("f", float(x)))[0] for x in items]
        return "[" + ",".join(_float32_shortest(f) for f in floats) + "]"

    return convert


# -- dates and times ---------------------------------------------------------------------------


def _fraction(digits: str | None, fsp: int) -> tuple[int, int]:
    """Microseconds rounded to fsp digits; returns (microseconds, carry seconds)."""
    if not digits:
        return 0, 0
    scaled = Decimal("0." + digits).quantize(Decimal(1).scaleb(-fsp), rounding=ROUND_HALF_UP)
    micros = int(scaled * 1_000_000)
    return (0, 1) if micros >= 1_000_000 else (micros, 0)


def parse_datetime(value: Any, fsp: int) -> dt.datetime | None:
    """A DATETIME from MySQL's accepted literal forms, fractional part rounded to fsp."""
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    if isinstance(value, int | Decimal) and not isinstance(value, bool):
        text, _, frac = str(value).partition(".")  # a fraction: fractional seconds
        if not text.isdigit():  # negative, or an exponent
            return None
        if len(text) in (6, 12):  # YYMMDD[hhmmss]
            short_year = int(text[:2])
            text = str(short_year + (2000 if short_year < 70 else 1900)) + text[2:]
        value = f"{text}.{frac}" if frac else text
    text = as_text(value)
    match = _DATE_RE.match(text) or _COMPACT_RE.match(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, frac = match.groups()
    year_i = int(year)
    if len(year) <= 2:
        year_i += 2000 if year_i < 70 else 1900
    micros, carry = _fraction(frac, fsp)
    try:
        moment = dt.datetime(
            year_i, int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0)
        )
    except ValueError:
        return None
    return moment + dt.timedelta(seconds=carry, microseconds=micros)


def format_date(moment: dt.date) -> str:
    """YYYY-MM-DD, the year in four digits (strftime's %Y drops the zeros of year 1 to 999:
    '0099-01-02' read back as '99-01-02' is 1999)."""
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"


def format_datetime(moment: dt.datetime, fsp: int) -> str:
    text = format_date(moment) + " " + moment.strftime("%H:%M:%S")
    return text + f".{moment.microsecond:06d}"[: fsp + 1] if fsp else text


_PLAIN_DATETIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.([0-9]{1,6}))?\Z"
)
_from_iso = dt.datetime.fromisoformat


def plain_datetime(text: str, fsp: int) -> str | None:
    """The stored form of `YYYY-MM-DD hh:mm:ss[.f]` with at most fsp fraction digits (so
    nothing rounds): the text itself, its fraction padded to fsp. None sends any other
    form, or a date that does not exist, to `parse_datetime`."""
    match = _PLAIN_DATETIME.match(text)
    if match is None:
        return None
    fraction = match.group(1)
    if fraction is None:
        stored = text + "." + "0" * fsp if fsp else text
    elif len(fraction) > fsp:
        return None
    else:
        stored = text + "0" * (fsp - len(fraction))
    try:
        _from_iso(text)  # C's check that the date and time exist (year 0 is refused too)
    except ValueError:
        return None
    return stored


@functools.cache
def _stored_datetimes(fsp: int) -> re.Pattern[str]:
    """Lines of DATETIME(fsp) text exactly as stored, and valid without a calendar: days up
    to 28 (the 29th to 31st go through `plain_datetime`), no year 0000."""
    one = (
        r"(?!0000)[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8]) "
        r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]" + (rf"\.[0-9]{{{fsp}}}" if fsp else "")
    )
    return re.compile(rf"{one}(?:\n{one})*")


def _is_zero_date(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return value == 0
    return isinstance(value, str) and _ZERO_DATE_RE.match(value) is not None


def _zero_in_date(value: Any, fsp: int, with_time: bool) -> str | None:
    """A date with a zero month or day, kept as text (datetime cannot hold it)."""
    match = _DATE_RE.match(as_text(value)) if isinstance(value, str) else None
    if match is None:
        return None
    year, month, day, hour, minute, second, frac = match.groups()
    if int(month) and int(day) or int(month) > 12 or int(day) > 31:
        return None
    if int(hour or 0) > 23 or int(minute or 0) > 59 or int(second or 0) > 59:
        return None
    text = f"{int(year):04d}-{int(month):02d}-{int(day):02d}"
    if not with_time:
        return text
    micros, carry = _fraction(frac, fsp)
    if carry:
        return None
    text += f" {int(hour or 0):02d}:{int(minute or 0):02d}:{int(second or 0):02d}"
    return text + f".{micros:06d}"[: fsp + 1] if fsp else text


def _date(col: ColumnInfo, mode: SqlMode) -> Converter:
    def convert(value: Any) -> str:
        if mode.allow_zero_date and _is_zero_date(value):
            return "0000-00-00"
        moment = parse_datetime(value, 0)
        if moment is None and mode.allow_zero_in_date:
            kept = _zero_in_date(value, 0, with_time=False)
            if kept is not None and (mode.allow_zero_date or not kept.startswith("0000")):
                return kept
        if moment is None:
            raise _incorrect("date", value, col, code=1292)
        return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"

    return convert


def _datetime(col: ColumnInfo, zone: Callable[[], dt.tzinfo] | None, mode: SqlMode) -> Converter:
    fsp = max(col.decimal, 0)
    zero = "0000-00-00 00:00:00" + ("." + "0" * fsp if fsp else "")

    def convert(value: Any) -> str:
        if zone is None and type(value) is str:
            stored = plain_datetime(value, fsp)
            if stored is not None:
                return stored
        if mode.allow_zero_date and _is_zero_date(value):
            return zero
        moment = parse_datetime(value, fsp)
        if moment is None and mode.allow_zero_in_date and zone is None:
            kept = _zero_in_date(value, fsp, with_time=True)
            if kept is not None and (mode.allow_zero_date or not kept.startswith("0000")):
                return kept
        if moment is None:
            raise _incorrect("datetime", value, col, code=1292)
        if zone is not None:  # TIMESTAMP: the session's time zone -> UTC
            moment = (
                moment.replace(tzinfo=zone()).astimezone(dt.UTC).replace(tzinfo=None)
                if moment.tzinfo is None
                else moment.astimezone(dt.UTC).replace(tzinfo=None)
            )
            if not _TIMESTAMP_MIN <= moment <= _TIMESTAMP_MAX:
                raise _incorrect("timestamp", value, col, code=1292)
        return format_datetime(moment, fsp)

    return convert


def _time(col: ColumnInfo) -> Converter:
    fsp = max(col.decimal, 0)

    def convert(value: Any) -> str:
        if isinstance(value, int | Decimal) and not isinstance(value, bool):
            if abs(Decimal(value)) >= 10**9:  # more hours than TIME holds (838:59:59)
                raise _out_of_range(col)
            sign = "-" if value < 0 else ""
            whole, _, frac = format(abs(Decimal(value)), "f").partition(".")
            digits = whole.rjust(6, "0")
            value = f"{sign}{digits[:-4]}:{digits[-4:-2]}:{digits[-2:]}" + (
                f".{frac}" if frac else ""
            )
        match = _TIME_RE.match(as_text(value))
        if match is None:  # a datetime gives its time of day
            moment = _DATE_RE.match(as_text(value)) if isinstance(value, str) else None
            if moment is not None and moment.group(4) is not None:
                hour, minute, second, frac = moment.group(4, 5, 6, 7)
                text = f"{hour}:{minute}:{second or '0'}" + (f".{frac}" if frac else "")
                match = _TIME_RE.match(text)
        if match is None:
            raise _incorrect("time", value, col, code=1292)
        neg, days, hours, minutes, seconds, frac = match.groups()
        micros, carry = _fraction(frac, fsp)
        if int(minutes) > 59 or int(seconds or 0) > 59:
            raise _incorrect("time", value, col, code=1292)
        total = (int(days or 0) * 24 + int(hours)) * 3600 + int(minutes) * 60 + int(seconds or 0)
        total += carry
        if total > _MAX_TIME_SECONDS or (total == _MAX_TIME_SECONDS and micros):
            raise _out_of_range(col)
        text = f"{'-' if neg and (total or micros) else ''}{total // 3600:02d}:"
        text += f"{total // 60 % 60:02d}:{total % 60:02d}"
        return text + f".{micros:06d}"[: fsp + 1] if fsp else text

    return convert


# -- comparing ---------------------------------------------------------------------------------

_PERMISSIVE = SqlMode(frozenset())  # constants compared with a column may be zero dates
Key = Callable[[Any], Any]


def _datetime_key(stored: Any) -> Any:
    """A stored DATE/DATETIME/TIMESTAMP text as `YYYY-MM-DD hh:mm:ss.ffffff`: one form for
    every fsp, whose text order is time order."""
    if not isinstance(stored, str):
        return stored
    if len(stored) == 10:
        stored += " 00:00:00"
    if len(stored) == 19:
        stored += "."
    return stored.ljust(26, "0")


def _time_key(stored: Any) -> Any:
    """A stored TIME text as signed microseconds."""
    if not isinstance(stored, str):
        return stored
    negative = stored.startswith("-")
    clock, _, fraction = stored.lstrip("-").partition(".")
    hours, minutes, seconds = clock.split(":")
    micros = ((int(hours) * 60 + int(minutes)) * 60 + int(seconds)) * 1_000_000
    micros += int(fraction.ljust(6, "0")) if fraction else 0
    return -micros if negative else micros


def _other_key(convert: Converter, stored_key: Key) -> Key:
    def key(value: Any) -> Any:
        if value is None:
            return None
        try:
            return stored_key(convert(value))
        except SQLError:
            return value  # not a time at all: MySQL compares what is left (and warns)

    return key


def comparison_keys(col: ColumnInfo, zone: Callable[[], dt.tzinfo]) -> tuple[Key, Key] | None:
    """How MySQL compares a column with anything else when not as it is stored: temporal
    columns as times, not as text; YEAR as a YEAR; ENUM and SET by text or by number.

    Returns (key of the column's stored value, key of the other operand); the other operand
    is read as a value of the column's type at full precision (`d = '3:00'` is 03:00:00,
    `e = '2020-01-01 00:00:00'` matches a DATE, a TIMESTAMP constant is in the session's
    zone). None for a column compared as it is stored. MySQL `Arg_comparator` (compare_datetime,
    compare_time); TiDB `expression.RefineComparedConstant`.
    """
    precise = replace(col, decimal=6)
    if col.tp in (M.DATE, M.DATETIME):
        return _datetime_key, _other_key(_datetime(precise, None, _PERMISSIVE), _datetime_key)
    if col.tp == M.TIMESTAMP:
        return _datetime_key, _other_key(_datetime(precise, zone, _PERMISSIVE), _datetime_key)
    if col.tp == M.DURATION:
        return _time_key, _other_key(_time(precise), _time_key)
    if col.tp == M.YEAR:  # `y = 1` is 2001, as a YEAR value would be (TiDB refineArgs)
        return _same, _other_key(_year(col), _same)
    if col.tp in (M.ENUM, M.SET):  # text against text, its number against numbers
        number = _member_number(col)
        return (lambda value: None if value is None else Member(value, number(value))), _same
    return None


class Member(str):
    """An ENUM or SET value under comparison: its text, and its number (ENUM index, SET
    bits) for numeric contexts, where `evaluate.to_number` reads it."""

    number: int

    def __new__(cls, text: str, number: int) -> Member:
        member = super().__new__(cls, text)
        member.number = number
        return member


def _member_number(col: ColumnInfo) -> Callable[[str], int]:
    if col.tp == M.ENUM:
        index = {m: i for i, m in enumerate(col.elems, start=1)}
        return lambda value: index.get(value, 0)
    bits = {m: 1 << i for i, m in enumerate(col.elems)}
    return lambda value: sum(bits.get(m, 0) for m in value.split(",") if m)


def _same(value: Any) -> Any:
    return value


def order_key(col: ColumnInfo) -> Key | None:
    """How ORDER BY sorts a column when not by its stored form: ENUM by member number, SET
    by its bit value, TIME by duration; None for the stored form's own order."""
    if col.tp in (M.ENUM, M.SET):
        number = _member_number(col)
        return lambda value: None if value is None else number(value)
    keys = comparison_keys(col, lambda: dt.UTC)
    return keys[0] if keys is not None and keys[0] is not _same else None


# -- the table ---------------------------------------------------------------------------------


# Per type code: the strict converter of a column (strings are handled by `_string`).
_CONVERTERS: dict[
    MySQLType, Callable[[ColumnInfo, Callable[[], dt.tzinfo], SqlMode], Converter]
] = {
    **{t: (lambda c, z, m: _integer(c)) for t in (M.TINY, M.SHORT, M.INT24, M.LONG, M.LONGLONG)},
    M.FLOAT: lambda c, z, m: _float(c, single=True),
    M.DOUBLE: lambda c, z, m: _float(c, single=False),
    M.NEWDECIMAL: lambda c, z, m: _decimal(c),
    M.BIT: lambda c, z, m: _bit(c),
    M.YEAR: lambda c, z, m: _year(c),
    M.DATE: lambda c, z, m: _date(c, m),
    M.DATETIME: lambda c, z, m: _datetime(c, None, m),
    M.TIMESTAMP: lambda c, z, m: _datetime(c, z, m),  # session time zone -> UTC
    M.DURATION: lambda c, z, m: _time(c),
    M.ENUM: lambda c, z, m: _enum(c),
    M.SET: lambda c, z, m: _set(c),
    M.JSON: lambda c, z, m: _json(c),
    M.TIDB_VECTOR_FLOAT32: lambda c, z, m: _vector(c),
}


def column_converter(
    col: ColumnInfo, zone: Callable[[], dt.tzinfo], mode: SqlMode = DEFAULT_SQL_MODE
) -> Converter:
    """The conversion of any evaluated value into `col`'s canonical value under `mode`."""
    tp = col.tp
    if tp in _CONVERTERS:
        inner = _CONVERTERS[tp](col, zone, mode)
    else:  # CHAR/VARCHAR/BINARY/VARBINARY and the TEXT/BLOB family
        binary = col.charset == "binary"
        in_bytes = tp in _BLOB_LIMITS
        limit = _BLOB_LIMITS.get(tp, col.flen)
        inner = _string(
            col,
            binary=binary,
            fixed=tp == M.STRING,
            limit=limit,
            in_bytes=in_bytes,
            check_utf8=mode.check_utf8,
        )
    not_null = col.not_null
    if not mode.strict:
        inner = _lenient(col, inner)

    def convert(value: Any) -> Any:
        if value is None:
            if not_null:
                raise SQLError(f"Column '{col.name}' cannot be null", code=1048)
            return None
        return inner(value)

    return convert


_NUMERIC_PREFIX = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _lenient(col: ColumnInfo, strict: Converter) -> Converter:
    """Non-strict sql_mode: clip, truncate or zero what strict mode rejects (MySQL warns)."""

    def convert(value: Any) -> Any:
        try:
            return strict(value)
        except SQLError as error:
            return strict(_adjusted(col, value, error.code))

    return convert


def _adjusted(col: ColumnInfo, value: Any, code: int | None) -> Any:
    tp = col.tp
    if code == 1366 and (tp in _BLOB_LIMITS or tp in _TEXT_TYPES):  # not UTF-8: '?' for it
        text = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
        return replace_invalid(as_text(text), col)
    if code == 1366:  # not a number: its numeric prefix, else 0
        match = _NUMERIC_PREFIX.match(as_text(value))
        return Decimal(match.group(0).strip()) if match else 0
    if code == 1264:  # out of range: the nearest bound
        negative = (to_decimal(value) or 0) < 0
        if tp in INTEGER_RANGES:
            signed_min, signed_max, unsigned_max = INTEGER_RANGES[tp]
            if col.unsigned:
                return 0 if negative else unsigned_max
            return signed_min if negative else signed_max
        if tp == M.NEWDECIMAL:  # the largest DECIMAL(M, D), every digit kept (WIDE)
            quantum, bound = _decimal_limits(col)
            top = WIDE.subtract(bound, quantum)
            return 0 if negative and col.unsigned else (top.copy_negate() if negative else top)
        if tp in (M.FLOAT, M.DOUBLE):
            top_f = 3.4028234663852886e38 if tp == M.FLOAT else 1.7976931348623157e308
            return 0.0 if negative and col.unsigned else (-top_f if negative else top_f)
        if tp == M.YEAR:
            return 0
        if tp == M.DURATION:
            return "-838:59:59" if as_text(value).strip().startswith("-") else "838:59:59"
    if code == 1406:  # too long: cut to the column's length
        if tp == M.BIT:
            return (1 << col.flen) - 1
        limit = _BLOB_LIMITS.get(tp, col.flen)
        if isinstance(value, bytes) or col.charset == "binary":
            data = value if isinstance(value, bytes) else utf8(as_text(value))
            return data[:limit]
        text = as_text(value)
        if tp in _BLOB_LIMITS:
            return utf8(text)[:limit].decode("utf-8", "ignore")
        return text[:limit]
    if code == 1292:  # bad date or time: the zero value
        if tp == M.DATE:
            return "0000-00-00"
        if tp == M.DURATION:
            return "00:00:00"
        return "0000-00-00 00:00:00"
    if code == 1265:  # not a member
        return "" if tp == M.SET else _EMPTY_ENUM
    raise SQLError(f"cannot store {as_text(value)!r} in column '{col.name}'", code=code)


BatchConverter = Callable[[Sequence[str]], "list[Any] | None"]


def batch_converter(col: ColumnInfo, kind: str, mode: SqlMode) -> BatchConverter | None:
    """A whole column of literal lexemes at once, for the common (type, literal kind) pairs.

    Returns None for the pair when there is no batch form; the batch itself returns None when
    any value needs the per-value path (escapes, out of range, too long: errors are reported
    there, with their row).
    """
    tp = col.tp
    if kind == "num" and tp in INTEGER_RANGES:
        signed_min, signed_max, unsigned_max = INTEGER_RANGES[tp]
        lo, hi = (0, unsigned_max) if col.unsigned else (signed_min, signed_max)

        def integers(lexemes: Sequence[str]) -> list[Any] | None:
            try:  # lexemes are `-?[0-9]+`, or have a fraction or exponent: per value
                values = list(map(int, lexemes))
            except ValueError:
                return None
            return values if lo <= min(values) and max(values) <= hi else None

        return integers
    text_types = (M.VARCHAR, M.STRING, M.VAR_STRING)
    not_held = _NOT_UTF8MB3 if col.charset in ("utf8", "utf8mb3") else NOT_UTF8
    if kind == "hex" and col.charset == "binary" and (tp in text_types or tp in _BLOB_LIMITS):
        byte_limit, pad = _BLOB_LIMITS.get(tp, col.flen), tp == M.STRING

        def hexes(lexemes: Sequence[str]) -> list[Any] | None:
            digits = [x[2:-1] if x[0] in "xX" else x[2:] for x in lexemes]  # X'..' or 0x..
            values = [bytes.fromhex(d if len(d) % 2 == 0 else "0" + d) for d in digits]
            if max(map(len, values)) > byte_limit:
                return None  # too long: per value, which reports it
            return [v.ljust(byte_limit, b"\0") for v in values] if pad else values

        return hexes
    if kind == "str" and tp in text_types and col.charset != "binary" and mode.strict:
        limit, fixed = col.flen, tp == M.STRING

        def strings(lexemes: Sequence[str]) -> list[Any] | None:
            bodies = [lexeme[1:-1] for lexeme in lexemes]
            joined = "".join(bodies)
            if "\\" in joined or "'" in joined or '"' in joined:  # escapes: per value
                return None
            if not joined.isascii() and not_held.search(joined):  # not UTF-8: per value
                return None
            if max(map(len, bodies)) > limit:
                return None
            return [b.rstrip(" ") for b in bodies] if fixed else bodies

        return strings
    if kind == "str" and tp in _BLOB_LIMITS and col.charset != "binary" and mode.strict:
        byte_limit = _BLOB_LIMITS[tp]

        def texts(lexemes: Sequence[str]) -> list[Any] | None:
            bodies = [lexeme[1:-1] for lexeme in lexemes]
            joined = "".join(bodies)
            if "\\" in joined or "'" in joined or '"' in joined:  # escapes: per value
                return None
            if not joined.isascii() and not_held.search(joined):  # not UTF-8: per value
                return None
            # four bytes a character at most: longer ones are measured per value
            if max(map(len, bodies)) * 4 > byte_limit:
                return None
            return bodies

        return texts
    if kind == "str" and tp == M.DATETIME:
        fsp = max(col.decimal, 0)

        stored_form = _stored_datetimes(fsp)

        def datetimes(lexemes: Sequence[str]) -> list[Any] | None:
            bodies = [lexeme[1:-1] for lexeme in lexemes]
            joined = "\n".join(bodies)
            if joined.count("\n") == len(bodies) - 1 and stored_form.fullmatch(joined):
                return bodies  # every one already as stored: one regex for the column
            values = [plain_datetime(body, fsp) for body in bodies]
            return None if None in values else values

        return datetimes
    if kind == "num" and tp in (M.FLOAT, M.DOUBLE) and not col.unsigned and col.decimal < 0:
        top = 3.4028234663852886e38 if tp == M.FLOAT else 1.7976931348623157e308
        single = tp == M.FLOAT

        def floats(lexemes: Sequence[str]) -> list[Any] | None:
            # a literal's DECIMAL or DOUBLE value, as a double: both round correctly once
            values = list(map(float, lexemes))
            if max(map(abs, values)) > top:
                return None  # out of range: per value, which reports it
            if 0.0 in values and any(math.copysign(1.0, v) < 0 for v in values if not v):
                return None  # a negative zero: per value
            return array("f", values).tolist() if single else values

        return floats
    if kind == "num" and tp == M.NEWDECIMAL:
        quantum, bound = _decimal_limits(col)
        unsigned = col.unsigned
        quantize, exact = WIDE.quantize, EXACT.create_decimal

        def decimals(lexemes: Sequence[str]) -> list[Any] | None:
            try:
                values = list(map(quantize, map(exact, lexemes), repeat(quantum, len(lexemes))))
            except ArithmeticError:  # not a number, or beyond 100 digits: per value
                return None
            if max(map(Decimal.copy_abs, values)) >= bound or (unsigned and min(values) < 0):
                return None
            return [v if v else v.copy_abs() for v in values]

        return decimals
    return None


def timestamp_in_zone(utc_text: str, zone: dt.tzinfo, fsp: int) -> str:
    """A stored (UTC) TIMESTAMP rendered in `zone`."""
    if utc_text.startswith("0000-00-00"):
        return utc_text
    moment = parse_datetime(utc_text, 6)
    assert moment is not None
    local = moment.replace(tzinfo=dt.UTC).astimezone(zone).replace(tzinfo=None)
    return format_datetime(local, fsp)


def load_zone(name: str) -> dt.tzinfo:
    """A time zone by name (`Asia/Shanghai`, `UTC`, `SYSTEM`) or offset (`+08:00`)."""
    text = name.strip()
    if text.upper() in ("UTC", "SYSTEM"):
        return dt.UTC
    offset = _OFFSET.fullmatch(text)
    if offset is not None:  # MySQL takes -13:59 to +14:00
        sign = -1 if offset.group(1) == "-" else 1
        minutes = sign * (int(offset.group(2)) * 60 + int(offset.group(3)))
        if -(13 * 60 + 59) <= minutes <= 14 * 60 and int(offset.group(3)) < 60:
            return dt.timezone(dt.timedelta(minutes=minutes))
    elif text[:1] not in "+-":
        try:
            return zoneinfo.ZoneInfo(text)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            pass
    raise SQLError(f"Unknown or incorrect time zone: '{name}'", code=1298)


_OFFSET = re.compile(r"([-+])(\d{1,2}):(\d{2})")
