"""DDL -> the catalog of schemas and tables, and the DDL events TiCDC would emit.

`Catalog.apply(statement)` validates a parsed DDL statement against the current catalog,
builds the new TableInfo the way TiDB's DDL does (`pkg/ddl`: column flags, default lengths,
index ids, global ids, schema versions) and returns one DDLEvent per table TiCDC reports.
Nothing changes when a statement fails.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.restore import TiDBRestoreGenerator
from ticdc_sim.generator.sql.values import (
    DEFAULT_SQL_MODE,
    SqlMode,
    binary_literal,
    column_converter,
    number_literal,
)
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent
from ticdc_sim.model.mysql import (
    BINARY_CHARSET,
    BLOB_TYPE_BY_MAX_LENGTH,
    DEFAULT_COLLATION_OF,
    DEFAULT_LENGTH_AND_DECIMAL,
    INTEGER_TYPES,
    SYSTEM_SCHEMAS,
    UNSPECIFIED_LENGTH,
    MySQLType,
    TiDBFlag,
    charset_of_collation,
)
from ticdc_sim.model.table import (
    ColumnDefault,
    ColumnInfo,
    ForeignKeyInfo,
    IndexColumn,
    IndexInfo,
    PartitionDefinition,
    PartitionInfo,
    SequenceInfo,
    TableInfo,
)
from ticdc_sim.model.tso import TSOClock

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
DEFAULT_SCHEMA_ID = 2  # `test` in a freshly bootstrapped TiDB
FIRST_USER_ID = 100


def restore(node: exp.Expr) -> str:
    """TiDB's restored text of a node (what TiCDC puts in a DDL message)."""
    # not `generate()`: it strips, and TiDB's restore keeps a trailing separator space
    return _RESTORE.sql(node.copy())


def _lit(node: exp.Expr | None) -> int:
    if not isinstance(node, exp.Literal) or node.is_string:
        raise SQLError(f"expected a number, found {node.sql() if node else 'nothing'}")
    return int(node.this)


@dataclass
class SchemaInfo:
    id: int
    name: str
    charset: str = "utf8mb4"
    collation: str = "utf8mb4_bin"
    tables: dict[str, TableInfo] = field(default_factory=dict)


