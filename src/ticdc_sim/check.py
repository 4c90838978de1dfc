"""The consumer checker: does the downstream database hold what the upstream replicated?

The expected side is each replicated table's final rows with the upstream's column types:
an `--expect DIR` (`expected_from_dir`), or the engine's tables (`expected_from_engine`).
The downstream is the database a consumer writes to, reached by a DB-API 2 connection
(sqlite3, or a MySQL driver: pymysql, MySQLdb, mysql.connector, mariadb) or a URL:
`sqlite:///FILE` (opened read-only) and `mysql://USER:PASSWORD@HOST:PORT/[DB]` (PyMySQL;
`?unix_socket=PATH`, `?charset=NAME`, and TiCDC's MySQL sink's `?time-zone=TZ`, the session
time zone TIMESTAMP values are read in) natively, any other scheme through SQLAlchemy, for a
SQLite or MySQL-compatible database.

Names downstream: table `t` of schema `test` is `test`.`t` in a MySQL-compatible
database. SQLite has no schemas: it is `t` in the main database, or in the database
attached as `test` when there is one. `rename` maps a table to another downstream name:
`NAME` (in the same place) or `SCHEMA.NAME` (on SQLite, when SCHEMA is not attached, the
table named `SCHEMA.NAME` of the main database). Downstream columns are found by name,
case-insensitively; columns the upstream has not (a consumer's bookkeeping) are not compared.

Both sides are compared in one canonical form per upstream column type, the value a MySQL
downstream would store: what the driver gives back is read as the literal it stands for
(`_DRIVER_VALUES`), then stored as TiDB stores a value of the column (strict mode, zero dates
allowed: `generator/sql/values.py`), then finished by `_RULES`:

| upstream type | compared as | a downstream may give back |
| --- | --- | --- |
| TINYINT .. BIGINT [UNSIGNED], YEAR | int | int, bool, Decimal, float, text |
| BIT(n) | int | int, bytes (big-endian, as MySQL returns BIT) |
| DECIMAL(M,D) | Decimal at scale D | Decimal, float (SQLite's REAL), int, text |
| FLOAT | float32 at 6 significant digits (1) | float, Decimal, text |
| DOUBLE | float | float, Decimal, text |
| DATE | `YYYY-MM-DD` | date, datetime, text |
| DATETIME(fsp) | `YYYY-MM-DD hh:mm:ss[.f]`, fsp digits (rounded) | datetime, text (`T` too) |
| TIMESTAMP(fsp) | as DATETIME, in TiCDC's time zone (2) | datetime, text |
| TIME(fsp) | `[-]hh:mm:ss[.f]`, fsp digits | timedelta (pymysql), time, text |
| CHAR | text, trailing spaces dropped (MySQL drops them on read) | text, bytes (UTF-8) |
| VARCHAR, TEXT | text | text, bytes (UTF-8) |
| BINARY(n) | bytes padded with 0x00 to n (MySQL pads them) | bytes, memoryview, text |
| VARBINARY, BLOB | bytes | bytes, bytearray, memoryview, text |
| ENUM | the member | text (any case of a `_ci` column), member number |
| SET | members in definition order, `,`-joined | text in any order, a Python set |
| JSON | the document as TiDB prints it (3) | text, bytes, dict or list |

(1) MariaDB and MySQL 5.7 print FLOAT with 6 significant digits (FLT_DIG), MySQL 8.0 and
TiDB with as many as the float32 needs: 6 is what both keep. (2) TiCDC sends TIMESTAMP in
its time zone, as text: read the target in that time zone. (3) Compared as documents:
key order, spacing and 1.0 against 1 do not count.
NULL is NULL. A value MySQL could not store in the column (text in an INT column, a VARCHAR
too long) is compared as given, so it differs; so is a downstream value storing would round
(1.4 in an INT, 1.2349 in a DECIMAL(10,2), more fractional seconds than the column keeps:
`_KEPT`), which is not what TiCDC sent. Rows are matched on the table's handle key
(TiCDC's: the primary key, or the not-null unique key it chose); a downstream row of a key
the downstream already gave is a duplicate (a consumer that replays at-least-once delivery
without deduplicating). A table without a handle key is compared as a multiset of rows.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
import urllib.parse
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ticdc_sim.errors import CheckError, SQLError, printable, shown, sqlstate
from ticdc_sim.generator.sql.values import (
    SqlMode,
    column_converter,
    format_decimal,
    format_double,
)
from ticdc_sim.model.mysql import INTEGER_RANGES, MySQLType
from ticdc_sim.model.table import ColumnInfo, TableInfo, quoted_name, table_names
from ticdc_sim.sinks import expect

M = MySQLType
Row = tuple[Any, ...]


# -- the expected side ----------------------------------------------------------------------


@dataclass(frozen=True)
class ExpectedTable:
    """A replicated table's final rows upstream, as `replay --expect` stores them."""

    schema: str
    name: str
    columns: tuple[ColumnInfo, ...]  # the columns TiCDC sends, with their upstream types
    key: tuple[str, ...]  # the handle key TiCDC keys rows by; () for none
    rows: tuple[Row, ...]  # in handle-key order, a value per column

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


