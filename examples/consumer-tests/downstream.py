"""Where the consumer writes: SQLite (TiDB's DDL translated) or MySQL/MariaDB (DDL as sent).

Rows are written as TiCDC's MySQL sink writes them in safe mode: an insert or an update is a
`REPLACE` of the whole row image, a delete is a delete by primary key. Each is idempotent, so
a change applied twice changes nothing.

SQLite has one namespace: table `shop.accounts` is `accounts` (the database is dropped, as
`ticdc_sim`'s checker looks for it), and database DDL is ignored. TiDB's DDL is translated
(`SQLite.ddl`): CREATE TABLE, DROP TABLE, TRUNCATE TABLE, RENAME TABLE, and ALTER TABLE's
ADD / DROP / MODIFY / CHANGE / RENAME COLUMN and RENAME; index DDL and table options are
skipped (indexes do not change rows). Limits: a column default that is not a constant
(CURRENT_TIMESTAMP) is not kept, so ALTER TABLE ADD COLUMN ... DEFAULT CURRENT_TIMESTAMP
leaves the existing rows NULL; MODIFY COLUMN does not convert the values already stored
(SQLite columns are not typed strictly); TRUNCATE / DROP PARTITION and CREATE TABLE ... LIKE
are refused (`UnsupportedDDL`). ENUM and SET arrive as numbers and are stored as their
members, which the CREATE TABLE / ALTER TABLE this consumer has applied tell it.

MySQL and MariaDB take TiDB's DDL as it is (TiDB's `/*T! ... */` comments are comments
there); the errors TiCDC's MySQL sink ignores on a DDL applied again are ignored
(tiflow pkg/errorutil: IsIgnorableMySQLDDLError). The session's time zone must be the
changefeed's, since TiCDC sends TIMESTAMP values as text in it.
"""

from __future__ import annotations

import re
import sqlite3
import urllib.parse
from collections.abc import Iterator
from typing import Any

# TiDB's type (canal-json's mysqlType) -> the SQLite column type that keeps its values exact;
# any other type is TEXT: DECIMAL stays exact as text, dates and times as TiDB prints them
SQLITE_TYPES = {
    **dict.fromkeys(
        ["tinyint", "smallint", "mediumint", "int", "integer", "bigint", "bit", "year", "bool"],
        "INTEGER",
    ),
    "bigint unsigned": "TEXT",  # 18446744073709551615 is past SQLite's 64-bit integers
    **dict.fromkeys(["float", "double", "real"], "REAL"),
    **dict.fromkeys(["binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"], "BLOB"),
}
_INT64_MAX = (1 << 63) - 1

# what MySQL answers when a DDL applied again finds its work done (tiflow pkg/errorutil):
# database exists / does not (1007, 1008), table (1050, 1051), column (1060, 1054), duplicate
# key name (1061), multiple primary key (1068), can't drop field or key (1091), key does not
# exist (1176), partition does not exist / exists (1507, 1517)
IGNORABLE_MYSQL_DDL_ERRORS = {
    1007, 1008, 1050, 1051, 1054, 1060, 1061, 1068, 1091, 1176, 1507, 1517
}  # fmt: skip


class UnsupportedDDL(Exception):
    """A DDL this consumer cannot apply to SQLite."""


