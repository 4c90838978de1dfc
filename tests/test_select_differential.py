"""Result sets against MariaDB: random tables and transactions (the statements MariaDB runs),
then random single-table SELECTs (ordered by name, position or alias), aggregates, GROUP BY
with HAVING, DISTINCT, and subqueries (IN, NOT IN, scalar),
answered by the engine and by MariaDB and compared. These are the reads the MySQL port and SQL over HTTP answer.

Bounded and seeded like tests/test_differential.py (`--differential-examples`,
`--differential-seed`). Values are compared where both servers agree on the type: exact
numbers as numbers, strings and binaries as bytes; MIN/MAX/SUM/AVG over exact numbers."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pymysql
import pytest
from hypothesis import note
from hypothesis import strategies as st

import support_random_sql as rs
from support_mariadb import MariaDB
from test_differential import random_script, run_bounded
from test_engine import CHAINS
from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_one, split_script

EXACT = ("int", "uint", "decimal")
COMPARABLE = (*EXACT, "string", "binary")


def _value(value: Any) -> Any:
    """A cell as both sides can be compared: exact numbers as Decimal, text as bytes."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | Decimal):
        return Decimal(value)
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _queries(draw: st.DrawFn, table: rs.Table) -> list[str]:
    columns = [(n, tp) for n, tp in table.columns if tp.kind in COMPARABLE]
    exact = [n for n, tp in table.columns if tp.kind in EXACT]
    order = ", ".join(f"`{k}`" for k in table.pk)
    out = []
    for _ in range(draw(st.integers(1, 4))):
        where = rs._where(draw, table) if draw(st.booleans()) else ""
        if columns:
            shown = draw(st.lists(st.sampled_from(columns), min_size=1, max_size=3, unique=True))
            names = ", ".join(f"`{n}`" for n, _ in shown)
            # ORDER BY the key by name, by position in the select list, or by alias
            # (the key then in the select list: where both servers' values compare)
            keyed = all(tp.kind in COMPARABLE for n, tp in table.columns if n in table.pk)
            style = draw(st.sampled_from(["names", "positions", "aliases"] if keyed else ["names"]))
            if style == "positions":
                names += "".join(f", `{k}`" for k in table.pk)
                order = ", ".join(str(len(shown) + 1 + i) for i in range(len(table.pk)))
            elif style == "aliases":
                names += "".join(f", `{k}` AS `o{i}`" for i, k in enumerate(table.pk))
                order = ", ".join(f"`o{i}` DESC" for i in range(len(table.pk)))
            out.append(f"SELECT {names} FROM `{table.name}`{where} ORDER BY {order}")
            order = ", ".join(f"`{k}`" for k in table.pk)
        calls = ["COUNT(*)"]
        if exact:
            name = draw(st.sampled_from(exact))
            calls += [f"{f}(`{name}`)" for f in ("COUNT", "MIN", "MAX", "SUM", "AVG")]
        out.append(f"SELECT {', '.join(calls)} FROM `{table.name}`{where}")
        # grouping.py: GROUP BY with HAVING, and DISTINCT, compared as sets of rows: an ORDER
        # BY of strings would compare TiDB's PAD SPACE (trailing spaces cut, then bytes) with
        # MariaDB's (padded with spaces: '\n' before '')
        if columns:
            key = f"`{draw(st.sampled_from(columns))[0]}`"
            if exact:
                calls.append(f"COUNT(DISTINCT `{draw(st.sampled_from(exact))}`)")
            having = draw(st.sampled_from(["", " HAVING COUNT(*) > 1", f" HAVING {calls[-1]} > 0"]))
            out.append(
                f"SELECT {key}, {', '.join(calls)} FROM `{table.name}`{where}"
                f" GROUP BY {key}{having}"
            )
            out.append(f"SELECT DISTINCT {key} FROM `{table.name}`{where}")
            # subquery.py: IN, NOT IN and a scalar subquery, answered before the query runs
            inner = rs._where(draw, table) if draw(st.booleans()) else ""
            negate = draw(st.sampled_from(["", "NOT "]))
            out.append(
                f"SELECT COUNT(*), COUNT({key}) FROM `{table.name}` WHERE {key} {negate}IN"
                f" (SELECT {key} FROM `{table.name}`{inner})"
            )
            out.append(
                f"SELECT (SELECT COUNT(*) FROM `{table.name}`{inner}), COUNT(*)"
                f" FROM `{table.name}`{where}"
            )
    return out


