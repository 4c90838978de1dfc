"""TiDB's `information_schema`, read from the catalog: the tables applications, ORMs and
migration tools query (SCHEMATA, TABLES, COLUMNS, STATISTICS, KEY_COLUMN_USAGE,
TABLE_CONSTRAINTS, REFERENTIAL_CONSTRAINTS, CHECK_CONSTRAINTS, PARTITIONS).

Each table is declared as TiDB declares it (`pkg/infoschema/tables.go`, the `tableXxxCols`
lists: names, types and order), and made for the statement that reads it: the declarations
are applied once to a catalog of their own, and a query gets a fresh store holding the rows
of the catalog as it is now, so WHERE, ORDER BY, LIMIT and every expression run as on any
table. Values are TiDB's: TIDB_PK_TYPE, TIDB_TABLE_ID, AUTO_INCREMENT (the next id, as SHOW
CREATE TABLE shows it), TABLE_ROWS (the rows stored now; TiDB's is a statistics estimate),
column types and keys as SHOW COLUMNS prints them (show.py). Writing to one is TiDB's error
1044 (`Engine.table_data`). CHECK constraints are not kept by the catalog, so
CHECK_CONSTRAINTS is empty.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql import show
from ticdc_sim.generator.sql.ddl import Catalog
from ticdc_sim.generator.sql.script import parse_one
from ticdc_sim.generator.sql.store import TableData
from ticdc_sim.model.mysql import STRING_TYPES, MySQLType, TiDBFlag
from ticdc_sim.model.table import ColumnInfo, TableInfo
from ticdc_sim.model.tso import physical_ms
from ticdc_sim.model.type_names import type_to_str

if TYPE_CHECKING:
    from ticdc_sim.generator.sql.engine import Engine

NAME = "information_schema"
Row = tuple[Any, ...]
_NAME, _TEXT, _NUM = "varchar(64)", "varchar(512)", "bigint(21) unsigned"

# pkg/infoschema/tables.go: each table's columns, in order
DECLARED: dict[str, list[tuple[str, str]]] = {
    "SCHEMATA": [
        ("CATALOG_NAME", _TEXT), ("SCHEMA_NAME", _NAME), ("DEFAULT_CHARACTER_SET_NAME", _NAME),
        ("DEFAULT_COLLATION_NAME", "varchar(32)"), ("SQL_PATH", _TEXT),
        ("TIDB_PLACEMENT_POLICY_NAME", _NAME),
    ],
    "TABLES": [
        ("TABLE_CATALOG", _TEXT), ("TABLE_SCHEMA", _NAME), ("TABLE_NAME", _NAME),
        ("TABLE_TYPE", _NAME), ("ENGINE", _NAME), ("VERSION", _NUM), ("ROW_FORMAT", "varchar(10)"),
        ("TABLE_ROWS", _NUM), ("AVG_ROW_LENGTH", _NUM), ("DATA_LENGTH", _NUM),
        ("MAX_DATA_LENGTH", _NUM), ("INDEX_LENGTH", _NUM), ("DATA_FREE", _NUM),
        ("AUTO_INCREMENT", _NUM), ("CREATE_TIME", "datetime"), ("UPDATE_TIME", "datetime"),
        ("CHECK_TIME", "datetime"), ("TABLE_COLLATION", "varchar(32)"), ("CHECKSUM", _NUM),
        ("CREATE_OPTIONS", "varchar(255)"), ("TABLE_COMMENT", "varchar(2048)"),
        ("TIDB_TABLE_ID", _NUM), ("TIDB_ROW_ID_SHARDING_INFO", "varchar(255)"),
        ("TIDB_PK_TYPE", _NAME), ("TIDB_PLACEMENT_POLICY_NAME", _NAME),
    ],
    "COLUMNS": [
        ("TABLE_CATALOG", _TEXT), ("TABLE_SCHEMA", _NAME), ("TABLE_NAME", _NAME),
        ("COLUMN_NAME", _NAME), ("ORDINAL_POSITION", _NUM), ("COLUMN_DEFAULT", "text"),
        ("IS_NULLABLE", "varchar(3)"), ("DATA_TYPE", _NAME), ("CHARACTER_MAXIMUM_LENGTH", _NUM),
        ("CHARACTER_OCTET_LENGTH", _NUM), ("NUMERIC_PRECISION", _NUM), ("NUMERIC_SCALE", _NUM),
        ("DATETIME_PRECISION", _NUM), ("CHARACTER_SET_NAME", "varchar(32)"),
        ("COLLATION_NAME", "varchar(32)"), ("COLUMN_TYPE", "text"), ("COLUMN_KEY", "varchar(3)"),
        ("EXTRA", "varchar(45)"), ("PRIVILEGES", "varchar(80)"),
        ("COLUMN_COMMENT", "varchar(1024)"),
        ("GENERATION_EXPRESSION", "text"), ("SRS_ID", "int(10) unsigned"),
    ],
    "STATISTICS": [
        ("TABLE_CATALOG", _TEXT), ("TABLE_SCHEMA", _NAME), ("TABLE_NAME", _NAME),
        ("NON_UNIQUE", "varchar(1)"), ("INDEX_SCHEMA", _NAME), ("INDEX_NAME", _NAME),
        ("SEQ_IN_INDEX", _NUM), ("COLUMN_NAME", "varchar(21)"), ("COLLATION", "varchar(1)"),
        ("CARDINALITY", _NUM), ("SUB_PART", _NUM), ("PACKED", "varchar(10)"),
        ("NULLABLE", "varchar(3)"), ("INDEX_TYPE", "varchar(16)"), ("COMMENT", "varchar(16)"),
        ("INDEX_COMMENT", "varchar(1024)"), ("IS_VISIBLE", "varchar(3)"), ("Expression", _TEXT),
    ],
    "KEY_COLUMN_USAGE": [
        ("CONSTRAINT_CATALOG", _TEXT), ("CONSTRAINT_SCHEMA", _NAME), ("CONSTRAINT_NAME", _NAME),
        ("TABLE_CATALOG", _TEXT), ("TABLE_SCHEMA", _NAME), ("TABLE_NAME", _NAME),
        ("COLUMN_NAME", _NAME), ("ORDINAL_POSITION", "bigint(10)"),
        ("POSITION_IN_UNIQUE_CONSTRAINT", "bigint(10)"), ("REFERENCED_TABLE_SCHEMA", _NAME),
        ("REFERENCED_TABLE_NAME", _NAME), ("REFERENCED_COLUMN_NAME", _NAME),
    ],
    "TABLE_CONSTRAINTS": [
        ("CONSTRAINT_CATALOG", _TEXT), ("CONSTRAINT_SCHEMA", _NAME), ("CONSTRAINT_NAME", _NAME),
        ("TABLE_SCHEMA", _NAME), ("TABLE_NAME", _NAME), ("CONSTRAINT_TYPE", _NAME),
    ],
    "REFERENTIAL_CONSTRAINTS": [
        ("CONSTRAINT_CATALOG", _TEXT), ("CONSTRAINT_SCHEMA", _NAME), ("CONSTRAINT_NAME", _NAME),
        ("UNIQUE_CONSTRAINT_CATALOG", _TEXT), ("UNIQUE_CONSTRAINT_SCHEMA", _NAME),
        ("UNIQUE_CONSTRAINT_NAME", _NAME), ("MATCH_OPTION", _NAME), ("UPDATE_RULE", _NAME),
        ("DELETE_RULE", _NAME), ("TABLE_NAME", _NAME), ("REFERENCED_TABLE_NAME", _NAME),
    ],
    "CHECK_CONSTRAINTS": [
        ("CONSTRAINT_CATALOG", _TEXT), ("CONSTRAINT_SCHEMA", _NAME), ("CONSTRAINT_NAME", _NAME),
        ("CHECK_CLAUSE", "longtext"),
    ],
    "PARTITIONS": [
        ("TABLE_CATALOG", _TEXT), ("TABLE_SCHEMA", _NAME), ("TABLE_NAME", _NAME),
        ("PARTITION_NAME", _NAME), ("SUBPARTITION_NAME", _NAME),
        ("PARTITION_ORDINAL_POSITION", _NUM), ("SUBPARTITION_ORDINAL_POSITION", _NUM),
        ("PARTITION_METHOD", "varchar(18)"), ("SUBPARTITION_METHOD", "varchar(12)"),
        ("PARTITION_EXPRESSION", "longtext"), ("SUBPARTITION_EXPRESSION", "longtext"),
        ("PARTITION_DESCRIPTION", "longtext"), ("TABLE_ROWS", _NUM), ("AVG_ROW_LENGTH", _NUM),
        ("DATA_LENGTH", _NUM), ("MAX_DATA_LENGTH", _NUM), ("INDEX_LENGTH", _NUM),
        ("DATA_FREE", _NUM), ("CREATE_TIME", "datetime"), ("UPDATE_TIME", "datetime"),
        ("CHECK_TIME", "datetime"), ("CHECKSUM", _NUM), ("PARTITION_COMMENT", "varchar(80)"),
        ("NODEGROUP", "varchar(12)"), ("TABLESPACE_NAME", _NAME), ("TIDB_PARTITION_ID", _NUM),
        ("TIDB_PLACEMENT_POLICY_NAME", _NAME),
    ],
}  # fmt: skip


def is_name(schema: str | None) -> bool:
    return schema is not None and schema.lower() == NAME


@functools.cache
def _declared() -> dict[str, TableInfo]:
    """The tables' definitions, by upper-case name, from a catalog of their own."""
    catalog = Catalog()
    list(catalog.apply(parse_one(f"CREATE DATABASE {NAME}"), ""))
    for name, columns in DECLARED.items():
        body = ", ".join(f"`{c}` {t}" for c, t in columns)
        list(catalog.apply(parse_one(f"CREATE TABLE {NAME}.`{name}` ({body})"), ""))
    return {name: catalog.table(NAME, name) for name in DECLARED}


