"""MySQL/TiDB type codes, TiDB column flags, TiCDC column flags and TiDB's type defaults.

Everything here is a table taken from TiDB or TiCDC; nothing here depends on anything else.
Sources: TiDB `pkg/parser/mysql/type.go` (type codes), `pkg/parser/mysql/const.go` (flags),
`pkg/parser/mysql/util.go` `GetDefaultFieldLengthAndDecimal`,
tiflow `cdc/model/sink.go` (TiCDC flags).
"""

from __future__ import annotations

import codecs
from enum import IntEnum, IntFlag


class MySQLType(IntEnum):
    """The MySQL type code TiDB stores in a column's FieldType (`mysql.TypeXxx`)."""

    UNSPECIFIED = 0  # TiDB's TypeUnspecified; also MySQL's old TYPE_DECIMAL code
    TINY = 1
    SHORT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    NULL = 6
    TIMESTAMP = 7
    LONGLONG = 8
    INT24 = 9
    DATE = 10
    DURATION = 11
    DATETIME = 12
    YEAR = 13
    NEWDATE = 14
    VARCHAR = 15
    BIT = 16
    TIDB_VECTOR_FLOAT32 = 225
    JSON = 245
    NEWDECIMAL = 246
    ENUM = 247
    SET = 248
    TINY_BLOB = 249
    MEDIUM_BLOB = 250
    LONG_BLOB = 251
    BLOB = 252
    VAR_STRING = 253
    STRING = 254
    GEOMETRY = 255


class TiDBFlag(IntFlag):
    """TiDB's FieldType flag bits (`mysql.NotNullFlag` ...)."""

    NONE = 0
    NOT_NULL = 1
    PRI_KEY = 2
    UNIQUE_KEY = 4
    MULTIPLE_KEY = 8
    BLOB = 16
    UNSIGNED = 32
    ZEROFILL = 64
    BINARY = 128
    ENUM = 256
    AUTO_INCREMENT = 512
    TIMESTAMP = 1024
    SET = 2048
    NO_DEFAULT_VALUE = 4096
    ON_UPDATE_NOW = 8192


class ColumnFlag(IntFlag):
    """TiCDC's ColumnFlagType bits (tiflow `cdc/model/sink.go`), what the protocols emit."""

    NONE = 0
    BINARY = 0x01
    HANDLE_KEY = 0x02
    GENERATED_COLUMN = 0x04
    PRIMARY_KEY = 0x08
    UNIQUE_KEY = 0x10
    MULTIPLE_KEY = 0x20
    NULLABLE = 0x40
    UNSIGNED = 0x80


INTEGER_TYPES = frozenset(
    {MySQLType.TINY, MySQLType.SHORT, MySQLType.INT24, MySQLType.LONG, MySQLType.LONGLONG}
)
BLOB_TYPES = frozenset(
    {MySQLType.TINY_BLOB, MySQLType.BLOB, MySQLType.MEDIUM_BLOB, MySQLType.LONG_BLOB}
)
# Types whose charset is a text charset; every other type gets `binary` (TiDB
# `pkg/ddl` setCharsetCollationFlenDecimal). BLOB/BINARY/VARBINARY are string types whose
# charset happens to be binary.
STRING_TYPES = frozenset(
    {MySQLType.STRING, MySQLType.VARCHAR, MySQLType.VAR_STRING, MySQLType.ENUM, MySQLType.SET}
    | BLOB_TYPES
)
TIME_TYPES = frozenset({MySQLType.DATETIME, MySQLType.TIMESTAMP, MySQLType.DURATION})

UNSPECIFIED_LENGTH = -1

# (flen, decimal) when the DDL gives none: TiDB `mysql.GetDefaultFieldLengthAndDecimal`.
DEFAULT_LENGTH_AND_DECIMAL: dict[MySQLType, tuple[int, int]] = {
    MySQLType.TINY: (4, 0),
    MySQLType.SHORT: (6, 0),
    MySQLType.INT24: (9, 0),
    MySQLType.LONG: (11, 0),
    MySQLType.LONGLONG: (20, 0),
    MySQLType.DOUBLE: (22, UNSPECIFIED_LENGTH),
    MySQLType.FLOAT: (12, UNSPECIFIED_LENGTH),
    MySQLType.NEWDECIMAL: (10, 0),
    MySQLType.DURATION: (10, 0),
    MySQLType.DATETIME: (19, 0),
    MySQLType.TIMESTAMP: (19, 0),
    MySQLType.DATE: (10, 0),
    MySQLType.STRING: (1, 0),
    MySQLType.VARCHAR: (5, 0),
    MySQLType.VAR_STRING: (5, 0),
    MySQLType.TINY_BLOB: (255, 0),
    MySQLType.BLOB: (65535, 0),
    MySQLType.MEDIUM_BLOB: (16777215, 0),
    MySQLType.LONG_BLOB: (4294967295, 0),
    MySQLType.BIT: (1, 0),
    MySQLType.JSON: (4294967295, 0),
    MySQLType.ENUM: (UNSPECIFIED_LENGTH, 0),
    MySQLType.SET: (UNSPECIFIED_LENGTH, 0),
    MySQLType.YEAR: (4, 0),
    MySQLType.GEOMETRY: (4294967295, 0),
    MySQLType.TIDB_VECTOR_FLOAT32: (UNSPECIFIED_LENGTH, 0),
}

