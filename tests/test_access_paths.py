"""Index range scans and lookups (dml `_compile_access`, store `TableData.scan`).

An index only narrows the rows a WHERE is evaluated on, so it can change nothing but speed:
the random test runs each script with access paths and again with every WHERE scanning all
rows, and wants the same events. The other
tests pin which index a statement uses and the constants that must not use one.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ticdc_sim.generator.sql import dml
from ticdc_sim.generator.sql.dml import _compile_access, _Union
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_one, split_script
from ticdc_sim.generator.sql.store import TableData
from ticdc_sim.model.events import RowChangedEvent

INDEXED = (
    "CREATE TABLE t (id INT PRIMARY KEY, c INT, d DECIMAL(6,2), w DATETIME(3), s VARCHAR(8), "
    "KEY kc (c), KEY kdw (d, w), KEY ks (s))"
)


def run(lines: list[str]) -> tuple[Engine, list[tuple[Any, ...]]]:
    engine = Engine()
    script = ["USE test;", *lines]
    events = engine.run(split_script([line + "\n" for line in script], "t.sql"))
    rows = [(e.kind, e.pre_columns, e.columns) for e in events if isinstance(e, RowChangedEvent)]
    return engine, rows


def table(engine: Engine) -> TableData:
    return engine.upstream.tables[engine.catalog.table("test", "t").id]


def rows_sql(first: int, count: int) -> str:
    values = ", ".join(
        f"({i}, {i % 7}, {i % 5}.25, '2024-01-{1 + i % 20:02d} 00:00:0{i % 10}.5', 's{i % 3}')"
        for i in range(first, first + count)
    )
    return f"INSERT INTO t VALUES {values};"


@pytest.mark.parametrize(
    ("where", "index", "width"),
    [
        ("id = 5", None, 1),
        ("id BETWEEN 5 AND 9", None, 1),
        ("id >= 5 AND id < 9", None, 1),
        ("id IN (1, 3)", None, 1),
        ("c = 3", "kc", 1),
        ("c > 3 AND id < 100", None, 1),  # ranges alike: the handle's
        ("d = 1.25 AND w > '2024-01-02'", "kdw", 2),
        ("d = 1.25 AND c = 2", "kc", 1),  # ties: the first index listed
        ("c > 1 AND d = 1.25", "kdw", 1),  # an equality before a range
        ("s = 's1'", "ks", 1),
        ("id + 0 = 5", None, 0),
        ("s > 's1'", None, 0),  # strings order by collation, not as Python does
    ],
)
def test_chosen_access(where: str, index: str | None, width: int) -> None:
    engine, _ = run([INDEXED + ";"])
    where_node = parse_one(f"SELECT 1 FROM t WHERE {where}").args["where"].this
    access = _compile_access(table(engine), where_node)
    if width == 0:
        assert access is None
        return
    assert access is not None
    assert (access.index.info.name if access.index else None) == index
    assert access.width == width


@pytest.mark.parametrize(
    ("where", "parts"),
    [
        ("c = 3 OR id = 5", ["kc", None]),
        ("(id = 1 OR id = 2 OR id = 3) AND c > 0", [None, None, None]),
        ("id = 1 OR (d = 1.25 AND w > '2024-01-02')", [None, "kdw"]),
        ("c = 3 OR id + 0 = 5", None),  # a disjunct without an access path: a scan
    ],
)
def test_an_or_is_the_union_of_its_disjuncts_access(where: str, parts: list[str] | None) -> None:
    engine, _ = run([INDEXED + ";"])
    where_node = parse_one(f"SELECT 1 FROM t WHERE {where}").args["where"].this
    access = _compile_access(table(engine), where_node)
    if parts is None:
        assert access is None
        return
    assert isinstance(access, _Union)
    assert [p.index.info.name if p.index else None for p in access.parts] == parts


def test_long_ors_and_in_lists_run_as_point_lookups() -> None:
    # ORMs send these; 400 terms used to be refused as "nested too deeply"
    every_third = [i for i in range(1, 1201) if i % 3 == 0]
    _, events = run(
        [
            INDEXED + ";",
            rows_sql(1, 1200),
            "DELETE FROM t WHERE " + " OR ".join(f"id = {i}" for i in every_third) + ";",
            f"UPDATE t SET c = 100 WHERE id IN ({', '.join(map(str, range(1, 1201, 2)))});",
            "DELETE FROM t WHERE "
            + " OR ".join(f"(id = {i} AND c = 100)" for i in (1, 2, 5))
            + ";",
        ]
    )
    deleted = [pre[0] for kind, pre, _ in events if kind == "delete"]
    assert deleted == every_third + [1, 5]
    updated = [post[0] for kind, _, post in events if kind == "update"]
    assert updated == [i for i in range(1, 1201, 2) if i % 3]


def test_range_updates_scan_the_range_only() -> None:
    engine, events = run(
        [INDEXED + ";", rows_sql(1, 200), "UPDATE t SET c = c + 100 WHERE id BETWEEN 50 AND 59;"]
    )
    updates = [e for e in events if e[0] == "update"]
    assert [post[0] for _, _, post in updates] == list(range(50, 60))
    data = table(engine)
    assert data.ordered_handles is None  # a bounded integer range is looked up key by key
    assert list(data.scan(None, ((50,), True), ((52,), False))) == [50, 51]
    assert list(data.scan(None, ((50,), False), ((52,), True))) == [51, 52]
    assert list(data.scan(None, ((198,), False), None)) == [199, 200]  # open: ordered
    assert data.ordered_handles is not None and len(data.ordered_handles) == 200


def test_secondary_lookup_follows_writes_and_rollbacks() -> None:
    engine, events = run(
        [
            INDEXED + ";",
            rows_sql(1, 70),
            "UPDATE t SET s = 'x' WHERE c = 3;",  # builds kc
            "BEGIN;",
            "UPDATE t SET c = 99 WHERE id = 3;",
            "DELETE FROM t WHERE id = 10;",
            "ROLLBACK;",
            "UPDATE t SET c = 42 WHERE id = 4;",
            "DELETE FROM t WHERE c = 3;",
        ]
    )
    deleted = sorted(pre[0] for kind, pre, _ in events if kind == "delete")
    assert deleted == [i for i in range(1, 71) if i % 7 == 3]  # 3 and 10 rolled back in
    kc = next(ix for ix in table(engine).indexes if ix.info.name == "kc")
    assert kc.members is not None and kc.ordered is None  # equality on the whole key: a map
    assert 4 in kc.members[(42,)] and (3,) not in kc.members


def test_constants_of_another_kind_match_as_mysql_compares() -> None:
    _, events = run(
        [
            INDEXED + ";",
            "INSERT INTO t VALUES (1, 5, 1, NULL, '5.0'), (2, 6, 2, NULL, ' 5'), (3, 7, 3, NULL, '5');",
            "UPDATE t SET c = 0 WHERE s = 5;",  # a number: every row whose text reads 5
            "UPDATE t SET d = 9 WHERE id > 1.5;",  # rounds to 2: both 2 and 3 match
            "DELETE FROM t WHERE c IN ('7');",
        ]
    )
    changed = [(kind, post[0] if post else pre[0]) for kind, pre, post in events[3:]]
    assert changed == [
        ("update", 1),
        ("update", 2),
        ("update", 3),
        ("update", 2),
        ("update", 3),
    ]


_VALUE = st.integers(0, 30)
_WHERES = [
    lambda a, b: f"id BETWEEN {a} AND {b}",
    lambda a, b: f"id > {a} AND id <= {b}",
    lambda a, b: f"c = {a % 7}",
    lambda a, b: f"c IN ({a % 7}, {b % 7})",
    lambda a, b: f"c >= {a % 7} AND c < {b % 7}",
    lambda a, b: f"d = {a % 5}.25 AND w >= '2024-01-{1 + b % 20:02d}'",
    lambda a, b: f"d BETWEEN {a % 5} AND {b % 5}.5",
    lambda a, b: f"s = 's{a % 3}' AND id < {b}",
    lambda a, b: f"id IN ({a}, {b}, {a + b})",
    lambda a, b: f"id = {a} OR id = {b} OR c = {a % 7}",
    lambda a, b: (
        f"(id = {a} AND c = {b % 7}) OR (d = {a % 5}.25 AND w < '2024-01-{1 + b % 20:02d}')"
    ),
    lambda a, b: f"(id = {a} OR id = {b}) AND c BETWEEN {a % 7} AND {b % 7}",
]
_STATEMENTS = st.one_of(
    st.builds(
        lambda w, a, b, v: f"UPDATE t SET c = {v % 7}, d = d + 1 WHERE {w(a, b)};",
        st.sampled_from(_WHERES),
        _VALUE,
        _VALUE,
        _VALUE,
    ),
    st.builds(
        lambda w, a, b: f"DELETE FROM t WHERE {w(a, b)};", st.sampled_from(_WHERES), _VALUE, _VALUE
    ),
    st.builds(lambda first: rows_sql(first, 3).replace("INSERT", "INSERT IGNORE"), _VALUE),
    st.builds(
        lambda w, a, b: f"UPDATE t SET id = id + 40 WHERE {w(a, b)} ORDER BY id DESC LIMIT 2;",
        st.sampled_from(_WHERES),
        _VALUE,
        _VALUE,
    ),
    st.sampled_from(["BEGIN;", "COMMIT;", "ROLLBACK;"]),
)


@settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.lists(_STATEMENTS, min_size=1, max_size=25))
def test_indexes_change_nothing_but_speed(statements: list[str]) -> None:
    script = [INDEXED + ";", rows_sql(1, 30), *statements, "COMMIT;"]
    _, with_indexes = run(script)
    with mock.patch.object(dml, "_compile_access", return_value=None):
        _, scanning = run(script)
    assert with_indexes == scanning


NULLABLE = (
    "CREATE TABLE t (a INT NOT NULL, b DECIMAL(1,1) NOT NULL, c BIGINT NULL, "
    "UNIQUE KEY uk (a, b), KEY ix (b, c))"
)


@pytest.mark.parametrize(
    ("statement", "deleted"),
    [
        ("DELETE FROM t WHERE b >= 0;", [1, 2, 3]),  # the case: MySQL deletes all 3
        ("DELETE FROM t WHERE b = 0.5;", [1, 2]),  # equality on ix's prefix
        ("DELETE FROM t WHERE b IN (0.5);", [1, 2]),
        ("DELETE FROM t WHERE b BETWEEN 0.1 AND 0.9;", [1, 2]),
        ("DELETE FROM t WHERE b = 0.5 AND c < 10;", [1]),  # NULL sorts first, never matches
        ("DELETE FROM t WHERE a > 1;", [2, 3]),  # uk's prefix
        ("DELETE FROM t WHERE a = 2 AND b > 0;", [2]),
    ],
)
def test_rows_with_null_in_an_index_are_found_by_range_access(
    statement: str, deleted: list[int]
) -> None:
    # Rows with NULL in an index column sort first in MySQL's indexes: a range on the
    # columns before the NULL one must still find them (found by differential testing).
    _, events = run(
        [
            NULLABLE + ";",
            "INSERT INTO t VALUES (1, 0.5, 7), (3, 0.0, 1);",
            "INSERT INTO t VALUES (2, 0.5, NULL);",
            statement,
        ]
    )
    assert sorted(pre[0] for kind, pre, _ in events if kind == "delete") == deleted


def test_index_entries_follow_rows_into_and_out_of_null() -> None:
    _, events = run(
        [
            NULLABLE + ";",
            "INSERT INTO t VALUES (1, 0.5, 7), (2, 0.5, NULL);",
            "DELETE FROM t WHERE b = 0.5 AND c = 99;",  # builds ix's ordered list: no match
            "UPDATE t SET c = NULL WHERE a = 1;",
            "UPDATE t SET c = 5 WHERE a = 2;",
            "DELETE FROM t WHERE b >= 0.5 AND c IS NULL;",
        ]
    )
    assert [(kind, pre[0]) for kind, pre, _ in events if kind == "delete"] == [("delete", 1)]