class Downstream:
    """A database the consumer writes rows to, through a DB-API connection."""

    placeholder = "?"
    same = "IS"  # NULL-safe equality

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    def quote(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def name(self, schema: str, table: str) -> str:
        return self.quote(table)

    def stored(self, table: str, row: dict[str, Any]) -> list[Any]:
        """A row's values as this database stores them."""
        return list(row.values())

    def execute(self, sql: str, values: list[Any] | tuple[()] = ()) -> None:
        cursor = self.connection.cursor()
        try:
            cursor.execute(sql, values)
        finally:
            cursor.close()

    def upsert(self, schema: str, table: str, row: dict[str, Any]) -> None:
        columns = ", ".join(map(self.quote, row))
        marks = ", ".join([self.placeholder] * len(row))
        self.execute(
            f"REPLACE INTO {self.name(schema, table)} ({columns}) VALUES ({marks})",
            self.stored(table, row),
        )

    def delete(self, schema: str, table: str, row: dict[str, Any], key: list[str]) -> None:
        """Delete the row by its key (every column for a table keyed by a unique key, for
        which canal-json names no primary key)."""
        match = {c: row[c] for c in key} if key else row
        where = " AND ".join(f"{self.quote(c)} {self.same} {self.placeholder}" for c in match)
        self.execute(
            f"DELETE FROM {self.name(schema, table)} WHERE {where}", self.stored(table, match)
        )

    def ddl(self, schema: str, query: str) -> None:
        raise NotImplementedError

    def begin(self) -> None:
        self.execute("BEGIN")

    def commit(self) -> None:
        self.connection.commit()

    def rollback(self) -> None:
        self.connection.rollback()

    def close(self) -> None:
        self.connection.close()


class MySQL(Downstream):
    placeholder = "%s"
    same = "<=>"

    def quote(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    def name(self, schema: str, table: str) -> str:
        return f"{self.quote(schema)}.{self.quote(table)}"

    def ddl(self, schema: str, query: str) -> None:
        import pymysql

        try:
            if schema:  # TiCDC's MySQL sink runs a DDL in its database (USE), made if need be
                self.execute(f"CREATE DATABASE IF NOT EXISTS {self.quote(schema)}")
                self.execute(f"USE {self.quote(schema)}")
            self.execute(query)
        except pymysql.err.MySQLError as e:
            if not e.args or e.args[0] not in IGNORABLE_MYSQL_DDL_ERRORS:
                raise


class SQLite(Downstream):
    """A SQLite database. The consumer takes its transactions in hand (`isolation_level`
    None: each batch is BEGIN ... COMMIT, its DDL in it), since Python's sqlite3 commits
    before a DDL of its own accord."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        super().__init__(connection)
        connection.isolation_level = None
        # (table, column) -> ENUM or SET and its members: canal-json sends the numbers
        self.members: dict[tuple[str, str], tuple[str, list[str]]] = {}

    def stored(self, table: str, row: dict[str, Any]) -> list[Any]:
        return [self._stored(table.lower(), c.lower(), v) for c, v in row.items()]

    def _stored(self, table: str, column: str, value: Any) -> Any:
        found = self.members.get((table, column))
        if found is not None and isinstance(value, int):
            kind, members = found
            if kind == "enum":  # 1 is the first member; 0 the '' MySQL stores for a bad one
                return members[value - 1] if 0 < value <= len(members) else ""
            return ",".join(m for i, m in enumerate(members) if value >> i & 1)
        if isinstance(value, int) and value > _INT64_MAX:
            return str(value)
        return value

    def ddl(self, schema: str, query: str) -> None:
        try:
            statements = list(self.translate(query))
        except UnsupportedDDL as e:
            raise UnsupportedDDL(f"{query!r}: {e}") from None
        for statement in statements:
            self.execute(statement)

    def translate(self, query: str) -> Iterator[str]:
        """TiDB's DDL as SQLite statements (none for DDL that changes no rows here)."""
        tokens = _Tokens(query)
        if tokens.take("CREATE", "TABLE"):
            tokens.take("IF", "NOT", "EXISTS")
            table = tokens.name()
            if not tokens.peek("("):
                raise UnsupportedDDL("only CREATE TABLE with its columns is translated")
            columns = ", ".join(self._create(table, tokens.group()))
            yield f"CREATE TABLE IF NOT EXISTS {self.quote(table)} ({columns})"
        elif tokens.take("ALTER", "TABLE"):
            table = tokens.name()
            for spec in tokens.rest().split():
                yield from self._alter(table, spec)
        elif tokens.take("DROP", "TABLE"):
            tokens.take("IF", "EXISTS")
            for spec in tokens.rest().split():
                table = spec.name()
                self._forget(table)
                yield f"DROP TABLE IF EXISTS {self.quote(table)}"
        elif tokens.take("TRUNCATE"):
            tokens.take("TABLE")
            yield f"DELETE FROM {self.quote(tokens.name())}"
        elif tokens.take("RENAME", "TABLE"):
            for spec in tokens.rest().split():
                old = spec.name()
                spec.take("TO")
                yield from self._rename(old, spec.name())
        elif not _NO_ROWS.match(query):
            raise UnsupportedDDL("not translated to SQLite (see downstream.py)")

    def _create(self, table: str, items: _Tokens) -> Iterator[str]:
        for item in items.split():
            if item.take("CONSTRAINT") and not item.peek_any("PRIMARY", "UNIQUE", *_NOT_COLUMNS):
                item.name()
            if item.take("PRIMARY", "KEY"):
                yield f"PRIMARY KEY ({self._key(item)})"
            elif item.take("UNIQUE"):
                item.take_any("KEY", "INDEX")
                if not item.peek("("):
                    item.name()
                yield f"UNIQUE ({self._key(item)})"
            elif not item.peek_any(*_NOT_COLUMNS):
                yield self._column(table, item)

    def _key(self, item: _Tokens) -> str:
        """A key's (col, col(10), col DESC) list."""
        return ", ".join(self.quote(part.name()) for part in item.group().split())

    def _column(self, table: str, item: _Tokens) -> str:
        """A column definition: its name, the SQLite type, NOT NULL, a constant DEFAULT and
        PRIMARY KEY / UNIQUE kept; the rest (AUTO_INCREMENT, COMMENT, COLLATE, ...) dropped."""
        name = item.name()
        kind = item.word().lower()
        args = item.group() if item.peek("(") else None
        if item.take("UNSIGNED"):
            kind += " unsigned"
        if kind in ("enum", "set") and args is not None:
            self.members[(table.lower(), name.lower())] = (kind, args.strings())
        else:
            self.members.pop((table.lower(), name.lower()), None)
        parts = [
            self.quote(name),
            SQLITE_TYPES.get(kind, SQLITE_TYPES.get(kind.split()[0], "TEXT")),
        ]
        while not item.done():
            if item.take("NOT", "NULL"):
                parts.append("NOT NULL")
            elif item.take("PRIMARY", "KEY") or item.take("KEY"):
                parts.append("PRIMARY KEY")
            elif item.take("UNIQUE"):
                item.take("KEY")
                parts.append("UNIQUE")
            elif item.take("DEFAULT"):
                default = item.constant()
                if default is not None:
                    parts.append(f"DEFAULT {default}")
            else:
                item.skip()
        return " ".join(parts)

    def _alter(self, table: str, spec: _Tokens) -> Iterator[str]:
        name = self.quote(table)
        if spec.peek("RENAME", "INDEX") or spec.peek("RENAME", "KEY"):
            return
        if spec.take("ADD"):
            if spec.peek_any(*_NOT_COLUMNS, "PRIMARY", "UNIQUE", "PARTITION"):
                return  # an index, a constraint, a partition: no rows change
            spec.take("COLUMN")
            for added in spec.group().split() if spec.peek("(") else [spec]:
                yield f"ALTER TABLE {name} ADD COLUMN {self._column(table, added)}"
        elif spec.take("DROP"):
            if spec.peek("PARTITION"):
                raise UnsupportedDDL(f"'DROP {spec.text()}' is not translated to SQLite")
            if spec.peek_any(*_NOT_COLUMNS, "PRIMARY"):
                return
            spec.take("COLUMN")
            column = spec.name()
            self.members.pop((table.lower(), column.lower()), None)
            yield f"ALTER TABLE {name} DROP COLUMN {self.quote(column)}"
        elif spec.take("MODIFY"):
            spec.take("COLUMN")
            self._column(table, spec)  # SQLite keeps the values; only ENUM/SET members change
        elif spec.take("CHANGE"):
            spec.take("COLUMN")
            old = spec.name()
            yield from self._rename_column(table, old, spec.ahead().name())
            self._column(table, spec)
        elif spec.take("RENAME", "COLUMN"):
            old = spec.name()
            spec.take("TO")
            yield from self._rename_column(table, old, spec.name())
        elif spec.take("RENAME"):
            spec.take_any("TO", "AS")
            yield from self._rename(table, spec.name())
        elif not spec.peek_any(*_TABLE_OPTIONS):
            raise UnsupportedDDL(f"{spec.text()!r} is not translated to SQLite")

    def _rename(self, old: str, new: str) -> Iterator[str]:
        for table, column in list(self.members):
            if table == old.lower():
                self.members[(new.lower(), column)] = self.members.pop((table, column))
        yield f"ALTER TABLE {self.quote(old)} RENAME TO {self.quote(new)}"

    def _rename_column(self, table: str, old: str, new: str) -> Iterator[str]:
        found = self.members.pop((table.lower(), old.lower()), None)
        if found is not None:
            self.members[(table.lower(), new.lower())] = found
        if old != new:
            renamed = f"{self.quote(old)} TO {self.quote(new)}"
            yield f"ALTER TABLE {self.quote(table)} RENAME COLUMN {renamed}"

    def _forget(self, table: str) -> None:
        for key in [k for k in self.members if k[0] == table.lower()]:
            del self.members[key]


def connect(url: str, time_zone: str = "+00:00") -> Downstream:
    """`sqlite:///FILE` (`sqlite:////ABSOLUTE`, `sqlite://` in memory) or
    `mysql://USER:PASSWORD@HOST:PORT/` (pymysql; `?unix_socket=PATH`), as ticdc-sim's checker
    reads them; `time_zone`: the changefeed's."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "sqlite":
        return SQLite(sqlite3.connect(parts.path[1:] or ":memory:"))
    if parts.scheme == "mysql":
        import pymysql

        options = dict(urllib.parse.parse_qsl(parts.query))
        connection = pymysql.connect(
            host=parts.hostname or "localhost",
            port=parts.port or 3306,
            user=urllib.parse.unquote(parts.username or "root"),
            password=urllib.parse.unquote(parts.password or ""),
            unix_socket=options.get("unix_socket"),
            charset="utf8mb4",
            init_command=f"SET time_zone = '{time_zone}'",
        )
        return MySQL(connection)
    raise ValueError(f"{url!r}: a downstream is sqlite:///PATH or mysql://USER@HOST:PORT/")


# -- reading TiDB's DDL --------------------------------------------------------------------------

# DDL that changes no rows in SQLite: databases, indexes, views, policies
_NO_ROWS = re.compile(
    r"\s*((CREATE|DROP|ALTER)\s+(DATABASE|SCHEMA|(UNIQUE\s+)?INDEX|VIEW|SEQUENCE|PLACEMENT|RESOURCE)"
    r"|CREATE\s+OR\s+REPLACE\s+VIEW)\b",
    re.IGNORECASE,
)
# items of a column list, or of an ALTER TABLE, that are not columns
_NOT_COLUMNS = ("KEY", "INDEX", "FULLTEXT", "SPATIAL", "CONSTRAINT", "FOREIGN", "CHECK")
# ALTER TABLE items that change no rows
_TABLE_OPTIONS = (
    "COMMENT", "AUTO_INCREMENT", "AUTO_RANDOM_BASE", "CHARSET", "CHARACTER", "DEFAULT",
    "COLLATE", "ENGINE", "ROW_FORMAT", "ALTER", "ALGORITHM", "LOCK", "CACHE", "NOCACHE",
    "SHARD_ROW_ID_BITS", "PRE_SPLIT_REGIONS", "TTL", "TTL_ENABLE", "TTL_JOB_INTERVAL", "SET",
    "CONVERT", "PARTITION", "REMOVE",  # repartitioning moves no row (TRUNCATE PARTITION does)
)  # fmt: skip
_TOKEN = re.compile(
    r"\s+|/\*.*?\*/|--[^\n]*"  # space and comments, TiDB's /*T![clustered_index] ...*/ too
    r"|(?P<name>`(?:[^`]|``)*`)"
    r"|(?P<text>(?:_\w+|[xXbB])?'(?:[^'\\]|\\.|'')*')"  # _utf8mb4'a', x'0f', b'101', 'it''s'
    r"|(?P<word>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\w+)"
    r"|(?P<mark>.)",
    re.DOTALL,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "Z": "\x1a", "b": "\b"}


class _Tokens:
    """A statement's tokens, read from the front: (kind, text), kind name/text/word/mark."""

    def __init__(self, sql: str = "", tokens: list[tuple[str, str]] | None = None) -> None:
        if tokens is None:
            tokens = [(m.lastgroup, m[0]) for m in _TOKEN.finditer(sql) if m.lastgroup]
        self.tokens, self.at = tokens, 0

    def done(self) -> bool:
        return self.at >= len(self.tokens)

    def peek(self, *words: str) -> bool:
        ahead = self.tokens[self.at : self.at + len(words)]
        return len(ahead) == len(words) and all(
            text.upper() == word for (_, text), word in zip(ahead, words, strict=True)
        )

    def peek_any(self, *words: str) -> bool:
        return any(self.peek(w) for w in words)

    def take(self, *words: str) -> bool:
        found = self.peek(*words)
        if found:
            self.at += len(words)
        return found

    def take_any(self, *words: str) -> bool:
        return any(self.take(w) for w in words)

    def next(self) -> tuple[str, str]:
        if self.done():
            raise UnsupportedDDL(f"ends too early after {self.text(0)!r}")
        self.at += 1
        return self.tokens[self.at - 1]

    def word(self) -> str:
        return self.next()[1]

    def name(self) -> str:
        """An identifier; `db`.`t` is `t` (SQLite has one namespace)."""
        kind, text = self.next()
        while self.peek("."):
            self.at += 1
            kind, text = self.next()
        return text[1:-1].replace("``", "`") if kind == "name" else text

    def group(self) -> _Tokens:
        """The tokens inside the parentheses that come next."""
        if not self.take("("):
            raise UnsupportedDDL(f"expected ( after {self.text(0, self.at)!r}")
        start, depth = self.at, 1
        while depth:
            depth += {"(": 1, ")": -1}.get(self.next()[1], 0)
        return _Tokens(tokens=self.tokens[start : self.at - 1])

    def skip(self) -> None:
        if self.peek("("):
            self.group()
        else:
            self.at += 1

    def rest(self) -> _Tokens:
        rest, self.at = _Tokens(tokens=self.tokens[self.at :]), len(self.tokens)
        return rest

    def ahead(self) -> _Tokens:
        """The rest, read without moving on."""
        return _Tokens(tokens=self.tokens[self.at :])

    def split(self) -> list[_Tokens]:
        """The rest, cut at the commas outside parentheses."""
        items: list[_Tokens] = [_Tokens(tokens=[])]
        while not self.done():
            if self.peek(","):
                self.at += 1
                items.append(_Tokens(tokens=[]))
            else:
                start = self.at
                self.skip()
                items[-1].tokens += self.tokens[start : self.at]
        return [item for item in items if item.tokens]

    def strings(self) -> list[str]:
        """The string literals among these tokens (ENUM's or SET's members)."""
        return [_unquote(text) for kind, text in self.tokens if kind == "text"]

    def constant(self) -> str | None:
        """A DEFAULT's value as a SQLite literal; None when it is not a constant."""
        sign = self.word() if self.peek_any("-", "+") else ""
        kind, text = self.next()
        if kind == "text" and text[0] in "bB":
            return str(int(text[2:-1] or "0", 2))
        if kind == "text" and text[0] in "xX":
            return text
        if kind == "text":
            return "'" + _unquote(text).replace("'", "''") + "'"
        if kind == "word" and (text.upper() == "NULL" or text[0].isdigit()):
            return sign + text
        if self.peek("("):
            self.group()  # CURRENT_TIMESTAMP(3), (expr)
        return None

    def text(self, start: int | None = None, end: int | None = None) -> str:
        start = self.at if start is None else start
        return " ".join(text for _, text in self.tokens[start:end])


def _unquote(literal: str) -> str:
    body = literal[literal.index("'") + 1 : -1]
    return re.sub(r"\\(.)|''", lambda m: _ESCAPES.get(m[1], m[1]) if m[1] else "'", body)
