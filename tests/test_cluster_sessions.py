"""Sessions of one cluster hold their own state: each a `SessionState` holding a `Session`
of its own (generator/sql/session.py), handed to the cluster's engine with each statement;
nothing of one reaches the other."""

from __future__ import annotations

from typing import Any

from ticdc_sim.cluster import Cluster, SessionState
from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.generator.sql.values import DEFAULT_SQL_MODE


def answer(c: Cluster, session: SessionState, sql: str) -> list[tuple[Any, ...]]:
    """The rows the one statement `sql` answers in `session` (errors raise)."""
    (stmt,) = split_script([sql], "test.sql")
    outcome, _ = c.run(session, stmt)
    if outcome.error is not None:
        raise outcome.error
    return outcome.rows


def failure(c: Cluster, session: SessionState, sql: str) -> SQLError:
    (stmt,) = split_script([sql], "test.sql")
    outcome, _ = c.run(session, stmt)
    assert outcome.error is not None, outcome
    return outcome.error


def test_two_sessions_interleaved_each_keep_their_own_state() -> None:
    c = Cluster("t", 7, lock_wait_s=0.2, max_txn_rows=10_000)
    a, b = c.session(), c.session()
    answer(c, a, "CREATE DATABASE d1")
    answer(c, a, "CREATE TABLE test.t (id INT AUTO_INCREMENT PRIMARY KEY, v TINYINT)")

    answer(c, a, "USE d1")
    assert answer(c, b, "SELECT DATABASE()") == [("test",)]
    assert answer(c, a, "SELECT DATABASE()") == [("d1",)]
    assert a.database == "d1" and b.database == "test"

    answer(c, a, "SET sql_mode = ''")
    answer(c, a, "SET time_zone = '+08:00'")
    answer(c, a, "SET @x = 1")
    answer(c, b, "SET @x = 2")
    assert answer(c, b, "SELECT @@sql_mode, @@time_zone, @x") == [(str(DEFAULT_SQL_MODE), "UTC", 2)]
    assert answer(c, a, "SELECT @@sql_mode, @@time_zone, @x") == [("", "+08:00", 1)]

    # ids and warnings: each session sees its own statement's
    answer(c, b, "INSERT INTO test.t (v) VALUES (1)")
    answer(c, a, "INSERT INTO test.t (v) VALUES (300)")  # non-strict: clipped
    answer(c, a, "SHOW ENGINES")  # warns
    assert answer(c, b, "SHOW WARNINGS") == []
    assert answer(c, a, "SHOW WARNINGS") == [
        ("Warning", 1105, "SHOW ENGINES is not simulated here: answered with no rows")
    ]
    assert answer(c, b, "SELECT LAST_INSERT_ID()") == [(1,)]
    assert answer(c, a, "SELECT LAST_INSERT_ID()") == [(2,)]
    error = failure(c, b, "INSERT INTO test.t (v) VALUES (300)")  # b is strict still
    assert (error.code, error.message) == (1264, "Out of range value for column 'v' at row 1")

    answer(c, a, "SET autocommit = 0")
    assert answer(c, b, "SELECT @@autocommit") == [(1,)]
    assert answer(c, a, "SELECT @@autocommit") == [(0,)]
    # open: a owns its transaction; id 3 went to the statement of b that failed
    answer(c, a, "INSERT INTO test.t (v) VALUES (3)")
    assert a.txn is not None and b.txn is None
    assert answer(c, b, "SELECT id, v FROM test.t ORDER BY id") == [(1, 1), (2, 127)]
    assert answer(c, a, "SELECT id, v FROM test.t ORDER BY id") == [(1, 1), (2, 127), (4, 3)]
    answer(c, a, "ROLLBACK")
    assert answer(c, b, "SELECT COUNT(*) FROM test.t") == [(2,)]


def test_one_sessions_ddl_drops_the_plans_another_compiled() -> None:
    c = Cluster("t", 7, lock_wait_s=0.2, max_txn_rows=10_000)
    a, b = c.session(), c.session()
    answer(c, a, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    answer(c, b, "INSERT INTO t VALUES (1, 10)")  # b compiles a plan of t's shape
    answer(c, a, "ALTER TABLE t ADD COLUMN w INT DEFAULT 7")
    answer(c, b, "INSERT INTO t VALUES (2, 20, 8)")
    assert answer(c, a, "SELECT id, v, w FROM t ORDER BY id") == [(1, 10, 7), (2, 20, 8)]
