"""Column values as pure functions of (seed, table, column, row id, version).

Every draw is a 64-bit hash (splitmix64's finaliser over numpy arrays) of those five, never
a shared generator's state, so any process computes any row's value alone: the single
process engine and each Spark task agree to the byte. Faker and the distributions fill a
seeded pool of canonical values once per column (Faker costs ~10k values/s); a row indexes
the pool by its hash, a whole batch of rows in one numpy call.

Keys never collide: primary and unique key columns are a sequence over the row id
(`start + row * step`, as text for string keys), or, drawn from a generator, values made
distinct (`Distinct`: a repeat is drawn again, with seeds derived from the row). References
point at a live row of the other table: the caller passes the live rows at the time of the
write (the oldest and newest, and the table's fixed hot rows).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import math
import random
import string
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
from faker import Faker, Generator

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.store import collation_key
from ticdc_sim.generator.sql.values import column_converter
from ticdc_sim.generator.workload.spec import Column, SpecError, SpecPath, template_fields
from ticdc_sim.model.mysql import INTEGER_RANGES
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.table import ColumnInfo

POOL = 4096  # values a pooled column draws from
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_NULL_SALT = 0x5DEECE66D


def derive(*parts: object) -> int:
    """A 64-bit seed from names and numbers: the same parts, the same seed, anywhere."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise over uint64 (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x + _GOLDEN
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
        out: np.ndarray = x ^ (x >> np.uint64(31))
        return out


def hashes(key: int, rows: np.ndarray, versions: np.ndarray) -> np.ndarray:
    """One uint64 per (row, version) under `key` (seed, table and column derived)."""
    first = mix(rows.astype(np.uint64) ^ np.uint64(key))
    return mix(first ^ versions.astype(np.uint64))


def unit(h: np.ndarray) -> np.ndarray:
    """Hashes as floats in [0, 1)."""
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


# -- what a column is drawn from ---------------------------------------------------------------


Live = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class Values(ABC):
    """A column's values for rows at versions. `live` is, per row, the referenced table's
    live rows (references only): [lo, hi) and its hot rows [hot_lo, hot_hi)."""

    @abstractmethod
    def __call__(self, rows: np.ndarray, versions: np.ndarray, live: Live | None) -> list[Any]: ...


@dataclass
class Pooled(Values):
    key: int
    pool: np.ndarray  # object array of canonical values
    null_rate: float

    def __call__(self, rows: np.ndarray, versions: np.ndarray, live: Live | None) -> list[Any]:
        h = hashes(self.key, rows, versions)
        picked = self.pool[(h % np.uint64(len(self.pool))).astype(np.int64)]
        return _with_nulls(picked, self.key, rows, versions, self.null_rate)


@dataclass
class KeySequence(Values):
    """start + row * step, in the column's type (`form`): never the same for two rows.
    Numbers as they are, text with a prefix, DECIMAL as decimals, dates as days and
    datetimes as seconds from 2000-01-01; a key that no longer fits the column is an error."""

    start: int
    step: int
    form: str  # int | decimal | text | date | datetime
    prefix: str = ""
    width: int = 0  # text keys: the column's length, which every key must fit
    fsp: int = 0  # datetime keys: fractional digits; decimal keys: the scale
    high: int | None = None  # numbers: the largest the column holds
    path: SpecPath = ()

    def __call__(self, rows: np.ndarray, versions: np.ndarray, live: Live | None) -> list[Any]:
        numbers = (rows.astype(np.int64) * self.step + self.start).tolist()
        form = self.form
        if self.high is not None and numbers and max(numbers) > self.high:
            raise SpecError(
                f"key {max(numbers)} is more than the column holds ({self.high}): too many rows"
                " for this key column",
                self.path,
            )
        if form == "int":
            return list(numbers)
        if form == "decimal":
            quantum = Decimal(1).scaleb(-self.fsp)
            return [Decimal(n).quantize(quantum) for n in numbers]
        if form == "date":
            keys = [(_KEY_EPOCH + dt.timedelta(days=n)).date().isoformat() for n in numbers]
        elif form == "datetime":
            tail = "." + "0" * self.fsp if self.fsp else ""
            keys = [f"{_KEY_EPOCH + dt.timedelta(seconds=n)}{tail}" for n in numbers]
        else:
            keys = [f"{self.prefix}{n}" for n in numbers]
            if keys and self.width and max(map(len, keys)) > self.width:
                raise SpecError(
                    f"key {max(keys, key=len)!r} is longer than the column's {self.width}"
                    " characters: too many rows for this key column",
                    self.path,
                )
        return keys


