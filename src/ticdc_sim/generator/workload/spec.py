"""What a workload spec can say: pydantic models that refuse unknown keys and loose types,
so a typo is an error naming its place (`w.yaml:12:7: tables[1].columns.price.unifrom:
unknown key; did you mean uniform?`), never a silent default; `reading.py` reads a file into
them and says their errors in the spec's words.

Every option is declared once, here, with its description and a working example (`doc`);
`reference.py` renders them as docs/workload-spec.md, and the tests run every example.
`shape` says how users write a type, for the reference and the errors alike. `EXAMPLE` is a
whole spec.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
import string
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Strict,
    Tag,
    model_validator,
)
from pydantic.config import JsonDict
from pydantic.fields import FieldInfo

from ticdc_sim.errors import SimError

SpecPath = tuple[str | int, ...]

EXAMPLE = """\
seed: 7
tables:
  - ddl: CREATE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR(40),
                                 email VARCHAR(80), UNIQUE KEY (email))
    rows: 1000                                # initial rows, inserted first
    keys: {hot: {count: 1, share: 0.3}}       # a celebrity: 30% of updates and refs
    columns:
      name: {faker: name, locale: de_DE}
      email: {template: "{first_name}.{last_name}{row}@example.com"}
  - ddl: CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id BIGINT,
                              amount DECIMAL(10,2), status VARCHAR(10))
    rows: 5000
    weight: 4                                 # share of the operations
    columns:
      customer_id: {ref: customers.id}        # always a live customer
      amount: {normal: {mean: 80, std: 30}, min: 0}
      status: {choice: {new: 5, paid: 3, shipped: 2}}
    update: [status, amount]                  # the columns an update writes
operations:
  events: 100000                              # or duration_s: 3600 (simulated)
  mix: {insert: 2, update: 6, delete: 1}
  transaction_size: {min: 1, max: 8}
  keys: {zipf: 1.1}
storyline:                                    # DDL while it runs
  - at_event: 50000
    ddl: ALTER TABLE orders ADD COLUMN coupon VARCHAR(12) DEFAULT 'none'
    columns: {coupon: {choice: [none, SPRING, VIP]}}
"""


class SpecError(SimError):
    """A workload spec that cannot be used: where (file:line:col, or the option that set the
    value), the path of the bad key, and what is wrong; `more`: further problems alike."""

    def __init__(
        self,
        message: str,
        path: SpecPath = (),
        where: str | None = None,
        more: Iterable[SpecError] = (),
    ) -> None:
        super().__init__(message)
        self.message, self.path, self.where = message, tuple(path), where
        self.more = list(more)

    def __reduce__(self) -> tuple[Any, ...]:
        return SpecError, (self.message, self.path, self.where, self.more)

    def line(self) -> str:
        path = dotted(self.path) if self.path else None
        if self.where == f"--set {path}":  # the option names the path already
            path = None
        head = [p for p in (self.where, path) if p]
        return ": ".join([*head, self.message])

    def __str__(self) -> str:
        return "\n".join([self.line(), *(f"  {e.line()}" for e in self.more)])

    def located(self, spec: Workload) -> SpecError:
        """The same error with the place in the spec's file its path points at."""
        where = self.where if self.where is not None else spec.locate(self.path)
        return SpecError(self.message, self.path, where, [e.located(spec) for e in self.more])


def dotted(path: SpecPath) -> str:
    """`tables[1].columns.price` from ("tables", 1, "columns", "price")."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":  # the mapping's key itself is bad, not its value
            out += " (the key)"
        elif part.startswith("<"):  # a marker (where a key was written), not a name
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "(top)"


# -- declaring options -------------------------------------------------------------------------


# .inf and .nan are YAML floats; no count, rate or bound of a run can be one. Scalars are
# strict: `rows: "10"` or `unique: 1` is an error, not a guess.
def _integral(value: Any) -> Any:
    """1e6 (a float in YAML) as the integer it is; 2.5 stays, to be refused."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


Int = Annotated[int, BeforeValidator(_integral), Strict()]
Num = Annotated[float, Strict()]
Bool = Annotated[bool, Strict()]
Text = Annotated[str, Strict()]

