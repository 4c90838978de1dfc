"""Hostile SQL, the `sql` share of the bad-input suite (issue 25): syntax, nesting depth,
sizes, encodings, TiDB's identifier and size limits, numeric range.

One row is one hostile script (its last statement is the hostile one) and the exact answer:
the error TiDB gives (code, SQLSTATE, a fragment of its message, where), or, where TiDB takes
the input, the result of a query afterwards. Every row runs through the engine, through
`ticdc-sim replay` and through SQL over HTTP, which must all answer the same; no output or
log may hold a traceback or an "internal error", and a failed statement emits nothing.
Scripts that are not UTF-8 go over HTTP as `charset=binary` (without, the body is refused
with 400 saying so).

Then bounded, seeded hypothesis fuzzing of the SQL entry point: random expressions over edge
values in every statement kind, and random text, may raise nothing but SQLError.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ticdc_sim.cli import app as cli
from ticdc_sim.errors import SQLSTATE, SQLError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_one, split_script
from ticdc_sim.model.events import RowChangedEvent
from ticdc_sim.service.app import create_app
from ticdc_sim.service.models import cell
from ticdc_sim.service.settings import Settings

T = "CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(20), b BLOB, d DECIMAL(5,2), f DOUBLE);\n"
NAME_64 = "n" * 64
NAME_65 = "n" * 65


@dataclass(frozen=True)
class Case:
    """A script whose last statement is hostile, and the exact answer to it."""

    id: str
    sql: str | bytes
    code: int | None = None  # the last statement's error; None: it runs
    message: str = ""  # a fragment of the error's message
    at: tuple[int, int] | None = None  # the error's line and column, if not the statement's
    check: str = ""  # a SELECT run afterwards (accepted scripts)
    rows: tuple[tuple[Any, ...], ...] = ()  # what it answers
    http: int = 200  # what SQL over HTTP answers where the service refuses the body whole


def _select(query: str, *row: Any) -> tuple[str, tuple[tuple[Any, ...], ...]]:
    return query, (tuple(row),)


def nested(opener: str, closer: str, depth: int, inner: str = "1") -> str:
    return opener * depth + inner + closer * depth


def columns(count: int) -> str:
    return "CREATE TABLE w (" + ", ".join(f"c{i} INT" for i in range(count)) + ")"


# -- the cases ---------------------------------------------------------------------------------

SYNTAX = [
    Case("dangling-plus", "SELECT 1 +", 1064, 'line 1 column 10 near "+"', (1, 10)),
    Case(
        "values-trailing-comma",  # the message counts in the statement, as TiDB's does
        T + "INSERT INTO t VALUES (1,)",
        1064,
        "line 1 column 24 near \",)\" (Expected an item after ',')",
        (2, 24),
    ),
    Case("create-without-name", "CREATE TABLE (id INT)", 1064, 'near "(id INT)"', (1, 14)),
    Case("unclosed-parenthesis", "SELECT (1", 1064, "(Expecting ))", (1, 9)),
    Case("unterminated-quote", "SELECT 1;\nSELECT 'abc", 1064, "unterminated ' quote", (2, 1)),
    Case("unterminated-backquote", "SELECT `abc", 1064, "unterminated ` quote"),
    Case("unknown-show", "SHOW FOOBAR BAZ", 1064, 'line 1 column 11 near "FOOBAR BAZ"'),
    Case("show-of-no-table", "SHOW CREATE TABLE nope", 1146, "Table 'test.nope' doesn't exist"),
    Case("not-a-statement", "FOO BAR", 1064, 'line 1 column 3 near "FOO BAR" (not a statement)'),
    Case("unknown-statement", "CALL p()", 1105, "not supported by the TiDB dialect"),
    # a join hung on the UPDATE's table was ignored: every row of `t` was updated
    Case(
        "update-join",
        T + "UPDATE t JOIN t AS u ON t.id = u.id SET t.id = 2",
        1105,
        "multi-table UPDATE is not supported",
        check="SELECT COUNT(*) FROM t WHERE id = 2",
    ),
    Case(
        "update-comma-join",
        T + "UPDATE t, t AS u SET t.id = 2",
        1105,
        "multi-table UPDATE is not supported",
    ),
    Case(
        "update-left-join",
        T + "UPDATE t LEFT JOIN t AS u USING (id) SET t.id = 2",
        1105,
        "multi-table UPDATE is not supported",
    ),
    Case(
        "delete-join",
        T + "DELETE t FROM t JOIN t AS u ON t.id = u.id",
        1105,
        "multi-table DELETE is not supported",
    ),
    Case(
        "system-database",  # said why (mysqldump reads mysql.*; information_schema answers)
        "SELECT user FROM mysql.user",
        1049,
        "Unknown database 'mysql' (TiDB's system databases but information_schema are not"
        " simulated here; information_schema and SHOW answer from the catalog)",
    ),
    Case(
        "order-by-position-past-the-select-list",  # was ignored: rows in scan order
        T + "SELECT id FROM t ORDER BY 2",
        1054,
        "Unknown column '2' in 'order clause'",
    ),
    Case(
        "insert-returning",
        T + "INSERT INTO t VALUES (1) RETURNING id",
        1064,
        'line 1 column 34 near "RETURNING id" (TiDB has no RETURNING)',
    ),
    Case("grant-changes-no-data", "GRANT ALL ON *.* TO u", check="SELECT 3", rows=((3,),)),
    Case("create-user-changes-no-data", "CREATE USER u", check="SELECT 4", rows=((4,),)),
    Case("flush-changes-no-data", "FLUSH PRIVILEGES", check="SELECT 5", rows=((5,),)),
    Case("delete-without-from", T + "DELETE t WHERE", 1064, 'near "WHERE"', (2, 14)),
    Case("only-semicolons", ";;;\n;", check="SELECT 1", rows=((1,),)),
    Case("only-comments", "-- nothing\n/* at all */ # here\n", check="SELECT 2", rows=((2,),)),
    Case("keyword-as-table", "CREATE TABLE select (id INT)", 1064, "Expected table name", (1, 19)),
    Case("unknown-table", "INSERT INTO nowhere VALUES (1)", 1146, "Table 'test.nowhere'"),
    Case("unknown-column", T + "UPDATE t SET nope = 1", 1054, "Unknown column 'nope'"),
    Case("column-count", T + "INSERT INTO t VALUES (1, 2)", 1136, "doesn't match value count"),
    Case("unknown-function", "SELECT NO_SUCH_FN(1)", 1305, "FUNCTION NO_SUCH_FN does not exist"),
    Case(
        "limit-negative",  # ran as Python's [:-1]: every row but the last was deleted
        T + "INSERT INTO t (id) VALUES (1), (2), (3);\nDELETE FROM t LIMIT -1",
        1064,
        "near 'LIMIT' (LIMIT takes an unsigned integer, not '-1')",
        (3, 1),
    ),
    Case("limit-string", T + "UPDATE t SET s = 'x' LIMIT 'a'", 1064, "not 'a')"),
    Case(
        "select-offset",  # OFFSET was dropped
        T + "INSERT INTO t (id) VALUES (1), (2), (3), (4)",
        check="SELECT id FROM t ORDER BY id LIMIT 2 OFFSET 1",
        rows=((2,), (3,)),
    ),
    Case(
        "sql-mode-unknown",
        "SET sql_mode = 'STRICT_TRANS_TABLES,NOPE'",
        1231,
        "Variable 'sql_mode' can't be set to the value of 'STRICT_TRANS_TABLES,NOPE'",
    ),
    Case(
        "autocommit-2", "SET autocommit = 2", 1231, "'autocommit' can't be set to the value of '2'"
    ),
    Case(
        "time-zone-past-14h",  # was an internal error (ValueError)
        "SET time_zone = '+99:00'",
        1298,
        "Unknown or incorrect time zone: '+99:00'",
    ),
    Case("sleep", "SELECT SLEEP(5)", check="SELECT SLEEP(1)", rows=((0,),)),
]

DEPTH = [
    Case("parentheses-40", "SELECT " + nested("(", ")", 40), check="SELECT 40", rows=((40,),)),
    Case(
        "parentheses-100",
        T + "INSERT INTO t (id) VALUES " + nested("(", ")", 99),
        check="SELECT id FROM t",
        rows=((1,),),
    ),
    Case(
        "parentheses-101",
        "SELECT " + nested("(", ")", 101),
        1064,
        "(expressions nest more than 100 levels deep)",
        (1, 108),
    ),
    Case("calls-101", "SELECT " + nested("ABS(", ")", 101), 1064, "more than 100 levels", (1, 411)),
    Case(
        "case-101",
        "SELECT " + nested("CASE WHEN 1 THEN ", " END", 101),
        1064,
        "more than 100 levels",
        (1, 1708),
    ),
    Case("not-101", "SELECT " + "NOT " * 101 + "1", 1064, "more than 100 levels", (1, 408)),
    Case("minus-101", "SELECT " + "- " * 101 + "1", 1064, "more than 100 levels", (1, 208)),
    Case(
        "where-101",
        T + "DELETE FROM t WHERE id = " + nested("(", ")", 101),
        1064,
        "more than 100 levels",
        (2, 126),
    ),
    Case("plus-600", "SELECT " + "+".join(["1"] * 600), check="SELECT 600", rows=((600,),)),
    Case(
        "or-400",  # the ORM query, refused as "nested too deeply"
        T
        + "INSERT INTO t (id) VALUES (1), (7), (399), (400);\n"
        + "DELETE FROM t WHERE "
        + " OR ".join(f"id = {i}" for i in range(400)),
        check="SELECT id FROM t",
        rows=((400,),),
    ),
    Case(
        "or-10000",
        T
        + "INSERT INTO t (id) VALUES (2), (9999), (10001);\n"
        + "UPDATE t SET s = 'hit' WHERE "
        + " OR ".join(f"id = {i}" for i in range(10_000)),
        check="SELECT id, s FROM t",
        rows=((2, "hit"), (9999, "hit"), (10001, None)),
    ),
    Case(
        "in-10000",
        T
        + "INSERT INTO t (id) VALUES (3), (5);\n"
        + f"DELETE FROM t WHERE id IN ({', '.join(map(str, range(0, 10_000, 3)))})",
        check="SELECT id FROM t",
        rows=((5,),),
    ),
    Case(
        "and-2000",
        "SELECT " + " AND ".join(["1"] * 2000) + ", " + " OR ".join(["0"] * 2000),
        check="SELECT 1 AND 1",
        rows=((1,),),
    ),
    Case(
        "json-depth-100",
        "CREATE TABLE j (id INT PRIMARY KEY, v JSON);\n"
        f"INSERT INTO j VALUES (1, '{nested('[', ']', 100, '')}')",
        check="SELECT id FROM j",
        rows=((1,),),
    ),
    Case(
        "json-depth-101",
        "CREATE TABLE j (id INT PRIMARY KEY, v JSON);\n"
        f"INSERT INTO j VALUES (1, '{nested('[', ']', 101, '')}')",
        3157,
        "The JSON document exceeds the maximum depth.",
    ),
    Case(
        "json-depth-100000",
        "CREATE TABLE j (id INT PRIMARY KEY, v JSON);\n"
        f"INSERT INTO j VALUES (1, '{nested('[', ']', 100_000, '')}')",
        3157,
        "The JSON document exceeds the maximum depth.",
    ),
]

LIMITS = [
    Case("table-64", f"CREATE TABLE {NAME_64} (id INT)", check="SELECT 1", rows=((1,),)),
    Case(
        "table-65",
        f"CREATE TABLE {NAME_65} (id INT)",
        1059,
        f"Identifier name '{NAME_65}' is too long",
    ),
    Case("database-65", f"CREATE DATABASE {NAME_65}", 1059, f"'{NAME_65}' is too long"),
    Case("column-65", f"CREATE TABLE w ({NAME_65} INT)", 1059, f"'{NAME_65}' is too long"),
    Case("index-65", f"CREATE TABLE w (a INT, KEY {NAME_65} (a))", 1059, "is too long"),
    Case("view-65", f"CREATE VIEW {NAME_65} AS SELECT 1", 1059, "is too long"),
    Case("rename-to-65", T + f"RENAME TABLE t TO {NAME_65}", 1059, "is too long"),
    Case(
        "rename-column-to-65",
        T + f"ALTER TABLE t RENAME COLUMN s TO {NAME_65}",
        1059,
        "is too long",
    ),
    Case(
        "add-index-65",
        T + f"CREATE INDEX {NAME_65} ON t (s)",
        1059,
        f"Identifier name '{NAME_65}' is too long",
    ),
    Case(
        "multibyte-64",  # 64 characters, 128 bytes: TiDB counts characters
        f"CREATE TABLE {'é' * 64} (id INT)",
        check="SELECT 1",
        rows=((1,),),
    ),
    Case("table-trailing-space", "CREATE TABLE `w ` (id INT)", 1103, "Incorrect table name 'w '"),
    Case(
        "column-trailing-space",
        "CREATE TABLE w (`a ` INT)",
        1166,
        "Incorrect column name 'a '",
    ),
    Case(
        "database-trailing-space",
        "CREATE DATABASE `d `",
        1102,
        "Incorrect database name 'd '",
    ),
    Case("columns-1017", columns(1017), check="SELECT 1017", rows=((1017,),)),
    Case("columns-1018", columns(1018), 1117, "Too many columns"),
    Case(
        "add-column-1018",
        columns(1017) + ";\nALTER TABLE w ADD COLUMN extra INT",
        1117,
        "Too many columns",
    ),
    Case(
        "indexes-65",
        "CREATE TABLE w (a INT, " + ", ".join(f"KEY k{i} (a)" for i in range(65)) + ")",
        1069,
        "Too many keys specified; max 64 keys allowed",
    ),
    Case(
        "key-parts-17",
        "CREATE TABLE w ("
        + ", ".join(f"c{i} INT" for i in range(17))
        + ", KEY k ("
        + ", ".join(f"c{i}" for i in range(17))
        + "))",
        1070,
        "Too many key parts specified; max 16 parts allowed",
    ),
    Case(
        "row-20mb",
        "CREATE TABLE big (id INT PRIMARY KEY, v LONGTEXT);\n"
        f"INSERT INTO big VALUES (1, '{'x' * 20_971_520}')",
        8025,
        "entry too large, the max entry size is 6291456, the size of data is 20971562",
        http=413,  # over TICDC_SIM_MAX_BODY_BYTES: the service refuses it first
    ),
    Case(
        "row-grows-past-6mib",
        "CREATE TABLE big (id INT PRIMARY KEY, v LONGTEXT, w LONGBLOB);\n"
        "INSERT INTO big VALUES (1, REPEAT('x', 6000000), NULL);\n"
        "UPDATE big SET w = REPEAT('y', 1000000)",
        8025,
        "the size of data is 7000050",
    ),
    Case(
        "row-just-under-6mib",
        "CREATE TABLE big (id INT PRIMARY KEY, v LONGTEXT);\n"
        "INSERT INTO big VALUES (1, REPEAT('x', 6291400))",
        check="SELECT LENGTH(v) FROM big",
        rows=((6291400,),),
    ),
    Case(
        "varchar-16384",
        "CREATE TABLE w (c VARCHAR(16384))",
        1074,
        "Column length too big for column 'c' (max = 16383); use BLOB or TEXT instead",
    ),
    Case("char-256", "CREATE TABLE w (c CHAR(256))", 1074, "column 'c' (max = 255)"),
    Case(
        "display-width-256",
        "CREATE TABLE w (c INT(256))",
        1439,
        "Display width out of range for column 'c' (max = 255)",
    ),
    Case("bit-65", "CREATE TABLE w (c BIT(65))", 1439, "column 'c' (max = 64)"),
    Case(
        "set-65-members",
        "CREATE TABLE w (c SET(" + ", ".join(f"'m{i}'" for i in range(65)) + "))",
        1097,
        "Too many strings for column c and SET",
    ),
    Case(
        "key-past-3072-bytes",
        "CREATE TABLE w (c VARCHAR(3000), KEY k (c(1000)))",
        1071,
        "Specified key was too long (4000 bytes); max key length is 3072 bytes",
    ),
    Case(
        "text-key-without-length",
        "CREATE TABLE w (c TEXT, KEY k (c))",
        1170,
        "BLOB/TEXT column 'c' used in key specification without a key length",
    ),
    Case(
        "partitions-8193",
        "CREATE TABLE w (id INT) PARTITION BY HASH(id) PARTITIONS 8193",
        1499,
        "Too many partitions (including subpartitions) were defined",
    ),
    Case("year-3", "CREATE TABLE w (c YEAR(3))", 1818, "Supports only YEAR or YEAR(4) column"),
    Case(
        "largest-columns",
        "CREATE TABLE w (a VARCHAR(16383), b VARBINARY(65535), c CHAR(255), d INT(255),"
        " e BIT(64), f YEAR(4), KEY k (c, d))",
        check="SELECT 1",
        rows=((1,),),
    ),
    Case(
        "alias-300",  # TiDB cuts a result column's name to 256 bytes
        "SELECT 1",
        check=f"SELECT 7 AS {'a' * 300}",
        rows=((7,),),
    ),
]

NUMBERS = [
    Case(
        "decimal-1e100",  # the issue: "internal error (InvalidOperation)"
        T + "INSERT INTO t (id, d) VALUES (1, 1e100)",
        1264,
        "Out of range value for column 'd' at row 1",
    ),
    Case(
        "decimal-1e-100",
        T + "INSERT INTO t (id, d) VALUES (1, 1e-100)",
        check="SELECT d FROM t",
        rows=((Decimal("0.00"),),),
    ),
    Case(
        "decimal-string-1e999999",
        T + "INSERT INTO t (id, d) VALUES (1, '1e999999')",
        1264,
        "Out of range value for column 'd'",
    ),
    Case(
        "double-string-1e999999",
        T + "INSERT INTO t (id, f) VALUES (1, '-1e999999')",
        1264,
        "Out of range value for column 'f'",
    ),
    Case(
        "double-literal-1e999",
        T + "INSERT INTO t (id, f) VALUES (1, 1e999)",
        1367,
        "Illegal double '1e999' value found during parsing",
    ),
    Case(
        "double-nan-string",
        T + "INSERT INTO t (id, f) VALUES (1, 'NaN')",
        1366,
        "Incorrect double value: 'NaN' for column 'f' at row 1",
    ),
    Case(
        "int-inf-string",
        T + "INSERT INTO t (id) VALUES ('inf')",
        1366,
        "Incorrect integer value: 'inf' for column 'id' at row 1",
    ),
    Case(
        "bigint-plus-one",
        "SELECT 18446744073709551615 + 1",
        1690,
        "BIGINT UNSIGNED value is out of range in '18446744073709551615 + 1'",
    ),
    Case(
        "double-times-ten",
        "SELECT 1e308 * 10",
        1690,
        "DOUBLE value is out of range in '1e308 * 10'",
    ),
    Case(
        "decimal-times",
        "SELECT " + "9" * 60 + " * " + "9" * 60 + ".5",
        1690,
        "DECIMAL value is out of range",
    ),
    Case(
        "pow-overflow",
        "SELECT POW(10, 400)",
        1690,
        "DOUBLE value is out of range in 'POWER(10, 400)'",
    ),
    Case("pow-zero-negative", "SELECT POW(0, -1)", 1690, "DOUBLE value is out of range"),
    Case(
        "overflow-stores-nothing",
        T + "INSERT INTO t (id, f) VALUES (1, 1), (2, 1e308 * 10)",
        1690,
        "DOUBLE value is out of range",
    ),
    Case(
        "divide-by-zero-stored",
        T + "INSERT INTO t (id, d) VALUES (1, 1 / 0)",
        1365,
        "Division by 0",
    ),
    Case(
        "divide-by-zero-selected",
        "SELECT 1",
        check="SELECT 1 / 0, 1 DIV 0, 1 % 0, 1.5 / 0",
        rows=((None, None, None, None),),
    ),
    Case(
        "shifts-past-64-bits",
        "SELECT 1",
        check="SELECT 1 << 64, 1 << 18446744073709551615, 1 << -1, -1 >> 63, ~0, -1 & 255",
        rows=((0, 0, 0, 1, 18446744073709551615, 255),),
    ),
    Case(
        "cast-clamps",
        "SELECT 1",
        check="SELECT CAST(1e30 AS SIGNED), CAST(-1 AS UNSIGNED), CAST(1e100 AS DECIMAL(5,2)),"
        " CAST(18446744073709551615 AS SIGNED)",
        rows=((9223372036854775807, 18446744073709551615, Decimal("999.99"), -1),),
    ),
    Case(
        "cast-precision-66",
        "SELECT CAST(1 AS DECIMAL(66, 2))",
        1426,
        "Too-big precision 66 specified for 'CAST'. Maximum is 65.",
    ),
    Case(
        "cast-json-garbage",
        "SELECT CAST('abc' AS JSON)",
        3141,
        "Invalid JSON text",
    ),
    Case(
        "string-past-double",
        "SELECT 1",
        check="SELECT '1e999999' + 0, '-1e999999' + 0",
        rows=((1.7976931348623157e308, -1.7976931348623157e308),),
    ),
    Case(
        "round-far",
        "SELECT 1",
        check="SELECT ROUND(2.5e0), ROUND(1.5e308, -400), ROUND(1.005, 100), TRUNCATE(1e300, 400),"
        " ROUND(2.5), ROUND(-0.5)",
        rows=((2.0, 0.0, Decimal("1." + "005".ljust(30, "0")), 1e300, Decimal(3), Decimal(-1)),),
    ),
    Case(
        "repeat-past-max-packet",
        "SELECT 1",
        check="SELECT REPEAT('x', 1e18), LPAD('x', 1e10, 'y'), RPAD('x', 67108865, 'y')",
        rows=((None, None, None),),
    ),
    Case(
        "dates-past-9999",
        "SELECT 1",
        check="SELECT DATE_ADD('9999-12-31', INTERVAL 1 DAY), FROM_UNIXTIME(1e20),"
        " '2024-01-01' + INTERVAL 1e300 SECOND",
        rows=((None, None, None),),
    ),
    Case(
        "unsigned-past-range",
        "CREATE TABLE u (id BIGINT UNSIGNED PRIMARY KEY);\nINSERT INTO u VALUES (18446744073709551616)",
        1264,
        "Out of range value for column 'id' at row 1",
    ),
    Case(
        "non-strict-clips",
        "CREATE TABLE u (id TINYINT UNSIGNED PRIMARY KEY, d DECIMAL(5,2));\n"
        "SET sql_mode = '';\nINSERT INTO u VALUES (300, 1e100)",
        check="SELECT id, d FROM u",
        rows=((255, Decimal("999.99")),),
    ),
    Case(
        "ignore-update-clips",  # found by the differential test
        "CREATE TABLE u (id TINYINT UNSIGNED PRIMARY KEY);\nINSERT INTO u VALUES (254);\n"
        "INSERT IGNORE INTO u VALUES (254) ON DUPLICATE KEY UPDATE id = id + 2",
        check="SELECT id FROM u",
        rows=((255,),),
    ),
    Case(
        "json-number-past-double",
        "CREATE TABLE j (id INT PRIMARY KEY, v JSON);\nINSERT INTO j VALUES (1, '[1e400]')",
        3140,
        "Invalid JSON text",
    ),
    Case(
        "json-nan",
        "CREATE TABLE j (id INT PRIMARY KEY, v JSON);\nINSERT INTO j VALUES (1, '[NaN]')",
        3140,
        "Invalid JSON text",
    ),
    Case("json-path", "SELECT JSON_EXTRACT('[1]', '$[x')", 3143, "Invalid JSON path expression"),
    Case(
        "exponent-then-sign",  # sqlglot read `1e2-1e1` as one name and `1e2+1` as one number
        "SELECT 1",
        check="SELECT 1e2+1, 1e2-1e1-1, 1.5e1+-1",
        rows=((101.0, 89.0, 14.0),),
    ),
    Case(
        "default-restored-with-exponent",  # the restored DDL writes `1e100+0`, read again
        T + "ALTER TABLE t ADD COLUMN z DOUBLE DEFAULT (1e100 + 0);\nINSERT INTO t (id) VALUES (1)",
        check="SELECT z FROM t",
        rows=((1e100,),),
    ),
]

ENCODINGS = [
    Case(
        "latin1-into-varchar",  # the issue: U+FFFD in the changelog, or a TypeError
        T.encode() + b"INSERT INTO t (id, s) VALUES (1, 'caf\xe9')",
        1366,
        "Incorrect string value '\\xE9' for column 's' at row 1",
    ),
    Case(
        "latin1-into-blob",
        T.encode() + b"INSERT INTO t (id, b) VALUES (1, 'caf\xe9')",
        check="SELECT HEX(b) FROM t",
        rows=(("636166E9",),),
    ),
    Case(
        "latin1-in-comment",
        T.encode() + b"INSERT INTO t (id) VALUES (1) /* caf\xe9 */; -- \xe9\n",
        check="SELECT id FROM t",
        rows=((1,),),
    ),
    Case(
        "latin1-in-identifier",
        b"CREATE TABLE `caf\xe9` (id INT)",
        1300,
        "Invalid utf8mb4 character string: 'caf\\xE9'",
    ),
    Case(
        "latin1-in-ddl-comment",
        b"CREATE TABLE w (id INT) COMMENT 'caf\xe9'",
        1300,
        "Invalid utf8mb4 character string: 'caf\\xE9'",
    ),
    Case(
        "latin1-non-strict",  # TiDB stores '?' for a character it cannot read (OpReplace),
        # which it takes to be as long as its first byte says (charset encodingUTF8.Peek)
        T.encode() + b"SET sql_mode = '';\nINSERT INTO t (id, s) VALUES (1, 'caf\xe9 ok')",
        check="SELECT s FROM t",
        rows=(("caf?k",),),
    ),
    Case(
        "latin1-insert-ignore",
        T.encode() + b"INSERT IGNORE INTO t (id, s) VALUES (1, 'ab\xc3(')",
        check="SELECT s FROM t",
        rows=(("ab?",),),
    ),
    Case(
        "overlong-utf8",
        T.encode() + b"INSERT INTO t (id, s) VALUES (1, 'a\xc0\xafb')",
        1366,
        "Incorrect string value '\\xC0\\xAF' for column 's'",
    ),
    Case(
        "latin1-as-number",
        T.encode() + b"INSERT INTO t (id) VALUES ('1\xe9')",
        1366,
        "Incorrect integer value: '1\\xE9' for column 'id'",
    ),
    Case(
        "latin1-into-json",  # TiDB reads JSON with Go's encoding/json: U+FFFD
        b"CREATE TABLE j (id INT PRIMARY KEY, v JSON);\nINSERT INTO j VALUES (1, '[\"caf\xe9\"]')",
        check="SELECT v FROM j",
        rows=(('["caf\ufffd"]',),),
    ),
    Case(
        "set-names-latin1",
        T.encode() + b"SET NAMES latin1;\nINSERT INTO t (id, s) VALUES (1, 'caf\xe9')",
        check="SELECT s FROM t",
        rows=(("café",),),
    ),
    Case(
        "set-names-latin1-bytes-windows-leaves-undefined",  # MySQL's latin1 reads 0x81 as
        # U+0081 (was 1105 "not valid cp1252: character maps to <undefined>")
        T.encode() + b"SET NAMES latin1;\nINSERT INTO t (id, s) VALUES (1, 'a\x81\x9db')",
        check="SELECT s, LENGTH(s) FROM t",
        rows=(("a\x81\x9db", 6),),
    ),
    Case(
        "set-names-gbk-not-gbk",  # TiDB names the character's two bytes (was 1105)
        T.encode() + b"SET NAMES gbk;\nINSERT INTO t (id, s) VALUES (1, '\x81\x30')",
        1300,
        "Invalid gbk character string: '8130'",
    ),
    Case(
        "set-names-ascii-not-ascii",
        T.encode() + b"SET NAMES ascii;\nINSERT INTO t (id, s) VALUES (1, 'caf\xe9')",
        1300,
        "Invalid ascii character string: 'E9'",
    ),
    Case(
        "set-character-set-client-unknown",
        "SET character_set_client = klingon",
        1115,
        "Unknown character set: 'klingon'",
    ),
    Case(
        "skip-utf8-check",  # TiDB's tidb_skip_utf8_check stores the bytes unchecked; what
        # the CLI prints of them is U+FFFD, as Go's JSON writes them (was a TypeError)
        b"SET tidb_skip_utf8_check = 1;\n"
        + T.encode()
        + b"INSERT INTO t (id, s) VALUES (1, 'caf\xe9')",
        check="SELECT LENGTH(s) FROM t",
        rows=((4,),),
    ),
    Case(
        "skip-utf8-check-bad-value",
        "SET tidb_skip_utf8_check = 'maybe'",
        1231,
        "Variable 'tidb_skip_utf8_check' can't be set to the value of 'maybe'",
    ),
    Case(
        "emoji-into-utf8mb3",
        "CREATE TABLE m (id INT PRIMARY KEY, s VARCHAR(5) CHARACTER SET utf8);\n"
        "INSERT INTO m VALUES (1, 'a😀')",
        1366,
        "Incorrect string value '\\xF0\\x9F\\x98\\x80' for column 's' at row 1",
    ),
    Case(
        "emoji-into-utf8mb4",
        T + "INSERT INTO t (id, s) VALUES (1, 'a😀')",
        check="SELECT s, LENGTH(s) FROM t",
        rows=(("a😀", 5),),
    ),
    Case(
        "nul-in-string",
        T + "INSERT INTO t (id, s) VALUES (1, 'a\\0b')",
        check="SELECT LENGTH(s) FROM t",
        rows=((3,),),
    ),
]

READ_ONLY = "function READ ONLY has only noop implementation in tidb now"
TRANSACTIONS = [  # START TRANSACTION's and SET TRANSACTION's modes, as TiDB takes them
    Case("start-transaction-read-only", "START TRANSACTION READ ONLY", 1235, READ_ONLY),
    Case("set-transaction-read-only", "SET SESSION TRANSACTION READ ONLY", 1235, READ_ONLY),
    Case("set-transaction-read-only-listed", "SET TRANSACTION ISOLATION LEVEL READ COMMITTED,"
         " READ ONLY", 1235, READ_ONLY),
    Case("set-tx-read-only", "SET tx_read_only = ON", 1235, READ_ONLY),
    Case("begin-unknown-mode", "BEGIN FOO", 1064, 'line 1 column 7 near "FOO"'),
    Case("start-transaction-with-consistent-snapshot",  # was 1064
         T + "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ WRITE;\n"
         "INSERT INTO t (id) VALUES (1);\nCOMMIT", check="SELECT id FROM t", rows=((1,),)),
]  # fmt: skip

CASES = SYNTAX + DEPTH + LIMITS + NUMBERS + ENCODINGS + TRANSACTIONS


# -- running a case ----------------------------------------------------------------------------


def _text(case: Case) -> str:
    return case.sql.decode("utf-8", "surrogateescape") if isinstance(case.sql, bytes) else case.sql


def _statements(case: Case) -> list[str]:
    return [line for line in _text(case).splitlines(keepends=True)]


def run_engine(case: Case) -> tuple[Engine, SQLError | None, list[Any], int]:
    """The script on an engine: its engine, the last statement's error, what that statement
    emitted, and its line."""
    engine = Engine()
    error, emitted, line = None, [], 0
    try:
        statements = list(split_script(_statements(case), "hostile.sql"))
    except SQLError as e:
        return engine, e, [], e.location.line if e.location else 1
    for stmt in statements:
        error = engine.step(stmt)
        emitted, engine.upstream.outbox = engine.upstream.outbox, []
        line = stmt.location.line
        if error is not None:
            break
    return engine, error, emitted, line


def expected_location(case: Case, line: int) -> tuple[int, int]:
    return case.at or (line, 1)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("data"), mysql_port=0)
    with TestClient(create_app(settings)) as c:
        yield c


def _no_trouble(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text and "internal error" not in text, text[-2000:]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_engine_answers_exactly(case: Case, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        engine, error, emitted, line = run_engine(case)
    _no_trouble(caplog.text)
    if case.code is None:
        assert error is None, str(error)
        rows = engine.query(parse_one(case.check), case.check).rows
        assert [tuple(r) for r in rows] == list(case.rows)
        if case.id == "alias-300":
            assert engine.query(parse_one(case.check), case.check).names == ["a" * 256]
        return
    assert error is not None, f"{case.id} ran"
    assert (error.code, error.sqlstate) == (case.code, SQLSTATE.get(case.code, "HY000"))
    assert case.message in error.message, error.message
    assert error.location is not None
    assert (error.location.line, error.location.col) == expected_location(case, line)
    assert [e for e in emitted if isinstance(e, RowChangedEvent)] == []  # a failed one: nothing
    _no_trouble(str(error))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_replay_answers_the_same(case: Case, tmp_path: Path) -> None:
    script = tmp_path / "hostile.sql"
    script.write_bytes(case.sql if isinstance(case.sql, bytes) else case.sql.encode())
    result = CliRunner().invoke(cli, ["replay", str(script)])
    output = result.stdout + result.stderr
    _no_trouble(output)
    if case.code is None:
        assert result.exit_code == 0, output[-2000:]
        if case.id == "skip-utf8-check":
            assert '"s":"caf\ufffd"' in result.stdout
        return
    _, error, _, line = run_engine(case)
    assert error is not None
    assert result.exit_code == 1
    line_at, col_at = expected_location(case, line)
    sqlstate = SQLSTATE.get(case.code, "HY000")
    head = f"error: {script}:{line_at}:{col_at}: ERROR {case.code} ({sqlstate}): "
    assert head + error.message in result.stderr, result.stderr[-2000:]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_sql_over_http_answers_the_same(case: Case, client: TestClient) -> None:
    cluster = f"h-{CASES.index(case)}"
    assert client.post("/sim/v1/clusters", json={"id": cluster}).status_code == 201
    try:
        url = f"/sim/v1/clusters/{cluster}/sql"
        response = client.post(url, content=case.sql, headers={"content-type": "text/plain"})
        _no_trouble(response.text)
        if (
            isinstance(case.sql, bytes)
            and not _text(case).isascii()
            and max(_text(case)) >= "\udc80"
        ):  # not UTF-8: refused whole, with TiCDC's JSON error body, unless it says binary
            assert response.status_code == 400
            assert "the body is not UTF-8" in response.json()["error_msg"]
            assert "say charset=binary" in response.json()["error_msg"]
            binary = {"content-type": "text/plain; charset=binary"}
            response = client.post(url, content=case.sql, headers=binary)
            _no_trouble(response.text)
        if case.http != 200:
            assert response.status_code == case.http
            assert response.json()["error_code"] == "SIM:TooLarge"
            return
        if case.id.startswith("unterminated"):  # a script that cannot be split: nothing runs
            assert response.status_code == 400
            body = response.json()
            assert body["error_code"] == "SIM:SQLSyntax" and case.message in body["error_msg"]
            return
        assert response.status_code == 200, response.text[:2000]
        body = response.json()
        last = body["statements"][-1] if body["statements"] else None
        if case.code is None:
            assert body["ok"] is True, last
            check = client.post(url, content=case.check, headers={"content-type": "text/plain"})
            answer = check.json()["statements"][-1]
            assert answer["rows"] == [[cell(v) for v in row] for row in case.rows]
            return
        _, error, _, line = run_engine(case)
        assert error is not None
        assert body["ok"] is False
        line_at, col_at = expected_location(case, line)
        assert last["error"] == {
            "message": error.message,
            "code": case.code,
            "sqlstate": SQLSTATE.get(case.code, "HY000"),
            "line": line_at,
            "column": col_at,
        }
        assert last["commit_ts"] is None  # the failed statement committed nothing
    finally:
        client.delete(f"/sim/v1/clusters/{cluster}")


def test_the_suite_has_its_share() -> None:
    assert len(CASES) >= 70
    assert len({c.id for c in CASES}) == len(CASES)


# -- fuzzing the SQL entry point ---------------------------------------------------------------

EDGES = [
    "0", "-1", "1e308", "-1e308", "1e-308", "1.7976931348623157e308", "'1e999999'", "'nan'",
    "'-Infinity'", "18446744073709551615", "18446744073709551616", "-9223372036854775808",
    "9" * 70, "0." + "0" * 40 + "1", "NULL", "''", "'abc'", "' 12 '", "x'ff'", "b'101'",
    "'2024-02-30'", "'9999-12-31 23:59:59'", "'0000-00-00'", "'838:59:59'", "TRUE", "1.5",
    "'[1e400]'", "'{\"a\": [1, 2]}'", "'\\\\'", "'%'", "c", "c", "c",
]  # fmt: skip
UNARY = ["-", "NOT ", "~", "!"]
BINARY = [
    "+", "-", "*", "/", "DIV", "%", "&", "|", "^", "<<", ">>", "=", "<=>", "<", ">=", "<>",
    "AND", "OR", "XOR", "LIKE",
]  # fmt: skip
FUNCTIONS = {
    1: ["ABS", "CEIL", "FLOOR", "ROUND", "SQRT", "SIGN", "HEX", "UNHEX", "MD5", "UPPER",
        "REVERSE", "TRIM", "LENGTH", "DATE", "YEAR", "DAY", "TO_DAYS", "FROM_UNIXTIME",
        "UNIX_TIMESTAMP", "ASCII"],
    2: ["POW", "MOD", "ROUND", "TRUNCATE", "LEFT", "RIGHT", "REPEAT", "DATEDIFF",
        "DATE_FORMAT", "IFNULL", "NULLIF", "JSON_EXTRACT", "GREATEST", "LEAST", "CONCAT"],
    3: ["LPAD", "RPAD", "SUBSTRING", "REPLACE", "IF", "CONCAT_WS"],
}  # fmt: skip
CASTS = ["SIGNED", "UNSIGNED", "DECIMAL(5,2)", "DECIMAL(65,30)", "DOUBLE", "CHAR", "BINARY",
         "DATE", "DATETIME", "JSON"]  # fmt: skip
COLUMN_TYPES = [
    "INT", "BIGINT UNSIGNED", "TINYINT", "DECIMAL(5,2)", "DECIMAL(65,30)", "DOUBLE", "FLOAT(5,2)",
    "VARCHAR(5)", "CHAR(3) CHARACTER SET utf8", "TEXT", "BLOB", "DATE", "DATETIME(6)",
    "TIMESTAMP", "TIME(3)", "YEAR", "BIT(3)", "ENUM('a','b')", "SET('a','b')", "JSON",
]  # fmt: skip


# bounded and seeded: the same examples on every run
FUZZ = settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@st.composite
def expressions(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 3 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(EDGES))
    kind = draw(st.integers(0, 6))
    sub = expressions(depth + 1)
    if kind <= 1:
        return f"({draw(sub)} {draw(st.sampled_from(BINARY))} {draw(sub)})"
    if kind == 2:
        arity = draw(st.sampled_from([1, 2, 3]))
        name = draw(st.sampled_from(FUNCTIONS[arity]))
        return f"{name}({', '.join(draw(sub) for _ in range(arity))})"
    if kind == 3:
        return f"CAST({draw(sub)} AS {draw(st.sampled_from(CASTS))})"
    if kind == 4:
        return f"{draw(st.sampled_from(UNARY))}{draw(sub)}"
    if kind == 5:
        return f"{draw(sub)} IN ({draw(sub)}, {draw(sub)})"
    unit = draw(st.sampled_from(["DAY", "MONTH", "SECOND", "MICROSECOND", "YEAR"]))
    return f"{draw(sub)} + INTERVAL {draw(sub)} {unit}"


def _only_sql_errors(engine: Engine, script: list[str], query: str) -> None:
    for stmt in split_script(script, "fuzz.sql"):
        error = engine.step(stmt)
        if error is not None:
            assert "internal error" not in error.message, str(error)
    try:
        engine.query(parse_one(query), query)
    except SQLError as e:
        assert "internal error" not in e.message, str(e)


@FUZZ
@given(
    st.sampled_from(COLUMN_TYPES),
    expressions(),
    st.sampled_from(["", "SET sql_mode = '';", "SET time_zone = '+14:00';"]),
    st.sampled_from(["insert", "update", "where", "default", "ignore"]),
)
def test_random_expressions_raise_nothing_but_sql_errors(
    column: str, expression: str, session: str, kind: str
) -> None:
    engine = Engine()
    hostile = {
        "insert": f"INSERT INTO t VALUES (2, {expression});",
        "update": f"UPDATE t SET c = {expression};",
        "where": f"DELETE FROM t WHERE {expression};",
        "default": f"ALTER TABLE t ADD COLUMN e INT DEFAULT ({expression});",
        "ignore": f"INSERT IGNORE INTO t VALUES (1, {expression}) "
        f"ON DUPLICATE KEY UPDATE c = {expression};",
    }[kind]
    script = [
        f"CREATE TABLE t (id INT PRIMARY KEY, c {column});\n",
        "INSERT IGNORE INTO t VALUES (1, 1);\n",
        session + "\n",
        hostile + "\n",
    ]
    _only_sql_errors(engine, script, f"SELECT {expression}, c FROM t WHERE {expression}")


_TOKENS = [
    "SELECT", "INSERT", "INTO", "t", "VALUES", "(", ")", ",", ";", "'", '"', "`", "--", "/*",
    "*/", "#", "1", "1e999", "NULL", "WHERE", "=", "OR", "AND", "CREATE", "TABLE", "INT",
    "PRIMARY", "KEY", "DELETE", "FROM", "UPDATE", "SET", "\\", "\x00", "\ufeff", "é", "😀",
    "\udce9", "\n", " ", "/*!", "/*T![clustered_index]", "x'", "b'", "@", "@@", ":=",
]  # fmt: skip


@FUZZ
@given(st.lists(st.sampled_from(_TOKENS) | st.text(max_size=4), max_size=40))
def test_random_text_raises_nothing_but_sql_errors(tokens: list[str]) -> None:
    text = "CREATE TABLE t (id INT PRIMARY KEY);\n" + " ".join(tokens)
    engine = Engine()
    try:
        _only_sql_errors(engine, text.splitlines(keepends=True), "SELECT * FROM t")
    except SQLError as e:  # a script that cannot be split (an unterminated quote)
        assert e.code == 1064 and "internal error" not in e.message, str(e)
