"""The table model TiCDC works from: ColumnInfo, IndexInfo, PartitionInfo, TableInfo.

These mirror TiDB's `model.TableInfo` closely enough for every byte TiCDC derives from it: the
handle key (tiflow `cdc/model/schema_storage.go` `WrapTableInfo`/`findHandleIndex`) and the
TiCDC column flags (`initColumnsFlag`, and the new architecture's `initColumnFlags` in
ticdc `pkg/sink/codec/open/message.go`). All types are frozen; DDL builds new ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import cached_property
from typing import Literal

from ticdc_sim.model.mysql import (
    BINARY_CHARSET,
    INTEGER_TYPES,
    STRING_TYPES,
    ColumnFlag,
    MySQLType,
    TiDBFlag,
)

DefaultKind = Literal["literal", "null", "now", "expr"]


@dataclass(frozen=True, slots=True)
class ColumnDefault:
    """A column default: a literal, NULL, CURRENT_TIMESTAMP[(fsp)] or an expression.

    `sql` is the default as TiDB restores it; `value` holds the literal's value for
    `kind == "literal"` as written: str for strings, int/Decimal/float for numbers (MySQL
    literal types), bytes for bit/hex.
    """

    kind: DefaultKind
    sql: str
    value: str | int | float | Decimal | bytes | None = None


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    id: int
    name: str
    offset: int
    tp: MySQLType
    flen: int
    decimal: int
    flag: TiDBFlag
    charset: str
    collation: str
    elems: tuple[str, ...] = ()
    default: ColumnDefault | None = None
    generated_expr: str | None = None  # TiDB-restored expression text
    generated_stored: bool = False
    auto_random_bits: int = 0  # shard bits; 0 = not AUTO_RANDOM
    auto_random_range: int = 64
    comment: str = ""
    hidden: bool = False

    @property
    def is_generated(self) -> bool:
        return self.generated_expr is not None

    @property
    def is_virtual_generated(self) -> bool:
        return self.generated_expr is not None and not self.generated_stored

    @property
    def not_null(self) -> bool:
        return bool(self.flag & TiDBFlag.NOT_NULL)

    @property
    def unsigned(self) -> bool:
        return bool(self.flag & TiDBFlag.UNSIGNED)

    @property
    def auto_increment(self) -> bool:
        return bool(self.flag & TiDBFlag.AUTO_INCREMENT)

    @property
    def on_update_now(self) -> bool:
        return bool(self.flag & TiDBFlag.ON_UPDATE_NOW)

    @property
    def fsp(self) -> int:
        """Fractional seconds precision of TIME/DATETIME/TIMESTAMP (TiDB keeps it in Decimal)."""
        return max(self.decimal, 0)

    @property
    def is_binary_charset(self) -> bool:
        return self.charset == BINARY_CHARSET

    @property
    def is_text(self) -> bool:
        """A string column with a text (non-binary) charset."""
        return self.tp in STRING_TYPES and self.charset != BINARY_CHARSET


@dataclass(frozen=True, slots=True)
class IndexColumn:
    name: str
    offset: int
    length: int = -1  # prefix length; -1 = whole column


@dataclass(frozen=True, slots=True)
class IndexInfo:
    id: int
    name: str
    columns: tuple[IndexColumn, ...]
    primary: bool = False
    unique: bool = False
    kind: str = ""  # "", "FULLTEXT", "SPATIAL"
    invisible: bool = False
    comment: str = ""


@dataclass(frozen=True, slots=True)
class ForeignKeyInfo:
    """A foreign key as TiDB keeps it (`model.FKInfo`): its name, columns, the table and
    columns it references, and its ON DELETE / ON UPDATE actions ("" for none given)."""

    name: str
    columns: tuple[str, ...]
    ref_schema: str
    ref_table: str
    ref_columns: tuple[str, ...]
    on_delete: str = ""
    on_update: str = ""


@dataclass(frozen=True, slots=True)
class SequenceInfo:
    """A sequence's definition (TiDB `model.SequenceInfo`)."""

    start: int = 1
    increment: int = 1
    min_value: int = 1
    max_value: int = 9223372036854775806
    cache: int = 1000  # 0 = NOCACHE
    cycle: bool = False


