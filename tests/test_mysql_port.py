"""The MySQL port as applications see it: sessions that do not wait for another's open
transaction, snapshot reads of committed rows, the OK packet's insert id, SQLSTATEs as TiDB
maps them, column labels as written, and SHOW / DESCRIBE answered as TiDB answers them. In
process where the cluster alone decides; over the port with pymysql, mysql-connector (the
binary protocol) and the mariadb client where a client reads it; MariaDB where it agrees."""

from __future__ import annotations

import datetime as dt
import functools
import re
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import mysql.connector
import pymysql
import pytest

from support_mariadb import MariaDB
from support_mysql_wire import Wire
from support_service import Server
from ticdc_sim.cluster import Cluster, Outcome, SessionState
from ticdc_sim.errors import SQLSTATE, SQLError, sqlstate
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.model.events import RowChangedEvent

LOCK_WAIT_S = 1.5


def cluster(lock_wait_s: float = LOCK_WAIT_S) -> Cluster:
    return Cluster("t", 7, lock_wait_s=lock_wait_s, max_txn_rows=10_000)


def run(c: Cluster, session: SessionState, sql: str) -> Outcome:
    """The statements of `sql` in `session`; the last one's outcome (errors raise)."""
    outcome = None
    for stmt in split_script(sql.splitlines(keepends=True), "test.sql"):
        outcome, _ = c.run(session, stmt)
        if outcome.error is not None:
            raise outcome.error
    assert outcome is not None
    return outcome


def failure(c: Cluster, session: SessionState, sql: str) -> SQLError:
    (stmt,) = split_script([sql], "test.sql")
    outcome, _ = c.run(session, stmt)
    assert outcome.error is not None, outcome
    return outcome.error


# -- SQLSTATE: one table, as TiDB maps codes --------------------------------------------------


@pytest.mark.parametrize(
    ("code", "state"),
    [
        (1048, "23000"),  # Column cannot be null (issue 25)
        (1305, "42000"),  # SAVEPOINT does not exist
        (1265, "01000"),  # Data truncated
        (1062, "23000"),
        (1146, "42S02"),
        (1054, "42S22"),
        (1060, "42S21"),
        (1046, "3D000"),
        (1045, "28000"),
        (1153, "08S01"),
        (1156, "08S01"),
        (1213, "40001"),
        (1365, "22012"),
        (3140, "22032"),
        (1366, "HY000"),  # TiDB and MySQL: HY000 (MariaDB says 22007)
        (1205, "HY000"),
        (8004, "HY000"),
        (1105, "HY000"),
        (None, "HY000"),
    ],
)
def test_sqlstate_of_each_code_is_tidbs(code: int | None, state: str) -> None:
    assert sqlstate(code) == state
    error = SQLError("m", code=code)
    assert error.sqlstate == state
    assert str(error) == (f"ERROR {code} ({state}): m" if code else "m")


def test_sqlstates_agree_with_the_installed_mysql_error_list() -> None:
    """Codes below 1700 are numbered alike in MySQL and MariaDB: their SQLSTATEs agree with
    MariaDB's error list but for the few MariaDB changed (TiDB keeps MySQL's)."""
    listing = Path("/usr/share/mysql/errmsg-utf8.txt")
    if not listing.exists():
        pytest.skip("no MariaDB error list (mariadb-server not installed)")
    states, code = {}, None
    for line in listing.read_text().splitlines():
        if line.startswith("start-error-number"):
            code = int(line.split()[1])
        elif re.match(r"^[A-Z][A-Z0-9_]+", line) and code is not None:
            fields = line.split()
            if len(fields) > 1 and re.fullmatch(r"[0-9A-Z]{5}", fields[1]):
                states[code] = fields[1]
            code += 1
    differ = {c for c in range(1000, 1700) if states.get(c, "HY000") != SQLSTATE.get(c, "HY000")}
    # 1101 and 1557 are unused slots in MariaDB; 1133, 1366, 1369, 1446 MariaDB renamed
    assert differ == {1101, 1133, 1366, 1369, 1446, 1557}


# -- sessions: who waits for whom -------------------------------------------------------------


def test_session_statements_and_reads_never_wait_for_an_open_transaction() -> None:
    c = cluster()
    a, b = c.session(), c.session()
    run(c, a, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10), u INT UNIQUE)")
    run(c, a, "INSERT INTO t VALUES (1, 'one', 10), (2, 'two', 20)")
    run(c, a, "BEGIN")
    run(c, a, "UPDATE t SET v = 'ONE' WHERE id = 1")
    run(c, a, "DELETE FROM t WHERE id = 2")
    run(c, a, "INSERT INTO t VALUES (3, 'three', 20)")  # takes the deleted row's unique key
    started = time.monotonic()
    for sql in [
        "SET NAMES utf8mb4",
        "SET autocommit = 1",
        "SET @x = 5",
        "USE test",
        "SHOW TABLES",
        "SHOW CREATE TABLE t",
        "DESCRIBE t",
        "SELECT @@version, DATABASE(), @x",
        "BEGIN",
        "COMMIT",
        "START TRANSACTION",
        "ROLLBACK",
    ]:
        run(c, b, sql)
    # reads see the committed rows, as TiDB's snapshot read: none of a's writes
    rows = run(c, b, "SELECT id, v, u FROM t ORDER BY id").rows
    assert rows == [(1, "one", 10), (2, "two", 20)]
    assert run(c, b, "SELECT id FROM t WHERE u = 20").rows == [(2,)]
    assert time.monotonic() - started < LOCK_WAIT_S
    # a still sees its own writes, and commits them whole
    assert run(c, a, "SELECT id, v, u FROM t ORDER BY id").rows == [
        (1, "ONE", 10),
        (3, "three", 20),
    ]
    outcome = run(c, a, "COMMIT")
    assert outcome.commit_ts is not None
    assert run(c, b, "SELECT id, v FROM t ORDER BY id").rows == [(1, "ONE"), (3, "three")]
    assert run(c, b, "SELECT id FROM t WHERE u = 20").rows == [(3,)]
    rows = [e for e in c.history if isinstance(e, RowChangedEvent)]
    changes = [(e.kind, (e.columns or e.pre_columns or ())[0]) for e in rows]
    assert changes[-3:] == [("delete", 2), ("update", 1), ("insert", 3)]


def row_1_held(lock_wait_s: float, *committed: str) -> tuple[Cluster, SessionState]:
    """A cluster whose table `t` has row 1 written by a session's open transaction (after
    the `committed` statements), and another session."""
    c = cluster(lock_wait_s=lock_wait_s)
    a = c.session()
    run(c, a, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10), u INT)")
    for sql in committed:
        run(c, a, sql)
    run(c, a, "BEGIN")
    run(c, a, "INSERT INTO t VALUES (1, 'one', 10)")
    return c, c.session()


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO t VALUES (1, 'again', 90)",  # the duplicate is known once a ends
        "INSERT INTO t VALUES (1, 'again', 90) ON DUPLICATE KEY UPDATE v = 'x'",
        "REPLACE INTO t VALUES (1, 'again', 90)",
        "UPDATE t SET v = 'x' WHERE id = 1",
        "UPDATE t SET v = 'x' WHERE u = 10",
        "SELECT id FROM t WHERE id = 1 LOCK IN SHARE MODE",
        "DELETE FROM t",
        "SELECT id FROM t WHERE id = 1 FOR UPDATE",
        "ALTER TABLE t ADD COLUMN w INT",
        "TRUNCATE TABLE t",
    ],
)
def test_writes_locking_reads_and_ddl_wait_then_1205(sql: str) -> None:
    c, b = row_1_held(0.2)
    started = time.monotonic()
    error = failure(c, b, sql)
    assert (error.code, error.sqlstate, error.message) == (
        1205,
        "HY000",
        "Lock wait timeout exceeded; try restarting transaction",
    )
    assert time.monotonic() - started >= 0.2
    # a DDL's wait is for metadata, not a row lock (InnoDB's Innodb_row_lock_waits)
    row_lock = not sql.startswith(("ALTER", "TRUNCATE"))
    assert (c.lock_waits, c.deadlocks, c.lock_wait_timeouts) == (int(row_lock), 0, 1)


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO t VALUES (9, 'nine', 90)",
        "UPDATE t SET v = 'x' WHERE id = 2",
        "UPDATE t SET v = 'x' WHERE u = 20",
        "DELETE FROM t WHERE id = 2",
        "SELECT id FROM t WHERE id = 2 FOR UPDATE",
    ],
)
def test_writers_of_other_rows_never_wait(sql: str) -> None:
    c, b = row_1_held(5, "INSERT INTO t VALUES (2, 'two', 20)")
    started = time.monotonic()
    run(c, b, sql)
    assert time.monotonic() - started < 1