def expected_from_engine(tables: Iterable[tuple[TableInfo, Iterable[Row]]]) -> list[ExpectedTable]:
    """What `Upstream.table_states()` yields (the replicated tables), as `--expect` stores it."""
    return [
        ExpectedTable(
            info.schema,
            info.name,
            info.visible_columns,
            info.handle_key_columns,
            tuple(expect.stored_rows(info, rows)),
        )
        for info, rows in tables
    ]


def expected_from_dir(path: str | Path) -> list[ExpectedTable]:
    """The final tables of an `--expect DIR` (`DIR/<schema>.<table>.parquet`; not history/),
    or of one of its `checkpoint-<ts>/` snapshots."""
    root = Path(path)
    if not root.is_dir():
        found = "not a directory" if root.exists() else "no such directory"
        raise CheckError(f"--expect {root}: {found}")
    files = sorted(p for p in root.iterdir() if p.suffix == ".parquet" and p.is_file())
    if not files and not (root / "history").is_dir():
        raise CheckError(
            f"--expect {root}: holds no <schema>.<table>.parquet files (write them with"
            " replay --expect)"
        )
    tables = []
    for file in files:
        name = expect.table_of_file(file.stem)
        try:
            data = pq.read_table(file)
        except (OSError, pa.ArrowException) as e:
            raise CheckError(f"--expect: cannot read {file}: {e}") from None
        metadata = data.schema.metadata or {}
        columns = [expect.column_of(f, i) for i, f in enumerate(data.schema)]
        if name is None or expect.HANDLE_KEY.encode() not in metadata or None in columns:
            raise CheckError(
                f"--expect: {file} is not a table file of replay --expect, or one written before"
                " ticdc-sim recorded column types (run replay --expect again)"
            )
        key = tuple(json.loads(metadata[expect.HANDLE_KEY.encode()]))
        rows = tuple(zip(*(c.to_pylist() for c in data.columns), strict=True))
        tables.append(ExpectedTable(*name, tuple(c for c in columns if c), key, rows))
    return tables


# -- canonical values -----------------------------------------------------------------------


def _duration(value: dt.timedelta) -> str:
    micros = abs(value) // dt.timedelta(microseconds=1)
    seconds, micros = divmod(micros, 1_000_000)
    sign = "-" if value < dt.timedelta(0) else ""
    return f"{sign}{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{micros:06d}"


# What drivers give back, as the literal MySQL would take for it (first match; a datetime
# is a date). Every other value is its own literal.
_DRIVER_VALUES: tuple[tuple[type | tuple[type, ...], Callable[[Any], Any]], ...] = (
    ((memoryview, bytearray), bytes),
    (bool, int),
    (dt.datetime, lambda v: v.replace(tzinfo=None).isoformat(" ")),
    (dt.date, lambda v: v.isoformat()),
    (dt.time, lambda v: v.replace(tzinfo=None).isoformat()),
    (dt.timedelta, _duration),
    ((set, frozenset), lambda v: ",".join(sorted(map(str, v)))),
    ((dict, list), lambda v: json.dumps(v, ensure_ascii=False)),
)
_OWN_LITERALS = frozenset({int, str, float, Decimal, bytes})


def _literal(value: Any) -> Any:
    if type(value) in _OWN_LITERALS:
        return value
    for types, literal in _DRIVER_VALUES:
        if isinstance(value, types):
            return literal(value)
    return value


def _flt_dig(value: float) -> float:
    return float(f"{value:.6g}")


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class _Rule:
    """What a type's values need beyond TiDB's conversion into the column."""

    stored_as: MySQLType | None = None  # converted as a value of this type instead
    finish: Callable[[Any], Any] = _same


