"""GROUP BY, HAVING, DISTINCT and aggregates (generator/sql/grouping.py) answer as MariaDB does
over one table and over joins, and what TiDB refuses (ONLY_FULL_GROUP_BY, DISTINCT's ORDER
BY, aggregates out of place) is refused with TiDB's error; random queries are in
tests/test_select_differential.py."""

from __future__ import annotations

from decimal import Decimal

import pymysql
import pytest

from support_mariadb import MariaDB
from support_queries import ask, loaded, mariadb_answers, refused
from ticdc_sim.cluster import Cluster
from ticdc_sim.model.mysql import MySQLType

DATA = """
CREATE TABLE emp (id INT PRIMARY KEY, name VARCHAR(10) NOT NULL, dept VARCHAR(10),
  pay DECIMAL(8,2), code VARCHAR(5) NOT NULL, UNIQUE KEY (code));
CREATE TABLE dept (name VARCHAR(10) PRIMARY KEY, floor INT);
INSERT INTO emp VALUES (1, 'ann', 'ops', 10.50, 'a1'), (2, 'bob', 'dev', 20.00, 'b2'),
  (3, 'cy', 'dev', 30.25, 'c3'), (4, 'di', NULL, NULL, 'd4'), (5, 'ed', 'ops', 10.50, 'e5'),
  (6, 'fay', 'dev ', 5.00, 'f6');
INSERT INTO dept VALUES ('ops', 1), ('dev', 2), ('hr', 3)
"""

QUERIES = [
    "SELECT dept, COUNT(*), SUM(pay), MIN(pay), MAX(name), AVG(pay) FROM emp GROUP BY dept"
    " ORDER BY dept",
    "SELECT dept AS d, COUNT(*) AS n FROM emp GROUP BY d HAVING n > 1 ORDER BY n DESC, d",
    "SELECT dept, COUNT(DISTINCT pay), COUNT(pay) FROM emp GROUP BY 1 ORDER BY 1",
    "SELECT pay * 2, COUNT(*) FROM emp WHERE id > 1 GROUP BY pay * 2 ORDER BY 1",
    "SELECT dept FROM emp GROUP BY dept HAVING MAX(pay) > 15 ORDER BY dept",
    "SELECT COUNT(*), SUM(pay) FROM emp WHERE id > 100",  # one group of no row
    "SELECT dept, COUNT(*) FROM emp WHERE id > 100 GROUP BY dept",  # no group
    "SELECT DISTINCT dept FROM emp ORDER BY dept DESC",
    "SELECT DISTINCT pay, dept FROM emp ORDER BY pay, dept LIMIT 2 OFFSET 1",
    "SELECT COUNT(*) + 1, CONCAT('n=', COUNT(*)) FROM emp",
    "SELECT emp.dept, dept.floor, COUNT(*) FROM emp JOIN dept ON dept.name = emp.dept"
    " GROUP BY emp.dept, dept.floor ORDER BY dept.floor",
    "SELECT dept.name, COUNT(emp.id) FROM dept LEFT JOIN emp ON emp.dept = dept.name"
    " GROUP BY dept.name ORDER BY dept.name",
    "SELECT DISTINCT dept.floor FROM dept JOIN emp ON emp.dept = dept.name ORDER BY 1",
    "SELECT id AS n FROM emp HAVING n > 4 ORDER BY n",  # HAVING without GROUP BY
    "SELECT id AS n FROM emp HAVING id > 4 ORDER BY n",
    "SELECT emp.*, COUNT(*) FROM emp GROUP BY id ORDER BY id LIMIT 2",
    "SELECT SUM(name), AVG(code), SUM(DISTINCT pay) FROM emp",  # strings by their numbers
]

HAVING_UNKNOWN = [  # a column neither the select list nor GROUP BY names: 1054 on both
    "SELECT dept FROM emp GROUP BY dept HAVING pay > 1",
    "SELECT id, pay + 1 AS p FROM emp HAVING pay > 1",
]


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return loaded(DATA)


@pytest.mark.parametrize("sql", QUERIES)
def test_grouped_queries_answer_as_mariadb(sql: str, cluster: Cluster, mariadb: MariaDB) -> None:
    assert ask(cluster, sql) == mariadb_answers(mariadb, DATA, [sql])[0]


@pytest.mark.parametrize("sql", HAVING_UNKNOWN)
def test_having_reads_what_the_select_list_and_group_by_name(
    sql: str, cluster: Cluster, mariadb: MariaDB
) -> None:
    column = sql.split("HAVING ")[1].split()[0]
    assert refused(cluster, sql) == (1054, f"Unknown column '{column}' in 'having clause'")
    with pytest.raises(pymysql.err.OperationalError) as caught:
        mariadb_answers(mariadb, DATA, [sql])
    assert caught.value.args[0] == 1054


