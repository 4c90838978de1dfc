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
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import support_random_sql as rs
from ticdc_sim.cli import app
from ticdc_sim.errors import SimError
from ticdc_sim.generator import capture
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.generator.workload import Generator, SpecError, load, parse
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
        (
            lambda s: s["tables"][0].update(key_updates={"share": 0}),
            "tables[0].key_updates.share: Input should be greater than 0",
        ),
        (
            lambda s: s["operations"].update(transaction_size={"max": 3, "choice": {1: 1}}),
            "operations.transaction_size: Value error, `min`/`max` or `choice`",
        ),
        (
            lambda s: s["operations"].update(transaction_size={"choice": {0: 1}}),
            "operations.transaction_size.choice[0] (the key): Input should be greater than or equal to 1",
        ),
        (
            lambda s: s["tables"][0].update(rows=10**23),
            "tables[0].rows: Input should be less than or equal to 1000000000000000",
        ),
        (
            lambda s: s["operations"].update(events=None, duration_s=float("inf")),
            "operations.duration_s: Input should be a finite number",
        ),
        (
            lambda s: s["operations"].update(events=None, duration_s=1e15),
            "duration_s x commit_rate: more than 1,000,000,000,000,000 transactions",
        ),
        (
            lambda s: s["operations"].update(commit_rate=1e-9),
            "operations.commit_rate: Input should be greater than or equal to 0.001",
        ),
        (
            lambda s: s["tables"][1]["columns"].update(status={"choice": {}}),
            "tables[1].columns.status.choice: Value should have at least 1 item",
        ),
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
            "tables[1].update: key columns change by `key_updates` only",
        ),
        (
            lambda s: s["tables"][1].update(key_updates={"share": 0.1, "columns": ["amount"]}),
            "tables[1].key_updates.columns: amount is not a primary or unique key column",
        ),
        (
            lambda s: s["tables"][0].update(key_updates={"share": 0.1}),
            "ref customers.id: customers's key_updates change id",
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
        (
            lambda s: s["tables"][0]["columns"].update(city={"faker": "paragraph"}),
            "(`length: [min, max]` cuts drawn strings to max characters)",
        ),
    ],
)
def test_tables_and_columns_are_checked(change: Any, message: str) -> None:
    raw = spec()
    change(raw)
    with pytest.raises(SpecError) as error:
        events(raw)
    assert message in str(error.value)


def test_commit_ts_stay_within_a_tso() -> None:
    generator = Generator(parse(spec(commit_rate=0.001)))
    assert generator.commit_ts(10**6)[0] < 1 << 64
    with pytest.raises(SimError, match="past what a TSO's 46-bit physical time holds"):
        generator.commit_ts(10**8)


def test_a_key_column_too_small_for_the_initial_rows_is_refused_at_once() -> None:
    """Checked when the generator is built (3 billion rows are never drawn)."""
    raw = spec()
    raw["tables"][0].update(ddl=CUSTOMERS.replace("id BIGINT", "id INT"), rows=3_000_000_000)
    with pytest.raises(SpecError, match=r"customers.id: key 3000000000 is more than the column"):
        Generator(parse(raw))


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
        (
            {"ddl": "DROP TABLE customers"},
            "storyline[0]: orders.customer_id takes `ref:` keys of customers, and after this DDL"
            " there is no table customers",
        ),
        ({"ddl": "RENAME TABLE customers TO people"}, "there is no table customers"),
    ],
)
def test_storyline_chapters_are_checked(chapter: dict[str, Any], message: str) -> None:
    raw = spec()
    raw["storyline"] = [{"at_event": 10} | chapter]
    with pytest.raises(SpecError) as error:
        events(raw)
    assert message in str(error.value)


def test_a_bad_chapter_is_found_before_any_record_is_written(tmp_path: Path) -> None:
    import yaml

    raw = spec()
    raw["storyline"] = [{"at_event": 500, "ddl": "ALTER TABLE orders MODIFY note VARCHAR(5)"}]
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    uri = f"jsonl://{out}?protocol=canal-json"
    args = ["generate", "--workload", str(path), "--sink-uri", uri, "--no-progress"]
    result = CliRunner().invoke(app, args)
    assert (
        result.exit_code == 1 and "storyline[0]: changes the type of orders.note" in result.output
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.yaml"]  # no DIR, no DIR.partial


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
