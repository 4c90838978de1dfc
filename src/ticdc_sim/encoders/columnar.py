"""Batches of rows written column by column, and records laid out with one format each.

An encoder's work on a row is a small conversion per value (an int to its digits, a float to
Go's shortest digits, a string to a JSON literal) and gluing the results between fixed bytes.
Done one value at a time in Python that costs several times what orjson spends on a whole
row, so the encoders never convert values one at a time:

- a `Writer` takes one column of a chunk of rows and answers a `Field`: a `%` spec and one
  item per value, such that `spec % (item,)` is the value's JSON text. Ints need no work at
  all (`"%d"`); floats, strings and decimals are converted in a few C-level passes over the
  whole column (orjson over the column, one join, one translate, one split). Values those
  passes cannot vouch for (a string needing an unusual escape, a float Go writes with an
  exponent, a decimal whose `str` has one) go through the exact per-value writers of
  `golang.json` and `golang.strconv`, the reference the fast passes are tested against;
- a `Layout`, literal bytes between named slots, compiles the fields' specs into one bytes
  format and applies it to each row's items.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from functools import partial
from itertools import repeat
from operator import is_, itemgetter
from typing import Any, Generic, NamedTuple, TypeVar

import orjson

from ticdc_sim.encoders import MAX_RECORD_OVERHEAD, NO_HEADERS, Message, large
from ticdc_sim.encoders.large import Claim
from ticdc_sim.errors import EncodeError
from ticdc_sim.golang import json as gj
from ticdc_sim.golang.strconv import format_f, json_number
from ticdc_sim.model.events import RowChangedEvent
from ticdc_sim.model.mounted import mounter
from ticdc_sim.model.mysql import INTEGER_TYPES, MySQLType
from ticdc_sim.model.table import ColumnInfo, TableInfo

Texts = list[bytes]  # one JSON text per value or per record
Codec = TypeVar("Codec")


class Field(NamedTuple):
    """A slot's values: `spec % (item,)` is each one's text. Without items, `spec` is the
    same text for every row (a `%` in it doubled)."""

    spec: bytes
    items: Sequence[Any] | None = None


# a column's values -> its field; a None among them raises TypeError (see `nullable`)
Writer = Callable[[Sequence[Any]], Field]


# -- writers -------------------------------------------------------------------------------------


def nullable(write: Writer) -> Writer:
    """`write` over the values that are not None; None is `null`.

    Writers raise TypeError when handed a None (a join or a sum does so for free), so a
    column without NULLs costs no pass of its own."""

    def run(values: Sequence[Any]) -> Field:
        try:
            return write(values)
        except TypeError:
            if not has_null(values):
                raise
        where = [i for i, v in enumerate(values) if v is not None]
        out = [b"null"] * len(values)
        if where:
            spec, items = write([values[i] for i in where])
            assert items is not None
            for i, item in zip(where, items, strict=True):
                out[i] = spec % (item,)
        return Field(b"%s", out)

    return run


def has_null(values: Sequence[Any]) -> bool:
    # identity, not `None in values`: Decimal's == runs an ABC check on each element
    return any(map(is_, values, repeat(None)))


def _no_nulls(values: Sequence[Any]) -> None:
    if has_null(values):
        raise TypeError("a NULL among the values")


def mapped(convert: Callable[[Any], Any], write: Writer) -> Writer:
    """`write` over each value converted first (ENUM index, latin-1 text, base64 ...)."""

    def run(values: Sequence[Any]) -> Field:
        _no_nulls(values)  # conversions need not refuse None themselves
        return write(list(map(convert, values)))

    return run


def ints(values: Sequence[int]) -> Field:
    """JSON numbers."""
    sum(values)  # refuses None (and anything but numbers), at a fraction of a scan's cost
    return Field(b"%d", values)


def quoted_ints(values: Sequence[int]) -> Field:
    """Decimal digits as JSON strings: "12"."""
    sum(values)
    return Field(b'"%d"', values)


def plain_strings(texts: Sequence[bytes]) -> Field:
    """JSON strings of texts that need no escaping (base64)."""
    return Field(b'"%s"', texts)


def decimals(values: Sequence[Decimal]) -> Field:
    """Decimals as JSON strings in plain notation: "12.50"."""
    texts = "\n".join(map(str, values))
    if "N" in texts:  # "None" (or NaN, which MySQL decimals never are)
        _no_nulls(values)
    if "E" in texts:  # str picks an exponent for tiny values; format 'f' never does
        texts = "\n".join(format(v, "f") if "E" in str(v) else str(v) for v in values)
    return Field(b'"%s"', texts.encode().split(b"\n"))


# bytes some flavor escapes (the newline aside: it joins the values, and is counted instead);
# of those, the ones the replace chain below does not handle
_ESCAPED = bytes([*range(0x0A), *range(0x0B, 0x20)]) + b'"\\<>&'
_CONTROLS = bytes([*range(0x0A), *range(0x0B, 0x20)])
_LINE_SEPARATORS = (b"\xe2\x80\xa8", b"\xe2\x80\xa9")  # U+2028, U+2029 in UTF-8


def strings(flavor: gj.Flavor) -> Writer:
    """JSON strings as the Go library of `flavor` writes them."""

    def write(values: Sequence[str]) -> Field:
        try:
            data = "\n".join(values).encode()
        except UnicodeEncodeError:  # invalid UTF-8 carried as surrogate escapes
            return _exact(values, flavor)
        if data.count(b"\n") != len(values) - 1:
            return _exact(values, flavor)  # a value holds a newline
        if len(data.translate(None, _ESCAPED)) != len(data):
            if len(data.translate(None, _CONTROLS)) != len(data):
                return _exact(values, flavor)
            data = data.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
            if flavor.html:
                data = data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e")
                data = data.replace(b"&", b"\\u0026")
        if not data.isascii() and (_LINE_SEPARATORS[0] in data or _LINE_SEPARATORS[1] in data):
            return _exact(values, flavor)
        return Field(b'"%s"', data.split(b"\n"))

    return write


def _exact(values: Sequence[str], flavor: gj.Flavor) -> Field:
    return Field(b"%s", [gj.dumps(v, flavor) for v in values])


def floats(bits: int, quoted: bool) -> Writer:
    """Floats in Go's shortest digits for their size: `strconv.FormatFloat(v, 'f', -1, bits)`
    as a JSON string (`quoted`, canal-json), else as `encoding/json` writes the number.

    orjson writes the same shortest digits (ryu; float32 ones through numpy) and lays them
    out like Go's 'f' but for a trailing ".0"; what it writes with an exponent, non-finite
    values (null) and, for JSON numbers, magnitudes below 1e-5 go through `golang.strconv`."""
    exact: Callable[[float, int], str] = format_f if quoted else json_number
    spec = b'"%s"' if quoted else b"%s"

    def write(values: Sequence[float]) -> Field:
        if bits == 32:
            import numpy  # here: a run without a FLOAT column never pays for its import

            data = orjson.dumps(
                numpy.array(values, dtype=numpy.float32), option=orjson.OPT_SERIALIZE_NUMPY
            )
        else:
            data = orjson.dumps(values)
        body = (data[1:-1] + b",").replace(b".0,", b",")[:-1]
        texts = body.split(b",")
        if b"e" in body or b"n" in body or (not quoted and b"0.00000" in body):
            _no_nulls(values)  # orjson writes None as null, and numpy makes it NaN
            texts = [
                exact(v, bits).encode()
                if b"e" in t or b"n" in t or (not quoted and b"0.00000" in t)
                else t
                for v, t in zip(values, texts, strict=True)
            ]
        return Field(spec, texts)

    return write


_FLOATS = {
    (MySQLType.FLOAT, True): floats(32, quoted=True),
    (MySQLType.DOUBLE, True): floats(64, quoted=True),
    (MySQLType.FLOAT, False): floats(32, quoted=False),
    (MySQLType.DOUBLE, False): floats(64, quoted=False),
}
_INTEGERS = INTEGER_TYPES | {MySQLType.BIT, MySQLType.YEAR}


def number_writer(col: ColumnInfo, quoted: bool) -> Writer | None:
    """Numbers and decimals, ENUM and SET as their numbers: `"12"` when `quoted` (canal-json
    writes every value as a string), else `12`; None for the other types."""
    found = _FLOATS.get((col.tp, quoted))
    if found is not None:
        return found
    if col.tp == MySQLType.NEWDECIMAL:
        return decimals
    digits = quoted_ints if quoted else ints
    mount = mounter(col)
    if mount is not None:  # ENUM index, SET bits
        return mapped(mount, digits)
    return digits if col.tp in _INTEGERS else None


def prefixed(prefix: bytes, ids: list[int]) -> Field:
    """An optional key with an int (`,"ptn":12`)."""
    return Field(prefix.replace(b"%", b"%%") + b"%d", ids)


# -- layouts -------------------------------------------------------------------------------------


class Layout:
    """Records as literal bytes between named slots, e.g. `[b'{"a":', "a", b"}"]`."""

    __slots__ = ("parts", "slots", "_formats")

    def __init__(self, parts: Iterable[bytes | str]) -> None:
        self.parts = list(parts)
        self.slots = [p for p in self.parts if isinstance(p, str)]
        self._formats: dict[tuple[bytes, ...], bytes] = {}

    def fill(self, fields: Mapping[str, Field], count: int) -> Texts:
        """`count` records, slot `s` of record `i` written from `fields[s]`."""
        used = [fields[s] for s in self.slots]
        specs = tuple(f.spec for f in used)
        fmt = self._formats.get(specs)
        if fmt is None:
            fmt = self._formats[specs] = self._format(fields)
        columns = [f.items for f in used if f.items is not None]
        if not columns:
            return [fmt % ()] * count
        return [fmt % row for row in zip(*columns, strict=True)]

    def _format(self, fields: Mapping[str, Field]) -> bytes:
        return b"".join(
            fields[p].spec if isinstance(p, str) else p.replace(b"%", b"%%") for p in self.parts
        )


def image_fields(
    kind: str,
    events: Sequence[RowChangedEvent],
    picked: Sequence[int],
    offsets: Sequence[int],
    writers: Sequence[Writer],
) -> dict[str, Field]:
    """Fields `d<i>`, column i of the image a kind writes (the old one of deletes), and for
    updates `p<i>`, of the old image; for the columns `picked` (positions into `offsets`
    and `writers`). A column no update in the chunk touched holds the very same objects in
    both images and is written once."""
    if kind != UPDATE:
        by_offset = list(zip(*images(kind, events), strict=True))
        return {f"d{i}": writers[i](by_offset[offsets[i]]) for i in picked}
    new = list(zip(*map(COLUMNS, events), strict=True))
    old = list(zip(*map(PRE_COLUMNS, events), strict=True))
    fields: dict[str, Field] = {}
    for i in picked:
        o, write = offsets[i], writers[i]
        fields[f"d{i}"] = write(new[o])
        fields[f"p{i}"] = fields[f"d{i}"] if all(map(is_, new[o], old[o])) else write(old[o])
    return fields


def changed_members(
    events: Sequence[RowChangedEvent],
    picked: Sequence[int],
    offsets: Sequence[int],
    fields: Mapping[str, Field],
    heads: Sequence[bytes],
    tail: bytes = b"",
) -> list[bytes | None]:
    """Per update, the old values of only the columns it changed as object members
    (`heads[i]`, the value, `tail`, comma-joined); None where it changed none
    (only-output-updated-columns)."""
    out: list[bytes | None] = []
    for r, event in enumerate(events):
        pre, post = event.pre_columns, event.columns
        assert pre is not None and post is not None
        changed = [i for i in picked if pre[offsets[i]] != post[offsets[i]]]
        members = (heads[i] + text(fields[f"p{i}"], r) + tail for i in changed)
        out.append(b",".join(members) if changed else None)
    return out


# RowChangedEvent fields by position: on a named tuple, itemgetter is the cheapest C-level getter
_FIELDS = {name: itemgetter(i) for i, name in enumerate(RowChangedEvent._fields)}
COMMIT_TS, COLUMNS, PRE_COLUMNS = (_FIELDS[n] for n in ("commit_ts", "columns", "pre_columns"))


def commit_ts(events: Sequence[RowChangedEvent]) -> list[int]:
    return list(map(COMMIT_TS, events))


def images(kind: str, events: Sequence[RowChangedEvent]) -> list[Any]:
    """The row image a kind writes: the old one of deletes, else the new one."""
    return list(map(PRE_COLUMNS if kind == DELETE else COLUMNS, events))


def text(field: Field, index: int) -> bytes:
    """One value's text."""
    return field.spec % () if field.items is None else field.spec % (field.items[index],)