@pytest.mark.parametrize(
    "matching",
    ["UPDATE t SET v = v WHERE id = 1", "UPDATE t SET v = 'one' WHERE id BETWEEN 1 AND 2"],
)
def test_rows_an_update_matched_alone_unchanged_are_locked_once_another_begins(
    matching: str,
) -> None:
    """The rows an UPDATE of the only open transaction matched and left as they were are
    locked all the same (as InnoDB locks what it matched): a transaction that begins later
    waits for them, and a DDL for the table's metadata lock."""
    c = cluster(lock_wait_s=0.2)
    a, b = c.session(), c.session()
    run(c, a, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))")
    run(c, a, "INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three')")
    run(c, a, "BEGIN")
    run(c, a, matching)
    # a DDL first, while no other transaction has begun: the table's metadata lock is held
    assert failure(c, b, "ALTER TABLE t ADD COLUMN w INT").code == 1205
    assert failure(c, b, "UPDATE t SET v = 'x' WHERE id = 1").code == 1205
    assert run(c, b, "UPDATE t SET v = 'x' WHERE id = 3").affected_rows == 1  # not matched
    run(c, a, "COMMIT")
    assert run(c, b, "UPDATE t SET v = 'x' WHERE id = 1").affected_rows == 1


def waiting(c: Cluster, session: SessionState, sql: str) -> tuple[threading.Thread, list[Any]]:
    """`sql` run in `session` on a thread of its own, once seen waiting for a lock; the list
    gets its error code, or its affected rows."""
    answers: list[Any] = []

    def statement() -> None:
        (stmt,) = split_script([sql], "test.sql")
        outcome, _ = c.run(session, stmt)
        answers.append(outcome.error.code if outcome.error else outcome.affected_rows)

    thread = threading.Thread(target=statement)
    thread.start()
    deadline = time.monotonic() + 5
    while not c.waiting(session) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert c.waiting(session), answers
    return thread, answers


def test_a_waiting_writer_goes_on_when_the_holder_commits_or_rolls_back() -> None:
    """The duplicate waits for the transaction holding the row: 1062 once it commits, the
    insert itself once it rolls back (InnoDB's duplicate check, and TiDB's)."""
    c = cluster(lock_wait_s=10)
    a, b = c.session(), c.session()
    run(c, a, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))")
    for end, expected in (("COMMIT", 1062), ("ROLLBACK", 1)):
        run(c, a, "DELETE FROM t")
        run(c, a, "BEGIN")
        run(c, a, "INSERT INTO t VALUES (1, 'a')")
        waiter, answers = waiting(c, b, "INSERT INTO t VALUES (1, 'b')")
        run(c, a, end)
        waiter.join(5)
        assert answers == [expected]
        run(c, b, "DELETE FROM t")
    assert run(c, a, "SELECT id FROM t").rows == []
    assert (c.lock_waits, c.deadlocks, c.lock_wait_timeouts) == (2, 0, 0)