PartitionType = Literal["RANGE", "LIST", "HASH", "KEY", "RANGE COLUMNS", "LIST COLUMNS"]


@dataclass(frozen=True, slots=True)
class PartitionDefinition:
    id: int
    name: str
    less_than: tuple[str, ...] = ()  # RANGE: restored bound expressions, "MAXVALUE" allowed
    in_values: tuple[tuple[str, ...], ...] = ()  # LIST: each value (a tuple for COLUMNS)
    comment: str = ""


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    type: PartitionType
    expr: str  # restored partitioning expression (non-COLUMNS kinds)
    columns: tuple[str, ...]  # COLUMNS / KEY column names
    definitions: tuple[PartitionDefinition, ...]

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(d.id for d in self.definitions)

    def by_name(self, name: str) -> PartitionDefinition | None:
        lname = name.lower()
        return next((d for d in self.definitions if d.name.lower() == lname), None)


# Which TiCDC the bytes follow: v8.5 (tiflow) or the new architecture (pingcap/ticdc); the
# sink URI's `ticdc-version`. One name everywhere: flags, dispatchers and encoders.
TiCDCProfile = Literal["v8.5", "new-arch"]


# The most a value of a fixed-size column holds in memory (CPython 3.11, 64-bit): a 64-bit
# int 36 B, a float 24 B, a Decimal 104 B (NULL's None 16 B); values of the other types
# (strings, bytes, times, JSON) vary in size.
FIXED_VALUE_BYTES = {
    **dict.fromkeys(INTEGER_TYPES, 36),
    MySQLType.FLOAT: 24,
    MySQLType.DOUBLE: 24,
    MySQLType.NEWDECIMAL: 104,
}


