"""The workload spec: a YAML file read into pydantic models that refuse unknown keys, so a
typo is an error naming its place (`w.yaml:12:7: tables[1].columns.price.unifrom: unknown
key; did you mean uniform?`), never a silent default.

Every option is declared once, here, with its description and a working example (`doc`);
`reference.py` renders them as docs/workload-spec.md, and the tests run every example. The
errors speak the spec's language: what the option's shape is, what was given, where.
`EXAMPLE` is a whole spec.
"""

from __future__ import annotations

import codecs
import difflib
import functools
import re
import string
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Strict,
    Tag,
    ValidationError,
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
        head = [p for p in (self.where, dotted(self.path) if self.path else None) if p]
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
    length: tuple[Int, Int] | None = doc(
        None,
        "strings: [min, max] characters (random text; faker, template and choice strings"
        " are cut to max)",
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


# -- reading -----------------------------------------------------------------------------------

_MAX_NODES = 1_000_000  # YAML values after aliases are expanded: beyond any real spec
_MAX_DEPTH = 64  # nested collections: a spec needs 6
_KEY = "<key>"  # in a path of marks: where a mapping's key (not its value) was written
_FLOAT_12 = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


def load(path: Path, seed: int | None = None, overrides: Iterable[Override] = ()) -> Workload:
    """The spec in `path` (YAML), with `overrides` (--set and friends) applied; `seed`
    replaces its own. Files named in the spec are relative to it."""
    source = str(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise SpecError("is a directory, not a workload spec (YAML)", where=source) from None
    except OSError as e:
        raise SpecError(str(e.strerror), where=source) from None
    raw, marks = read_yaml(data, source)
    given = list(overrides)
    if seed is not None:
        given.append(Override(("seed",), seed, "--seed"))
    for override in given:
        raw = override.apply(raw, marks)
    spec = parse(raw, source, marks)
    base = path.parent
    tables = []
    for t in spec.tables:
        if t.ddl_file:
            t = t.model_copy(update={"ddl_file": base / t.ddl_file})
        if t.initial_from:
            dataset = t.initial_from.model_copy(update={"path": base / t.initial_from.path})
            t = t.model_copy(update={"initial_from": dataset})
        tables.append(t)
    return spec.model_copy(update={"tables": tables})


def read_yaml(data: bytes, source: str) -> tuple[Any, dict[SpecPath, str]]:
    """A YAML document and where each of its values was written (file:line:col by path).
    Binary data, bad UTF-8, duplicate keys, alias bombs and runaway nesting are errors."""
    for bom, name in _WIDE:
        if data.startswith(bom):
            raise SpecError(
                f"{name} text: a workload spec is UTF-8 (save it as UTF-8)", where=source
            )
    if b"\0" in data[: 1 << 16]:
        raise SpecError(
            f"not a workload spec: binary data (a NUL byte at offset {data.index(0)})",
            where=source,
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line, col = _line_col(data[: e.start].decode("utf-8", "replace"), len(data[: e.start]))
        raise SpecError(
            f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})",
            where=f"{source}:{line}:{col}",
        ) from None
    loader = None
    try:
        loader = _Loader(text)  # PyYAML's reader checks every character here
        loader.source = source
        try:
            node = loader.get_single_node()
        except RecursionError:
            mark = loader.get_mark()
            raise SpecError(
                "nested too deeply to read", where=f"{source}:{mark.line + 1}:{mark.column + 1}"
            ) from None  # a stack smaller than _MAX_DEPTH needs: said all the same
        if node is None:
            return None, {}
        _check_size(node, source)
        raw = loader.construct_document(node)
        marks: dict[SpecPath, str] = {}
        _collect_marks(loader, node, source, marks)
        return raw, marks
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = e.problem or e.context or "not YAML"
        if problem.startswith("but ") and e.context:  # PyYAML's two halves of one sentence
            problem = f"{e.context} {problem}"
        raise SpecError(f"not YAML: {problem}", where=where) from None
    except yaml.reader.ReaderError as e:
        line, col = _line_col(text, e.position)
        raise SpecError(
            f"not YAML: character U+{e.character:04X} is not allowed",
            where=f"{source}:{line}:{col}",
        ) from None
    except yaml.YAMLError as e:
        raise SpecError(f"not YAML: {e}", where=source) from None
    finally:
        if loader is not None:
            loader.dispose()


_WIDE = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _line_col(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


class _Loader(yaml.SafeLoader):  # type: ignore[misc]
    """PyYAML's safe loader, refusing a key given twice in one mapping (the last would
    win, silently) and collections nested deeper than `_MAX_DEPTH`; `1e6` is a number, as
    in YAML 1.2 (1.1 wants `1.0e+6`)."""

    depth = 0
    source = "spec"

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.depth += 1
        try:
            if self.depth > _MAX_DEPTH:
                at = self.peek_event().start_mark
                raise SpecError(
                    f"nested deeper than {_MAX_DEPTH} levels (a spec needs a few)",
                    where=f"{self.source}:{at.line + 1}:{at.column + 1}",
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                line = first.get(key)
            except TypeError:
                continue  # an unhashable key: the constructor says so
            if line is not None:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"key {key!r} given twice (first on line {line})",
                    key_node.start_mark,
                )
            first[key] = key_node.start_mark.line + 1
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+0123456789"))


def _check_size(root: yaml.Node, source: str) -> None:
    """Refuse a document whose aliases expand beyond `_MAX_NODES` values (a billion
    laughs), or contain themselves: counted over the node graph, each node once."""
    size: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        children = _children(node)
        if done:
            open_.discard(id(node))
            size[id(node)] = 1 + sum(size[id(c)] for c in children)
            if size[id(node)] > _MAX_NODES:
                mark = node.start_mark
                raise SpecError(
                    f"aliases expand to more than {_MAX_NODES:,} values (an alias bomb?)",
                    where=f"{source}:{mark.line + 1}:{mark.column + 1}",
                )
            continue
        if id(node) in size:
            continue
        if id(node) in open_:
            mark = node.start_mark
            raise SpecError(
                "an alias that contains itself", where=f"{source}:{mark.line + 1}:{mark.column + 1}"
            )
        open_.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in size)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _collect_marks(
    loader: _Loader, root: yaml.Node, source: str, marks: dict[SpecPath, str]
) -> None:
    """file:line:col of each value by its path (a node reached again by an alias: once)."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, SpecPath]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        mark = node.start_mark
        marks[path] = f"{source}:{mark.line + 1}:{mark.column + 1}"
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, (*path, i)) for i, child in enumerate(node.value))
        elif isinstance(node, yaml.MappingNode):
            for key_node, value in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    key = loader.construct_object(key_node, deep=True)
                    if isinstance(key, str | int):
                        stack.append((value, (*path, key)))
                        at = key_node.start_mark
                        marks[(*path, key, _KEY)] = f"{source}:{at.line + 1}:{at.column + 1}"


def parse(raw: Any, source: str = "spec", marks: dict[SpecPath, str] | None = None) -> Workload:
    """The spec from YAML's data; errors say where (`marks`: file:line:col by path)."""
    marks = marks or {}
    if raw is None:
        raise SpecError("empty: a workload spec needs at least `tables`", where=source)
    if isinstance(raw, dict):  # x-...: a place for YAML anchors, as in compose files
        raw = {k: v for k, v in raw.items() if not (isinstance(k, str) and k.startswith("x-"))}
    try:
        spec = Workload.model_validate(raw)
    except ValidationError as e:
        problems = list(dict.fromkeys(_problem(p) for p in e.errors()))  # once each
        located = [
            SpecError(message, path, _locate(marks, path) or source) for path, message in problems
        ]
        raise SpecError(
            located[0].message, located[0].path, located[0].where, located[1:]
        ) from None
    except SpecError as e:  # a check across options, raised with its path
        raise SpecError(e.message, e.path, _locate(marks, e.path) or source) from None
    spec._source, spec._marks = source, marks
    return spec


def _locate(marks: dict[SpecPath, str], path: SpecPath) -> str | None:
    for cut in range(len(path), -1, -1):
        if path[:cut] in marks:
            return marks[path[:cut]]
    return None


# -- errors in the spec's words ----------------------------------------------------------------


def _problem(error: Any) -> tuple[SpecPath, str]:
    """A pydantic error as (spec path, what is wrong): the option's shape, what was given;
    a mapping's bad key at the mapping, named."""
    path, message = _problem_at(error)
    if "[key]" in path:
        cut = path.index("[key]")
        return path[: cut - 1], f"key {_show(path[cut - 1])}: {message}"
    return path, message


def _problem_at(error: Any) -> tuple[SpecPath, str]:
    loc = tuple(error["loc"])
    path = tuple(p for p in loc if not (isinstance(p, str) and p.startswith("<")))
    kind, ctx, given = error["type"], error.get("ctx") or {}, error.get("input")
    tp, field, owner = _walk(loc)
    at_field = field is not None and bool(path) and path[-1] == _field_name(owner, field)
    pair = field is not None and get_origin(_bare(_annotation(field))) is tuple
    if field and pair and kind in ("missing", "too_long", "too_short") and isinstance(given, list):
        at = path[:-1] if kind == "missing" else path  # [low, high] whole, not an item of it
        return at, f"expected {shape_of(field)}, not {_show(given)}" + _example(field)
    if kind == "extra_forbidden":
        name = str(path[-1]) if path else ""
        known = list(owner.model_fields) if owner else []
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        where = _SECTION.get(owner, "here") if owner else "here"
        return (*path, _KEY), f"unknown key; {hint}{where} takes {', '.join(known)}"
    if kind == "missing":
        return path, "required" + _example(field)
    if kind in ("value_error", "assertion_error"):
        text = str(ctx.get("error", error["msg"]))
        name, colon, rest = text.partition(": ")
        if colon and isinstance(tp, type) and issubclass(tp, BaseModel) and name in tp.model_fields:
            return (*path, name), rest  # a check of one option: at that option
        return path, text
    bounds = {"greater_than": "above", "greater_than_equal": "at least", "less_than": "below",
              "less_than_equal": "at most"}  # fmt: skip
    if kind in bounds:
        limit = next(iter(ctx.values()))
        return path, f"must be {bounds[kind]} {_number(limit)}, not {_show(given)}"
    if kind == "finite_number":
        return path, f"must be a finite number, not {_show(given)}"
    if kind in ("too_short", "too_long"):
        count = ctx.get("min_length" if kind == "too_short" else "max_length")
        most = "at least" if kind == "too_short" else "at most"
        return path, f"needs {most} {count} item{'s' if count != 1 else ''}" + _example(field)
    if kind in ("string_too_short", "string_too_long"):
        count = ctx.get("min_length" if kind == "string_too_short" else "max_length")
        most = "at least" if kind == "string_too_short" else "at most"
        return (
            path,
            f"needs {most} {count} character{'s' if count != 1 else ''}, not {_show(given)}",
        )
    if kind == "string_pattern_mismatch":
        return path, f"expected {shape_of(field) if field else 'text'}, not {_show(given)}"
    if kind == "literal_error":
        return path, f"expected {ctx.get('expected')}, not {_show(given)}"
    if kind.endswith(("_type", "_parsing")) or kind in ("int_from_float", "union_tag_invalid"):
        wanted = shape_of(field) if at_field and field else shape(tp)
        return path, f"expected {wanted}, not {_show(given)}" + (
            _example(field) if at_field else ""
        )
    return path, str(error["msg"])


_SECTION: dict[Any, str] = {}  # model -> how errors name it ("a column"), set below


def _field_name(owner: type[BaseModel] | None, field: FieldInfo) -> str | None:
    if owner is None:
        return None
    return next((name for name, f in owner.model_fields.items() if f is field), None)


def _walk(loc: tuple[Any, ...]) -> tuple[Any, FieldInfo | None, type[BaseModel] | None]:
    """The type at `loc` in the spec, the field it is in, and that field's model."""
    tp: Any = Workload
    field: FieldInfo | None = None
    owner: type[BaseModel] | None = None
    for part in loc:
        tp = _bare(tp)
        if isinstance(part, str) and part.startswith("<"):
            tp = next((a for a in _branches(tp) if _tag(a) == part), tp)
            continue
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            found = tp.model_fields.get(str(part))
            if found is None:
                return None, field, tp
            owner, field, tp = tp, found, _annotation(found)
            continue
        args = get_args(tp)
        origin = get_origin(tp)
        if origin is list and args:
            tp = args[0]
        elif origin is dict and args:
            tp = args[0] if part == "[key]" else args[1]
        elif origin is tuple and args and isinstance(part, int) and part < len(args):
            tp = args[part]
    return _bare(tp), field, owner


def _annotation(field: FieldInfo) -> Any:
    tp = field.annotation
    return Annotated[tuple([tp, *field.metadata])] if field.metadata else tp


def _bare(tp: Any) -> Any:
    """`X | None` as X; Annotated[X, ...] as X, but a tagged union stays whole."""
    while True:
        if get_origin(tp) is Annotated:
            inner, *meta = get_args(tp)
            if any(isinstance(m, Discriminator) for m in meta):
                return tp
            tp = inner
            continue
        args = [a for a in get_args(tp) if a is not type(None)]
        if _is_union(tp) and len(args) == 1:
            tp = args[0]
            continue
        return tp


def _is_union(tp: Any) -> bool:
    import types

    return get_origin(tp) in (Union, types.UnionType)


def _branches(tp: Any) -> list[Any]:
    if get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return list(get_args(tp)) if _is_union(tp) else [tp]


def _tag(tp: Any) -> str | None:
    if get_origin(tp) is Annotated:
        return next((m.tag for m in get_args(tp)[1:] if isinstance(m, Tag)), None)
    return None


def shape_of(field: FieldInfo) -> str:
    """How users write a field's value: its declared shape, or one read from its type."""
    extra = field.json_schema_extra
    given = extra.get("shape") if isinstance(extra, dict) else None
    return str(given) if given else shape(_annotation(field))


def shape(tp: Any) -> str:
    """A type as YAML users write it: `integer`, `[number, number]`, `{text: number}`,
    `{mean, std}` (a section's keys)."""
    tp = _bare(tp)
    if _tag(tp) is None and get_origin(tp) is Annotated:
        return shape(get_args(tp)[0])
    branches = _branches(tp)
    if len(branches) > 1:
        return " or ".join(shape(_bare(get_args(b)[0] if _tag(b) else b)) for b in branches)
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


def _example(field: FieldInfo | None) -> str:
    extra = field.json_schema_extra if field else None
    example = extra.get("example") if isinstance(extra, dict) else None
    return f" (e.g. `{example}`)" if example else ""


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and value >= 1 << 32 and value & (value - 1) == 0:
        return f"2^{value.bit_length() - 1}"
    return f"{value:,}" if isinstance(value, int) and abs(value) >= 10**6 else f"{value}"


def _show(value: Any) -> str:
    """A given value, short: what YAML read, in its own notation."""
    if isinstance(value, dict):
        text = "a mapping" if value else "an empty mapping"
    elif isinstance(value, list):
        text = f"a list of {len(value)}" if value else "an empty list"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "nothing (null)"
    else:
        text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


_SECTION.update(
    {
        Workload: "the top level",
        Table: "a table",
        Column: "a column",
        Operations: "operations",
        Chapter: "a storyline chapter",
        Mix: "mix",
        Sizes: "transaction_size",
        Keys: "keys",
        Hot: "hot",
        Hotspot: "hotspot",
        Normal: "normal",
        Zipf: "zipf",
        Faker: "faker",
        KeyUpdates: "key_updates",
        Dataset: "initial_from",
    }
)


# -- overrides (--set path=value) --------------------------------------------------------------

_DELETE = object()
_PART = re.compile(r"([A-Za-z0-9_$]+)|\[(\d+)\]")
_PATH = re.compile(r"[A-Za-z0-9_$]+(\[\d+\])*(\.[A-Za-z0-9_$]+(\[\d+\])*)*")


class Override:
    """One change to the spec's YAML data before it is read: `path` set to `value` (or the
    key removed), named in errors and locations by `label` (`--set operations.events=5`)."""

    def __init__(self, path: SpecPath, value: Any, label: str) -> None:
        self.path, self.value, self.label = path, value, label

    @classmethod
    def parse(cls, text: str) -> Override:
        """`--set path=value`: the path as the spec's errors print it, the value as YAML."""
        name, equals, value = text.partition("=")
        label = f"--set {text}"
        if not equals or not name.strip():
            raise SpecError("expected PATH=VALUE (e.g. operations.events=5000)", where=label)
        path = split_path(name.strip(), label)
        try:
            parsed = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError as e:
            raise SpecError(
                f"the value is not YAML: {getattr(e, 'problem', e)}", where=label
            ) from None
        return cls(path, parsed, f"--set {name.strip()}")

    @classmethod
    def remove(cls, path: SpecPath, label: str) -> Override:
        return cls(path, _DELETE, label)

    def apply(self, raw: Any, marks: dict[SpecPath, str]) -> Any:
        """`raw` with the change made (mappings on the way are made as needed); marks
        under the path now name this override."""
        if not self.path:
            raise SpecError("the path is empty", where=self.label)
        root = raw if raw is not None else {}
        node = root
        for depth, part in enumerate(self.path[:-1]):
            made = isinstance(node, dict) and node.get(part) is None
            node = self._step(node, part, self.path[: depth + 1], self.path[depth + 1])
            if made and self.value is not _DELETE:  # a mapping this override made: its own
                marks[self.path[: depth + 1]] = self.label
        last = self.path[-1]
        if self.value is _DELETE:
            if isinstance(node, dict):
                node.pop(last, None)
        elif isinstance(last, int):
            if not isinstance(node, list) or not -len(node) <= last < len(node):
                raise self._no_item(node, self.path)
            node[last] = self.value
        else:
            if not isinstance(node, dict):
                raise self._not_mapping(self.path[:-1])
            node[last] = self.value
        for key in [k for k in marks if k[: len(self.path)] == self.path]:
            del marks[key]
        if self.value is not _DELETE:
            marks[self.path] = self.label
        return root

    def _step(self, node: Any, part: str | int, path: SpecPath, following: str | int) -> Any:
        if isinstance(part, int):
            if not isinstance(node, list) or not -len(node) <= part < len(node):
                raise self._no_item(node, path)
            return node[part]
        if not isinstance(node, dict):
            raise self._not_mapping(path[:-1])
        if node.get(part) is None and self.value is not _DELETE:
            if isinstance(following, int):
                raise self._no_item(None, (*path, following))
            node[part] = {}
        return node.get(part, {})

    def _no_item(self, node: Any, path: SpecPath) -> SpecError:
        count = len(node) if isinstance(node, list) else 0
        items = f"{count} item{'s' if count != 1 else ''}"
        return SpecError(f"no such item: {dotted(path[:-1])} has {items}", path, self.label)

    def _not_mapping(self, path: SpecPath) -> SpecError:
        return SpecError("is not a mapping, so it has no keys to set", path, where=self.label)


def split_path(text: str, label: str) -> SpecPath:
    """`tables[0].columns.amount` as ("tables", 0, "columns", "amount")."""
    if not _PATH.fullmatch(text):
        raise SpecError(f"{text!r} is not a spec path (e.g. tables[0].columns.amount)", where=label)
    return tuple(
        int(m.group(2)) if m.group(2) is not None else m.group(1) for m in _PART.finditer(text)
    )