def table(engine: Engine, name: str) -> TableData:
    """The table `name` of information_schema, holding the catalog's rows as they are now."""
    info = _declared().get(name.upper())
    if info is None:
        raise SQLError(f"Table '{NAME}.{name}' doesn't exist", code=1146)
    data = TableData(info, lambda: engine.zone, lambda: engine.sql_mode)
    rows = [_stored(data, row) for row in _ROWS[info.name](engine)]
    data.put_new(list(range(1, len(rows) + 1)), rows)
    return data


def _stored(data: TableData, values: Row) -> Row:
    return tuple(convert(v) for convert, v in zip(data.input_converters, values, strict=True))


def _tables(engine: Engine) -> Iterator[TableInfo]:
    """Every user table and view, schema by schema, in name order."""
    for schema in sorted(engine.catalog.schemas.values(), key=lambda s: s.name):
        for info in sorted(schema.tables.values(), key=lambda t: t.name):
            if info.sequence is None:
                yield info


def _schemata(engine: Engine) -> Iterator[Row]:
    yield ("def", NAME, "utf8mb4", "utf8mb4_bin", None, None)
    for schema in sorted(engine.catalog.schemas.values(), key=lambda s: s.name):
        yield ("def", schema.name, schema.charset, schema.collation, None, None)