@dataclass
class Catalog:
    """Schemas and tables as TiDB holds them, evolved by DDL; ids and versions as TiDB's."""

    clock: TSOClock = field(default_factory=TSOClock)
    schemas: dict[str, SchemaInfo] = field(default_factory=dict)
    next_global_id: int = FIRST_USER_ID
    schema_version: int = 0
    current_schema: str | None = None
    dropped: list[TableInfo] = field(default_factory=list)  # for RECOVER TABLE, newest last
    # the settings of the session applying DDL (the engine sets them before each): its
    # sql_mode, for checking literal defaults, and tidb_enable_clustered_index (ON, TiDB's
    # default, INT_ONLY or OFF)
    sql_mode: SqlMode = DEFAULT_SQL_MODE
    clustered_index: str = "ON"

    def __post_init__(self) -> None:
        if not self.schemas:
            self.schemas["test"] = SchemaInfo(DEFAULT_SCHEMA_ID, "test")

    # -- lookups -----------------------------------------------------------------------------

    def schema(self, name: str | None) -> SchemaInfo:
        if not name:
            raise SQLError("No database selected", code=1046)
        found = self.schemas.get(name.lower())
        if found is None:
            why = _NOT_SIMULATED if name.lower() in SYSTEM_SCHEMAS else ""
            raise SQLError(f"Unknown database '{name}'{why}", code=1049)
        return found

    def table(self, schema: str | None, name: str) -> TableInfo:
        found = self.schema(schema or self.current_schema).tables.get(name.lower())
        if found is None:
            raise SQLError(
                f"Table '{schema or self.current_schema}.{name}' doesn't exist", code=1146
            )
        return found

    def find_table(self, schema: str | None, name: str) -> TableInfo | None:
        s = self.schemas.get((schema or self.current_schema or "").lower())
        return s.tables.get(name.lower()) if s else None

    @staticmethod
    def _exists(schema: SchemaInfo, name: str, *, if_not_exists: bool) -> bool:
        """True when CREATE ... IF NOT EXISTS finds `name` taken; MySQL 1050 without it."""
        if name.lower() not in schema.tables:
            return False
        if if_not_exists:
            return True
        raise SQLError(f"Table '{name}' already exists", code=1050)

    def _alloc_id(self) -> int:
        self.next_global_id += 1
        return self.next_global_id - 1

    def _table_ref(self, node: exp.Expr) -> tuple[str, str]:
        if not isinstance(node, exp.Table):
            node = node.find(exp.Table) or node
        schema = node.text("db") or self.current_schema
        if not schema:
            raise SQLError("No database selected", code=1046)
        return schema, node.name

    # -- applying DDL ------------------------------------------------------------------------

    def apply(self, node: exp.Expr, source: str = "") -> list[DDLEvent]:
        """Apply one DDL statement; returns the DDL events TiCDC would emit (maybe none).

        Raises SQLError (catalog unchanged) for DDL TiDB would reject and for kinds not modelled.
        """
        handler = self._handler(node)
        if handler is None:
            raise SQLError(f"unsupported DDL statement: {type(node).__name__}", statement=source)
        snapshot = (
            {k: replace(v, tables=dict(v.tables)) for k, v in self.schemas.items()},
            self.next_global_id,
            self.schema_version,
            list(self.dropped),
        )
        try:
            return handler(node, source)
        except SQLError:
            self.schemas, self.next_global_id, self.schema_version, self.dropped = snapshot
            raise

    def _handler(self, node: exp.Expr) -> Callable[[Any, str], list[DDLEvent]] | None:
        if isinstance(node, exp.Create):
            return {
                "DATABASE": self._create_schema,
                "SCHEMA": self._create_schema,
                "TABLE": self._create_table,
                "INDEX": self._create_index,
                "VIEW": self._create_view,
                "SEQUENCE": self._create_sequence,
            }.get(node.kind or "")
        if isinstance(node, exp.Drop):
            return {
                "DATABASE": self._drop_schema,
                "SCHEMA": self._drop_schema,
                "TABLE": self._drop_table,
                "INDEX": self._drop_index,
                "VIEW": self._drop_view,
                "SEQUENCE": self._drop_sequence,
            }.get(node.kind or "")
        table_handlers: dict[type, Callable[[Any, str], list[DDLEvent]]] = {
            exp.Alter: self._alter_table,
            d.RenameTables: self._rename_tables,
            exp.TruncateTable: self._truncate_table,
            d.AlterDatabase: self._alter_schema,
            exp.Use: self._use,
            d.RecoverTable: self._recover_table,
            d.Flashback: self._flashback,
        }
        return table_handlers.get(type(node))

    def _event(
        self,
        action: ActionType,
        query: str,
        schema: str,
        table: str,
        after: TableInfo | None,
        before: TableInfo | None,
        source: str,
    ) -> DDLEvent:
        if after is not None:
            check_limits(after)
        self.schema_version += 1
        start = self.clock.next()
        commit = self.clock.next()
        if after is not None:
            after = after.evolve(update_ts=commit)
            self.schemas[after.schema.lower()].tables[after.name.lower()] = after
        return DDLEvent(
            start_ts=start,
            commit_ts=commit,
            action=action,
            query=query,
            schema=schema,
            table=table,
            table_info=after,
            pre_table_info=before,
            schema_version=self.schema_version,
            source=source,
        )

    # -- schemas -----------------------------------------------------------------------------

    def _create_schema(self, node: exp.Create, source: str) -> list[DDLEvent]:
        name = node.this.name
        check_name("database", name)
        if name.lower() in self.schemas:
            if node.args.get("exists"):
                return []
            raise SQLError(f"Can't create database '{name}'; database exists", code=1007)
        charset, collation = _charset_options(node.args.get("properties"), "utf8mb4", None)
        self.schemas[name.lower()] = SchemaInfo(self._alloc_id(), name, charset, collation)
        exists = "IF NOT EXISTS " if node.args.get("exists") else ""
        query = f"CREATE DATABASE {exists}`{name}`" + _schema_options_sql(
            node.args.get("properties")
        )
        return [self._event(ActionType.CREATE_SCHEMA, query, name, "", None, None, source)]

    def _use(self, node: exp.Use, source: str) -> list[DDLEvent]:
        self.current_schema = self.schema(node.this.name).name
        return []

    def _drop_schema(self, node: exp.Drop, source: str) -> list[DDLEvent]:
        name = _drop_target(node).name
        if name.lower() not in self.schemas:
            if node.args.get("exists"):
                return []
            raise SQLError(f"Can't drop database '{name}'; database doesn't exist", code=1008)
        del self.schemas[name.lower()]
        if self.current_schema and self.current_schema.lower() == name.lower():
            self.current_schema = None
        exists = "IF EXISTS " if node.args.get("exists") else ""
        return [
            self._event(
                ActionType.DROP_SCHEMA,
                f"DROP DATABASE {exists}`{name}`",
                name,
                "",
                None,
                None,
                source,
            )
        ]

    def _alter_schema(self, node: d.AlterDatabase, source: str) -> list[DDLEvent]:
        schema = self.schema(node.this.name if node.this else self.current_schema)
        charset, collation = _charset_options(
            exp.Properties(expressions=node.args.get("options") or []), schema.charset, None
        )
        schema.charset, schema.collation = charset, collation
        opts = " ".join(
            f"CHARACTER SET = {o.this.name}"
            if isinstance(o, exp.CharacterSetProperty)
            else f"COLLATE = {o.this.name}"
            for o in node.args.get("options") or []
            if isinstance(o, exp.CharacterSetProperty | exp.CollateProperty)
        )
        query = f"ALTER DATABASE `{schema.name}` {opts}"
        return [
            self._event(
                ActionType.MODIFY_SCHEMA_CHARSET_AND_COLLATE,
                query,
                schema.name,
                "",
                None,
                None,
                source,
            )
        ]

    # -- tables ------------------------------------------------------------------------------

    def _create_table(self, node: exp.Create, source: str) -> list[DDLEvent]:
        if node.find(exp.TemporaryProperty) is not None:
            # TiDB keeps them out of TiKV's changelog (local) or of every change feed's rows
            # (global): the sessions and visibility rules they need are not simulated
            raise SQLError("temporary tables are not simulated", code=1105)
        schema_name, name = self._table_ref(node.this)
        schema = self.schema(schema_name)
        if self._exists(schema, name, if_not_exists=bool(node.args.get("exists"))):
            return []
        like = node.find(exp.LikeProperty)
        if like is not None:
            src_schema, src_name = self._table_ref(like.this)
            source_info = self.table(src_schema, src_name)
            info = self._copy_for_like(source_info, schema.name, name)
        else:
            info = TableBuilder(self, schema, name).build(node)
        return [
            self._event(
                ActionType.CREATE_TABLE, restore(node), schema.name, name, info, None, source
            )
        ]

    def _copy_for_like(self, src: TableInfo, schema: str, name: str) -> TableInfo:
        partition = src.partition
        if partition:
            partition = replace(
                partition,
                definitions=tuple(replace(p, id=0) for p in partition.definitions),
            )
        table_id = self._alloc_id()
        if partition:
            partition = replace(
                partition,
                definitions=tuple(replace(p, id=self._alloc_id()) for p in partition.definitions),
            )
        return src.evolve(id=table_id, schema=schema, name=name, partition=partition)

    def _create_view(self, node: exp.Create, source: str) -> list[DDLEvent]:
        schema_name, name = self._table_ref(node.this)
        schema = self.schema(schema_name)
        if not node.args.get("replace"):
            self._exists(schema, name, if_not_exists=False)
        select = node.expression
        info = TableInfo(
            id=self._alloc_id(),
            schema=schema.name,
            name=name,
            columns=(),
            is_view=True,
            view_select=restore(select) if select else "",
        )
        return [
            self._event(
                ActionType.CREATE_VIEW, restore(node), schema.name, name, info, None, source
            )
        ]

    def _recover_table(self, node: d.RecoverTable, source: str) -> list[DDLEvent]:
        """RECOVER TABLE t: the newest dropped table of that name returns, id and data intact."""
        if node.this is None:
            raise SQLError("RECOVER TABLE BY JOB needs TiDB's DDL job ids, not modelled", code=1105)
        schema_name, name = self._table_ref(node.this)
        return self._bring_back(schema_name, name, name, "RECOVER TABLE", source)

    def _flashback(self, node: d.Flashback, source: str) -> list[DDLEvent]:
        """FLASHBACK TABLE t [TO t2]: the newest dropped or truncated table of that name
        returns under its new name, id and data intact (TiDB `ActionRecoverTable`)."""
        if node.args["kind"] != "TABLE":
            raise SQLError("FLASHBACK DATABASE is not supported", code=1105)
        schema_name, name = self._table_ref(node.this)
        to = node.args.get("to")
        new_name = to.name if to is not None else name
        return self._bring_back(schema_name, name, new_name, "FLASHBACK TABLE", source)

    def _bring_back(
        self, schema_name: str | None, name: str, new_name: str, verb: str, source: str
    ) -> list[DDLEvent]:
        schema = self.schema(schema_name)
        found = next(
            (
                t
                for t in reversed(self.dropped)
                if t.schema.lower() == schema.name.lower() and t.name.lower() == name.lower()
            ),
            None,
        )
        if found is None:
            raise SQLError(
                f"Can't find dropped/truncated table '{name}' in GC safe point", code=1105
            )
        self._exists(schema, new_name, if_not_exists=False)
        self.dropped.remove(found)
        query = f"{verb} `{found.schema}`.`{found.name}`"
        if new_name != name:
            query += f" TO `{new_name}`"
            found = found.evolve(name=new_name)
        return [
            self._event(
                ActionType.RECOVER_TABLE, query, found.schema, found.name, found, None, source
            )
        ]

    def _create_sequence(self, node: exp.Create, source: str) -> list[DDLEvent]:
        schema_name, name = self._table_ref(node.this)
        schema = self.schema(schema_name)
        if self._exists(schema, name, if_not_exists=bool(node.args.get("exists"))):
            return []
        info = TableInfo(
            id=self._alloc_id(),
            schema=schema.name,
            name=name,
            columns=(),
            sequence=_sequence_info(node),
        )
        query = restore(node)
        return [
            self._event(ActionType.CREATE_SEQUENCE, query, schema.name, name, info, None, source)
        ]

    def _drop_sequence(self, node: exp.Drop, source: str) -> list[DDLEvent]:
        events = []
        for target in node.args.get("tables") or []:
            schema_name, name = self._table_ref(target)
            found = self.find_table(schema_name, name)
            if found is None or not found.is_sequence:
                if node.args.get("exists"):
                    continue
                raise SQLError(f"Unknown SEQUENCE: '{schema_name}.{name}'", code=4139)
            del self.schemas[found.schema.lower()].tables[name.lower()]
            query = f"DROP SEQUENCE `{found.schema}`.`{found.name}`"
            events.append(
                self._event(
                    ActionType.DROP_SEQUENCE, query, found.schema, found.name, None, found, source
                )
            )
        return events

    def _drop_table(self, node: exp.Drop, source: str) -> list[DDLEvent]:
        return self._drop_tables(node, source, view=False)

    def _drop_view(self, node: exp.Drop, source: str) -> list[DDLEvent]:
        return self._drop_tables(node, source, view=True)

    def _drop_tables(self, node: exp.Drop, source: str, *, view: bool) -> list[DDLEvent]:
        # TiDB runs one job per named table or view; tiflow `DDLEvent.FromJobWithArgs` then
        # rewrites each job's query to name just that object.
        kind, action = ("VIEW", ActionType.DROP_VIEW) if view else ("TABLE", ActionType.DROP_TABLE)
        events = []
        for table in node.args.get("tables") or []:
            schema_name, name = self._table_ref(table)
            found = self.find_table(schema_name, name)
            if found is None or found.is_view != view:
                if node.args.get("exists"):
                    continue
                raise SQLError(f"Unknown {kind.lower()} '{schema_name}.{name}'", code=1051)
            del self.schemas[found.schema.lower()].tables[name.lower()]
            if not view:
                self.dropped.append(found)
            query = f"DROP {kind} `{found.schema}`.`{found.name}`"
            events.append(self._event(action, query, found.schema, found.name, None, found, source))
        return events

    def _truncate_table(self, node: exp.TruncateTable, source: str) -> list[DDLEvent]:
        events = []
        for table in node.expressions:
            schema_name, name = self._table_ref(table)
            before = self.table(schema_name, name)
            partition = before.partition
            new_id = self._alloc_id()
            if partition:
                partition = replace(
                    partition,
                    definitions=tuple(
                        replace(p, id=self._alloc_id()) for p in partition.definitions
                    ),
                )
            after = before.evolve(id=new_id, partition=partition)
            self.dropped.append(before)  # FLASHBACK TABLE can bring the old one back
            query = f"TRUNCATE TABLE {_qualified(table)}"
            events.append(
                self._event(
                    ActionType.TRUNCATE_TABLE, query, before.schema, name, after, before, source
                )
            )
        return events

    def _rename_tables(self, node: d.RenameTables, source: str) -> list[DDLEvent]:
        pairs = node.expressions
        events = []
        for pair in pairs:
            old_schema, old_name = self._table_ref(pair.this)
            new_schema, new_name = self._table_ref(pair.args["to"])
            before = self.table(old_schema, old_name)
            target = self.schema(new_schema)
            if new_name.lower() in target.tables:
                raise SQLError(f"Table '{new_name}' already exists", code=1050)
            del self.schemas[before.schema.lower()].tables[old_name.lower()]
            after = before.evolve(schema=target.name, name=new_name)
            # Every table of a multi-table RENAME becomes its own RENAME TABLE event
            # (tiflow `cdc/model/sink.go` `FromJobWithArgs`); a single one keeps the restore.
            if len(pairs) > 1:
                query = (
                    f"RENAME TABLE `{before.schema}`.`{old_name}` TO `{target.name}`.`{new_name}`"
                )
            else:
                query = restore(node)
            events.append(
                self._event(
                    ActionType.RENAME_TABLE, query, target.name, new_name, after, before, source
                )
            )
        return events

    def _create_index(self, node: exp.Create, source: str) -> list[DDLEvent]:
        index = node.this
        schema_name, name = self._table_ref(index.args["table"])
        before = self.table(schema_name, name)
        params = index.args.get("params")
        columns = [c for c in params.args.get("columns") or []] if params else []
        unique = bool(node.args.get("unique") or index.args.get("unique"))  # sqlglot: on Create
        options = params.args.get("options") if params else None
        after = TableBuilder.add_index(
            before, index.name, columns, unique=unique, primary=False, options=options
        )
        return [
            self._event(
                ActionType.ADD_INDEX, restore(node), before.schema, name, after, before, source
            )
        ]

    def _drop_index(self, node: exp.Drop, source: str) -> list[DDLEvent]:
        on = node.args.get("cluster")
        target = on.this if isinstance(on, exp.OnProperty) else None
        index_name = _drop_target(node).name
        if target is None:
            raise SQLError("DROP INDEX needs ON <table>")
        schema_name, name = self._table_ref(target)
        before = self.table(schema_name, name)
        action = ActionType.DROP_INDEX
        if index_name.lower() == "primary":  # TiDB: DROP INDEX `primary` drops the primary key
            _check_pk_droppable(before)
            action = ActionType.DROP_PRIMARY_KEY
        after = TableBuilder.drop_index(before, index_name, bool(node.args.get("exists")))
        if after is before:
            return []
        return [self._event(action, restore(node), before.schema, name, after, before, source)]

    def _alter_table(self, node: exp.Alter, source: str) -> list[DDLEvent]:
        if node.kind != "TABLE":
            raise SQLError(f"unsupported ALTER {node.kind}", statement=source)
        schema_name, name = self._table_ref(node.this)
        before = self.table(schema_name, name)
        actions = [*(node.args.get("actions") or []), *(node.args.get("options") or [])]
        if not actions:
            raise SQLError("ALTER TABLE without an action", statement=source)
        info = before
        action_types: list[ActionType] = []
        for action in actions:
            info, action_type = AlterApplier(self, info).apply(action)
            if action_type is not None:
                action_types.append(action_type)
        if not action_types:  # only options TiCDC does not replicate (placement, ...)
            return []
        action = action_types[0] if len(action_types) == 1 else ActionType.MULTI_SCHEMA_CHANGE
        return [self._event(action, restore(node), before.schema, info.name, info, before, source)]


