"""information_schema (generator/sql/infoschema.py): each table's rows for a catalog with
clustered and non-clustered keys, unique and composite indexes, foreign keys, AUTO_INCREMENT
and partitions, queried with WHERE / ORDER BY / aggregates; the columns TiDB and MySQL agree
on held to MariaDB; foreign keys in SHOW CREATE TABLE."""

from __future__ import annotations

from typing import Any

import pytest

from support_mariadb import MariaDB
from ticdc_sim.cluster import Cluster
from ticdc_sim.errors import SQLError

CATALOG = """
CREATE TABLE parent (id INT PRIMARY KEY AUTO_INCREMENT, code INT UNIQUE, name VARCHAR(20),
  price DECIMAL(8,2), KEY name_price (name, price)) COMMENT 'the parents';
CREATE TABLE child (id BIGINT, tag VARCHAR(5), pid INT, PRIMARY KEY (id, tag) NONCLUSTERED,
  CONSTRAINT fk_parent FOREIGN KEY (pid) REFERENCES parent (id) ON DELETE CASCADE);
INSERT INTO parent (code, name, price) VALUES (1, 'a', 1.50), (2, 'b', 2.00);
"""
PARTITIONED = "CREATE TABLE p (id INT PRIMARY KEY) PARTITION BY HASH (id) PARTITIONS 2"


def ask(cluster: Cluster, sql: str) -> list[tuple[Any, ...]]:
    outcome = cluster.execute(sql).outcomes[0]
    if outcome.error is not None:
        raise outcome.error
    return [tuple(r) for r in outcome.rows or []]


@pytest.fixture
def cluster() -> Cluster:
    found = Cluster("t", 7, lock_wait_s=1, max_txn_rows=1000)
    assert not found.execute(CATALOG + PARTITIONED).failed
    return found


def test_tables_say_tidbs_keys_row_counts_and_next_ids(cluster: Cluster) -> None:
    assert ask(
        cluster,
        "SELECT table_name, table_type, engine, table_rows, auto_increment, tidb_pk_type,"
        " create_options, table_comment FROM information_schema.TABLES"
        " WHERE table_schema = DATABASE() ORDER BY table_name",
    ) == [
        ("child", "BASE TABLE", "InnoDB", 0, None, "NONCLUSTERED", "", ""),
        ("p", "BASE TABLE", "InnoDB", 0, None, "CLUSTERED", "partitioned", ""),
        ("parent", "BASE TABLE", "InnoDB", 2, 3, "CLUSTERED", "", "the parents"),
    ]
    assert ask(cluster, "SELECT schema_name FROM information_schema.schemata") == [
        ("information_schema",),
        ("test",),
    ]
    assert ask(cluster, "SELECT COUNT(*) FROM information_schema.tables") == [(3,)]


def test_columns_and_statistics(cluster: Cluster) -> None:
    assert ask(
        cluster,
        "SELECT column_name, ordinal_position, data_type, column_type, is_nullable, column_key,"
        " extra, numeric_precision, numeric_scale, character_maximum_length"
        " FROM information_schema.columns WHERE table_name = 'parent' ORDER BY ordinal_position",
    ) == [
        ("id", 1, "int", "int(11)", "NO", "PRI", "auto_increment", 10, 0, None),
        ("code", 2, "int", "int(11)", "YES", "UNI", "", 10, 0, None),
        ("name", 3, "varchar", "varchar(20)", "YES", "MUL", "", None, None, 20),
        ("price", 4, "decimal", "decimal(8,2)", "YES", "", "", 8, 2, None),
    ]
    assert ask(
        cluster,
        "SELECT index_name, non_unique, seq_in_index, column_name FROM"
        " information_schema.statistics WHERE table_name = 'parent'"
        " ORDER BY index_name, seq_in_index",
    ) == [
        ("PRIMARY", "0", 1, "id"),
        ("code", "0", 1, "code"),
        ("name_price", "1", 1, "name"),
        ("name_price", "1", 2, "price"),
    ]