_RULES: dict[MySQLType, _Rule] = {
    # TiCDC sends TIMESTAMP in its time zone: the text a consumer writes, not UTC
    M.TIMESTAMP: _Rule(stored_as=M.DATETIME),
    M.FLOAT: _Rule(finish=_flt_dig),
}
# strict: a value MySQL would refuse is not made into one it would store; zero dates, and
# text that is not UTF-8 (tidb_skip_utf8_check upstream), are stored as they are
_STORING = SqlMode(frozenset({"STRICT_ALL_TABLES"}), check_utf8=False)


def _canonical(column: ColumnInfo, downstream: bool = False) -> Callable[[Any], Any]:
    """A value of `column` (either side's) in the one form compared. A `downstream` value
    that storing would round (1.4 into an INT, 1.2349 into a DECIMAL(10,2), a time with more
    fractional digits than the column) is not the upstream's value, though MySQL would
    store it as such: it is compared as given, so it differs."""
    rule = _RULES.get(column.tp, _Rule())
    stored = replace(column, tp=rule.stored_as) if rule.stored_as else column
    convert, finish = column_converter(stored, lambda: dt.UTC, _STORING), rule.finish
    kept = _KEPT.get(column.tp) if downstream else None

    def canonical(value: Any) -> Any:
        if value is None:
            return None
        literal = _literal(value)
        try:
            converted = convert(literal)
        except SQLError:  # not a value of the column: compared as given
            return literal
        if kept is not None and not kept(column, literal, converted):
            return literal
        return finish(converted)

    return canonical


def _number_kept(column: ColumnInfo, literal: Any, stored: Any) -> bool:
    if isinstance(literal, (int, bytes)) or not isinstance(stored, (int, Decimal)):
        return True
    try:
        return Decimal(str(literal).strip()) == Decimal(stored)
    except ArithmeticError:  # not a number's text: the conversion said what it made of it
        return True


def _fraction_kept(column: ColumnInfo, literal: Any, stored: Any) -> bool:
    found = _FRACTION.search(literal) if isinstance(literal, str) else None
    return found is None or len(found.group(1).rstrip("0")) <= max(column.decimal, 0)


_FRACTION = re.compile(r"[0-9]:[0-9]{2}\.([0-9]+)")  # the seconds' fraction of a time
_KEPT: dict[MySQLType, Callable[[ColumnInfo, Any, Any], bool]] = {
    **{tp: _number_kept for tp in (*INTEGER_RANGES, M.NEWDECIMAL)},
    **{tp: _fraction_kept for tp in (M.DATETIME, M.TIMESTAMP, M.DURATION)},
}


# -- the downstream -------------------------------------------------------------------------

_MYSQL_DRIVERS = frozenset({"pymysql", "MySQLdb", "mysql", "mariadb"})
_MYSQL_SCHEMES = frozenset({"mysql", "mysql+pymysql", "mariadb", "mariadb+pymysql"})
_MYSQL_PARAMETERS = ("unix_socket", "charset", "time-zone")
_FETCH = 1024


