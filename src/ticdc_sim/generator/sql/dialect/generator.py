"""The TiDB generator: round-trips the TiDB nodes (TiCDC's restored DDL text is `restore.py`)."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.generators.mysql import MySQLGenerator

from ticdc_sim.generator.sql.dialect.expressions import (
    Admin,
    AlterDatabase,
    AutoRandomColumnConstraint,
    ConvertCharset,
    DefaultOf,
    Do,
    Flashback,
    IndexPredicate,
    PartitionBy,
    PartitionDef,
    PartitionNames,
    PartitionOptions,
    PolicyStatement,
    RecoverTable,
    RemoveClause,
    RenamePair,
    RenameTables,
    ReplaceInto,
    Savepoint,
    SerialDefaultValueColumnConstraint,
    TiDBIndexParameters,
    TiFlashReplica,
    TTLProperty,
    UnsignedColumnConstraint,
)


class TiDBGenerator(MySQLGenerator):
    PROPERTIES_LOCATION = {
        **MySQLGenerator.PROPERTIES_LOCATION,
        PartitionBy: exp.Properties.Location.POST_SCHEMA,
        TTLProperty: exp.Properties.Location.POST_SCHEMA,
    }

    def between_sql(self, expression: exp.Between) -> str:
        # an upper bound that is a predicate keeps its parentheses: `a BETWEEN b AND (c
        # BETWEEN d AND e)` reads back the same (TiDB's grammar binds it so anyway, see
        # TiDBParser._parse_between; other parsers may chain the second BETWEEN on the first)
        high = expression.args.get("high")
        if isinstance(high, exp.Predicate | exp.Not):
            expression = expression.copy()
            expression.set("high", exp.Paren(this=expression.args["high"]))
        return super().between_sql(expression)

    def autorandomcolumnconstraint_sql(self, expression: exp.Expr) -> str:
        args = [a for a in (expression.this, expression.expression) if a is not None]
        return "AUTO_RANDOM" + (f"({', '.join(self.sql(a) for a in args)})" if args else "")

    def serialdefaultvaluecolumnconstraint_sql(self, expression: exp.Expr) -> str:
        return "SERIAL DEFAULT VALUE"

    def unsignedcolumnconstraint_sql(self, expression: exp.Expr) -> str:
        return "UNSIGNED"

    def indexpredicate_sql(self, expression: exp.Expr) -> str:
        return f"WHERE {self.sql(expression, 'this')}"

    def renametables_sql(self, expression: exp.Expr) -> str:
        return f"RENAME TABLE {self.expressions(expression, flat=True)}"

    def renamepair_sql(self, expression: exp.Expr) -> str:
        return f"{self.sql(expression, 'this')} TO {self.sql(expression, 'to')}"

    def replaceinto_sql(self, expression: exp.Expr) -> str:
        return "REPLACE" + self.insert_sql(expression)[len("INSERT") :]  # type: ignore[arg-type]

    def partitionby_sql(self, expression: exp.Expr) -> str:
        kind = expression.text("kind")
        parts = ["PARTITION BY", "LINEAR " + kind if expression.args.get("linear") else kind]
        if expression.args.get("columns"):
            parts.append("COLUMNS")
        if expression.this:
            parts[-1] += f" ({self.sql(expression, 'this')})"
        elif expression.expressions or kind != "KEY":
            parts[-1] += f" ({self.expressions(expression, flat=True)})"
        if expression.args.get("partitions"):
            parts.append(f"PARTITIONS {self.sql(expression, 'partitions')}")
        if expression.args.get("definitions"):
            parts.append(f"({self.expressions(expression, key='definitions', flat=True)})")
        return " ".join(parts)

    def partitiondef_sql(self, expression: exp.Expr) -> str:
        sql = f"PARTITION {self.sql(expression, 'this')}"
        kind = expression.text("kind")
        if kind == "DEFAULT":
            sql += " DEFAULT"
        elif kind:
            sql += f" VALUES {kind} ({self.expressions(expression, flat=True)})"
        options = self.expressions(expression, key="options", sep=" ")
        return f"{sql} {options}" if options else sql

    def tidbindexparameters_sql(self, expression: exp.Expr) -> str:
        sql = self.indexparameters_sql(expression)  # type: ignore[arg-type]
        return f"{sql} {self.expressions(expression, key='options', sep=' ')}"

    def partitionnames_sql(self, expression: exp.Expr) -> str:
        action = expression.text("action")
        sql = f"{action} PARTITION"
        if expression.args.get("exists"):
            sql += " IF EXISTS" if action == "DROP" else " IF NOT EXISTS"
        if expression.args.get("all"):
            return f"{sql} ALL"
        if expression.args.get("count"):
            word = " PARTITIONS" if action == "ADD" else ""
            return f"{sql}{word} {self.sql(expression, 'count')}"
        if expression.expressions:
            sql += f" {self.expressions(expression, flat=True)}"
        if action == "EXCHANGE":
            sql += f" WITH TABLE {self.sql(expression, 'table')}"
            if expression.args.get("validation"):
                sql += f" {expression.text('validation')} VALIDATION"
        if expression.args.get("definitions"):
            into = " INTO" if action == "REORGANIZE" else ""
            sql += f"{into} ({self.expressions(expression, key='definitions', flat=True)})"
        return sql

    def partitionoptions_sql(self, expression: exp.Expr) -> str:
        options = self.expressions(expression, key="options", sep=" ")
        return f"PARTITION {self.sql(expression, 'this')} {options}"

    def removeclause_sql(self, expression: exp.Expr) -> str:
        return f"REMOVE {self.sql(expression, 'this')}"

    def tiflashreplica_sql(self, expression: exp.Expr) -> str:
        sql = f"SET TIFLASH REPLICA {self.sql(expression, 'this')}"
        if expression.args.get("labels"):
            sql += f" LOCATION LABELS {self.expressions(expression, key='labels', flat=True)}"
        return sql

    def ttlproperty_sql(self, expression: exp.Expr) -> str:
        return f"TTL={self.sql(expression, 'this')}"

    def savepoint_sql(self, expression: exp.Expr) -> str:
        release = "RELEASE " if expression.args.get("release") else ""
        return f"{release}SAVEPOINT {self.sql(expression, 'this')}"

    def defaultof_sql(self, expression: exp.Expr) -> str:
        return f"DEFAULT({self.sql(expression, 'this')})"

    def convertcharset_sql(self, expression: exp.Expr) -> str:
        collate = expression.args.get("collate")
        sql = f"CONVERT TO CHARACTER SET {self.sql(expression, 'this')}"
        return f"{sql} COLLATE {self.sql(collate)}" if collate else sql

    def alterdatabase_sql(self, expression: exp.Expr) -> str:
        name = f" {self.sql(expression, 'this')}" if expression.this else ""
        return f"ALTER DATABASE{name} {self.expressions(expression, key='options', sep=' ')}"

    def do_sql(self, expression: exp.Expr) -> str:
        return f"DO {self.expressions(expression, flat=True)}"

    def admin_sql(self, expression: exp.Expr) -> str:
        return f"ADMIN {self.sql(expression, 'this')}"

    def recovertable_sql(self, expression: exp.Expr) -> str:
        if expression.args.get("job"):
            return f"RECOVER TABLE BY JOB {self.sql(expression, 'job')}"
        return f"RECOVER TABLE {self.sql(expression, 'this')}"

    def flashback_sql(self, expression: exp.Expr) -> str:
        to = f" TO {self.sql(expression, 'to')}" if expression.args.get("to") else ""
        return f"FLASHBACK {expression.text('kind')} {self.sql(expression, 'this')}{to}"

    def policystatement_sql(self, expression: exp.Expr) -> str:
        parts = [expression.text("action")]
        if expression.args.get("replace"):
            parts.append("OR REPLACE")
        parts.append(expression.text("kind"))
        if expression.args.get("exists"):
            parts.append("IF NOT EXISTS" if expression.text("action") == "CREATE" else "IF EXISTS")
        parts.append(self.sql(expression, "this"))
        # TiDB restores policy and group options as `KEY = value`, spaced.
        parts.extend(
            f"{self.sql(o, 'this')} = {self.sql(o, 'value')}"
            if isinstance(o, exp.Property)
            else self.sql(o)
            for o in expression.args.get("options") or []
        )
        return " ".join(parts)


# sqlglot finds `<key>_sql` methods only for its own node classes; register ours by key.
TiDBGenerator.TRANSFORMS = {
    **MySQLGenerator.TRANSFORMS,
    **{
        # late-bound so that generator subclasses (restore.py) can override the method
        node: (lambda self, e, _name=f"{node.key}_sql": getattr(self, _name)(e))
        for node in (
            AutoRandomColumnConstraint,
            SerialDefaultValueColumnConstraint,
            UnsignedColumnConstraint,
            IndexPredicate,
            TiDBIndexParameters,
            RenameTables,
            RenamePair,
            ReplaceInto,
            PartitionBy,
            PartitionDef,
            PartitionNames,
            PartitionOptions,
            RemoveClause,
            TiFlashReplica,
            TTLProperty,
            AlterDatabase,
            Do,
            Admin,
            RecoverTable,
            Flashback,
            PolicyStatement,
            ConvertCharset,
            DefaultOf,
            Savepoint,
        )
    },
}