@dataclass(frozen=True)
class TableInfo:
    id: int
    schema: str
    name: str
    columns: tuple[ColumnInfo, ...]
    indices: tuple[IndexInfo, ...] = ()
    pk_is_handle: bool = False
    is_common_handle: bool = False
    charset: str = "utf8mb4"
    collation: str = "utf8mb4_bin"
    comment: str = ""
    partition: PartitionInfo | None = None
    auto_increment_base: int = 0
    auto_random_base: int = 0
    auto_id_cache: int = 0
    shard_row_id_bits: int = 0
    max_column_id: int = 0
    max_index_id: int = 0
    update_ts: int = 0
    is_view: bool = False
    view_select: str = ""
    sequence: SequenceInfo | None = None
    foreign_keys: tuple[ForeignKeyInfo, ...] = ()

    @property
    def is_sequence(self) -> bool:
        return self.sequence is not None

    _column_index: dict[str, int] = field(default_factory=dict, init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "_column_index", {c.name.lower(): i for i, c in enumerate(self.columns)}
        )

    # -- lookups ---------------------------------------------------------------------------

    def column(self, name: str) -> ColumnInfo | None:
        i = self._column_index.get(name.lower())
        return None if i is None else self.columns[i]

    def index(self, name: str) -> IndexInfo | None:
        lname = name.lower()
        return next((ix for ix in self.indices if ix.name.lower() == lname), None)

    @property
    def primary_index(self) -> IndexInfo | None:
        return next((ix for ix in self.indices if ix.primary), None)

    @property
    def is_partitioned(self) -> bool:
        return self.partition is not None

    @property
    def physical_ids(self) -> tuple[int, ...]:
        """The ids TiKV keys rows under: the partitions', or the table's own."""
        return self.partition.ids if self.partition else (self.id,)

    def evolve(self, **changes: object) -> TableInfo:
        return replace(self, **changes)  # type: ignore[arg-type]

    @cached_property
    def value_sizes(self) -> tuple[int, tuple[int, ...]]:
        """For bounds on memory (the service's history of rows): the most the values of a
        row's fixed-size columns hold together (`FIXED_VALUE_BYTES`), and the offsets of
        the other columns, whose values are sized one by one."""
        fixed = [FIXED_VALUE_BYTES.get(c.tp) for c in self.columns]
        return sum(filter(None, fixed)), tuple(i for i, f in enumerate(fixed) if f is None)

    # -- TiCDC's view of the table -----------------------------------------------------------

    @cached_property
    def pk_handle_column(self) -> ColumnInfo | None:
        """The integer primary key column that is the row's handle (`PKIsHandle`)."""
        if not self.pk_is_handle:
            return None
        return next((c for c in self.columns if c.flag & TiDBFlag.PRI_KEY), None)

    @cached_property
    def handle_index_id(self) -> int | None:
        """TiCDC's `HandleIndexID`: -1 when the PK is the handle (int or clustered),
        the chosen unique index's id, or None when the table has no handle key
        (tiflow `cdc/model/schema_storage.go` `WrapTableInfo`, `findHandleIndex`)."""
        if self.pk_is_handle or self.is_common_handle:
            return -1
        candidates = [ix for ix in self.indices if self._is_index_unique_not_null(ix)]
        for ix in candidates:
            if ix.primary:
                return ix.id
        if not candidates:
            return None
        return min(candidates, key=lambda ix: (len(ix.columns), ix.id)).id

    def _is_index_unique_not_null(self, ix: IndexInfo) -> bool:
        # tiflow schema_storage.go `IsIndexUnique`: primary, or unique with every column
        # NOT NULL and not virtual generated.
        if ix.primary:
            return True
        if not ix.unique:
            return False
        for ic in ix.columns:
            col = self.columns[ic.offset]
            if not col.not_null or col.is_virtual_generated:
                return False
        return True

    @cached_property
    def handle_key_columns(self) -> tuple[str, ...]:
        """Handle-key column names: table order for a PK handle, index order otherwise."""
        hid = self.handle_index_id
        if hid is None:
            return ()
        if hid == -1:
            if self.pk_is_handle:
                col = self.pk_handle_column
                return (col.name,) if col else ()
            pk = self.primary_index
            return tuple(ic.name for ic in pk.columns) if pk else ()
        ix = next(ix for ix in self.indices if ix.id == hid)
        return tuple(ic.name for ic in ix.columns)

    @property
    def has_handle_key(self) -> bool:
        """TiCDC's `IsEligible`: tables without one replicate only with force-replicate."""
        return self.handle_index_id is not None

    @cached_property
    def visible_columns(self) -> tuple[ColumnInfo, ...]:
        """Columns TiCDC emits: everything but virtual generated columns (`IsColCDCVisible`)."""
        return tuple(c for c in self.columns if not c.is_virtual_generated and not c.hidden)

    def ticdc_flags(self, profile: TiCDCProfile = "v8.5") -> tuple[ColumnFlag, ...]:
        """TiCDC ColumnFlagType of every column, in table order.

        v8.5: tiflow HEAD `initColumnsFlag` (PK index columns get no UniqueKey, v8.0+).
        new-arch: ticdc `initColumnFlags`; generated columns skip the index pass.
        """
        return self._v85_flags if profile == "v8.5" else self._new_arch_flags

    @cached_property
    def _v85_flags(self) -> tuple[ColumnFlag, ...]:
        hid = self.handle_index_id
        flags = [self._column_pass_flag(c, handle_from_pk=hid == -1) for c in self.columns]
        for ix in self.indices:
            for ic in ix.columns:
                flags[ic.offset] |= self._index_pass_flag(ix, hid)
        return tuple(flags)

    @cached_property
    def _new_arch_flags(self) -> tuple[ColumnFlag, ...]:
        handle = set(self.handle_key_columns)
        flags = [self._column_pass_flag(c, handle_from_pk=self.pk_is_handle) for c in self.columns]
        for ix in self.indices:
            for ic in ix.columns:
                col = self.columns[ic.offset]
                if col.is_generated:
                    continue
                flag = self._index_pass_flag(ix, None)
                if col.name in handle:
                    flag |= ColumnFlag.HANDLE_KEY
                flags[ic.offset] |= flag
        return tuple(flags)

    @staticmethod
    def _column_pass_flag(col: ColumnInfo, *, handle_from_pk: bool) -> ColumnFlag:
        flag = ColumnFlag.NONE
        if col.is_binary_charset:
            flag |= ColumnFlag.BINARY
        if col.is_generated:
            flag |= ColumnFlag.GENERATED_COLUMN
        if col.flag & TiDBFlag.PRI_KEY:
            flag |= ColumnFlag.PRIMARY_KEY
            if handle_from_pk:
                flag |= ColumnFlag.HANDLE_KEY
        if col.flag & TiDBFlag.UNIQUE_KEY:
            flag |= ColumnFlag.UNIQUE_KEY
        if not col.flag & TiDBFlag.NOT_NULL:
            flag |= ColumnFlag.NULLABLE
        if col.flag & TiDBFlag.MULTIPLE_KEY:
            flag |= ColumnFlag.MULTIPLE_KEY
        if col.flag & TiDBFlag.UNSIGNED:
            flag |= ColumnFlag.UNSIGNED
        return flag

    @staticmethod
    def _index_pass_flag(ix: IndexInfo, handle_index_id: int | None) -> ColumnFlag:
        flag = ColumnFlag.NONE
        if ix.primary:
            flag |= ColumnFlag.PRIMARY_KEY
        elif ix.unique:
            flag |= ColumnFlag.UNIQUE_KEY
        if len(ix.columns) > 1:
            flag |= ColumnFlag.MULTIPLE_KEY
        if handle_index_id is not None and handle_index_id >= 0 and ix.id == handle_index_id:
            flag |= ColumnFlag.HANDLE_KEY
        return flag