class _Downstream:
    """A connection to the consumer's database: its names and its rows, read-only."""

    def __init__(self, connection: Any, label: str) -> None:
        module = type(connection).__module__.partition(".")[0]
        sqlite = isinstance(connection, sqlite3.Connection)
        if not sqlite and module not in _MYSQL_DRIVERS:
            raise CheckError(
                f"{label}: a {type(connection).__module__}.{type(connection).__name__}: check"
                " reads SQLite (sqlite3) and MySQL-compatible databases (pymysql, MySQLdb,"
                " mysql.connector, mariadb)"
            )
        self.connection, self.label = connection, label
        self.sqlite = sqlite
        self._quote = '"' if self.sqlite else "`"
        self._schemas: list[str] | None = None
        self._tables: dict[str, list[str]] = {}

    def quoted(self, *names: str) -> str:
        q = self._quote
        return ".".join(q + n.replace(q, q + q) + q for n in names)

    @contextmanager
    def _cursor(self, sql: str) -> Iterator[Any]:
        """A cursor that has run `sql`; the driver's errors (one class per driver) are
        the check's, naming the statement."""
        try:
            cursor = self.connection.cursor()
        except Exception as e:  # noqa: BLE001 - whichever class the driver raises
            raise CheckError(f"{self.label}: {_driver_message(e)}") from None
        try:
            cursor.execute(sql)
            yield cursor
        except CheckError:
            raise
        except Exception as e:  # noqa: BLE001
            raise CheckError(f"{self.label}: {sql}: {_driver_message(e)}") from None
        finally:
            cursor.close()

    def reads_in_a_snapshot(self) -> bool:
        """Whether the reads will open a transaction of their own: a MySQL driver's
        connection without autocommit, not in a transaction yet, pins the snapshot of its
        first read (REPEATABLE READ) until the transaction ends. One the caller has opened
        is theirs to end."""
        if self.sqlite:
            return False
        try:
            return bool(self._all("SELECT @@in_transaction")[0][0] == 0)
        except CheckError:  # a server without the variable: nothing is ended for it
            return False

    def _all(self, sql: str) -> list[Row]:
        with self._cursor(sql) as cursor:
            return list(cursor.fetchall())

    def schemas(self) -> list[str]:
        if self._schemas is None:
            sql = "PRAGMA database_list" if self.sqlite else "SHOW DATABASES"
            self._schemas = [r[1] if self.sqlite else r[0] for r in self._all(sql)]
        return self._schemas

    def tables(self, schema: str) -> list[str]:
        if schema not in self._tables:
            self._tables[schema] = [
                r[0]
                for r in self._all(
                    f"SELECT name FROM {self.quoted(schema)}.sqlite_master"
                    " WHERE type IN ('table', 'view')"
                    if self.sqlite
                    else f"SHOW FULL TABLES FROM {self.quoted(schema)}"
                )
            ]
        return self._tables[schema]

    def place(self, schema: str, table: str, renamed: str | None) -> tuple[str, str]:
        """Where the upstream's `schema`.`table` is looked for (see the module's doc)."""
        if renamed is not None:
            head, dot, tail = renamed.partition(".")
            if not dot:
                table = renamed
            elif not self.sqlite or _find(head, self.schemas()):
                schema, table = head, tail
            else:
                schema, table = "main", renamed
        if self.sqlite:
            return _find(schema, self.schemas()) or "main", table
        return schema, table

    def find(self, schema: str, table: str) -> tuple[str, str] | None:
        found_schema = _find(schema, self.schemas())
        found = found_schema and _find(table, self.tables(found_schema))
        return (found_schema, found) if found_schema and found else None

    def columns(self, place: tuple[str, str]) -> list[str]:
        with self._cursor(f"SELECT * FROM {self.quoted(*place)} WHERE 1 = 0") as cursor:
            return [d[0] for d in cursor.description]

    def rows(self, place: tuple[str, str], columns: Sequence[str]) -> Iterator[Row]:
        sql = f"SELECT {', '.join(self.quoted(c) for c in columns)} FROM {self.quoted(*place)}"
        with self._cursor(sql) as cursor:
            while True:
                try:
                    batch = cursor.fetchmany(_FETCH)
                except Exception as e:  # noqa: BLE001 - a driver's conversion of a value
                    raise CheckError(
                        f"{self.label}: {sql}: the driver cannot read a row: {_driver_message(e)}"
                    ) from None
                if not batch:
                    return
                yield from batch


def _find(name: str, names: Sequence[str]) -> str | None:
    """`name` among `names`: as it is, else the one name it is case-insensitively (SQLite's
    names, MySQL's with lower_case_table_names)."""
    if name in names:
        return name
    folded = [n for n in names if n.casefold() == name.casefold()]
    return folded[0] if len(folded) == 1 else None


def _driver_message(error: BaseException) -> str:
    """A driver's error as MySQL's client says it, when it carries MySQL's code (pymysql
    and MySQLdb in their args, mysql.connector and mariadb as errno and msg)."""
    args = error.args
    if len(args) == 2 and isinstance(args[0], int):
        code, message = args
    else:
        code, message = getattr(error, "errno", None), getattr(error, "msg", None)
    if isinstance(code, int) and code > 0 and message:
        return f"ERROR {code} ({sqlstate(code)}): {message}"
    return printable(str(error)) or type(error).__name__


def _masked(url: str) -> str:
    """The URL as messages show it: without its password (which may hold `/` or `@`: the
    user's part ends at the authority's last `@`)."""
    scheme, sep, rest = url.partition("://")
    authority, query_mark, query = rest.partition("?")
    user, at, host = authority.rpartition("@")
    if not (sep and at and ":" in user):
        return url
    return f"{scheme}://{user.partition(':')[0]}:***@{host}{query_mark}{query}"


