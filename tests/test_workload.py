"""Synthetic workloads (generator/workload): the spec's errors name their path; the events
are deterministic, consistent (keys never collide, updates and deletes take live rows, old
images are the previous new images, references point at live rows, TSOs increase), and
exactly what the SQL engine captures when the same changes are run as SQL."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import support_random_sql as rs
from ticdc_sim.cli import app
from ticdc_sim.errors import SimError
from ticdc_sim.generator import capture
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.generator.workload import Generator, SpecError, check, load, parse
from ticdc_sim.generator.workload.run import primary_key
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.tso import physical_ms

CUSTOMERS = (
    "CREATE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR(40), city VARCHAR(30),"
    " joined DATETIME(3), vip TINYINT(1), score DOUBLE)"
)
ORDERS = (
    "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id BIGINT, amount DECIMAL(10,2),"
    " status ENUM('new','paid','shipped'), note TEXT, code CHAR(4), day DATE, blob_ VARBINARY(8),"
    " UNIQUE KEY uk_code (code))"
)


KINDS = (
    "CREATE TABLE kinds (k VARCHAR(20) PRIMARY KEY, ts TIMESTAMP(2) NULL, t TIME(1), y YEAR,"
    " j JSON, s SET('a','b','c'), b BIT(5), f FLOAT, u BIGINT UNSIGNED, m MEDIUMINT, c CHAR(3),"
    " bl BLOB, d DECIMAL(30,10), v VECTOR(3))"
)


def spec(**operations: Any) -> dict[str, Any]:
    return {
        "seed": 3,
        "tables": [
            {
                "ddl": CUSTOMERS,
                "rows": 20,
                "columns": {
                    "name": {"faker": "name"},
                    "city": {"faker": "city", "null_rate": 0.2},
                    "score": {"normal": {"mean": 50, "std": 10}},
                },
            },
            {
                "ddl": ORDERS,
                "rows": 50,
                "weight": 3,
                "columns": {
                    "customer_id": {"ref": "customers.id"},
                    "amount": {"uniform": [1, 500], "null_rate": 0.1},
                    "status": {"choice": {"new": 5, "paid": 3, "shipped": 2}},
                },
                "update": ["status", "amount", "note", "customer_id"],
            },
        ],
        "operations": {
            "events": 600,
            "mix": {"insert": 2, "update": 5, "delete": 1},
            "transaction_size": {"min": 1, "max": 6},
            "multi_table": 0.3,
            "keys": {"zipf": 1.2},
            "commit_rate": 5000,
        }
        | operations,
    }


def events(raw: dict[str, Any]) -> list[DDLEvent | RowChangedEvent]:
    return list(Generator(parse(raw)).events())


# -- the spec ------------------------------------------------------------------------------------


COLUMN_KEYS = (
    "faker, template, locale, unique, sequence, start, step, uniform, normal, zipf, choice,"
    " ref, length, null_rate, min, max"
)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda s: s["tables"][1]["columns"]["amount"].update(unifrom=[1, 2]),
            "tables[1].columns.amount.unifrom: unknown key; did you mean uniform? a column"
            f" takes {COLUMN_KEYS}",
        ),
        (
            lambda s: s["operations"].update(mix={"insert": 0, "update": 0}),
            "operations.mix: at least one operation needs a weight above 0",
        ),
        (
            lambda s: s["tables"][0].update(ddl_file="x.sql"),
            "tables[0]: give the table as `ddl` (inline) or `ddl_file`, one of them",
        ),
        (
            lambda s: s["tables"][0]["columns"]["name"].update(uniform=[1, 2]),
            "tables[0].columns.name: one generator a column, not faker and uniform",
        ),
        (
            lambda s: s.update(colour=1),
            "colour: unknown key; the top level takes seed, database, tables, operations,"
            " storyline, initial_batch",
        ),
        (
            lambda s: s["tables"][0].update(key_updates={"share": 0}),
            "tables[0].key_updates.share: must be above 0, not 0",
        ),
        (
            lambda s: s["operations"].update(transaction_size={"max": 3, "choice": {1: 1}}),
            "operations.transaction_size: `min`/`max` or `choice`, not both",
        ),
        (
            lambda s: s["operations"].update(transaction_size={"choice": {0: 1}}),
            "operations.transaction_size.choice: key 0: must be at least 1, not 0",
        ),
        (
            lambda s: s["tables"][0].update(rows=10**23),
            "tables[0].rows: must be at most 1,000,000,000,000,000, not 100000000000000000000000",
        ),
        (
            lambda s: s["operations"].update(events=None, duration_s=float("inf")),
            "operations.duration_s: must be a finite number, not inf",
        ),
        (
            lambda s: s["operations"].update(events=None, duration_s=1e15),
            "operations.duration_s: 1e+15 s at commit_rate 5000 is more than"
            " 1,000,000,000,000,000 transactions",
        ),
        (
            lambda s: s["operations"].update(commit_rate=1e-9),
            "operations.commit_rate: must be at least 0.001, not 1e-09",
        ),
        (
            lambda s: s["tables"][1]["columns"].update(status={"choice": {}}),
            "tables[1].columns.status.choice: needs at least 1 item"
            " (e.g. `status: {choice: {new: 5, paid: 3, shipped: 2}}`)",
        ),
        (
            lambda s: s["tables"][1]["columns"].update(amount={"uniform": 5}),
            "tables[1].columns.amount.uniform: expected [low, high], not 5"
            " (e.g. `amount: {uniform: [1, 500]}`)",
        ),
        (
            lambda s: s["operations"].update(keys="zipf"),
            "operations.keys: expected {uniform, zipf, hotspot, hot}, not 'zipf'"
            " (e.g. `keys: {zipf: 1.1}`)",
        ),
    ],
)
def test_spec_errors_name_their_path(change: Any, message: str) -> None:
    """In the spec's words: the option's path, its shape and an example, what was given."""
    raw = spec()
    change(raw)
    with pytest.raises(SpecError) as error:
        parse(raw, "w.yaml")
    assert str(error.value) == f"w.yaml: {message}"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda s: s["tables"][0]["columns"].update(id={"faker": "name"}),
            "tables[0].columns.id: a drawn value 'Rebecca Turner' does not fit: Incorrect"
            " integer value: 'Rebecca Turner' for column 'id'",
        ),
        (
            lambda s: s["tables"][1]["columns"].update(code={"choice": ["a"]}),
            "tables[1].columns.code: choice gave no new value for row 2 in 100 draws (1 distinct"
            " so far): too few for this run's rows, which must not repeat; a template with {row}"
            ' (e.g. "{first_name}{row}") never runs out',
        ),
        (
            lambda s: s["tables"][1].update(update=["id"]),
            "tables[1].update: key columns change by `key_updates` only (with fresh values, so"
            " keys never collide)",
        ),
        (
            lambda s: s["tables"][1].update(key_updates={"share": 0.1, "columns": ["amount"]}),
            "tables[1].key_updates.columns: amount is not a primary or unique key column of orders",
        ),
        (
            lambda s: s["tables"][0].update(key_updates={"share": 0.1}),
            "tables[1].columns.customer_id.ref: customers's key_updates change id; references to"
            " such keys are not simulated yet",
        ),
        (
            lambda s: s["tables"][1]["columns"].update(nope={}),
            "tables[1].columns.nope: orders has no such column",
        ),
        (
            lambda s: s["tables"][1]["columns"].update(customer_id={"ref": "customers.name"}),
            "tables[1].columns.customer_id.ref: customers.name is not the one-column primary key"
            " of a table here",
        ),
        (
            lambda s: s["tables"][0].update(ddl="CREATE TABLE nokey (a INT)", columns={}),
            "tables[0]: nokey needs a primary key (the rows' identity)",
        ),
        (
            lambda s: s["tables"][0].update(ddl="CREATE TABLE bad (a INT"),
            "tables[0].ddl: line 1 column 23: ERROR 1064 (42000): You have an error in your SQL"
            " syntax; check the manual that corresponds to your TiDB version for the right syntax"
            ' to use line 1 column 23 near "INT" (Expecting ))',
        ),
        (
            lambda s: s["tables"][1]["columns"].update(amount={"uniform": [1e12, 1e13]}),
            "tables[1].columns.amount: a drawn value 5.2357e+12 does not fit: Out of range value"
            " for column 'amount'",
        ),
        (
            lambda s: s["tables"][0]["columns"].update(city={"faker": "paragraph"}),
            "tables[0].columns.city: a drawn value 'Book single decade church station two. Baby"
            " move dark stop which.' does not fit: Data too long for column 'city' (`length:"
            " [min, max]` cuts drawn strings to max characters)",
        ),
        (  # issue 25: a table entry that drops its own table
            lambda s: s["tables"][0].update(ddl=CUSTOMERS + "; DROP TABLE customers"),
            "tables[0].ddl: DROP TABLE `test`.`customers` leaves no table customers, which tables[0]"
            " creates; DDL during the run goes in the storyline",
        ),
        (
            lambda s: s["tables"][1].update(ddl=ORDERS + "; DROP TABLE customers"),
            "tables[1].ddl: DROP TABLE `test`.`customers` leaves no table customers, which tables[0]"
            " creates; DDL during the run goes in the storyline",
        ),
        (
            lambda s: s["tables"][0].update(
                ddl=CUSTOMERS + "; INSERT INTO customers (id) VALUES (1)"
            ),
            "tables[0].ddl: writes rows (customers): a table's `ddl` creates it; its rows come"
            " from `rows` or `initial_from`",
        ),
        (
            lambda s: s["tables"][0].update(
                ddl=CUSTOMERS + "; CREATE TABLE extra (id INT PRIMARY KEY)"
            ),
            "tables[0].ddl: 2 CREATE TABLE statements: an entry of `tables` is one table",
        ),
        (
            lambda s: s["tables"][0].update(ddl="CREATE DATABASE x"),
            "tables[0].ddl: 0 CREATE TABLE statements: an entry of `tables` is one table",
        ),
        (
            lambda s: (
                s["tables"][0]["columns"].update(city={"null_rate": 0.1, "faker": "city"})
                or s["tables"][0].update(
                    ddl=CUSTOMERS.replace("city VARCHAR(30)", "city VARCHAR(30) NOT NULL")
                )
            ),
            "tables[0].columns.city.null_rate: customers.city is NOT NULL: its values are never NULL",
        ),
        (
            lambda s: s["tables"][1]["columns"].update(code={"ref": "customers.id"}),
            "tables[1].columns.code.ref: a primary or unique key column cannot be a reference: its"
            " values must never repeat",
        ),
        (
            lambda s: (
                s["tables"][0]["columns"].update(city={"faker": "city", "unique": True})
                or s["tables"][0].update(update=["city"])
            ),
            "tables[0].update: city is `unique`: its values are written by inserts only (a unique"
            " value is drawn once a row)",
        ),
        (
            lambda s: s["tables"][0]["columns"].update(Name={"faker": "name"}),
            "tables[0].columns.Name: given twice (as name too)",
        ),
    ],
)
def test_tables_and_columns_are_checked(change: Any, message: str) -> None:
    raw = spec()
    change(raw)
    with pytest.raises(SpecError) as error:
        events(raw)
    assert str(error.value) == message


SHOP = {
    "seed": 4,
    "tables": [
        {
            "ddl": "CREATE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR(40),"
            " email VARCHAR(80), city VARCHAR(40), UNIQUE KEY (email))",
            "rows": 50,
            "keys": {"hot": {"count": 1, "share": 0.3}},
            "columns": {
                "name": {"faker": "name"},
                "email": {"template": "{first_name}.{last_name}{row}@example.com"},
                "city": {"faker": "city", "unique": True},
            },
            "update": ["name"],
        },
        {
            "ddl": "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id BIGINT, amount INT,"
            " mail VARCHAR(60), UNIQUE KEY (mail))",
            "rows": 100,
            "weight": 3,
            "columns": {"customer_id": {"ref": "customers.id"}, "mail": {"faker": "email"}},
            "update": ["amount", "customer_id"],
        },
    ],
    "operations": {
        "events": 3000,
        "mix": {"insert": 2, "update": 5, "delete": 2},
        "transaction_size": {"min": 1, "max": 4},
        "multi_table": 0.3,
    },
}


def test_unique_values_from_faker_and_templates() -> None:
    """Issue 25: a UNIQUE column takes Faker's values (made distinct, row by row, with seeds
    of their own), a template makes them from providers and the row's number, `unique:
    true` keeps a plain column distinct; the SQL engine, which checks unique keys, agrees."""
    stream = events(SHOP)
    assert stream == events(SHOP)
    rows = [e for e in stream if isinstance(e, RowChangedEvent)]
    customers = [e.columns for e in rows if e.table.name == "customers" and e.kind == "insert"]
    for image in customers:  # the template: the row's number is its id (both from 1)
        assert image is not None
        assert re.fullmatch(rf"[A-Z][A-Za-z']+\.[A-Z][A-Za-z'-]+{image[0]}@example\.com", image[2])
    cities = [image[3] for image in customers if image is not None]
    assert len(set(cities)) == len(cities) and all(" " in c or c.isalpha() for c in cities)
    mails = [e.columns[3] for e in rows if e.table.name == "orders" and e.kind == "insert"]  # type: ignore[index]
    assert len(set(mails)) == len(mails) and all(re.fullmatch(r"[\w.]+@[\w.]+", m) for m in mails)
    assert_engine_agrees(stream, 2)


def test_hot_keys_are_a_fixed_set() -> None:
    """Issue 25: `keys: {hot: {count: 1, share: 0.3}}`: the first customer (a celebrity)
    takes ~30% of the customers' updates and of the orders' references to customers, and
    no delete (retention takes the oldest rows) takes it."""
    rows = [e for e in events(SHOP) if isinstance(e, RowChangedEvent)]
    refs = Counter(e.columns[1] for e in rows if e.table.name == "orders" and e.kind == "insert")  # type: ignore[index]
    updates = Counter(
        e.columns[0] for e in rows if e.table.name == "customers" and e.kind == "update"
    )  # type: ignore[index]
    deleted = {e.pre_columns[0] for e in rows if e.table.name == "customers" and e.kind == "delete"}  # type: ignore[index]
    assert refs.most_common(1)[0][0] == 1 and 0.24 < refs[1] / refs.total() < 0.36
    assert updates.most_common(1)[0][0] == 1 and 0.22 < updates[1] / updates.total() < 0.36
    assert len(deleted) > 100 and 1 not in deleted and min(deleted) == 2


def test_after_truncate_the_hot_rows_are_the_next_ones() -> None:
    raw = {**SHOP, "storyline": [{"at_event": 1500, "ddl": "TRUNCATE TABLE customers"}]}
    stream = events(raw)
    cut = next(
        i
        for i, e in enumerate(stream)
        if isinstance(e, DDLEvent) and e.action == ActionType.TRUNCATE_TABLE
    )
    after = [
        e for e in stream[cut:] if isinstance(e, RowChangedEvent) and e.table.name == "customers"
    ]
    first = next(e.columns[0] for e in after if e.kind == "insert")  # type: ignore[index]
    updates = Counter(e.columns[0] for e in after if e.kind == "update")  # type: ignore[index]
    assert updates.most_common(1)[0][0] == first
    assert first not in {e.pre_columns[0] for e in after if e.kind == "delete"}  # type: ignore[index]
    assert_engine_agrees(stream, 2)


def test_distinct_values_that_run_out_are_an_error() -> None:
    raw = spec()
    raw["tables"][0]["ddl"] = CUSTOMERS.replace("city VARCHAR(30)", "city VARCHAR(30) UNIQUE")
    raw["tables"][0]["columns"]["city"] = {"faker": "day_of_week"}
    with pytest.raises(SpecError) as error:
        events(raw)
    assert str(error.value) == (
        "tables[0].columns.city: faker day_of_week gave no new value for row 8 in 100 draws (7"
        " distinct so far): too few for this run's rows, which must not repeat; a template with"
        ' {row} (e.g. "{first_name}{row}") never runs out'
    )


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (
            {"template": "{first_name}.{lastname}@x.org"},
            "name.template: Faker has no provider 'lastname' in locale en_US; did you mean"
            " last_name?",
        ),
        (
            {"template": "{first_name"},
            "name.template: expected '}' before end of string in '{first_name' (write {{ and }}"
            " for braces)",
        ),
        (
            {"template": "{row.__class__}"},
            "name.template: {row.__class__} is not a placeholder: {provider}, {row} or {row:06d}",
        ),
        (
            {"template": "{row:q}"},
            "name.template: {row:q}: Unknown format code 'q' for object of type 'int'",
        ),
        (
            {"template": "plain"},
            "name.template: no placeholder; for a constant, write `choice: [the text]`",
        ),
        ({"faker": "name", "locale": "xx_YY"}, "name.locale: Faker has no locale 'xx_YY'"),
        (
            {"faker": "emial"},
            "name.faker: Faker has no provider 'emial' in locale en_US; did you mean email?",
        ),
        (
            {"ref": "customers.id", "unique": True},
            "name: a reference cannot be unique: it points at rows that exist",
        ),
    ],
)
def test_templates_and_providers_are_checked_at_load(column: dict[str, Any], message: str) -> None:
    raw = spec()
    raw["tables"][0]["columns"]["name"] = column
    with pytest.raises(SpecError) as error:
        parse(raw, "w.yaml")
    assert str(error.value) == f"w.yaml: tables[0].columns.{message}"


def test_commit_ts_stay_within_a_tso() -> None:
    generator = Generator(parse(spec(commit_rate=0.001)))
    assert generator.commit_ts(10**6)[0] < 1 << 64
    with pytest.raises(SimError, match="past what a TSO's 46-bit physical time holds"):
        generator.commit_ts(10**8)


def test_a_key_column_too_small_for_the_initial_rows_is_refused_at_once() -> None:
    """Checked when the generator is built (3 billion rows are never drawn)."""
    raw = spec()
    raw["tables"][0].update(ddl=CUSTOMERS.replace("id BIGINT", "id INT"), rows=3_000_000_000)
    with pytest.raises(
        SpecError, match=r"^tables\[0\].columns.id: key 3000000000 is more than the column holds"
    ):
        Generator(parse(raw))


@pytest.mark.parametrize(
    ("chapter", "message"),
    [
        (
            {"ddl": "ALTER TABLE orders MODIFY COLUMN note VARCHAR(5)"},
            "storyline[0].ddl: changes the type of orders.note; not simulated",
        ),
        (
            {"ddl": "ALTER TABLE orders ADD COLUMN x INT", "update": ["status", "x"]},
            "storyline[0].update: customer_id leaves the columns updates write; only columns"
            " this DDL adds may join (each column of a row is at the version of the last update"
            " that wrote it)",
        ),
        (
            {"ddl": "INSERT INTO orders (id) VALUES (99999)"},
            "storyline[0].ddl: a storyline DDL changes schemas, not rows",
        ),
        (
            {"ddl": "ALTER TABLE nowhere ADD COLUMN x INT"},
            "storyline[0].ddl: line 1 column 1: ERROR 1146 (42S02): Table 'test.nowhere'"
            " doesn't exist",
        ),
        (
            {"ddl": "DROP TABLE customers"},
            "storyline[0].ddl: orders.customer_id takes `ref:` keys of customers, and after this"
            " DDL there is no table customers (a reference names its table; dropping or renaming"
            " it is not simulated)",
        ),
        (
            {"ddl": "RENAME TABLE customers TO people"},
            "storyline[0].ddl: orders.customer_id takes `ref:` keys of customers, and after this"
            " DDL there is no table customers (a reference names its table; dropping or renaming"
            " it is not simulated)",
        ),
        (
            {"ddl": "ALTER TABLE orders ADD UNIQUE KEY uk_status (status)"},
            "storyline[0].ddl: makes orders.status a key column, but its values were not drawn"
            " to be distinct (TiDB would refuse the DDL over a duplicate); declare the key in the"
            " table's ddl",
        ),
        (
            {
                "ddl": "ALTER TABLE orders ADD COLUMN tag INT",
                "columns": {"status": {"choice": ["x"]}},
            },
            "storyline[0].columns.status: orders.status is there before this DDL: its values stay"
            " drawn as before (only columns the DDL adds take generators here)",
        ),
        (  # issue 25: past the run's end, found by the walk of the schedule
            {"at_event": None, "at_time_s": 1000, "ddl": "ALTER TABLE orders ADD COLUMN x INT"},
            "storyline[0].at_time_s: at_time_s 1000 is past the run's end (600 events, 0.0336"
            " simulated seconds): the chapter would never run",
        ),
    ],
)
def test_storyline_chapters_are_checked(chapter: dict[str, Any], message: str) -> None:
    raw = spec()
    raw["storyline"] = [{"at_event": 10} | chapter]
    with pytest.raises(SpecError) as error:
        events(raw)
    assert str(error.value) == message


@pytest.mark.parametrize(
    ("operations", "chapters", "message"),
    [
        (
            {"events": 100},
            [{"at_event": 5000}],
            "storyline[0].at_event: at_event 5000 is past the run's end (operations.events: 100);"
            " a chapter runs before an operation event",
        ),
        (
            {"events": 100},
            [{"at_event": 100}],
            "storyline[0].at_event: at_event 100 is past the run's end (operations.events: 100);"
            " a chapter runs before an operation event",
        ),
        (
            {"events": None, "duration_s": 2},
            [{"at_time_s": 2}],
            "storyline[0].at_time_s: at_time_s 2 is past the run's end (operations.duration_s: 2)",
        ),
        (
            {"events": None},
            [{"at_event": 0}],
            "storyline[0]: the run has no operations (operations.events or duration_s), so no"
            " chapter would run",
        ),
        (
            {"events": 100},
            [{"at_event": 50}, {"at_event": 20}],
            "storyline[1].at_event: at_event 20 is before the chapter above's (50): chapters run"
            " in order",
        ),
    ],
)
def test_a_chapter_past_the_end_is_a_spec_error(
    operations: dict[str, Any], chapters: list[dict[str, Any]], message: str
) -> None:
    """Issue 25: a storyline step the run never reaches was silently ignored."""
    raw = spec(**operations)
    raw["storyline"] = [{"ddl": "ALTER TABLE orders ADD COLUMN x INT"} | c for c in chapters]
    with pytest.raises(SpecError) as error:
        parse(raw, "w.yaml")
    assert str(error.value) == f"w.yaml: {message}"


def test_a_bad_chapter_is_found_before_any_record_is_written(tmp_path: Path) -> None:
    raw = spec()
    raw["storyline"] = [{"at_event": 500, "ddl": "ALTER TABLE orders MODIFY note VARCHAR(5)"}]
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    out = tmp_path / "out"
    uri = f"jsonl://{out}?protocol=canal-json"
    args = ["generate", "--workload", str(path), "--sink-uri", uri, "--no-progress"]
    result = CliRunner().invoke(app, args)
    line = _line_of(path, "ddl: ALTER TABLE orders MODIFY")
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {path}:{line}:8: storyline[0].ddl: changes the type of orders.note; not simulated\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.yaml"]  # no DIR, no DIR.partial


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_after_truncate_a_table_has_new_rows_only() -> None:
    """TRUNCATE TABLE (a new table id in TiDB) leaves no rows: later updates and deletes
    take rows inserted after it, and no key comes back."""
    raw = spec()
    raw["storyline"] = [{"at_event": 300, "ddl": "TRUNCATE TABLE orders"}]
    before: set[Any] = set()
    born: set[Any] = set()
    seen, new_id = {"insert": 0, "update": 0, "delete": 0}, None
    for event in events(raw):
        if isinstance(event, DDLEvent) and event.action == ActionType.TRUNCATE_TABLE:
            assert event.table_info is not None and event.pre_table_info is not None
            new_id = event.table_info.id
            assert new_id != event.pre_table_info.id
            continue
        if not isinstance(event, RowChangedEvent) or event.table.name != "orders":
            continue
        key = (event.columns or event.pre_columns or ())[0]
        if new_id is None:
            before.add(key)
            continue
        assert event.table.id == new_id
        kind = "insert" if event.pre_columns is None else "update"
        kind = "delete" if event.columns is None else kind
        seen[kind] += 1
        if kind == "insert":
            assert key not in before
            born.add(key)
        else:
            assert key in born, f"{kind} of {key}, a row from before the TRUNCATE"
    assert new_id is not None and seen["insert"] and seen["update"] and seen["delete"]


def test_a_yaml_error_is_located(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("seed: 1\ntables: [\n  {ddl: x\n")
    with pytest.raises(SpecError) as error:
        load(path)
    assert str(error.value) == f"{path}:4:1: not YAML: expected ',' or '}}', but got '<stream end>'"


# -- the events ----------------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_events() -> None:
    assert events(spec()) == events(spec())
    other = spec()
    other["seed"] = 4
    assert events(other) != events(spec())


def test_changes_are_consistent() -> None:
    """Replayed into a model of the tables: every insert is of a new key, every update and
    delete of a live row whose image is the event's old image; references are live when
    written; commit ts are valid TSOs, strictly increasing by transaction."""
    stream = events(spec())
    tables: dict[str, dict[Any, tuple[Any, ...]]] = {"customers": {}, "orders": {}}
    unique_codes: dict[str, Any] = {}
    last_ts = 0
    kinds: Counter[str] = Counter()
    for commit_ts, group in itertools.groupby(stream, key=lambda e: e.commit_ts):
        assert commit_ts > last_ts and physical_ms(commit_ts) > 0
        last_ts = commit_ts
        customers_before = set(tables["customers"])
        for event in group:
            if isinstance(event, DDLEvent):
                continue
            assert event.start_ts < event.commit_ts
            rows = tables[event.table.name]
            kinds[event.kind] += 1
            if event.pre_columns is not None:
                key = event.pre_columns[0]
                assert rows.get(key) == event.pre_columns, f"old image of {key} is not the row"
                del rows[key]
            if event.columns is not None:
                key = event.columns[0]
                assert key not in rows, f"key {key} collides"
                rows[key] = event.columns
                if event.table.name == "orders":
                    code = event.columns[5]
                    assert unique_codes.setdefault(code, key) == key, "unique key collides"
                    ref = event.columns[1]
                    live = customers_before | set(tables["customers"])
                    assert ref is None or ref in live, f"customer {ref} was not live"
    assert kinds["insert"] and kinds["update"] and kinds["delete"]


def test_length_cuts_faker_strings_and_sizes_follow_their_weights() -> None:
    raw = spec(transaction_size={"choice": {1: 3, 5: 1}}, multi_table=0, events=2000)
    raw["tables"][0]["columns"]["city"] = {"faker": "paragraph", "length": [1, 30]}
    stream = events(raw)
    cities = [
        e.columns[2]
        for e in stream
        if isinstance(e, RowChangedEvent) and e.table.name == "customers" and e.columns
    ]  # type: ignore[index]
    assert cities and max(map(len, cities)) == 30
    sizes = Counter(
        len(list(g))
        for _, g in itertools.groupby(
            stream[72:], key=lambda e: e.commit_ts
        )  # after the initial rows
    )
    assert set(sizes) <= {1, 2, 3, 4, 5}  # folding makes a five a little smaller at times
    assert 2 < sizes[1] / sum(n for k, n in sizes.items() if k > 1) < 4.5


def test_the_mix_and_the_key_distribution() -> None:
    raw = spec(
        events=6000,
        transaction_size={"min": 1, "max": 1},
        keys={"hotspot": {"keys": 0.05, "share": 0.8}},
        multi_table=0,
    )
    raw["tables"][1]["update"] = ["status", "amount", "note"]
    stream = [e for e in events(raw) if isinstance(e, RowChangedEvent)][
        70:
    ]  # after the initial rows
    kinds = Counter(e.kind for e in stream)
    total = sum(kinds.values())
    assert (
        abs(kinds["insert"] / total - 2 / 8) < 0.05 and abs(kinds["delete"] / total - 1 / 8) < 0.03
    )
    tables = Counter(e.table.name for e in stream)
    assert abs(tables["orders"] / total - 0.75) < 0.05


@pytest.mark.parametrize("storyline", [False, True], ids=["plain", "storyline"])
def test_the_sql_engine_captures_the_same_changes(storyline: bool) -> None:
    """The generated changes, run as SQL transactions through the engine (with the
    storyline's DDL where it came): the same row events (images, kinds, order within each
    transaction). The values are what TiDB stores; rows from before an added column hold
    its default, as TiDB backfills it."""
    raw = spec(events=400)
    raw["tables"].append(
        {"ddl": KINDS, "rows": 30, "weight": 2, "columns": {"f": {"uniform": [-5.5, 5.5]}}}
    )
    if storyline:
        raw["storyline"] = [
            {
                "at_event": 120,
                "ddl": "ALTER TABLE orders ADD COLUMN coupon VARCHAR(12) DEFAULT 'none'",
                "columns": {"coupon": {"choice": ["SPRING", "VIP"]}},
                "update": ["status", "amount", "note", "customer_id", "coupon"],
            },
            {"at_time_s": 0.02, "ddl": "ALTER TABLE customers DROP COLUMN score"},
            {"at_event": 300, "ddl": "ALTER TABLE kinds ADD COLUMN n INT NOT NULL"},
        ]
    stream = events(raw)
    ddl = [e for e in stream if isinstance(e, DDLEvent)]
    assert_engine_agrees(stream, len(raw["tables"]))
    assert len(ddl) == (6 if storyline else 3)
    if storyline:
        coupons = Counter(
            image[-1]
            for e in stream
            if isinstance(e, RowChangedEvent) and e.table.name == "orders"
            for image in (e.pre_columns, e.columns)
            if image is not None and len(image) == 9
        )
        assert coupons["none"] and (coupons["SPRING"] or coupons["VIP"])


def assert_engine_agrees(
    stream: list[DDLEvent | RowChangedEvent],
    tables: int,
    expected: list[DDLEvent | RowChangedEvent] | None = None,
    capture_settings: dict[str, bool] | None = None,
) -> None:
    """The stream's changes, run as SQL through the engine (its first `tables` DDL as the
    schema, later DDL where they came, each transaction between BEGIN and COMMIT), give the
    same row events: kinds, images, row ids, order within each transaction. `expected`:
    the events to compare with instead (the same run captured under `capture_settings`,
    where the stream, as TiKV records it, is what the SQL is written from)."""
    stamps = [e.commit_ts for e in stream]
    assert stamps == sorted(stamps)
    script = [f"{e.query};" for e in stream[:tables] if isinstance(e, DDLEvent)]
    for key, group in itertools.groupby(stream[tables:], key=lambda e: (e.commit_ts, type(e))):
        if key[1] is DDLEvent:
            script += [f"{e.query};" for e in group if isinstance(e, DDLEvent)]
            continue
        changes = [e for e in group if isinstance(e, RowChangedEvent)]
        script.append("BEGIN;")
        script += _statements(changes)
        script.append("COMMIT;")
    engine = Engine()
    upstream = engine.run(split_script([line + "\n" for line in script], "w.sql"))
    captured = [
        e
        for e in capture.captured(upstream, **(capture_settings or {}))
        if isinstance(e, RowChangedEvent)
    ]
    want_events = [e for e in (expected or stream)[tables:] if isinstance(e, RowChangedEvent)]
    assert _by_txn(captured) == _by_txn(want_events)


def _by_txn(events: list[RowChangedEvent]) -> list[list[tuple[Any, ...]]]:
    return [
        [(e.kind, e.table.name, e.pre_columns, e.columns, e.row_id) for e in g]
        for _, g in itertools.groupby(events, key=lambda e: e.commit_ts)
    ]


def _statements(changes: list[RowChangedEvent]) -> list[str]:
    """A transaction's events as SQL; a delete and an insert of one row (the split of an
    update that changed a key: the same `_tidb_rowid` or integer handle) as that UPDATE."""
    inserts = {(e.table.name, e.row_id): e for e in changes if e.kind == "insert" and e.row_id != 0}
    paired = set()
    out = []
    for e in changes:
        insert = inserts.get((e.table.name, e.row_id)) if e.kind == "delete" else None
        if insert is not None:
            paired.add(id(insert))
            out.append(_statement(e._replace(columns=insert.columns)))
        elif id(e) not in paired:
            out.append(_statement(e))
    return out


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
    if isinstance(value, float):
        return repr(value)
    assert isinstance(value, int | Decimal)
    return str(value)


def _statement(event: RowChangedEvent) -> str:
    info = event.table
    names = [c.name for c in info.columns]
    if event.kind == "insert":
        assert event.columns is not None
        return f"INSERT INTO {info.name} VALUES ({', '.join(map(_literal, event.columns))});"
    assert event.pre_columns is not None
    old = event.pre_columns
    where = " AND ".join(f"`{names[i]}` = {_literal(old[i])}" for i in primary_key(info))
    if event.columns is None:
        return f"DELETE FROM {info.name} WHERE {where};"
    assert event.columns is not None
    sets = ", ".join(f"`{n}` = {_literal(v)}" for n, v in zip(names, event.columns, strict=True))
    return f"UPDATE {info.name} SET {sets} WHERE {where};"


@settings(
    max_examples=30,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(st.data())
def test_random_schemas_and_generators(data: st.DataObject) -> None:
    """Random tables (the differential tests' menu of types and keys) with random column
    generators and operations: the run either refuses the spec with a SpecError of a known
    limit, or its events are what the SQL engine captures for the same changes."""
    table, create = data.draw(rs.tables("t"), label="table")
    columns: dict[str, Any] = {}
    keys = set(table.pk) | set(table.unique)
    for name, tp in table.columns:
        if name in keys:
            continue
        form = data.draw(st.sampled_from(["default", "nulls", "choice", "uniform"]), label=name)
        if form == "nulls":
            columns[name] = {"null_rate": 0.3}
        elif form == "choice" and tp.kind == "string":
            columns[name] = {"choice": {"a": 2, "b c": 1, "": 1}}
        elif form == "choice" and tp.kind == "enum":
            columns[name] = {"choice": list(rs.ENUM_MEMBERS)}
        elif form == "uniform" and tp.kind in ("int", "uint", "decimal", "double"):
            columns[name] = {"uniform": [0, 100]}
    mix = data.draw(
        st.sampled_from(
            [
                {"insert": 1, "update": 1, "delete": 1},
                {"update": 1},
                {"insert": 1},
                {"insert": 1, "delete": 2},
            ]
        )
    )
    raw = {
        "seed": data.draw(st.integers(0, 9), label="seed"),
        "tables": [
            {"ddl": create, "rows": data.draw(st.integers(0, 12), label="rows"), "columns": columns}
        ],
        "operations": {
            "events": data.draw(st.integers(0, 120), label="events"),
            "mix": mix,
            "transaction_size": {"min": 1, "max": data.draw(st.integers(1, 6), label="size")},
            "keys": data.draw(
                st.sampled_from(
                    [{"uniform": True}, {"zipf": 0.8}, {"hotspot": {"keys": 0.2, "share": 0.7}}]
                )
            ),
            "commit_rate": data.draw(st.sampled_from([1, 700, 50_000])),
        },
    }
    note(repr(raw))
    try:
        stream = events(raw)
    except SpecError as e:
        assert "gave no new value" in str(e) or "too many rows" in str(e), str(e)
        return
    assert_engine_agrees(stream, 1)


# -- the reference -------------------------------------------------------------------------------

DOCS = Path(__file__).parents[1] / "docs" / "workload-spec.md"


def test_the_reference_is_rendered_from_the_models() -> None:
    """docs/workload-spec.md is what `ticdc-sim workload-spec` prints: no option can be
    added, changed or dropped without the reference saying so."""
    from ticdc_sim.generator.workload.reference import render

    assert DOCS.read_text() == render(), "run `make docs` (ticdc-sim workload-spec)"
    result = CliRunner().invoke(app, ["workload-spec"])
    assert result.exit_code == 0 and result.stdout == render()


# where each kind of example goes: two tables that have the columns the examples name
REFERENCE_BASE: dict[str, Any] = {
    "seed": 1,
    "tables": [
        {
            "ddl": "CREATE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR(40),"
            " email VARCHAR(80), city VARCHAR(40), score DOUBLE, visits INT, note TEXT,"
            " UNIQUE KEY (email))",
            "rows": 20,
            "update": ["name"],
        },
        {
            "ddl": "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id BIGINT,"
            " amount DECIMAL(10,2), status VARCHAR(10), note TEXT)",
            "rows": 20,
            "weight": 2,
        },
    ],
    "operations": {"events": 1000, "mix": {"insert": 2, "update": 5, "delete": 1}},
}
CHAPTER_BASE = {
    "at_event": 500,
    "ddl": "ALTER TABLE customers ADD COLUMN tier VARCHAR(8) DEFAULT 'basic'",
}


def _with_example(home: str, example: str, directory: Path) -> dict[str, Any]:
    """The base spec with one option's example where its section sits (files it names
    written beside the spec)."""
    import copy

    raw = copy.deepcopy(REFERENCE_BASE)
    value = yaml.safe_load(example)
    if home == "root":
        raw.update(value)
    elif home == "table":
        table = raw["tables"][1 if "initial_from" in value else 0]
        if "ddl" in value or "ddl_file" in value:
            (directory / "customers.sql").write_text(table.pop("ddl"))
            table.pop("update")
        if "initial_from" in value:
            table.pop("rows")
            name = directory / value["initial_from"]["path"]
            name.write_text("id,amount,status\n5,9.5,new\n8,12,paid\n")
            if name.suffix == ".parquet":
                import pyarrow.csv as pacsv
                import pyarrow.parquet as pq

                pq.write_table(pacsv.read_csv(name), name)
        table.update(value)
    elif home == "column":
        [(name, column)] = value.items()
        table = next(t for t in raw["tables"] if re.search(rf"[(,] ?{name} ", t["ddl"]))
        table.setdefault("columns", {})[name] = column
    elif home == "operations":
        raw["operations"].update(value)
        if "duration_s" in value:
            raw["operations"].pop("events")
    else:
        chapter = CHAPTER_BASE | value
        if "at_time_s" in value:
            chapter.pop("at_event")
        raw["storyline"] = [chapter]
    return raw


def _reference_examples() -> list[Any]:
    from ticdc_sim.generator.workload.reference import examples

    return [
        pytest.param(section.home, example, id=f"{section.where}.{name}")
        for section, name, example in examples()
    ]


@pytest.mark.parametrize(("home", "example"), _reference_examples())
def test_every_example_of_the_reference_runs(tmp_path: Path, home: str, example: str) -> None:
    """Each option's example, in a spec as its section says: read, checked, and its first
    events generated (storyline chapters included)."""
    assert example, "an option without an example"
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(_with_example(home, example, tmp_path), sort_keys=False))
    from ticdc_sim.datasets import read_datasets

    loaded = load(path)
    stream = list(itertools.islice(Generator(loaded, read_datasets(loaded)).events(), 1200))
    assert any(isinstance(e, RowChangedEvent) for e in stream)
    if home == "chapter":
        assert sum(isinstance(e, DDLEvent) for e in stream) == 3  # 2 tables, then its DDL


@pytest.mark.parametrize(
    "path", sorted((Path(__file__).parents[1] / "examples").glob("*.yaml")), ids=lambda p: p.name
)
def test_the_example_specs_run(path: Path) -> None:
    spec = load(path)
    check(spec)
    stream = list(itertools.islice(Generator(spec).events(), 3000))
    assert sum(isinstance(e, RowChangedEvent) for e in stream) > 2000


def test_the_reference_s_whole_spec_runs() -> None:
    from ticdc_sim.generator.workload.spec import EXAMPLE

    stream = list(itertools.islice(Generator(parse(yaml.safe_load(EXAMPLE))).events(), 7000))
    assert sum(isinstance(e, RowChangedEvent) for e in stream) > 6000


# -- the command ---------------------------------------------------------------------------------


def test_generate_writes_the_same_bytes_every_time(tmp_path: Path) -> None:

    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(spec()))
    outputs = []
    for run in range(2):
        out = tmp_path / f"out{run}"
        uri = f"jsonl://{out}?protocol=canal-json&enable-tidb-extension=true&partition-num=3"
        result = CliRunner().invoke(
            app, ["generate", "--workload", str(path), "--sink-uri", uri, "--no-progress"]
        )
        assert result.exit_code == 0, result.output
        outputs.append({p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()})
    assert outputs[0] == outputs[1] and len(outputs[0]) == 3
    preview = CliRunner().invoke(app, ["generate", "--workload", str(path), "--preview", "4"])
    assert preview.exit_code == 0 and len(preview.stdout.splitlines()) == 4
    # with a changefeed: what a consumer decodes of the records it would send (none sent)
    uri = "kafka://127.0.0.1:1/shop?protocol=open-protocol&partition-num=2"
    args = ["generate", "--workload", str(path), "--preview", "30", "--sink-uri", uri]
    decoded = [orjson.loads(line) for line in CliRunner().invoke(app, args).stdout.splitlines()]
    assert len(decoded) == 30 and decoded[0]["type"] == "ddl"
    assert {d["topic"] for d in decoded} == {"shop"} and {d["partition"] for d in decoded} == {0, 1}
    assert any(d["type"] == "insert" and d["columns"]["id"] for d in decoded)
    bad = CliRunner().invoke(app, ["generate", "--workload", str(tmp_path / "nope.yaml")])
    assert bad.exit_code == 1 and "nope.yaml: No such file" in bad.output
    for count in ("0", "-1"):  # a usage error, not a whole run (0) or a traceback (-1)
        bad = CliRunner().invoke(app, ["generate", "--workload", str(path), "--preview", count])
        assert bad.exit_code == 2 and "Invalid value for '--preview'" in bad.output


def test_the_command_line_overrides_the_spec(tmp_path: Path) -> None:
    """Issue 25: --events, --duration, --seed and --set change the spec as if it said so."""
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(spec()))
    args = ["generate", "--workload", str(path), "--no-progress", "--events", "40", "--seed", "9"]
    args += ["--set", "operations.mix.delete=0", "--set", "tables[0].columns.city={choice: [Oslo]}"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    raw = spec(events=40, mix={"insert": 2, "update": 5, "delete": 0})
    raw["seed"] = 9
    raw["tables"][0]["columns"]["city"] = {"choice": ["Oslo"]}
    from ticdc_sim.jsonout import ddl_record, row_record

    expected = [
        orjson.dumps(ddl_record(e) if isinstance(e, DDLEvent) else row_record(e)).decode()
        for e in events(raw)
    ]
    assert result.stdout.splitlines() == expected
    by_time = CliRunner().invoke(app, [*args[:4], "--duration", "0.01"])
    raw = spec(events=None, duration_s=0.01)
    assert by_time.exit_code == 0 and len(by_time.stdout.splitlines()) == len(events(raw))


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (
            ["--set", "operations.evnts=1"],
            1,
            "error: --set operations.evnts: unknown key; did you mean events?"
            " operations takes events, duration_s, mix, transaction_size, multi_table, keys,"
            " commit_rate, wall_rate\n",
        ),
        (
            ["--set", "tables[2].rows=1"],
            1,
            "error: --set tables[2].rows: tables[2]: no such item: tables has 2 items\n",
        ),
        (
            ["--set", "operations.events"],
            1,
            "error: --set operations.events: expected PATH=VALUE (e.g. operations.events=5000)\n",
        ),
        (
            ["--set", "operations.events=[1"],
            1,
            "error: --set operations.events=[1: the value is not YAML: expected ',' or ']', but"
            " got '<stream end>'\n",
        ),
        (
            ["--set", "operations.events=many"],
            1,
            "error: --set operations.events: expected integer, not 'many'"
            " (e.g. `events: 100000`)\n",
        ),
        (
            ["--duration", "inf"],
            1,
            "error: --duration: operations.duration_s: must be a finite number, not inf\n",
        ),
        (
            ["--seed", "-1"],
            1,
            "error: --seed: seed: must be at least 0, not -1\n",
        ),
    ],
)
def test_command_line_overrides_are_checked(
    tmp_path: Path, args: list[str], status: int, message: str
) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(spec()))
    result = CliRunner().invoke(app, ["generate", "--workload", str(path), *args])
    assert (result.exit_code, result.stderr) == (status, message)


def test_events_and_duration_together_are_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(spec()))
    args = ["generate", "--workload", str(path), "--events", "5", "--duration", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "Invalid value for '--events' / '--duration': give one of them" in result.stderr


def test_wall_rate_paces_a_live_run(tmp_path: Path) -> None:
    import time

    raw = spec(events=60, wall_rate=200)
    raw["tables"][0]["rows"] = raw["tables"][1]["rows"] = 0
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(raw))
    started = time.monotonic()
    uri = "blackhole://?protocol=canal-json"
    result = CliRunner().invoke(
        app, ["generate", "--workload", str(path), "--sink-uri", uri, "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    elapsed = time.monotonic() - started
    count = len(events(raw))  # folded in transactions: fewer than 60
    assert elapsed >= (count - 5) / 200, count  # paced at 200 a second


def _seeded(tmp_path: Path, data: list[dict[str, Any]], **table: Any) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "accounts.parquet"
    pq.write_table(pa.Table.from_pylist(data), path)
    return {
        "tables": [
            {
                "ddl": "CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner VARCHAR(10),"
                " balance DECIMAL(8,2), note TEXT)",
                "initial_from": {"path": str(path)},
                "update": ["balance", "note"],
                **table,
            }
        ],
        "operations": {"events": 600, "mix": {"insert": 1, "update": 4, "delete": 1}},
    }


def test_initial_rows_from_a_file_are_consistent(tmp_path: Path) -> None:
    """The file's rows are inserted first (its keys, its values converted as TiDB would);
    updates change them from those values; new keys start after the file's largest; the
    SQL engine, running the same changes, agrees."""
    from ticdc_sim.datasets import read_datasets

    rows = [{"id": 10 * i + 5, "owner": f"o{i}", "balance": f"{i}.5"} for i in range(50)]
    spec = parse(_seeded(tmp_path, rows))
    stream = list(Generator(spec, read_datasets(spec)).events())
    inserts = [e.columns for e in stream if isinstance(e, RowChangedEvent) and e.kind == "insert"]
    assert inserts[0][:3] == (5, "o0", Decimal("0.50"))  # DECIMAL(8,2), as TiDB stores it
    assert [c[0] for c in inserts[:50]] == [r["id"] for r in rows]
    assert inserts[50][0] == 495 + 1  # the key sequence's step, after the file's largest
    assert_engine_agrees(stream, 1)


@pytest.mark.parametrize(
    ("rows", "table", "message"),
    [
        ([{"id": 1, "nope": 2}], {}, "column 'nope': accounts has none"),
        ([{"id": 1}, {"id": 1}], {}, "primary key id repeats or is NULL"),
        ([{"owner": "x"}], {}, "needs the primary key column id"),
        ([{"id": 1, "owner": "much too long"}], {}, "row 1, column owner: ERROR 1406"),
        ([{"id": 1}], {"rows": 5}, "`rows` or `initial_from`"),
        (  # its Python repr was stored as the text "['a']"
            [{"id": 1, "owner": ["a"]}],
            {},
            "column owner: a list<element: string> column; a column of the file holds plain values",
        ),
    ],
)
def test_initial_rows_from_a_file_are_checked(
    tmp_path: Path, rows: list[dict[str, Any]], table: dict[str, Any], message: str
) -> None:
    from ticdc_sim.datasets import read_datasets

    with pytest.raises(SpecError, match=re.escape(message)):
        spec = parse(_seeded(tmp_path, rows, **table))
        Generator(spec, read_datasets(spec))


def test_initial_instants_are_read_in_utc(tmp_path: Path) -> None:
    """A file's timestamp with a zone is the instant, in the session's zone (UTC), as Spark
    reads it (its wall time was taken in the file's zone: 8 hours off for +08:00, and the
    Spark engine, reading in the JVM's zone, disagreed)."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    from ticdc_sim.datasets import read_datasets

    path = tmp_path / "at.parquet"
    at = dt.datetime(2024, 1, 1, 8, tzinfo=dt.timezone(dt.timedelta(hours=8)))
    stamps = pa.array([at, None], pa.timestamp("us", tz="+08:00"))
    pq.write_table(pa.table({"id": [1, 2], "t": stamps, "ts": stamps}), path)
    spec = parse(
        {
            "tables": [
                {
                    "ddl": "CREATE TABLE a (id BIGINT PRIMARY KEY, t DATETIME, ts TIMESTAMP)",
                    "initial_from": {"path": str(path)},
                }
            ],
            "operations": {"events": 0},
        }
    )
    stream = Generator(spec, read_datasets(spec)).events()
    rows = [e.columns[1:] for e in stream if isinstance(e, RowChangedEvent)]
    assert rows == [("2024-01-01 00:00:00",) * 2, (None, None)]


def test_initial_rows_need_a_file(tmp_path: Path) -> None:
    from ticdc_sim.datasets import read_datasets

    spec = parse(_seeded(tmp_path, [{"id": 1}]))
    missing = spec.tables[0].initial_from.model_copy(update={"path": tmp_path})  # type: ignore[union-attr]
    spec.tables[0] = spec.tables[0].model_copy(update={"initial_from": missing})
    with pytest.raises(SpecError) as error:
        read_datasets(spec)
    assert str(error.value) == (
        f"tables[0].initial_from.path: {tmp_path} is a directory: one file (its order is the rows')"
    )


# -- key updates ---------------------------------------------------------------------------------

# the row key of each kind: an integer handle, a clustered primary key of another type,
# `_tidb_rowid` (a NONCLUSTERED primary key); key updates of the primary key, of a unique
# key only, or of both
REKEYED = [
    {
        "ddl": "CREATE TABLE a (id BIGINT PRIMARY KEY, code VARCHAR(20), v INT, UNIQUE KEY uk (code))",
        "rows": 20,
        "key_updates": {"share": 0.3},
    },
    {
        "ddl": "CREATE TABLE b (k VARCHAR(24) PRIMARY KEY, v INT, w VARCHAR(5))",
        "rows": 20,
        "key_updates": {"share": 0.3},
        "update": ["v"],
    },
    {
        "ddl": "CREATE TABLE c (id BIGINT PRIMARY KEY NONCLUSTERED, u INT NOT NULL, v INT,"
        " UNIQUE KEY (u))",
        "rows": 20,
        "key_updates": {"share": 0.3, "columns": ["id"]},
    },
    {
        "ddl": "CREATE TABLE d (id INT PRIMARY KEY, email VARCHAR(40), v INT, UNIQUE KEY (email))",
        "rows": 20,
        "key_updates": {"share": 0.4, "columns": ["email"]},
        "columns": {"email": {"faker": "email"}},  # new keys: new distinct emails
        "keys": {"hot": {"count": 2, "share": 0.2}},  # key updates of the hot rows too
    },
]


def rekeyed(**operations: Any) -> dict[str, Any]:
    return {
        "seed": 5,
        "tables": REKEYED,
        "operations": {
            "events": 800,
            "mix": {"insert": 2, "update": 6, "delete": 1},
            "transaction_size": {"choice": {1: 3, 4: 2, 9: 1}},
            "multi_table": 0.4,
            "keys": {"hotspot": {"keys": 0.2, "share": 0.5}},
        }
        | operations,
    }


def captured(raw: dict[str, Any], **settings: bool) -> list[DDLEvent | RowChangedEvent]:
    """The run's events as a changefeed of these capture settings captures them."""
    stream = capture.captured(Generator(parse(raw)).events(), **settings)
    return [e for e in stream if isinstance(e, DDLEvent | RowChangedEvent)]


@pytest.mark.parametrize(
    ("old_value", "raw_change_event"),
    [(True, False), (True, True), (False, False)],
    ids=["split", "raw", "no-old-value"],
)
def test_key_updates_are_what_the_sql_engine_captures(
    old_value: bool, raw_change_event: bool
) -> None:
    """Updates that give rows new keys, run as SQL UPDATEs (and the split pairs they became
    as UPDATEs again): the engine captures the same events, row ids and order included:
    a moved handle as TiKV's delete and insert, another key's change split as TiCDC's MQ
    sinks split it (or kept whole with output-raw-change-event), and without old values
    insert-shaped updates and handle-only deletes."""
    raw = rekeyed()
    stream = events(raw)  # as TiKV records it: what the SQL is written from
    expected = captured(raw, old_value=old_value, raw_change_event=raw_change_event)
    assert_engine_agrees(
        stream,
        len(REKEYED),
        expected,
        {"old_value": old_value, "raw_change_event": raw_change_event},
    )
    rows = [e for e in expected if isinstance(e, RowChangedEvent)]
    updates = [e for e in rows if e.kind == "update"]
    if raw_change_event:  # d's email changes in place: whole updates with a changed key
        assert any(e.table.name == "d" and e.pre_columns[1] != e.columns[1] for e in updates)  # type: ignore[index]
    elif old_value:  # split: each update keeps its keys
        assert updates and all(e.pre_columns[0] == e.columns[0] for e in updates)  # type: ignore[index]
    else:
        assert not updates
        deletes = [e for e in rows if e.kind == "delete" and e.table.name == "b"]
        assert deletes and all(e.pre_columns[1:] == (None, None) for e in deletes)  # type: ignore[index]


def test_key_updates_keep_every_key_unique() -> None:
    """Replayed into a model of the tables (by primary key): every old image is the live
    row, every new key is free, and the unique keys of the live rows never collide, while
    keys keep changing."""
    stream = captured(rekeyed(events=3000))
    unique = {"a": 1, "c": 1, "d": 1}  # each table's unique key column (b has none)
    live: dict[str, dict[Any, tuple[Any, ...]]] = {name: {} for name in "abcd"}
    moved = 0  # d's rows whose email changed: a delete and an insert of one id
    for _, group in itertools.groupby(stream, key=lambda e: e.commit_ts):
        changes = [e for e in group if isinstance(e, RowChangedEvent)]
        for event in changes:
            rows = live[event.table.name]
            if event.pre_columns is not None:
                assert rows.pop(event.pre_columns[0]) == event.pre_columns
            if event.columns is not None:
                assert event.columns[0] not in rows, "a primary key collides"
                rows[event.columns[0]] = event.columns
        for name, offset in unique.items():
            values = [row[offset] for row in live[name].values()]
            assert len(values) == len(set(values)), f"a unique key of {name} collides"
        ids = Counter(
            e.pre_columns[0] for e in changes if e.table.name == "d" and e.kind == "delete"
        )  # type: ignore[index]
        moved += sum(
            1
            for e in changes
            if e.table.name == "d" and e.kind == "insert" and ids[e.columns[0]]  # type: ignore[index]
        )
    assert moved > 50


def test_rows_touched_again_after_a_long_quiet_stay_consistent() -> None:
    """Blocks that touch only the newest rows, then a delete of the oldest: the per-row
    state kept for the oldest rows is still there (old images are the rows' last images)."""
    raw = {
        "seed": 2,
        "tables": [
            {
                "ddl": "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
                "rows": 20000,
                "columns": {"v": {"uniform": [0, 1000000]}},
            }
        ],
        "operations": {
            "events": 60000,
            "mix": {"update": 1000, "delete": 0.06},  # blocks without a delete, then one
            "keys": {"zipf": 3},  # updates on the newest rows, the oldest left alone
        },
    }
    live: dict[Any, tuple[Any, ...]] = {}
    deletes = 0
    for event in events(raw):
        if not isinstance(event, RowChangedEvent):
            continue
        if event.pre_columns is not None:
            assert live.pop(event.pre_columns[0]) == event.pre_columns
            deletes += event.columns is None
        if event.columns is not None:
            live[event.columns[0]] = event.columns
    assert deletes >= 1


def test_hot_rows_keep_their_state_while_the_rows_around_them_go() -> None:
    """Retention deletes tens of thousands of rows (the per-row state below them is let
    go); the hot rows, the oldest of all, stay, and their old images stay their last ones."""
    raw = {
        "seed": 2,
        "tables": [
            {
                "ddl": "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
                "rows": 20000,
                "columns": {"v": {"uniform": [0, 1000000]}},
            }
        ],
        "operations": {
            "events": 60000,
            "mix": {"insert": 1, "update": 1, "delete": 2},
            "keys": {"hot": {"count": 3, "share": 0.01}},
        },
    }
    live: dict[Any, tuple[Any, ...]] = {}
    hot_updates = 0
    for event in events(raw):
        if not isinstance(event, RowChangedEvent):
            continue
        if event.pre_columns is not None:
            assert live.pop(event.pre_columns[0]) == event.pre_columns
            hot_updates += event.columns is not None and event.pre_columns[0] <= 3
        if event.columns is not None:
            live[event.columns[0]] = event.columns
    assert {1, 2, 3} <= set(live) and min(k for k in live if k > 3) > 29000
    assert hot_updates > 50
