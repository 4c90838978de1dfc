"""The workload spec: a YAML file read into pydantic models that refuse unknown keys, so a
typo is an error naming its path (`tables[1].columns.price.unifrom`), never a silent default.

    seed: 7
    tables:
      - ddl: CREATE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR(40), city VARCHAR(30))
        rows: 1000                                # initial rows, inserted first
        columns:
          name: {faker: name, locale: de_DE}
          city: {faker: city, null_rate: 0.05}
      - ddl: CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id BIGINT, amount DECIMAL(10,2),
                                  status VARCHAR(10), placed DATETIME(3))
        rows: 5000
        weight: 4                                 # share of the operations
        columns:
          customer_id: {ref: customers.id}        # always a live customer
          amount: {normal: {mean: 80, std: 30}, min: 0}
          status: {choice: {new: 5, paid: 3, shipped: 2}}
        update: [status, amount]                  # the columns an update writes
        key_updates: {share: 0.02}                # updates that also give the row new keys
    operations:
      events: 100000                              # or duration_s: 3600 (simulated)
      mix: {insert: 2, update: 6, delete: 1}
      transaction_size: {min: 1, max: 8}         # or {choice: {1: 90, 100: 10}}
      multi_table: 0.2                            # share of transactions over several tables
      keys: {zipf: 1.1}               # or {uniform: true}, {hotspot: {keys: 0.01, share: 0.9}}
      commit_rate: 2000                           # transactions per simulated second
    storyline:                                    # DDL while it runs
      - at_event: 50000
        ddl: ALTER TABLE orders ADD COLUMN coupon VARCHAR(12) DEFAULT 'none'
        columns: {coupon: {choice: [none, SPRING, VIP]}}
        update: [status, coupon]
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ticdc_sim.errors import SimError


class SpecError(SimError):
    """A workload spec that cannot be used: the file, and the path of the bad key."""


class Strict(BaseModel):
    # .inf and .nan are YAML floats; no count, rate or bound of a run can be one
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


_MOST = 10**15  # rows or events: beyond any run, within numpy's int64 arithmetic on them


# -- column generators -----------------------------------------------------------------------


class Normal(Strict):
    mean: float
    std: float = Field(gt=0)


class Zipf(Strict):
    n: int = Field(1000, gt=0, description="values 1..n")
    s: float = Field(1.1, gt=0, description="the exponent: larger, more skewed")


class Faker(Strict):
    provider: str
    args: dict[str, Any] = Field(default_factory=dict)


class Column(Strict):
    """How one column's values are drawn. One kind at most; none: the type's default."""

    faker: str | Faker | None = None
    locale: str = "en_US"
    sequence: bool | None = None  # start + row * step
    start: int = 1
    step: int = 1
    uniform: tuple[float, float] | None = None  # [low, high]
    normal: Normal | None = None
    zipf: Zipf | None = None
    # value: weight, or values alike
    choice: Annotated[dict[str, float] | list[Any], Field(min_length=1)] | None = None
    ref: str | None = Field(None, pattern=r"^[A-Za-z0-9_$]+\.[A-Za-z0-9_$]+$")
    # strings: [min, max] characters (generated text; faker and choice strings are cut to max)
    length: tuple[int, int] | None = None
    null_rate: float = Field(0.0, ge=0, le=1)
    min: float | None = None  # clip numbers to these
    max: float | None = None

    @model_validator(mode="after")
    def one_kind(self) -> Column:
        given = [k for k in KINDS if getattr(self, k) not in (None, False)]
        if len(given) > 1:
            raise ValueError(f"one generator a column, not {' and '.join(given)}")
        if self.uniform is not None and self.uniform[0] > self.uniform[1]:
            raise ValueError(f"uniform: low {self.uniform[0]} above high {self.uniform[1]}")
        if self.length is not None and not 0 <= self.length[0] <= self.length[1]:
            raise ValueError(f"length: [min, max] with 0 <= min <= max, not {list(self.length)}")
        return self

    @property
    def kind(self) -> str | None:
        return next((k for k in KINDS if getattr(self, k) not in (None, False)), None)


KINDS = ("faker", "sequence", "uniform", "normal", "zipf", "choice", "ref")


# -- tables, operations ------------------------------------------------------------------------


class Dataset(Strict):
    """Initial rows from an existing file: its columns by name (those it lacks are
    generated), read by pyarrow in one process and by Spark under --engine spark."""

    path: Path
    format: Literal["parquet", "csv"] | None = None  # default: from the file's suffix

    @property
    def kind(self) -> str:
        if self.format is not None:
            return self.format
        suffix = self.path.suffix.lower().lstrip(".")
        if suffix not in ("parquet", "csv"):
            raise SpecError(f"initial_from {self.path}: give `format: parquet` or `csv`")
        return suffix


class KeyUpdates(Strict):
    """Updates that also give the row new key values (fresh ones, so keys never collide):
    TiCDC sends a changed handle key or unique key as a delete and an insert (its split
    rule), a changed handle as TiKV's delete of the old row key and put of the new one."""

    share: float = Field(gt=0, le=1, description="this share of the table's updates ...")
    columns: list[str] | None = None  # ... change these (default: every key column)


