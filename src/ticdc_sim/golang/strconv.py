"""Go standard-library formatting that TiCDC's bytes depend on.

Floats: Go's shortest round-trip digits for the value's bit size, laid out as
`strconv.FormatFloat(v, 'f', -1, bits)` (canal-json values, dispatcher hashing) or as
`encoding/json`'s `floatEncoder` (JSON numbers; jsoniter's WriteFloat32/64 agree).
`go_quote_inner` is `strconv.Quote` without its quotes (open protocol binary values).
Pure functions over Python values; nothing here imports the rest of the package.
"""

from __future__ import annotations

import math
import struct
import unicodedata
from decimal import Decimal

# -- floats ------------------------------------------------------------------------------------


def shortest_digits(value: float, bits: int) -> tuple[str, int]:
    """Go's shortest round-trip digits of a finite non-zero float and its decimal exponent:
    value = 0.d1d2... * 10**exponent. `bits` is 32 for FLOAT (the float32 the value holds)."""
    if bits == 32:
        value = shortest32(value)
    sign, digits, exp = Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    return text, len(digits) + int(exp)


def shortest32(value: float) -> float:
    """The double whose shortest digits are the float32 `value`'s shortest digits.

    A float32 has 6 to 9 significant digits. If some k <= 6 digits round-trip, the value
    rounded to 6 digits is those k digits padded with zeros (a normal float32's half-ulp is
    below half a unit of the 6th digit); else the first of 7, 8, 9 digits that round-trips
    is the shortest. Subnormals have fewer digits of precision: every length is tried there.
    A decimal of at most 9 digits parsed as a double gives those digits back from `repr`."""
    if not value or value != value or value in _INFINITIES:
        return value
    packed = _F32.pack(value)
    formats = _FORMATS_NORMAL if abs(value) >= _F32_MIN_NORMAL else _FORMATS_ALL
    for fmt in formats:
        candidate = float(fmt % value)
        if _F32.pack(candidate) == packed:
            return candidate
    raise AssertionError(f"{value!r} is not a float32")


_F32 = struct.Struct("f")
_F32_MIN_NORMAL = 2.0**-126
_FORMATS_NORMAL = ("%.5e", "%.6e", "%.7e", "%.8e")
_FORMATS_ALL = tuple(f"%.{p}e" for p in range(9))
_INFINITIES = (math.inf, -math.inf)


def float32(value: float) -> float:
    """The float32 nearest `value` (FLOAT columns hold these)."""
    result: float = _F32.unpack(_F32.pack(value))[0]
    return result


def format_f(value: float, bits: int) -> str:
    """`strconv.FormatFloat(v, 'f', -1, bits)`: shortest digits, never an exponent."""
    if bits == 32:
        value = shortest32(value)
    # repr has Go's shortest digits; it is laid out the same unless it uses an exponent
    text = repr(value)
    if "e" not in text and "n" not in text:  # not 1e+16, 1e-05, inf or nan
        return text[:-2] if text.endswith(".0") else text
    if not math.isfinite(value):
        return "0"  # TiCDC's mounter turns NaN and infinities into 0
    digits, exponent = shortest_digits(abs(value), 64)
    sign = "-" if value < 0 else ""
    if exponent <= 0:
        return f"{sign}0.{'0' * -exponent}{digits}"
    if exponent >= len(digits):
        return sign + digits + "0" * (exponent - len(digits))
    return f"{sign}{digits[:exponent]}.{digits[exponent:]}"


def json_number(value: float, bits: int) -> str:
    """A float as `encoding/json` writes it (jsoniter's WriteFloat32/64 agree)."""
    if not math.isfinite(value):
        return "0"
    magnitude = abs(value)
    limit_small, limit_big = (1e-6, 1e21)
    if bits == 32:
        magnitude = float32(magnitude)
    if magnitude == 0 or limit_small <= magnitude < limit_big:
        return format_f(value, bits)
    digits, exponent = shortest_digits(magnitude, bits)
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    power = exponent - 1
    sign = "-" if value < 0 else ""
    # strconv writes at least two exponent digits; encoding/json turns e-07 back into e-7
    exp_text = f"{'+' if power >= 0 else '-'}{abs(power):02d}"
    if power < 0 and abs(power) < 10:
        exp_text = f"-{abs(power)}"
    return f"{sign}{mantissa}e{exp_text}"


def format_v(value: float, bits: int) -> str:
    """`fmt.Sprintf("%v", v)` of a float32 (`bits` 32) or float64: `strconv.FormatFloat(v,
    'g', -1, bits)`, shortest digits, with an exponent (sign, at least two digits) when the
    decimal exponent is below -4 or at least 6, since shortest 'g' decides with precision 6:
    `1e+06`, `1.234567e+06`, `1e-05`, `123456`. CSV writes floats so (csv_message.go)."""
    if not math.isfinite(value):
        return "NaN" if value != value else ("+Inf" if value > 0 else "-Inf")
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    digits, point = shortest_digits(abs(value), bits)
    sign = "-" if value < 0 else ""
    exponent = point - 1
    if exponent < -4 or exponent >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


# -- strconv.Quote -----------------------------------------------------------------------------

_QUOTE_SHORT = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote_inner(data: bytes) -> str:
    """`strconv.Quote(string(data))` without its outer quotes (open protocol binary values)."""
    out: list[str] = []
    text = data.decode("utf-8", "surrogateescape")
    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # an invalid UTF-8 byte
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char in _QUOTE_SHORT:
            out.append(_QUOTE_SHORT[char])
        elif _is_print(char):
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


def _is_print(char: str) -> bool:
    # Go unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space
    return char == " " or unicodedata.category(char)[0] in "LMNPS"


_UNQUOTE_SHORT = {v[1]: k for k, v in _QUOTE_SHORT.items()}


def go_unquote_inner(text: str) -> bytes:
    """The bytes `go_quote_inner` wrote (`strconv.Unquote` of the quoted text)."""
    out = bytearray()
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\":
            out += char.encode("utf-8")
            i += 1
            continue
        kind = text[i + 1]
        if kind == "x":
            out.append(int(text[i + 2 : i + 4], 16))
            i += 4
        elif kind in "uU":
            width = 4 if kind == "u" else 8
            out += chr(int(text[i + 2 : i + 2 + width], 16)).encode("utf-8")
            i += 2 + width
        elif kind in _UNQUOTE_SHORT:
            out += _UNQUOTE_SHORT[kind].encode()
            i += 2
        else:
            raise ValueError(f"bad escape \\{kind} in a Go quoted string")
    return bytes(out)
