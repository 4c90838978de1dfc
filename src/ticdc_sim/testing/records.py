"""Kafka records as a person reads them, and what tells two lists of them apart (the pytest
plugin's explanation of a failed `==` on records).

A `Record` does not know its protocol, so its bytes are shown by what they are: JSON
(canal-json, simple, debezium; each event of an open-protocol key or value) as its own text,
other UTF-8 text quoted, binary (craft, avro, a compressed value) in hex. Nothing is parsed
and written again: JSON is only laid over lines, token for token, so two values whose bytes
differ never show the same.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Sequence

from ticdc_sim.encoders.open_protocol import BATCH_VERSION, split_frames
from ticdc_sim.errors import SimError
from ticdc_sim.sinks import Record

_HEX_IN_A_LINE = 24  # bytes of a binary value a one-line form shows
_HEX_ROW = 16  # bytes a row of a hex dump
_CONTEXT = 2  # unchanged lines around a change of a key or value
_SHORT = 60  # a field whose both sides are this short is said in one line
_PAD = "  "
_CLOSING = {"{": "}", "[": "]"}


def _json(data: bytes) -> str | None:
    """`data` as text when it is one JSON document."""
    try:
        text = data.decode("utf-8")
        json.loads(text)
    except ValueError:  # not UTF-8, or not JSON
        return None
    return text


def _frames(data: bytes) -> list[bytes] | None:
    """The events of an open-protocol key (after its batch version) or value."""
    start = 8 if data[:8] == BATCH_VERSION.to_bytes(8, "big") else 0
    try:
        frames = split_frames(data, start, "record")
    except SimError:
        return None
    # a resolved event's value is an empty frame
    return frames if frames and all(f == b"" or _json(f) for f in frames) else None


def _text(data: bytes) -> str | None:
    """`data` as text when it is printable UTF-8 (JSON or not)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if all(c.isprintable() or c in "\n\r\t" for c in text) else None


def shown(data: bytes | None) -> str:
    """Bytes in one line: JSON as it is, open-protocol events in [...], other text quoted,
    binary as its length and first bytes in hex."""
    if data is None:
        return "null"
    text = _json(data)
    if text is not None:  # TiCDC writes it compact; a JSON over lines is put on one
        return text if text.isprintable() else "".join(map(str.strip, _indented(text, ":")))
    frames = _frames(data)
    if frames is not None:
        return "open-protocol[" + ", ".join(map(shown, frames)) + "]"
    text = _text(data)
    if text is not None:
        return repr(text)
    more = "..." if len(data) > _HEX_IN_A_LINE else ""
    return f"<{len(data)} bytes: {data[:_HEX_IN_A_LINE].hex(' ')}{more}>"


def shown_lines(data: bytes | None) -> list[str]:
    """Bytes over lines, to be compared line by line: JSON a member a line, open-protocol
    events one after the other, binary as a hex dump."""
    if data is None:
        return ["null"]
    text = _json(data)
    if text is not None:
        return _indented(text)
    frames = _frames(data)
    if frames is not None:
        return [
            line
            for i, frame in enumerate(frames)
            for line in [f"open-protocol event {i}:", *(_PAD + s for s in shown_lines(frame))]
        ]
    text = _text(data)
    if text is not None:
        return [repr(text)]
    return [f"<{len(data)} bytes>", *_hex_dump(data)]


def _hex_dump(data: bytes) -> Iterator[str]:
    for at in range(0, len(data), _HEX_ROW):
        row = data[at : at + _HEX_ROW]
        ascii_ = "".join(chr(b) if 32 <= b < 127 else "." for b in row)
        yield f"{at:08x}  {row.hex(' '):<{3 * _HEX_ROW - 1}}  |{ascii_}|"


def _indented(text: str, colon: str = ": ") -> list[str]:
    """JSON text laid over lines, a member or element a line, indented by depth; every token
    as it was, only whitespace between tokens changed ({} and [] stay whole)."""
    lines: list[str] = []
    line: list[str] = []
    depth, in_string, escaped = 0, False, False

    def newline() -> None:
        lines.append("".join(line))
        line[:] = [_PAD * depth]

    chars = text.strip()
    for i, ch in enumerate(chars):
        if in_string:
            line.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            line.append(ch)
            in_string = True
        elif ch in _CLOSING:
            line.append(ch)
            if chars[i + 1 :].lstrip()[:1] != _CLOSING[ch]:
                depth += 1
                newline()
        elif ch in "}]":
            if line[-1] not in _CLOSING:  # else it closes what was just opened: {} or []
                depth -= 1
                newline()
            line.append(ch)
        elif ch == ",":
            line.append(ch)
            newline()
        elif ch == ":":
            line.append(colon)
        elif not ch.isspace():
            line.append(ch)
    lines.append("".join(line))
    return lines