class Table(Strict):
    ddl: str | None = None
    ddl_file: Path | None = None
    rows: int = Field(0, ge=0, le=_MOST, description="initial rows, before the operations")
    initial_from: Dataset | None = None  # the initial rows, from a file (instead of `rows`)
    weight: float = Field(1.0, ge=0)
    columns: dict[str, Column] = Field(default_factory=dict)
    update: list[str] | None = None  # default: every column outside the keys
    key_updates: KeyUpdates | None = None

    @model_validator(mode="after")
    def one_ddl(self) -> Table:
        if (self.ddl is None) == (self.ddl_file is None):
            raise ValueError("give the table as `ddl` (inline) or `ddl_file`, one of them")
        if self.initial_from is not None and self.rows:
            raise ValueError("`rows` or `initial_from`: the file's rows are the initial rows")
        return self


class Hotspot(Strict):
    keys: float = Field(gt=0, lt=1, description="this share of the live keys ...")
    share: float = Field(gt=0, lt=1, description="... gets this share of the operations")


class Keys(Strict):
    uniform: bool | None = None
    zipf: float | None = Field(None, gt=0)
    hotspot: Hotspot | None = None

    @model_validator(mode="after")
    def one_distribution(self) -> Keys:
        given = [k for k in ("uniform", "zipf", "hotspot") if getattr(self, k) not in (None, False)]
        if len(given) > 1:
            raise ValueError(f"one key distribution, not {' and '.join(given)}")
        return self


class Mix(Strict):
    insert: float = Field(1.0, ge=0)
    update: float = Field(1.0, ge=0)
    delete: float = Field(0.0, ge=0)

    @model_validator(mode="after")
    def some(self) -> Mix:
        if self.insert + self.update + self.delete <= 0:
            raise ValueError("at least one operation needs a weight above 0")
        return self


class Sizes(Strict):
    """Rows a transaction writes: uniform in [min, max], or by weights (`choice: {1: 90,
    100: 10}`: nine in ten transactions write one row, one in ten a hundred)."""

    min: int = Field(1, ge=1)
    max: int = Field(1, ge=1)
    choice: dict[Annotated[int, Field(ge=1)], Annotated[float, Field(ge=0)]] | None = None

    @model_validator(mode="after")
    def ordered(self) -> Sizes:
        if self.min > self.max:
            raise ValueError(f"min {self.min} above max {self.max}")
        if self.choice is not None:
            if "min" in self.model_fields_set or "max" in self.model_fields_set:
                raise ValueError("`min`/`max` or `choice`, not both")
            if sum(self.choice.values()) <= 0:
                raise ValueError("choice: at least one size needs a weight above 0")
        return self


class Operations(Strict):
    events: int | None = Field(None, ge=0, le=_MOST, description="row changes after them")
    duration_s: float | None = Field(None, gt=0, description="or simulated seconds of them")
    mix: Mix = Mix()
    transaction_size: Sizes = Sizes()
    multi_table: float = Field(0.0, ge=0, le=1)
    keys: Keys = Keys()
    commit_rate: float = Field(1000.0, ge=0.001, le=5_000_000, description="txns a simulated s")
    wall_rate: float | None = Field(None, gt=0, description="events a real second (live runs)")

    @model_validator(mode="after")
    def one_length(self) -> Operations:
        if self.events is not None and self.duration_s is not None:
            raise ValueError("give `events` or `duration_s`, not both")
        if (self.duration_s or 0) * self.commit_rate > _MOST:
            raise ValueError(f"duration_s x commit_rate: more than {_MOST:,} transactions")
        return self


class Chapter(Strict):
    """A DDL in the middle of the operations; the rows written after it follow the new
    schema (columns it adds: drawn as `columns` says; rows from before hold the default)."""

    at_event: int | None = Field(None, ge=0, description="before this operation event")
    at_time_s: float | None = Field(None, ge=0, description="or this simulated second")
    ddl: str
    columns: dict[str, Column] = Field(default_factory=dict)
    update: list[str] | None = None  # the columns updates now write (default: as before)

    @model_validator(mode="after")
    def one_moment(self) -> Chapter:
        if (self.at_event is None) == (self.at_time_s is None):
            raise ValueError("give `at_event` or `at_time_s`, one of them")
        return self


class Workload(Strict):
    seed: int = 0
    database: str = "test"
    tables: Annotated[list[Table], Field(min_length=1)]
    operations: Operations = Operations()
    storyline: list[Chapter] = Field(default_factory=list)
    initial_batch: int = Field(1000, gt=0, description="initial rows per transaction")


def load(path: Path, seed: int | None = None) -> Workload:
    """The spec in `path` (YAML); `seed` overrides its own."""
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as e:
        raise SpecError(f"{path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise SpecError(f"{where}: not YAML: {getattr(e, 'problem', e)}") from None
    spec = parse(raw, str(path))
    if seed is not None:
        spec = spec.model_copy(update={"seed": seed})
    base = path.parent
    tables = []
    for t in spec.tables:  # files named in the spec are relative to it
        if t.ddl_file:
            t = t.model_copy(update={"ddl_file": base / t.ddl_file})
        if t.initial_from:
            dataset = t.initial_from.model_copy(update={"path": base / t.initial_from.path})
            t = t.model_copy(update={"initial_from": dataset})
        tables.append(t)
    return spec.model_copy(update={"tables": tables})


def parse(raw: Any, source: str = "spec") -> Workload:
    try:
        return Workload.model_validate(raw)
    except ValidationError as e:
        problems = "; ".join(f"{_path(p['loc'])}: {p['msg']}" for p in e.errors())
        raise SpecError(f"{source}: {problems}") from None


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":  # the mapping's key itself is bad, not its value
            out += " (the key)"
        elif not part.startswith(("function-", "tuple[", "json-or-python")):
            out += f".{part}" if out else part
    return out or "(top)"