@contextmanager
def _opened(target: Any, named: str) -> Iterator[_Downstream]:
    """The downstream of a DB-API connection (left open) or a URL (closed after); errors
    name it as `named` (the CLI's option, the API's argument)."""
    if not isinstance(target, str):
        downstream = _Downstream(target, f"{named} (a connection)")
        began = downstream.reads_in_a_snapshot()
        try:
            yield downstream
        finally:
            if began:  # the snapshot the reads opened, so a later check reads anew
                with suppress(Exception):
                    target.rollback()
        return
    label = f"{named} {_masked(target)}"
    scheme, sep, _ = target.partition("://")
    scheme = scheme.lower()
    if not sep or not scheme:
        raise CheckError(
            f"{label}: not a database URL (sqlite:///FILE, mysql://USER:PASSWORD@HOST:PORT/,"
            " or an SQLAlchemy URL)"
        )
    if scheme == "sqlite":
        connection, close = _sqlite(target, label), None
    elif scheme in _MYSQL_SCHEMES:
        connection, close = _pymysql(target, label), None
    else:
        connection, close = _sqlalchemy(target, label)
    try:
        yield _Downstream(connection, label)
    finally:
        (close or connection.close)()


def _sqlite(url: str, label: str) -> sqlite3.Connection:
    path, question, query = url.partition("://")[2].removeprefix("/").partition("?")
    if question:
        raise CheckError(f"{label}: sqlite:///FILE takes no parameters (got ?{query})")
    _sqlite_file(path, label)
    name = urllib.parse.quote(str(Path(path).absolute()))
    try:
        return sqlite3.connect(f"file:{name}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise CheckError(f"{label}: cannot open {path}: {e}") from None


def _sqlite_file(path: str | None, label: str) -> None:
    if not path or path == ":memory:":
        raise CheckError(f"{label}: names no database file (sqlite:///FILE, sqlite:////ABSOLUTE)")
    if not Path(path).is_file():
        found = "a directory" if Path(path).is_dir() else "no such file"
        raise CheckError(f"{label}: {path}: {found}")


def _pymysql(url: str, label: str) -> Any:
    import pymysql
    from pymysql.charset import charset_by_name
    from pymysql.converters import escape_string

    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as e:
        raise CheckError(f"{label}: not a URL: {e}") from None
    given = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(set(given) - set(_MYSQL_PARAMETERS))
    if unknown:
        raise CheckError(
            f"{label}: unknown parameter {unknown[0]} (a mysql:// URL takes"
            f" {', '.join(_MYSQL_PARAMETERS)})"
        )
    if charset_by_name(given.get("charset", "utf8mb4")) is None:
        raise CheckError(f"{label}: charset {given['charset']!r}: not a charset MySQL knows")
    try:
        port = parts.port
    except ValueError:
        raise CheckError(f"{label}: the port is not a number from 0 to 65535") from None
    database = urllib.parse.unquote(parts.path.lstrip("/")) or None
    zone = given.get("time-zone")
    try:
        return pymysql.connect(
            host=parts.hostname or "localhost",
            port=port or 3306,
            user=urllib.parse.unquote(parts.username or ""),
            password=urllib.parse.unquote(parts.password or ""),
            database=database,
            unix_socket=given.get("unix_socket"),
            charset=given.get("charset", "utf8mb4"),
            init_command=zone and f"SET time_zone = '{escape_string(zone)}'",
            connect_timeout=10,
        )
    except pymysql.MySQLError as e:
        raise CheckError(f"{label}: cannot connect: {_driver_message(e)}") from None


def _sqlalchemy(url: str, label: str) -> tuple[Any, Callable[[], None]]:
    scheme = url.partition("://")[0]
    try:
        import sqlalchemy
    except ImportError:
        raise CheckError(
            f"{label}: a {scheme}:// URL needs SQLAlchemy (pip install sqlalchemy);"
            " sqlite:///FILE and mysql://... need nothing more"
        ) from None
    try:
        backend = sqlalchemy.engine.make_url(url).get_backend_name()
    except (sqlalchemy.exc.ArgumentError, ValueError) as e:
        raise CheckError(f"{label}: {e}") from None
    if backend not in ("sqlite", "mysql", "mariadb"):
        raise CheckError(
            f"{label}: a {backend} database: check reads SQLite and MySQL-compatible databases"
        )
    try:
        with warnings.catch_warnings():  # a parameter the driver ignores: an error here
            warnings.simplefilter("error", sqlalchemy.exc.SAWarning)
            engine = sqlalchemy.create_engine(url)
    except (sqlalchemy.exc.ArgumentError, sqlalchemy.exc.SAWarning, ValueError) as e:
        raise CheckError(f"{label}: {e}") from None
    except ImportError as e:  # the dialect's driver
        raise CheckError(f"{label}: its driver is not installed ({e})") from None
    if engine.dialect.name == "sqlite" and not engine.url.query.get("uri"):
        # SQLAlchemy would create a missing file
        _sqlite_file(engine.url.database, label)
    try:
        raw = engine.raw_connection()
    except Exception as e:  # noqa: BLE001 - the driver's own, and its refusal of a parameter
        engine.dispose()
        cause = e.orig if isinstance(e, sqlalchemy.exc.DBAPIError) and e.orig else e
        raise CheckError(f"{label}: cannot connect: {_driver_message(cause)}") from None

    def close() -> None:
        raw.close()
        engine.dispose()

    return raw.driver_connection, close


# -- the comparison -------------------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    """A row both sides have (the same key) with other values."""

    upstream: dict[str, Any]
    downstream: dict[str, Any]

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns whose values differ."""
        return tuple(c for c, v in self.upstream.items() if self.downstream[c] != v)


@dataclass(frozen=True)
class TableDiff:
    """One table's comparison; values are in the canonical form compared (module doc)."""

    schema: str
    name: str
    key: tuple[str, ...]
    downstream_name: str  # where the table was looked for
    upstream_rows: int
    downstream_rows: int | None  # None: no such table downstream
    missing_columns: tuple[str, ...] = ()
    missing: tuple[dict[str, Any], ...] = ()  # upstream rows the downstream has not
    extra: tuple[dict[str, Any], ...] = ()  # downstream rows of keys the upstream has not
    duplicated: tuple[dict[str, Any], ...] = ()  # downstream rows of a key given before
    differing: tuple[Mismatch, ...] = ()

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def ok(self) -> bool:
        return self.downstream_rows is not None and not (
            self.missing_columns or self.missing or self.extra or self.duplicated or self.differing
        )


@dataclass(frozen=True)
class Diff:
    """Every compared table. True when the downstream differs (a diff with something in
    it), so `assert not sim.diff(db)` reads as it says; `ok` is the other way round."""

    tables: tuple[TableDiff, ...]

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tables)

    def __bool__(self) -> bool:
        return not self.ok

    def report(self, limit: int = 10) -> str:
        """What differs, table by table, with at most `limit` rows of each kind."""
        if self.ok:
            rows = sum(t.upstream_rows for t in self.tables)
            return (
                f"downstream equals upstream: {_count(len(self.tables), 'table')},"
                f" {_count(rows, 'row')}"
            )
        bad = [t for t in self.tables if not t.ok]
        lines = [f"downstream differs from upstream in {len(bad)} of {len(self.tables)} tables"]
        for table in bad:
            lines += _table_report(table, limit)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()

    def __repr__(self) -> str:
        return f"<Diff: {self.report().partition(chr(10))[0]}>"


