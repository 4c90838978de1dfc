"""CREATE TABLE -> a TableInfo, as TiDB's `buildTableInfo` makes one (`pkg/ddl/create_table.go`):
columns in order, then table-level constraints, then the keys of column definitions; indexes and
their flags and clustering (`index.go`, `ShouldBuildClusteredIndex`), hidden columns of expression
indexes, foreign keys (`foreign_key.go`), table options, and partition definitions with their ids
(`partition.go`). ALTER TABLE (alter.py) reuses the index and partition builders.

`DDLCatalog` is the catalog as building and altering a table reach it; catalog.py's `Catalog`
is the one that satisfies it, so that this module and alter.py import nothing above them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.columns import (
    build_column,
    charset_options,
    int_literal,
    restore,
)
from ticdc_sim.generator.sql.values import SqlMode
from ticdc_sim.model.mysql import INTEGER_TYPES, MySQLType, TiDBFlag
from ticdc_sim.model.table import (
    ColumnInfo,
    ForeignKeyInfo,
    IndexColumn,
    IndexInfo,
    PartitionDefinition,
    PartitionInfo,
    TableInfo,
)

M = MySQLType


@dataclass
class SchemaInfo:
    """A database as TiDB's `model.DBInfo` holds it: its id, defaults and tables by name."""

    id: int
    name: str
    charset: str = "utf8mb4"
    collation: str = "utf8mb4_bin"
    tables: dict[str, TableInfo] = field(default_factory=dict)


class DDLCatalog(Protocol):
    """What building and altering a table read and change of the catalog: global ids, the
    settings of the session applying the DDL, the lookups, and (RENAME, EXCHANGE PARTITION)
    the other tables of a schema."""

    schemas: dict[str, SchemaInfo]
    sql_mode: SqlMode
    clustered_index: str

    def alloc_id(self) -> int: ...

    def table_ref(self, node: exp.Expr) -> tuple[str, str]: ...

    def schema(self, name: str | None) -> SchemaInfo: ...

    def table(self, schema: str | None, name: str) -> TableInfo: ...

    def find_table(self, schema: str | None, name: str) -> TableInfo | None: ...