def test_trailing_spaces_group_together_and_a_group_shows_its_first_row(
    cluster: Cluster,
) -> None:
    """'dev' and 'dev ' are equal under utf8mb4_bin (PAD SPACE): one group, shown as the
    first row read has it; ANY_VALUE and a column the primary key determines are the first
    row's too."""
    assert ask(cluster, "SELECT dept, COUNT(*) FROM emp WHERE dept LIKE 'dev%' GROUP BY dept") == [
        ("dev", 3)
    ]
    first = "SELECT dept, ANY_VALUE(name), MIN(id) FROM emp WHERE dept LIKE 'dev%' GROUP BY dept"
    assert ask(cluster, first) == [("dev", "bob", 2)]


@pytest.mark.parametrize(
    ("sql", "code", "message"),
    [
        (
            "SELECT name, COUNT(*) FROM emp GROUP BY dept",
            1055,
            "Expression #1 of SELECT list is not in GROUP BY clause and contains nonaggregated"
            " column 'test.emp.name' which is not functionally dependent on columns in GROUP BY"
            " clause; this is incompatible with sql_mode=only_full_group_by",
        ),
        (
            "SELECT dept FROM emp GROUP BY dept ORDER BY pay",
            1055,
            "Expression #1 of ORDER BY clause is not in GROUP BY clause and contains"
            " nonaggregated column 'pay' which is not functionally dependent on columns in GROUP"
            " BY clause; this is incompatible with sql_mode=only_full_group_by",
        ),
        (
            "SELECT DISTINCT dept FROM emp ORDER BY pay",
            3065,
            "Expression #1 of ORDER BY clause is not in SELECT list, references column"
            " 'test.emp.pay' which is not in SELECT list; this is incompatible with DISTINCT",
        ),
        ("SELECT COUNT(*) FROM emp GROUP BY COUNT(*)", 1056, "Can't group on 'COUNT(*)'"),
        ("SELECT SUM(COUNT(*)) FROM emp", 1111, "Invalid use of group function"),
        ("SELECT id FROM emp WHERE COUNT(*) > 1", 1111, "Invalid use of group function"),
        ("SELECT dept FROM emp GROUP BY 2", 1054, "Unknown column '2' in 'group statement'"),
        (
            "SELECT dept, COUNT(*) FROM emp GROUP BY dept WITH ROLLUP",
            1105,
            "GROUP BY ... WITH ROLLUP is not supported here",
        ),
        (
            "SELECT dept, GROUP_CONCAT(name) FROM emp GROUP BY dept",
            1105,
            "the aggregate GROUP_CONCAT is not supported here",
        ),
    ],
)
def test_what_tidb_refuses_is_refused_with_its_error(
    sql: str, code: int, message: str, cluster: Cluster
) -> None:
    assert refused(cluster, sql) == (code, message)


@pytest.mark.parametrize(
    ("plain", "key"),
    [
        ("SELECT id, name, pay FROM emp", "id"),  # the primary key
        ("SELECT code, name FROM emp", "code"),  # a NOT NULL unique key
        (
            "SELECT emp.code, dept.floor FROM emp JOIN dept ON dept.name = emp.dept",
            "emp.code, dept.name",  # each table's
        ),
    ],
)
def test_a_key_in_group_by_determines_its_table_s_columns(
    plain: str, key: str, cluster: Cluster
) -> None:
    """Grouped by a key, each row is its own group: the rows themselves, no error 1055."""
    assert sorted(ask(cluster, f"{plain} GROUP BY {key}")) == sorted(ask(cluster, plain))


def test_insert_select_names_what_it_does_not_group(cluster: Cluster) -> None:
    sql = "INSERT INTO dept SELECT dept, COUNT(*) FROM emp GROUP BY dept"
    assert refused(cluster, sql) == (1105, "GROUP BY is not supported here in INSERT ... SELECT")


def test_aggregates_over_distinct_values_are_typed_as_over_all(cluster: Cluster) -> None:
    """SUM/AVG/MAX(DISTINCT x) answer the types SUM/AVG/MAX(x) do (a DECIMAL column carrying
    a Decimal, not a DOUBLE); SUM of strings is a DOUBLE."""
    sql = "SELECT SUM(DISTINCT pay), AVG(DISTINCT id), MAX(DISTINCT id), SUM(name) FROM emp"
    outcome = cluster.execute(sql).outcomes[0]
    assert outcome.types == [
        MySQLType.NEWDECIMAL,
        MySQLType.NEWDECIMAL,
        MySQLType.LONG,
        MySQLType.DOUBLE,
    ]
    assert outcome.rows == [(Decimal("65.75"), Decimal("3.5000"), 6, 0.0)]