# -- TiDB's limits on names and sizes ---------------------------------------------------------
#
# TiDB's system databases hold no rows a changefeed replicates: not simulated (what a client
# asks them, SHOW answers from the catalog)
_NOT_SIMULATED = (
    " (TiDB's system databases are not simulated here; SHOW DATABASES, TABLES, COLUMNS,"
    " INDEX and CREATE TABLE answer from the catalog)"
)
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


# --------------------------------------------------------------------------------------------


def _sequence_info(node: exp.Create) -> SequenceInfo:
    """TiDB's sequence defaults: ascending from MINVALUE 1 (descending from -1), cache 1000."""
    props = node.find(exp.SequenceProperties)
    args = props.args if props is not None else {}

    def number(key: str) -> int | None:
        value = args.get(key)
        return _lit(value) if value is not None else None

    options = {o.name.upper() for o in args.get("options") or [] if isinstance(o, exp.Var)}
    increment = number("increment") or 1
    if increment > 0:
        low, high = number("minvalue") or 1, number("maxvalue") or 9223372036854775806
    else:
        low, high = number("minvalue") or -9223372036854775807, number("maxvalue") or -1
    start = number("start")
    cache = number("cache")
    info = SequenceInfo(
        start=start if start is not None else (low if increment > 0 else high),
        increment=increment,
        min_value=low,
        max_value=high,
        cache=0 if "NOCACHE" in options else (cache if cache is not None else 1000),
        cycle="CYCLE" in options and "NOCYCLE" not in options,
    )
    if not info.min_value <= info.start <= info.max_value:
        raise SQLError("START value of sequence is out of range", code=4136)
    return info


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