class TableBuilder:
    """Builds a TableInfo from CREATE TABLE the way TiDB's `buildTableInfo` does."""

    def __init__(
        self, catalog: DDLCatalog, schema: SchemaInfo, name: str, *, altering: bool = False
    ) -> None:
        self.catalog = catalog
        self.schema = schema
        self.name = name
        self.altering = altering

    def build(self, node: exp.Create) -> TableInfo:
        props = node.args.get("properties")
        charset, collation = charset_options(props, self.schema.charset, None)
        if charset == self.schema.charset and not any(
            isinstance(p, exp.CollateProperty | exp.CharacterSetProperty)
            for p in (props.expressions if props else [])
        ):
            collation = self.schema.collation
        schema = node.this
        if not isinstance(schema, exp.Schema):
            raise SQLError("CREATE TABLE needs a column list or LIKE")
        column_defs = [e for e in schema.expressions if isinstance(e, exp.ColumnDef)]
        if not column_defs:
            raise SQLError("A table must have at least 1 column", code=1113)
        seen: set[str] = set()
        columns: list[ColumnInfo] = []
        column_constraints: list[tuple[str, exp.Expr]] = []
        for offset, cdef in enumerate(column_defs):
            if cdef.name.lower() in seen:
                raise SQLError(f"Duplicate column name '{cdef.name}'", code=1060)
            seen.add(cdef.name.lower())
            col, keys = build_column(
                cdef, offset + 1, offset, charset, collation, self.catalog.sql_mode
            )
            columns.append(col)
            column_constraints += [(col.name, k) for k in keys]
        table = TableInfo(
            id=0,
            schema=self.schema.name,
            name=self.name,
            columns=tuple(columns),
            charset=charset,
            collation=collation,
            max_column_id=len(columns),
        )
        # TiDB appends the constraints of column definitions after the table-level ones.
        table_constraints = [e for e in schema.expressions if not isinstance(e, exp.ColumnDef)]
        for constraint in table_constraints:
            table = self._apply_table_constraint(table, constraint)
        for col_name, kind in column_constraints:
            ref = [exp.column(col_name)]
            if isinstance(kind, exp.PrimaryKeyColumnConstraint):
                table = self.add_index(
                    table,
                    "PRIMARY",
                    ref,
                    primary=True,
                    unique=True,
                    options=kind.args.get("options"),
                    clustered_mode=self.catalog.clustered_index,
                )
            else:
                table = self.add_index(table, col_name, ref, unique=True, primary=False)
        table = _apply_table_options(table, props)
        table = table.evolve(id=self.catalog.alloc_id())
        partition = props.find(d.PartitionBy) if props else None
        if partition is not None:
            table = table.evolve(partition=build_partition(self.catalog, table, partition, []))
        return table

    def _apply_table_constraint(self, table: TableInfo, constraint: exp.Expr) -> TableInfo:
        name = None
        if isinstance(constraint, exp.Constraint):
            name = constraint.name
            inner = constraint.expressions
            if not inner:
                return table
            constraint = inner[0]
        if isinstance(constraint, exp.PrimaryKey):
            return self.add_index(
                table,
                "PRIMARY",
                constraint.expressions,
                primary=True,
                unique=True,
                options=constraint.args.get("options"),
                altering=self.altering,
                clustered_mode=self.catalog.clustered_index,
            )
        if isinstance(constraint, exp.UniqueColumnConstraint):
            target = constraint.this
            cols = target.expressions if isinstance(target, exp.Schema) else []
            index_name = target.name if isinstance(target, exp.Schema) and target.this else name
            return self.add_index(table, index_name, cols, unique=True, primary=False)
        if isinstance(constraint, exp.IndexColumnConstraint):
            kind = constraint.text("kind").upper()
            return self.add_index(
                table,
                constraint.name or name,
                constraint.expressions,
                unique=kind == "UNIQUE",
                primary=False,
                kind=kind if kind in ("FULLTEXT", "SPATIAL") else "",
                options=constraint.args.get("options"),
            )
        if isinstance(constraint, exp.ForeignKey):
            return self.add_foreign_key(table, name, constraint)
        # CHECK constraints do not shape what TiCDC emits.
        return table

    def add_foreign_key(
        self, table: TableInfo, name: str | None, constraint: exp.ForeignKey
    ) -> TableInfo:
        """A foreign key, kept as TiDB keeps it (`pkg/ddl/foreign_key.go`): named `fk_<n>`
        when unnamed, with an index of its own name on its columns unless an index already
        begins with them. Not enforced here: the changefeeds see what the statements write."""
        columns = tuple(c.name for c in constraint.expressions)
        for column in columns:
            if table.column(column) is None:
                raise SQLError(f"Key column '{column}' doesn't exist in table", code=1072)
        reference = constraint.args["reference"]
        schema = reference.this
        target = schema.this if isinstance(schema, exp.Schema) else schema
        ref_columns = tuple(
            c.name for c in (schema.expressions if isinstance(schema, exp.Schema) else [])
        )
        if len(ref_columns) != len(columns):
            message = (
                f"Incorrect foreign key definition for '{name or 'foreign key without name'}':"
                " Key reference and table reference don't match"
            )
            raise SQLError(message, code=1239)
        taken = {fk.name.lower() for fk in table.foreign_keys}
        if name is None:
            number = len(table.foreign_keys) + 1
            while f"fk_{number}" in taken:
                number += 1
            name = f"fk_{number}"
        elif name.lower() in taken:
            raise SQLError(f"Duplicate foreign key constraint name '{name}'", code=1826)
        actions = {"DELETE": "", "UPDATE": ""}
        for option in reference.args.get("options") or []:
            words = str(option).upper().split()
            if len(words) > 2 and words[0] == "ON" and words[1] in actions:
                actions[words[1]] = " ".join(words[2:])
        fk = ForeignKeyInfo(
            name,
            columns,
            target.text("db") or table.schema,
            target.name,
            ref_columns,
            on_delete=actions["DELETE"],
            on_update=actions["UPDATE"],
        )
        wanted = [c.lower() for c in columns]
        leading = [[c.name.lower() for c in ix.columns[: len(wanted)]] for ix in table.indices]
        handle = table.pk_handle_column if table.pk_is_handle else None
        if wanted not in leading and not (handle is not None and wanted == [handle.name.lower()]):
            parts: list[exp.Expr] = [exp.column(c) for c in columns]
            table = self.add_index(table, name, parts, unique=False, primary=False)
        return table.evolve(foreign_keys=(*table.foreign_keys, fk))

    @staticmethod
    def add_index(
        table: TableInfo,
        name: str | None,
        parts: Sequence[exp.Expr],
        *,
        unique: bool,
        primary: bool,
        kind: str = "",
        options: list[Any] | None = None,
        altering: bool = False,
        clustered_mode: str = "ON",
    ) -> TableInfo:
        index_columns = []
        for number, part in enumerate(parts):
            length = -1
            node = part.this if isinstance(part, exp.Ordered) else part
            if isinstance(node, exp.ColumnPrefix):
                length = int_literal(node.expression)
                node = node.this
            if not isinstance(node, exp.Column | exp.Identifier):
                # an expression index part: TiDB indexes a hidden virtual column `_V$_<idx>_<n>`
                table = _add_hidden_column(
                    table, f"_V$_{name or 'expression_index'}_{number}", node
                )
                node = exp.column(table.columns[-1].name)
            col_name = node.name
            col = table.column(col_name)
            if col is None:
                raise SQLError(f"Key column '{col_name}' doesn't exist in table", code=1072)
            index_columns.append(IndexColumn(col.name, col.offset, length))
        columns = list(table.columns)
        if not index_columns:
            raise SQLError("an index needs at least one column")
        if primary and table.primary_index is not None or primary and table.pk_is_handle:
            raise SQLError("Multiple primary key defined", code=1068)
        if not name:  # MySQL names an unnamed index after its first column, then _2, _3 ...
            base = index_columns[0].name
            name, n = base, 2
            while table.index(name):
                name, n = f"{base}_{n}", n + 1
        elif not primary and table.index(name):
            raise SQLError(f"Duplicate key name '{name}'", code=1061)
        clustered = _clustered_option(options)
        if primary and altering:
            # TiDB cannot re-cluster existing rows: a PK added later is always nonclustered.
            if clustered:
                raise SQLError(
                    "Adding clustered primary key is not supported. "
                    "Please consider adding NONCLUSTERED primary key instead",
                    code=8200,
                )
            clustered = False
        if primary:
            for ic in index_columns:
                col = columns[ic.offset]
                columns[ic.offset] = replace(
                    col,
                    flag=(col.flag | TiDBFlag.PRI_KEY | TiDBFlag.NOT_NULL) & ~TiDBFlag.UNIQUE_KEY,
                )
            first = columns[index_columns[0].offset]
            single_int = len(index_columns) == 1 and first.tp in INTEGER_TYPES
            if clustered is None:  # TiDB `ddl.ShouldBuildClusteredIndex`
                clustered = clustered_mode == "ON" or (clustered_mode == "INT_ONLY" and single_int)
            if single_int and clustered:  # the integer column is the row handle
                return table.evolve(columns=tuple(columns), pk_is_handle=True)
        else:
            first = columns[index_columns[0].offset]
            if unique and len(index_columns) == 1:
                columns[first.offset] = replace(first, flag=first.flag | TiDBFlag.UNIQUE_KEY)
            elif not first.flag & (TiDBFlag.PRI_KEY | TiDBFlag.UNIQUE_KEY):
                columns[first.offset] = replace(first, flag=first.flag | TiDBFlag.MULTIPLE_KEY)
        comment, invisible = _index_options(options)
        index = IndexInfo(
            id=table.max_index_id + 1,
            name=name,
            columns=tuple(index_columns),
            primary=primary,
            unique=unique or primary,
            kind=kind,
            invisible=invisible,
            comment=comment,
        )
        common_handle = table.is_common_handle or (primary and clustered is True)
        return table.evolve(
            columns=tuple(columns),
            indices=(*table.indices, index),
            max_index_id=index.id,
            is_common_handle=common_handle,
        )

    @staticmethod
    def drop_index(table: TableInfo, name: str, if_exists: bool) -> TableInfo:
        index = table.index(name)
        if index is None:
            if if_exists:
                return table
            raise SQLError(f"Can't DROP '{name}'; check that column/key exists", code=1091)
        indices = tuple(ix for ix in table.indices if ix is not index)
        columns = list(table.columns)
        for ic in index.columns:
            col = columns[ic.offset]
            drop = (
                TiDBFlag.UNIQUE_KEY
                | TiDBFlag.MULTIPLE_KEY
                | (TiDBFlag.PRI_KEY if index.primary else 0)
            )
            keep = TiDBFlag.NONE
            for other in indices:
                if other.columns[0].offset == ic.offset:
                    keep |= (
                        TiDBFlag.UNIQUE_KEY
                        if other.unique and len(other.columns) == 1
                        else TiDBFlag.MULTIPLE_KEY
                    )
            columns[ic.offset] = replace(col, flag=(col.flag & ~drop) | keep)
        return table.evolve(
            columns=tuple(columns),
            indices=indices,
            is_common_handle=table.is_common_handle and not index.primary,
        )