class NotReplicated(AssertionError):
    """The downstream does not equal the upstream; `diff` says how."""

    def __init__(self, diff: Diff, limit: int = 10) -> None:
        super().__init__(diff.report(limit))
        self.diff = diff


def diff(
    expected: Iterable[ExpectedTable],
    target: Any,
    tables: Iterable[str] | None = None,
    *,
    rename: Mapping[str, str] | None = None,
    named: str = "--target",
) -> Diff:
    """Compare the expected tables (`tables`: only these, by `schema.table`) with the
    downstream `target`, a DB-API connection or a URL (module doc), which errors call
    `named`. `rename` maps a table's `schema.table` to its downstream name."""
    everything = list(expected)
    chosen = _chosen(everything, tables)
    names = {_pick(everything, k, "rename").qualified: v for k, v in (rename or {}).items()}
    with _opened(target, named) as downstream:
        return Diff(tuple(_compare(t, downstream, names.get(t.qualified)) for t in chosen))


def assert_replicated(
    expected: Iterable[ExpectedTable],
    target: Any,
    tables: Iterable[str] | None = None,
    *,
    rename: Mapping[str, str] | None = None,
    named: str = "--target",
) -> Diff:
    """`diff`, raising NotReplicated with its report unless the downstream equals the
    upstream."""
    found = diff(expected, target, tables, rename=rename, named=named)
    if found:
        raise NotReplicated(found)
    if not found.tables:  # an assertion that compared nothing would pass for any consumer
        raise CheckError("nothing was compared: no table is replicated upstream")
    return found


