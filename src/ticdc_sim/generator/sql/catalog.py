"""DDL -> the catalog of schemas and tables, and the DDL events TiCDC would emit.

`Catalog.apply(statement)` validates a parsed DDL statement against the current catalog,
builds the new TableInfo the way TiDB's DDL does (`pkg/ddl`: column flags, default lengths,
index ids, global ids, schema versions) and returns one DDLEvent per table TiCDC reports.
Nothing changes when a statement fails.

This module holds the catalog and the handler of each statement kind (TiDB's
`pkg/ddl/executor.go`, once `ddl_api.go`): schemas, CREATE/DROP/TRUNCATE/RENAME/RECOVER of
tables, views and sequences, indexes, and the ALTER TABLE loop. Tables are built by build.py,
altered by alter.py, their columns read and checked by columns.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.alter import AlterApplier, drop_target
from ticdc_sim.generator.sql.build import SchemaInfo, TableBuilder, check_pk_droppable
from ticdc_sim.generator.sql.columns import (
    charset_options,
    check_limits,
    check_name,
    int_literal,
    restore,
)
from ticdc_sim.generator.sql.values import DEFAULT_SQL_MODE, SqlMode
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent
from ticdc_sim.model.mysql import SYSTEM_SCHEMAS
from ticdc_sim.model.table import SequenceInfo, TableInfo
from ticdc_sim.model.tso import TSOClock

DEFAULT_SCHEMA_ID = 2  # `test` in a freshly bootstrapped TiDB
FIRST_USER_ID = 100
# TiDB's system databases hold no rows a changefeed replicates: not simulated (what a client
# asks them, SHOW answers from the catalog)
_NOT_SIMULATED = (
    " (TiDB's system databases but information_schema are not simulated here;"
    " information_schema and SHOW answer from the catalog)"
)


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

    def alloc_id(self) -> int:
        self.next_global_id += 1
        return self.next_global_id - 1

    def table_ref(self, node: exp.Expr) -> tuple[str, str]:
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
        charset, collation = charset_options(node.args.get("properties"), "utf8mb4", None)
        self.schemas[name.lower()] = SchemaInfo(self.alloc_id(), name, charset, collation)
        exists = "IF NOT EXISTS " if node.args.get("exists") else ""
        query = f"CREATE DATABASE {exists}`{name}`" + _schema_options_sql(
            node.args.get("properties")
        )
        return [self._event(ActionType.CREATE_SCHEMA, query, name, "", None, None, source)]

    def _use(self, node: exp.Use, source: str) -> list[DDLEvent]:
        self.current_schema = self.schema(node.this.name).name
        return []

    def _drop_schema(self, node: exp.Drop, source: str) -> list[DDLEvent]:
        name = drop_target(node).name
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
        charset, collation = charset_options(
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
        schema_name, name = self.table_ref(node.this)
        schema = self.schema(schema_name)
        if self._exists(schema, name, if_not_exists=bool(node.args.get("exists"))):
            return []
        like = node.find(exp.LikeProperty)
        if like is not None:
            src_schema, src_name = self.table_ref(like.this)
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
        table_id = self.alloc_id()
        if partition:
            partition = replace(
                partition,
                definitions=tuple(replace(p, id=self.alloc_id()) for p in partition.definitions),
            )
        return src.evolve(id=table_id, schema=schema, name=name, partition=partition)

    def _create_view(self, node: exp.Create, source: str) -> list[DDLEvent]:
        schema_name, name = self.table_ref(node.this)
        schema = self.schema(schema_name)
        if not node.args.get("replace"):
            self._exists(schema, name, if_not_exists=False)
        select = node.expression
        info = TableInfo(
            id=self.alloc_id(),
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
        schema_name, name = self.table_ref(node.this)
        return self._bring_back(schema_name, name, name, "RECOVER TABLE", source)

    def _flashback(self, node: d.Flashback, source: str) -> list[DDLEvent]:
        """FLASHBACK TABLE t [TO t2]: the newest dropped or truncated table of that name
        returns under its new name, id and data intact (TiDB `ActionRecoverTable`)."""
        if node.args["kind"] != "TABLE":
            raise SQLError("FLASHBACK DATABASE is not supported", code=1105)
        schema_name, name = self.table_ref(node.this)
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
        schema_name, name = self.table_ref(node.this)
        schema = self.schema(schema_name)
        if self._exists(schema, name, if_not_exists=bool(node.args.get("exists"))):
            return []
        info = TableInfo(
            id=self.alloc_id(),
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
            schema_name, name = self.table_ref(target)
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
            schema_name, name = self.table_ref(table)
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
            schema_name, name = self.table_ref(table)
            before = self.table(schema_name, name)
            partition = before.partition
            new_id = self.alloc_id()
            if partition:
                partition = replace(
                    partition,
                    definitions=tuple(
                        replace(p, id=self.alloc_id()) for p in partition.definitions
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
            old_schema, old_name = self.table_ref(pair.this)
            new_schema, new_name = self.table_ref(pair.args["to"])
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
        schema_name, name = self.table_ref(index.args["table"])
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
        index_name = drop_target(node).name
        if target is None:
            raise SQLError("DROP INDEX needs ON <table>")
        schema_name, name = self.table_ref(target)
        before = self.table(schema_name, name)
        action = ActionType.DROP_INDEX
        if index_name.lower() == "primary":  # TiDB: DROP INDEX `primary` drops the primary key
            check_pk_droppable(before)
            action = ActionType.DROP_PRIMARY_KEY
        after = TableBuilder.drop_index(before, index_name, bool(node.args.get("exists")))
        if after is before:
            return []
        return [self._event(action, restore(node), before.schema, name, after, before, source)]

    def _alter_table(self, node: exp.Alter, source: str) -> list[DDLEvent]:
        if node.kind != "TABLE":
            raise SQLError(f"unsupported ALTER {node.kind}", statement=source)
        schema_name, name = self.table_ref(node.this)
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


def _sequence_info(node: exp.Create) -> SequenceInfo:
    """TiDB's sequence defaults: ascending from MINVALUE 1 (descending from -1), cache 1000."""
    props = node.find(exp.SequenceProperties)
    args = props.args if props is not None else {}

    def number(key: str) -> int | None:
        value = args.get(key)
        return int_literal(value) if value is not None else None

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


def _qualified(table: exp.Expr) -> str:
    db = table.text("db")
    return f"`{db}`.`{table.name}`" if db else f"`{table.name}`"


def _schema_options_sql(props: exp.Expr | None) -> str:
    parts = []
    for p in props.expressions if props else []:
        if isinstance(p, exp.CharacterSetProperty):
            parts.append(f"CHARACTER SET = {p.this.name}")
        elif isinstance(p, exp.CollateProperty):
            parts.append(f"COLLATE = {p.this.name}")
    return (" " + " ".join(parts)) if parts else ""
