"""The TiDB parser: sqlglot's MySQL parser plus the rules for what TiDB adds (see the
package docstring); every TiDB statement becomes a structured node, never `exp.Command`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.parsers.mysql import MySQLParser
from sqlglot.tokenizer_core import TokenType

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


def _words(self: TiDBParser) -> list[str]:
    """The remaining tokens of the statement, upper-cased (for ADMIN's free-form words)."""
    words = []
    while self._curr and self._curr.token_type != TokenType.SEMICOLON:
        words.append(self._curr.text)
        self._advance()
    return words


_CLOSERS = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.SEMICOLON})


class TiDBParser(MySQLParser):
    # Statements that start with a plain word rather than a keyword token.
    WORD_STATEMENT_PARSERS: ClassVar[dict[str, Callable[[TiDBParser], exp.Expr]]] = {
        "DO": lambda self: self.expression(Do(expressions=self._parse_csv(self._parse_assignment))),
        "ADMIN": lambda self: self._parse_admin(),
        "RECOVER": lambda self: self._parse_recover(),
        "FLASHBACK": lambda self: self._parse_flashback(),
        "SAVEPOINT": lambda self: self.expression(Savepoint(this=self._parse_id_var())),
        "RELEASE": lambda self: self._parse_release_savepoint(),
    }

    STATEMENT_PARSERS = {
        **MySQLParser.STATEMENT_PARSERS,
        TokenType.RENAME: lambda self: self._parse_rename_tables(),
        TokenType.REPLACE: lambda self: self._parse_replace(),
    }

    CONSTRAINT_PARSERS = {
        **MySQLParser.CONSTRAINT_PARSERS,
        "AUTO_RANDOM": lambda self: self._parse_auto_random(),
        "KEY": lambda self: self._parse_key_or_index(),
        "SERIAL": lambda self: self._parse_serial_default_value(),
        "UNSIGNED": lambda self: self.expression(UnsignedColumnConstraint()),
    }

    KEY_CONSTRAINT_OPTIONS = {
        **MySQLParser.KEY_CONSTRAINT_OPTIONS,
        "CLUSTERED": (),
        "NONCLUSTERED": (),
    }

    PROPERTY_PARSERS = {
        **MySQLParser.PROPERTY_PARSERS,
        "PARTITION BY": lambda self: self._parse_tidb_partition_by(),
        "TTL": lambda self: self._parse_ttl(),
        "PLACEMENT": lambda self: self._parse_placement_policy(),
        **{
            name: (lambda self, name=name: self._parse_tidb_option(name))
            for name in (
                "SHARD_ROW_ID_BITS",
                "PRE_SPLIT_REGIONS",
                "AUTO_ID_CACHE",
                "AUTO_RANDOM_BASE",
                "TTL_ENABLE",
                "TTL_JOB_INTERVAL",
                "ATTRIBUTES",
                "STATS_BUCKETS",
                "STATS_TOPN",
                "STATS_COL_CHOICE",
                "STATS_COL_LIST",
                "STATS_SAMPLE_RATE",
                "SECONDARY_ENGINE_ATTRIBUTE",
                "AUTOEXTEND_SIZE",
                "AUTO_INCREMENT",
                "AVG_ROW_LENGTH",
                "CHECKSUM",
                "COMPRESSION",
                "CONNECTION",
                "DELAY_KEY_WRITE",
                "INSERT_METHOD",
                "KEY_BLOCK_SIZE",
                "MAX_ROWS",
                "MIN_ROWS",
                "PACK_KEYS",
                "PASSWORD",
                "ROW_FORMAT",
                "STATS_AUTO_RECALC",
                "STATS_PERSISTENT",
                "STATS_SAMPLE_PAGES",
                "TABLESPACE",
                "UNION",
            )
        },
    }

    ALTER_PARSERS = {
        **MySQLParser.ALTER_PARSERS,
        "ADD": lambda self: self._parse_tidb_alter_add(),
        "DROP": lambda self: self._parse_tidb_alter_drop(),
        "TRUNCATE": lambda self: self._parse_partition_action("TRUNCATE"),
        "COALESCE": lambda self: self._parse_partition_action("COALESCE"),
        "REBUILD": lambda self: self._parse_partition_action("REBUILD"),
        "OPTIMIZE": lambda self: self._parse_partition_action("OPTIMIZE"),
        "ANALYZE": lambda self: self._parse_partition_action("ANALYZE"),
        "CHECK": lambda self: self._parse_partition_action("CHECK"),
        "REPAIR": lambda self: self._parse_partition_action("REPAIR"),
        "EXCHANGE": lambda self: self._parse_exchange_partition(),
        "REORGANIZE": lambda self: self._parse_reorganize_partition(),
        "PARTITION": lambda self: self._parse_alter_partition(),
        "REMOVE": lambda self: self._parse_remove(),
        "SET": lambda self: self._parse_tidb_alter_set(),
        "CACHE": lambda self: self.expression(exp.Property(this=exp.var("CACHE"))),
        "NOCACHE": lambda self: self.expression(exp.Property(this=exp.var("NOCACHE"))),
        "CONVERT": lambda self: self._parse_convert_charset(),
    }

    ALTERABLES = {*MySQLParser.ALTERABLES, TokenType.DATABASE, TokenType.SCHEMA}
    ALTER_TABLE_PARTITIONS = False

    NO_PAREN_FUNCTION_PARSERS = {
        **MySQLParser.NO_PAREN_FUNCTION_PARSERS,
        "NEXT": lambda self: self._parse_next_value_for(),
    }

    PRIMARY_PARSERS = {
        **MySQLParser.PRIMARY_PARSERS,
        # `DEFAULT` in VALUES/SET, and MySQL's DEFAULT(col) function
        TokenType.DEFAULT: lambda self, token: self._parse_default_value(),
    }

    # -- expressions -------------------------------------------------------------------------

    def _parse_between(self, this: exp.Expr | None) -> exp.Between:
        # TiDB's grammar (parser.y `PredicateExpr`): BitExpr BETWEEN BitExpr AND
        # PredicateExpr, so a predicate after the upper bound binds to it: `a BETWEEN b AND c
        # BETWEEN d AND e` is `a BETWEEN b AND (c BETWEEN d AND e)`, as in MySQL (sqlglot
        # reads the upper bound as a BitExpr and chains the next BETWEEN on the first)
        if isinstance(this, exp.Is | exp.NullSafeEQ):
            this = exp.Paren(this=this)
        low = self._parse_bitwise()
        self._match(TokenType.AND)
        high = self._parse_range()
        return self.expression(exp.Between(this=this, low=low, high=high))

    # -- statements --------------------------------------------------------------------------

    def _parse_default_value(self) -> exp.Expr:
        if not self._match(TokenType.L_PAREN):
            return exp.var("DEFAULT")
        column = self._parse_column()
        self._match_r_paren()
        return self.expression(DefaultOf(this=column))

    def _parse_csv(self, parse_method: Callable[[], Any], sep: TokenType = TokenType.COMMA) -> Any:
        # sqlglot's version swallows a separator with no item after it, so `(a INT,,)`,
        # `VALUES (1,)` and `SELECT a,` parse. TiDB rejects a dangling separator; anything else
        # after it is left unconsumed for the caller, which continues from it (ALTER TABLE mixes
        # actions and table options) or rejects it.
        item = parse_method()
        items = [] if item is None else [item]
        while self._match(sep):
            separator = self._prev
            if isinstance(item, exp.Expr):
                self._add_comments(item)
            item = parse_method()
            if item is not None:
                items.append(item)
                continue
            if not self._curr or self._curr.token_type in _CLOSERS:
                self.raise_error(f"Expected an item after '{separator.text}'", separator)
            self._retreat(self._index - 1)
            break
        return items

    def _warn_unsupported(self) -> None:
        # A statement sqlglot falls back to `exp.Command` for is refused with a located
        # error (script.parse_statements); sqlglot's log line would print before it.
        return

    def _parse_statement(self) -> exp.Expr | None:
        if self._curr and self._curr.token_type == TokenType.VAR:
            parser = self.WORD_STATEMENT_PARSERS.get(self._curr.text.upper())
            if parser:
                self._advance()
                return parser(self)
        return super()._parse_statement()

    def _parse_transaction(self) -> exp.Transaction | exp.Command:
        """BEGIN / START TRANSACTION and their modes, TiDB's `WITH CONSISTENT SNAPSHOT` and
        `WITH CAUSAL CONSISTENCY ONLY` among them (sqlglot's stops at WITH, a keyword)."""
        this = self._prev.text if self._match_texts(self.TRANSACTION_KIND) else None
        self._match_texts(("TRANSACTION", "WORK"))
        modes = []
        while True:
            words = []
            if self._match(TokenType.WITH):
                words.append("WITH")
            while self._match(TokenType.VAR) or self._match(TokenType.NOT):
                words.append(self._prev.text.upper())
            if words:
                modes.append(" ".join(words))
            if not self._match(TokenType.COMMA):
                break
        return self.expression(exp.Transaction(this=this, modes=modes))

    def _parse_rename_tables(self) -> exp.Expr:
        self._match(TokenType.TABLE) or self._match_text_seq("TABLES")

        def pair() -> exp.Expr:
            this = self._parse_table_parts()
            if not self._match_text_seq("TO"):
                self.raise_error("Expecting TO in RENAME TABLE")
            return self.expression(RenamePair(this=this, to=self._parse_table_parts()))

        return self.expression(RenameTables(expressions=self._parse_csv(pair)))

    def _parse_replace(self) -> exp.Expr:
        insert = self._parse_insert()
        return self.expression(ReplaceInto(**insert.args))

    def _parse_release_savepoint(self) -> exp.Expr:
        if not self._match_text_seq("SAVEPOINT"):
            self.raise_error("Expecting SAVEPOINT after RELEASE")
        return self.expression(Savepoint(this=self._parse_id_var(), release=True))

    def _parse_admin(self) -> exp.Expr:
        words = _words(self)
        if not words:
            self.raise_error("Expecting an ADMIN command")
        return self.expression(Admin(this=exp.var(" ".join(w.upper() for w in words))))

    def _parse_recover(self) -> exp.Expr:
        if not self._match(TokenType.TABLE):
            self.raise_error("Expecting TABLE after RECOVER")
        if self._match_text_seq("BY", "JOB"):
            return self.expression(RecoverTable(job=self._parse_number()))
        return self.expression(RecoverTable(this=self._parse_table_parts()))

    def _parse_flashback(self) -> exp.Expr:
        if self._match(TokenType.TABLE):
            kind = "TABLE"
            this: exp.Expr | None = self._parse_table_parts()
        elif self._match_set((TokenType.DATABASE, TokenType.SCHEMA)):
            kind = "DATABASE"
            this = self._parse_id_var()
        else:
            self.raise_error("Expecting TABLE or DATABASE after FLASHBACK")
            raise AssertionError  # raise_error raises at the RAISE error level
        to = self._parse_id_var() if self._match_text_seq("TO") else None
        return self.expression(Flashback(this=this, kind=kind, to=to))

    def _parse_into(self) -> exp.Into | None:
        # SELECT ... INTO @a, @b: a list of user variables, not a table and a comma join
        if (
            self._next
            and self._next.token_type == TokenType.PARAMETER
            and self._match(TokenType.INTO)
        ):
            return self.expression(exp.Into(expressions=self._parse_csv(self._parse_bitwise)))
        return super()._parse_into()

    def _parse_create(self) -> exp.Expr:  # type: ignore[override]
        index = self._index
        replace = self._match_pair(TokenType.OR, TokenType.REPLACE)
        policy = self._parse_policy_statement("CREATE", replace=replace)
        if policy:
            return policy
        self._retreat(index)
        return super()._parse_create()

    def _parse_index_params(self) -> exp.IndexParameters:
        params = super()._parse_index_params()
        # MySQL's index options after the key parts: USING, COMMENT, VISIBLE/INVISIBLE
        options: list[exp.Expr] = []
        while self._curr:
            if self._match_texts(("VISIBLE", "INVISIBLE")):
                options.append(exp.var(self._prev.text.upper()))
            elif self._match(TokenType.COMMENT):
                value = self._parse_string()
                options.append(self.expression(exp.Property(this=exp.var("COMMENT"), value=value)))
            elif self._match(TokenType.USING):
                options.append(exp.var(f"USING {self._advance_any() and self._prev.text.upper()}"))
            else:
                break
        if not options:
            return params
        return self.expression(TiDBIndexParameters(**params.args, options=options))

    def _parse_drop(self, exists: bool = False, kind: str | None = None) -> exp.Expr:  # type: ignore[override]
        policy = self._parse_policy_statement("DROP")
        return policy or super()._parse_drop(exists=exists, kind=kind)

    def _parse_alter(self) -> exp.Expr:  # type: ignore[override]
        policy = self._parse_policy_statement("ALTER")
        if policy:
            return policy
        if self._match_set((TokenType.DATABASE, TokenType.SCHEMA)):
            return self._parse_alter_database()
        return super()._parse_alter()

    def _parse_policy_statement(self, action: str, replace: bool = False) -> exp.Expr | None:
        if self._match_text_seq("PLACEMENT", "POLICY"):
            kind = "PLACEMENT POLICY"
        elif self._match_text_seq("RESOURCE", "GROUP"):
            kind = "RESOURCE GROUP"
        else:
            return None
        exists = self._parse_exists(not_=action == "CREATE")
        this = self._parse_id_var()
        options: list[exp.Expr] = []
        while self._curr and self._curr.token_type != TokenType.SEMICOLON:
            self._match(TokenType.COMMA)
            key = self._parse_var(any_token=True)
            if not key:
                break
            if self._match(TokenType.EQ) or (
                self._curr and self._curr.token_type not in (TokenType.COMMA, TokenType.SEMICOLON)
            ):
                value = self._parse_primary() or self._parse_var(any_token=True)
                options.append(self.expression(exp.Property(this=key, value=value)))
            else:
                options.append(key)  # a flag such as BURSTABLE
        return self.expression(
            PolicyStatement(
                action=action, kind=kind, this=this, exists=exists, replace=replace, options=options
            )
        )

    def _parse_alter_database(self) -> exp.Expr:
        this = None
        if (
            self._curr
            and not self._match_texts(self.PROPERTY_PARSERS, advance=False)
            and self._curr.token_type
            not in (
                TokenType.DEFAULT,
                TokenType.CHARACTER_SET,
                TokenType.COLLATE,
                TokenType.SET,
            )
        ):
            this = self._parse_id_var()
        options: list[exp.Expr] = []
        while self._curr and self._curr.token_type != TokenType.SEMICOLON:
            if self._match(TokenType.SET):
                options.append(self._parse_tidb_alter_set(already_matched=True))
                continue
            prop = self._parse_property()
            if not prop:
                self.raise_error("Unexpected ALTER DATABASE option")
                break
            options.extend(prop if isinstance(prop, list) else [prop])
        return self.expression(AlterDatabase(this=this, options=options))

    # -- column definitions ------------------------------------------------------------------

    def _parse_types(
        self,
        check_func: bool = False,
        schema: bool = False,
        allow_identifiers: bool = True,
        with_collation: bool = False,
    ) -> exp.Expr | None:
        # MySQL's FLOAT[(M[,D])] UNSIGNED has no unsigned DType in sqlglot; parse the type
        # alone and let UNSIGNED become a column constraint.
        if (
            self._curr
            and self._curr.token_type == TokenType.FLOAT
            and self._next_is_unsigned_float()
        ):
            self._advance()
            params = (
                self._parse_wrapped_csv(self._parse_number)
                if self._match(TokenType.L_PAREN, advance=False)
                else []
            )
            return exp.DataType(
                this=exp.DType.FLOAT,
                expressions=[exp.DataTypeParam(this=p) for p in params] or None,
            )
        return super()._parse_types(
            check_func=check_func,
            schema=schema,
            allow_identifiers=allow_identifiers,
            with_collation=with_collation,
        )

    def _next_is_unsigned_float(self) -> bool:
        i = self._index + 1
        toks = self._tokens
        if i < len(toks) and toks[i].token_type == TokenType.L_PAREN:
            while i < len(toks) and toks[i].token_type != TokenType.R_PAREN:
                i += 1
            i += 1
        return i < len(toks) and toks[i].text.upper() == "UNSIGNED"

    def _parse_primary_key_part(self) -> exp.Expr | None:
        # MySQL allows a sort order on key parts: PRIMARY KEY (a DESC, b(5) ASC)
        part = super()._parse_primary_key_part()
        if part is not None and self._match_set((TokenType.ASC, TokenType.DESC)):
            desc = self._prev.token_type == TokenType.DESC
            return self.expression(exp.Ordered(this=part, desc=desc, nulls_first=not desc))
        return part

    def _parse_auto_random(self) -> exp.Expr:
        shard = range_ = None
        if self._match(TokenType.L_PAREN):
            shard = self._parse_number()
            if self._match(TokenType.COMMA):
                range_ = self._parse_number()
            self._match_r_paren()
        return self.expression(AutoRandomColumnConstraint(this=shard, expression=range_))

    def _parse_serial_default_value(self) -> exp.Expr:
        if not self._match_text_seq("DEFAULT", "VALUE"):
            self.raise_error("Expecting DEFAULT VALUE after SERIAL")
        return self.expression(SerialDefaultValueColumnConstraint())

    def _parse_key_or_index(self) -> exp.Expr | None:
        # In a column definition a bare KEY means PRIMARY KEY; elsewhere KEY starts an index.
        nxt = self._curr
        if (
            nxt is None
            or nxt.token_type in (TokenType.COMMA, TokenType.R_PAREN)
            or (
                nxt.text.upper() in self.CONSTRAINT_PARSERS | self.KEY_CONSTRAINT_OPTIONS
                and not (self._next and self._next.token_type == TokenType.L_PAREN)
            )
        ):
            return self.expression(
                exp.PrimaryKeyColumnConstraint(options=self._parse_key_constraint_options())
            )
        return self._parse_index_constraint()

    def _parse_index_constraint(self, kind: str | None = None) -> exp.IndexColumnConstraint:
        constraint = super()._parse_index_constraint(kind=kind)
        self._attach_index_predicate(constraint)
        return constraint

    def _attach_index_predicate(self, node: exp.Expr) -> None:
        if self._match(TokenType.WHERE):
            options = [*(node.args.get("options") or [])]
            options.append(self.expression(IndexPredicate(this=self._parse_disjunction())))
            node.set("options", options)

    # -- table options -----------------------------------------------------------------------

    def _parse_tidb_option(self, name: str) -> exp.Expr:
        self._match(TokenType.EQ)
        value = self._parse_primary() or self._parse_var(any_token=True)
        return self.expression(exp.Property(this=exp.var(name), value=value))

    def _parse_ttl(self) -> exp.Expr:
        self._match(TokenType.EQ)
        return self.expression(TTLProperty(this=self._parse_term()))

    def _parse_placement_policy(self) -> exp.Expr:
        if not self._match_text_seq("POLICY"):
            self.raise_error("Expecting POLICY after PLACEMENT")
        self._match(TokenType.EQ)
        value: exp.Expr | None
        if self._match_text_seq("SET", "DEFAULT") or self._match(TokenType.DEFAULT):
            value = exp.var("DEFAULT")
        else:
            value = self._parse_id_var()
        return self.expression(exp.Property(this=exp.var("PLACEMENT POLICY"), value=value))

    def _parse_tidb_partition_by(self) -> exp.Expr:
        linear = self._match_text_seq("LINEAR")
        if not self._match_texts(("RANGE", "LIST", "HASH", "KEY")):
            self.raise_error("Expecting RANGE, LIST, HASH or KEY after PARTITION BY")
        kind = self._prev.text.upper()
        columns = kind in ("RANGE", "LIST") and self._match_text_seq("COLUMNS")
        this = None
        column_list: list[exp.Expr] = []
        if kind == "KEY" and self._match_text_seq("ALGORITHM"):
            self._match(TokenType.EQ)
            self._parse_number()
        if columns or kind == "KEY":
            column_list = self._parse_wrapped_csv(self._parse_id_var, optional=kind == "KEY")
        else:
            this = self._parse_wrapped(self._parse_disjunction)
        partitions = self._parse_number() if self._match_text_seq("PARTITIONS") else None
        definitions = None
        if (
            self._match(TokenType.L_PAREN, advance=False)
            and self._next
            and self._next.text.upper() == "PARTITION"
        ):
            definitions = self._parse_wrapped_csv(self._parse_partition_def)
        return self.expression(
            PartitionBy(
                kind=kind,
                this=this,
                expressions=column_list,
                columns=columns,
                linear=linear,
                partitions=partitions,
                definitions=definitions,
            )
        )

    def _parse_partition_def(self) -> exp.Expr:
        if not self._match(TokenType.PARTITION):
            self.raise_error("Expecting PARTITION")
        name = self._parse_id_var()
        kind = None
        values: list[exp.Expr] = []
        if self._match_text_seq("VALUES", "LESS", "THAN"):
            kind = "LESS THAN"
            if self._match_text_seq("MAXVALUE"):
                values = [exp.var("MAXVALUE")]
            else:
                values = self._parse_wrapped_csv(self._parse_partition_value)
        elif self._match_text_seq("VALUES", "IN"):
            kind = "IN"
            values = self._parse_wrapped_csv(self._parse_partition_value)
        elif self._match_text_seq("DEFAULT"):
            kind = "DEFAULT"
        options: list[exp.Expr] = []
        while self._curr and self._curr.token_type not in (TokenType.COMMA, TokenType.R_PAREN):
            if self._match(TokenType.COMMENT):
                self._match(TokenType.EQ)
                options.append(
                    self.expression(
                        exp.Property(this=exp.var("COMMENT"), value=self._parse_string())
                    )
                )
            elif self._match_text_seq("ENGINE"):
                self._match(TokenType.EQ)
                options.append(
                    self.expression(
                        exp.Property(this=exp.var("ENGINE"), value=self._parse_var_or_string())
                    )
                )
            elif self._match_text_seq("PLACEMENT"):
                options.append(self._parse_placement_policy())
            else:
                self.raise_error("Unexpected partition option")
                break
        return self.expression(
            PartitionDef(this=name, kind=kind, expressions=values, options=options)
        )

    def _parse_partition_value(self) -> exp.Expr | None:
        if self._match_text_seq("MAXVALUE"):
            return exp.var("MAXVALUE")
        return self._parse_disjunction()

    # -- ALTER TABLE actions -----------------------------------------------------------------

    def _parse_tidb_alter_add(self) -> Any:
        if self._match(TokenType.PARTITION):
            exists = self._parse_exists(not_=True)
            if self._match_text_seq("PARTITIONS"):
                return self.expression(
                    PartitionNames(action="ADD", count=self._parse_number(), exists=exists)
                )
            defs = self._parse_wrapped_csv(self._parse_partition_def, optional=True)
            return self.expression(PartitionNames(action="ADD", definitions=defs, exists=exists))
        index = self._index
        self._match(TokenType.COLUMN)
        if self._match(TokenType.L_PAREN, advance=False) and not self._next_is_constraint():
            # ADD [COLUMN] (c1 type, c2 type, ...)
            return self._parse_wrapped_csv(self._parse_column_def_with_exists)
        self._retreat(index)
        actions = super()._parse_alter_table_add()
        for action in actions:
            if isinstance(action, exp.AddConstraint):
                for constraint in action.expressions:
                    self._attach_index_predicate(constraint)
        return actions

    def _next_is_constraint(self) -> bool:
        return bool(
            self._next
            and self._next.text.upper()
            in (
                "PRIMARY",
                "UNIQUE",
                "KEY",
                "INDEX",
                "CONSTRAINT",
                "FOREIGN",
                "CHECK",
                "FULLTEXT",
                "SPATIAL",
            )
        )

    def _parse_tidb_alter_drop(self) -> Any:
        if self._match(TokenType.PARTITION):
            exists = self._parse_exists()
            return self.expression(
                PartitionNames(
                    action="DROP", expressions=self._parse_csv(self._parse_id_var), exists=exists
                )
            )
        return super()._parse_alter_table_drop()

    def _parse_partition_action(self, action: str) -> exp.Expr:
        if not self._match(TokenType.PARTITION):
            self.raise_error(f"Expecting PARTITION after {action}")
        if action == "COALESCE":
            return self.expression(PartitionNames(action=action, count=self._parse_number()))
        if self._match(TokenType.ALL):
            return self.expression(PartitionNames(action=action, all=True))
        return self.expression(
            PartitionNames(action=action, expressions=self._parse_csv(self._parse_id_var))
        )

    def _parse_exchange_partition(self) -> exp.Expr:
        if not self._match(TokenType.PARTITION):
            self.raise_error("Expecting PARTITION after EXCHANGE")
        name = self._parse_id_var()
        if not self._match_pair(TokenType.WITH, TokenType.TABLE):
            self.raise_error("Expecting WITH TABLE")
        table = self._parse_table_parts()
        validation = None
        if self._match_texts(("WITH", "WITHOUT")):
            validation = self._prev.text.upper()
            if not self._match_text_seq("VALIDATION"):
                self.raise_error("Expecting VALIDATION")
        return self.expression(
            PartitionNames(
                action="EXCHANGE", expressions=[name], table=table, validation=validation
            )
        )

    def _parse_reorganize_partition(self) -> exp.Expr:
        if not self._match(TokenType.PARTITION):
            self.raise_error("Expecting PARTITION after REORGANIZE")
        names = (
            []
            if self._match_text_seq("INTO", advance=False)
            else self._parse_csv(self._parse_id_var)
        )
        if not self._match_text_seq("INTO"):
            self.raise_error("Expecting INTO")
        defs = self._parse_wrapped_csv(self._parse_partition_def)
        return self.expression(
            PartitionNames(action="REORGANIZE", expressions=names, definitions=defs)
        )

    def _parse_partition(self) -> exp.Partition | None:
        # Partition selection is `PARTITION (p0, ...)`; `ALTER TABLE t PARTITION p0 ...` is not.
        if self._next and self._next.token_type != TokenType.L_PAREN:
            return None
        return super()._parse_partition()

    def _parse_alter_partition(self) -> exp.Expr:
        if self._match_text_seq("BY"):
            return self._parse_tidb_partition_by()
        name = self._parse_id_var()
        options: list[exp.Expr] = []
        while self._curr and self._curr.token_type not in (TokenType.COMMA, TokenType.SEMICOLON):
            prop = self._parse_property()
            if not prop:
                self.raise_error("Unexpected partition option")
                break
            options.extend(prop if isinstance(prop, list) else [prop])
        return self.expression(PartitionOptions(this=name, options=options))

    def _parse_remove(self) -> exp.Expr:
        if self._match_texts(("PARTITIONING", "TTL")):
            return self.expression(RemoveClause(this=exp.var(self._prev.text.upper())))
        self.raise_error("Expecting PARTITIONING or TTL after REMOVE")
        raise AssertionError

    def _parse_tidb_alter_set(self, already_matched: bool = True) -> exp.Expr:
        if self._match_text_seq("TIFLASH", "REPLICA"):
            count = self._parse_number()
            labels = None
            if self._match_text_seq("LOCATION", "LABELS"):
                labels = self._parse_csv(self._parse_string)
            return self.expression(TiFlashReplica(this=count, labels=labels))
        return super()._parse_alter_table_set()

    def _parse_convert_charset(self) -> exp.Expr:
        if not self._match_text_seq("TO"):
            self.raise_error("Expecting TO after CONVERT")
        if not (
            self._match(TokenType.CHARACTER_SET) or self._match_pair(TokenType.CHAR, TokenType.SET)
        ):
            self.raise_error("Expecting CHARACTER SET after CONVERT TO")
        charset = self._parse_var_or_string()
        collate = self._parse_var_or_string() if self._match(TokenType.COLLATE) else None
        return self.expression(ConvertCharset(this=charset, collate=collate))
