"""Random schemas and statements for the differential tests against MariaDB (hypothesis).

A table has a primary key, mixed column types (each with a chance of a literal DEFAULT and of
NULL), and up to three secondary indexes, unique or not, of up to three columns, which are
often NULL (MySQL sorts NULL first in an index); predicates are aimed at every access path:
equality on a key's first columns, then IN or a range on the next, or an OR of point
lookups, on the primary key and on each index. Statements are INSERT (multi-row, column lists,
`VALUES ()`, IGNORE, ON DUPLICATE KEY UPDATE), REPLACE, UPDATE and DELETE with equality,
range, IN, temporal and NULL predicates, ORDER BY ... LIMIT, inside transactions or not.
Values come in every literal form MySQL reads (hex, bit, introducers, N'', escapes, strings
spanning lines, numbers for temporal columns).

Where MariaDB and TiDB differ on purpose, the generator stays clear of the difference, and
says so here: no excess fractional-second digits (MariaDB truncates, TiDB rounds), no YEAR
strings of three or four characters with a leading zero (TiDB's AdjustYear takes '0018' as
2018, MariaDB refuses it), no trailing spaces in keys (PAD SPACE details), no NULL into a
TIMESTAMP NOT NULL (MariaDB stores the current time), ORDER BY always ends in the primary
key (ties are broken by scan order, which differs), ENUM and SET compared with one literal
at a time (mixed text and numbers go through MySQL's type aggregation), control characters
only in TEXT columns, which are never range-compared or sorted (PAD SPACE: MariaDB pads
with spaces, which sort above them; TiDB strips trailing spaces and compares).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

Draw = Any  # hypothesis' `data.draw`


@dataclass(frozen=True)
class ColumnType:
    """One column type of the menu: its SQL and how to draw a literal of it."""

    name: str
    sql: str
    kind: str  # int, uint, decimal, double, string, binary, date, datetime, time, year, enum, set, bit
    size: int = 0  # length, fsp, bit width or decimal scale
    precision: int = 0  # DECIMAL precision


TYPES = [
    ColumnType("int", "INT", "int"),
    ColumnType("bigint", "BIGINT", "int", 64),
    ColumnType("tinyint_u", "TINYINT UNSIGNED", "uint", 8),
    ColumnType("bigint_u", "BIGINT UNSIGNED", "uint", 64),
    ColumnType("dec_10_2", "DECIMAL(10,2)", "decimal", 2, 10),
    ColumnType("dec_40_1", "DECIMAL(40,1)", "decimal", 1, 40),
    ColumnType("dec_17_0", "DECIMAL(17,0)", "decimal", 0, 17),
    ColumnType("double", "DOUBLE", "double"),
    ColumnType("varchar", "VARCHAR(12)", "string", 12),
    ColumnType("char", "CHAR(4)", "string", 4),
    ColumnType("text", "TEXT", "string", 40),
    ColumnType("varbinary", "VARBINARY(6)", "binary", 6),
    ColumnType("blob", "BLOB", "binary", 20),
    ColumnType("date", "DATE", "date"),
    ColumnType("datetime", "DATETIME", "datetime", 0),
    ColumnType("datetime3", "DATETIME(3)", "datetime", 3),
    ColumnType("timestamp2", "TIMESTAMP(2) NULL", "timestamp", 2),
    ColumnType("time", "TIME", "time", 0),
    ColumnType("time1", "TIME(1)", "time", 1),
    ColumnType("year", "YEAR", "year"),
    ColumnType("enum", "ENUM('x','a','mm','b')", "enum"),
    ColumnType("set", "SET('p','q','r')", "set"),
    ColumnType("bit", "BIT(8)", "bit", 8),
]
KEY_TYPES = [
    t
    for t in TYPES
    if t.kind in ("int", "uint", "decimal", "string", "date", "datetime") and t.sql != "TEXT"
]
ENUM_MEMBERS = ["x", "a", "mm", "b"]
SET_MEMBERS = ["p", "q", "r"]


@dataclass
class Table:
    name: str
    columns: list[tuple[str, ColumnType]]
    pk: list[str]
    # secondary indexes: (name, unique, columns); their columns are often NULL
    keys: list[tuple[str, bool, list[str]]] = field(default_factory=list)

    def create(self, defaults: dict[str, str]) -> str:
        cols = []
        for name, tp in self.columns:
            default = f" DEFAULT {defaults[name]}" if name in defaults else ""
            not_null = " NOT NULL" if name in self.pk else ""
            cols.append(f"`{name}` {tp.sql}{not_null}{default}")
        keys = [f"PRIMARY KEY ({', '.join(f'`{c}`' for c in self.pk)})"]
        for name, unique, columns in self.keys:
            kind = "UNIQUE KEY" if unique else "KEY"
            keys.append(f"{kind} `{name}` ({', '.join(f'`{c}`' for c in columns)})")
        return f"CREATE TABLE `{self.name}` ({', '.join(cols + keys)})"

    def type_of(self, name: str) -> ColumnType:
        return next(tp for n, tp in self.columns if n == name)

    @property
    def unique(self) -> list[str]:
        """Columns of the unique secondary indexes."""
        found = [c for _, unique, columns in self.keys if unique for c in columns]
        return list(dict.fromkeys(found))

    @property
    def indexed(self) -> set[str]:
        """Columns of secondary indexes (not of the primary key): NULL is drawn often."""
        return {c for _, _, columns in self.keys for c in columns} - set(self.pk)

    def null_chance(self, name: str) -> int:
        """One in how many literals of the column is NULL (0: never)."""
        if name in self.pk:
            return 0
        return 3 if name in self.indexed else 10


# -- literals ----------------------------------------------------------------------------------

_CHARS = list("abcXYZ019 _%'\"\\,;()é中😀")
_TEXT = st.text(alphabet=st.sampled_from(_CHARS), max_size=8)
# Control characters sort below the space that PAD SPACE pads with in MariaDB, while TiDB
# strips trailing spaces and compares: TEXT columns alone get them, and are never compared
# by range or sorted.
_LINES = st.text(alphabet=st.sampled_from([*_CHARS, "\n", "\t"]), max_size=8)
UNORDERED = ("text",)


def quote(text: str) -> str:
    """A single-quoted SQL string of `text`, escaped the ways MySQL reads."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def _string_literal(draw: Draw, size: int, lines: bool = False) -> str:
    text = draw((_LINES if lines else _TEXT).map(lambda t: t.rstrip(" ")))[:size]
    form = draw(st.sampled_from(["plain", "plain", "double", "utf8mb4", "national"]))
    if form == "double":  # double-quoted, a doubled " and escaped '
        return '"' + text.replace("\\", "\\\\").replace('"', '""') + '"'
    if form == "national" and not text.isascii():
        form = "plain"  # N'' is utf8mb3 in MariaDB: no 4-byte characters
    prefix = {"plain": "", "utf8mb4": "_utf8mb4", "national": "N"}[form]
    return prefix + quote(text)