_MOST = 10**15  # rows or events: beyond any run, within numpy's int64 arithmetic on them
# drawn strings: a TEXT's worth; 4096 pooled values of a LONGTEXT's 4 GiB would not fit
Length = Annotated[Int, Field(ge=0, le=65535)]


def doc(default: Any = ..., what: str = "", example: str = "", shape: str = "", **kw: Any) -> Any:
    """A field with its description, a working example (YAML, as it sits in its section)
    and, where the type says too little, the shape users write."""
    extra: JsonDict = {k: v for k, v in (("example", example), ("shape", shape)) if v}
    return Field(default, description=what, json_schema_extra=extra or None, **kw)


class Strict_(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _kind(value: Any) -> str:
    """The branch of a union a YAML value takes, by its kind, so that an error is that
    branch's, not one per branch."""
    if isinstance(value, dict | BaseModel):
        return "<mapping>"
    return "<list>" if isinstance(value, list | tuple) else "<text>"


# -- column generators -----------------------------------------------------------------------


class Normal(Strict_):
    """A normal distribution."""

    mean: Num = doc(what="its mean", example="amount: {normal: {mean: 80, std: 30}}")
    std: Num = doc(
        what="its standard deviation", example="amount: {normal: {mean: 80, std: 30}}", gt=0
    )


class Zipf(Strict_):
    """Zipf's law over 1..n: 1 the most frequent."""

    n: Int = doc(1000, "values 1..n", "visits: {zipf: {n: 100, s: 1.2}}", gt=0, le=_MOST)
    s: Num = doc(1.1, "the exponent: larger, more skewed", "visits: {zipf: {n: 100, s: 1.2}}", gt=0)


class Faker(Strict_):
    """A Faker provider called with arguments."""

    provider: Text = doc(
        what="the provider's name (Faker's documentation lists them)",
        example="visits: {faker: {provider: random_int, args: {min: 1, max: 50}}}",
    )
    args: dict[Text, Any] = doc(
        what="its keyword arguments",
        example="visits: {faker: {provider: random_int, args: {min: 1, max: 50}}}",
        default_factory=dict,
    )


FakerSpec = Annotated[
    Union[Annotated[Text, Tag("<text>")], Annotated[Faker, Tag("<mapping>")]],  # noqa: UP007
    Discriminator(_kind),
]
ChoiceSpec = Annotated[
    Union[  # noqa: UP007
        Annotated[
            dict[Text | Int | Num, Annotated[Num, Field(ge=0)]],
            Field(min_length=1),
            Tag("<mapping>"),
        ],
        Annotated[list[Any], Field(min_length=1), Tag("<list>")],
    ],
    Discriminator(_kind),
]


class Column(Strict_):
    """How one column's values are drawn: one generator at most (none: the type's default,
    random values of its range), then `null_rate`, `length`, `min`/`max` shape them."""

    faker: FakerSpec | None = doc(
        None,
        "values from a Faker provider, by name (or with arguments)",
        "name: {faker: name}",
        shape="provider name, or {provider, args}",
    )
    template: Text | None = doc(
        None,
        "text with placeholders: `{provider}` is a Faker provider's value, `{row}` the row's"
        " number (1, 2, ...; with `key_updates`, the key's); `{row:06d}` pads; `{{` and `}}`"
        " are braces",
        'email: {template: "{first_name}.{last_name}{row}@example.com"}',
    )
    locale: Text = doc(
        "en_US", "Faker's locale (faker and template)", "name: {faker: name, locale: de_DE}"
    )
    unique: Bool = doc(
        False,
        "values never repeat, as a unique index needs (PRIMARY and UNIQUE key columns always"
        " are): drawn row by row, a repeat drawn again; a column that is unique without"
        " being a key is written by inserts only",
        "city: {faker: city, unique: true}",
    )
    sequence: Bool | None = doc(
        None,
        "start + row * step (key columns are sequences unless told otherwise)",
        "visits: {sequence: true, start: 100, step: 10}",
    )
    start: Int = doc(1, "the sequence's first value", "visits: {sequence: true, start: 100}")
    step: Int = doc(1, "the sequence's step", "visits: {sequence: true, step: 10}")
    uniform: tuple[Num, Num] | None = doc(
        None,
        "uniform in [low, high]; integers when both bounds are integers",
        "amount: {uniform: [1, 500]}",
        shape="[low, high]",
    )
    normal: Normal | None = doc(
        None, "a normal distribution", "score: {normal: {mean: 50, std: 10}}"
    )
    zipf: Zipf | None = doc(None, "Zipf's law over 1..n", "visits: {zipf: {n: 100, s: 1.2}}")
    choice: ChoiceSpec | None = doc(
        None,
        "one of these values, by weight (a mapping of value to weight) or alike (a list)",
        "status: {choice: {new: 5, paid: 3, shipped: 2}}",
        shape="{value: weight, ...} or [value, ...]",
    )
    ref: Text | None = doc(
        None,
        "the key of a live row of another table (its one-column primary key); the"
        " referenced table's hot rows (`keys.hot`) get their share of the references",
        "customer_id: {ref: customers.id}",
        shape="table.column",
        pattern=r"^[A-Za-z0-9_$]+\.[A-Za-z0-9_$]+$",
    )
    length: tuple[Length, Length] | None = doc(
        None,
        "strings: [min, max] characters, at most 65535 (random text; faker, template and"
        " choice strings are cut to max)",
        "note: {length: [10, 80]}",
        shape="[min, max]",
    )
    null_rate: Num = doc(
        0.0, "this share of the values is NULL", "note: {null_rate: 0.2}", ge=0, le=1
    )
    min: Num | None = doc(
        None, "numbers below are raised to it", "amount: {normal: {mean: 80, std: 30}, min: 1}"
    )
    max: Num | None = doc(
        None, "numbers above are lowered to it", "amount: {normal: {mean: 80, std: 30}, max: 500}"
    )

    @model_validator(mode="after")
    def one_kind(self) -> Column:
        given = [k for k in KINDS if getattr(self, k) not in (None, False)]
        if len(given) > 1:
            raise ValueError(f"one generator a column, not {' and '.join(given)}")
        if self.uniform is not None and self.uniform[0] > self.uniform[1]:
            raise ValueError(f"uniform: low {self.uniform[0]:g} is above high {self.uniform[1]:g}")
        if self.length is not None and not 0 <= self.length[0] <= self.length[1]:
            raise ValueError(f"length: [min, max] with 0 <= min <= max, not {list(self.length)}")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min:g} above max {self.max:g}")
        if self.unique and self.ref is not None:
            raise ValueError("a reference cannot be unique: it points at rows that exist")
        if isinstance(self.choice, list) and any(_not_finite(x) for x in self.choice):
            raise ValueError("choice: .nan and .inf are no values a column holds")
        if self.faker is not None or self.template is not None:
            providers(self.locale)  # a locale Faker does not know: said here, at load
        if self.faker is not None:
            name = self.faker if isinstance(self.faker, str) else self.faker.provider
            check_provider(name, self.locale, "faker")
        if self.template is not None:
            template_fields(self.template, self.locale)
        return self

    @property
    def kind(self) -> str | None:
        return next((k for k in KINDS if getattr(self, k) not in (None, False)), None)