def _row_count(engine: Engine, info: TableInfo) -> int:
    data = engine.upstream.tables.get(info.id)
    return len(data.rows) if data is not None else 0


def _pk_type(info: TableInfo) -> str:
    return "CLUSTERED" if info.pk_is_handle or info.is_common_handle else "NONCLUSTERED"


def _tables_rows(engine: Engine) -> Iterator[Row]:
    for info in _tables(engine):
        created = _time(info.update_ts)
        if info.is_view:
            yield ("def", info.schema, info.name, "VIEW", None, None, None, None, None, None,
                   None, None, None, None, created, None, None, None, None, None, "VIEW",
                   info.id, None, None, None)  # fmt: skip
            continue
        auto = show._next_id(engine, info) if _has_auto_id(info) else None
        sharding = "NOT_SHARDED(PK_IS_HANDLE)" if info.pk_is_handle else "NOT_SHARDED"
        yield ("def", info.schema, info.name, "BASE TABLE", "InnoDB", 10, "Compact",
               _row_count(engine, info), 0, 0, 0, 0, 0, auto, created, None, None,
               info.collation, None, "partitioned" if info.partition else "", info.comment,
               info.id, sharding, _pk_type(info), None)  # fmt: skip


def _has_auto_id(info: TableInfo) -> bool:
    return any(c.auto_increment or c.auto_random_bits for c in info.columns)


