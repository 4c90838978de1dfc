"""Hostile inputs of `ticdc-sim check` (issue 26): directories that are not --expect
directories, URLs that are not databases, databases that cannot be reached or read, tables
the expected state does not hold, names that need quoting. A check that cannot run exits 2
with one `error: ...` line naming --expect or --target (the URL without its password);
never a traceback."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from support_check import run
from support_mariadb import MariaDB
from ticdc_sim.check import diff, expected_from_engine
from ticdc_sim.cli import app
from ticdc_sim.errors import CheckError

SCRIPT = "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(5));\nINSERT INTO t VALUES (1, 'a');\n"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An --expect directory `expect` of SCRIPT, a copy of it `down.db`, and things that
    are neither: an empty directory, a text file, a Parquet file of someone else's."""
    root = tmp_path_factory.mktemp("check")
    (root / "s.sql").write_text(SCRIPT)
    result = CliRunner().invoke(
        app,
        [
            "replay",
            str(root / "s.sql"),
            "--sink-uri",
            "memory://?protocol=canal-json",
            "--expect",
            str(root / "expect"),
        ],
    )
    assert result.exit_code == 0, result.output
    with sqlite3.connect(root / "down.db") as conn:
        conn.execute("CREATE TABLE t (id INTEGER, v TEXT)")
        conn.execute("INSERT INTO t VALUES (1, 'a')")
    (root / "empty").mkdir()
    (root / "notes.txt").write_text("mine")
    (root / "theirs").mkdir()
    pq.write_table(pa.table({"a": [1]}), root / "theirs" / "test.t.parquet")
    (root / "broken").mkdir()
    (root / "broken" / "test.t.parquet").write_bytes(b"PAR1 not really")
    return root


def check(place: Path, *args: str) -> Any:
    given = [a.format(dir=place) for a in args]
    result = CliRunner().invoke(app, ["check", *given])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


EXPECT = ["--expect", "{dir}/expect"]
SQLITE = ["--target", "sqlite:///{dir}/down.db"]