def _chosen(expected: list[ExpectedTable], tables: Iterable[str] | None) -> list[ExpectedTable]:
    if tables is None:
        return expected
    names = [tables] if isinstance(tables, str) else list(tables)
    if not names:
        raise CheckError("tables: none given (None compares every replicated table)")
    return list({id(t): t for t in (_pick(expected, n, "table") for n in names)}.values())


def _pick(expected: Sequence[ExpectedTable], name: str, what: str) -> ExpectedTable:
    """The table `name` (`schema.table`, quoted as MySQL quotes where a name holds a dot)
    names: as it is, else the one it names case-insensitively."""
    meant = {(schema, table) for schema, table in table_names(name) if schema is not None}
    found = [t for t in expected if (t.schema, t.name) in meant]
    if len(found) > 1:
        said = " or ".join(quoted_name(t.schema, t.name) for t in found)
        raise CheckError(f"{what} {name!r} is {said}: quote the names, as MySQL does")
    folded = {(schema.casefold(), table.casefold()) for schema, table in meant}
    found = found or [t for t in expected if (t.schema.casefold(), t.name.casefold()) in folded]
    if len(found) != 1:
        held = ", ".join(quoted_name(t.schema, t.name) for t in expected[:5])
        held += " ..." if len(expected) > 5 else ""
        raise CheckError(
            f"{what} {name!r}: not a table of the expected state ({held or 'it has none'})"
        )
    return found[0]


def _compare(table: ExpectedTable, downstream: _Downstream, renamed: str | None) -> TableDiff:
    place = downstream.place(table.schema, table.name, renamed)
    shown = place[1:] if downstream.sqlite and place[0] == "main" else place
    where = ".".join(downstream.quoted(n) if "." in n else n for n in shown)
    found = downstream.find(*place)
    if found is None:
        return TableDiff(table.schema, table.name, table.key, where, len(table.rows), None)
    names = downstream.columns(found)
    matched = [(i, c, _find(c.name, names)) for i, c in enumerate(table.columns)]
    compared = [(i, c, name) for i, c, name in matched if name is not None]
    missing_columns = tuple(c.name for _, c, name in matched if name is None)
    columns = tuple(c.name for _, c, _ in compared)
    key = table.key if set(table.key) <= set(columns) else ()
    canonical = [_canonical(c) for _, c, _ in compared]
    upstream = [
        tuple(f(row[i]) for f, (i, _, _) in zip(canonical, compared, strict=True))
        for row in table.rows
    ]
    stored = [_canonical(c, downstream=True) for _, c, _ in compared]
    rows = [
        tuple(f(v) for f, v in zip(stored, row, strict=True))
        for row in downstream.rows(found, [name for _, _, name in compared])
    ]
    match = _by_key if key else _by_value
    missing, extra, duplicated, differing = match(upstream, rows, [columns.index(k) for k in key])

    def named(row: Row) -> dict[str, Any]:
        return dict(zip(columns, row, strict=True))

    return TableDiff(
        table.schema,
        table.name,
        table.key,
        where,
        len(table.rows),
        len(rows),
        missing_columns,
        tuple(map(named, missing)),
        tuple(map(named, sorted(extra, key=_order))),
        tuple(map(named, sorted(duplicated, key=_order))),
        tuple(Mismatch(named(u), named(d)) for u, d in differing),
    )


Matched = tuple[list[Row], list[Row], list[Row], list[tuple[Row, Row]]]


def _by_key(upstream: list[Row], downstream: list[Row], key: list[int]) -> Matched:
    wanted = {tuple(row[i] for i in key): row for row in upstream}
    seen: set[Row] = set()
    extra: list[Row] = []
    duplicated: list[Row] = []
    differing: list[tuple[Row, Row]] = []
    for row in downstream:
        found = tuple(row[i] for i in key)
        want = wanted.get(found)
        if want is None or found in seen:
            (extra if want is None else duplicated).append(row)
            continue
        seen.add(found)
        if want != row:
            differing.append((want, row))
    missing = [row for k, row in wanted.items() if k not in seen]
    order = {k: n for n, k in enumerate(wanted)}
    differing.sort(key=lambda pair: order[tuple(pair[0][i] for i in key)])
    return missing, extra, duplicated, differing