_KEY_EPOCH = dt.datetime(2000, 1, 1)


@dataclass
class Reference(Values):
    """A live row's key of another table: one of its hot rows for `hot_share` of the
    references (while it has some), else any row of the interval given."""

    key: int
    target: Values
    null_rate: float
    hot_share: float = 0.0

    def __call__(self, rows: np.ndarray, versions: np.ndarray, live: Live | None) -> list[Any]:
        assert live is not None, "a reference needs the referenced table's live rows"
        lo, hi, hot_lo, hot_hi = live
        h = hashes(self.key, rows, versions)
        count = np.maximum(hi - lo, 1).astype(np.uint64)
        picked = lo + (h % count).astype(np.int64)
        hot = hot_hi - hot_lo
        if self.hot_share > 0 and (hot > 0).any():
            u = unit(hashes(self.key ^ _HOT_SALT, rows, versions))
            use = (hot > 0) & ((u < self.hot_share) | (hi - lo <= 0))
            among = np.maximum(hot, 1).astype(np.uint64)
            picked = np.where(use, hot_lo + (h % among).astype(np.int64), picked)
            hi = np.where(use, hot_hi, hi)
            lo = np.where(use, hot_lo, lo)
        dead = (hi - lo) <= 0  # nothing to point at: NULL (TiDB has no FK checks)
        values = self.target(np.where(dead, 0, picked), versions, None) if len(rows) else []
        if dead.any():
            values = [None if d else v for v, d in zip(values, dead.tolist(), strict=True)]
        return _with_nulls(np.array(values, dtype=object), self.key, rows, versions, self.null_rate)


_HOT_SALT = 0x3C6EF372FE94F82B


def _with_nulls(
    picked: np.ndarray, key: int, rows: np.ndarray, versions: np.ndarray, rate: float
) -> list[Any]:
    if rate <= 0:
        return list(picked.tolist())
    nulls = unit(hashes(key ^ _NULL_SALT, rows, versions)) < rate
    picked = picked.copy()
    picked[nulls] = None
    return list(picked.tolist())


# -- building a column's generator -------------------------------------------------------------


def values_for(
    path: SpecPath,
    table: str,
    col: ColumnInfo,
    spec: Column | None,
    seed: int,
    key_column: bool,
    reference: Callable[[str], tuple[Values, float]] | None = None,
) -> Values:
    """The generator of `col` (`path`: its place in the spec): from its spec, or the type's
    default. A key column's values never repeat: a sequence over the row id unless a
    generator is given, whose draws are then made distinct."""
    key = derive(seed, table, col.name)
    spec = spec or Column()
    kind = spec.kind
    if spec.null_rate > 0 and (key_column or col.not_null):
        why = "a key column" if key_column else "NOT NULL"
        raise SpecError(
            f"{table}.{col.name} is {why}: its values are never NULL", (*path, "null_rate")
        )
    if kind == "ref":
        if key_column:
            raise SpecError(
                "a primary or unique key column cannot be a reference: its values must"
                " never repeat",
                (*path, "ref"),
            )
        assert spec.ref is not None and reference is not None
        target, hot_share = reference(spec.ref)
        return Reference(key, target, spec.null_rate, hot_share)
    distinct = key_column or spec.unique
    if kind == "sequence" or (distinct and kind is None):
        found = sequence(path, col, spec.start, spec.step)
        if found is not None:
            return found
        if kind == "sequence":
            raise SpecError(f"{table}.{col.name}: this type has no sequence", (*path, "sequence"))
    convert = column_converter(col, lambda: dt.UTC)
    if kind == "template":
        assert spec.template is not None
        pieces = template_fields(spec.template, spec.locale)
        if not distinct:
            return Template(key, pieces, _faker(spec.locale), spec, col, path)
        return Distinct(key, _template_draw(pieces, spec, col), convert, col, path, "template")
    draw = _drawer(path, col, spec)
    if distinct:  # a key of a generator, or of a type without sequences: drawn distinct
        what = f"faker {_provider(spec)}" if kind == "faker" else kind or "the type's default"
        return Distinct(key, lambda rng, serial: draw(rng), convert, col, path, what)
    cached = (key, repr(spec), repr(col))
    pool = _POOLS.pop(cached, None)
    if pool is None:
        rng = random.Random(key)
        if kind == "faker":  # Faker's draws from a generator of their own, seeded from the key
            rng = random.Random(rng.getrandbits(64))
        pool = _converted(path, col, spec, [draw(rng) for _ in range(POOL)])
        pool.flags.writeable = False
    while len(_POOLS) >= 256:
        _POOLS.pop(next(iter(_POOLS)))
    _POOLS[cached] = pool  # the newest last
    return Pooled(key, pool, spec.null_rate)