def test_result_sets_are_mariadb_s(
    mariadb_pair: tuple[MariaDB, MariaDB], request: pytest.FixtureRequest
) -> None:
    source, _ = mariadb_pair

    def case(data: st.DataObject) -> None:
        table, script = random_script(data, source)
        engine = Engine()
        for _ in engine.run(split_script(script.splitlines(keepends=True), "random.sql")):
            pass
        queries = _queries(data.draw, table)
        note(script + "\n".join(queries))
        conn = source.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("USE test")
                for query in queries:
                    cur.execute(query)
                    expected = [tuple(map(_value, row)) for row in cur.fetchall()]
                    try:
                        rows = engine.query(parse_one(query), query).rows
                    except SQLError as e:
                        raise AssertionError(f"{query}: {e}") from None
                    got = [tuple(map(_value, r)) for r in rows]
                    if " GROUP BY " in query or "DISTINCT" in query:
                        got, expected = sorted(got, key=repr), sorted(expected, key=repr)
                    assert got == expected, query
        finally:
            conn.close()

    run_bounded(request, case, 4)


def test_operator_chains_are_mariadbs(mariadb: MariaDB) -> None:
    """Every operator of test_engine.py's flat chains, chained three and four times (where
    a chain's value alternates, both parities), and BETWEEN's: MariaDB's values."""
    engine = Engine()
    conn = mariadb.connect()
    try:
        with conn.cursor() as cur:
            # BETWEEN's chains nest to the right: `a BETWEEN b AND (c BETWEEN d AND e)`
            right_deep = [" BETWEEN 0 AND 2", " NOT BETWEEN 1 AND 2", " BETWEEN 0 AND 2 LIKE 1"]
            for piece in [p for p, _ in CHAINS] + right_deep:
                for terms in (3, 4):
                    query = "SELECT 1" + piece * (terms - 1)
                    cur.execute(query)
                    expected = [tuple(map(_value, row)) for row in cur.fetchall()]
                    rows = engine.query(parse_one(query), query).rows
                    assert [tuple(map(_value, r)) for r in rows] == expected, query
    finally:
        conn.close()


FULL_GROUP_BY = [  # (query, sql_mode has ONLY_FULL_GROUP_BY)
    ("SELECT 1 + 1, COUNT(*) FROM g", True),
    ("SELECT 'a' AS x, COUNT(*), SUM(v) FROM g", True),
    ("SELECT COUNT(*), CONCAT('x', 2) FROM g WHERE v > 100", True),
    ("SELECT v, COUNT(*) FROM g", True),
    ("SELECT COUNT(*), v + 1 FROM g", True),
    ("SELECT COUNT(*), MAX(v), v FROM g", False),  # the first row's, where the mode allows
    ("SELECT v, COUNT(*) FROM g WHERE v > 100", False),
]


@pytest.mark.parametrize(("query", "full"), FULL_GROUP_BY)
def test_columns_beside_aggregates_are_answered_or_refused_as_mariadb_does(
    mariadb: MariaDB, query: str, full: bool
) -> None:
    """Issue 25: expressions without columns beside aggregates were refused (1140). MariaDB
    refuses a bare column under ONLY_FULL_GROUP_BY with its 1140; TiDB's error is 8123
    (test_engine.py holds its wording and the WHERE clauses that let a column through)."""
    mode = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES" if full else "STRICT_TRANS_TABLES"
    setup = [
        f"SET sql_mode = '{mode}'",
        "CREATE TABLE g (id INT PRIMARY KEY, v INT)",
        "INSERT INTO g VALUES (1, 10), (2, 20)",
    ]
    engine = Engine()
    for stmt in split_script([s + ";\n" for s in setup], "g.sql"):
        assert engine.step(stmt) is None
    conn = mariadb.connect()
    try:
        with conn.cursor() as cur:
            mariadb.reset(conn)
            for sql in setup:
                cur.execute(sql)
            try:
                cur.execute(query)
                expected: Any = [tuple(map(_value, row)) for row in cur.fetchall()]
            except pymysql.MySQLError as e:
                expected = e.args[0]
    finally:
        conn.close()
    try:
        answered: Any = [tuple(map(_value, r)) for r in engine.query(parse_one(query), query).rows]
    except SQLError as e:
        answered = e.code
    assert (answered, expected) == ((8123, 1140) if expected == 1140 else (expected, expected))