KINDS = ("faker", "template", "sequence", "uniform", "normal", "zipf", "choice", "ref")


def _not_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


@functools.lru_cache(maxsize=16)
def providers(locale: str) -> frozenset[str]:
    """The provider names Faker has in `locale` (public methods of its providers)."""
    from faker import Faker as Fake

    try:
        fake = Fake(locale)
    except AttributeError:
        raise ValueError(f"locale: Faker has no locale {locale!r}") from None
    return frozenset(
        name
        for provider in fake.factories[0].providers
        for name in dir(provider)
        if not name.startswith("_") and callable(getattr(provider, name))
    )


def check_provider(name: str, locale: str, what: str) -> None:
    known = providers(locale)
    if name not in known:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise ValueError(f"{what}: Faker has no provider {name!r} in locale {locale}{hint}")


_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def template_fields(template: str, locale: str) -> list[tuple[str, str | None, str]]:
    """A template as (literal text, placeholder or None, format spec) pieces; every
    placeholder is `row` or a provider of `locale`."""
    try:
        pieces = list(string.Formatter().parse(template))
    except ValueError as e:
        raise ValueError(
            f"template: {e} in {template!r} (write {{{{ and }}}} for braces)"
        ) from None
    out = []
    for text, name, spec, conversion in pieces:
        if name is not None:
            if not _FIELD.fullmatch(name) or conversion is not None or "{" in (spec or ""):
                raise ValueError(
                    f"template: {{{name}{'!' + conversion if conversion else ''}}} is not a"
                    " placeholder: {provider}, {row} or {row:06d}"
                )
            if name == "row":
                try:
                    format(1, spec or "")
                except ValueError as e:
                    raise ValueError(f"template: {{row:{spec}}}: {e}") from None
            else:
                check_provider(name, locale, "template")
        out.append((text, name, spec or ""))
    if not any(name for _, name, _ in out):
        raise ValueError("template: no placeholder; for a constant, write `choice: [the text]`")
    return out


