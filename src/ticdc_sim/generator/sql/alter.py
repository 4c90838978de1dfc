"""ALTER TABLE actions -> the table's new TableInfo and the ActionType TiCDC reports
(`pkg/ddl/executor.go` AlterTable's dispatch; columns as `modify_column.go` and `column.go`,
indexes as `index.go`, partitions as `partition.go`). One action at a time: the catalog
(catalog.py) folds several into a multi-schema change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.build import (
    DDLCatalog,
    TableBuilder,
    build_partition,
    build_partition_def,
    check_pk_droppable,
    check_unique_partition_names,
)
from ticdc_sim.generator.sql.columns import (
    build_column,
    charset_options,
    check_default,
    column_default,
    int_literal,
)
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.mysql import (
    BINARY_CHARSET,
    DEFAULT_COLLATION_OF,
    TiDBFlag,
    charset_of_collation,
)
from ticdc_sim.model.table import ColumnInfo, IndexInfo, PartitionDefinition, TableInfo

_Named = TypeVar("_Named", ColumnInfo, IndexInfo)
# RENAME COLUMN/INDEX: the error of an old name not there, then of a new name taken
_RENAME_ERRORS = {
    "column": (1054, "Unknown column '{old}' in '{table}'", 1060, "Duplicate column name '{new}'"),
    "index": (
        1176,
        "Key '{old}' doesn't exist in table '{table}'",
        1061,
        "Duplicate key name '{new}'",
    ),
}


class AlterApplier:
    """Applies one ALTER TABLE action to a TableInfo; returns the new info and ActionType."""

    def __init__(self, catalog: DDLCatalog, table: TableInfo) -> None:
        self.catalog = catalog
        self.table = table

    def apply(self, action: exp.Expr) -> tuple[TableInfo, ActionType | None]:
        t = self.table
        if isinstance(action, exp.ColumnDef):
            return self._add_column(action), ActionType.ADD_COLUMN
        if isinstance(action, exp.AddConstraint):
            info = t
            action_type = ActionType.ADD_INDEX
            for c in action.expressions:
                info = TableBuilder(
                    self.catalog, self.catalog.schema(t.schema), t.name, altering=True
                )._apply_table_constraint(info, c)
                inner = c.expressions[0] if isinstance(c, exp.Constraint) and c.expressions else c
                if isinstance(inner, exp.PrimaryKey):
                    action_type = ActionType.ADD_PRIMARY_KEY
            return info, action_type
        if isinstance(action, exp.Drop):
            return self._drop(action)
        if isinstance(action, exp.AlterIndex):
            index = t.index(action.name)
            if index is None:
                raise SQLError(f"Key '{action.name}' doesn't exist in table '{t.name}'", code=1176)
            visible = replace(index, invisible=not action.args.get("visible"))
            indices = tuple(visible if ix is index else ix for ix in t.indices)
            return t.evolve(indices=indices), ActionType.ALTER_INDEX_VISIBILITY
        if isinstance(action, exp.AlterColumn):
            return self._alter_column(action), ActionType.SET_DEFAULT_VALUE
        if isinstance(action, exp.AlterRename):
            schema, name = self.catalog.table_ref(action.this)
            if self.catalog.find_table(schema, name):
                raise SQLError(f"Table '{name}' already exists", code=1050)
            del self.catalog.schemas[t.schema.lower()].tables[t.name.lower()]
            return t.evolve(
                schema=self.catalog.schema(schema).name, name=name
            ), ActionType.RENAME_TABLE
        if isinstance(action, exp.RenameColumn):
            return self._rename_column(
                action.this.name, action.args["to"].name
            ), ActionType.MODIFY_COLUMN
        if isinstance(action, exp.RenameIndex):
            return self._rename_index(
                action.this.name, action.args["to"].name
            ), ActionType.RENAME_INDEX
        if isinstance(action, exp.ModifyColumn):
            return self._modify_column(action), ActionType.MODIFY_COLUMN
        if isinstance(action, exp.DropPrimaryKey):
            check_pk_droppable(t)
            return TableBuilder.drop_index(t, "PRIMARY", False), ActionType.DROP_PRIMARY_KEY
        if isinstance(action, d.PartitionNames):
            return self._partition_action(action)
        if isinstance(action, d.PartitionBy):
            return t.evolve(
                partition=build_partition(self.catalog, t, action, [])
            ), ActionType.ALTER_TABLE_PARTITIONING
        if isinstance(action, d.RemoveClause):
            if action.this.name == "PARTITIONING":
                return t.evolve(
                    partition=None, id=self.catalog.alloc_id()
                ), ActionType.REMOVE_PARTITIONING
            return t, ActionType.ALTER_TTL_REMOVE
        if isinstance(action, d.TTLProperty):
            return t, ActionType.ALTER_TTL_INFO
        if isinstance(action, d.TiFlashReplica):
            return t, ActionType.SET_TIFLASH_REPLICA
        if isinstance(action, d.PartitionOptions):
            return t, None
        if isinstance(action, d.ConvertCharset | exp.Property | exp.Properties):
            return self._table_option(action)
        kind = action.args.get("kind") if isinstance(action, exp.Expr) else None
        raise SQLError(
            f"unsupported ALTER TABLE action: {action.sql(dialect=d.TiDB)[:80]}"
            + (f" ({kind})" if kind else "")
        )

    def _table_option(self, option: exp.Expr) -> tuple[TableInfo, ActionType | None]:
        t = self.table
        if isinstance(option, d.ConvertCharset):
            return self._convert_charset(option), ActionType.MODIFY_TABLE_CHARSET_AND_COLLATE
        if isinstance(option, exp.SchemaCommentProperty):
            return t.evolve(comment=option.this.name), ActionType.MODIFY_TABLE_COMMENT
        if isinstance(option, exp.CharacterSetProperty | exp.CollateProperty):
            charset, collation = charset_options(
                exp.Properties(expressions=[option]), t.charset, None
            )
            return t.evolve(
                charset=charset, collation=collation
            ), ActionType.MODIFY_TABLE_CHARSET_AND_COLLATE
        if isinstance(option, exp.AutoIncrementProperty):
            return t.evolve(auto_increment_base=int_literal(option.this)), ActionType.REBASE_AUTO_ID
        if isinstance(option, exp.EngineProperty | exp.ForceProperty):
            return t, None
        name = option.this.name.upper() if isinstance(option, exp.Property) and option.this else ""
        actions = {
            "AUTO_INCREMENT": ("auto_increment_base", ActionType.REBASE_AUTO_ID),
            "AUTO_RANDOM_BASE": ("auto_random_base", ActionType.REBASE_AUTO_RANDOM_BASE),
            "AUTO_ID_CACHE": ("auto_id_cache", ActionType.MODIFY_TABLE_AUTO_ID_CACHE),
            "SHARD_ROW_ID_BITS": ("shard_row_id_bits", ActionType.SHARD_ROW_ID),
        }
        if name in actions:
            attr, action_type = actions[name]
            return t.evolve(**{attr: int_literal(option.args.get("value"))}), action_type
        if name in ("CACHE", "NOCACHE"):
            return (
                t,
                ActionType.ALTER_CACHE_TABLE
                if name == "CACHE"
                else ActionType.ALTER_NO_CACHE_TABLE,
            )
        if name == "ATTRIBUTES":
            return t, ActionType.ALTER_TABLE_ATTRIBUTES
        # placement, TTL_ENABLE and other options TiCDC does not replicate
        return t, None

    def _convert_charset(self, option: exp.Expr) -> TableInfo:
        """CONVERT TO CHARACTER SET: the table and every non-binary string column change."""
        charset = option.this.name.lower()
        charset = "utf8" if charset == "utf8mb3" else charset
        collate = option.args.get("collate")
        collation = collate.name.lower() if collate else DEFAULT_COLLATION_OF.get(charset)
        if collation is None:
            raise SQLError(f"Unknown character set: '{charset}'", code=1115)
        if charset_of_collation(collation) not in (charset, None):
            raise SQLError(
                f"COLLATION '{collation}' is not valid for CHARACTER SET '{charset}'", code=1253
            )
        columns = tuple(
            replace(c, charset=charset, collation=collation) if c.charset != BINARY_CHARSET else c
            for c in self.table.columns
        )
        return self.table.evolve(charset=charset, collation=collation, columns=columns)

    def _add_column(self, cdef: exp.ColumnDef) -> TableInfo:
        t = self.table
        if t.column(cdef.name):
            raise SQLError(f"Duplicate column name '{cdef.name}'", code=1060)
        column, keys = build_column(
            cdef,
            t.max_column_id + 1,
            len(t.columns),
            t.charset,
            t.collation,
            self.catalog.sql_mode,
        )
        columns = list(t.columns)
        columns.insert(self._position(cdef, len(columns), columns), column)
        info = _reindex(t, columns).evolve(max_column_id=column.id)
        return _add_column_keys(info, column.name, keys, altering=True)

    def _drop(self, action: exp.Drop) -> tuple[TableInfo, ActionType]:
        t = self.table
        kind = (action.kind or "COLUMN").upper()
        if kind == "COLUMN":
            name = drop_target(action).name
            col = t.column(name)
            if col is None:
                if action.args.get("exists"):
                    return t, ActionType.DROP_COLUMN
                raise SQLError(f"Can't DROP '{name}'; check that column/key exists", code=1091)
            if len(t.columns) == 1:
                raise SQLError(
                    "You can't delete all columns with ALTER TABLE; use DROP TABLE instead",
                    code=1090,
                )
            info = t
            for ix in [
                ix for ix in t.indices if any(c.name.lower() == name.lower() for c in ix.columns)
            ]:
                info = TableBuilder.drop_index(info, ix.name, False)
            columns = [c for c in info.columns if c.name.lower() != name.lower()]
            return _reindex(info, columns).evolve(
                pk_is_handle=info.pk_is_handle and not col.flag & TiDBFlag.PRI_KEY
            ), ActionType.DROP_COLUMN
        index_name = drop_target(action).name if kind in ("INDEX", "KEY") else "PRIMARY"
        if kind in ("INDEX", "KEY") and index_name.lower() != "primary":
            return TableBuilder.drop_index(
                t, index_name, bool(action.args.get("exists"))
            ), ActionType.DROP_INDEX
        if kind in ("INDEX", "KEY", "PRIMARY KEY") or (action.this is None and kind == "PRIMARY"):
            check_pk_droppable(t)
            return TableBuilder.drop_index(t, "PRIMARY", False), ActionType.DROP_PRIMARY_KEY
        if kind == "FOREIGN KEY":  # its index stays, as in TiDB
            name = drop_target(action).name
            kept = tuple(fk for fk in t.foreign_keys if fk.name.lower() != name.lower())
            if len(kept) == len(t.foreign_keys):
                message = f"Can't DROP '{name}'; check that column/key exists"
                raise SQLError(message, code=1091)
            return t.evolve(foreign_keys=kept), ActionType.DROP_FOREIGN_KEY
        raise SQLError(f"unsupported ALTER TABLE DROP {kind}")

    def _alter_column(self, action: exp.AlterColumn) -> TableInfo:
        t = self.table
        col = t.column(action.this.name)
        if col is None:
            raise SQLError(f"Unknown column '{action.this.name}' in '{t.name}'", code=1054)
        if action.args.get("drop"):
            new = replace(col, default=None, flag=col.flag | TiDBFlag.NO_DEFAULT_VALUE)
        elif action.args.get("default") is not None:
            new = replace(col, default=column_default(action.args["default"]))
            check_default(new, self.catalog.sql_mode)
        else:
            raise SQLError(f"unsupported ALTER COLUMN: {action.sql(dialect=d.TiDB)}")
        return t.evolve(columns=tuple(new if c is col else c for c in t.columns))

    def _to_rename(
        self, find: Callable[[str], _Named | None], kind: str, old: str, new: str
    ) -> _Named:
        """What RENAME COLUMN/INDEX names: found under `old`, and `new` free (or `old` itself
        in other letter case)."""
        missing_code, missing, taken_code, taken = _RENAME_ERRORS[kind]
        names = {"old": old, "new": new, "table": self.table.name}
        found = find(old)
        if found is None:
            raise SQLError(missing.format(**names), code=missing_code)
        if find(new) and new.lower() != old.lower():
            raise SQLError(taken.format(**names), code=taken_code)
        return found

    def _rename_index(self, old: str, new: str) -> TableInfo:
        t = self.table
        index = self._to_rename(t.index, "index", old, new)
        return t.evolve(
            indices=tuple(replace(ix, name=new) if ix is index else ix for ix in t.indices)
        )

    def _modify_column(self, action: exp.ModifyColumn) -> TableInfo:
        """MODIFY/CHANGE COLUMN: a new definition keeping the column id and key flags."""
        t = self.table
        cdef = action.this
        old_name = action.args["rename_from"].name if action.args.get("rename_from") else cdef.name
        old = t.column(old_name)
        if old is None:
            raise SQLError(f"Unknown column '{old_name}' in '{t.name}'", code=1054)
        if cdef.name.lower() != old_name.lower() and t.column(cdef.name):
            raise SQLError(f"Duplicate column name '{cdef.name}'", code=1060)
        if (
            old.flag & TiDBFlag.PRI_KEY
            and (t.pk_is_handle or t.is_common_handle)
            and cdef.args["kind"].this
            not in (
                exp.DType.INT,
                exp.DType.BIGINT,
                exp.DType.UINT,
                exp.DType.UBIGINT,
                exp.DType.SMALLINT,
                exp.DType.TINYINT,
                exp.DType.MEDIUMINT,
            )
            and t.pk_is_handle
        ):
            raise SQLError("Unsupported modify column: this column has primary key flag", code=8200)
        new, keys = build_column(
            cdef, old.id, old.offset, t.charset, t.collation, self.catalog.sql_mode
        )
        key_flags = old.flag & (TiDBFlag.PRI_KEY | TiDBFlag.UNIQUE_KEY | TiDBFlag.MULTIPLE_KEY)
        if old.flag & TiDBFlag.PRI_KEY:
            key_flags |= TiDBFlag.NOT_NULL
        new = replace(new, flag=new.flag | key_flags)
        columns = [c for c in t.columns if c is not old]
        columns.insert(self._position(cdef, old.offset, columns), new)
        info = self._rename_column(old_name, cdef.name) if old_name != cdef.name else t
        info = _reindex(
            info.evolve(
                columns=tuple(
                    c if c.name.lower() != old.name.lower() else new for c in info.columns
                )
            ),
            columns,
        )
        return _add_column_keys(info, new.name, keys, altering=False)

    def _position(self, cdef: exp.ColumnDef, default: int, columns: list[ColumnInfo]) -> int:
        position = cdef.args.get("position")
        if position is None:
            return default
        if str(position.args.get("position", "")).upper() == "FIRST":
            return 0
        after = position.this.name if position.this is not None else None
        for i, c in enumerate(columns):
            if after and c.name.lower() == after.lower():
                return i + 1
        raise SQLError(f"Unknown column '{after}' in '{self.table.name}'", code=1054)

    def _rename_column(self, old: str, new: str) -> TableInfo:
        t = self.table
        col = self._to_rename(t.column, "column", old, new)
        columns = tuple(replace(c, name=new) if c is col else c for c in t.columns)
        indices = tuple(
            replace(
                ix,
                columns=tuple(
                    replace(ic, name=new) if ic.offset == col.offset else ic for ic in ix.columns
                ),
            )
            for ix in t.indices
        )
        return t.evolve(columns=columns, indices=indices)

    def _partition_action(self, action: d.PartitionNames) -> tuple[TableInfo, ActionType | None]:
        t = self.table
        verb = action.text("action")
        if t.partition is None:
            raise SQLError(
                "Partition management on a not partitioned table is not possible", code=1505
            )
        part = t.partition
        names = [n.name for n in action.expressions]
        for name in names:
            if part.by_name(name) is None:
                raise SQLError(f"Unknown partition '{name}' in table '{t.name}'", code=1735)
        if verb == "ADD":
            if action.args.get("count"):
                start = len(part.definitions)
                new = [
                    PartitionDefinition(self.catalog.alloc_id(), f"p{start + i}")
                    for i in range(int_literal(action.args["count"]))
                ]
            else:
                new = [
                    build_partition_def(self.catalog, p)
                    for p in action.args.get("definitions") or []
                ]
            check_unique_partition_names([*part.definitions, *new])
            return t.evolve(
                partition=replace(part, definitions=(*part.definitions, *new))
            ), ActionType.ADD_TABLE_PARTITION
        if verb == "DROP":
            keep = tuple(
                p for p in part.definitions if p.name.lower() not in {n.lower() for n in names}
            )
            if not keep:
                raise SQLError("Cannot remove all partitions, use DROP TABLE instead", code=1508)
            return t.evolve(
                partition=replace(part, definitions=keep)
            ), ActionType.DROP_TABLE_PARTITION
        if verb == "TRUNCATE":
            targets = (
                {p.name.lower() for p in part.definitions}
                if action.args.get("all")
                else {n.lower() for n in names}
            )
            renewed = tuple(
                replace(p, id=self.catalog.alloc_id()) if p.name.lower() in targets else p
                for p in part.definitions
            )
            return t.evolve(
                partition=replace(part, definitions=renewed)
            ), ActionType.TRUNCATE_TABLE_PARTITION
        if verb == "REORGANIZE":
            new = [
                build_partition_def(self.catalog, p) for p in action.args.get("definitions") or []
            ]
            lowered = {n.lower() for n in names}
            merged: list[PartitionDefinition] = []
            for p in part.definitions:
                if p.name.lower() in lowered:
                    if new:
                        merged += new
                        new = []
                else:
                    merged.append(p)
            check_unique_partition_names(merged)
            return t.evolve(
                partition=replace(part, definitions=tuple(merged))
            ), ActionType.REORGANIZE_PARTITION
        if verb == "EXCHANGE":
            schema, name = self.catalog.table_ref(action.args["table"])
            other = self.catalog.table(schema, name)
            if other.is_partitioned:
                raise SQLError("Table to exchange with partition is partitioned", code=1732)
            target = part.by_name(names[0])
            assert target is not None
            defs = tuple(replace(p, id=other.id) if p is target else p for p in part.definitions)
            self.catalog.schemas[other.schema.lower()].tables[other.name.lower()] = other.evolve(
                id=target.id
            )
            return t.evolve(
                partition=replace(part, definitions=defs)
            ), ActionType.EXCHANGE_TABLE_PARTITION
        if verb == "COALESCE":
            count = int_literal(action.args["count"])
            if count >= len(part.definitions):
                raise SQLError("Cannot remove all partitions, use DROP TABLE instead", code=1508)
            defs = part.definitions[: len(part.definitions) - count]
            return t.evolve(
                partition=replace(part, definitions=defs)
            ), ActionType.REORGANIZE_PARTITION
        return t, None  # ANALYZE/CHECK/OPTIMIZE/REBUILD/REPAIR PARTITION: no schema change


def drop_target(node: exp.Drop) -> exp.Expr:
    """The object a DROP names: sqlglot keeps it in `tables` (or `this` for some kinds)."""
    tables = node.args.get("tables") or []
    target = tables[0] if tables else node.this
    if not isinstance(target, exp.Expr):
        raise SQLError("DROP without a name")
    return target


def _reindex(table: TableInfo, columns: list[ColumnInfo]) -> TableInfo:
    """Renumber column offsets after columns moved, fixing index column offsets too."""
    by_name = {c.name.lower(): i for i, c in enumerate(columns)}
    new_columns = tuple(replace(c, offset=i) for i, c in enumerate(columns))
    indices = tuple(
        replace(
            ix, columns=tuple(replace(ic, offset=by_name[ic.name.lower()]) for ic in ix.columns)
        )
        for ix in table.indices
    )
    return table.evolve(columns=new_columns, indices=indices)


def _add_column_keys(
    info: TableInfo, name: str, keys: Sequence[exp.Expr], *, altering: bool
) -> TableInfo:
    """The PRIMARY KEY / UNIQUE of a column definition, as indexes on that column."""
    for key in keys:
        primary = isinstance(key, exp.PrimaryKeyColumnConstraint)
        info = TableBuilder.add_index(
            info,
            "PRIMARY" if primary else name,
            [exp.column(name)],
            unique=True,
            primary=primary,
            altering=altering,
        )
    return info