INSERT, UPDATE, DELETE = "insert", "update", "delete"

# rows rendered together: enough to pay for each pass's fixed cost, few enough that the
# pass's lists stay in the CPU cache (one 60k-row pass ran about a third slower)
CHUNK = 1024


def shapes(
    events: Sequence[RowChangedEvent],
) -> Iterator[tuple[str, list[int] | None, list[RowChangedEvent]]]:
    """Events grouped by table version and kind, CHUNK events at a time: (kind, positions in
    `events` or None when the group is all of them, events).

    A plain loop: splitting a chunk by kind with C-level passes (map, compress) costs as many
    instructions, each pass being a couple of hundred a row."""
    for start in range(0, len(events), CHUNK):
        groups: dict[tuple[int, str], tuple[list[int], list[RowChangedEvent]]] = {}
        for i, event in enumerate(events[start : start + CHUNK], start):
            kind = (
                INSERT if event.pre_columns is None else DELETE if event.columns is None else UPDATE
            )
            key = (id(event.table), kind)
            group = groups.get(key)
            if group is None:
                groups[key] = ([i], [event])
            else:
                group[0].append(i)
                group[1].append(event)
        whole = len(groups) == 1 and len(events) <= CHUNK
        for (_, kind), (positions, rows) in groups.items():
            yield kind, None if whole else positions, rows