def test_constraints_and_foreign_keys(cluster: Cluster) -> None:
    assert ask(
        cluster,
        "SELECT table_name, constraint_name, constraint_type FROM"
        " information_schema.table_constraints WHERE table_schema = 'test'"
        " ORDER BY table_name, constraint_name",
    ) == [
        ("child", "PRIMARY", "PRIMARY KEY"),
        ("child", "fk_parent", "FOREIGN KEY"),
        ("p", "PRIMARY", "PRIMARY KEY"),
        ("parent", "PRIMARY", "PRIMARY KEY"),
        ("parent", "code", "UNIQUE"),
    ]
    assert ask(
        cluster,
        "SELECT constraint_name, column_name, ordinal_position, referenced_table_name,"
        " referenced_column_name FROM information_schema.key_column_usage"
        " WHERE table_name = 'child' ORDER BY constraint_name, ordinal_position",
    ) == [
        ("PRIMARY", "id", 1, None, None),
        ("PRIMARY", "tag", 2, None, None),
        ("fk_parent", "pid", 1, "parent", "id"),
    ]
    assert ask(
        cluster,
        "SELECT constraint_name, unique_constraint_name, update_rule, delete_rule, table_name,"
        " referenced_table_name FROM information_schema.referential_constraints",
    ) == [("fk_parent", "PRIMARY", "NO ACTION", "CASCADE", "child", "parent")]
    create = ask(cluster, "SHOW CREATE TABLE child")[0][1]
    assert create.splitlines()[4:7] == [
        "  PRIMARY KEY (`id`,`tag`) /*T![clustered_index] NONCLUSTERED */,",
        "  KEY `fk_parent` (`pid`),",
        "  CONSTRAINT `fk_parent` FOREIGN KEY (`pid`) REFERENCES `parent` (`id`) ON DELETE CASCADE",
    ]
    ask(cluster, "ALTER TABLE child DROP FOREIGN KEY fk_parent")
    assert ask(cluster, "SELECT COUNT(*) FROM information_schema.referential_constraints") == [(0,)]


def test_partitions(cluster: Cluster) -> None:
    assert ask(
        cluster,
        "SELECT partition_name, partition_ordinal_position, partition_method,"
        " partition_expression FROM information_schema.partitions WHERE table_name = 'p'",
    ) == [("p0", 1, "HASH", "`id`"), ("p1", 2, "HASH", "`id`")]
    assert ask(
        cluster,
        "SELECT partition_name FROM information_schema.partitions WHERE table_name = 'parent'",
    ) == [(None,)]


def test_information_schema_is_read_only_and_unknown_tables_are_1146(cluster: Cluster) -> None:
    for sql in (
        "DELETE FROM information_schema.tables",
        "INSERT INTO information_schema.tables (table_name) VALUES ('x')",
    ):
        with pytest.raises(SQLError) as caught:
            ask(cluster, sql)
        assert (caught.value.code, caught.value.message) == (
            1044,
            "Access denied for user 'root'@'%' to database 'information_schema'",
        )
    with pytest.raises(SQLError) as caught:
        ask(cluster, "SELECT * FROM information_schema.nope")
    assert (caught.value.code, caught.value.message) == (
        1146,
        "Table 'information_schema.nope' doesn't exist",
    )


def test_use_information_schema_reads_its_tables() -> None:
    cluster = Cluster("t", 7, lock_wait_s=1, max_txn_rows=1000)
    session = cluster.session()
    from ticdc_sim.generator.sql.script import split_script

    answers = []
    for stmt in split_script(
        ["USE information_schema;\n", "SELECT COUNT(*) FROM schemata;\n"], "x.sql"
    ):
        outcome, _ = cluster.run(session, stmt)
        assert outcome.error is None, outcome.error
        answers.append(outcome.rows)
    assert answers[-1] == [(2,)]


_AGREED = (
    "SELECT column_name, ordinal_position, data_type, column_type, is_nullable, column_key,"
    " numeric_precision, numeric_scale, character_maximum_length"
    " FROM information_schema.columns WHERE table_schema = 'test' AND table_name = 'parent'"
    " ORDER BY ordinal_position",
    "SELECT constraint_name, constraint_type FROM information_schema.table_constraints"
    " WHERE table_schema = 'test' AND table_name = 'child' ORDER BY constraint_name",
    "SELECT constraint_name, column_name, referenced_table_name, referenced_column_name"
    " FROM information_schema.key_column_usage WHERE table_schema = 'test'"
    " AND table_name = 'child' ORDER BY constraint_name, ordinal_position",
    "SELECT index_name, non_unique, seq_in_index, column_name FROM information_schema.statistics"
    " WHERE table_schema = 'test' AND table_name = 'parent' ORDER BY index_name, seq_in_index",
    "SELECT table_name, table_type, auto_increment FROM information_schema.tables"
    " WHERE table_schema = 'test' AND table_name IN ('parent', 'child') ORDER BY table_name",
)


@pytest.mark.parametrize("sql", _AGREED)
def test_what_mariadb_answers_alike(sql: str, cluster: Cluster, mariadb: MariaDB) -> None:
    conn = mariadb.connect()
    try:
        mariadb.reset(conn)
        with conn.cursor() as cur:
            for statement in filter(str.strip, CATALOG.split(";")):
                cur.execute(statement.replace("NONCLUSTERED", ""))
            cur.execute(sql)
            theirs = [tuple(str(v) if v is not None else None for v in r) for r in cur.fetchall()]
    finally:
        conn.close()
    ours = [tuple(str(v) if v is not None else None for v in r) for r in ask(cluster, sql)]
    # as sets: MariaDB orders names case-insensitively, TiDB's columns are utf8mb4_bin
    assert sorted(ours, key=str) == sorted(theirs, key=str)
