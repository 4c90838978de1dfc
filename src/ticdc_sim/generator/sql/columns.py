"""Column definitions as TiDB's DDL reads them (`pkg/ddl/column.go`, `pkg/ddl/add_column.go`):
the sqlglot type -> MySQL type table, `build_column` (lengths, flags, charsets, AUTO_RANDOM),
literal defaults checked under the session's sql_mode, and the limits every table a DDL leaves
must keep (names, column/index/key-part counts, key and column lengths; `checkTooLong*`,
`checkColumnAttributes`). Also the small readers the other DDL modules share: TiDB's restored
text of a node, an integer literal, a CHARACTER SET/COLLATE pair.

The bottom of the DDL modules (columns <- build <- alter <- catalog): it imports none of them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.restore import TiDBRestoreGenerator
from ticdc_sim.generator.sql.values import (
    SqlMode,
    binary_literal,
    column_converter,
    number_literal,
)
from ticdc_sim.model.mysql import (
    BINARY_CHARSET,
    BLOB_TYPE_BY_MAX_LENGTH,
    DEFAULT_COLLATION_OF,
    DEFAULT_LENGTH_AND_DECIMAL,
    INTEGER_TYPES,
    UNSPECIFIED_LENGTH,
    MySQLType,
    TiDBFlag,
    charset_of_collation,
)
from ticdc_sim.model.table import ColumnDefault, ColumnInfo, TableInfo

D = exp.DType
M = MySQLType
# sqlglot DType -> (MySQL type code, unsigned, binary charset)
TYPE_TABLE: dict[exp.DType, tuple[MySQLType, bool, bool]] = {
    D.TINYINT: (M.TINY, False, False),
    D.UTINYINT: (M.TINY, True, False),
    D.BOOLEAN: (M.TINY, False, False),
    D.SMALLINT: (M.SHORT, False, False),
    D.USMALLINT: (M.SHORT, True, False),
    D.MEDIUMINT: (M.INT24, False, False),
    D.UMEDIUMINT: (M.INT24, True, False),
    D.INT: (M.LONG, False, False),
    D.UINT: (M.LONG, True, False),
    D.BIGINT: (M.LONGLONG, False, False),
    D.UBIGINT: (M.LONGLONG, True, False),
    D.SERIAL: (M.LONGLONG, True, False),  # + NOT NULL AUTO_INCREMENT UNIQUE, below
    D.FLOAT: (M.FLOAT, False, False),
    D.DOUBLE: (M.DOUBLE, False, False),
    D.UDOUBLE: (M.DOUBLE, True, False),
    D.DECIMAL: (M.NEWDECIMAL, False, False),
    D.UDECIMAL: (M.NEWDECIMAL, True, False),
    D.DATE: (M.DATE, False, False),
    D.DATETIME: (M.DATETIME, False, False),
    D.DATETIME64: (M.DATETIME, False, False),
    D.TIMESTAMP: (M.TIMESTAMP, False, False),
    D.TIMESTAMPTZ: (M.TIMESTAMP, False, False),
    D.TIME: (M.DURATION, False, False),
    D.YEAR: (M.YEAR, True, False),  # TiDB: YEAR gets Zerofill, hence Unsigned
    D.BIT: (M.BIT, True, False),  # TiDB: BIT is always unsigned
    D.CHAR: (M.STRING, False, False),
    D.NCHAR: (M.STRING, False, False),
    D.VARCHAR: (M.VARCHAR, False, False),
    D.NVARCHAR: (M.VARCHAR, False, False),
    D.BINARY: (M.STRING, False, True),
    D.VARBINARY: (M.VARCHAR, False, True),
    D.TINYTEXT: (M.TINY_BLOB, False, False),
    D.TEXT: (M.BLOB, False, False),
    D.MEDIUMTEXT: (M.MEDIUM_BLOB, False, False),
    D.LONGTEXT: (M.LONG_BLOB, False, False),
    D.TINYBLOB: (M.TINY_BLOB, False, True),
    D.BLOB: (M.BLOB, False, True),
    D.MEDIUMBLOB: (M.MEDIUM_BLOB, False, True),
    D.LONGBLOB: (M.LONG_BLOB, False, True),
    D.JSON: (M.JSON, False, True),
    D.ENUM: (M.ENUM, False, False),
    D.SET: (M.SET, False, False),
    D.VECTOR: (M.TIDB_VECTOR_FLOAT32, False, True),
    D.GEOMETRY: (M.GEOMETRY, False, True),
}

_RESTORE = TiDBRestoreGenerator()


def restore(node: exp.Expr) -> str:
    """TiDB's restored text of a node (what TiCDC puts in a DDL message)."""
    # not `generate()`: it strips, and TiDB's restore keeps a trailing separator space
    return _RESTORE.sql(node.copy())


