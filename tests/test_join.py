"""SELECTs of several tables (generator/sql/join.py) answer as MariaDB does: inner, left,
cross and comma joins, with WHERE, ORDER BY, LIMIT, aggregates and `t.*`; what is not
simulated is refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from support_mariadb import MariaDB
from support_queries import ask, loaded, mariadb_answers, refused
from ticdc_sim.cluster import Cluster

DATA = """
CREATE TABLE cu (id INT PRIMARY KEY, name VARCHAR(10), city VARCHAR(10));
CREATE TABLE od (id INT PRIMARY KEY, cu_id INT, amount DECIMAL(8,2), note VARCHAR(10));
CREATE TABLE tag (od_id INT, label VARCHAR(5), PRIMARY KEY (od_id, label));
INSERT INTO cu VALUES (1, 'ann', 'oslo'), (2, 'bob', 'rome'), (3, 'cy', NULL), (4, 'di', 'oslo');
INSERT INTO od VALUES (10, 1, 1.50, 'a'), (11, 1, 2.50, NULL), (12, 2, 3.00, 'b'),
  (13, 9, 4.00, 'orphan');
INSERT INTO tag VALUES (10, 'x'), (10, 'y'), (12, 'x')
"""

QUERIES = [
    "SELECT od.amount FROM od INNER JOIN cu ON (od.cu_id = cu.id) WHERE cu.name = 'ann'"
    " ORDER BY od.id",
    "SELECT cu.name, od.id FROM cu LEFT JOIN od ON od.cu_id = cu.id ORDER BY cu.id, od.id",
    "SELECT cu.name, od.id, tag.label FROM cu JOIN od ON od.cu_id = cu.id"
    " LEFT OUTER JOIN tag ON tag.od_id = od.id ORDER BY od.id, tag.label",
    "SELECT * FROM cu, od WHERE cu.id = od.cu_id AND od.amount > 2 ORDER BY od.id",
    "SELECT COUNT(*), SUM(od.amount), MAX(cu.name) FROM od JOIN cu ON od.cu_id = cu.id"
    " WHERE cu.city = 'oslo'",
    "SELECT od.* FROM od JOIN cu ON cu.id = od.cu_id ORDER BY od.id LIMIT 1 OFFSET 1",
    "SELECT c.name, o.note FROM cu AS c CROSS JOIN od AS o WHERE o.id = 12 ORDER BY c.id",
    "SELECT cu.id, od.id FROM cu LEFT JOIN od ON od.cu_id = cu.id AND od.amount > 2"
    " WHERE od.id IS NULL ORDER BY cu.id",
    "SELECT UPPER(cu.name) AS n, od.amount * 2 FROM cu JOIN od ON od.cu_id = cu.id"
    " ORDER BY n DESC, od.amount",
    # grouping.py over a join
    "SELECT cu.city, COUNT(*), SUM(od.amount) FROM cu JOIN od ON od.cu_id = cu.id"
    " GROUP BY cu.city ORDER BY cu.city",
    "SELECT DISTINCT cu.city FROM cu LEFT JOIN od ON od.cu_id = cu.id ORDER BY cu.city",
    "SELECT cu.name, COUNT(od.id) AS n FROM cu LEFT JOIN od ON od.cu_id = cu.id"
    " GROUP BY cu.id, cu.name HAVING n > 0 ORDER BY n DESC, cu.name",
    "SELECT od.id, COUNT(tag.label) FROM od LEFT JOIN tag ON tag.od_id = od.id"
    " GROUP BY od.id ORDER BY 2 DESC, 1 LIMIT 3",
]


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return loaded(DATA)


@pytest.mark.parametrize("sql", QUERIES)
def test_joins_answer_as_mariadb(sql: str, cluster: Cluster, mariadb: MariaDB) -> None:
    assert ask(cluster, sql) == mariadb_answers(mariadb, DATA, [sql])[0]


@pytest.mark.parametrize(
    ("sql", "code", "message"),
    [
        (
            "SELECT id FROM cu JOIN od ON od.cu_id = cu.id",
            1052,
            "Column 'id' in field list is ambiguous",
        ),
        (
            "SELECT * FROM cu RIGHT JOIN od ON od.cu_id = cu.id",
            1105,
            "RIGHT JOIN is not supported here (JOIN ... ON, LEFT JOIN)",
        ),
        (
            "SELECT * FROM cu JOIN od USING (id)",
            1105,
            "USING is not supported here (JOIN ... ON, LEFT JOIN)",
        ),
        (
            "WITH w AS (SELECT 1) SELECT cu.city FROM cu JOIN od ON od.cu_id = cu.id",
            1105,
            "WITH (a common table expression) is not supported here (with a join)",
        ),
        ("SELECT x.* FROM cu JOIN od ON od.cu_id = cu.id", 1051, "Unknown table 'x'"),
        (
            "SELECT cu.nope FROM cu JOIN od ON od.cu_id = cu.id",
            1054,
            "Unknown column 'cu.nope' in 'field list'",
        ),
    ],
)
def test_what_is_refused_says_what(sql: str, code: int, message: str, cluster: Cluster) -> None:
    assert refused(cluster, sql) == (code, message)


@pytest.mark.parametrize(
    ("sql", "answer"),
    [
        ("SELECT cu.* FROM cu WHERE id = 1", (["id", "name", "city"], [(1, "ann", "oslo")])),
        ("SELECT c.* FROM cu AS c WHERE c.id = 1", (["id", "name", "city"], [(1, "ann", "oslo")])),
        ("SELECT *, name FROM cu WHERE id = 2", (["id", "name", "city", "name"], [(2, "bob", "rome", "bob")])),
    ],
)  # fmt: skip
def test_one_table_s_stars_are_its_columns(
    sql: str, answer: tuple[list[str], list[tuple[Any, ...]]], cluster: Cluster
) -> None:
    """`t.*` and `*` beside other items name and answer the same columns (TiDB
    `unfoldWildStar`); a bare `*` after the first item is its error 8122."""
    outcome = cluster.execute(sql).outcomes[0]
    assert (outcome.columns, outcome.rows) == answer
    assert refused(cluster, "SELECT id, * FROM cu") == (
        8122,
        "Wildcard fields without any table name appears in wrong place",
    )
    assert refused(cluster, "SELECT x.* FROM cu") == (1051, "Unknown table 'x'")
    # an alias hides the table's own name (MySQL's scope)
    assert refused(cluster, "SELECT cu.* FROM cu AS c") == (1051, "Unknown table 'cu'")
    assert refused(cluster, "SELECT c.id FROM cu AS c WHERE cu.id = 1") == (
        1054,
        "Unknown column 'cu.id' in 'field list'",
    )