# pools by (key, column spec, column): a process's generators share them (the dry walk and
# the run, a Spark worker's tasks)
_POOLS: dict[tuple[int, str, str], np.ndarray] = {}


def _converted(path: SpecPath, col: ColumnInfo, spec: Column, raw: list[Any]) -> np.ndarray:
    """Drawn values as the column stores them (an object array), or the first that does not
    fit, as a spec error."""
    convert = column_converter(col, lambda: dt.UTC)
    pool = np.empty(len(raw), dtype=object)
    for i, value in enumerate(raw):
        pool[i] = _fit(path, spec, convert, value)
    return pool


def _fit(path: SpecPath, spec: Column, convert: Callable[[Any], Any], value: Any) -> Any:
    if spec.length is not None and isinstance(value, str) and spec.kind in _CUT:
        value = value[: spec.length[1]]  # cut to the longest allowed
    try:
        return convert(value)
    except SQLError as e:
        hint = ""
        if isinstance(value, str) and e.code == 1406:
            hint = " (`length: [min, max]` cuts drawn strings to max characters)"
        raise SpecError(f"a drawn value {value!r} does not fit: {e.message}{hint}", path) from None


_CUT = ("faker", "choice", "template")  # the kinds whose strings `length` cuts


@dataclass
class Template(Values):
    """Text from a template: each `{provider}` from a pool of the provider's values (by a
    hash of the row, version and placeholder), `{row}` the row's number."""

    key: int
    pieces: list[tuple[str, str | None, str]]
    fake: Any
    spec: Column
    col: ColumnInfo
    path: SpecPath

    def __post_init__(self) -> None:
        self.pools: dict[int, np.ndarray] = {}
        rng = random.Random(self.key)
        for i, (_, name, _) in enumerate(self.pieces):
            if name is not None and name != "row":
                method = getattr(self.fake, name)
                self.fake.random = random.Random(rng.getrandbits(64))
                values = [_call(self.path, name, method) for _ in range(POOL)]
                self.pools[i] = np.array(values + [None], dtype=object)[:-1]
        self.convert = column_converter(self.col, lambda: dt.UTC)
        # a template that cannot fit the column is an error now, not mid-run
        self(np.arange(64, dtype=np.int64), np.zeros(64, dtype=np.int64), None)

    def __call__(self, rows: np.ndarray, versions: np.ndarray, live: Live | None) -> list[Any]:
        columns: list[list[str]] = []
        for i, (text, name, spec) in enumerate(self.pieces):
            column = [text] * len(rows)
            if name == "row":
                numbers = (rows.astype(np.int64) + 1).tolist()
                column = [text + format(n, spec) for n in numbers]
            elif name is not None:
                h = hashes(self.key ^ (i + 1), rows, versions)
                drawn = self.pools[i][(h % np.uint64(POOL)).astype(np.int64)].tolist()
                column = [text + format(value, spec) for value in drawn]
            columns.append(column)
        texts = ["".join(parts) for parts in zip(*columns, strict=True)] if columns else []
        out = np.array(
            [_fit(self.path, self.spec, self.convert, t) for t in texts] + [None], dtype=object
        )
        return _with_nulls(out[:-1], self.key, rows, versions, self.spec.null_rate)


def _template_draw(
    pieces: list[tuple[str, str | None, str]], spec: Column, col: ColumnInfo
) -> Callable[[random.Random, int], Any]:
    """One text from a template, its providers drawn with `rng`, `{row}` = serial + 1."""
    fake = _faker(spec.locale)

    def draw(rng: random.Random, serial: int) -> Any:
        fake.random = rng
        out = []
        for text, name, form in pieces:
            out.append(text)
            if name == "row":
                out.append(format(serial + 1, form))
            elif name is not None:
                out.append(format(getattr(fake, name)(), form))
        return "".join(out)

    return draw


_ATTEMPTS = 100  # draws for one row before a generator counts as out of distinct values


@dataclass
class _Drawn:
    values: list[Any]
    seen: set[Any]


_DRAWN: dict[tuple[Any, ...], _Drawn] = {}  # per process: the dry walk and the run share