def _by_value(upstream: list[Row], downstream: list[Row], key: list[int]) -> Matched:
    """A table without a handle key: rows as a multiset."""
    want, have = Counter(upstream), Counter(downstream)
    return list((want - have).elements()), list((have - want).elements()), [], []


def _order(row: Row) -> tuple[tuple[bool, str, Any], ...]:
    """A total order of rows whose values may mix types (what could not be converted)."""
    return tuple((v is None, type(v).__name__, v) for v in row)


# -- the report -----------------------------------------------------------------------------


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _table_report(table: TableDiff, limit: int) -> list[str]:
    head = table.qualified
    if table.downstream_name != head:
        head += f" (downstream {table.downstream_name})"
    if table.downstream_rows is None:
        return [f"{head}: no such table downstream ({_count(table.upstream_rows, 'row')} upstream)"]
    counts = ", ".join(
        what.format(n=len(rows), rows="row" if len(rows) == 1 else "rows")
        for rows, what in (
            (table.missing, "{n} {rows} missing downstream"),
            (table.extra, "{n} extra {rows}"),
            (table.duplicated, "{n} duplicated {rows}"),
            (table.differing, "{n} differing {rows}"),
        )
        if rows
    )
    columns = ", ".join(table.missing_columns)
    parts = [f"columns missing downstream: {columns}" if columns else "", counts]
    lines = [
        f"{head}: {'; '.join(filter(None, parts))} ({_count(table.upstream_rows, 'row')}"
        f" upstream, {table.downstream_rows} downstream)"
    ]
    key = table.key

    def section(title: str, items: Sequence[Any], line: Callable[[Any], str]) -> None:
        if items:
            lines.append(f"  {title}:")
            lines.extend(f"    {line(item)}" for item in items[:limit])
            if len(items) > limit:
                lines.append(f"    ... and {len(items) - limit} more")

    section("missing downstream", table.missing, lambda row: _row_text(row, key))
    section("extra downstream", table.extra, lambda row: _row_text(row, key))
    section(
        "duplicated downstream (a key given again)",
        table.duplicated,
        lambda row: _row_text(row, key),
    )
    section(
        "differing (upstream -> downstream)",
        table.differing,
        lambda m: (
            _key_text(m.upstream, key)
            + ": "
            + ", ".join(
                f"{c} {_value_text(m.upstream[c])} -> {_value_text(m.downstream[c])}"
                for c in m.columns
            )
        ),
    )
    return lines


def _key_text(row: Mapping[str, Any], key: Sequence[str]) -> str:
    return ", ".join(f"{c}={_value_text(row[c])}" for c in key if c in row)


def _row_text(row: Mapping[str, Any], key: Sequence[str]) -> str:
    rest = ", ".join(f"{c}={_value_text(v)}" for c, v in row.items() if c not in key)
    head = _key_text(row, key)
    return f"{head}: {rest}" if head and rest else head or rest


_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}
_TEXT_SHOWN = 60
_BYTES_SHOWN = 32


def _value_text(value: Any) -> str:
    """A value as SQL would write it (NULL, 'text', x'00ff', 1.50), cut when long."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        text = "".join(map(_char, value[:_TEXT_SHOWN]))
        more = f"... ({len(value)} characters)" if len(value) > _TEXT_SHOWN else ""
        return f"'{text}'{more}"
    if isinstance(value, bytes):
        more = f"... ({len(value)} bytes)" if len(value) > _BYTES_SHOWN else ""
        return f"x'{value[:_BYTES_SHOWN].hex()}'{more}"
    if isinstance(value, Decimal):
        return format_decimal(value)
    if isinstance(value, float):
        return format_double(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return shown(value)


def _char(ch: str) -> str:
    """A character of a quoted value: escaped when it would not print as itself (a byte
    that is not UTF-8, kept as a surrogate escape, as \\xNN, as MySQL shows it)."""
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if ch.isprintable():
        return ch
    if "\udc80" <= ch <= "\udcff":
        return f"\\x{ord(ch) - 0xDC00:02X}"
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"