# -- tables, operations ------------------------------------------------------------------------


class Dataset(Strict_):
    """Initial rows from an existing file: its columns by name (those it lacks are
    generated), read by pyarrow in one process and by Spark under --engine spark."""

    path: Path = doc(
        what="a Parquet or CSV file (with a header line), relative to the spec",
        example="initial_from: {path: accounts.csv}",
    )
    format: Literal["parquet", "csv"] | None = doc(
        None,
        "the file's format (default: from its suffix)",
        "initial_from: {path: accounts.data, format: csv}",
    )

    @property
    def kind(self) -> str:
        if self.format is not None:
            return self.format
        suffix = self.path.suffix.lower().lstrip(".")
        if suffix not in ("parquet", "csv"):
            raise SpecError(
                f"{self.path.name} is neither .parquet nor .csv: give `format: parquet` or `csv`",
                ("path",),
            )
        return suffix


class KeyUpdates(Strict_):
    """Updates that also give the row new key values (fresh ones, so keys never collide):
    TiCDC sends a changed handle key or unique key as a delete and an insert (its split
    rule), a changed handle as TiKV's delete of the old row key and put of the new one."""

    share: Num = doc(
        what="this share of the table's updates ...",
        example="key_updates: {share: 0.05}",
        gt=0,
        le=1,
    )
    columns: list[Text] | None = doc(
        None,
        "... change these key columns (default: every primary and unique key column)",
        "key_updates: {share: 0.05, columns: [email]}",
    )


class Hotspot(Strict_):
    """The newest rows as hot keys: a share of the live rows gets a share of the updates."""

    keys: Num = doc(
        what="this share of the live rows (the newest) ...",
        example="keys: {hotspot: {keys: 0.01, share: 0.9}}",
        gt=0,
        lt=1,
    )
    share: Num = doc(
        what="... gets this share of the updates",
        example="keys: {hotspot: {keys: 0.01, share: 0.9}}",
        gt=0,
        lt=1,
    )


class Hot(Strict_):
    """Hot keys as a fixed set: a table's first rows (a celebrity customer), never deleted
    by the retention that takes the oldest rows, get a share of its updates and of the
    references (`ref:`) to it."""

    count: Int = doc(
        what="the table's first `count` rows are hot ...",
        example="keys: {hot: {count: 1, share: 0.3}}",
        ge=1,
        le=_MOST,
    )
    share: Num = doc(
        what="... and take this share of the updates and references",
        example="keys: {hot: {count: 1, share: 0.3}}",
        gt=0,
        le=1,
    )


class Keys(Strict_):
    """Which live row an update takes: by recency (`uniform`, `zipf`, `hotspot`: the
    newest rows are the hot ones) and, besides, a fixed set of hot rows (`hot`)."""

    uniform: Bool | None = doc(None, "any live row alike (the default)", "keys: {uniform: true}")
    zipf: Num | None = doc(
        None,
        "Zipf's law over the live rows, newest first: the exponent (larger, more skewed)",
        "keys: {zipf: 1.1}",
        gt=0,
    )
    hotspot: Hotspot | None = doc(
        None,
        "the newest share of the rows gets a share of the updates",
        "keys: {hotspot: {keys: 0.01, share: 0.9}}",
    )
    hot: Hot | None = doc(
        None,
        "a fixed set of hot rows (with one of the above for the other updates)",
        "keys: {hot: {count: 1, share: 0.3}, zipf: 1.1}",
    )

    @model_validator(mode="after")
    def one_distribution(self) -> Keys:
        given = [k for k in ("uniform", "zipf", "hotspot") if getattr(self, k) not in (None, False)]
        if len(given) > 1:
            raise ValueError(f"one key distribution, not {' and '.join(given)}")
        return self