@dataclass
class Distinct(Values):
    """Values that never repeat, as the column's unique index compares them (collation,
    PAD SPACE): serial i's value is the first of the draws seeded by (column, i, attempt)
    that no serial below it has. Drawn in serial order, once a process: any engine, any
    task, gets the same values. Costs a draw (~0.1 ms for Faker) per row."""

    key: int
    draw: Callable[[random.Random, int], Any]
    convert: Callable[[Any], Any]
    col: ColumnInfo
    path: SpecPath
    what: str

    def __post_init__(self) -> None:
        cache = (self.key, self.path, self.what, self.col.tp, self.col.flen, self.col.collation)
        found = _DRAWN.get(cache)
        if found is None:
            while len(_DRAWN) >= 32:
                _DRAWN.pop(next(iter(_DRAWN)))
            found = _DRAWN[cache] = _Drawn([], set())
        self.drawn = found

    def __call__(self, rows: np.ndarray, versions: np.ndarray, live: Live | None) -> list[Any]:
        if not len(rows):
            return []
        serials = rows.tolist()
        self.reserve(max(serials) + 1)
        values = self.drawn.values
        return [values[s] for s in serials]

    def reserve(self, count: int) -> None:
        """Draw the values of serials below `count`."""
        values, seen = self.drawn.values, self.drawn.seen
        collation = self.col.collation
        spec = Column()
        while len(values) < count:
            serial = len(values)
            for attempt in range(_ATTEMPTS):
                rng = random.Random(derive(self.key, serial, attempt))
                value = _fit(self.path, spec, self.convert, self.draw(rng, serial))
                seen_as = collation_key(value, collation, -1)
                if seen_as not in seen:
                    seen.add(seen_as)
                    values.append(value)
                    break
            else:
                raise SpecError(
                    f"{self.what} gave no new value for row {serial + 1:,} in {_ATTEMPTS} draws"
                    f" ({len(seen):,} distinct so far): too few for this run's rows, which"
                    ' must not repeat; a template with {row} (e.g. "{first_name}{row}") never'
                    " runs out",
                    self.path,
                )


def sequence(path: SpecPath, col: ColumnInfo, start: int, step: int) -> KeySequence | None:
    """start + row * step in the column's type; None for a type that has no such keys."""
    tp = col.tp
    if tp in INTEGER_RANGES:
        _, signed_max, unsigned_max = INTEGER_RANGES[tp]
        high = unsigned_max if col.unsigned else signed_max
        return KeySequence(start, step, "int", high=high, path=path)
    if tp == M.NEWDECIMAL:
        high = 10 ** (col.flen - col.decimal) - 1
        return KeySequence(start, step, "decimal", fsp=col.decimal, high=high, path=path)
    if tp in (M.VARCHAR, M.STRING, M.VAR_STRING) and col.charset != "binary":
        prefix = f"{col.name[:8]}-" if col.flen >= 16 else ""  # short keys: the number alone
        return KeySequence(start, step, "text", prefix, width=col.flen, path=path)
    if tp == M.DATE:
        return KeySequence(start, step, "date", path=path)
    if tp in (M.DATETIME, M.TIMESTAMP):
        return KeySequence(start, step, "datetime", fsp=max(col.decimal, 0), path=path)
    return None


def _drawer(path: SpecPath, col: ColumnInfo, spec: Column) -> Callable[[random.Random], Any]:
    """One raw value of the column's generator (its kind, or the type's default) from
    `rng`."""
    kind = spec.kind
    if kind == "faker":
        fake, name = _faker(spec.locale), _provider(spec)
        method = getattr(fake, name)
        args = {} if isinstance(spec.faker, str) or spec.faker is None else spec.faker.args
        where = (*path, "faker", "args") if args else (*path, "faker")

        def faker(rng: random.Random) -> Any:
            fake.random = rng
            return _call(where, name, method, args)

        return faker
    if kind == "choice":
        assert spec.choice is not None
        if isinstance(spec.choice, dict):
            options, weights = list(spec.choice), list(spec.choice.values())
        else:
            options, weights = list(spec.choice), [1.0] * len(spec.choice)
        if sum(weights) <= 0:
            raise SpecError("at least one value needs a weight above 0", (*path, "choice"))
        return lambda rng: rng.choices(options, weights)[0]
    if kind in ("uniform", "normal", "zipf"):
        low = -np.inf if spec.min is None else spec.min
        high = np.inf if spec.max is None else spec.max

        widest = 10.0 ** (col.flen - col.decimal) if col.tp == M.NEWDECIMAL else math.inf

        def number(rng: random.Random) -> Any:
            drawn = min(max(_number(spec, rng), low), high)
            if not math.isfinite(drawn):  # a normal's std near float's limits
                raise SpecError(f"a drawn value {drawn} is no number a column holds", path)
            if abs(drawn) >= widest:  # said before Decimal's context is asked for 300 digits
                raise SpecError(
                    f"a drawn value {drawn:g} does not fit: Out of range value for column"
                    f" '{col.name}'",
                    path,
                )
            return _as_column_number(col, drawn)

        return number
    return lambda rng: _default(col, spec, rng)