def _check_pk_droppable(table: TableInfo) -> None:
    if table.pk_is_handle or table.is_common_handle:
        raise SQLError(
            "Unsupported drop primary key when the table is using clustered index", code=8200
        )


def _drop_target(node: exp.Drop) -> exp.Expr:
    """The object a DROP names: sqlglot keeps it in `tables` (or `this` for some kinds)."""
    tables = node.args.get("tables") or []
    target = tables[0] if tables else node.this
    if not isinstance(target, exp.Expr):
        raise SQLError("DROP without a name")
    return target


def _qualified(table: exp.Expr) -> str:
    db = table.text("db")
    return f"`{db}`.`{table.name}`" if db else f"`{table.name}`"


def _charset_options(
    props: exp.Expr | None, charset: str, collation: str | None
) -> tuple[str, str]:
    for p in props.expressions if props else []:
        if isinstance(p, exp.CharacterSetProperty):
            charset = p.this.name.lower()
            collation = None
        elif isinstance(p, exp.CollateProperty):
            collation = p.this.name.lower()
            charset = charset_of_collation(collation) or charset
    return charset, collation or DEFAULT_COLLATION_OF.get(charset, f"{charset}_bin")


def _schema_options_sql(props: exp.Expr | None) -> str:
    parts = []
    for p in props.expressions if props else []:
        if isinstance(p, exp.CharacterSetProperty):
            parts.append(f"CHARACTER SET = {p.this.name}")
        elif isinstance(p, exp.CollateProperty):
            parts.append(f"COLLATE = {p.this.name}")
    return (" " + " ".join(parts)) if parts else ""


