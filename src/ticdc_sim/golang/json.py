"""Go's JSON bytes: string escaping per Go library, Go float formatting, `strconv.Quote`.

TiCDC writes JSON with several Go libraries that escape differently (research
ticdc-canal-simple-avro-debezium-csv.md §0.1, ticdc-open-craft-dispatch.md §1.5). `Flavor` is
one row of that table. `dumps` serialises with orjson and repairs the few bytes where Go
differs; strings orjson cannot take (invalid UTF-8 carried as surrogate escapes) go through
the pure-Python writer, which is the reference both paths must agree with.

Numbers inside JSON come from `golang.strconv` (Go's float formatting).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class Flavor:
    """How one Go JSON library escapes strings."""

    html: bool  # `<` `>` `&` as \u003c \u003e \u0026
    short_bf: bool  # backspace and form feed as \b \f (encoding/json from Go 1.22)
    raw_invalid: bool = False  # invalid UTF-8 passes through (else each byte is \ufffd)
    escape_line_separators: bool = True  # U+2028 U+2029 as \u2028 \u2029


# encoding/json built with Go >= 1.22 (tiflow v8.5 builds with Go 1.23)
ENCODING_JSON = Flavor(html=True, short_bf=True)
# mailru/easyjson jwriter (canal-json DML) and goccy/go-json (canal-json DDL, WATERMARK)
EASYJSON = Flavor(html=True, short_bf=False)
GOCCY = EASYJSON
# json-iterator with EscapeHTML false (new-architecture open protocol, debezium)
JSONITER = Flavor(html=False, short_bf=False, raw_invalid=True, escape_line_separators=False)

_SHORT = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f<>&\u2028\u2029\ud800-\udfff]')


def string(text: str, flavor: Flavor) -> str:
    """The JSON string literal, quotes included, as the Go library writes it."""

    def escape(match: re.Match[str]) -> str:
        char = match.group(0)
        if char in _SHORT:
            return _SHORT[char]
        code = ord(char)
        if code < 0x20:
            if flavor.short_bf and char in "\b\f":
                return "\\b" if char == "\b" else "\\f"
            return f"\\u{code:04x}"
        if char in "<>&":
            return f"\\u{code:04x}" if flavor.html else char
        if char in "\u2028\u2029":
            return f"\\u{code:04x}" if flavor.escape_line_separators else char
        return char if flavor.raw_invalid else "\\ufffd"  # a surrogate-escaped invalid byte

    return '"' + _NEEDS_ESCAPE.sub(escape, text) + '"'


def dumps(value: Any, flavor: Flavor) -> bytes:
    """Compact JSON of dicts (insertion order), lists, str, int, bool and None."""
    try:
        out = orjson.dumps(value)
    except orjson.JSONEncodeError:  # surrogate escapes: invalid UTF-8 in the data
        return _slow_dumps(value, flavor).encode("utf-8", "surrogateescape")
    if not flavor.short_bf and b"\\" in out and (b"\\b" in out or b"\\f" in out):
        return _slow_dumps(value, flavor).encode("utf-8", "surrogateescape")
    # one pass to learn whether any of <>& is there (they are rare in data)
    if flavor.html and len(out.translate(None, b"<>&")) != len(out):
        out = out.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
    if flavor.escape_line_separators and not out.isascii() and b"\xe2\x80" in out:
        out = out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return out


def _slow_dumps(value: Any, flavor: Flavor) -> str:
    if isinstance(value, str):
        return string(value, flavor)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        items = (f"{string(k, flavor)}:{_slow_dumps(v, flavor)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_slow_dumps(v, flavor) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as Go JSON")
