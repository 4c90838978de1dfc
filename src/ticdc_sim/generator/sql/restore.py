"""The DDL text TiCDC emits: TiDB's `Restore` of the statement.

TiCDC does not forward the user's SQL. The owner re-parses it and restores it with
`RestoreTiDBSpecialComment | RestoreNameBackQuotes | RestoreKeyWordUppercase |
RestoreStringSingleQuotes | SkipPlacementRuleForRestore | RestoreWithTTLEnableOff`
(tiflow `cdc/owner/ddl_sink.go` `addSpecialComment`; the format comes from TiDB
`pkg/parser/ast/ddl.go`). This generator reproduces that format: back-quoted names, upper-case
keywords, `,` without a space between column definitions, TiDB-only syntax inside `/*T![id] */`,
placement options dropped (leaving their separator, as TiDB does).
"""

from __future__ import annotations

from sqlglot import exp

from ticdc_sim.generator.sql import dialect as d

# TiDB restores arithmetic and comparisons without spaces, logic operators with them
# (TiDB `pkg/parser/opcode` `ops` table).
_TIGHT_BINARY = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.BitwiseAnd: "&",
    exp.BitwiseOr: "|",
    exp.BitwiseXor: "^",
}

# Table options TiDB wraps in a special comment, with their feature id ("" = plain `/*T! */`).
_TIDB_TABLE_OPTIONS = {
    "SHARD_ROW_ID_BITS": "",
    "PRE_SPLIT_REGIONS": "",
    "AUTO_ID_CACHE": "auto_id_cache",
    "AUTO_RANDOM_BASE": "auto_rand_base",
}
_SKIPPED_OPTIONS = {"PLACEMENT POLICY"}

# TiDB `TableOption.Restore`: keywords and names upper-cased, `KEY = value` spaced.
_TABLE_OPTION_TEMPLATES: dict[type[exp.Expr], str] = {
    exp.EngineProperty: "ENGINE = {name}",
    exp.CharacterSetProperty: "DEFAULT CHARACTER SET = {upper}",
    exp.CollateProperty: "DEFAULT COLLATE = {upper}",
    exp.SchemaCommentProperty: "COMMENT = {sql}",
    exp.AutoIncrementProperty: "AUTO_INCREMENT = {sql}",
}
_TTL_ENABLE_OFF = "/*T![ttl] TTL_ENABLE = 'OFF' */"