@functools.lru_cache(maxsize=16)
def _faker(locale: str) -> Generator:
    """One Faker generator a locale (its providers as methods); each draw sets its
    `random` first."""
    found: Generator = Faker(locale).factories[0]
    return found


def _provider(spec: Column) -> str:
    given = spec.faker
    assert given is not None
    return given if isinstance(given, str) else given.provider


def _call(
    path: SpecPath, name: str, method: Callable[..., Any], args: dict[str, Any] | None = None
) -> Any:
    try:
        return method(**(args or {}))
    except (TypeError, ValueError, AttributeError) as e:
        raise SpecError(f"faker {name}: {e}", path) from None


def _number(spec: Column, rng: random.Random) -> float:
    if spec.uniform is not None:
        low, high = spec.uniform
        if float(low).is_integer() and float(high).is_integer():
            return rng.randint(int(low), int(high))
        return rng.uniform(low, high)
    if spec.normal is not None:
        return rng.gauss(spec.normal.mean, spec.normal.std)
    assert spec.zipf is not None
    return _zipf(rng, spec.zipf.n, spec.zipf.s)


def _zipf(rng: random.Random, n: int, s: float) -> int:
    """1..n with P(k) ~ 1/k^s, by the inverse of the continuous approximation."""
    u = rng.random()
    if abs(s - 1.0) < 1e-9:
        return min(n, int(n**u))
    top = n ** (1 - s)
    return min(n, max(1, int((1 + u * (top - 1)) ** (1 / (1 - s)))))


def _as_column_number(col: ColumnInfo, n: float) -> Any:
    if col.tp in INTEGER_RANGES or col.tp == M.YEAR:
        return round(n)
    if col.tp == M.NEWDECIMAL:
        return Decimal(repr(n)).quantize(Decimal(1).scaleb(-col.decimal))
    return n


# -- defaults by type --------------------------------------------------------------------------

_EPOCH = dt.datetime(2020, 1, 1)
_SPAN_S = 5 * 365 * 86400


def _default(col: ColumnInfo, spec: Column, rng: random.Random) -> Any:
    tp = col.tp
    if tp in INTEGER_RANGES:
        low, high, unsigned_max = INTEGER_RANGES[tp]
        if col.flen == 1 and tp == M.TINY:
            return rng.randint(0, 1)  # BOOL
        return rng.randint(0, min(high, 1_000_000))
    if tp == M.NEWDECIMAL:
        whole = min(col.flen - col.decimal, 6)
        return Decimal(rng.randint(0, 10 ** (whole + col.decimal) - 1)).scaleb(-col.decimal)
    if tp in (M.FLOAT, M.DOUBLE):
        return round(rng.uniform(0, 1000), 4)
    if tp == M.YEAR:
        return rng.randint(2000, 2030)
    if tp in (M.DATE, M.DATETIME, M.TIMESTAMP):
        moment = _EPOCH + dt.timedelta(
            seconds=rng.randrange(_SPAN_S), microseconds=rng.randrange(10**6)
        )
        return moment.date().isoformat() if tp == M.DATE else moment.isoformat(" ")
    if tp == M.DURATION:
        seconds = rng.randrange(24 * 3600)
        return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if tp == M.ENUM:
        return rng.choice(col.elems)
    if tp == M.SET:
        return ",".join(m for m in col.elems if rng.random() < 0.5)
    if tp == M.BIT:
        return rng.getrandbits(min(col.flen, 63))
    if tp == M.JSON:
        return f'{{"k": {rng.randint(0, 999)}, "tag": "{rng.choice(string.ascii_lowercase)}"}}'
    if tp == M.TIDB_VECTOR_FLOAT32:  # VECTOR(n): n floats; VECTOR: any dimension, here 3
        dims = col.flen if col.flen and col.flen > 0 else 3
        return "[" + ",".join(f"{rng.uniform(-1, 1):.4f}" for _ in range(dims)) + "]"
    low, high = spec.length or _length(col)
    text = "".join(
        rng.choices(string.ascii_letters + string.digits + " ", k=rng.randint(low, high))
    )
    return text.encode() if col.charset == "binary" else text


def _length(col: ColumnInfo) -> tuple[int, int]:
    if col.tp == M.STRING:  # CHAR(n)
        return col.flen, col.flen
    if col.flen and col.flen > 0:
        return min(1, col.flen), min(col.flen, 32)
    return 8, 64  # TEXT, BLOB