def place(out: list[Any], positions: list[int] | None, items: list[Any]) -> list[Any]:
    """Put a group's items back at their positions; a lone group is the batch itself."""
    if positions is None:
        return items
    for i, item in zip(positions, items, strict=True):
        out[i] = item
    return out


_new_message = partial(tuple.__new__, Message)  # skips the per-call Python of Message(...)


def row_messages(values: Texts, ts: list[int], info: TableInfo) -> list[Message]:
    """One keyless message a row of one table, carrying the row's commit ts."""
    count = len(values)
    return list(
        map(
            _new_message,
            zip(
                repeat(None, count),
                values,
                ts,
                repeat(1, count),
                repeat(info.schema, count),
                repeat(info.name, count),
                repeat(NO_HEADERS, count),
                strict=True,
            ),
        )
    )


class BatchEncoder(Generic[Codec]):
    """`append_row` queues; `build` encodes the queue in one columnar pass. Protocols define
    `build_groups`, which the pipeline calls with a whole window's groups at once so that
    small groups (one key each, under index-value) still render in one pass, and
    `new_codec`, what they precompute for a table version."""

    def __init__(self) -> None:
        self._pending: list[RowChangedEvent] = []
        self._codecs: dict[int, tuple[TableInfo, Codec]] = {}
        self.claims: list[Claim] = []  # claim-check files of what was built, for the sink

    def codec(self, info: TableInfo) -> Codec:
        # keyed by id, checked by identity: ids are reused once a table version is gone
        found = self._codecs.get(id(info))
        if found is None or found[0] is not info:
            found = self._codecs[id(info)] = (info, self.new_codec(info))
        return found[1]

    def new_codec(self, info: TableInfo) -> Codec:
        raise NotImplementedError

    def append_row(self, event: RowChangedEvent) -> None:
        self._pending.append(event)

    def build(self) -> list[Message]:
        events, self._pending = self._pending, []
        return self.build_groups([events])[0] if events else []

    def build_groups(self, groups: Sequence[Sequence[RowChangedEvent]]) -> list[list[Message]]:
        raise NotImplementedError