def _add_hidden_column(table: TableInfo, name: str, expression: exp.Expr) -> TableInfo:
    """A hidden virtual column for an expression index part.

    TiDB infers its type from the expression; here it is text (LONGTEXT), which holds any
    value. It is never emitted (`visible_columns`), so only uniqueness sees it.
    """
    inner = expression.this if isinstance(expression, exp.Paren) else expression
    column = ColumnInfo(
        id=table.max_column_id + 1,
        name=name,
        offset=len(table.columns),
        tp=M.LONG_BLOB,
        flen=4294967295,
        decimal=0,
        flag=TiDBFlag.BLOB,
        charset=table.charset,
        collation=table.collation,
        generated_expr=restore(inner),
        hidden=True,
    )
    return table.evolve(columns=(*table.columns, column), max_column_id=column.id)


def check_pk_droppable(table: TableInfo) -> None:
    if table.pk_is_handle or table.is_common_handle:
        raise SQLError(
            "Unsupported drop primary key when the table is using clustered index", code=8200
        )


def _index_options(options: list[Any] | None) -> tuple[str, bool]:
    """An index's COMMENT and whether it is INVISIBLE, in either form sqlglot gives them
    (`IndexConstraintOption` in a table definition, `COMMENT`/`INVISIBLE` in CREATE INDEX)."""
    comment, invisible = "", False
    for opt in options or []:
        if isinstance(opt, exp.IndexConstraintOption):
            comment = opt.args["comment"].name if opt.args.get("comment") else comment
            invisible = opt.args.get("visible") is False or invisible
        elif isinstance(opt, exp.Property) and opt.name.upper() == "COMMENT":
            comment = opt.args["value"].name
        elif _word(opt) in ("VISIBLE", "INVISIBLE"):
            invisible = _word(opt) == "INVISIBLE"
    return comment, invisible