def _columns_rows(engine: Engine) -> Iterator[Row]:
    for info in _tables(engine):
        position = 0
        for col in info.columns:
            if col.hidden:
                continue
            position += 1
            _, column_type, nullable, key, default, extra = show.column_row(col, engine, False)
            strings = col.tp in STRING_TYPES
            yield ("def", info.schema, info.name, col.name, position, default, nullable,
                   _data_type(col), col.flen if strings else None,
                   _octets(col) if strings else None, _precision(col), _scale(col),
                   _datetime_precision(col), col.charset if strings else None,
                   col.collation if strings else None, column_type, key, extra,
                   "select,insert,update,references", col.comment,
                   col.generated_expr or "", None)  # fmt: skip


def _data_type(col: ColumnInfo) -> str:
    return type_to_str(col).split("(")[0].lower()


def _octets(col: ColumnInfo) -> int:
    per_char = {"utf8mb4": 4, "utf8": 3, "utf8mb3": 3, "binary": 1, "latin1": 1, "ascii": 1}
    return col.flen * per_char.get(col.charset, 1)


_INTEGERS = {MySQLType.TINY: 3, MySQLType.SHORT: 5, MySQLType.INT24: 7, MySQLType.LONG: 10,
             MySQLType.LONGLONG: 19}  # fmt: skip


def _precision(col: ColumnInfo) -> int | None:
    if col.tp in _INTEGERS:
        unsigned = bool(col.flag & TiDBFlag.UNSIGNED)
        return _INTEGERS[col.tp] + (1 if unsigned and col.tp == MySQLType.LONGLONG else 0)
    if col.tp in (MySQLType.NEWDECIMAL, MySQLType.FLOAT, MySQLType.DOUBLE):
        return col.flen if col.flen > 0 else None
    return None


def _scale(col: ColumnInfo) -> int | None:
    if col.tp in _INTEGERS:
        return 0
    if col.tp in (MySQLType.NEWDECIMAL, MySQLType.FLOAT, MySQLType.DOUBLE):
        return col.decimal if col.decimal >= 0 else None
    return None


def _datetime_precision(col: ColumnInfo) -> int | None:
    if col.tp in (MySQLType.DATETIME, MySQLType.TIMESTAMP, MySQLType.DURATION):
        return max(col.decimal, 0)
    return None


def _statistics_rows(engine: Engine) -> Iterator[Row]:
    for info in _tables(engine):
        if info.is_view:
            continue
        for shown in show.index_rows(info):
            # SHOW INDEX's columns after Table, Non_unique first as text, to Expression
            yield ("def", info.schema, info.name, str(shown[1]), info.schema, *shown[2:15])