def int_literal(node: exp.Expr | None) -> int:
    """A number written as a literal (a length, a count, an option's value), or an error."""
    if not isinstance(node, exp.Literal) or node.is_string:
        raise SQLError(f"expected a number, found {node.sql() if node else 'nothing'}")
    return int(node.this)


def charset_options(props: exp.Expr | None, charset: str, collation: str | None) -> tuple[str, str]:
    """The (charset, collation) that CHARACTER SET and COLLATE among `props` make of the
    inherited ones: a COLLATE implies its charset, a charset alone its default collation."""
    for p in props.expressions if props else []:
        if isinstance(p, exp.CharacterSetProperty):
            charset = p.this.name.lower()
            collation = None
        elif isinstance(p, exp.CollateProperty):
            collation = p.this.name.lower()
            charset = charset_of_collation(collation) or charset
    return charset, collation or DEFAULT_COLLATION_OF.get(charset, f"{charset}_bin")


# -- TiDB's limits on names and sizes ---------------------------------------------------------
#
# pkg/parser/mysql/const.go (Max*Length, 64 characters) checked by pkg/ddl/executor.go
# checkTooLong*; empty names and names ending in a space by pkg/planner/core/preprocess.go;
# the column and index counts by pkg/ddl (config table-column-count-limit, index-limit).

MAX_NAME_LENGTH = 64
MAX_COLUMNS = 1017
MAX_INDEXES = 64
MAX_KEY_PARTS = 16
_INCORRECT_NAME = {"database": 1102, "table": 1103, "column": 1166}


def check_name(kind: str, name: str) -> None:
    """A database, table, column or index name TiDB accepts, or its error."""
    if len(name) > MAX_NAME_LENGTH:
        raise SQLError(f"Identifier name '{name[:100]}' is too long", code=1059)
    code = _INCORRECT_NAME.get(kind)
    if code is not None and (not name or name.endswith(" ")):
        raise SQLError(f"Incorrect {kind} name '{name[:100]}'", code=code)


MAX_KEY_BYTES = 3072  # TiDB config max-index-length
MAX_PARTITIONS = 8192  # TiDB ddl.PartitionCountLimit
_MAX_CHARACTER_BYTES = {"utf8mb4": 4, "utf8": 3, "utf8mb3": 3, "gbk": 2, "gb18030": 4}
# bytes of a key part that is not a string (TiDB FieldType.StorageLength)
_STORAGE_BYTES = {
    M.TINY: 1, M.SHORT: 2, M.INT24: 3, M.LONG: 4, M.LONGLONG: 8, M.FLOAT: 4, M.DOUBLE: 8,
    M.DATE: 3, M.DURATION: 3, M.DATETIME: 8, M.TIMESTAMP: 4, M.YEAR: 1, M.BIT: 8,
    M.ENUM: 2, M.SET: 8,
}  # fmt: skip


def check_limits(table: TableInfo) -> None:
    """A table as a DDL leaves it: its names, types and sizes within TiDB's limits."""
    check_name("table", table.name)
    shown = [c for c in table.columns if not c.hidden]
    for column in shown:
        check_name("column", column.name)
        _check_type(column)
    if len(shown) > MAX_COLUMNS:
        raise SQLError("Too many columns", code=1117)
    for index in table.indices:
        check_name("index", index.name)
        if len(index.columns) > MAX_KEY_PARTS:
            raise SQLError(
                f"Too many key parts specified; max {MAX_KEY_PARTS} parts allowed", code=1070
            )
        length = sum(_key_part_bytes(table.columns[ic.offset], ic.length) for ic in index.columns)
        if length > MAX_KEY_BYTES:
            raise SQLError(
                f"Specified key was too long ({length} bytes); max key length is"
                f" {MAX_KEY_BYTES} bytes",
                code=1071,
            )
    if len(table.indices) > MAX_INDEXES:
        raise SQLError(f"Too many keys specified; max {MAX_INDEXES} keys allowed", code=1069)
    if table.partition is not None and len(table.partition.definitions) > MAX_PARTITIONS:
        raise SQLError("Too many partitions (including subpartitions) were defined", code=1499)