def _word(option: Any) -> str:
    """A bare-word index option (CLUSTERED, INVISIBLE ...), upper-cased; "" for the others
    (a COMMENT, a partial index's WHERE ...)."""
    if isinstance(option, str):
        return option.upper()
    return option.name.upper() if isinstance(option, exp.Var) else ""


def _clustered_option(options: list[Any] | None) -> bool | None:
    for opt in options or []:
        word = _word(opt)
        if word == "CLUSTERED":
            return True
        if word == "NONCLUSTERED":
            return False
    return None


def _apply_table_options(table: TableInfo, props: exp.Expr | None) -> TableInfo:
    changes: dict[str, Any] = {}
    for p in props.expressions if props else []:
        if isinstance(p, exp.SchemaCommentProperty):
            changes["comment"] = p.this.name
        elif isinstance(p, exp.AutoIncrementProperty):
            changes["auto_increment_base"] = int_literal(p.this)
        elif isinstance(p, exp.Property) and not isinstance(p, d.PartitionBy | d.TTLProperty):
            key = p.this.name.upper()
            attr = {
                "AUTO_INCREMENT": "auto_increment_base",
                "AUTO_RANDOM_BASE": "auto_random_base",
                "AUTO_ID_CACHE": "auto_id_cache",
                "SHARD_ROW_ID_BITS": "shard_row_id_bits",
            }.get(key)
            if attr:
                changes[attr] = int_literal(p.args.get("value"))
    return table.evolve(**changes) if changes else table


def build_partition(
    catalog: DDLCatalog, table: TableInfo, node: exp.Expr, existing: list[PartitionDefinition]
) -> PartitionInfo:
    kind = node.text("kind")
    ptype = kind + (" COLUMNS" if node.args.get("columns") else "")
    columns = tuple(c.name for c in node.expressions)
    for col in columns:
        if table.column(col) is None:
            raise SQLError(f"Unknown column '{col}' in 'partition function'", code=1054)
    expr = restore(node.this) if node.this is not None else ""
    defs_nodes = node.args.get("definitions") or []
    if defs_nodes:
        definitions = [build_partition_def(catalog, p) for p in defs_nodes]
    elif kind in ("HASH", "KEY"):
        count = int_literal(node.args.get("partitions")) if node.args.get("partitions") else 1
        definitions = [PartitionDefinition(catalog.alloc_id(), f"p{i}") for i in range(count)]
    else:
        raise SQLError(f"For {kind} partitions each partition must be defined", code=1492)
    check_unique_partition_names([*existing, *definitions])
    return PartitionInfo(type=ptype, expr=expr, columns=columns, definitions=tuple(definitions))  # type: ignore[arg-type]


def build_partition_def(catalog: DDLCatalog, node: exp.Expr) -> PartitionDefinition:
    kind = node.text("kind")
    values = tuple(restore(v) for v in node.expressions)
    less_than = values if kind == "LESS THAN" else ()
    in_values = tuple((v,) for v in values) if kind == "IN" else ()
    comment = ""
    for option in node.args.get("options") or []:
        if isinstance(option, exp.Property) and option.this.name.upper() == "COMMENT":
            comment = option.args["value"].name
    return PartitionDefinition(catalog.alloc_id(), node.name, less_than, in_values, comment)


def check_unique_partition_names(defs: list[PartitionDefinition]) -> None:
    seen: set[str] = set()
    for p in defs:
        if p.name.lower() in seen:
            raise SQLError(f"Duplicate partition name {p.name}", code=1517)
        seen.add(p.name.lower())
