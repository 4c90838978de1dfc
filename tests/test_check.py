"""The consumer checker (issue 26): a downstream database compared with the upstream's
replicated tables, against SQLite and MariaDB, through the API and `ticdc-sim check`.

The downstream is a naive copy: the engine's final rows inserted by plain SQL into tables
created from the script's DDL (MariaDB) or from SQLite's nearest types, read back as each
driver gives them (SQLite: DECIMAL as float, DATETIME as datetime; MariaDB: FLOAT with six
digits, TIME as timedelta, BIT as bytes).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql
import pytest
from typer.testing import CliRunner

from support_check import run
from support_mariadb import MariaDB
from ticdc_sim.check import (
    ExpectedTable,
    NotReplicated,
    _canonical,
    assert_replicated,
    diff,
    expected_from_dir,
    expected_from_engine,
)
from ticdc_sim.cli import app
from ticdc_sim.errors import CheckError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.model.mysql import MySQLType, TiDBFlag
from ticdc_sim.model.table import ColumnInfo

TYPES = (Path(__file__).parent / "oracle_scripts" / "types.sql").read_text()
# composite key, JSON, TIMESTAMP, CHAR padding, and a table TiCDC does not replicate
DOCS = """
CREATE TABLE docs (k VARCHAR(8), n INT, j JSON, at TIMESTAMP(3) NULL, c CHAR(4),
  PRIMARY KEY (k, n));
INSERT INTO docs VALUES ('a', 1, '{"b": [1, 2.50], "a": null}', '2024-05-06 07:08:09.1235', 'x  '),
  ('b', 2, '[]', NULL, '');