def is_int_handle_candidate(col: ColumnInfo) -> bool:
    """A single-column PK on an integer column becomes the row handle (TiDB `PKIsHandle`)."""
    return col.tp in INTEGER_TYPES


# one part of a table's name: MySQL's quoted identifier (a backquote in it doubled) or a bare run
_NAME_PART = re.compile(r"`((?:[^`]|``)*)`|([^.`]+)")


def table_names(text: str) -> list[tuple[str | None, str]]:
    """The (schema, table) pairs a person's `schema.table` can mean (schema None: not named).
    Quoted as MySQL quotes (`` test.`a.b` ``, `` `we``ird` ``) it means one; otherwise any
    dot may be the one between schema and table (`d.x.t`: `d.x`.`t` or `d`.`x.t`), the last
    dot's split first."""
    quoted = _quoted_parts(text) if "`" in text else None
    if quoted is not None:
        return [(quoted[0], quoted[1])] if len(quoted) == 2 else [(None, quoted[0])]
    dots = [at for at, char in enumerate(text) if char == "."]
    return [(text[:at], text[at + 1 :]) for at in reversed(dots)] or [(None, text)]


def _quoted_parts(text: str) -> list[str] | None:
    """`schema`.`table` or `table`, each part quoted or bare; None when it is not that."""
    parts, at = [], 0
    while (found := _NAME_PART.match(text, at)) is not None:
        quoted, bare = found.groups()
        parts.append(bare if quoted is None else quoted.replace("``", "`"))
        at = found.end()
        if at == len(text):
            return parts if len(parts) <= 2 else None
        if text[at] != ".":
            return None
        at += 1
    return None


def quoted_name(schema: str, table: str) -> str:
    """`schema.table` as a person writes it back: a part holding a dot or a backquote
    quoted as MySQL quotes it, so that `table_names` reads it as one table."""
    return ".".join(
        f"`{part.replace('`', '``')}`" if "." in part or "`" in part else part
        for part in (schema, table)
    )
