"""Reading records back defensively: what every decoder does before it trusts a field.

A record on a topic may be truncated, corrupted, from another protocol or written by someone
hostile. The decoders read JSON through `json_document` and `Fields`, which check each field's
presence and type, and convert values with `Fields.convert`; anything that is not what the
protocol writes is a `DecodeError` that names the protocol and the field (or the byte), never
a KeyError, TypeError or a parser's own exception.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import InvalidOperation
from typing import Any

import orjson

from ticdc_sim.errors import DecodeError, shown

# what a JSON value is, in an error message
_KINDS: tuple[tuple[type, str], ...] = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a number"),
    (str, "a string"),
    (dict, "an object"),
    (list, "an array"),
    (bytes, "bytes"),
)
# what a conversion of a bad value raises (int("x"), Decimal("x"), b64decode, chr(-1) ...)
CONVERSION_ERRORS = (ValueError, TypeError, ArithmeticError, IndexError, KeyError)
_U64 = (1 << 64) - 1


def described(value: Any) -> str:
    if value is None:
        return "null"
    for kind, name in _KINDS:
        if isinstance(value, kind):
            return name
    return type(value).__name__


def not_a(protocol: str, noun: str = "message") -> str:
    """The head of every decoding error: `not an open-protocol message`."""
    return f"not {'an' if protocol[:1] in 'aeiou' else 'a'} {protocol} {noun}"


def json_document(data: bytes, protocol: str, what: str = "", noun: str = "message") -> Any:
    """`data` parsed as JSON; a DecodeError at the byte where it stops being JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        within = f" of {what}" if what else ""
        position, reason = e.pos, e.msg
        try:  # orjson says "surrogates not allowed" of any byte that is not UTF-8
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            position, reason = bad.start, f"byte 0x{data[bad.start]:02x} is not UTF-8"
        raise DecodeError(
            f"{not_a(protocol, noun)}: not JSON at byte {position}{within} ({reason})"
        ) from None


class Fields:
    """A JSON object of a record, read field by field: `path` names it in errors
    (`_tidb`, `data[0]`)."""

    __slots__ = ("values", "protocol", "path", "noun")

    def __init__(self, values: Any, protocol: str, path: str = "", noun: str = "message") -> None:
        self.protocol, self.path, self.noun = protocol, path, noun
        if not isinstance(values, dict):
            raise self.fail(f"{path or 'the ' + noun} is {described(values)}, not an object")
        self.values: dict[str, Any] = values

    def fail(self, what: str) -> DecodeError:
        return DecodeError(f"{not_a(self.protocol, self.noun)}: {what}")

    def name(self, field: str) -> str:
        return f"`{self.path}.{field}`" if self.path else f"`{field}`"

    def maybe(self, field: str, kind: type | tuple[type, ...]) -> Any:
        """The field if it is there and not null, else None; of type `kind` (never a bool
        for an int)."""
        value = self.values.get(field)
        if value is None:
            return None
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            want = kind if isinstance(kind, tuple) else (kind,)
            names = " or ".join(n for k, n in _KINDS if k in want)
            raise self.fail(f"{self.name(field)} is {described(value)}, not {names}")
        return value

    def need(self, field: str, kind: type | tuple[type, ...]) -> Any:
        value = self.maybe(field, kind)
        if value is None:
            missing = field not in self.values
            raise self.fail(f"{self.name(field)} is {'missing' if missing else 'null'}")
        return value

    def text(self, field: str) -> str:
        found: str = self.need(field, str)
        return found

    def integer(self, field: str) -> int:
        found: int = self.need(field, int)
        return found

    def ts(self, field: str, optional: bool = False) -> int | None:
        """A TSO: an integer of 0 to 2^64 - 1."""
        found: int | None = self.maybe(field, int) if optional else self.need(field, int)
        if found is not None and not 0 <= found <= _U64:
            raise self.fail(f"{self.name(field)} {found} is not a TSO")
        return found

    def nested(self, field: str, optional: bool = False) -> Fields:
        """The object in `field` (an empty one if optional and missing or null)."""
        found = self.maybe(field, dict) if optional else self.need(field, dict)
        return Fields(found or {}, self.protocol, self.name(field).strip("`"), self.noun)

    def strings(self, field: str) -> list[str] | None:
        """An array of strings, or None."""
        found: list[str] | None = self.maybe(field, list)
        if found is not None and not all(isinstance(v, str) for v in found):
            raise self.fail(f"{self.name(field)} is not an array of strings")
        return found

    def convert(self, field: str, kind: str, convert: Callable[..., Any], *args: Any) -> Any:
        """`convert(*args)`, the value of `field` as a `kind` value; its failure said as
        that field's value being wrong."""
        try:
            return convert(*args)
        except CONVERSION_ERRORS as e:
            reason = "not a number" if isinstance(e, InvalidOperation) else str(e)
            value = shown(self.values.get(field))
            raise self.fail(f"{self.name(field)} {value} is no {kind} value ({reason})") from None
