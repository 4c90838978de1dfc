"""TiDB's names of a column's type, as SHOW, information_schema and TiCDC's protocols write
them: TiDB `pkg/parser/types/etc.go` (`TypeToStr`) and `pkg/parser/types/field_type.go`
(`CompactStr`, `InfoSchemaStr`: `GetTypeDesc`)."""

from __future__ import annotations

from ticdc_sim.model.mysql import INTEGER_TYPES, TIME_TYPES, TiDBFlag
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.table import ColumnInfo

TYPE_NAMES: dict[M, str] = {
    M.BIT: "bit",
    M.TINY: "tinyint",
    M.SHORT: "smallint",
    M.INT24: "mediumint",
    M.LONG: "int",
    M.LONGLONG: "bigint",
    M.FLOAT: "float",
    M.DOUBLE: "double",
    M.NEWDECIMAL: "decimal",
    M.DATE: "date",
    M.NEWDATE: "date",
    M.DATETIME: "datetime",
    M.TIMESTAMP: "timestamp",
    M.DURATION: "time",
    M.YEAR: "year",
    M.VARCHAR: "varchar",
    M.VAR_STRING: "var_string",
    M.STRING: "char",
    M.TINY_BLOB: "tinytext",
    M.BLOB: "text",
    M.MEDIUM_BLOB: "mediumtext",
    M.LONG_BLOB: "longtext",
    M.ENUM: "enum",
    M.SET: "set",
    M.JSON: "json",
    M.TIDB_VECTOR_FLOAT32: "vector",
    M.GEOMETRY: "geometry",
    M.NULL: "null",
}
# `TypeToStr` with the binary charset
_BINARY_NAMES = {
    "tinytext": "tinyblob",
    "text": "blob",
    "mediumtext": "mediumblob",
    "longtext": "longblob",
    "char": "binary",
    "varchar": "varbinary",
}


def type_to_str(col: ColumnInfo) -> str:
    name = TYPE_NAMES.get(col.tp, "unknown")
    return _BINARY_NAMES.get(name, name) if col.is_binary_charset else name


def sign_suffix(col: ColumnInfo) -> str:
    suffix = ""
    if col.flag & TiDBFlag.UNSIGNED and col.tp not in (M.BIT, M.YEAR):
        suffix += " unsigned"
    if col.flag & TiDBFlag.ZEROFILL and col.tp != M.YEAR:
        suffix += " zerofill"
    return suffix


def full_type(col: ColumnInfo) -> str:
    """`ColumnInfo.GetTypeDesc()`: canal-json `mysqlType` with content-compatible."""
    name = type_to_str(col)
    tp = col.tp
    if tp in (M.ENUM, M.SET):
        members = ",".join(
            "'" + e.replace("\\", "\\\\").replace("'", "''") + "'" for e in col.elems
        )
        body = f"{name}({members})"
    elif tp in TIME_TYPES:
        body = f"{name}({col.decimal})" if col.decimal > 0 else name
    elif tp in (M.FLOAT, M.DOUBLE):
        body = f"{name}({col.flen},{col.decimal})" if col.decimal >= 0 else name
    elif tp == M.NEWDECIMAL:
        body = f"{name}({col.flen},{col.decimal})"
    elif tp in INTEGER_TYPES or tp in (M.BIT, M.YEAR, M.VARCHAR, M.STRING, M.VAR_STRING):
        body = f"{name}({col.flen})"
    elif tp == M.TIDB_VECTOR_FLOAT32:
        body = f"{name}({col.flen})" if col.flen > 0 else name
    else:
        body = name
    return body + sign_suffix(col)