REFUSED: list[Any] = [
    pytest.param(
        ["--expect", "{dir}/nope", *SQLITE], "--expect {dir}/nope: no such directory", id="no-dir"
    ),
    pytest.param(
        ["--expect", "{dir}/notes.txt", *SQLITE],
        "--expect {dir}/notes.txt: not a directory",
        id="dir-is-a-file",
    ),
    pytest.param(
        ["--expect", "{dir}/empty", *SQLITE],
        "--expect {dir}/empty: holds no <schema>.<table>.parquet files (write them with replay"
        " --expect)",
        id="empty-dir",
    ),
    pytest.param(
        ["--expect", "{dir}/theirs", *SQLITE],
        "--expect: {dir}/theirs/test.t.parquet is not a table file of replay --expect, or one"
        " written before ticdc-sim recorded column types (run replay --expect again)",
        id="foreign-parquet",
    ),
    pytest.param(
        [*EXPECT, "--target", "{dir}/down.db"],
        "--target {dir}/down.db: not a database URL (sqlite:///FILE,"
        " mysql://USER:PASSWORD@HOST:PORT/, or an SQLAlchemy URL)",
        id="path-not-url",
    ),
    pytest.param(
        [*EXPECT, "--target", "sqlite:///{dir}/nope.db"],
        "--target sqlite:///{dir}/nope.db: {dir}/nope.db: no such file",
        id="sqlite-no-file",
    ),
    pytest.param(
        [*EXPECT, "--target", "sqlite:///{dir}/empty"],
        "--target sqlite:///{dir}/empty: {dir}/empty: a directory",
        id="sqlite-directory",
    ),
    pytest.param(
        [*EXPECT, "--target", "sqlite://"],
        "--target sqlite://: names no database file (sqlite:///FILE, sqlite:////ABSOLUTE)",
        id="sqlite-memory",
    ),
    pytest.param(
        [*EXPECT, "--target", "sqlite:///{dir}/notes.txt"],
        '--target sqlite:///{dir}/notes.txt: SELECT name FROM "main".sqlite_master WHERE type'
        " IN ('table', 'view'): file is not a database",
        id="sqlite-not-a-database",
    ),
    pytest.param(
        [*EXPECT, "--target", "sqlite:///{dir}/down.db?mode=rw"],
        "--target sqlite:///{dir}/down.db?mode=rw: sqlite:///FILE takes no parameters (got"
        " ?mode=rw)",
        id="sqlite-parameter",
    ),
    pytest.param(
        [*EXPECT, "--target", "mysql://root:s3cret@127.0.0.1:{port}/"],
        "--target mysql://root:***@127.0.0.1:{port}/: cannot connect: ERROR 2003 (HY000): Can't"
        " connect to MySQL server on '127.0.0.1' ([Errno 111] Connection refused)",
        id="mysql-unreachable",
    ),
    pytest.param(
        [*EXPECT, "--target", "mysql://root@127.0.0.1:99999/"],
        "--target mysql://root@127.0.0.1:99999/: the port is not a number from 0 to 65535",
        id="mysql-bad-port",
    ),
    pytest.param(
        [*EXPECT, "--target", "mysql://root@127.0.0.1/?ssl_ca=x"],
        "--target mysql://root@127.0.0.1/?ssl_ca=x: unknown parameter ssl_ca (a mysql:// URL"
        " takes unix_socket, charset, time-zone)",
        id="mysql-unknown-parameter",
    ),
    pytest.param(
        [*EXPECT, "--target", "mysql://root:p@ss@127.0.0.1:{port}/"],
        "--target mysql://root:***@127.0.0.1:{port}/: cannot connect: ERROR 2003 (HY000): Can't"
        " connect to MySQL server on '127.0.0.1' ([Errno 111] Connection refused)",
        id="mysql-password-with-at-sign",
    ),
    pytest.param(
        [*EXPECT, "--target", "mysql://root@127.0.0.1/?charset=klingon"],
        "--target mysql://root@127.0.0.1/?charset=klingon: charset 'klingon': not a charset"
        " MySQL knows",
        id="mysql-unknown-charset",
    ),
    pytest.param(
        [*EXPECT, "--target", "mysql://[::1/"],
        "--target mysql://[::1/: not a URL: Invalid IPv6 URL",
        id="mysql-broken-url",
    ),
    pytest.param(
        [*EXPECT, "--target", "mysql+mysqlconnector://root@127.0.0.1:{port}/?colour=red"],
        "--target mysql+mysqlconnector://root@127.0.0.1:{port}/?colour=red: cannot connect:"
        " Unsupported argument 'colour'",
        id="sqlalchemy-driver-refuses-parameter",
    ),
    pytest.param(
        [*EXPECT, "--target", "mysql+mysqlconnector://root@127.0.0.1:{port}/"],
        "--target mysql+mysqlconnector://root@127.0.0.1:{port}/: cannot connect: ERROR 2003"
        " (HY000): Can't connect to MySQL server on '127.0.0.1:{port}' (Errno 111: Connection"
        " refused)",
        id="sqlalchemy-unreachable",
    ),
    pytest.param(
        [*EXPECT, "--target", "sqlite+pysqlite:///{dir}/down.db?colour=red"],
        "--target sqlite+pysqlite:///{dir}/down.db?colour=red: Query string argument(s) 'colour'"
        " are not accepted by the pysqlite driver and are being ignored; SQLite URI arguments"
        " require that 'uri=true' also be present in the URL. (Background on this warning at:"
        " https://sqlalche.me/e/21/squa)",
        id="sqlalchemy-sqlite-parameter",
    ),
    pytest.param(
        [*EXPECT, "--target", "postgresql://me:pw@db/prod"],
        "--target postgresql://me:***@db/prod: a postgresql database: check reads SQLite and"
        " MySQL-compatible databases",
        id="postgresql",
    ),
    pytest.param(
        [*EXPECT, "--target", "mysql+mysqldb://root@127.0.0.1/"],
        "--target mysql+mysqldb://root@127.0.0.1/: its driver is not installed (No module named"
        " 'MySQLdb')",
        id="driver-missing",
    ),
    pytest.param(
        [*EXPECT, *SQLITE, "--table", "test.nosuch"],
        "table 'test.nosuch': not a table of the expected state (test.t)",
        id="unknown-table",
    ),
    pytest.param(
        [*EXPECT, *SQLITE, "--rename", "t=u"],
        "rename 't': not a table of the expected state (test.t)",
        id="rename-unknown-table",
    ),
]