def described(record: Record) -> str:
    """A record in one line: where it is, its key, value and headers."""
    out = f"{record.topic}[{record.partition}]@{record.offset} key={shown(record.key)}"
    out += f" value={shown(record.value)}"
    if record.headers:
        headers = ", ".join(f"{k}: {shown(v)}" for k, v in record.headers.items())
        out += f" headers={{{headers}}}"
    return out


def _records(value: object) -> list[Record] | None:
    """`value` as a list of records, when it is a list or tuple of nothing else."""
    if isinstance(value, Record) or not isinstance(value, list | tuple):
        return None
    return list(value) if all(isinstance(r, Record) for r in value) else None


def explain(left: object, right: object, verbose: int = 0) -> list[str] | None:
    """Why `left == right` failed, when they are records (a `Record`, or lists of them, one
    of which may be empty); None for anything else. The first line sums both sides up, the
    rest say, for a person, where they part: the first record that differs, field by field,
    decoded; the records one side has more; with `verbose`, every record, one a line, as a
    diff (- right, + left, as pytest's own)."""
    if isinstance(left, Record) and isinstance(right, Record):
        return [f"{_where(left)} == {_where(right)}", *_differences(left, right)]
    lefts, rights = _records(left), _records(right)
    if lefts is None or rights is None or not (lefts or rights):
        return None
    out = [f"[{_counted(lefts)}] == [{_counted(rights)}]"]
    differing = [i for i, (a, b) in enumerate(zip(lefts, rights, strict=False)) if a != b]
    if differing:
        first = differing[0]
        others = f" (and {len(differing) - 1} more)" if len(differing) > 1 else ""
        out.append(f"At index {first}{others}, {_where(lefts[first])}:")
        out += (_PAD + line for line in _differences(lefts[first], rights[first]))
    for name, longer, shorter in (("Left", lefts, rights), ("Right", rights, lefts)):
        extra = longer[len(shorter) :]
        if extra:
            more = f"{len(extra)} more record{'' if len(extra) == 1 else 's'}"
            out.append(f"{name} has {more}, the first at index {len(shorter)}:")
            out.append(_PAD + described(extra[0]))
    if verbose <= 0:  # -q is -1: it asks for less, not for the full diff
        out.append("Use -v to get the full diff")
        return out
    context = max(len(lefts), len(rights)) if verbose > 1 else 3
    out.append("Full diff, a record a line (- right, + left):")
    out += _diff([described(r) for r in rights], [described(r) for r in lefts], context)
    return out


def _where(record: Record) -> str:
    return f"{record.topic}[{record.partition}]@{record.offset}"


def _counted(records: Sequence[Record]) -> str:
    return f"{len(records)} record{'' if len(records) == 1 else 's'}"


def _differences(left: Record, right: Record) -> list[str]:
    """The fields of two records that differ, each said with both sides decoded."""
    out = [
        f"{name}: {getattr(left, name)!r} != {getattr(right, name)!r}"
        for name in ("topic", "partition", "offset")
        if getattr(left, name) != getattr(right, name)
    ]
    fields = [("key", left.key, right.key), ("value", left.value, right.value)]
    names = list(dict.fromkeys([*left.headers, *right.headers]))
    fields += [(f"header {n!r}", left.headers.get(n), right.headers.get(n)) for n in names]
    for name, a, b in fields:
        if a != b:
            out += _field(name, a, b)
    return out


def _field(name: str, left: bytes | None, right: bytes | None) -> list[str]:
    a, b = shown(left), shown(right)
    if a == b:  # decoded alike (e.g. JSON that differs in whitespace): the bytes say how
        a, b = repr(left), repr(right)
    if len(a) <= _SHORT and len(b) <= _SHORT:
        return [f"{name}: {a} != {b}"]
    return [f"{name} (- right, + left):", *_diff(shown_lines(right), shown_lines(left))]


def _diff(right: list[str], left: list[str], context: int = _CONTEXT) -> list[str]:
    """A unified diff of two renderings, its hunks apart by '...'."""
    lines = difflib.unified_diff(right, left, lineterm="", n=context)
    out = []
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        out.append("..." if line.startswith("@@") else f"{line[:1]} {line[1:]}")
    if out and out[0] == "...":
        out.pop(0)
    return out