def _check_type(column: ColumnInfo) -> None:
    """The lengths TiDB's DDL checks (pkg/ddl checkColumnAttributes, the parser for YEAR)."""
    tp, name = column.tp, column.name
    if tp in (M.STRING, M.VARCHAR):
        bytes_each = 1 if column.charset == BINARY_CHARSET else _character_bytes(column)
        limit = 255 if tp == M.STRING else 65535 // bytes_each
        if column.flen > limit:
            raise SQLError(
                f"Column length too big for column '{name}' (max = {limit}); use BLOB or TEXT"
                " instead",
                code=1074,
            )
    elif tp in INTEGER_TYPES and tp != M.YEAR or tp == M.BIT:
        limit = 64 if tp == M.BIT else 255
        if column.flen > limit:
            raise SQLError(
                f"Display width out of range for column '{name}' (max = {limit})", code=1439
            )
    elif tp == M.SET and len(column.elems) > 64:
        raise SQLError(f"Too many strings for column {name} and SET", code=1097)
    elif tp == M.YEAR and column.flen not in (4, UNSPECIFIED_LENGTH):
        raise SQLError("Supports only YEAR or YEAR(4) column", code=1818)


def _character_bytes(column: ColumnInfo) -> int:
    return _MAX_CHARACTER_BYTES.get(column.charset, 1)


def _key_part_bytes(column: ColumnInfo, prefix: int) -> int:
    if column.hidden:  # an expression index's column: its type here is a placeholder
        return 0
    if column.tp in BLOB_TYPE_SET and prefix <= 0:
        raise SQLError(
            f"BLOB/TEXT column '{column.name}' used in key specification without a key length",
            code=1170,
        )
    if column.tp in _STORAGE_BYTES:
        return _STORAGE_BYTES[column.tp]
    if column.tp == M.NEWDECIMAL:
        return (max(column.flen, 1) + 1) // 2 + 1
    length = prefix if prefix > 0 else max(column.flen, 0)
    return length * (1 if column.charset == BINARY_CHARSET else _character_bytes(column))


# -- column definitions ----------------------------------------------------------------------

_NARROWER_WHEN_UNSIGNED = frozenset({M.TINY, M.SHORT, M.INT24, M.LONG})