class TiDBRestoreGenerator(d.TiDBGenerator):
    """Generates statements in TiDB's restored form (see module docstring)."""

    _has_ttl_enable = False

    def __init__(self) -> None:
        # comments are not part of what TiDB restores from its AST
        super().__init__(
            identify=True, normalize_functions="upper", dialect=d.TiDB(), comments=False
        )

    # -- expressions -------------------------------------------------------------------------

    def binary(self, expression: exp.Binary, op: str) -> str:
        tight = _TIGHT_BINARY.get(type(expression))
        if tight is None:
            return super().binary(expression, op)
        return f"{self.sql(expression, 'this')}{tight}{self.sql(expression, 'expression')}"

    def paren_sql(self, expression: exp.Paren) -> str:
        return f"({self.sql(expression, 'this')})"

    def currenttimestamp_sql(self, expression: exp.CurrentTimestamp) -> str:
        fsp = self.sql(expression, "this")
        return f"CURRENT_TIMESTAMP({fsp})"

    def interval_sql(self, expression: exp.Interval) -> str:
        value = expression.this
        amount = value.name if isinstance(value, exp.Literal) else self.sql(value)
        return f"INTERVAL {amount} {self.sql(expression, 'unit')}"

    # -- types -------------------------------------------------------------------------------

    def datatype_sql(self, expression: exp.DataType) -> str:
        sql = super().datatype_sql(expression)
        # TiDB writes type parameters as `(M,D)` and enum/set members without spaces.
        return sql.replace(", ", ",")

    # -- column definitions ------------------------------------------------------------------

    def columndef_sql(self, expression: exp.ColumnDef, sep: str = " ") -> str:
        parts = [self.sql(expression, "this"), self.sql(expression, "kind")]
        parts += [self.sql(c) for c in expression.args.get("constraints") or []]
        parts.append(self.sql(expression, "position"))
        return " ".join(p for p in parts if p)

    def notnullcolumnconstraint_sql(self, expression: exp.NotNullColumnConstraint) -> str:
        return "NULL" if expression.args.get("allow_null") else "NOT NULL"

    def primarykeycolumnconstraint_sql(self, expression: exp.PrimaryKeyColumnConstraint) -> str:
        return "PRIMARY KEY" + self._clustered(expression.args.get("options"))

    def uniquecolumnconstraint_sql(self, expression: exp.UniqueColumnConstraint) -> str:
        target = expression.this
        if not isinstance(target, exp.Schema):
            return "UNIQUE KEY"
        cols = ", ".join(self.sql(c) for c in target.expressions)
        name = self.sql(target, "this")
        return f"UNIQUE {name}({cols})" if name else f"UNIQUE({cols})"

    def defaultcolumnconstraint_sql(self, expression: exp.DefaultColumnConstraint) -> str:
        return f"DEFAULT {self._value_sql(expression.this)}"

    def _value_sql(self, value: exp.Expr) -> str:
        # TiDB's parser tags string literals with the connection charset; Restore prints it.
        if isinstance(value, exp.Literal) and value.is_string:
            return f"_UTF8MB4{self.sql(value)}"
        return self.sql(value)

    def commentcolumnconstraint_sql(self, expression: exp.CommentColumnConstraint) -> str:
        return f"COMMENT {self.sql(expression, 'this')}"

    def computedcolumnconstraint_sql(self, expression: exp.ComputedColumnConstraint) -> str:
        this = expression.this
        inner = this.this if isinstance(this, exp.Paren) else this
        kind = "STORED" if expression.args.get("persisted") else "VIRTUAL"
        return f"GENERATED ALWAYS AS({self.sql(inner)}) {kind}"

    def autorandomcolumnconstraint_sql(self, expression: exp.Expr) -> str:
        return f"/*T![auto_rand] {super().autorandomcolumnconstraint_sql(expression)} */"

    def onupdatecolumnconstraint_sql(self, expression: exp.OnUpdateColumnConstraint) -> str:
        return f"ON UPDATE {self.sql(expression, 'this')}"

    def charactersetcolumnconstraint_sql(self, expression: exp.CharacterSetColumnConstraint) -> str:
        return f"CHARACTER SET {self.sql(expression, 'this').upper()}"

    def collatecolumnconstraint_sql(self, expression: exp.CollateColumnConstraint) -> str:
        return f"COLLATE {expression.this.name.lower()}"

    # -- table constraints -------------------------------------------------------------------

    def primarykey_sql(self, expression: exp.PrimaryKey) -> str:
        cols = ", ".join(self.sql(c) for c in expression.expressions)
        return f"PRIMARY KEY({cols})" + self._clustered(expression.args.get("options"))

    def indexcolumnconstraint_sql(self, expression: exp.IndexColumnConstraint) -> str:
        kind = expression.text("kind").upper()
        keyword = {"UNIQUE": "UNIQUE", "FULLTEXT": "FULLTEXT", "SPATIAL": "SPATIAL"}.get(
            kind, "INDEX"
        )
        name = self._index_name(expression.this) if expression.this else ""
        cols = ", ".join(self.sql(c) for c in expression.expressions)
        return f"{keyword} {name}({cols})" if name else f"{keyword}({cols})"

    def _index_name(self, node: exp.Expr) -> str:
        return self.sql(node)

    @staticmethod
    def _clustered(options: list[object] | None) -> str:
        for opt in options or []:
            word = str(opt).upper()
            if word in ("CLUSTERED", "NONCLUSTERED"):
                return f" /*T![clustered_index] {word} */"
        return ""

    # -- statements --------------------------------------------------------------------------

    def create_sql(self, expression: exp.Create) -> str:
        if expression.kind != "TABLE" or expression.find(exp.LikeProperty):
            return super().create_sql(expression)
        exists = " IF NOT EXISTS" if expression.args.get("exists") else ""
        sql = f"CREATE TABLE{exists} {self.sql(expression, 'this')}"
        props = expression.args.get("properties")
        if props and props.expressions:
            # TiDB writes one space before the options even when all of them are skipped
            sql += " " + self.table_options_sql(props.expressions)
        return sql

    def schema_sql(self, expression: exp.Schema) -> str:
        this = self.sql(expression, "this")
        items = ",".join(self.sql(e) for e in expression.expressions)
        return f"{this} ({items})"

    def table_options_sql(self, options: list[exp.Expr]) -> str:
        """Options are joined by single spaces; skipped ones leave their separator (TiDB)."""
        self._has_ttl_enable = any(
            type(o) is exp.Property and o.name.upper() == "TTL_ENABLE" for o in options
        )
        return " ".join(self.table_option_sql(o) for o in options)

    def table_option_sql(self, option: exp.Expr) -> str:
        if isinstance(option, d.TTLProperty):
            ttl = self.sql(option, "this").replace("+INTERVAL", " + INTERVAL")
            # RestoreWithTTLEnableOff: TiCDC always ships TTL_ENABLE = 'OFF'
            enable = "" if self._has_ttl_enable else f" {_TTL_ENABLE_OFF}"
            return f"/*T![ttl] TTL = {ttl} */{enable}"
        template = _TABLE_OPTION_TEMPLATES.get(type(option))
        if template is not None:
            name = option.this.name
            return template.format(name=name, upper=name.upper(), sql=self.sql(option, "this"))
        if isinstance(option, d.PartitionBy):
            return self.partition_by_sql(option)
        if isinstance(option, exp.Property):
            name = option.this.name.upper()
            if name == "TTL_ENABLE":
                return _TTL_ENABLE_OFF
            if name in _SKIPPED_OPTIONS:
                return ""
            value = self.sql(option, "value")
            if name in _TIDB_TABLE_OPTIONS:
                feature = _TIDB_TABLE_OPTIONS[name]
                head = f"/*T![{feature}]" if feature else "/*T!"
                return f"{head} {name} = {value} */"
            return f"{name} = {value}"
        return self.sql(option)

    # -- ALTER TABLE (TiDB `AlterTableStmt.Restore` / `AlterTableSpec.Restore`) ----------------

    def alter_sql(self, expression: exp.Alter) -> str:
        if expression.text("kind") != "TABLE":
            return super().alter_sql(expression)
        specs = [
            self.add_column_sql(a) if isinstance(a, exp.ColumnDef | exp.Schema) else self.sql(a)
            for a in expression.args.get("actions") or []
        ]
        specs += self.alter_options_sql(expression.args.get("options") or [])
        sql = f"ALTER TABLE {self.sql(expression, 'this')}"
        first = True
        for node, spec in zip(
            [*(expression.args.get("actions") or []), *(expression.args.get("options") or [])],
            specs,
            strict=False,
        ):
            if not spec:  # placement options are left out of what TiCDC ships
                continue
            # TiDB separates specs with ", " but partitioning clauses with a space
            sep = " " if first or isinstance(node, d.PartitionBy | d.RemoveClause) else ", "
            sql += sep + spec
            first = False
        return sql

    def alter_options_sql(self, options: list[exp.Expr]) -> list[str]:
        kinds = [type(o) for o in options]
        if kinds == [exp.CharacterSetProperty, exp.CollateProperty]:
            charset, collate = (o.this.name.upper() for o in options)
            return [f"CHARACTER SET {charset} COLLATE {collate}", ""]
        self._has_ttl_enable = any(
            type(o) is exp.Property and o.name.upper() == "TTL_ENABLE" for o in options
        )
        return [self.table_option_sql(o) for o in options]

    def convertcharset_sql(self, expression: exp.Expr) -> str:
        sql = f"CONVERT TO CHARACTER SET {expression.this.name.upper()}"
        collate = expression.args.get("collate")
        return f"{sql} COLLATE {collate.name.upper()}" if collate else sql

    def alterrename_sql(self, expression: exp.AlterRename, include_to: bool = True) -> str:
        return f"RENAME AS {self.sql(expression, 'this')}"

    def altercolumn_sql(self, expression: exp.AlterColumn) -> str:
        column = self.sql(expression, "this")
        if expression.args.get("drop"):
            return f"ALTER COLUMN {column} DROP DEFAULT"
        default = expression.args.get("default")
        if default is None:
            return super().altercolumn_sql(expression)
        if isinstance(default, exp.Literal | exp.Null | exp.Boolean):
            return f"ALTER COLUMN {column} SET DEFAULT {self._value_sql(default)}"
        inner = default.this if isinstance(default, exp.Paren) else default
        return f"ALTER COLUMN {column} SET DEFAULT ({self.sql(inner)})"

    def partitionby_sql(self, expression: exp.Expr) -> str:
        return self.partition_by_sql(expression)

    def columnposition_sql(self, expression: exp.ColumnPosition) -> str:
        where = str(expression.args.get("position") or "").upper()
        return f"{where} {self.sql(expression, 'this')}".strip()

    def partition_by_sql(self, node: exp.Expr) -> str:
        kind = node.text("kind")
        columns = " COLUMNS" if node.args.get("columns") else ""
        if node.this is not None:
            target = f"({self.sql(node, 'this')})"
        else:
            target = f"({', '.join(self.sql(e) for e in node.expressions)})"
        sql = f"PARTITION BY {kind}{columns} {target}"
        if node.args.get("partitions"):
            sql += f" PARTITIONS {self.sql(node, 'partitions')}"
        defs = node.args.get("definitions")
        if defs:
            sql += f" ({','.join(self.partition_def_sql(p) for p in defs)})"
        return sql

    def partition_def_sql(self, node: exp.Expr) -> str:
        sql = f"PARTITION {self.sql(node, 'this')}"
        kind = node.text("kind")
        if kind in ("LESS THAN", "IN"):
            sql += f" VALUES {kind} ({', '.join(self.sql(e) for e in node.expressions)})"
        for option in node.args.get("options") or []:
            name = option.this.name.upper() if isinstance(option, exp.Property) else ""
            sql += " " + (
                "" if name in _SKIPPED_OPTIONS else f"{name} = {self.sql(option, 'value')}"
            )
        return sql


# Methods defined here must win over TRANSFORMS entries inherited from sqlglot's generators.
TiDBRestoreGenerator.TRANSFORMS = {
    node: fn
    for node, fn in d.TiDBGenerator.TRANSFORMS.items()
    # our own nodes dispatch late-bound (dialect/generator.py) and so already reach the methods here
    if not node.__module__.startswith("sqlglot")
    or f"{node.key}_sql" not in vars(TiDBRestoreGenerator)
}