def _binary_literal(draw: Draw, size: int) -> str:
    data = draw(st.binary(max_size=size))
    form = draw(st.sampled_from(["hex", "0x", "binary", "bits"]))
    if form == "0x" and data:
        return "0x" + data.hex()
    if form == "binary" and all(32 <= b < 127 and b not in b"'\\" for b in data):
        return "_binary " + quote(data.decode())
    if form == "bits" and data:
        return "b'" + "".join(f"{b:08b}" for b in data) + "'"
    return "X'" + data.hex() + "'"


def _number(draw: Draw, low: int, high: int) -> str:
    value = draw(st.integers(low, high))
    return str(value) if draw(st.booleans()) else quote(str(value))


def _decimal_literal(draw: Draw, tp: ColumnType) -> str:
    whole_digits = tp.precision - tp.size
    whole = draw(st.integers(0, 10**whole_digits - 1))
    frac = draw(st.integers(0, 10 ** (tp.size + 1) - 1)) if tp.size else 0
    text = f"{whole}.{frac:0{tp.size + 1}d}" if tp.size else str(whole)
    text = ("-" if draw(st.booleans()) else "") + text
    return text if draw(st.booleans()) else quote(text)


def _fraction(draw: Draw, fsp: int) -> str:
    digits = draw(st.integers(0, fsp))  # never more digits than the column keeps
    return "." + "".join(str(draw(st.integers(0, 9))) for _ in range(digits)) if digits else ""