def test_a_deadlock_rolls_back_its_victim_whole_and_the_other_goes_on() -> None:
    c = cluster(lock_wait_s=10)
    a, b = c.session(), c.session()
    run(c, a, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    run(c, a, "INSERT INTO t VALUES (1, 0), (2, 0), (3, 0)")
    before = len(c.history)
    run(c, a, "BEGIN")
    run(c, a, "UPDATE t SET v = 1 WHERE id = 1")
    run(c, a, "UPDATE t SET v = 1 WHERE id = 3")  # a weighs more
    run(c, b, "BEGIN")
    run(c, b, "UPDATE t SET v = 2 WHERE id = 2")
    waiter, results = waiting(c, a, "UPDATE t SET v = 1 WHERE id = 2")
    error = failure(c, b, "UPDATE t SET v = 2 WHERE id = 1")  # closes the cycle
    assert (error.code, error.sqlstate, error.message) == (
        1213,
        "40001",
        "Deadlock found when trying to get lock; try restarting transaction",
    )
    waiter.join(5)
    assert results == [1]
    assert b.txn is None  # b's whole transaction went
    run(c, a, "COMMIT")
    assert run(c, b, "SELECT id, v FROM t ORDER BY id").rows == [(1, 1), (2, 1), (3, 1)]
    assert _stored(c, before) == [(1, 1), (2, 1), (3, 1)]
    assert (c.lock_waits, c.deadlocks, c.lock_wait_timeouts) == (2, 1, 0)


def test_set_names_and_the_charset_variables_answer_what_was_set() -> None:
    """@@character_set_client, _connection and _results answer the session's (they
    answered utf8mb4 whatever SET NAMES said); results may be NULL, as JDBC sets it."""
    c = cluster()
    a, other = c.session(), c.session()
    query = "SELECT @@character_set_client, @@character_set_connection, @@character_set_results"
    run(c, a, "SET NAMES gbk")
    assert run(c, a, query).rows == [("gbk", "gbk", "gbk")]
    run(c, a, "SET character_set_client = latin1")
    run(c, a, "SET character_set_results = NULL")
    assert run(c, a, query).rows == [("latin1", "gbk", None)]
    assert run(c, a, "SHOW VARIABLES LIKE 'character_set_c%'").rows == [
        ("character_set_client", "latin1"),
        ("character_set_connection", "gbk"),
    ]
    assert run(c, other, query).rows == [("utf8mb4", "utf8mb4", "utf8mb4")]
    run(c, a, "SET NAMES DEFAULT")
    assert run(c, a, query).rows == [("utf8mb4", "utf8mb4", "utf8mb4")]
    error = failure(c, a, "SET character_set_connection = NULL")
    assert (error.code, error.message) == (
        1231,
        "Variable 'character_set_connection' can't be set to the value of 'NULL'",
    )


@pytest.mark.parametrize(
    ("end", "code", "message"),
    [
        (Cluster.stop, 1053, "Server shutdown in progress"),
        (Cluster.close, 1105, "cluster 't' has been removed"),
    ],
    ids=["service-stopping", "cluster-removed"],
)
def test_a_session_waiting_for_a_lock_stops_waiting_when_the_cluster_ends(
    end: Callable[[Cluster], object], code: int, message: str
) -> None:
    """A stop or a removal wakes the sessions waiting for a lock (they waited out
    lock_wait_s), and refuses their statements from then on."""
    c = cluster(lock_wait_s=30)
    a, b = c.session(), c.session()
    run(c, a, "CREATE TABLE t (id INT PRIMARY KEY)")
    run(c, a, "BEGIN")
    run(c, a, "INSERT INTO t VALUES (1)")
    waited: list[tuple[int | None, str, float]] = []

    def waits() -> None:
        started = time.monotonic()
        error = failure(c, b, "INSERT INTO t VALUES (1)")
        waited.append((error.code, error.message, time.monotonic() - started))

    waiter = threading.Thread(target=waits)
    waiter.start()
    time.sleep(0.2)
    end(c)
    waiter.join(5)
    assert [(code_, said) for code_, said, _ in waited] == [(code, message)]
    assert waited[0][2] < 5
    error = failure(c, c.session(), "SELECT 1")
    assert (error.code, error.message) == (code, message)


def test_a_transaction_that_wrote_nothing_holds_nothing() -> None:
    """BEGIN alone takes no lock (TiDB's are taken by writes): two sessions may both begin,
    and the first to write is the one the other waits for; a session that goes without
    writing never waits to go."""
    c = cluster(lock_wait_s=0.2)
    a, b = c.session(), c.session()
    run(c, a, "CREATE TABLE t (id INT PRIMARY KEY)")
    run(c, a, "BEGIN")
    run(c, b, "BEGIN")
    run(c, b, "INSERT INTO t VALUES (2)")
    assert failure(c, a, "INSERT INTO t VALUES (2)").code == 1205
    started = time.monotonic()
    c.end(a)  # a wrote nothing: it goes at once
    assert time.monotonic() - started < 0.2
    run(c, b, "ROLLBACK")
    third = c.session()
    assert run(c, third, "INSERT INTO t VALUES (3)").affected_rows == 1
    assert run(c, third, "SELECT id FROM t").rows == [(3,)]


def test_a_session_that_goes_mid_transaction_rolls_back_and_lets_others_write() -> None:
    c = cluster(lock_wait_s=5)
    a, b = c.session(), c.session()
    run(c, a, "CREATE TABLE t (id INT PRIMARY KEY)")
    before = len(c.history)
    run(c, a, "BEGIN")
    run(c, a, "INSERT INTO t VALUES (1)")
    c.end(a)
    started = time.monotonic()
    run(c, b, "INSERT INTO t VALUES (2)")
    assert time.monotonic() - started < 1
    assert run(c, b, "SELECT id FROM t").rows == [(2,)]
    rows = [e for e in list(c.history)[before:] if isinstance(e, RowChangedEvent)]
    assert [(e.columns or ())[0] for e in rows] == [2]  # nothing of a's


def test_http_requests_read_beside_an_open_transaction() -> None:
    c = cluster(lock_wait_s=0.2)
    a = c.session()
    run(c, a, "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)")
    run(c, a, "BEGIN; INSERT INTO t VALUES (2)")
    done = c.execute("SET @a = 1; SELECT id FROM t; SHOW CREATE TABLE t")
    assert [o.error for o in done.outcomes] == [None, None, None]
    assert done.outcomes[1].rows == [(1,)]
    assert c.execute("INSERT INTO t VALUES (3)").outcomes[0].error is None
    blocked = c.execute("INSERT INTO t VALUES (2)")
    assert blocked.outcomes[0].error is not None and blocked.outcomes[0].error.code == 1205


# -- session settings stay with their session ------------------------------------------


def _stored(c: Cluster, before: int) -> list[tuple[Any, ...]]:
    rows = [e for e in list(c.history)[before:] if isinstance(e, RowChangedEvent)]
    return [tuple(e.columns or ()) for e in rows]


def test_one_sessions_sql_mode_does_not_change_how_anothers_values_are_checked() -> None:
    """Issue 25: the tables' converters kept the mode of whoever last ran SET sql_mode."""
    c = cluster()
    loose, strict = c.session(), c.session()
    run(c, strict, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(2), n TINYINT)")
    before = len(c.history)
    run(c, loose, "SET sql_mode = ''")
    run(c, loose, "INSERT INTO t VALUES (1, 'toolong', 1000)")  # clipped, as MySQL warns
    too_long = failure(c, strict, "INSERT INTO t VALUES (2, 'toolong', 1)")
    out_of_range = failure(c, strict, "INSERT INTO t VALUES (3, 'ok', 1000)")
    assert (too_long.code, too_long.message) == (1406, "Data too long for column 'v' at row 1")
    assert (out_of_range.code, out_of_range.message) == (
        1264,
        "Out of range value for column 'n' at row 1",
    )
    updated = failure(c, strict, "UPDATE t SET v = 'toolong' WHERE id = 1")
    assert (updated.code, updated.message) == (1406, "Data too long for column 'v'")
    # and the other way round: the strict session's SET leaves the loose one loose
    run(c, strict, "SET sql_mode = 'STRICT_TRANS_TABLES'")
    run(c, loose, "INSERT INTO t VALUES (4, 'xyz', -1000)")
    assert _stored(c, before) == [(1, "to", 127), (4, "xy", -128)]
    assert run(c, strict, "SELECT @@sql_mode").rows == [("STRICT_TRANS_TABLES",)]
    assert run(c, loose, "SELECT @@sql_mode").rows == [("",)]


def test_one_sessions_skip_utf8_check_does_not_reach_another() -> None:
    c = cluster()
    skipping, checking = c.session(), c.session()
    run(c, checking, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(8))")
    before = len(c.history)
    not_utf8 = b"\xff".decode("utf-8", "surrogateescape")  # a script byte that is not UTF-8
    run(c, skipping, "SET tidb_skip_utf8_check = 1")
    run(c, skipping, f"INSERT INTO t VALUES (1, '{not_utf8}')")
    refused = failure(c, checking, f"INSERT INTO t VALUES (2, '{not_utf8}')")
    assert (refused.code, refused.message) == (
        1366,
        "Incorrect string value '\\xFF' for column 'v' at row 1",
    )
    assert _stored(c, before) == [(1, not_utf8)]


def test_one_sessions_ddl_settings_do_not_reach_anothers_ddl() -> None:
    """The catalog checks a CREATE TABLE under the sql_mode and tidb_enable_clustered_index of
    the session running it."""
    c = cluster()
    other, mine = c.session(), c.session()
    run(c, other, "SET sql_mode = ''")
    run(c, other, "SET tidb_enable_clustered_index = OFF")
    run(c, other, "CREATE TABLE loose (id VARCHAR(4) PRIMARY KEY, v VARCHAR(2) DEFAULT 'toolong')")
    bad = failure(c, mine, "CREATE TABLE d (id INT PRIMARY KEY, v VARCHAR(2) DEFAULT 'toolong')")
    assert (bad.code, bad.message) == (1067, "Invalid default value for 'v'")
    run(c, mine, "CREATE TABLE k (id VARCHAR(4) PRIMARY KEY)")
    catalog = c.engine.catalog
    assert catalog.table("test", "k").is_common_handle  # TiDB's default: clustered
    assert not catalog.table("test", "loose").is_common_handle


# -- the OK packet's insert id ------------------------------------------------------------

INSERT_IDS = [  # what MariaDB's OK packet carries for each statement, in order (TiDB alike)
    ("INSERT INTO t (v) VALUES (1)", 1),
    ("INSERT INTO t (v) VALUES (1), (2)", 2),  # the first id the statement took
    ("INSERT INTO t VALUES (100, 1)", 100),  # an explicit id
    ("INSERT INTO t VALUES (200, 1), (150, 2)", 150),  # the last explicit one
    ("INSERT INTO t VALUES (300, 1), (NULL, 2)", 301),  # a generated one wins
    ("UPDATE t SET v = 3 WHERE id = 1", 0),
    ("SET @a = 1", 0),
    ("INSERT INTO t VALUES (1, 9) ON DUPLICATE KEY UPDATE v = 10", 1),
    ("UPDATE t SET id = 500 WHERE id = 100", 0),
    ("REPLACE INTO t VALUES (500, 4)", 500),
]


def test_insert_ids_in_process() -> None:
    c = cluster()
    s = c.session()
    run(c, s, "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL)")
    assert [(sql, run(c, s, sql).insert_id) for sql, _ in INSERT_IDS] == INSERT_IDS


def _maria(server: MariaDB) -> Any:
    conn = pymysql.connect(host="127.0.0.1", port=server.port, user="root", autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS test")
    conn.select_db("test")
    return conn


def test_insert_ids_as_mariadb_gives_them(mariadb: MariaDB) -> None:
    conn = _maria(mariadb)
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS t")
        cur.execute("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL)")
        found = []
        for sql, _ in INSERT_IDS:
            cur.execute(sql)
            found.append((sql, cur.lastrowid))
    conn.close()
    assert found == INSERT_IDS


# -- the OK packet's affected rows --------------------------------------------------------------

# what MariaDB's OK packet says each statement affected (TiDB alike), without and with the
# client's CLIENT_FOUND_ROWS (an UPDATE counts the rows it matched)
AFFECTED = [
    ("INSERT INTO a VALUES (1, 1, 1), (2, 2, 2), (3, 3, 3)", 3, 3),
    ("UPDATE a SET v = v", 0, 3),
    ("UPDATE a SET v = 2 WHERE id <= 2", 1, 2),
    ("INSERT INTO a VALUES (1, 9, 9) ON DUPLICATE KEY UPDATE v = 9", 2, 2),  # updated: 2
    ("INSERT INTO a VALUES (1, 9, 9) ON DUPLICATE KEY UPDATE v = 9", 0, 1),  # unchanged
    ("INSERT INTO a VALUES (4, 4, 4), (2, 0, 0) ON DUPLICATE KEY UPDATE v = v + 1", 3, 3),
    ("UPDATE a SET id = 10 WHERE id = 1", 1, 1),  # a new key: one row, not two
    ("UPDATE a SET id = id + 100", 4, 4),
    ("INSERT INTO a VALUES (102, 0, 0) ON DUPLICATE KEY UPDATE id = 5", 2, 2),
    ("REPLACE INTO a VALUES (5, 1, 2)", 2, 2),  # a delete and an insert
    ("REPLACE INTO a VALUES (6, 6, 6)", 1, 1),
    ("INSERT IGNORE INTO a VALUES (6, 6, 6), (7, 7, 7)", 1, 1),
    ("DELETE FROM a WHERE id > 1000", 0, 0),
    ("DELETE FROM a", 6, 6),
]
AFFECTED_TABLE = "CREATE TABLE a (id INT PRIMARY KEY, v INT, u INT UNIQUE)"


@pytest.mark.parametrize("found_rows", [False, True])
def test_affected_rows_in_process(found_rows: bool) -> None:
    """(ON DUPLICATE KEY UPDATE counted an update 1, an UPDATE of the key 2 a row, and
    CLIENT_FOUND_ROWS was neither offered nor honoured: SQLAlchemy's rowcount checks
    failed on an UPDATE that changed nothing.)"""
    c = cluster()
    s = c.session()
    s.found_rows = found_rows
    run(c, s, AFFECTED_TABLE)
    said = [(sql, run(c, s, sql).affected_rows) for sql, *_ in AFFECTED]
    assert said == [(sql, counts[found_rows]) for sql, *counts in AFFECTED]


@pytest.mark.parametrize("found_rows", [False, True])
def test_affected_rows_over_the_port_as_mariadb_gives_them(
    server: Server, mariadb: MariaDB, found_rows: bool
) -> None:
    flag = pymysql.constants.CLIENT.FOUND_ROWS if found_rows else 0
    _maria(mariadb).close()
    said = {}
    for name, port in (("mariadb", mariadb.port), ("ours", server.mysql_port)):
        conn = pymysql.connect(
            host="127.0.0.1", port=port, user="root", database="test", client_flag=flag
        )
        with conn.cursor() as cur:
            cur.execute("DROP TABLE IF EXISTS a")
            cur.execute(AFFECTED_TABLE)
            said[name] = [(sql, cur.execute(sql)) for sql, *_ in AFFECTED]
        conn.commit()
        conn.close()
    expected = [(sql, counts[found_rows]) for sql, *counts in AFFECTED]
    assert said == {"mariadb": expected, "ours": expected}


def test_several_statements_in_one_query_when_the_client_asks(server: Server) -> None:
    """The server offers CLIENT_MULTI_STATEMENTS (TiDB's defaultCapability): a client that
    asks runs several statements in one query (all were refused with 8130)."""
    conn = server.mysql(client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE multi (id INT PRIMARY KEY); INSERT INTO multi VALUES (1), (2)")
        assert cur.nextset() and cur.rowcount == 2
        cur.execute("SELECT 1 AS one; SELECT id FROM multi ORDER BY id")
        assert cur.fetchall() == ((1,),)
        assert cur.nextset() and cur.fetchall() == ((1,), (2,))
        assert not cur.nextset()
    conn.close()


# -- column labels --------------------------------------------------------------------------

LABELS = [  # (select list, labels): as MariaDB and TiDB both label them
    ("DATABASE(), NOW() IS NOT NULL", ["DATABASE()", "NOW() IS NOT NULL"]),
    ("1+1, 1 + 1,  CONCAT('a',  'b')", ["1+1", "1 + 1", "CONCAT('a',  'b')"]),
    ("'abc', \"x\", NULL, -1, 1.50", ["abc", "x", "NULL", "-1", "1.50"]),
    ("id, `id`, t.v, ID, v+1 AS w, v+1 w2", ["id", "id", "v", "ID", "w", "w2"]),
    ("COUNT(*), count(id), MAX(v)", ["COUNT(*)", "count(id)", "MAX(v)"]),
    ("@x, @@version_comment, 1=1", ["@x", "@@version_comment", "1=1"]),
    ("LOWER('A') AS `a b`, UPPER(v)", ["a b", "UPPER(v)"]),
    ("'   padded', 0x41", ["padded", "0x41"]),
]


def _select(items: str) -> str:
    return f"SELECT {items} FROM t"


@pytest.mark.parametrize(("items", "labels"), LABELS, ids=[i for i, _ in LABELS])
def test_labels_are_the_text_as_written(items: str, labels: list[str]) -> None:
    c = cluster()
    s = c.session()
    run(c, s, "CREATE TABLE t (id INT PRIMARY KEY, v INT); INSERT INTO t VALUES (1, 2)")
    assert run(c, s, _select(items)).columns == labels


def test_labels_as_mariadb_gives_them(mariadb: MariaDB) -> None:
    conn = _maria(mariadb)
    found = []
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS t")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO t VALUES (1, 2)")
        for items, _ in LABELS:
            cur.execute(_select(items))
            found.append([d[0] for d in cur.description])
    conn.close()
    assert found == [labels for _, labels in LABELS]


def test_labels_are_cut_at_256_bytes_and_truths_are_named_as_tidb_names_them() -> None:
    c = cluster()
    s = c.session()
    long = "+".join(["1"] * 200)
    assert run(c, s, f"SELECT {long}").columns == [long[:256]]
    wide = "'" + "é" * 200 + "'"  # 400 bytes: cut before the character that does not fit
    assert run(c, s, f"SELECT {wide}").columns == ["é" * 128]
    assert run(c, s, "SELECT TRUE, FALSE, (2), +3").columns == ["TRUE", "FALSE", "2", "3"]


# -- SHOW and DESCRIBE --------------------------------------------------------------------

SHOP = """CREATE TABLE shop (
  id INT AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(20) NOT NULL DEFAULT 'x' COMMENT 'the name',
  price DECIMAL(8,2) DEFAULT 1,
  code INT UNIQUE,
  kind ENUM('a','b') NOT NULL DEFAULT 'b',
  flags BIT(3) DEFAULT b'101',
  ci VARCHAR(5) COLLATE utf8mb4_general_ci,
  at TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  total INT AS (code + 1) VIRTUAL,
  KEY by_name (name(3), price) COMMENT 'it''s a key'
) COMMENT 'shop''s table'"""
SHOP_CREATE = """CREATE TABLE `shop` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `name` varchar(20) NOT NULL DEFAULT 'x' COMMENT 'the name',
  `price` decimal(8,2) DEFAULT '1.00',
  `code` int(11) DEFAULT NULL,
  `kind` enum('a','b') NOT NULL DEFAULT 'b',
  `flags` bit(3) DEFAULT b'101',
  `ci` varchar(5) COLLATE utf8mb4_general_ci DEFAULT NULL,
  `at` timestamp(3) DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  `total` int(11) GENERATED ALWAYS AS (`code`+1) VIRTUAL,
  PRIMARY KEY (`id`) /*T![clustered_index] CLUSTERED */,
  KEY `by_name` (`name`(3),`price`) COMMENT 'it''s a key',
  UNIQUE KEY `code` (`code`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin AUTO_INCREMENT=3 COMMENT='shop''s table'"""

CREATE_TABLES = [  # (DDL, SHOW CREATE TABLE), in TiDB's text
    (SHOP, SHOP_CREATE),
    (
        "CREATE TABLE pair (a VARCHAR(10), b INT, c JSON, PRIMARY KEY (a, b))",
        "CREATE TABLE `pair` (\n  `a` varchar(10) NOT NULL,\n  `b` int(11) NOT NULL,\n"
        "  `c` json DEFAULT NULL,\n"
        "  PRIMARY KEY (`a`,`b`) /*T![clustered_index] CLUSTERED */\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    ),
    (
        "CREATE TABLE loose (id BIGINT UNSIGNED, PRIMARY KEY (id) NONCLUSTERED, d DATE NOT NULL)",
        "CREATE TABLE `loose` (\n  `id` bigint(20) unsigned NOT NULL,\n"
        "  `d` date NOT NULL,\n"
        "  PRIMARY KEY (`id`) /*T![clustered_index] NONCLUSTERED */\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    ),
    (
        "CREATE TABLE rnd (id BIGINT PRIMARY KEY AUTO_RANDOM(5), v BLOB)",
        "CREATE TABLE `rnd` (\n  `id` bigint(20) NOT NULL /*T![auto_rand] AUTO_RANDOM(5) */,\n"
        "  `v` blob DEFAULT NULL,\n"
        "  PRIMARY KEY (`id`) /*T![clustered_index] CLUSTERED */\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    ),
    (
        "CREATE TABLE parts (id INT, y INT) PARTITION BY RANGE (y) "
        "(PARTITION p0 VALUES LESS THAN (2000), PARTITION pmax VALUES LESS THAN (MAXVALUE))",
        "CREATE TABLE `parts` (\n  `id` int(11) DEFAULT NULL,\n  `y` int(11) DEFAULT NULL\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin\n"
        "PARTITION BY RANGE (`y`)\n"
        "(PARTITION `p0` VALUES LESS THAN (2000),\n PARTITION `pmax` VALUES LESS THAN (MAXVALUE))",
    ),
    (
        "CREATE TABLE hashed (id INT PRIMARY KEY) PARTITION BY HASH (id) PARTITIONS 4",
        "CREATE TABLE `hashed` (\n  `id` int(11) NOT NULL,\n"
        "  PRIMARY KEY (`id`) /*T![clustered_index] CLUSTERED */\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin\n"
        "PARTITION BY HASH (`id`) PARTITIONS 4",
    ),
    (
        "CREATE TABLE latin (id INT, s CHAR(3)) DEFAULT CHARSET = latin1",
        "CREATE TABLE `latin` (\n  `id` int(11) DEFAULT NULL,\n  `s` char(3) DEFAULT NULL\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=latin1 COLLATE=latin1_bin",
    ),
]


@pytest.mark.parametrize(
    ("ddl", "shown"), CREATE_TABLES, ids=[d.split()[2] for d, _ in CREATE_TABLES]
)
def test_show_create_table_is_tidbs_text(ddl: str, shown: str) -> None:
    c = cluster()
    s = c.session()
    run(c, s, ddl)
    name = ddl.split()[2]
    if name == "shop":
        run(c, s, "INSERT INTO shop (name, code) VALUES ('a', 1), ('b', 2)")
    assert run(c, s, f"SHOW CREATE TABLE {name}").rows == [(name, shown)]


SHOP_COLUMNS = [
    ("id", "int(11)", "NO", "PRI", None, "auto_increment"),
    ("name", "varchar(20)", "NO", "MUL", "x", ""),
    ("price", "decimal(8,2)", "YES", "", "1.00", ""),
    ("code", "int(11)", "YES", "UNI", None, ""),
    ("kind", "enum('a','b')", "NO", "", "b", ""),
    ("flags", "bit(3)", "YES", "", "b'101'", ""),
    ("ci", "varchar(5)", "YES", "", None, ""),
    ("at", "timestamp(3)", "YES", "", "CURRENT_TIMESTAMP(3)", ""),
    ("total", "int(11)", "YES", "", None, "VIRTUAL GENERATED"),
]
SHOP_COLUMNS[7] = SHOP_COLUMNS[7][:5] + ("DEFAULT_GENERATED on update CURRENT_TIMESTAMP(3)",)


@pytest.mark.parametrize(
    ("sql", "rows"),
    [
        ("DESCRIBE shop", SHOP_COLUMNS),
        ("DESC test.shop", SHOP_COLUMNS),
        ("EXPLAIN shop", SHOP_COLUMNS),
        ("SHOW COLUMNS FROM shop", SHOP_COLUMNS),
        ("SHOW FIELDS IN shop FROM test", SHOP_COLUMNS),
        ("SHOW COLUMNS FROM shop LIKE 'c%'", [SHOP_COLUMNS[3], SHOP_COLUMNS[6]]),
        ("SHOW COLUMNS FROM shop WHERE `Key` = 'PRI'", [SHOP_COLUMNS[0]]),
        ("DESCRIBE shop price", [SHOP_COLUMNS[2]]),
        ("DESCRIBE shop 'p%'", [SHOP_COLUMNS[2]]),
    ],
)
def test_describe_and_show_columns(sql: str, rows: list[tuple[Any, ...]]) -> None:
    c = cluster()
    s = c.session()
    run(c, s, SHOP)
    outcome = run(c, s, sql)
    assert outcome.columns == ["Field", "Type", "Null", "Key", "Default", "Extra"]
    assert outcome.rows == rows


def test_show_full_columns_and_index() -> None:
    c = cluster()
    s = c.session()
    run(c, s, SHOP)
    full = run(c, s, "SHOW FULL COLUMNS FROM shop LIKE 'name'")
    assert full.columns == [
        "Field", "Type", "Collation", "Null", "Key", "Default", "Extra", "Privileges", "Comment"
    ]  # fmt: skip
    assert full.rows == [
        ("name", "varchar(20)", "utf8mb4_bin", "NO", "MUL", "x", "",
         "select,insert,update,references", "the name")
    ]  # fmt: skip
    index = run(c, s, "SHOW INDEX FROM shop")
    assert index.columns == [
        "Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name", "Collation",
        "Cardinality", "Sub_part", "Packed", "Null", "Index_type", "Comment", "Index_comment",
        "Visible", "Expression", "Clustered", "Global",
    ]  # fmt: skip
    tail = ("BTREE", "", "")
    assert index.rows == [
        ("shop", 0, "PRIMARY", 1, "id", "A", 0, None, None, "", *tail, "YES", None, "YES", "NO"),
        ("shop", 1, "by_name", 1, "name", "A", 0, 3, None, "", "BTREE", "", "it's a key",
         "YES", None, "NO", "NO"),
        ("shop", 1, "by_name", 2, "price", "A", 0, None, None, "YES", "BTREE", "",
         "it's a key", "YES", None, "NO", "NO"),
        ("shop", 0, "code", 1, "code", "A", 0, None, None, "YES", *tail, "YES", None, "NO", "NO"),
    ]  # fmt: skip
    keys = run(c, s, "SHOW KEYS IN shop WHERE Key_name = 'code'")
    assert keys.rows == [index.rows[3]]


def test_show_tables_databases_variables_and_warnings() -> None:
    c = cluster()
    s = c.session()
    run(c, s, "CREATE TABLE b (id INT); CREATE TABLE a (id INT); CREATE VIEW v AS SELECT 1")
    run(c, s, "CREATE SEQUENCE q; CREATE DATABASE other")
    assert run(c, s, "SHOW TABLES").rows == [("a",), ("b",), ("q",), ("v",)]
    full = run(c, s, "SHOW FULL TABLES FROM test LIKE '%'")
    assert full.columns == ["Tables_in_test (%)", "Table_type"]
    assert full.rows == [("a", "BASE TABLE"), ("b", "BASE TABLE"), ("q", "SEQUENCE"),
                         ("v", "VIEW")]  # fmt: skip
    assert run(c, s, "SHOW DATABASES").rows == [("other",), ("test",)]
    assert run(c, s, "SHOW SCHEMAS LIKE 'o%'").columns == ["Database (o%)"]
    variables = run(c, s, "SHOW VARIABLES LIKE 'auto%'")
    assert variables.rows == [
        ("auto_increment_increment", "1"),
        ("auto_increment_offset", "1"),
        ("autocommit", "ON"),
    ]
    assert run(c, s, "SHOW CREATE DATABASE other").rows == [
        ("other", "CREATE DATABASE `other` /*!40100 DEFAULT CHARACTER SET utf8mb4 */")
    ]
    # a charset's default collation goes unsaid, utf8mb3's too (show.py kept a table of its
    # own without it; it reads model.mysql.DEFAULT_COLLATION_OF now)
    run(c, s, "CREATE DATABASE mb3 CHARACTER SET utf8mb3")
    assert run(c, s, "SHOW CREATE DATABASE mb3").rows == [
        ("mb3", "CREATE DATABASE `mb3` /*!40100 DEFAULT CHARACTER SET utf8mb3 */")
    ]
    assert run(c, s, "SHOW CREATE TABLE q").rows == [
        (
            "q",
            "CREATE SEQUENCE `q` start with 1 minvalue 1 maxvalue 9223372036854775806"
            " increment by 1 cache 1000 nocycle ENGINE=InnoDB",
        )
    ]
    empty = run(c, s, "SHOW ENGINES")
    assert (empty.columns, empty.rows) == (
        ["Engine", "Support", "Comment", "Transactions", "XA", "Savepoints"],
        [],
    )
    warnings = run(c, s, "SHOW WARNINGS")
    assert warnings.rows == [
        ("Warning", 1105, "SHOW ENGINES is not simulated here: answered with no rows")
    ]
    assert run(c, s, "SHOW WARNINGS").rows == warnings.rows  # SHOW WARNINGS keeps them
    run(c, s, "SELECT 1")
    assert run(c, s, "SHOW WARNINGS").rows == []


@pytest.mark.parametrize(
    ("sql", "code", "message"),
    [
        ("SHOW CREATE TABLE nope", 1146, "Table 'test.nope' doesn't exist"),
        ("DESCRIBE other.nope", 1049, "Unknown database 'other'"),
        ("SHOW TABLES FROM nope", 1049, "Unknown database 'nope'"),
        ("SHOW INDEX FROM nope", 1146, "Table 'test.nope' doesn't exist"),
        ("SHOW CREATE VIEW t", 1347, "'test.t' is not VIEW"),
        ("SHOW CREATE SEQUENCE t", 1347, "'test.t' is not SEQUENCE"),
        (
            "SHOW GARBAGE",
            1064,
            "You have an error in your SQL syntax; check the manual that corresponds to your"
            ' TiDB version for the right syntax to use line 1 column 12 near "GARBAGE"',
        ),
        (
            "SHOW COLUMNS t",
            1064,
            "You have an error in your SQL syntax; check the manual that corresponds to your"
            ' TiDB version for the right syntax to use line 1 column 14 near "t"',
        ),
    ],
)
def test_show_errors_are_tidbs(sql: str, code: int, message: str) -> None:
    c = cluster()
    s = c.session()
    run(c, s, "CREATE TABLE t (id INT)")
    error = failure(c, s, sql)
    assert (error.code, error.message) == (code, message)


def test_show_tables_without_a_database_is_1046() -> None:
    c = cluster()
    s = c.session()
    s.database = None
    error = failure(c, s, "SHOW TABLES")
    assert (error.code, error.sqlstate, error.message) == (1046, "3D000", "No database selected")


def test_describe_and_show_columns_as_mariadb_answers_them(mariadb: MariaDB) -> None:
    """A table where TiDB and MariaDB print alike: the same rows for DESCRIBE, SHOW FULL
    COLUMNS and the common columns of SHOW INDEX."""
    ddl = (
        "CREATE TABLE same (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(20) NOT"
        " NULL DEFAULT 'x' COMMENT 'n', price DECIMAL(8,2) DEFAULT 1.5, code INT UNIQUE,"
        " big BIGINT UNSIGNED, d DATE, KEY by_name (name(3), price))"
    )
    queries = ["DESCRIBE same", "SHOW FULL COLUMNS FROM same", "SHOW INDEX FROM same"]
    conn = _maria(mariadb)
    theirs = []
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS same")
        cur.execute(ddl)
        for sql in queries:
            cur.execute(sql)
            theirs.append([tuple(str(v) if v is not None else None for v in r) for r in cur])
    conn.close()
    c = cluster()
    s = c.session()
    run(c, s, ddl)
    ours = [
        [tuple(str(v) if v is not None else None for v in r) for r in run(c, s, sql).rows or []]
        for sql in queries
    ]
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]
    # Table ... Sub_part, Null, Index_type, comment; MariaDB lists unique keys first
    common = [0, 1, 2, 3, 4, 5, 7, 9, 10, 12]
    assert sorted([r[i] for i in common] for r in ours[2]) == sorted(
        [r[i] for i in common] for r in theirs[2]
    )


# -- over the port --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    found = Server.start(tmp_path_factory.mktemp("port"), lock_wait_s=str(LOCK_WAIT_S))
    yield found
    log = found.stop()
    assert "Traceback" not in log and "internal error" not in log, log


def test_connecting_beside_an_open_transaction(server: Server) -> None:
    """Issue 25: with one session inside a transaction, another connects (with database=,
    as drivers do, and their SET NAMES), reads the committed rows, and its session
    statements answer at once."""
    holder = server.mysql(autocommit=True)
    with holder.cursor() as cur:
        cur.execute("CREATE TABLE beside (id INT PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO beside VALUES (1, 10)")
        cur.execute("BEGIN")
        cur.execute("UPDATE beside SET v = 11 WHERE id = 1")
    started = time.monotonic()
    other = server.mysql(autocommit=True)  # database="test"
    with other.cursor() as cur:
        cur.execute("SET NAMES utf8mb4")
        cur.execute("SELECT id, v FROM beside")
        assert cur.fetchall() == ((1, 10),)
        cur.execute("SHOW CREATE TABLE beside")
        assert cur.fetchone()[0] == "beside"
    assert time.monotonic() - started < LOCK_WAIT_S
    with holder.cursor() as cur:
        cur.execute("COMMIT")
    with other.cursor() as cur:
        cur.execute("SELECT v FROM beside")
        assert cur.fetchall() == ((11,),)
    other.close()
    holder.close()


@pytest.mark.parametrize(
    ("charset", "word", "prepared"),
    [("latin1", "café €", False), ("gbk", "中文", False), ("latin1", "naïve", True)],
)
def test_a_client_in_another_charset_reads_back_what_it_wrote(
    server: Server, charset: str, word: str, prepared: bool
) -> None:
    """A client connected in latin1 or GBK (its handshake's collation, so the session's SET
    NAMES): what it writes is stored and emitted as the text it meant, its WHERE finds it,
    and it reads it back in its charset, by text and by prepared statements. (A latin1
    client read 'cafÃ©' back and its WHERE found nothing; a GBK one could not decode
    the answer.)"""
    table = f"cs_{charset}_{int(prepared)}"
    if prepared:
        conn = mysql.connector.connect(
            host="127.0.0.1", port=server.mysql_port, user="root", database="test",
            charset=charset, collation=f"{charset}_swedish_ci", autocommit=True,
        )  # fmt: skip
        cur = conn.cursor(prepared=True)
    else:
        conn = server.mysql(charset=charset, autocommit=True)
        cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, s VARCHAR(20))")
    cur.execute(f"INSERT INTO {table} VALUES (1, %s)", (word,))
    cur.execute(f"SELECT s, CHAR_LENGTH(s) FROM {table} WHERE s = %s", (word,))
    assert [tuple(row) for row in cur.fetchall()] == [(word, len(word))]
    cur.execute("SELECT @@character_set_client, @@character_set_results")
    assert [tuple(row) for row in cur.fetchall()] == [(charset, charset)]
    conn.close()
    assert server.inserted(table, "s") == [word]


def test_lastrowid_and_errors_through_pymysql(server: Server) -> None:
    conn = server.mysql(autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE ids (id INT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL)")
        cur.execute("INSERT INTO ids (v) VALUES (5)")
        assert cur.lastrowid == 1
        cur.execute("INSERT INTO ids (v) VALUES (6), (7)")
        assert cur.lastrowid == 2
        cur.execute("SELECT DATABASE(), NOW() IS NOT NULL, 1+1")
        assert [d[0] for d in cur.description] == ["DATABASE()", "NOW() IS NOT NULL", "1+1"]
        with pytest.raises(pymysql.err.IntegrityError) as null:
            cur.execute("INSERT INTO ids (v) VALUES (NULL)")
        assert null.value.args == (1048, "Column 'v' cannot be null at row 1")
    conn.close()


CLIENT = shutil.which("mariadb") or shutil.which("mysql")


def _client(server: Server, sql: str) -> subprocess.CompletedProcess[str]:
    if CLIENT is None:
        pytest.skip("no mariadb/mysql command-line client (Debian: mariadb-client)")
    command = [CLIENT, "-h", "127.0.0.1", "-P", str(server.mysql_port), "-u", "root", "test"]
    return subprocess.run([*command, "-e", sql], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("sql", "printed"),
    [
        ("INSERT INTO cli_e (id, v) VALUES (1, NULL)", "ERROR 1048 (23000)"),
        ("ROLLBACK TO SAVEPOINT nope", "ERROR 1305 (42000)"),
        ("INSERT INTO cli_e (id, k) VALUES (2, 'z')", "ERROR 1265 (01000)"),
        ("INSERT INTO cli_e (id, v) VALUES (1, 1), (1, 1)", "ERROR 1062 (23000)"),
        ("SELECT * FROM nope", "ERROR 1146 (42S02)"),
        ("SHOW CREATE TABLE nope", "ERROR 1146 (42S02)"),
    ],
)
def test_the_mariadb_client_prints_tidbs_sqlstates(server: Server, sql: str, printed: str) -> None:
    made = _client(server, "CREATE TABLE IF NOT EXISTS cli_e (id INT PRIMARY KEY, v INT NOT"
                           " NULL DEFAULT 0, k ENUM('a','b'))")  # fmt: skip
    assert made.returncode == 0, made.stderr
    ran = _client(server, sql)
    assert ran.returncode == 1
    assert printed in ran.stderr, ran.stderr


def test_the_mariadb_client_reads_show_and_describe(server: Server) -> None:
    assert _client(server, SHOP.replace("shop", "cli_shop")).returncode == 0
    assert (
        _client(server, "INSERT INTO cli_shop (name, code) VALUES ('a', 1), ('b', 2)").returncode
        == 0
    )
    shown = _client(server, "SHOW CREATE TABLE cli_shop\\G")
    assert shown.returncode == 0, shown.stderr
    expected = SHOP_CREATE.replace("shop", "cli_shop")
    assert f"Create Table: {expected}\n" in shown.stdout
    described = _client(server, "DESCRIBE cli_shop")
    lines = [line.split("\t") for line in described.stdout.splitlines()]
    assert lines[0] == ["Field", "Type", "Null", "Key", "Default", "Extra"]
    as_text = [[("NULL" if v is None else str(v)) for v in row] for row in SHOP_COLUMNS]
    assert lines[1:] == as_text


def test_the_binary_protocol_binds_every_type(server: Server) -> None:
    """mysql-connector's prepared statements: parameters of each type round-trip (a quote,
    a backslash or a `?` inside a string is data, not SQL), and SHOW answers in binary."""
    connector = pytest.importorskip("mysql.connector", reason="mysql-connector-python absent")
    conn = connector.connect(
        host="127.0.0.1", port=server.mysql_port, user="root", database="test", autocommit=True
    )
    cur = conn.cursor(prepared=True)
    cur.execute(
        "CREATE TABLE bound (id INT AUTO_INCREMENT PRIMARY KEY, s VARCHAR(40), d DECIMAL(8,2),"
        " at DATETIME(3), day DATE, t TIME, b VARBINARY(10), f DOUBLE)"
    )
    values = (
        "it's a \\ test ?",
        Decimal("12.34"),
        dt.datetime(2024, 1, 2, 3, 4, 5, 678000),
        dt.date(2024, 5, 6),
        dt.timedelta(hours=25, minutes=2, seconds=3),
        b"\x00\xff'",
        1.5,
    )
    cur.execute("INSERT INTO bound (s, d, at, day, t, b, f) VALUES (?, ?, ?, ?, ?, ?, ?)", values)
    assert cur.lastrowid == 1
    cur.execute("SELECT s, d, at, day, t, b, f FROM bound WHERE s = ?", (values[0],))
    assert cur.fetchall() == [values]
    cur.execute("SELECT ? + 1, ?", (41, None))
    assert cur.fetchall() == [(42, None)]
    cur.execute("DESCRIBE bound")
    assert cur.fetchall()[1] == ("s", "varchar(40)", "YES", "", None, "")
    conn.close()


BINARY_TABLE = (
    "CREATE TABLE bin (id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED,"
    " su SMALLINT UNSIGNED, mi MEDIUMINT, iu INT UNSIGNED, bu BIGINT UNSIGNED, bi BIGINT,"
    " t TIME(1), t0 TIME, d DATE, dt DATETIME(6), f FLOAT, tx TEXT, bl BLOB, s VARCHAR(8))"
    " COLLATE utf8mb4_general_ci"  # (MariaDB flags a _bin column's strings BINARY)
)
BINARY_ROWS = (
    "INSERT INTO bin VALUES"
    " (1, -5, 200, 60000, -8000000, 4000000000, 18446744073709551615, -9223372036854775808,"
    " '-01:00:00.5', '-838:59:59', '1000-01-01', '2024-02-29 01:02:03.000004', 1.5,"
    " 'text é', x'00ff', 'café 中'),"
    " (2, 127, 0, 0, 8388607, 0, 0, 0, '00:00:00', '12:00:00', '2024-02-29',"
    " '2024-01-01 00:00:00', -0.25, '', '', '')"
)
BINARY_COLUMNS = [
    "ti", "tu", "su", "mi", "iu", "bu", "bi", "t", "t0", "d", "dt", "f", "tx", "bl", "s",
    "COALESCE(IF(id = 2, NULL, ti), 'z')", "IF(id = 1, -1, 'x')",
]  # fmt: skip


def _reads(connect: Callable[..., Any], charset: str) -> dict[str, Any]:
    """What mysql-connector reads of each column in `charset`, by its prepared statements
    (the binary protocol) and as text, with its UNSIGNED flag (the client's own quirks,
    such as how it reads a negative TIME, are the same whichever server answers)."""
    setup = connect(charset="utf8mb4", collation="utf8mb4_bin", autocommit=True)
    for sql in ("DROP TABLE IF EXISTS bin", BINARY_TABLE, BINARY_ROWS):
        setup.cursor().execute(sql)
    conn = connect(charset=charset, collation=f"{charset}_bin")
    prepared, text = conn.cursor(prepared=True), conn.cursor()
    found = {}
    for column in BINARY_COLUMNS:
        prepared.execute(f"SELECT {column} FROM bin WHERE id > ? ORDER BY id", (0,))
        binary = prepared.fetchall(), bool(prepared.description[0][7] & 32)
        text.execute(f"SELECT {column} FROM bin ORDER BY id")
        found[column] = (binary, text.fetchall(), bool(text.description[0][7] & 32))
    conn.close()
    setup.close()
    return found


@pytest.mark.parametrize("charset", ["utf8mb4", "latin1"])
def test_rows_read_as_from_mariadb(server: Server, mariadb: MariaDB, charset: str) -> None:
    """Rows, in the binary protocol (prepared statements) and as text, as MariaDB sends
    them: TINYINT was sent as a boolean (-5 and 200 read as 1), an unsigned value past the
    signed range was an internal error (struct.error), a negative TIME had its days counted
    twice, a TEXT was read as bytes and was an internal error in binary (LookupError:
    unknown encoding: binary), a latin1 client's text latin1 cannot hold was one
    (UnicodeEncodeError; it is `?`), and an expression of numbers and text
    (`IF(id = 1, -1, 'x')`) another (ValueError)."""
    connector = pytest.importorskip("mysql.connector", reason="mysql-connector-python absent")
    _maria(mariadb).close()  # `test` exists
    said = {
        name: _reads(
            functools.partial(
                connector.connect, host="127.0.0.1", port=port, user="root", database="test"
            ),
            charset,
        )
        for name, port in (("mariadb", mariadb.port), ("ours", server.mysql_port))
    }
    assert said["ours"] == said["mariadb"]


def test_binary_rows_are_tidbs_bytes(server: Server) -> None:
    """A binary row's bytes (TiDB `dump.BinaryTime`, `BinaryDateTime`; YEAR a two-byte
    integer, INT24 four; an expression's integer past BIGINT's range as DECIMAL's text):
    the header and NULL bitmap, then each value."""
    w = Wire(server.mysql_port)
    assert w.login().kind == "ok"
    for sql in (
        "SET sql_mode = ''",
        "CREATE TABLE raw (id INT PRIMARY KEY, y YEAR, t TIME(1), t0 TIME, m MEDIUMINT,"
        " d DATETIME, z DATE)",
        "INSERT INTO raw VALUES (1, 2024, '-01:00:00.5', '-838:59:59', -2, '2024-02-29 01:02:03',"
        " '0000-00-00')",
    ):
        assert w.query(sql).kind == "ok", sql
    stmt_id, _ = w.prepare("SELECT y, t, t0, m, d, z FROM raw")
    w.command(b"\x17" + struct.pack("<IBI", stmt_id, 0, 1))
    assert w.answer(binary=True).packets == [
        b"\x00\x00"  # the header, the NULL bitmap (6 + 2 bits)
        + b"\xe8\x07"  # YEAR 2024
        + b"\x0c\x01" + bytes(4) + b"\x01\x00\x00" + (500000).to_bytes(4, "little")
        + b"\x08\x01" + (34).to_bytes(4, "little") + b"\x16\x3b\x3b"  # -34 days 22:59:59
        + (-2).to_bytes(4, "little", signed=True)
        + b"\x07" + (2024).to_bytes(2, "little") + b"\x02\x1d\x01\x02\x03"
        + b"\x00"  # the zero date
    ]  # fmt: skip
    # integers that no one integer type holds go as DECIMAL (text)
    assert w.query("INSERT INTO raw (id) VALUES (2)").kind == "ok"
    stmt_id, _ = w.prepare("SELECT IF(id = 1, -1, 18446744073709551615) FROM raw ORDER BY id")
    w.command(b"\x17" + struct.pack("<IBI", stmt_id, 0, 1))
    assert w.answer(binary=True).rows == [("-1",), ("18446744073709551615",)]
    w.close()


def test_reset_connection_rolls_back_and_lets_go(server: Server) -> None:
    connector = pytest.importorskip("mysql.connector", reason="mysql-connector-python absent")
    conn = connector.connect(
        host="127.0.0.1", port=server.mysql_port, user="root", database="test", autocommit=True
    )
    cur = conn.cursor()
    cur.execute("CREATE TABLE resets (id INT PRIMARY KEY)")
    cur.execute("BEGIN")
    cur.execute("INSERT INTO resets VALUES (1)")
    assert conn.in_transaction
    conn.cmd_reset_connection()
    cur = conn.cursor()
    cur.execute("SELECT DATABASE()")
    assert cur.fetchall() == [("test",)]  # the database is kept
    other = server.mysql(autocommit=True)
    with other.cursor() as c2:
        c2.execute("INSERT INTO resets VALUES (2)")  # no wait: nothing is held
        c2.execute("SELECT id FROM resets")
        assert c2.fetchall() == ((2,),)
    other.close()
    conn.close()


def test_connection_id_is_the_handshakes_and_a_reset_keeps_it(server: Server) -> None:
    """CONNECTION_ID() is the id the handshake gave (it was a per-cluster count of its own),
    distinct per connection, and COM_RESET_CONNECTION and COM_CHANGE_USER keep it, as
    MySQL's do (a pooled connection's id changed at each checkout)."""
    connector = pytest.importorskip("mysql.connector", reason="mysql-connector-python absent")
    conn = connector.connect(host="127.0.0.1", port=server.mysql_port, user="root")
    other = server.mysql()
    cur = conn.cursor()
    said = []
    for reset in (lambda: None, conn.cmd_reset_connection, lambda: conn.cmd_change_user("root")):
        reset()
        cur = conn.cursor()
        cur.execute("SELECT CONNECTION_ID()")
        said += cur.fetchall()
    assert said == [(conn.connection_id,)] * 3
    with other.cursor() as c2:
        c2.execute("SELECT CONNECTION_ID()")
        assert c2.fetchall() == ((other.thread_id(),),)
    assert other.thread_id() != conn.connection_id
    other.close()
    conn.close()


def test_a_client_gone_mid_transaction_lets_others_write_and_emits_nothing(
    server: Server,
) -> None:
    conn = server.mysql(autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE gone (id INT PRIMARY KEY)")
        cur.execute("BEGIN")
        cur.execute("INSERT INTO gone VALUES (1)")
    conn._sock.shutdown(socket.SHUT_RDWR)  # no COM_QUIT: the connection just ends
    conn._sock.close()
    done = threading.Event()

    def write() -> None:
        other = server.mysql(autocommit=True)
        with other.cursor() as cur:
            cur.execute("INSERT INTO gone VALUES (2)")
        other.close()
        done.set()

    threading.Thread(target=write).start()
    assert done.wait(LOCK_WAIT_S * 4)
    assert server.inserted("gone") == [2]


def test_the_greeting_says_autocommit_as_mysql_does(server: Server) -> None:
    """The handshake's status flags say autocommit (0x0002), as MySQL's, TiDB's and
    MariaDB's do: pymysql reads its session's mode from them, and with 0 there it never
    sent `autocommit=False`'s SET, so every statement of its "transaction" committed."""
    w = Wire(server.mysql_port)
    try:
        greeting = w.greeting()
        at = greeting.index(b"\0", 1) + 1 + 4 + 8 + 1 + 2 + 1
        assert greeting[at : at + 2] == b"\x02\x00"
    finally:
        w.close()
    setup = server.mysql(autocommit=True)
    with setup.cursor() as cur:
        cur.execute("CREATE TABLE greeted (id INT PRIMARY KEY)")
    client = server.mysql(autocommit=False)
    with client.cursor() as cur:
        cur.execute("SELECT @@autocommit")
        assert cur.fetchall() == ((0,),)
        cur.execute("INSERT INTO greeted VALUES (1)")
    client.rollback()
    with setup.cursor() as cur:
        cur.execute("SELECT id FROM greeted")
        assert cur.fetchall() == ()
    client.close()
    setup.close()


def test_what_orms_ask_on_connect_answers() -> None:
    """Django's feature checks (CONVERT_TZ for its time zone support, the storage engine)
    and the variables SQLAlchemy and Django read."""
    c = cluster()
    s = c.session()
    assert run(c, s, "SELECT CONVERT_TZ('2001-01-01 01:00:00', 'UTC', 'UTC') IS NOT NULL").rows == [
        (1,)
    ]
    assert run(
        c,
        s,
        "SELECT CONVERT_TZ('2001-01-01 01:00:00', '+00:00', 'Asia/Shanghai'),"
        " CONVERT_TZ('2001-01-01', 'Nowhere/Else', 'UTC')",
    ).rows == [("2001-01-01 09:00:00", None)]
    assert run(
        c, s, "SELECT @@default_storage_engine, @@sql_auto_is_null, @@innodb_lock_wait_timeout"
    ).rows == [("InnoDB", 0, 50)]