# TEXT(n)/BLOB(n) become the smallest blob type holding n bytes (TiDB ddl `adjustBlobTypesFlen`).
BLOB_TYPE_BY_MAX_LENGTH: tuple[tuple[int, MySQLType], ...] = (
    (255, MySQLType.TINY_BLOB),
    (65535, MySQLType.BLOB),
    (16777215, MySQLType.MEDIUM_BLOB),
    (4294967295, MySQLType.LONG_BLOB),
)

# Integer value ranges, used by the engine to enforce strict mode.
INTEGER_RANGES: dict[MySQLType, tuple[int, int, int]] = {
    # type: (signed min, signed max, unsigned max)
    MySQLType.TINY: (-(2**7), 2**7 - 1, 2**8 - 1),
    MySQLType.SHORT: (-(2**15), 2**15 - 1, 2**16 - 1),
    MySQLType.INT24: (-(2**23), 2**23 - 1, 2**24 - 1),
    MySQLType.LONG: (-(2**31), 2**31 - 1, 2**32 - 1),
    MySQLType.LONGLONG: (-(2**63), 2**63 - 1, 2**64 - 1),
}

# TiDB's system databases (tidb-tools filter.IsSystemSchema)
SYSTEM_SCHEMAS = frozenset(
    {
        "mysql",
        "sys",
        "information_schema",
        "performance_schema",
        "metrics_schema",
        "inspection_schema",
    }
)

BINARY_CHARSET = "binary"
DEFAULT_CHARSET = "utf8mb4"
DEFAULT_COLLATION = "utf8mb4_bin"

# Default collation of each charset TiDB knows (TiDB `pkg/parser/charset`), with new
# collations enabled as in every TiDB since v4.0 bootstrapped fresh.
DEFAULT_COLLATION_OF: dict[str, str] = {
    "utf8mb4": "utf8mb4_bin",
    "utf8": "utf8_bin",
    "utf8mb3": "utf8_bin",
    "ascii": "ascii_bin",
    "latin1": "latin1_bin",
    "binary": "binary",
    "gbk": "gbk_chinese_ci",
    "gb18030": "gb18030_chinese_ci",
}


# How text in each charset TiDB knows becomes bytes and back: Python's codec (None: UTF-8, as
# scripts are read; binary too). MySQL's latin1 is Windows-1252 with the five bytes Windows
# leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) as the C1 controls of their number, as
# MySQL's table and TiDB's golang.org/x/text charmap read them: `mysql_latin1`, below.
CHARSET_CODECS: dict[str, str | None] = {
    "utf8mb4": None,
    "utf8": None,
    "utf8mb3": None,
    "binary": None,
    "ascii": "ascii",
    "latin1": "mysql_latin1",
    "gbk": "gbk",
    "gb18030": "gb18030",
}
_LATIN1 = "".join(bytes([b]).decode("cp1252", "ignore") or chr(b) for b in range(256))
_LATIN1_ENCODING = codecs.charmap_build(_LATIN1)


def _search_codec(name: str) -> codecs.CodecInfo | None:
    if name != "mysql_latin1":
        return None
    return codecs.CodecInfo(
        name=name,
        encode=lambda text, errors="strict": codecs.charmap_encode(text, errors, _LATIN1_ENCODING),
        decode=lambda data, errors="strict": codecs.charmap_decode(data, errors, _LATIN1),
    )


codecs.register(_search_codec)


def charset_of_collation(collation: str) -> str | None:
    """The charset a collation belongs to (`utf8mb4_general_ci` -> `utf8mb4`)."""
    name = collation.lower()
    if name == "binary":
        return BINARY_CHARSET
    for charset in sorted(DEFAULT_COLLATION_OF, key=len, reverse=True):
        if name.startswith(charset + "_"):
            return "utf8" if charset == "utf8mb3" else charset
    return None