class RowEncoder(BatchEncoder[Codec]):
    """One keyless message per row (canal-json, simple): `values` renders a chunk of one
    kind, and a row whose message is too large for max-message-bytes (value + 36) is sent as
    large-message-handle-option says, as both protocols' AppendRowChangedEvent do: an error,
    or re-rendered with its handle key only, its whole value first stored for claim-check."""

    protocol = ""  # for error messages
    config: Any  # CodecConfig

    def values(
        self,
        codec: Codec,
        kind: str,
        rows: list[RowChangedEvent],
        large: str = "none",
        locations: list[str] | None = None,
    ) -> Texts:
        raise NotImplementedError

    def encode_rows(self, events: list[RowChangedEvent]) -> list[Message]:
        """One message per row, in order."""
        messages: list[Any] = [None] * len(events)
        limit = self.config.max_message_bytes - MAX_RECORD_OVERHEAD
        compression = self.config.large_message_handle_compression
        too_large: list[tuple[int, str, RowChangedEvent]] = []  # (position, kind, row)
        for kind, positions, rows in shapes(events):
            codec = self.codec(rows[0].table)
            values = self.values(codec, kind, rows)
            if compression != "none":
                values = [large.compress(compression, v) for v in values]
            if max(map(len, values)) > limit:
                for at, value in enumerate(values):
                    if len(value) > limit:
                        too_large.append(
                            (at if positions is None else positions[at], kind, rows[at])
                        )
            found = row_messages(values, commit_ts(rows), rows[0].table)
            messages = place(messages, positions, found)
        for position, kind, row in sorted(too_large, key=itemgetter(0)):
            message = messages[position]
            messages[position] = message._replace(value=self._large(kind, row, message.value))
        return messages

    def _large(self, kind: str, row: RowChangedEvent, value: bytes) -> bytes:
        """The value sent for a row whose message is too large."""
        config = self.config
        option = config.large_message_handle_option
        if option == "none":
            raise EncodeError(self._too_large(row, len(value)))
        locations = None
        if option == "claim-check":
            claim = large.claim(None, value, config.claim_check_raw_value)
            self.claims.append(claim)
            locations = [large.location(config.claim_check_storage_uri, claim.name)]
        (text,) = self.values(self.codec(row.table), kind, [row], option, locations)
        smaller = large.compress(config.large_message_handle_compression, text)
        if len(smaller) + MAX_RECORD_OVERHEAD > config.max_message_bytes:
            raise EncodeError(
                self._too_large(row, len(smaller))
                + f", even with only its handle-key columns ({option})"
            )
        return smaller

    def _too_large(self, row: RowChangedEvent, size: int) -> str:
        """TiCDC's ErrMessageTooLarge; `size` the value's."""
        return (
            f"a {self.protocol} message of {size + MAX_RECORD_OVERHEAD} bytes for"
            f" {row.table.schema}.{row.table.name} at commit ts {row.commit_ts} exceeds"
            f" max-message-bytes {self.config.max_message_bytes} (TiCDC: ErrMessageTooLarge)"
        )

    def build_groups(self, groups: Sequence[Sequence[RowChangedEvent]]) -> list[list[Message]]:
        messages = self.encode_rows([e for group in groups for e in group])
        return regroup(messages, groups)


def regroup(messages: list[Message], groups: Sequence[Sequence[Any]]) -> list[list[Message]]:
    """One message a row, in the order of `groups` flattened, cut back into the groups."""
    out, start = [], 0
    for group in groups:
        out.append(messages[start : start + len(group)])
        start += len(group)
    return out


def members(keys: Sequence[bytes], image: str, picked: Sequence[int]) -> Iterator[bytes | str]:
    """A JSON object's members for a layout: `keys[i]` (`"name":`), then slot `<image><i>`."""
    for n, i in enumerate(picked):
        yield (b"," if n else b"") + keys[i]
        yield f"{image}{i}"