def _date_parts(draw: Draw, low_year: int = 1000, high_year: int = 9999) -> tuple[int, int, int]:
    return (
        draw(st.integers(low_year, high_year)),
        draw(st.integers(1, 12)),
        draw(st.integers(1, 28)),
    )


def _datetime_literal(draw: Draw, fsp: int, low_year: int = 1000, high_year: int = 9999) -> str:
    year, month, day = _date_parts(draw, low_year, high_year)
    hour, minute, second = (
        draw(st.integers(0, 23)),
        draw(st.integers(0, 59)),
        draw(st.integers(0, 59)),
    )
    form = draw(st.sampled_from(["iso", "loose", "number"]))
    if form == "number" and fsp == 0:
        return f"{year:04d}{month:02d}{day:02d}{hour:02d}{minute:02d}{second:02d}"
    if form == "loose":
        return quote(f"{year}-{month}-{day} {hour}:{minute}:{second}{_fraction(draw, fsp)}")
    return quote(
        f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}{_fraction(draw, fsp)}"
    )


def _time_literal(draw: Draw, fsp: int) -> str:
    hours = draw(st.integers(-838, 838))
    minute, second = draw(st.integers(0, 59)), draw(st.integers(0, 59))
    sign = "-" if hours < 0 else ""
    form = draw(st.sampled_from(["clock", "short", "number"]))
    if form == "number" and fsp == 0:
        return f"{sign}{abs(hours)}{minute:02d}{second:02d}"
    if form == "short":
        return quote(f"{sign}{abs(hours)}:{minute:02d}")
    return quote(f"{sign}{abs(hours)}:{minute:02d}:{second:02d}{_fraction(draw, fsp)}")


