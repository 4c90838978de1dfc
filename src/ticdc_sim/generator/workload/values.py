"""Column values as pure functions of (seed, table, column, row id, version).

Every draw is a 64-bit hash (splitmix64's finaliser over numpy arrays) of those five, never
a shared generator's state, so any process computes any row's value alone: the single
process engine and each Spark task agree to the byte. Faker and the distributions fill a
seeded pool of canonical values once per column (Faker costs ~10k values/s); a row indexes
the pool by its hash, a whole batch of rows in one numpy call.

Keys never collide: primary and unique key columns are a sequence over the row id
(`start + row * step`, as text for string keys). References point at a live row of the
other table: the caller passes the live row interval at the time of the write.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import string
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
from faker import Faker

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.values import column_converter
from ticdc_sim.generator.workload.spec import Column, SpecError
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


class Values(ABC):
    """A column's values for rows at versions. `live` is the referenced table's live row
    interval [lo, hi) per row (references only)."""

    @abstractmethod
    def __call__(
        self, rows: np.ndarray, versions: np.ndarray, live: tuple[np.ndarray, np.ndarray] | None
    ) -> list[Any]: ...


@dataclass
class Pooled(Values):
    key: int
    pool: np.ndarray  # object array of canonical values
    null_rate: float

    def __call__(
        self, rows: np.ndarray, versions: np.ndarray, live: tuple[np.ndarray, np.ndarray] | None
    ) -> list[Any]:
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
    where: str = ""

    def __call__(
        self, rows: np.ndarray, versions: np.ndarray, live: tuple[np.ndarray, np.ndarray] | None
    ) -> list[Any]:
        numbers = (rows.astype(np.int64) * self.step + self.start).tolist()
        form = self.form
        if self.high is not None and numbers and max(numbers) > self.high:
            raise SpecError(
                f"{self.where}: key {max(numbers)} is more than the column holds"
                f" ({self.high}): too many rows for this key column"
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
                    f"{self.where}: key {max(keys, key=len)!r} is longer than the column's"
                    f" {self.width} characters: too many rows for this key column"
                )
        return keys


_KEY_EPOCH = dt.datetime(2000, 1, 1)


@dataclass
class Reference(Values):
    """A live row's key of another table: the row drawn from the interval given."""

    key: int
    target: KeySequence
    null_rate: float

    def __call__(
        self, rows: np.ndarray, versions: np.ndarray, live: tuple[np.ndarray, np.ndarray] | None
    ) -> list[Any]:
        assert live is not None, "a reference needs the referenced table's live rows"
        lo, hi = live
        h = hashes(self.key, rows, versions)
        count = np.maximum(hi - lo, 1).astype(np.uint64)
        picked = lo + (h % count).astype(np.int64)
        values = self.target(picked, versions, None)
        dead = (hi - lo) <= 0  # nothing to point at: NULL (TiDB has no FK checks)
        if dead.any():
            values = [None if d else v for v, d in zip(values, dead.tolist(), strict=True)]
        return _with_nulls(np.array(values, dtype=object), self.key, rows, versions, self.null_rate)


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
    table: str,
    col: ColumnInfo,
    spec: Column | None,
    seed: int,
    key_column: bool,
    reference: Callable[[str], KeySequence] | None = None,
) -> Values:
    """The generator of `col`: from its spec, or the type's default; a key column is a
    sequence over the row id, whatever else it says."""
    where = f"{table}.{col.name}"
    key = derive(seed, table, col.name)
    spec = spec or Column()
    kind = spec.kind
    if key_column or kind == "sequence":
        if kind not in (None, "sequence"):
            raise SpecError(
                f"{where}: a primary or unique key column is a sequence over the row id, so"
                f" keys never collide; drop its `{kind}`"
            )
        return sequence(where, col, spec.start, spec.step)
    if kind == "ref":
        assert spec.ref is not None and reference is not None
        return Reference(key, reference(spec.ref), spec.null_rate)
    rng = random.Random(key)
    raw = _raw_pool(where, col, spec, rng)
    if spec.length is not None and kind in ("faker", "choice"):  # cut to the longest allowed
        raw = [x[: spec.length[1]] if isinstance(x, str) else x for x in raw]
    convert = column_converter(col, lambda: dt.UTC)
    pool = np.empty(len(raw), dtype=object)
    for i, value in enumerate(raw):
        try:
            pool[i] = convert(value)
        except SQLError as e:
            hint = ""
            if isinstance(value, str) and e.code == 1406:
                hint = " (`length: [min, max]` cuts drawn strings to max characters)"
            raise SpecError(
                f"{where}: a drawn value {value!r} does not fit: {e.message}{hint}"
            ) from None
    return Pooled(key, pool, spec.null_rate)


def sequence(where: str, col: ColumnInfo, start: int, step: int) -> KeySequence:
    tp = col.tp
    if tp in INTEGER_RANGES:
        _, signed_max, unsigned_max = INTEGER_RANGES[tp]
        high = unsigned_max if col.unsigned else signed_max
        return KeySequence(start, step, "int", high=high, where=where)
    if tp == M.NEWDECIMAL:
        high = 10 ** (col.flen - col.decimal) - 1
        return KeySequence(start, step, "decimal", fsp=col.decimal, high=high, where=where)
    if tp in (M.VARCHAR, M.STRING, M.VAR_STRING) and col.charset != "binary":
        prefix = f"{col.name[:8]}-" if col.flen >= 16 else ""  # short keys: the number alone
        return KeySequence(start, step, "text", prefix, width=col.flen, where=where)
    if tp == M.DATE:
        return KeySequence(start, step, "date")
    if tp in (M.DATETIME, M.TIMESTAMP):
        return KeySequence(start, step, "datetime", fsp=max(col.decimal, 0))
    raise SpecError(f"{where}: a key column of this type cannot be a sequence over the row id")


def _raw_pool(where: str, col: ColumnInfo, spec: Column, rng: random.Random) -> list[Any]:
    kind = spec.kind
    if kind == "faker":
        return _faker_pool(where, spec, rng)
    if kind == "choice":
        assert spec.choice is not None
        if isinstance(spec.choice, dict):
            options, weights = list(spec.choice), list(spec.choice.values())
        else:
            options, weights = list(spec.choice), [1.0] * len(spec.choice)
        return rng.choices(options, weights, k=POOL)
    if kind in ("uniform", "normal", "zipf"):
        numbers = [_number(spec, rng) for _ in range(POOL)]
        if spec.min is not None or spec.max is not None:
            low = -np.inf if spec.min is None else spec.min
            high = np.inf if spec.max is None else spec.max
            numbers = [min(max(n, low), high) for n in numbers]
        return [_as_column_number(col, n) for n in numbers]
    return [_default(col, spec, rng) for _ in range(POOL)]


def _faker_pool(where: str, spec: Column, rng: random.Random) -> list[Any]:
    given = spec.faker
    assert given is not None
    provider, args = (given, {}) if isinstance(given, str) else (given.provider, given.args)
    try:
        fake = Faker(spec.locale)
    except AttributeError:
        raise SpecError(f"{where}: Faker has no locale {spec.locale!r}") from None
    fake.seed_instance(rng.getrandbits(64))
    method = getattr(fake, provider, None)
    if not callable(method):
        raise SpecError(f"{where}: Faker has no provider {provider!r}")
    try:
        return [method(**args) for _ in range(POOL)]
    except TypeError as e:
        raise SpecError(f"{where}: faker {provider}: {e}") from None


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