class TableBuilder:
    """Builds a TableInfo from CREATE TABLE the way TiDB's `buildTableInfo` does."""

    def __init__(
        self, catalog: Catalog, schema: SchemaInfo, name: str, *, altering: bool = False
    ) -> None:
        self.catalog = catalog
        self.schema = schema
        self.name = name
        self.altering = altering

    def build(self, node: exp.Create) -> TableInfo:
        props = node.args.get("properties")
        charset, collation = _charset_options(props, self.schema.charset, None)
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
        table = table.evolve(id=self.catalog._alloc_id())
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
                length = _lit(node.expression)
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
            changes["auto_increment_base"] = _lit(p.this)
        elif isinstance(p, exp.Property) and not isinstance(p, d.PartitionBy | d.TTLProperty):
            key = p.this.name.upper()
            attr = {
                "AUTO_INCREMENT": "auto_increment_base",
                "AUTO_RANDOM_BASE": "auto_random_base",
                "AUTO_ID_CACHE": "auto_id_cache",
                "SHARD_ROW_ID_BITS": "shard_row_id_bits",
            }.get(key)
            if attr:
                changes[attr] = _lit(p.args.get("value"))
    return table.evolve(**changes) if changes else table


def build_partition(
    catalog: Catalog, table: TableInfo, node: exp.Expr, existing: list[PartitionDefinition]
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
        count = _lit(node.args.get("partitions")) if node.args.get("partitions") else 1
        definitions = [PartitionDefinition(catalog._alloc_id(), f"p{i}") for i in range(count)]
    else:
        raise SQLError(f"For {kind} partitions each partition must be defined", code=1492)
    _check_unique_partition_names([*existing, *definitions])
    return PartitionInfo(type=ptype, expr=expr, columns=columns, definitions=tuple(definitions))  # type: ignore[arg-type]


def build_partition_def(catalog: Catalog, node: exp.Expr) -> PartitionDefinition:
    kind = node.text("kind")
    values = tuple(restore(v) for v in node.expressions)
    less_than = values if kind == "LESS THAN" else ()
    in_values = tuple((v,) for v in values) if kind == "IN" else ()
    comment = ""
    for option in node.args.get("options") or []:
        if isinstance(option, exp.Property) and option.this.name.upper() == "COMMENT":
            comment = option.args["value"].name
    return PartitionDefinition(catalog._alloc_id(), node.name, less_than, in_values, comment)


def _check_unique_partition_names(defs: list[PartitionDefinition]) -> None:
    seen: set[str] = set()
    for p in defs:
        if p.name.lower() in seen:
            raise SQLError(f"Duplicate partition name {p.name}", code=1517)
        seen.add(p.name.lower())


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
        decimal = _lit(params[0]) if params else 0
        if not 0 <= decimal <= 6:
            raise SQLError(
                f"Too-big precision {decimal} specified for '{cdef.name}'. Maximum is 6.", code=1426
            )
        flen += decimal + 1 if decimal else 0
    elif params:
        flen = _lit(params[0])
        if len(params) > 1:
            decimal = _lit(params[1])
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
            default = _column_default(kind.this)
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
            shard = _lit(kind.this) if kind.this else 5
            range_bits = _lit(kind.expression) if kind.expression else 64
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
    _check_default(column, mode)
    return column, keys


BLOB_TYPE_SET = frozenset(t for _, t in BLOB_TYPE_BY_MAX_LENGTH)


def _column_default(node: exp.Expr) -> ColumnDefault:
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


def _check_default(column: ColumnInfo, mode: SqlMode) -> None:
    """A literal default must be a value of the column's type under the session's sql_mode
    (MySQL 1067), as TiDB checks at CREATE/ALTER time (`ddl.checkDefaultValue`)."""
    default = column.default
    if default is None or default.kind != "literal" or column.tp == M.TIMESTAMP:
        return  # TIMESTAMP defaults are read in the session's zone, when used
    try:
        column_converter(column, lambda: dt.UTC, mode)(default.value)
    except SQLError:
        raise SQLError(f"Invalid default value for '{column.name}'", code=1067) from None


class AlterApplier:
    """Applies one ALTER TABLE action to a TableInfo; returns the new info and ActionType."""

    def __init__(self, catalog: Catalog, table: TableInfo) -> None:
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
            schema, name = self.catalog._table_ref(action.this)
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
            if t.pk_is_handle or t.is_common_handle:
                raise SQLError(
                    "Unsupported drop primary key when the table is using clustered index",
                    code=8200,
                )
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
                    partition=None, id=self.catalog._alloc_id()
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
            charset, collation = _charset_options(
                exp.Properties(expressions=[option]), t.charset, None
            )
            return t.evolve(
                charset=charset, collation=collation
            ), ActionType.MODIFY_TABLE_CHARSET_AND_COLLATE
        if isinstance(option, exp.AutoIncrementProperty):
            return t.evolve(auto_increment_base=_lit(option.this)), ActionType.REBASE_AUTO_ID
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
            return t.evolve(**{attr: _lit(option.args.get("value"))}), action_type
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
            name = _drop_target(action).name
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
        index_name = _drop_target(action).name if kind in ("INDEX", "KEY") else "PRIMARY"
        if kind in ("INDEX", "KEY") and index_name.lower() != "primary":
            return TableBuilder.drop_index(
                t, index_name, bool(action.args.get("exists"))
            ), ActionType.DROP_INDEX
        if kind in ("INDEX", "KEY", "PRIMARY KEY") or (action.this is None and kind == "PRIMARY"):
            _check_pk_droppable(t)
            return TableBuilder.drop_index(t, "PRIMARY", False), ActionType.DROP_PRIMARY_KEY
        if kind == "FOREIGN KEY":  # its index stays, as in TiDB
            name = _drop_target(action).name
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
            new = replace(col, default=_column_default(action.args["default"]))
            _check_default(new, self.catalog.sql_mode)
        else:
            raise SQLError(f"unsupported ALTER COLUMN: {action.sql(dialect=d.TiDB)}")
        return t.evolve(columns=tuple(new if c is col else c for c in t.columns))

    def _rename_index(self, old: str, new: str) -> TableInfo:
        t = self.table
        index = t.index(old)
        if index is None:
            raise SQLError(f"Key '{old}' doesn't exist in table '{t.name}'", code=1176)
        if t.index(new) and new.lower() != old.lower():
            raise SQLError(f"Duplicate key name '{new}'", code=1061)
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
        col = t.column(old)
        if col is None:
            raise SQLError(f"Unknown column '{old}' in '{t.name}'", code=1054)
        if t.column(new) and new.lower() != old.lower():
            raise SQLError(f"Duplicate column name '{new}'", code=1060)
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
                    PartitionDefinition(self.catalog._alloc_id(), f"p{start + i}")
                    for i in range(_lit(action.args["count"]))
                ]
            else:
                new = [
                    build_partition_def(self.catalog, p)
                    for p in action.args.get("definitions") or []
                ]
            _check_unique_partition_names([*part.definitions, *new])
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
                replace(p, id=self.catalog._alloc_id()) if p.name.lower() in targets else p
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
            _check_unique_partition_names(merged)
            return t.evolve(
                partition=replace(part, definitions=tuple(merged))
            ), ActionType.REORGANIZE_PARTITION
        if verb == "EXCHANGE":
            schema, name = self.catalog._table_ref(action.args["table"])
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
            count = _lit(action.args["count"])
            if count >= len(part.definitions):
                raise SQLError("Cannot remove all partitions, use DROP TABLE instead", code=1508)
            defs = part.definitions[: len(part.definitions) - count]
            return t.evolve(
                partition=replace(part, definitions=defs)
            ), ActionType.REORGANIZE_PARTITION
        return t, None  # ANALYZE/CHECK/OPTIMIZE/REBUILD/REPAIR PARTITION: no schema change


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