class Table(Strict_):
    """One table: its DDL, how many rows it starts with, how its columns are drawn."""

    ddl: Text | None = doc(
        None,
        "its CREATE TABLE statement (TiDB's dialect), one table an entry",
        "ddl: CREATE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR(40))",
    )
    ddl_file: Path | None = doc(
        None,
        "or a file holding it, relative to the spec",
        "ddl_file: customers.sql",
    )
    rows: Int = doc(0, "initial rows, inserted before the operations", "rows: 1000", ge=0, le=_MOST)
    initial_from: Dataset | None = doc(
        None,
        "the initial rows from a file instead (an integer primary key, no other unique key)",
        "initial_from: {path: accounts.parquet}",
    )
    weight: Num = doc(1.0, "this table's share of the operations, by weight", "weight: 4", ge=0)
    columns: dict[Text, Column] = doc(
        what="how columns are drawn, by name (the others: their type's default)",
        example="columns: {name: {faker: name}, city: {faker: city}}",
        default_factory=dict,
    )
    update: list[Text] | None = doc(
        None,
        "the columns an update writes (default: every column outside the keys)",
        "update: [name, city]",
    )
    key_updates: KeyUpdates | None = doc(
        None, "a share of the updates that also give the row new keys", "key_updates: {share: 0.05}"
    )
    keys: Keys | None = doc(
        None,
        "which rows this table's updates take (default: operations.keys)",
        "keys: {hot: {count: 1, share: 0.3}}",
    )

    @model_validator(mode="after")
    def one_ddl(self) -> Table:
        if (self.ddl is None) == (self.ddl_file is None):
            raise ValueError("give the table as `ddl` (inline) or `ddl_file`, one of them")
        if self.initial_from is not None and self.rows:
            raise ValueError("`rows` or `initial_from`: the file's rows are the initial rows")
        return self


class Mix(Strict_):
    """The operations by weight."""

    insert: Num = doc(1.0, "inserts of new rows", "mix: {insert: 2, update: 6, delete: 1}", ge=0)
    update: Num = doc(1.0, "updates of live rows", "mix: {insert: 2, update: 6, delete: 1}", ge=0)
    delete: Num = doc(
        0.0,
        "deletes of the oldest live row (retention)",
        "mix: {insert: 2, update: 6, delete: 1}",
        ge=0,
    )

    @model_validator(mode="after")
    def some(self) -> Mix:
        if self.insert + self.update + self.delete <= 0:
            raise ValueError("at least one operation needs a weight above 0")
        return self


class Sizes(Strict_):
    """Rows a transaction writes: uniform in [min, max], or by weights (`choice: {1: 90,
    100: 10}`: nine in ten transactions write one row, one in ten a hundred)."""

    min: Int = doc(1, "uniform from min ...", "transaction_size: {min: 1, max: 8}", ge=1, le=_MOST)
    max: Int = doc(1, "... to max rows", "transaction_size: {min: 1, max: 8}", ge=1, le=_MOST)
    choice: dict[Annotated[Int, Field(ge=1, le=_MOST)], Annotated[Num, Field(ge=0)]] | None = doc(
        None,
        "or sizes by weight",
        "transaction_size: {choice: {1: 90, 100: 10}}",
        shape="{rows: weight, ...}",
        min_length=1,
    )

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