def _keys(info: TableInfo) -> Iterator[tuple[str, str, list[str]]]:
    """(constraint name, type, columns) of the primary key and each unique index."""
    if info.pk_is_handle and info.pk_handle_column is not None:
        yield "PRIMARY", "PRIMARY KEY", [info.pk_handle_column.name]
    for index in info.indices:
        if index.primary:
            yield "PRIMARY", "PRIMARY KEY", [c.name for c in index.columns]
        elif index.unique:
            yield index.name, "UNIQUE", [c.name for c in index.columns]


def _key_column_usage_rows(engine: Engine) -> Iterator[Row]:
    for info in _tables(engine):
        for name, _, columns in _keys(info):
            for position, column in enumerate(columns, start=1):
                yield ("def", info.schema, name, "def", info.schema, info.name, column,
                       position, None, None, None, None)  # fmt: skip
        for fk in info.foreign_keys:
            pairs = zip(fk.columns, fk.ref_columns, strict=True)
            for position, (column, ref) in enumerate(pairs, start=1):
                yield ("def", info.schema, fk.name, "def", info.schema, info.name, column,
                       position, position, fk.ref_schema, fk.ref_table, ref)  # fmt: skip


def _table_constraints_rows(engine: Engine) -> Iterator[Row]:
    for info in _tables(engine):
        for name, kind, _ in _keys(info):
            yield ("def", info.schema, name, info.schema, info.name, kind)
        for fk in info.foreign_keys:
            yield ("def", info.schema, fk.name, info.schema, info.name, "FOREIGN KEY")


def _referential_constraints_rows(engine: Engine) -> Iterator[Row]:
    for info in _tables(engine):
        for fk in info.foreign_keys:
            referenced = engine.catalog.find_table(fk.ref_schema, fk.ref_table)
            wanted = [c.lower() for c in fk.ref_columns]
            unique = (
                next(
                    (
                        name
                        for name, _, columns in _keys(referenced)
                        if [c.lower() for c in columns] == wanted
                    ),
                    None,
                )
                if referenced is not None
                else None
            )
            yield ("def", info.schema, fk.name, "def", fk.ref_schema, unique, "NONE",
                   fk.on_update or "NO ACTION", fk.on_delete or "NO ACTION", info.name,
                   fk.ref_table)  # fmt: skip


def _none(engine: Engine) -> Iterator[Row]:
    return iter(())


def _partitions_rows(engine: Engine) -> Iterator[Row]:
    for info in _tables(engine):
        if info.is_view:
            continue
        created = _time(info.update_ts)
        partition = info.partition
        if partition is None:
            yield ("def", info.schema, info.name, None, None, None, None, None, None, None,
                   None, None, _row_count(engine, info), 0, 0, 0, 0, 0, created, None, None,
                   None, "", "", None, None, None)  # fmt: skip
            continue
        expression = ",".join(f"`{c}`" for c in partition.columns) or partition.expr
        method = partition.type
        for position, definition in enumerate(partition.definitions, start=1):
            description = ",".join(definition.less_than) or ",".join(
                ",".join(values) for values in definition.in_values
            )
            yield ("def", info.schema, info.name, definition.name, None, position, None,
                   method, None, expression, None, description or None, 0, 0, 0, 0, 0, 0,
                   created, None, None, None, definition.comment, "default", None,
                   definition.id, None)  # fmt: skip


def _time(ts: int) -> str | None:
    """A TSO's physical time, to the second (CREATE_TIME)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(physical_ms(ts) / 1000)) if ts else None


_ROWS: dict[str, Callable[[Engine], Iterator[Row]]] = {
    "SCHEMATA": _schemata,
    "TABLES": _tables_rows,
    "COLUMNS": _columns_rows,
    "STATISTICS": _statistics_rows,
    "KEY_COLUMN_USAGE": _key_column_usage_rows,
    "TABLE_CONSTRAINTS": _table_constraints_rows,
    "REFERENTIAL_CONSTRAINTS": _referential_constraints_rows,
    "CHECK_CONSTRAINTS": _none,
    "PARTITIONS": _partitions_rows,
}