def build_column(
    cdef: exp.ColumnDef,
    column_id: int,
    offset: int,
    table_charset: str,
    table_collation: str,
    mode: SqlMode,
) -> tuple[ColumnInfo, list[exp.Expr]]:
    """A ColumnInfo from a column definition, plus the key constraints it declares."""
    dtype = cdef.args.get("kind")
    if not isinstance(dtype, exp.DataType):
        raise SQLError(f"column '{cdef.name}' has no type")
    entry = TYPE_TABLE.get(dtype.this)
    if entry is None:
        raise SQLError(
            f"unsupported column type {dtype.sql(dialect='mysql')} for column '{cdef.name}'"
        )
    tp, unsigned, binary = entry
    serial = dtype.this == D.SERIAL
    params = [p.this if isinstance(p, exp.DataTypeParam) else p for p in dtype.expressions]
    elems: tuple[str, ...] = ()
    flen, decimal = DEFAULT_LENGTH_AND_DECIMAL.get(tp, (UNSPECIFIED_LENGTH, 0))
    if tp in (M.ENUM, M.SET):
        elems = tuple(p.name for p in params)
    elif tp in (M.DATETIME, M.TIMESTAMP, M.DURATION):
        decimal = int_literal(params[0]) if params else 0
        if not 0 <= decimal <= 6:
            raise SQLError(
                f"Too-big precision {decimal} specified for '{cdef.name}'. Maximum is 6.", code=1426
            )
        flen += decimal + 1 if decimal else 0
    elif params:
        flen = int_literal(params[0])
        if len(params) > 1:
            decimal = int_literal(params[1])
    if dtype.this == D.BOOLEAN:
        flen = 1
    if tp == M.FLOAT and len(params) == 1:
        # FLOAT(p): p <= 24 is FLOAT, p <= 53 DOUBLE, precision only (TiDB parser)
        if flen > 53:
            raise SQLError(f"Incorrect column specifier for column '{cdef.name}'", code=1063)
        tp, flen, decimal = (
            (M.FLOAT, 12, UNSPECIFIED_LENGTH) if flen <= 24 else (M.DOUBLE, 22, UNSPECIFIED_LENGTH)
        )
    if tp == M.BLOB and params:  # TEXT(n)/BLOB(n) pick the smallest fitting blob type
        tp = next(t for limit, t in BLOB_TYPE_BY_MAX_LENGTH if flen <= limit)
    if tp == M.NEWDECIMAL:
        if flen > 65:
            raise SQLError(
                f"Too-big precision {flen} specified for '{cdef.name}'. Maximum is 65.", code=1426
            )
        if decimal > 30 or decimal > flen:
            raise SQLError(
                f"Too big scale {decimal} specified for column '{cdef.name}'. Maximum is 30.",
                code=1425,
            )
    if tp == M.VARCHAR and not params:
        raise SQLError(f"VARCHAR column '{cdef.name}' needs a length", code=1064)

    flag = TiDBFlag.NONE
    if unsigned:
        flag |= TiDBFlag.UNSIGNED
    if tp == M.YEAR:
        flag |= TiDBFlag.ZEROFILL
    charset = collation = BINARY_CHARSET
    is_text = tp in (M.STRING, M.VARCHAR, M.VAR_STRING, M.ENUM, M.SET) or tp in BLOB_TYPE_SET
    if is_text and not binary:
        charset, collation = table_charset, table_collation
    default: ColumnDefault | None = None
    generated_expr: str | None = None
    stored = False
    auto_random = (0, 64)
    comment = ""
    keys: list[exp.Expr] = []
    explicit_charset = explicit_collation = None
    for constraint in cdef.args.get("constraints") or []:
        kind = (
            constraint.args.get("kind")
            if isinstance(constraint, exp.ColumnConstraint)
            else constraint
        )
        if isinstance(kind, exp.NotNullColumnConstraint):
            flag = (
                flag & ~TiDBFlag.NOT_NULL
                if kind.args.get("allow_null")
                else flag | TiDBFlag.NOT_NULL
            )
        elif isinstance(kind, exp.PrimaryKeyColumnConstraint | exp.UniqueColumnConstraint):
            keys.append(kind)
        elif isinstance(kind, exp.AutoIncrementColumnConstraint):
            flag |= TiDBFlag.AUTO_INCREMENT
        elif isinstance(kind, exp.DefaultColumnConstraint):
            default = column_default(kind.this)
        elif isinstance(kind, exp.OnUpdateColumnConstraint):
            flag |= TiDBFlag.ON_UPDATE_NOW
        elif isinstance(kind, exp.CommentColumnConstraint):
            comment = kind.this.name
        elif isinstance(kind, exp.ComputedColumnConstraint):
            inner = kind.this.this if isinstance(kind.this, exp.Paren) else kind.this
            generated_expr = restore(inner)
            stored = bool(kind.args.get("persisted"))
        elif isinstance(kind, exp.CharacterSetColumnConstraint):
            explicit_charset = kind.this.name.lower()
        elif isinstance(kind, exp.CollateColumnConstraint):
            explicit_collation = kind.this.name.lower()
        elif isinstance(kind, exp.BinaryColumnConstraint):
            explicit_collation = explicit_collation or "binary"  # resolved below to <charset>_bin
        elif isinstance(kind, d.UnsignedColumnConstraint):
            flag |= TiDBFlag.UNSIGNED
        elif isinstance(kind, exp.ZeroFillColumnConstraint):
            flag |= TiDBFlag.ZEROFILL | TiDBFlag.UNSIGNED
        elif isinstance(kind, d.AutoRandomColumnConstraint):
            shard = int_literal(kind.this) if kind.this else 5
            range_bits = int_literal(kind.expression) if kind.expression else 64
            auto_random = (shard, range_bits)
        elif isinstance(kind, d.SerialDefaultValueColumnConstraint):
            flag |= TiDBFlag.NOT_NULL | TiDBFlag.AUTO_INCREMENT
            keys.append(exp.UniqueColumnConstraint())
    if charset != BINARY_CHARSET:
        if explicit_charset:
            charset = "utf8" if explicit_charset == "utf8mb3" else explicit_charset
            collation = DEFAULT_COLLATION_OF.get(charset, f"{charset}_bin")
        if explicit_collation == "binary":
            collation = f"{charset}_bin"
        elif explicit_collation:
            collation = explicit_collation
            charset = charset_of_collation(collation) or charset
    if serial:  # SERIAL = BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE
        flag |= TiDBFlag.NOT_NULL | TiDBFlag.AUTO_INCREMENT
        keys.append(exp.UniqueColumnConstraint())
    if not params and flag & TiDBFlag.UNSIGNED and tp in _NARROWER_WHEN_UNSIGNED:
        flen -= 1  # TiDB issue #4684: no sign character, one digit fewer (BIGINT excepted)
    if charset == BINARY_CHARSET:
        flag |= TiDBFlag.BINARY
    if tp in BLOB_TYPE_SET or tp == M.JSON:
        flag |= TiDBFlag.BLOB
    if any(isinstance(k, exp.PrimaryKeyColumnConstraint) for k in keys):
        flag |= TiDBFlag.NOT_NULL
    if auto_random[0] and tp != M.LONGLONG:
        raise SQLError(f"Invalid auto random: column '{cdef.name}' must be BIGINT", code=8216)
    column = ColumnInfo(
        id=column_id,
        name=cdef.name,
        offset=offset,
        tp=tp,
        flen=flen,
        decimal=decimal,
        flag=flag,
        charset=charset,
        collation=collation,
        elems=elems,
        default=default,
        generated_expr=generated_expr,
        generated_stored=stored,
        auto_random_bits=auto_random[0],
        auto_random_range=auto_random[1],
        comment=comment,
    )
    check_default(column, mode)
    return column, keys