class Operations(Strict_):
    """What runs after the initial rows: how many operations, which, in what transactions."""

    events: Int | None = doc(
        None, "row changes to make (or `duration_s`)", "events: 100000", ge=0, le=_MOST
    )
    duration_s: Num | None = doc(
        None, "or simulated seconds of them, at commit_rate", "duration_s: 3600", gt=0
    )
    mix: Mix = doc(
        Mix(), "inserts, updates and deletes by weight", "mix: {insert: 2, update: 6, delete: 1}"
    )
    transaction_size: Sizes = doc(
        Sizes(), "rows a transaction writes", "transaction_size: {choice: {1: 90, 100: 10}}"
    )
    multi_table: Num = doc(
        0.0, "this share of the transactions writes several tables", "multi_table: 0.2", ge=0, le=1
    )
    keys: Keys = doc(Keys(), "which rows updates take", "keys: {zipf: 1.1}")
    commit_rate: Num = doc(
        1000.0, "transactions a simulated second", "commit_rate: 2000", ge=0.001, le=5_000_000
    )
    wall_rate: Num | None = doc(
        None,
        "events a real second, for live runs into Kafka (--engine local)",
        "wall_rate: 500",
        gt=0,
    )

    @model_validator(mode="after")
    def one_length(self) -> Operations:
        if self.events is not None and self.duration_s is not None:
            raise ValueError("give `events` or `duration_s`, not both")
        if (self.duration_s or 0) * self.commit_rate > _MOST:
            raise ValueError(
                f"duration_s: {self.duration_s:g} s at commit_rate {self.commit_rate:g} is more"
                f" than {_MOST:,} transactions"
            )
        return self


class Chapter(Strict_):
    """A DDL in the middle of the operations; the rows written after it follow the new
    schema (columns it adds: drawn as `columns` says; rows from before hold the default, as
    TiDB backfills it). A table that a `ref:` names is not dropped or renamed, and column
    types do not change."""

    at_event: Int | None = doc(
        None, "before this operation event (0: the first)", "at_event: 500", ge=0, le=_MOST
    )
    at_time_s: Num | None = doc(None, "or at this simulated second", "at_time_s: 0.5", ge=0)
    ddl: Text = doc(
        what="the DDL (one or more statements)",
        example="ddl: ALTER TABLE customers ADD COLUMN tier VARCHAR(8) DEFAULT 'basic'",
    )
    columns: dict[Text, Column] = doc(
        what="how the columns it adds are drawn",
        example="columns: {tier: {choice: [basic, gold]}}",
        default_factory=dict,
    )
    update: list[Text] | None = doc(
        None,
        "the columns updates write from now on (default: as before; only added columns join)",
        "update: [name, tier]",
    )

    @model_validator(mode="after")
    def one_moment(self) -> Chapter:
        if (self.at_event is None) == (self.at_time_s is None):
            raise ValueError("give `at_event` or `at_time_s`, one of them")
        return self