def literal(draw: Draw, tp: ColumnType, nullable: bool | int = True) -> str:
    """A literal of `tp` in one of the forms MySQL reads for it (or NULL, one time in
    `nullable`, or ten when it is True)."""
    chance = 10 if nullable is True else int(nullable)
    if chance and draw(st.integers(0, chance - 1)) == 0:
        return "NULL"
    kind = tp.kind
    if kind == "int":
        bits = tp.size or 32
        return _number(draw, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if kind == "uint":
        return _number(draw, 0, 2**tp.size - 1)
    if kind == "decimal":
        return _decimal_literal(draw, tp)
    if kind == "double":
        value = draw(st.floats(allow_nan=False, allow_infinity=False, width=64))
        return repr(value) if value != 0 else "0"
    if kind == "string":
        return _string_literal(draw, tp.size, lines=tp.name in UNORDERED)
    if kind == "binary":
        return _binary_literal(draw, tp.size)
    if kind == "date":
        year, month, day = _date_parts(draw)
        if draw(st.booleans()):
            return f"{year:04d}{month:02d}{day:02d}"
        return quote(f"{year:04d}-{month:02d}-{day:02d}")
    if kind == "datetime":
        return _datetime_literal(draw, tp.size)
    if kind == "timestamp":
        return _datetime_literal(draw, tp.size, 1971, 2037)
    if kind == "time":
        return _time_literal(draw, tp.size)
    if kind == "year":
        value = draw(st.sampled_from([0, 1, 69, 70, 99, 1901, 1999, 2024, 2155]))
        return str(value) if draw(st.booleans()) or value < 100 else quote(str(value))
    if kind == "enum":
        if draw(st.booleans()):
            return str(draw(st.integers(1, len(ENUM_MEMBERS))))
        return quote(draw(st.sampled_from(ENUM_MEMBERS)))
    if kind == "set":
        picked = draw(st.lists(st.sampled_from(SET_MEMBERS), max_size=3))
        return quote(",".join(picked))
    if kind == "bit":
        value = draw(st.integers(0, 255))
        return f"b'{value:b}'" if draw(st.booleans()) else str(value)
    raise AssertionError(kind)


# -- schema and statements ---------------------------------------------------------------------


@st.composite
def tables(draw: Draw, name: str) -> tuple[Table, str]:
    """A table and its CREATE TABLE statement: a primary key, and up to three secondary
    indexes of one to three columns, unique or not."""
    count = draw(st.integers(2, 6))
    chosen = draw(st.lists(st.sampled_from(TYPES), min_size=count, max_size=count))
    columns = [("id", draw(st.sampled_from(KEY_TYPES)))]
    columns += [(f"c{i}_{tp.name}", tp) for i, tp in enumerate(chosen)]
    pk = ["id"]
    if draw(st.integers(0, 3)) == 0:  # a composite (clustered) key
        second = draw(st.sampled_from([c for c, tp in columns[1:] if tp in KEY_TYPES] or ["id"]))
        pk = ["id"] if second == "id" else ["id", second]
    indexable = [c for c, tp in columns if tp in KEY_TYPES]
    keys = []
    for number in range(draw(st.integers(0, 3))):
        unique = draw(st.booleans())
        parts = draw(st.lists(st.sampled_from(indexable), min_size=1, max_size=3, unique=True))
        keys.append((f"{'uk' if unique else 'k'}{number}", unique, parts))
    table = Table(name, columns, pk, keys)
    defaults = {}
    for name, tp in columns[1:]:  # TiDB refuses defaults on TEXT and BLOB (1101)
        if name not in pk and tp.sql not in ("TEXT", "BLOB") and draw(st.integers(0, 2)) == 0:
            defaults[name] = literal(draw, tp)
    return table, table.create(defaults)


def _predicate(draw: Draw, table: Table) -> str:
    name, tp = draw(st.sampled_from(table.columns))
    if tp.name in UNORDERED:
        forms = ["eq", "in", "null"]
    elif tp.kind in ("enum", "set"):  # one literal: a member's text or number, never both
        forms = ["eq", "null"]
    else:
        forms = ["eq", "range", "in", "null", "cmp"]
    form = draw(st.sampled_from(forms))
    col = f"`{name}`"
    if form == "null":
        return f"{col} IS {'NOT ' if draw(st.booleans()) else ''}NULL"
    if form == "range":
        low, high = literal(draw, tp, False), literal(draw, tp, False)
        return f"{col} BETWEEN {low} AND {high}"
    if form == "in":
        options = [literal(draw, tp, False) for _ in range(draw(st.integers(1, 3)))]
        return f"{col} IN ({', '.join(options)})"
    if form == "cmp":
        return f"{col} {draw(st.sampled_from(['<', '<=', '>', '>=', '<>']))} {literal(draw, tp, False)}"
    return f"{col} = {literal(draw, tp, False)}"


def _access_predicate(draw: Draw, table: Table) -> str:
    """A condition aimed at one access path of the primary key or a secondary index:
    equality on its first columns, then IN, a range (one or two bounds) or nothing on the
    next; or an OR of equalities on all its columns (a set of point lookups)."""
    columns = draw(st.sampled_from([table.pk, *(cols for _, _, cols in table.keys)]))

    def value(name: str) -> str:
        return literal(draw, table.type_of(name), False)

    if draw(st.integers(0, 4)) == 0:
        points = [
            "(" + " AND ".join(f"`{c}` = {value(c)}" for c in columns) + ")"
            for _ in range(draw(st.integers(1, 4)))
        ]
        return "(" + " OR ".join(points) + ")"
    pinned = draw(st.integers(0, len(columns)))
    terms = [f"`{c}` = {value(c)}" for c in columns[:pinned]]
    if pinned < len(columns):
        name = columns[pinned]
        col = f"`{name}`"
        form = draw(st.sampled_from(["in", "between", "low", "high", "both", "none"]))
        if form == "in":
            options = ", ".join(value(name) for _ in range(draw(st.integers(1, 4))))
            terms.append(f"{col} IN ({options})")
        elif form == "between":
            terms.append(f"{col} BETWEEN {value(name)} AND {value(name)}")
        elif form != "none":
            if form in ("low", "both"):
                terms.append(f"{col} {draw(st.sampled_from(['>', '>=']))} {value(name)}")
            if form in ("high", "both"):
                terms.append(f"{col} {draw(st.sampled_from(['<', '<=']))} {value(name)}")
    return " AND ".join(terms) or _predicate(draw, table)


def _where(draw: Draw, table: Table) -> str:
    if draw(st.booleans()):
        terms = [_access_predicate(draw, table)]
        if draw(st.integers(0, 2)) == 0:
            terms.append(_predicate(draw, table))
        return f" WHERE {' AND '.join(terms)}"
    terms = [_predicate(draw, table) for _ in range(draw(st.integers(1, 2)))]
    return f" WHERE {draw(st.sampled_from([' AND ', ' OR '])).join(terms)}"


def _order_limit(draw: Draw, table: Table) -> str:
    if not draw(st.booleans()):
        return ""
    name, _ = draw(st.sampled_from([c for c in table.columns if c[1].name not in UNORDERED]))
    desc = " DESC" if draw(st.booleans()) else ""
    keys = [f"`{name}`{desc}"] + [f"`{k}`" for k in table.pk if k != name]  # no ties
    return f" ORDER BY {', '.join(keys)} LIMIT {draw(st.integers(0, 3))}"


def _row(draw: Draw, table: Table, columns: list[str]) -> str:
    return (
        "("
        + ", ".join(literal(draw, table.type_of(c), table.null_chance(c)) for c in columns)
        + ")"
    )


def _assignments(draw: Draw, table: Table) -> str:
    names = draw(
        st.lists(
            st.sampled_from([c for c, _ in table.columns]), min_size=1, max_size=2, unique=True
        )
    )
    parts = []
    for name in names:
        tp = table.type_of(name)
        if tp.kind in ("int", "uint", "decimal") and draw(st.booleans()):
            parts.append(f"`{name}` = `{name}` + {draw(st.integers(-3, 3))}")
        else:
            parts.append(f"`{name}` = {literal(draw, tp, table.null_chance(name))}")
    return ", ".join(parts)


def statement(draw: Draw, table: Table) -> str:
    """One DML statement on `table`."""
    kind = draw(
        st.sampled_from(
            ["insert", "insert", "insert", "update", "update", "delete", "replace", "upsert"]
        )
    )
    names = [c for c, _ in table.columns]
    if kind in ("insert", "replace", "upsert"):
        listed = names
        if draw(st.booleans()):
            listed = [c for c in names if c in table.pk or draw(st.booleans())]
        rows = [_row(draw, table, listed) for _ in range(draw(st.integers(1, 4)))]
        verb = (
            "REPLACE"
            if kind == "replace"
            else "INSERT" + (" IGNORE" if draw(st.integers(0, 4)) == 0 else "")
        )
        head = f"{verb} INTO `{table.name}` ({', '.join(f'`{c}`' for c in listed)}) VALUES "
        tail = f" ON DUPLICATE KEY UPDATE {_assignments(draw, table)}" if kind == "upsert" else ""
        return head + ", ".join(rows) + tail
    if kind == "update":
        return f"UPDATE `{table.name}` SET {_assignments(draw, table)}{_where(draw, table)}{_order_limit(draw, table)}"
    return f"DELETE FROM `{table.name}`{_where(draw, table)}{_order_limit(draw, table)}"


def transaction(draw: Draw, table: Table) -> list[str]:
    """Statements, autocommitted or inside BEGIN ... COMMIT/ROLLBACK."""
    body = [statement(draw, table) for _ in range(draw(st.integers(1, 4)))]
    shape = draw(st.sampled_from(["auto", "auto", "commit", "rollback"]))
    if shape == "auto":
        return body
    return ["BEGIN", *body, "COMMIT" if shape == "commit" else "ROLLBACK"]
