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

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import support_random_sql as rs
from ticdc_sim.cli import app
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.generator.workload import Generator, SpecError, load, parse
from ticdc_sim.generator.workload.run import primary_key
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
    " bl BLOB, d DECIMAL(30,10))"
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


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda s: s["tables"][1]["columns"]["amount"].update(unifrom=[1, 2]),
            "tables[1].columns.amount.unifrom: Extra inputs",
        ),
        (
            lambda s: s["operations"].update(mix={"insert": 0, "update": 0}),
            "operations.mix: Value error, at least one operation",
        ),
        (
            lambda s: s["tables"][0].update(ddl_file="x.sql"),
            "tables[0]: Value error, give the table as `ddl`",
        ),
        (
            lambda s: s["tables"][0]["columns"]["name"].update(uniform=[1, 2]),
            "one generator a column, not faker and uniform",
        ),
        (lambda s: s.update(colour=1), "colour: Extra inputs are not permitted"),
    ],
)
def test_spec_errors_name_their_path(change: Any, message: str) -> None:
    raw = spec()
    change(raw)
    with pytest.raises(SpecError) as error:
        parse(raw, "w.yaml")
    assert message in str(error.value) and str(error.value).startswith("w.yaml: ")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda s: s["tables"][0]["columns"].update(id={"faker": "name"}),
            "customers.id: a primary or unique key column is a sequence",
        ),
        (
            lambda s: s["tables"][1]["columns"].update(code={"choice": ["a"]}),
            "orders.code: a primary or unique key",
        ),
        (
            lambda s: s["tables"][1].update(update=["id"]),
            "tables[1].update: key columns keep their values",
        ),
        (
            lambda s: s["tables"][1]["columns"].update(nope={}),
            "tables[1].columns.nope: orders has no such column",
        ),
        (
            lambda s: s["tables"][0]["columns"].update(name={"faker": "no_such_provider"}),
            "Faker has no provider 'no_such_provider'",
        ),
        (
            lambda s: s["tables"][1]["columns"].update(customer_id={"ref": "customers.name"}),
            "ref customers.name: not the one-column primary key",
        ),
        (
            lambda s: s["tables"][0].update(ddl="CREATE TABLE nokey (a INT)", columns={}),
            "nokey needs a primary key",
        ),
        (lambda s: s["tables"][0].update(ddl="CREATE TABLE bad (a INT"), "tables[0].ddl"),
        (
            lambda s: s["tables"][1]["columns"].update(amount={"uniform": [1e12, 1e13]}),
            "orders.amount: a drawn value",
        ),
    ],
)
def test_tables_and_columns_are_checked(change: Any, message: str) -> None:
    raw = spec()
    change(raw)
    with pytest.raises(SpecError) as error:
        events(raw)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("chapter", "message"),
    [
        (
            {"ddl": "ALTER TABLE orders MODIFY COLUMN note VARCHAR(5)"},
            "storyline[0]: changes the type of orders.note; not simulated",
        ),
        (
            {"ddl": "ALTER TABLE orders ADD COLUMN x INT", "update": ["status", "x"]},
            "storyline[0].update: customer_id leaves the columns updates write",
        ),
        ({"ddl": "INSERT INTO orders (id) VALUES (99999)"}, "changes schemas, not rows"),
        ({"ddl": "ALTER TABLE nowhere ADD COLUMN x INT"}, "storyline[0].ddl: "),
    ],
)
def test_storyline_chapters_are_checked(chapter: dict[str, Any], message: str) -> None:
    raw = spec()
    raw["storyline"] = [{"at_event": 10} | chapter]
    with pytest.raises(SpecError) as error:
        events(raw)
    assert message in str(error.value)


def test_a_yaml_error_is_located(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("seed: 1\ntables: [\n  {ddl: x\n")
    with pytest.raises(SpecError) as error:
        load(path)
    assert str(error.value).startswith(f"{path}:4:1: not YAML")


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


def assert_engine_agrees(stream: list[DDLEvent | RowChangedEvent], tables: int) -> None:
    """The stream's changes, run as SQL through the engine (its first `tables` DDL as the
    schema, later DDL where they came, each transaction between BEGIN and COMMIT), give the
    same row events: kinds, images, order within each transaction."""
    stamps = [e.commit_ts for e in stream]
    assert stamps == sorted(stamps)
    script = [f"{e.query};" for e in stream[:tables] if isinstance(e, DDLEvent)]
    txns = []
    for key, group in itertools.groupby(stream[tables:], key=lambda e: (e.commit_ts, type(e))):
        if key[1] is DDLEvent:
            script += [f"{e.query};" for e in group if isinstance(e, DDLEvent)]
            continue
        changes = [e for e in group if isinstance(e, RowChangedEvent)]
        txns.append(changes)
        script.append("BEGIN;")
        script += [_statement(e) for e in changes]
        script.append("COMMIT;")
    engine = Engine()
    captured = [
        e
        for e in engine.run(split_script([line + "\n" for line in script], "w.sql"))
        if isinstance(e, RowChangedEvent)
    ]
    got = [
        [(e.kind, e.table.name, e.pre_columns, e.columns) for e in g]
        for _, g in itertools.groupby(captured, key=lambda e: e.commit_ts)
    ]
    want = [[(e.kind, e.table.name, e.pre_columns, e.columns) for e in changes] for changes in txns]
    assert got == want


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
    if event.kind == "delete":
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
        assert "cannot be a sequence" in str(e) or "too many rows" in str(e), str(e)
        return
    assert_engine_agrees(stream, 1)


# -- the command ---------------------------------------------------------------------------------


def test_generate_writes_the_same_bytes_every_time(tmp_path: Path) -> None:
    import yaml

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
    bad = CliRunner().invoke(app, ["generate", "--workload", str(tmp_path / "nope.yaml")])
    assert bad.exit_code == 1 and "nope.yaml: No such file" in bad.output


def test_wall_rate_paces_a_live_run(tmp_path: Path) -> None:
    import time

    import yaml

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
    assert time.monotonic() - started >= 55 / 200  # about 60 events at 200 a second


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
    ],
)
def test_initial_rows_from_a_file_are_checked(
    tmp_path: Path, rows: list[dict[str, Any]], table: dict[str, Any], message: str
) -> None:
    from ticdc_sim.datasets import read_datasets

    with pytest.raises(SpecError, match=re.escape(message)):
        spec = parse(_seeded(tmp_path, rows, **table))
        Generator(spec, read_datasets(spec))


def test_initial_rows_need_a_file(tmp_path: Path) -> None:
    from ticdc_sim.datasets import read_datasets

    spec = parse(_seeded(tmp_path, [{"id": 1}]))
    missing = spec.tables[0].initial_from.model_copy(update={"path": tmp_path})  # type: ignore[union-attr]
    spec.tables[0] = spec.tables[0].model_copy(update={"initial_from": missing})
    with pytest.raises(SpecError, match="not a file"):
        read_datasets(spec)
