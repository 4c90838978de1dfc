"""Uncorrelated subqueries (generator/sql/subquery.py) answer as MariaDB does, in SELECT, UPDATE,
DELETE and INSERT ... SELECT: `IN (SELECT ...)`, `NOT IN`, `EXISTS`, scalar subqueries, with
table aliases as ORMs write them; what is not simulated (correlated subqueries, ANY/ALL) is
refused with error 1235 naming it, and a subquery of more rows or columns than its place
takes is MySQL's 1242 or 1241."""

from __future__ import annotations

import pytest

from support_mariadb import MariaDB
from support_queries import ask, loaded, mariadb_answers, refused
from ticdc_sim.cluster import Cluster

DATA = """
CREATE TABLE cu (id INT PRIMARY KEY, name VARCHAR(10), vip TINYINT);
CREATE TABLE od (id INT PRIMARY KEY, cu_id INT, amount DECIMAL(8,2));
INSERT INTO cu VALUES (1, 'ann', 1), (2, 'bob', 0), (3, 'cy', NULL), (4, 'di', 1);
INSERT INTO od VALUES (10, 1, 1.50), (11, 1, 2.50), (12, 2, 3.00), (13, 9, 4.00), (14, NULL, 1.00)
"""

READS = [
    "SELECT id FROM od WHERE cu_id IN (SELECT id FROM cu WHERE vip = 1) ORDER BY id",
    "SELECT id FROM od WHERE cu_id NOT IN (SELECT id FROM cu WHERE vip = 1) ORDER BY id",
    "SELECT id FROM od WHERE cu_id IN (SELECT id FROM cu WHERE id > 100) ORDER BY id",
    "SELECT id FROM od WHERE cu_id NOT IN (SELECT id FROM cu WHERE id > 100) ORDER BY id",
    "SELECT id FROM cu WHERE id NOT IN (SELECT cu_id FROM od) ORDER BY id",  # a NULL in it
    "SELECT id FROM cu WHERE EXISTS (SELECT 1 FROM od WHERE amount > 3) ORDER BY id",
    "SELECT id FROM cu WHERE NOT EXISTS (SELECT 1 FROM od WHERE amount > 9) ORDER BY id",
    "SELECT id, (SELECT MAX(amount) FROM od) AS top FROM cu ORDER BY id",
    "SELECT (SELECT name FROM cu WHERE id = 2), (SELECT name FROM cu WHERE id = 99)",
    "SELECT U0.id FROM cu U0 WHERE U0.id IN (SELECT U1.cu_id FROM od U1 WHERE U1.amount > 2)"
    " ORDER BY U0.id",
    "SELECT cu.name, COUNT(*) FROM cu JOIN od ON od.cu_id = cu.id"
    " WHERE od.amount < (SELECT AVG(amount) FROM od) GROUP BY cu.name ORDER BY cu.name",
    # the subquery's own alias `x` shadows the outer one
    "SELECT id FROM cu x WHERE id IN (SELECT x.cu_id FROM od x) ORDER BY id",
    "SELECT (SELECT 1) IN (SELECT 1), (SELECT 2) IN (SELECT id FROM cu)",
]

WRITES = [
    "UPDATE od SET amount = amount + 1 WHERE cu_id IN (SELECT id FROM cu WHERE vip = 1)",
    "DELETE FROM od WHERE cu_id NOT IN (SELECT id FROM cu)",
    "UPDATE cu SET vip = (SELECT COUNT(*) FROM od WHERE amount > 2) WHERE id = 3",
    "INSERT INTO od SELECT id + 100, id, 9.99 FROM cu WHERE id IN (SELECT cu_id FROM od)",
]


@pytest.fixture
def cluster() -> Cluster:
    return loaded(DATA)


@pytest.mark.parametrize("sql", READS)
def test_subqueries_in_reads_answer_as_mariadb(
    sql: str, cluster: Cluster, mariadb: MariaDB
) -> None:
    assert ask(cluster, sql) == mariadb_answers(mariadb, DATA, [sql])[0]


@pytest.mark.parametrize("sql", WRITES)
def test_subqueries_in_writes_change_what_mariadb_changes(
    sql: str, cluster: Cluster, mariadb: MariaDB
) -> None:
    tables = ["SELECT * FROM cu ORDER BY id", "SELECT * FROM od ORDER BY id"]
    assert cluster.execute(sql).outcomes[0].error is None
    assert [ask(cluster, t) for t in tables] == mariadb_answers(mariadb, DATA, [sql, *tables])[1:]


@pytest.mark.parametrize(
    ("sql", "code", "message"),
    [
        (
            "SELECT id FROM cu WHERE EXISTS (SELECT 1 FROM od WHERE od.cu_id = cu.id)",
            1235,
            "a correlated subquery (it reads 'cu.id' of the statement around it) is not"
            " supported here",
        ),
        (
            "SELECT id FROM od WHERE cu_id IN (SELECT id FROM cu WHERE name = amount)",
            1235,
            "a correlated subquery (it reads 'amount' of the statement around it) is not"
            " supported here",
        ),
        ("SELECT id FROM cu WHERE id > ALL (SELECT cu_id FROM od)", 1235,
         "ALL (subquery) is not supported here"),
        ("SELECT (SELECT id FROM cu)", 1242, "Subquery returns more than 1 row"),
        ("SELECT id FROM cu WHERE id IN (SELECT id, name FROM cu)", 1241,
         "Operand should contain 1 column(s)"),
        ("SELECT id FROM cu WHERE id IN (SELECT nope FROM od)", 1054,
         "Unknown column 'nope' in 'field list'"),
    ],
)  # fmt: skip
def test_what_is_not_simulated_is_refused_by_name(
    sql: str, code: int, message: str, cluster: Cluster
) -> None:
    assert refused(cluster, sql) == (code, message)


def test_a_failed_subquery_writes_nothing(cluster: Cluster) -> None:
    before = ask(cluster, "SELECT * FROM od ORDER BY id")
    outcome = cluster.execute("DELETE FROM od WHERE amount = (SELECT amount FROM od)").outcomes[0]
    assert outcome.error is not None and outcome.error.code == 1242
    assert ask(cluster, "SELECT * FROM od ORDER BY id") == before