@pytest.mark.parametrize(("args", "message"), REFUSED)
def test_a_check_that_cannot_run_exits_2_naming_what(
    place: Path, args: list[str], message: str
) -> None:
    port = _closed_port()
    result = check(place, *(a.replace("{port}", str(port)) for a in args))
    expected = message.format(dir=place, port=port)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"error: {expected}\n")
    assert "s3cret" not in result.output and "p@ss" not in result.output


def test_a_broken_parquet_file_is_named(place: Path) -> None:
    result = check(place, "--expect", "{dir}/broken", *SQLITE)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"error: --expect: cannot read {place}/broken/test.t.parquet: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rename", "test.t"], "Invalid value for '--rename': 'test.t': SCHEMA.TABLE=NAME"),
        (["--rename", "=u"], "Invalid value for '--rename': '=u': SCHEMA.TABLE=NAME"),
        (
            ["--limit", "-1"],
            "Invalid value for '--limit': Input should be greater than or equal to 0",
        ),
        ([], "Missing option '--target'."),
    ],
)
def test_usage_errors_name_the_option(place: Path, args: list[str], message: str) -> None:
    given = [*SQLITE, *args] if args else []
    result = check(place, *EXPECT, *given)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.endswith(f"\n\nError: {message}\n")


def test_a_mariadb_that_refuses_is_named_without_the_password(
    place: Path, mariadb: MariaDB
) -> None:
    sock = mariadb.root / "sock"
    for url, said in (
        (
            f"mysql://root:s3cret@localhost/?unix_socket={sock}",
            "ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)",
        ),
        (
            f"mysql://root@localhost/nodb?unix_socket={sock}",
            "ERROR 1049 (42000): Unknown database 'nodb'",
        ),
        (
            f"mysql://root@localhost/?unix_socket={sock}&time-zone=Mars/Base'",
            "ERROR 1298 (HY000): Unknown or incorrect time zone: 'Mars/Base''",
        ),
    ):
        result = check(place, *EXPECT, "--target", url)
        shown = url.replace("s3cret", "***")
        assert (result.exit_code, result.stdout, result.stderr) == (
            2,
            "",
            f"error: --target {shown}: cannot connect: {said}\n",
        )


def test_names_that_need_quoting(tmp_path: Path, mariadb: MariaDB) -> None:
    script = (
        'CREATE TABLE `we"ird``s` (`i``d` INT PRIMARY KEY, `v"` TEXT);\n'
        "INSERT INTO `we\"ird``s` VALUES (1, 'x');\n"
    )
    expected = expected_from_engine(run(script).upstream.table_states())
    conn = sqlite3.connect(tmp_path / "d.db")
    conn.execute('CREATE TABLE "we""ird`s" ("i`d" INTEGER, "v""" TEXT)')
    conn.execute('INSERT INTO "we""ird`s" VALUES (1, \'x\')')
    assert diff(expected, conn).report() == "downstream equals upstream: 1 table, 1 row"
    maria = mariadb.connect()
    mariadb.reset(maria)
    with maria.cursor() as cur:
        cur.execute(script.splitlines()[0])
        cur.execute(script.splitlines()[1])
    assert diff(expected, maria).report() == "downstream equals upstream: 1 table, 1 row"
    maria.close()


def test_a_value_the_driver_cannot_read_is_an_error(tmp_path: Path) -> None:
    expected = expected_from_engine(run(SCRIPT).upstream.table_states())
    conn = sqlite3.connect(tmp_path / "d.db", detect_types=sqlite3.PARSE_DECLTYPES)
    conn.execute("CREATE TABLE t (id INTEGER, v TIMESTAMP)")  # sqlite3 parses it as a datetime
    conn.execute("INSERT INTO t VALUES (1, 'a')")
    with pytest.raises(CheckError) as raised:
        diff(expected, conn)
    assert str(raised.value) == (
        '--target (a connection): SELECT "id", "v" FROM "main"."t": the driver cannot read a'
        " row: not enough values to unpack (expected 2, got 1)"
    )


def test_a_connection_of_another_database_is_refused() -> None:
    class Connection:  # what psycopg's would be
        pass

    with pytest.raises(CheckError) as raised:
        diff([], Connection())
    assert str(raised.value) == (
        "--target (a connection): a test_hostile_check.Connection: check reads SQLite (sqlite3)"
        " and MySQL-compatible databases (pymysql, MySQLdb, mysql.connector, mariadb)"
    )