CREATE TABLE nokey (v INT);
INSERT INTO nokey VALUES (1);
"""
SCRIPT = TYPES + DOCS
M = MySQLType


def replicated(engine: Engine) -> list[ExpectedTable]:
    return expected_from_engine(
        (info, rows) for info, rows in engine.upstream.table_states() if info.has_handle_key
    )


@pytest.fixture(scope="module")
def expected() -> list[ExpectedTable]:
    return replicated(run(SCRIPT))


# -- naive copies ---------------------------------------------------------------------------


def _sqlite_type(column: ColumnInfo) -> str:
    """The SQLite column a consumer would make: numbers as numbers (DECIMAL with NUMERIC
    affinity: read back as float), dates and datetimes under the names sqlite3 parses."""
    if column.tp == M.LONGLONG and column.unsigned:
        return "TEXT"  # past SQLite's 64-bit integers
    if column.tp in (M.TINY, M.SHORT, M.INT24, M.LONG, M.LONGLONG, M.YEAR, M.BIT):
        return "INTEGER"
    if column.tp == M.NEWDECIMAL:
        return f"DECIMAL({column.flen},{column.decimal})"
    if column.tp in (M.FLOAT, M.DOUBLE):
        return "REAL"
    if column.tp == M.DATE:
        return "DATE"
    if column.tp in (M.DATETIME, M.TIMESTAMP):
        return "TIMESTAMP"
    return "BLOB" if column.is_binary_charset and column.tp not in (M.DURATION, M.JSON) else "TEXT"


def _sqlite_value(value: Any) -> Any:
    if isinstance(value, Decimal) or (isinstance(value, int) and value >= 1 << 63):
        return str(value)  # what sqlite3 cannot bind
    return value


def copy_to_sqlite(path: Path, tables: list[ExpectedTable]) -> sqlite3.Connection:
    conn = sqlite3.connect(path, detect_types=sqlite3.PARSE_DECLTYPES)
    for table in tables:
        columns = ", ".join(f'"{c.name}" {_sqlite_type(c)}' for c in table.columns)
        conn.execute(f'CREATE TABLE "{table.name}" ({columns})')
        marks = ", ".join("?" * len(table.columns))
        for row in table.rows:
            conn.execute(
                f'INSERT INTO "{table.name}" VALUES ({marks})', list(map(_sqlite_value, row))
            )
    conn.commit()
    return conn


@pytest.fixture
def sqlite_copy(tmp_path: Path, expected: list[ExpectedTable]) -> Iterator[sqlite3.Connection]:
    conn = copy_to_sqlite(tmp_path / "down.db", expected)
    yield conn
    conn.close()


def copy_to_mariadb(conn: Any, script: str, tables: list[ExpectedTable]) -> None:
    with conn.cursor() as cur:
        for stmt in split_script(script.splitlines(keepends=True), "s.sql"):
            if stmt.text.lstrip().upper().startswith("CREATE TABLE"):
                cur.execute(stmt.text)
        for table in tables:
            marks = ", ".join(["%s"] * len(table.columns))
            for row in table.rows:
                cur.execute(f"INSERT INTO `{table.schema}`.`{table.name}` VALUES ({marks})", row)


@pytest.fixture
def mariadb_copy(mariadb: MariaDB, expected: list[ExpectedTable]) -> Iterator[Any]:
    conn = mariadb.connect()
    mariadb.reset(conn)
    copy_to_mariadb(conn, SCRIPT, expected)
    yield conn
    conn.close()


def mariadb_url(server: MariaDB, scheme: str = "mysql") -> str:
    return f"{scheme}://root@localhost/?unix_socket={server.root / 'sock'}"


# -- equal ----------------------------------------------------------------------------------


def test_a_naive_sqlite_copy_equals_the_upstream(
    expected: list[ExpectedTable], sqlite_copy: sqlite3.Connection, tmp_path: Path
) -> None:
    given = sqlite_copy.execute(
        "SELECT d, dtm, dt, tm, id FROM typed WHERE f IS NOT NULL"
    ).fetchone()
    # what the comparison reads through: DECIMAL as float, DATETIME and DATE as objects,
    # TIME and BIGINT UNSIGNED as text
    assert given == (
        1234567.892,
        dt.datetime(2024, 2, 29, 23, 59, 59, 123000),
        dt.date(2024, 2, 29),
        "838:59:59.00",
        "1",
    )
    found = diff(expected, sqlite_copy)
    assert found.ok and not found
    assert found.report() == "downstream equals upstream: 2 tables, 7 rows"
    assert diff(expected, f"sqlite:///{tmp_path / 'down.db'}").ok  # opened read-only


def test_a_naive_mariadb_copy_equals_the_upstream(
    expected: list[ExpectedTable], mariadb_copy: Any, mariadb: MariaDB
) -> None:
    with mariadb_copy.cursor() as cur:
        cur.execute("SELECT f, tm, bt, dtm FROM test.typed WHERE id = 1")
        given = cur.fetchone()
    # FLOAT printed with six digits, TIME as timedelta, BIT as bytes, DATETIME as datetime
    assert given == (
        3.14159,
        dt.timedelta(days=34, seconds=82799),
        b"\x03\xff",
        dt.datetime(2024, 2, 29, 23, 59, 59, 123000),
    )
    assert diff(expected, mariadb_copy).report() == "downstream equals upstream: 2 tables, 7 rows"
    assert diff(expected, mariadb_url(mariadb)).ok


# every other form a consumer may have written the same values in
SAME_VALUES = [
    "UPDATE typed SET d = '1234567.8920', dtm = '2024-02-29 23:59:59.1230', tm = '838:59:59',"
    " s = 'c,a', bn = 'xy', bt = x'03ff', b = 1.0, i = '-2147483648' WHERE id = '1'",
    "UPDATE typed SET d = 0.3340, y = '1970' WHERE id = '4'",
    "UPDATE docs SET j = '{ \"b\" : [1.0, 2.5], \"a\": null }', c = 'x   ' WHERE k = 'a'",
    "UPDATE docs SET at = '2024-05-06 07:08:09.124000' WHERE k = 'a'",
]


def test_a_value_storing_would_round_is_not_the_upstreams(
    expected: list[ExpectedTable], sqlite_copy: sqlite3.Connection
) -> None:
    """MySQL would store 0.3335 in a DECIMAL(.,3) as 0.334, and a time's extra digits
    rounded: a downstream holding them was not written from what TiCDC sent, so they differ
    (they compared equal, hiding a consumer's precision bug)."""
    sqlite_copy.execute("UPDATE typed SET d = 0.3335, i = 43.4 WHERE id = '4'")
    sqlite_copy.execute("UPDATE docs SET at = '2024-05-06 07:08:09.123500' WHERE k = 'a'")
    assert diff(expected, sqlite_copy).report() == (
        "downstream differs from upstream in 2 of 2 tables\n"
        "test.typed (downstream typed): 1 differing row (5 rows upstream, 5 downstream)\n"
        "  differing (upstream -> downstream):\n"
        "    id=4: i 43 -> 43.4, d 0.334 -> 0.3335\n"
        "test.docs (downstream docs): 1 differing row (2 rows upstream, 2 downstream)\n"
        "  differing (upstream -> downstream):\n"
        "    k='a', n=1: at '2024-05-06 07:08:09.124' -> '2024-05-06 07:08:09.123500'"
    )


def test_values_compare_as_mysql_stores_them(
    expected: list[ExpectedTable], sqlite_copy: sqlite3.Connection
) -> None:
    for sql in SAME_VALUES:
        sqlite_copy.execute(sql)
    assert diff(expected, sqlite_copy).report() == "downstream equals upstream: 2 tables, 7 rows"


# -- each kind of difference ----------------------------------------------------------------

HEAD = "downstream differs from upstream in 1 of 2 tables\n"
SQLITE_DIFFERENCES = [
    pytest.param(
        "DELETE FROM docs WHERE k = 'b'",
        "test.docs (downstream docs): 1 row missing downstream (2 rows upstream, 1 downstream)\n"
        "  missing downstream:\n"
        "    k='b', n=2: j='[]', at=NULL, c=''",
        id="missing",
    ),
    pytest.param(
        "INSERT INTO docs VALUES ('c', 3, 'null', NULL, 'z')",
        "test.docs (downstream docs): 1 extra row (2 rows upstream, 3 downstream)\n"
        "  extra downstream:\n"
        "    k='c', n=3: j='null', at=NULL, c='z'",
        id="extra",
    ),
    pytest.param(
        "INSERT INTO docs SELECT * FROM docs WHERE k = 'a'",
        "test.docs (downstream docs): 1 duplicated row (2 rows upstream, 3 downstream)\n"
        "  duplicated downstream (a key given again):\n"
        """    k='a', n=1: j='{"a": null, "b": [1, 2.5]}', at='2024-05-06 07:08:09.124', c='x'""",
        id="duplicate-key",
    ),
    pytest.param(
        "UPDATE docs SET c = 'y' WHERE k = 'a'",
        "test.docs (downstream docs): 1 differing row (2 rows upstream, 2 downstream)\n"
        "  differing (upstream -> downstream):\n"
        "    k='a', n=1: c 'x' -> 'y'",
        id="one-column",
    ),
    pytest.param(
        "UPDATE typed SET d = 1234567.89 WHERE id = '1'",
        "test.typed (downstream typed): 1 differing row (5 rows upstream, 5 downstream)\n"
        "  differing (upstream -> downstream):\n"
        "    id=1: d 1234567.892 -> 1234567.890",
        id="decimal-as-float",
    ),
    pytest.param(
        "UPDATE docs SET at = '2024-05-06 07:08:09.125' WHERE k = 'a'",
        "test.docs (downstream docs): 1 differing row (2 rows upstream, 2 downstream)\n"
        "  differing (upstream -> downstream):\n"
        "    k='a', n=1: at '2024-05-06 07:08:09.124' -> '2024-05-06 07:08:09.125'",
        id="datetime-object",
    ),
    pytest.param(
        "DROP TABLE docs",
        "test.docs (downstream docs): no such table downstream (2 rows upstream)",
        id="table-missing",
    ),
    pytest.param(
        "ALTER TABLE docs DROP COLUMN c",
        "test.docs (downstream docs): columns missing downstream: c (2 rows upstream, 2"
        " downstream)",
        id="column-missing",
    ),
]


@pytest.mark.parametrize(("sql", "report"), SQLITE_DIFFERENCES)
def test_each_difference_in_sqlite_reported(
    sql: str, report: str, expected: list[ExpectedTable], sqlite_copy: sqlite3.Connection
) -> None:
    sqlite_copy.execute(sql)
    found = diff(expected, sqlite_copy)
    assert found and not found.ok
    assert found.report() == HEAD + report


def test_mariadb_values_read_as_the_driver_gives_them(
    expected: list[ExpectedTable], mariadb_copy: Any
) -> None:
    with mariadb_copy.cursor() as cur:
        # the same document and the same FLOAT as MariaDB prints it: equal
        cur.execute("""UPDATE test.docs SET j = '{"b":[1,2.50],"a":null}' WHERE k = 'a'""")
        cur.execute("UPDATE test.typed SET f = 3.141592 WHERE id = 1")
        assert diff(expected, mariadb_copy).ok
        # other values, given back as float, timedelta, bytes and datetime
        cur.execute("UPDATE test.typed SET f = 3.14158, tm = '-838:59:59' WHERE id = 1")
        cur.execute(
            "UPDATE test.typed SET bt = 1, ts = '1970-01-01 00:00:02' WHERE id = 18446744073709551615"
        )
        cur.execute("ALTER TABLE test.typed DROP COLUMN vb")
        cur.execute("""UPDATE test.docs SET j = '{"a": 1}' WHERE k = 'a'""")
    assert diff(expected, mariadb_copy).report() == (
        "downstream differs from upstream in 2 of 2 tables\n"
        "test.typed: columns missing downstream: vb; 2 differing rows (5 rows upstream, 5"
        " downstream)\n"
        "  differing (upstream -> downstream):\n"
        "    id=1: f 3.14159 -> 3.14158, tm '838:59:59.00' -> '-838:59:59.00'\n"
        "    id=18446744073709551615: ts '1970-01-01 00:00:01.000000' -> '1970-01-01"
        " 00:00:02.000000', bt 0 -> 1\n"
        "test.docs: 1 differing row (2 rows upstream, 2 downstream)\n"
        "  differing (upstream -> downstream):\n"
        """    k='a', n=1: j '{"a": null, "b": [1, 2.5]}' -> '{"a": 1}'"""
    )


# -- the API around the comparison ----------------------------------------------------------


def test_assert_replicated_raises_an_assertion_error_with_the_report(
    expected: list[ExpectedTable], sqlite_copy: sqlite3.Connection
) -> None:
    assert assert_replicated(expected, sqlite_copy).ok
    sqlite_copy.execute("DELETE FROM typed")
    with pytest.raises(NotReplicated) as raised:
        assert_replicated(expected, sqlite_copy, tables=["test.typed"])
    assert isinstance(raised.value, AssertionError)
    assert raised.value.diff == diff(expected, sqlite_copy, ["test.typed"])
    assert str(raised.value) == raised.value.diff.report()
    assert str(raised.value).splitlines()[:3] == [
        "downstream differs from upstream in 1 of 1 tables",
        "test.typed (downstream typed): 5 rows missing downstream (5 rows upstream, 0 downstream)",
        "  missing downstream:",
    ]
    assert repr(raised.value.diff) == "<Diff: downstream differs from upstream in 1 of 1 tables>"


def test_the_report_shows_a_bounded_number_of_rows_of_each_kind(tmp_path: Path) -> None:
    values = ", ".join(f"({n}, 'v{n}')" for n in range(1, 16))
    tables = replicated(
        run(f"CREATE TABLE many (id INT PRIMARY KEY, v TEXT);\nINSERT INTO many VALUES {values};\n")
    )
    conn = sqlite3.connect(tmp_path / "d.db")
    conn.execute("CREATE TABLE many (id INTEGER, v TEXT)")
    conn.executemany("INSERT INTO many VALUES (?, ?)", [(n, f"w{n}") for n in range(1, 5)])
    conn.executemany("INSERT INTO many VALUES (?, ?)", [(n, "x") for n in (20, 30, 40)])
    found = diff(tables, conn)
    assert (len(found.tables[0].missing), len(found.tables[0].differing)) == (11, 4)
    assert found.report(limit=2) == (
        "downstream differs from upstream in 1 of 1 tables\n"
        "test.many (downstream many): 11 rows missing downstream, 3 extra rows, 4 differing rows"
        " (15 rows upstream, 7 downstream)\n"
        "  missing downstream:\n"
        "    id=5: v='v5'\n"
        "    id=6: v='v6'\n"
        "    ... and 9 more\n"
        "  extra downstream:\n"
        "    id=20: v='x'\n"
        "    id=30: v='x'\n"
        "    ... and 1 more\n"
        "  differing (upstream -> downstream):\n"
        "    id=1: v 'v1' -> 'w1'\n"
        "    id=2: v 'v2' -> 'w2'\n"
        "    ... and 2 more"
    )


def test_a_table_without_a_handle_key_compares_as_a_multiset(tmp_path: Path) -> None:
    engine = run(
        "CREATE TABLE bag (v INT, w VARCHAR(3));\nINSERT INTO bag VALUES (1, 'a'), (1, 'a'), (2, 'b');\n"
    )
    tables = expected_from_engine(engine.upstream.table_states())  # as with force-replicate
    conn = sqlite3.connect(tmp_path / "d.db")
    conn.execute("CREATE TABLE bag (v INTEGER, w TEXT)")
    conn.executemany("INSERT INTO bag VALUES (?, ?)", [(2, "b"), (1, "a"), (2, "b")])
    assert diff(tables, conn).report() == (
        "downstream differs from upstream in 1 of 1 tables\n"
        "test.bag (downstream bag): 1 row missing downstream, 1 extra row (3 rows upstream, 3"
        " downstream)\n"
        "  missing downstream:\n"
        "    v=1, w='a'\n"
        "  extra downstream:\n"
        "    v=2, w='b'"
    )


def test_sqlite_names_attached_schemas_and_renames(
    expected: list[ExpectedTable], tmp_path: Path
) -> None:
    docs = [t for t in expected if t.name == "docs"]
    copy_to_sqlite(tmp_path / "test.db", docs).close()
    conn = sqlite3.connect(tmp_path / "main.db")
    conn.execute("CREATE TABLE docs (k TEXT)")  # in main: not looked at while test is attached
    conn.execute(f"ATTACH DATABASE '{tmp_path / 'test.db'}' AS test")
    assert diff(docs, conn).report() == "downstream equals upstream: 1 table, 2 rows"
    conn.execute('ALTER TABLE test.docs RENAME TO "docs copy"')
    assert diff(docs, conn).report() == (
        "downstream differs from upstream in 1 of 1 tables\n"
        "test.docs: no such table downstream (2 rows upstream)"
    )
    assert diff(docs, conn, rename={"test.docs": "docs copy"}).ok
    assert diff(docs, conn, rename={"TEST.DOCS": "test.docs copy"}).ok
    conn.execute('ALTER TABLE test."docs copy" RENAME TO "other.docs"')
    assert diff(docs, conn, rename={"test.docs": "other.docs"}).report() == (
        "downstream differs from upstream in 1 of 1 tables\n"
        'test.docs (downstream "other.docs"): no such table downstream (2 rows upstream)'
    )
    conn.execute("DETACH DATABASE test")
    conn.execute("DROP TABLE docs")
    conn.execute(f"ATTACH DATABASE '{tmp_path / 'test.db'}' AS elsewhere")
    conn.execute('CREATE TABLE "other.docs" AS SELECT * FROM elsewhere."other.docs"')
    # no database `other` attached: the table of main named other.docs
    assert diff(docs, conn, rename={"test.docs": "other.docs"}).ok


def test_tables_and_renames_name_tables_of_the_expected_state(
    expected: list[ExpectedTable], sqlite_copy: sqlite3.Connection
) -> None:
    sqlite_copy.execute("DROP TABLE typed")
    assert diff(expected, sqlite_copy, "test.docs").report() == (
        "downstream equals upstream: 1 table, 2 rows"
    )
    with pytest.raises(CheckError) as raised:
        diff(expected, sqlite_copy, ["test.docs", "test.nokey"])
    assert str(raised.value) == (
        "table 'test.nokey': not a table of the expected state (test.typed, test.docs)"
    )
    with pytest.raises(CheckError) as raised:
        diff(expected, sqlite_copy, rename={"docs": "d"})
    assert str(raised.value) == (
        "rename 'docs': not a table of the expected state (test.typed, test.docs)"
    )
    with pytest.raises(CheckError) as raised:
        diff([], sqlite_copy, ["test.t"])
    assert str(raised.value) == "table 'test.t': not a table of the expected state (it has none)"


# -- --expect DIR and the command -----------------------------------------------------------


def _typed(table: ExpectedTable) -> tuple[Any, ...]:
    types = [
        (c.name, c.tp, c.flen, c.decimal, c.flag, c.charset, c.collation, c.elems)
        for c in table.columns
    ]
    return table.schema, table.name, types, table.key, table.rows


@pytest.fixture
def expect_dir(tmp_path: Path) -> Path:
    script = tmp_path / "s.sql"
    script.write_text(SCRIPT)
    out = tmp_path / "expect"
    uri = "memory://?protocol=canal-json"
    args = ["replay", str(script), "--sink-uri", uri, "--expect", str(out), "--expect-checkpoints"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


def test_an_expect_directory_reads_back_as_the_engines_tables(
    expect_dir: Path, expected: list[ExpectedTable]
) -> None:
    from_dir = expected_from_dir(expect_dir)
    assert sorted(map(_typed, from_dir)) == sorted(map(_typed, expected))
    last = max(expect_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    assert sorted(map(_typed, expected_from_dir(last))) == sorted(map(_typed, expected))


def test_check_command_exits_0_1_by_the_comparison(expect_dir: Path, tmp_path: Path) -> None:
    conn = copy_to_sqlite(tmp_path / "down.db", expected_from_dir(expect_dir))
    runner = CliRunner()
    command = [
        "check",
        "--expect",
        str(expect_dir),
        "--target",
        f"sqlite:///{tmp_path / 'down.db'}",
    ]
    equal = runner.invoke(app, command)
    assert (equal.exit_code, equal.stdout, equal.stderr) == (
        0,
        "downstream equals upstream: 2 tables, 7 rows\n",
        "",
    )
    conn.execute("UPDATE docs SET c = 'y' WHERE k = 'a'")
    conn.execute("DELETE FROM typed WHERE id != '1'")
    conn.commit()
    differ = runner.invoke(app, [*command, "--limit", "1"])
    assert (differ.exit_code, differ.stderr) == (1, "")
    assert differ.stdout == (
        "downstream differs from upstream in 2 of 2 tables\n"
        "test.docs (downstream docs): 1 differing row (2 rows upstream, 2 downstream)\n"
        "  differing (upstream -> downstream):\n"
        "    k='a', n=1: c 'x' -> 'y'\n"
        "test.typed (downstream typed): 4 rows missing downstream (5 rows upstream, 1"
        " downstream)\n"
        "  missing downstream:\n"
        "    id=3: ti=NULL, si=NULL, mi=NULL, i=NULL, bi=NULL, d=NULL, f=NULL, db=NULL, dt=NULL,"
        " dtm=NULL, ts=NULL, tm=NULL, y=NULL, e=NULL, s=NULL, bt=NULL, ch=NULL, vc=NULL, bn=NULL,"
        " vb=NULL, tx=NULL, bl=NULL, b=NULL\n"
        "    ... and 3 more\n"
    )
    only = runner.invoke(app, [*command, "--table", "test.typed", "--table", "test.typed"])
    assert (only.exit_code, only.stdout.splitlines()[0]) == (
        1,
        "downstream differs from upstream in 1 of 1 tables",
    )
    conn.execute("ALTER TABLE docs RENAME TO docs_v1")
    conn.commit()
    renamed = runner.invoke(
        app, [*command, "--table", "test.docs", "--rename", "test.docs=docs_v1"]
    )
    assert (renamed.exit_code, renamed.stdout) == (
        1,
        "downstream differs from upstream in 1 of 1 tables\n"
        "test.docs (downstream docs_v1): 1 differing row (2 rows upstream, 2 downstream)\n"
        "  differing (upstream -> downstream):\n"
        "    k='a', n=1: c 'x' -> 'y'\n",
    )
    conn.close()


# -- URLs -----------------------------------------------------------------------------------


def test_urls_natively_and_through_sqlalchemy(
    expected: list[ExpectedTable],
    sqlite_copy: sqlite3.Connection,
    tmp_path: Path,
    mariadb_copy: Any,
    mariadb: MariaDB,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    for url in (
        "sqlite:///down.db",  # relative, as SQLAlchemy reads it
        f"sqlite:///{tmp_path}/down.db",
        f"sqlite+pysqlite:///{tmp_path}/down.db",
        f"sqlite+pysqlite:///file:{tmp_path}/down.db?mode=ro&uri=true",
        mariadb_url(mariadb),
        mariadb_url(mariadb, "mariadb"),
        mariadb_url(mariadb, "mysql+pymysql"),
        mariadb_url(mariadb, "mysql+mysqlconnector"),
        mariadb_url(mariadb, "mariadb+mysqlconnector"),
    ):
        assert diff(expected, url).report() == "downstream equals upstream: 2 tables, 7 rows", url
    # TIMESTAMP read in the session's time zone: TiCDC's, as its MySQL sink's time-zone
    assert diff(expected, mariadb_url(mariadb) + "&time-zone=%2B00:00").ok
    assert diff(expected, mariadb_url(mariadb) + "&time-zone=%2B01:00", "test.docs").report() == (
        "downstream differs from upstream in 1 of 1 tables\n"
        "test.docs: 1 differing row (2 rows upstream, 2 downstream)\n"
        "  differing (upstream -> downstream):\n"
        "    k='a', n=1: at '2024-05-06 07:08:09.124' -> '2024-05-06 08:08:09.124'"
    )
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)  # not installed
    assert diff(expected, "sqlite:///down.db").ok
    assert diff(expected, mariadb_url(mariadb)).ok
    with pytest.raises(CheckError) as raised:
        diff(expected, mariadb_url(mariadb, "mysql+mysqlconnector"))
    assert str(raised.value) == (
        f"--target {mariadb_url(mariadb, 'mysql+mysqlconnector')}: a mysql+mysqlconnector://"
        " URL needs SQLAlchemy (pip install sqlalchemy); sqlite:///FILE and mysql://... need"
        " nothing more"
    )


# -- the value rules ------------------------------------------------------------------------


def column(tp: MySQLType, flen: int = -1, decimal: int = 0, **given: Any) -> ColumnInfo:
    charset = given.pop("charset", "binary")
    return ColumnInfo(
        1,
        "c",
        0,
        tp,
        flen,
        decimal,
        given.pop("flag", TiDBFlag.NONE),
        charset,
        "utf8mb4_bin" if charset != "binary" else "binary",
        **given,
    )


TEXT = {"charset": "utf8mb4"}
# (upstream column, what a driver or a consumer gave back, the form compared)
RULES = [
    pytest.param(column(M.LONG, 11), True, 1, id="bool"),
    pytest.param(column(M.LONG, 11), "42", 42, id="int-text"),
    pytest.param(column(M.LONG, 11), 2.5, 3, id="int-float-rounds"),
    pytest.param(column(M.LONG, 11), "abc", "abc", id="int-not-a-number-kept"),
    pytest.param(column(M.BIT, 10), b"\x03\xff", 1023, id="bit-bytes"),
    pytest.param(column(M.NEWDECIMAL, 10, 3), 1.5, Decimal("1.500"), id="decimal-float"),
    pytest.param(column(M.NEWDECIMAL, 10, 3), "-0.0004", Decimal("0.000"), id="decimal-zero"),
    pytest.param(column(M.FLOAT, 12, -1), 123456.789, 123457.0, id="float-six-digits"),
    pytest.param(column(M.DOUBLE, 22, -1), Decimal("0.1"), 0.1, id="double-decimal"),
    pytest.param(column(M.DATE, 10), dt.datetime(2024, 1, 2), "2024-01-02", id="date-datetime"),
    pytest.param(
        column(M.DATETIME, 23, 3),
        dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC),
        "2024-01-02 03:04:05.123",
        id="datetime-aware",
    ),
    pytest.param(
        column(M.DATETIME, 23, 3),
        "2024-01-02T03:04:05.9999",
        "2024-01-02 03:04:06.000",
        id="datetime-t-rounds",
    ),
    pytest.param(
        column(M.TIMESTAMP, 19, 0),
        "2024-01-02 03:04:05",
        "2024-01-02 03:04:05",
        id="timestamp-as-is",
    ),
    pytest.param(
        column(M.DURATION, 11, 1),
        -dt.timedelta(hours=1, microseconds=50000),
        "-01:00:00.1",
        id="time-timedelta",
    ),
    pytest.param(column(M.DURATION, 10, 0), dt.time(12, 30), "12:30:00", id="time-time"),
    pytest.param(column(M.STRING, 4, **TEXT), b"ab  ", "ab", id="char-bytes-padded"),
    pytest.param(column(M.STRING, 4), memoryview(b"ab"), b"ab\0\0", id="binary-memoryview"),
    pytest.param(column(M.BLOB, 65535), bytearray(b"\xff"), b"\xff", id="blob-bytearray"),
    pytest.param(column(M.BLOB, 65535), "é", "é".encode(), id="blob-text"),
    pytest.param(column(M.VARCHAR, 2, **TEXT), "abc", "abc", id="varchar-too-long-kept"),
    pytest.param(column(M.ENUM, elems=("a", "b"), **TEXT), 2, "b", id="enum-number"),
    pytest.param(
        column(M.SET, elems=("a", "b", "c"), **TEXT), {"c", "a"}, "a,c", id="set-python-set"
    ),
    pytest.param(column(M.JSON), {"b": 1.0, "a": [True]}, '{"a": [true], "b": 1}', id="json-dict"),
    pytest.param(column(M.JSON), b'{"a" :1}', '{"a": 1}', id="json-bytes"),
]


@pytest.mark.parametrize(("upstream", "given", "compared"), RULES)
def test_each_type_compares_in_one_canonical_form(
    upstream: ColumnInfo, given: Any, compared: Any
) -> None:
    found = _canonical(upstream)(given)
    assert (type(found), found) == (type(compared), compared)


# -- review fixes -------------------------------------------------------------------------------


def test_a_second_check_on_one_connection_reads_anew(mariadb: MariaDB) -> None:
    """pymysql's default connection (no autocommit) pinned the snapshot of the first check's
    read: a later check reported a row the consumer had since written as missing."""
    from ticdc_sim import Simulator

    writer = mariadb.connect()
    mariadb.reset(writer)
    checker = pymysql.connect(unix_socket=str(mariadb.root / "sock"), user="root")
    assert checker.get_autocommit() is False
    with Simulator() as sim, writer.cursor() as cur:
        sim.execute("CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)")
        cur.execute("CREATE TABLE test.t (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO test.t VALUES (1)")
        assert sim.diff(checker).ok
        sim.execute("INSERT INTO t VALUES (2)")
        cur.execute("INSERT INTO test.t VALUES (2)")
        assert sim.diff(checker).ok
        checker.begin()  # a transaction the caller opened stays theirs: read, not ended
        assert sim.diff(checker).ok
        with checker.cursor() as mine:
            mine.execute("SELECT @@in_transaction")
            assert mine.fetchone() == (1,)
    checker.close()
    writer.close()


def test_a_check_of_nothing_does_not_pass(tmp_path: Path) -> None:
    from ticdc_sim import Simulator
    from ticdc_sim.errors import CheckError

    down = sqlite3.connect(tmp_path / "down.db")
    with Simulator() as sim:
        with pytest.raises(CheckError, match="nothing was compared: no table is replicated"):
            sim.assert_replicated(down)
        sim.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        with pytest.raises(CheckError, match=r"tables: none given \(None compares every"):
            sim.diff(down, tables=[])
    down.close()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("mysql://u:sec/ret@127.0.0.1:1/", "mysql://u:***@127.0.0.1:1/"),
        (
            "mysql://u:p@ss@127.0.0.1:1/?charset=utf8mb4",
            "mysql://u:***@127.0.0.1:1/?charset=utf8mb4",
        ),
        ("mysql://u@127.0.0.1:1/", "mysql://u@127.0.0.1:1/"),
        ("sqlite:///tmp/x.db", "sqlite:///tmp/x.db"),
    ],
)
def test_a_password_is_never_shown(url: str, shown: str) -> None:
    from ticdc_sim.check import _masked

    assert _masked(url) == shown