BLOB_TYPE_SET = frozenset(t for _, t in BLOB_TYPE_BY_MAX_LENGTH)


def column_default(node: exp.Expr) -> ColumnDefault:
    sql = restore(node)
    if isinstance(node, exp.Null):
        return ColumnDefault("null", sql)
    if isinstance(node, exp.CurrentTimestamp) or (
        isinstance(node, exp.Anonymous | exp.Func)
        and node.name.upper() in ("NOW", "CURRENT_TIMESTAMP", "LOCALTIME", "LOCALTIMESTAMP")
    ):
        return ColumnDefault("now", sql)
    if isinstance(node, exp.Introducer) and isinstance(node.expression, exp.Literal):
        node = node.expression  # _utf8mb4'x': a charset introducer, the string's value as is
    if isinstance(node, exp.National):  # N'x': the national charset's string, its value as is
        return ColumnDefault("literal", sql, node.this)
    if isinstance(node, exp.Literal):  # the value exactly as written, as the evaluator reads it
        value: Any = node.this if node.is_string else number_literal(node.this)
        return ColumnDefault("literal", sql, value)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return ColumnDefault("literal", sql, number_literal(node.this.this, negative=True))
    if isinstance(node, exp.Boolean):
        return ColumnDefault("literal", sql, 1 if node.this else 0)
    if isinstance(node, exp.HexString | exp.BitString):
        base = 16 if isinstance(node, exp.HexString) else 2
        return ColumnDefault("literal", sql, binary_literal(node.this or "", base))
    return ColumnDefault("expr", sql)


def check_default(column: ColumnInfo, mode: SqlMode) -> None:
    """A literal default must be a value of the column's type under the session's sql_mode
    (MySQL 1067), as TiDB checks at CREATE/ALTER time (`ddl.checkDefaultValue`)."""
    default = column.default
    if default is None or default.kind != "literal" or column.tp == M.TIMESTAMP:
        return  # TIMESTAMP defaults are read in the session's zone, when used
    try:
        column_converter(column, lambda: dt.UTC, mode)(default.value)
    except SQLError:
        raise SQLError(f"Invalid default value for '{column.name}'", code=1067) from None