class Workload(Strict_):
    """The whole spec."""

    seed: Int = doc(
        0, "every value and choice derives from it (--seed replaces it)", "seed: 7", ge=0, lt=2**63
    )
    database: Text = doc(
        "test",
        "the database the tables are created in (made when missing)",
        "database: shop",
        min_length=1,
        max_length=64,
    )
    tables: Annotated[list[Table], Field(min_length=1)] = doc(
        what="the tables, each its own entry",
        example="tables: [{ddl: 'CREATE TABLE t (id BIGINT PRIMARY KEY, v INT)', rows: 10}]",
    )
    operations: Operations = doc(
        Operations(), "what runs after the initial rows", "operations: {events: 1000}"
    )
    storyline: list[Chapter] = doc(
        what="DDL while it runs, in order",
        example="storyline: [{at_event: 500, ddl: 'ALTER TABLE customers ADD COLUMN x INT'}]",
        default_factory=list,
    )
    initial_batch: Int = doc(
        1000, "initial rows a transaction", "initial_batch: 500", gt=0, le=_MOST
    )

    _source: str | None = PrivateAttr(None)
    _marks: dict[SpecPath, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def chapters_in_the_run(self) -> Workload:
        ops, last_event, last_time = self.operations, -1, -1.0
        for i, chapter in enumerate(self.storyline):
            if (
                ops.events is not None
                and chapter.at_event is not None
                and chapter.at_event >= ops.events
            ):
                raise SpecError(
                    f"at_event {chapter.at_event} is past the run's end (operations.events:"
                    f" {ops.events}); a chapter runs before an operation event",
                    ("storyline", i, "at_event"),
                )
            if ops.events is None and ops.duration_s is None:
                raise SpecError(
                    "the run has no operations (operations.events or duration_s), so no chapter"
                    " would run",
                    ("storyline", i),
                )
            at = chapter.at_time_s
            if ops.duration_s is not None and at is not None and at >= ops.duration_s:
                raise SpecError(
                    f"at_time_s {at:g} is past the run's end (operations.duration_s:"
                    f" {ops.duration_s:g})",
                    ("storyline", i, "at_time_s"),
                )
            if chapter.at_event is not None:
                if chapter.at_event < last_event:
                    raise SpecError(
                        f"at_event {chapter.at_event} is before the chapter above's"
                        f" ({last_event}): chapters run in order",
                        ("storyline", i, "at_event"),
                    )
                last_event = chapter.at_event
            if at is not None:
                if at < last_time:
                    raise SpecError(
                        f"at_time_s {at:g} is before the chapter above's ({last_time:g}):"
                        " chapters run in order",
                        ("storyline", i, "at_time_s"),
                    )
                last_time = at
        return self

    def locate(self, path: SpecPath) -> str | None:
        """Where `path` was written: file:line:col of the deepest part of it found (or the
        option that set it), else the file."""
        for cut in range(len(path), -1, -1):
            found = self._marks.get(path[:cut])
            if found is not None:
                return found
        return self._source

    def table_keys(self, index: int) -> Keys:
        """The key distribution of table `index`'s updates."""
        return self.tables[index].keys or self.operations.keys


# -- shapes: how users write a type ----------------------------------------------------------


def annotation(field: FieldInfo) -> Any:
    tp = field.annotation
    return Annotated[tuple([tp, *field.metadata])] if field.metadata else tp


def bare(tp: Any) -> Any:
    """`X | None` as X; Annotated[X, ...] as X, but a tagged union stays whole."""
    while True:
        if get_origin(tp) is Annotated:
            inner, *meta = get_args(tp)
            if any(isinstance(m, Discriminator) for m in meta):
                return tp
            tp = inner
            continue
        args = [a for a in get_args(tp) if a is not type(None)]
        if is_union(tp) and len(args) == 1:
            tp = args[0]
            continue
        return tp


def is_union(tp: Any) -> bool:
    import types

    return get_origin(tp) in (Union, types.UnionType)


def branches(tp: Any) -> list[Any]:
    if get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return list(get_args(tp)) if is_union(tp) else [tp]


def tag(tp: Any) -> str | None:
    if get_origin(tp) is Annotated:
        return next((m.tag for m in get_args(tp)[1:] if isinstance(m, Tag)), None)
    return None


def shape_of(field: FieldInfo) -> str:
    """How users write a field's value: its declared shape, or one read from its type."""
    extra = field.json_schema_extra
    given = extra.get("shape") if isinstance(extra, dict) else None
    return str(given) if given else shape(annotation(field))


def shape(tp: Any) -> str:
    """A type as YAML users write it: `integer`, `[number, number]`, `{text: number}`,
    `{mean, std}` (a section's keys)."""
    tp = bare(tp)
    if tag(tp) is None and get_origin(tp) is Annotated:
        return shape(get_args(tp)[0])
    given = branches(tp)
    if len(given) > 1:
        return " or ".join(shape(bare(get_args(b)[0] if tag(b) else b)) for b in given)
    if tp is int:
        return "integer"
    if tp is float:
        return "number"
    if tp is bool:
        return "true/false"
    if tp is str:
        return "text"
    if tp is Path:
        return "file path"
    if tp is Any:
        return "any value"
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return " or ".join(str(a) for a in args)
    if origin is tuple:
        return "[" + ", ".join(shape(a) for a in args) + "]"
    if origin is list:
        return f"[{shape(args[0])}, ...]"
    if origin is dict:
        return "{" + f"{shape(args[0])}: {shape(args[1])}, ..." + "}"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "{" + ", ".join(tp.model_fields) + "}"
    return str(tp)


def number_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and value >= 1 << 32 and value & (value - 1) == 0:
        return f"2^{value.bit_length() - 1}"
    return f"{value:,}" if isinstance(value, int) and abs(value) >= 10**6 else f"{value}"
