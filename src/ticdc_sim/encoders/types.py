"""Type names and codes the encoders write: canal-json's short type name, Java SQL types and
DDL event types (TiDB's own type names are `model/type_names.py`).

Tables from tiflow `pkg/sink/codec/internal/java.go` (`MySQLType2JavaType`),
`pkg/sink/codec/canal/canal_entry.go` (unsigned promotion, DDL event types) and
`pkg/sink/codec/simple/message.go` (DDL types).
"""

from __future__ import annotations

from typing import Any

from ticdc_sim.model.actions import ActionType as A
from ticdc_sim.model.mysql import BLOB_TYPES
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.table import ColumnInfo
from ticdc_sim.model.type_names import sign_suffix, type_to_str


def short_type(col: ColumnInfo) -> str:
    """canal-json `mysqlType` by default: the type name with unsigned/zerofill."""
    return type_to_str(col) + sign_suffix(col)


# MySQLType2JavaType; (text charset, binary charset) where they differ
JAVA_TYPES: dict[M, int] = {
    M.BIT: -7,
    M.TINY: -6,
    M.SHORT: 5,
    M.INT24: 4,
    M.LONG: 4,
    M.LONGLONG: -5,
    M.FLOAT: 7,
    M.DOUBLE: 8,
    M.NEWDECIMAL: 3,
    M.DATE: 91,
    M.NEWDATE: 91,
    M.DATETIME: 93,
    M.TIMESTAMP: 93,
    M.DURATION: 92,
    M.YEAR: 12,
    M.ENUM: 4,
    M.SET: -7,
    M.JSON: 12,
    M.TIDB_VECTOR_FLOAT32: 12,
}
_JAVA_STRING = {M.STRING: 1, M.VARCHAR: 12, M.VAR_STRING: 12}  # binary charset: 2004 (BLOB)
JAVA_BLOB, JAVA_CLOB, JAVA_VARCHAR = 2004, 2005, 12
# unsigned integers whose value exceeds the signed range move up one Java type
_UNSIGNED_PROMOTION: dict[M, tuple[int, int]] = {
    M.TINY: (127, 5),
    M.SHORT: (32767, 4),
    M.LONG: (2147483647, -5),
    M.LONGLONG: (9223372036854775807, 3),
}


def java_type(col: ColumnInfo) -> int:
    """The Java SQL type of a column, before unsigned promotion by value."""
    if col.tp in BLOB_TYPES:
        return JAVA_BLOB if col.is_binary_charset else JAVA_CLOB
    if col.tp in _JAVA_STRING:
        return JAVA_BLOB if col.is_binary_charset else _JAVA_STRING[col.tp]
    return JAVA_TYPES.get(col.tp, JAVA_VARCHAR)


def unsigned_promotion(col: ColumnInfo) -> tuple[int, int] | None:
    """(signed maximum, promoted Java type) for an unsigned integer column, else None."""
    if not col.unsigned:
        return None
    return _UNSIGNED_PROMOTION.get(col.tp)


def promoted_java_type(base: int, promotion: tuple[int, int] | None, value: Any) -> int:
    if promotion is None or value is None:
        return base
    limit, promoted = promotion
    return promoted if value > limit else base


# DDL event types by action: canal-json's (canal_entry.go convertDdlEventType) and simple's
# (simple/message.go getDDLType) are the same table; everything else is QUERY
DDL_TYPES: dict[A, str] = {
    A.CREATE_TABLE: "CREATE",
    A.RENAME_TABLE: "RENAME",
    A.RENAME_TABLES: "RENAME",
    A.ADD_INDEX: "CINDEX",
    A.ADD_FOREIGN_KEY: "CINDEX",
    A.ADD_PRIMARY_KEY: "CINDEX",
    A.DROP_INDEX: "DINDEX",
    A.DROP_FOREIGN_KEY: "DINDEX",
    A.DROP_PRIMARY_KEY: "DINDEX",
    A.DROP_TABLE: "ERASE",
    A.TRUNCATE_TABLE: "TRUNCATE",
    **{
        action: "ALTER"
        for action in (
            A.ADD_COLUMN,
            A.DROP_COLUMN,
            A.MODIFY_COLUMN,
            A.REBASE_AUTO_ID,
            A.SET_DEFAULT_VALUE,
            A.MODIFY_TABLE_COMMENT,
            A.RENAME_INDEX,
            A.ADD_TABLE_PARTITION,
            A.DROP_TABLE_PARTITION,
            A.MODIFY_TABLE_CHARSET_AND_COLLATE,
            A.TRUNCATE_TABLE_PARTITION,
            A.ALTER_INDEX_VISIBILITY,
            A.MULTI_SCHEMA_CHANGE,
            A.REORGANIZE_PARTITION,
            A.ALTER_TABLE_PARTITIONING,
            A.REMOVE_PARTITIONING,
        )
    },
}
