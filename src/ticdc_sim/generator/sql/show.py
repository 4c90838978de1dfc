"""TiDB's answers to SHOW and DESCRIBE: the catalog as TiDB prints it.

Each answer mirrors TiDB's executor: `pkg/executor/show.go` (`fetchShowColumns`,
`fetchShowIndex`, `ConstructResultOfShowCreateTable`, `ConstructResultOfShowCreateSequence`,
`fetchShowCreateTable4View`, `ConstructResultOfShowCreateDatabase`, `fetchShowTables`,
`fetchShowDatabases`, `fetchShowVariables`, `fetchShowWarnings`), the column descriptions of
`pkg/table/column.go` (`NewColDesc`), partitions as `pkg/ddl/partition.go`
(`AppendPartitionInfo`) writes them, and the result columns of `pkg/planner/core`
(`buildShowSchema`). The statement is read from its tokens with TiDB's grammar (`FROM` or
`IN`, `FIELDS` for `COLUMNS`, `KEYS` and `INDEXES` for `INDEX`, `LIKE` or `WHERE` filters).

Other SHOW statements TiDB knows answer with no rows and a warning that says so; a SHOW that
is no statement of TiDB's is a syntax error (1064).

Where this differs from TiDB: `AUTO_INCREMENT=` is the next id this one simulated server hands
out (a TiDB server shows its allocator's batch end, 30001 after the first insert); a view's
column list is not known, so SHOW CREATE VIEW leaves it out; index cardinality is 0 (no
statistics).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import Token, TokenType

from ticdc_sim.errors import SQLError, WarningEntry
from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.engine import Engine, ResultSet
from ticdc_sim.generator.sql.evaluate import (
    Context,
    Scope,
    compile_expr,
    like,
    stable_uuid,
    truth,
)
from ticdc_sim.generator.sql.script import parse_one
from ticdc_sim.generator.sql.sysvars import SERVER_VARIABLES, STATUS_VARIABLES
from ticdc_sim.generator.sql.values import as_text
from ticdc_sim.generator.sql.variables import SESSION_VARIABLES
from ticdc_sim.model.mysql import DEFAULT_COLLATION_OF, STRING_TYPES, MySQLType, TiDBFlag
from ticdc_sim.model.table import (
    ColumnInfo,
    ForeignKeyInfo,
    IndexInfo,
    PartitionInfo,
    TableInfo,
)
from ticdc_sim.model.type_names import full_type

Row = tuple[Any, ...]


# what the first words after SHOW may be in TiDB's grammar without an answer here: empty
_OTHER_SHOWS = frozenset(
    {"CHARSET", "CHARACTER", "COLLATION", "CONFIG", "ENGINES", "GRANTS", "MASTER", "BINARY",
     "BINLOG", "PRIVILEGES", "PROCEDURE", "FUNCTION", "PROCESSLIST", "TABLE",
     "TRIGGERS", "EVENTS", "OPEN", "PLUGINS", "PROFILES", "PROFILE", "STATS_EXTENDED",
     "STATS_META", "STATS_HISTOGRAMS", "STATS_BUCKETS", "STATS_TOPN", "STATS_HEALTHY",
     "STATS_LOCKED", "HISTOGRAMS_IN_FLIGHT", "COLUMN_STATS_USAGE", "BINDINGS",
     "BINDING_CACHE", "ANALYZE", "BUILTINS", "BACKUPS", "RESTORES", "PLACEMENT", "IMPORT",
     "SESSION_STATES", "PUMP", "DRAINER", "RESOURCE", "ENGINE"}
)  # fmt: skip
# the result columns of those with more than TiDB's default one (`buildShowSchema`)
_OTHER_COLUMNS = {
    "ENGINES": ["Engine", "Support", "Comment", "Transactions", "XA", "Savepoints"],
    "PROCESSLIST": ["Id", "User", "Host", "db", "Command", "Time", "State", "Info"],
    "COLLATION": ["Collation", "Charset", "Id", "Default", "Compiled", "Sortlen", "Pad_attribute"],
    "CHARSET": ["Charset", "Description", "Default collation", "Maxlen"],
    "CHARACTER": ["Charset", "Description", "Default collation", "Maxlen"],
    "PLUGINS": ["Name", "Status", "Type", "Library", "License", "Version"],
    "PRIVILEGES": ["Privilege", "Context", "Comment"],
    "TABLE": [
        "Name", "Engine", "Version", "Row_format", "Rows", "Avg_row_length", "Data_length",
        "Max_data_length", "Index_length", "Data_free", "Auto_increment", "Create_time",
        "Update_time", "Check_time", "Collation", "Checksum", "Create_options", "Comment",
    ],
}  # fmt: skip
# EXPLAIN followed by one of these explains a statement; otherwise it describes a table
_EXPLAINED = frozenset(
    {"SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "WITH", "TABLE", "VALUES", "FORMAT",
     "ANALYZE", "FOR", "(", "IMPORT", "LOAD"}
)  # fmt: skip
_COLUMNS = ["Field", "Type", "Null", "Key", "Default", "Extra"]
_FULL_COLUMNS = ["Field", "Type", "Collation", "Null", "Key", "Default", "Extra"]
_FULL_COLUMNS += ["Privileges", "Comment"]
_INDEX_COLUMNS = [
    "Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name", "Collation",
    "Cardinality", "Sub_part", "Packed", "Null", "Index_type", "Comment", "Index_comment",
    "Visible", "Expression", "Clustered", "Global",
]  # fmt: skip
_INDEX_TYPES: list[MySQLType | None] = [None, MySQLType.LONGLONG, None, MySQLType.LONGLONG]
_INDEX_TYPES += [None, None, MySQLType.LONGLONG, MySQLType.LONGLONG] + [None] * 9
_PRIVILEGES = "select,insert,update,references"
_DEFAULT_AUTO_RANDOM_RANGE = 64


def is_diagnostics(text: str) -> bool:
    """SHOW WARNINGS / ERRORS (and COUNT(*) of them): statements that leave the last
    statement's warnings be, as MySQL's diagnostics area does."""
    words = text[:64].upper().split()[:3]  # a statement may be megabytes long
    return words[:1] == ["SHOW"] and bool({"WARNINGS", "ERRORS"} & set(words[1:]))


def answer(engine: Engine, text: str, warnings: Sequence[WarningEntry]) -> ResultSet | None:
    """The result set of a SHOW or DESCRIBE statement; None for other statements. Errors
    are TiDB's (1146 no such table, 1049 no such database, 1064 not a SHOW of TiDB's)."""
    head = text.lstrip()[:8].upper()
    if not head.startswith(("SHOW", "DESC", "EXPLAIN")):
        return None
    try:
        tokens = d.TiDB().tokenize(text)
    except TokenError:
        return None  # the engine reports it, located
    reader = _Reader(tokens, text)
    first = reader.word()
    if first in ("DESC", "DESCRIBE", "EXPLAIN"):
        reader.next()
        if reader.word() in _EXPLAINED or reader.done():
            return None  # EXPLAIN <statement>: the engine's
        return _describe(engine, reader)
    if first != "SHOW":
        return None
    reader.next()
    return _show(engine, reader, warnings)


# -- reading the statement ---------------------------------------------------------------------


class _Reader:
    """The statement's tokens, read front to back."""

    def __init__(self, tokens: list[Token], text: str) -> None:
        self.tokens = [t for t in tokens if t.token_type != TokenType.SEMICOLON]
        self.text = text
        self.at = 0

    def done(self) -> bool:
        return self.at >= len(self.tokens)

    def word(self) -> str:
        return "" if self.done() else self.tokens[self.at].text.upper()

    def next(self) -> Token:
        if self.done():
            raise self.syntax_error()
        self.at += 1
        return self.tokens[self.at - 1]

    def take(self, *words: str) -> str | None:
        if self.word() in words and not self._quoted():
            self.at += 1
            return self.tokens[self.at - 1].text.upper()
        return None

    def _quoted(self) -> bool:
        return self.tokens[self.at].token_type in (TokenType.IDENTIFIER, TokenType.STRING)

    def name(self) -> str:
        token = self.next()
        if token.token_type in (TokenType.STRING, TokenType.NUMBER) or not token.text:
            raise self.syntax_error(token)
        if token.token_type not in (TokenType.IDENTIFIER, TokenType.VAR) and not (
            token.text.replace("_", "").isalnum()
        ):
            raise self.syntax_error(token)
        return token.text

    def qualified(self) -> tuple[str | None, str]:
        """`name` or `db.name`."""
        first = self.name()
        if self.word() == "." and not self._quoted():
            self.at += 1
            return first, self.name()
        return None, first

    def string(self) -> str:
        token = self.next()
        if token.token_type != TokenType.STRING:
            raise self.syntax_error(token)
        return token.text

    def rest(self) -> str:
        """The text from the current token on (a WHERE condition)."""
        if self.done():
            raise self.syntax_error()
        return self.text[self.tokens[self.at].start :]

    def end(self) -> None:
        if not self.done():
            raise self.syntax_error(self.tokens[self.at])

    def syntax_error(self, token: Token | None = None) -> SQLError:
        where = (  # TiDB quotes at most 80 characters of what follows
            f'line {token.line} column {token.col} near "{self.text[token.start :][:80].strip()}"'
            if token is not None
            else f'line 1 column {len(self.text)} near ""'
        )
        return SQLError(
            "You have an error in your SQL syntax; check the manual that corresponds to your"
            f" TiDB version for the right syntax to use {where}",
            code=1064,
        )


@dataclass
class _Filter:
    """`LIKE 'pattern'` (on the first column, case-insensitively), `WHERE condition`, or
    one name (DESCRIBE t col)."""

    pattern: str | None = None
    where: exp.Expr | None = None
    exact: str | None = None

    def apply(self, engine: Engine, names: list[str], rows: list[Row]) -> list[Row]:
        if self.exact is not None:
            return [r for r in rows if str(r[0]).lower() == self.exact.lower()]
        if self.pattern is not None:
            pattern = self.pattern
            return [r for r in rows if like(str(r[0]).lower(), pattern.lower(), "\\", True)]
        if self.where is None:
            return rows
        scope = Scope({n.lower(): (i, "utf8mb4_general_ci") for i, n in enumerate(names)})
        condition = compile_expr(self.where, scope)
        return [r for r in rows if truth(condition(Context(session=engine, row=r)))]


def _filter(reader: _Reader, like_allowed: bool = True) -> _Filter:
    if like_allowed and reader.take("LIKE"):
        found = _Filter(pattern=reader.string())
        reader.end()
        return found
    if reader.take("WHERE"):
        node = parse_one(f"SELECT 1 WHERE {reader.rest()}")
        where = node.args.get("where")
        assert where is not None
        return _Filter(where=where.this)
    reader.end()
    return _Filter()


def _from(reader: _Reader) -> tuple[str | None, str]:
    """`FROM|IN tbl [FROM|IN db]`: (database or None, table)."""
    if not reader.take("FROM", "IN"):
        raise reader.syntax_error(None if reader.done() else reader.tokens[reader.at])
    db, table = reader.qualified()
    if reader.take("FROM", "IN"):
        db = reader.name()
    return db, table


# -- SHOW ------------------------------------------------------------------------------------


def _show(engine: Engine, reader: _Reader, warnings: Sequence[WarningEntry]) -> ResultSet:
    full = bool(reader.take("FULL"))
    extended = bool(reader.take("EXTENDED"))
    if not full:
        full = bool(reader.take("FULL"))
    scope = reader.take("GLOBAL", "SESSION", "LOCAL")
    kind = reader.word()
    handler = _SHOWS.get(kind)
    if handler is not None and not (scope and kind not in ("VARIABLES", "STATUS")):
        reader.next()
        return handler(engine, reader, _Options(full, extended, warnings))
    if kind == "COUNT":  # SHOW COUNT(*) WARNINGS | ERRORS
        words = [t.text.upper() for t in reader.tokens[reader.at :]]
        if words in (["COUNT", "(", "*", ")", "WARNINGS"], ["COUNT", "(", "*", ")", "ERRORS"]):
            count = len(warnings) if words[-1] == "WARNINGS" else 0
            return ResultSet([f"@@session.{words[-1][:-1].lower()}_count"], [(count,)], [None])
    if kind in _OTHER_SHOWS:
        return _not_simulated(engine, reader, kind)
    raise reader.syntax_error(None if reader.done() else reader.tokens[reader.at])


@dataclass
class _Options:
    full: bool
    extended: bool
    warnings: Sequence[WarningEntry]


def _not_simulated(engine: Engine, reader: _Reader, kind: str) -> ResultSet:
    shown = " ".join(reader.text.split())
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    engine.warn(f"SHOW {kind}", f"{shown} is not simulated here: answered with no rows")
    names = _OTHER_COLUMNS.get(kind, ["Value"])
    return ResultSet(names, [], [None] * len(names))


def _show_create(engine: Engine, reader: _Reader, options: _Options) -> ResultSet:
    what = reader.take("TABLE", "VIEW", "SEQUENCE", "DATABASE", "SCHEMA")
    if what is None:
        raise reader.syntax_error(None if reader.done() else reader.tokens[reader.at])
    if what in ("DATABASE", "SCHEMA"):
        if_not_exists = bool(reader.take("IF"))
        if if_not_exists and not (reader.take("NOT") and reader.take("EXISTS")):
            raise reader.syntax_error(None if reader.done() else reader.tokens[reader.at])
        name = reader.name()
        reader.end()
        schema = engine.catalog.schema(name)
        text = create_database(schema.name, schema.charset, schema.collation, if_not_exists)
        return ResultSet(["Database", "Create Database"], [(schema.name, text)], [None, None])
    db, name = reader.qualified()
    reader.end()
    info = engine.catalog.table(db, name)
    if info.is_view:
        if what == "SEQUENCE":
            raise _wrong_object(info, "SEQUENCE")
        names = ["View", "Create View", "character_set_client", "collation_connection"]
        row = (info.name, create_view(info), "utf8mb4", "utf8mb4_general_ci")
        return ResultSet(names, [row], [None] * 4)
    if info.sequence is not None:
        names = ["Sequence", "Create Sequence"] if what == "SEQUENCE" else ["Table", "Create Table"]
        return ResultSet(names, [(info.name, create_sequence(info))], [None, None])
    if what != "TABLE":
        raise _wrong_object(info, what)
    next_id = _next_id(engine, info)
    return ResultSet(
        ["Table", "Create Table"], [(info.name, create_table(info, engine, next_id))], [None, None]
    )


def _wrong_object(info: TableInfo, what: str) -> SQLError:
    return SQLError(f"'{info.schema}.{info.name}' is not {what}", code=1347)


def _show_columns(engine: Engine, reader: _Reader, options: _Options) -> ResultSet:
    db, name = _from(reader)
    return _columns(engine, db, name, options.full, _filter(reader), options.extended)


def _describe(engine: Engine, reader: _Reader) -> ResultSet:
    db, name = reader.qualified()
    found = _Filter()
    if not reader.done():  # one column, or a LIKE pattern for column names
        token = reader.next()
        if token.token_type == TokenType.STRING:
            found = _Filter(pattern=token.text)
        else:
            found = _Filter(exact=token.text)
        reader.end()
    return _columns(engine, db, name, False, found)


def _columns(
    engine: Engine,
    db: str | None,
    name: str,
    full: bool,
    found: _Filter,
    extended: bool = False,
) -> ResultSet:
    """DESCRIBE / SHOW [FULL] [EXTENDED] COLUMNS: EXTENDED shows hidden columns too (an
    expression index's)."""
    info = engine.catalog.table(db, name)
    names = _FULL_COLUMNS if full else _COLUMNS
    rows = [column_row(c, engine, full) for c in info.columns if extended or not c.hidden]
    return ResultSet(list(names), found.apply(engine, names, rows), [None] * len(names))


def _show_index(engine: Engine, reader: _Reader, options: _Options) -> ResultSet:
    db, name = _from(reader)
    found = _filter(reader, like_allowed=False)
    info = engine.catalog.table(db, name)
    rows = index_rows(info)
    return ResultSet(list(_INDEX_COLUMNS), found.apply(engine, _INDEX_COLUMNS, rows), _INDEX_TYPES)


def _show_tables(engine: Engine, reader: _Reader, options: _Options) -> ResultSet:
    db = reader.name() if reader.take("FROM", "IN") else engine.catalog.current_schema
    found = _filter(reader)
    schema = engine.catalog.schema(db)
    label = f"Tables_in_{schema.name}"
    if found.pattern is not None:
        label += f" ({found.pattern})"
    names = [label, "Table_type"] if options.full else [label]
    infos = sorted(schema.tables.values(), key=lambda t: t.name)
    rows = [(t.name, _table_type(t))[: len(names)] for t in infos]
    return ResultSet(names, found.apply(engine, names, rows), [None] * len(names))


def _table_type(info: TableInfo) -> str:
    return "VIEW" if info.is_view else "SEQUENCE" if info.sequence is not None else "BASE TABLE"


def _show_databases(engine: Engine, reader: _Reader, options: _Options) -> ResultSet:
    found = _filter(reader)
    label = "Database" if found.pattern is None else f"Database ({found.pattern})"
    rows = [(s.name,) for s in sorted(engine.catalog.schemas.values(), key=lambda s: s.name)]
    return ResultSet([label], found.apply(engine, [label], rows), [None])


def _show_variables(engine: Engine, reader: _Reader, options: _Options) -> ResultSet:
    found = _filter(reader)
    names = ["Variable_name", "Value"]
    rows = []
    for name in sorted({*SERVER_VARIABLES, *SESSION_VARIABLES}):
        own = SESSION_VARIABLES.get(name)
        value = own.get(engine) if own is not None else SERVER_VARIABLES[name]
        value = engine.session.noop_values.get(name, value)  # what this session SET
        rows.append((name, _variable_text(value)))
    return ResultSet(names, found.apply(engine, names, rows), [None, None])


def _show_status(engine: Engine, reader: _Reader, options: _Options) -> ResultSet:
    found = _filter(reader)
    names = ["Variable_name", "Value"]
    clock = engine.catalog.clock
    values = {**STATUS_VARIABLES, "Uptime": (clock.physical - clock.started) // 1000}
    values["ddl_schema_version"] = engine.catalog.schema_version
    values["server_id"] = stable_uuid(engine.config.seed, 0)  # the engine's own start at 1
    rows = [(name, _variable_text(values[name])) for name in sorted(values)]
    return ResultSet(names, found.apply(engine, names, rows), [None, None])


def _variable_text(value: Any) -> str:
    return str(value) if not isinstance(value, bool) else ("ON" if value else "OFF")


def _show_warnings(engine: Engine, reader: _Reader, options: _Options) -> ResultSet:
    if reader.take("LIMIT"):  # LIMIT [offset,] count
        while not reader.done():
            reader.next()
    reader.end()
    rows = [("Warning", 1105, w.message) for w in options.warnings]
    return ResultSet(["Level", "Code", "Message"], rows, [None, MySQLType.LONG, None])


def _show_errors(engine: Engine, reader: _Reader, options: _Options) -> ResultSet:
    return _show_warnings(engine, reader, _Options(False, False, ()))


_SHOWS: dict[str, Callable[[Engine, _Reader, _Options], ResultSet]] = {
    "CREATE": _show_create,
    "COLUMNS": _show_columns,
    "FIELDS": _show_columns,
    "INDEX": _show_index,
    "INDEXES": _show_index,
    "KEYS": _show_index,
    "TABLES": _show_tables,
    "DATABASES": _show_databases,
    "SCHEMAS": _show_databases,
    "VARIABLES": _show_variables,
    "STATUS": _show_status,
    "WARNINGS": _show_warnings,
    "ERRORS": _show_errors,
}


# -- TiDB's text and rows -----------------------------------------------------------------------


def escape_name(name: str) -> str:
    """`stringutil.Escape`: a name back-quoted, back quotes doubled."""
    return "`" + name.replace("`", "``") + "`"


def output_format(text: str) -> str:
    """`format.OutputFormat`: the text inside single quotes of a SHOW CREATE."""
    return text.replace("\0", "\\0").replace("'", "''").replace("\n", "\\n").replace("\r", "\\r")


def _has_charset(col: ColumnInfo) -> bool:
    """`types.HasCharset`: string types not of the binary charset, ENUM and SET."""
    if col.tp in (MySQLType.ENUM, MySQLType.SET):
        return True
    return col.tp in STRING_TYPES and not col.is_binary_charset


def _no_default(col: ColumnInfo) -> bool:
    """TiDB's NoDefaultValueFlag: NOT NULL without a default (set by CREATE, or by ALTER
    ... DROP DEFAULT)."""
    if col.flag & TiDBFlag.NO_DEFAULT_VALUE:
        return True
    return col.default is None and col.not_null and col.tp != MySQLType.TIMESTAMP


def _default_text(col: ColumnInfo, engine: Engine) -> str | None:
    """`GetDefaultValue` as SHOW prints it: None for no default (or DEFAULT NULL)."""
    default = col.default
    if default is None or default.kind == "null":
        return None
    if default.kind == "now":
        return "CURRENT_TIMESTAMP"
    if default.kind == "expr":
        return default.sql
    value = engine.default_value(col)
    if col.tp == MySQLType.BIT:
        return bit_literal(value)
    return as_text(value)


def bit_literal(value: Any) -> str:
    """`BinaryLiteral.ToBitLiteralString(true)`: b'101', b'0' for zero."""
    number = int.from_bytes(value, "big") if isinstance(value, bytes) else int(value)
    return f"b'{number:b}'"


def _fsp(col: ColumnInfo) -> str:
    return f"({col.decimal})" if col.decimal > 0 else ""


def column_row(col: ColumnInfo, engine: Engine, full: bool) -> Row:
    """One row of DESCRIBE / SHOW [FULL] COLUMNS (`NewColDesc`)."""
    key = (
        "PRI"
        if col.flag & TiDBFlag.PRI_KEY
        else "UNI"
        if col.flag & TiDBFlag.UNIQUE_KEY
        else "MUL"
        if col.flag & TiDBFlag.MULTIPLE_KEY
        else ""
    )
    default = None if _no_default(col) else _default_text(col, engine)
    if default == "CURRENT_TIMESTAMP" and col.tp in (MySQLType.TIMESTAMP, MySQLType.DATETIME):
        default += _fsp(col)
    if col.auto_increment:
        extra = "auto_increment"
    elif col.on_update_now:
        extra = "DEFAULT_GENERATED on update CURRENT_TIMESTAMP" + _fsp(col)
    elif col.generated_expr is not None:
        extra = "STORED GENERATED" if col.generated_stored else "VIRTUAL GENERATED"
    elif col.default is not None and col.default.kind == "expr":
        extra = "DEFAULT_GENERATED"
    else:
        extra = ""
    null = "NO" if col.not_null else "YES"
    if not full:
        return (col.name, full_type(col), null, key, default, extra)
    collation = col.collation if _has_charset(col) else None
    return (
        col.name,
        full_type(col),
        collation,
        null,
        key,
        default,
        extra,
        _PRIVILEGES,
        col.comment,
    )


def index_rows(info: TableInfo) -> list[Row]:
    """SHOW INDEX rows (`fetchShowIndex`): an integer handle's PRIMARY first, then each
    index's columns in index order."""
    rows: list[Row] = []
    if info.pk_is_handle and info.pk_handle_column is not None:
        name = info.pk_handle_column.name
        rows.append((info.name, 0, "PRIMARY", 1, name, "A", 0, None, None, "", "BTREE", "", ""))
        rows[-1] += ("YES", None, "YES", "NO")
    for index in _indexes(info):
        clustered = "YES" if info.is_common_handle and index.primary else "NO"
        for seq, ic in enumerate(index.columns, start=1):
            col = info.columns[ic.offset]
            column_name, expression = (ic.name, None)
            if col.hidden:  # an expression index's hidden column
                column_name, expression = "NULL", col.generated_expr
            rows.append(
                (
                    info.name,
                    0 if index.unique or index.primary else 1,
                    index.name,
                    seq,
                    column_name,
                    "A",
                    0,
                    ic.length if ic.length >= 0 else None,
                    None,
                    "" if col.not_null else "YES",
                    "BTREE",
                    "",
                    index.comment,
                    "NO" if index.invisible else "YES",
                    expression,
                    clustered,
                    "NO",
                )
            )
    return rows


def _indexes(info: TableInfo) -> list[IndexInfo]:
    """The table's indexes as TiDB keeps them: an integer handle's PRIMARY is not one."""
    return [ix for ix in info.indices if not (ix.primary and info.pk_is_handle)]


def _next_id(engine: Engine, info: TableInfo) -> int:
    data = engine.upstream.tables.get(info.id)
    return int(data.next_id) if data is not None else max(info.auto_increment_base, 1)


def create_table(info: TableInfo, engine: Engine, next_id: int) -> str:
    """`ConstructResultOfShowCreateTable`."""
    charset = info.charset or "utf8mb4"
    collation = info.collation or DEFAULT_COLLATION_OF.get(charset, "")
    lines = [
        _column_definition(col, info, charset, collation, engine)
        for col in info.columns
        if not col.hidden
    ]
    if info.pk_is_handle and info.pk_handle_column is not None:
        pk = escape_name(info.pk_handle_column.name)
        lines.append(f"  PRIMARY KEY ({pk}) /*T![clustered_index] CLUSTERED */")
    lines += [_index_definition(ix, info) for ix in _indexes(info)]
    lines += [_foreign_key_definition(fk, info) for fk in info.foreign_keys]
    text = f"CREATE TABLE {escape_name(info.name)} (\n" + ",\n".join(lines) + "\n) ENGINE=InnoDB"
    if not collation or collation == "binary":
        text += f" DEFAULT CHARSET={charset}"
    else:
        text += f" DEFAULT CHARSET={charset} COLLATE={collation}"
    auto_increment = any(c.auto_increment for c in info.columns)
    auto_random = any(c.auto_random_bits for c in info.columns)
    if auto_increment and next_id > 1:
        text += f" AUTO_INCREMENT={next_id}"
    if info.auto_id_cache:
        text += f" /*T![auto_id_cache] AUTO_ID_CACHE={info.auto_id_cache} */"
    if auto_random and next_id > 1:
        text += f" /*T![auto_rand_base] AUTO_RANDOM_BASE={next_id} */"
    if info.shard_row_id_bits > 0:
        text += f" /*T! SHARD_ROW_ID_BITS={info.shard_row_id_bits} */"
    if info.comment:
        text += f" COMMENT='{output_format(info.comment)}'"
    if info.partition is not None:
        text += partition_text(info.partition)
    return text


def _foreign_key_definition(fk: ForeignKeyInfo, info: TableInfo) -> str:
    """A CONSTRAINT line of SHOW CREATE TABLE, as TiDB writes one (the referenced table
    qualified when it is in another schema)."""
    names = ", ".join(escape_name(c) for c in fk.columns)
    ref_names = ", ".join(escape_name(c) for c in fk.ref_columns)
    table = escape_name(fk.ref_table)
    if fk.ref_schema.lower() != info.schema.lower():
        table = f"{escape_name(fk.ref_schema)}.{table}"
    text = f"  CONSTRAINT {escape_name(fk.name)} FOREIGN KEY ({names})"
    text += f" REFERENCES {table} ({ref_names})"
    if fk.on_delete:
        text += f" ON DELETE {fk.on_delete}"
    if fk.on_update:
        text += f" ON UPDATE {fk.on_update}"
    return text


def _column_definition(
    col: ColumnInfo, info: TableInfo, charset: str, collation: str, engine: Engine
) -> str:
    text = f"  {escape_name(col.name)} {full_type(col)}"
    if _has_charset(col):
        if col.charset != charset:
            text += f" CHARACTER SET {col.charset}"
        if col.collation != collation or DEFAULT_COLLATION_OF.get(col.charset) != col.collation:
            text += f" COLLATE {col.collation}"
    if col.generated_expr is not None:
        kind = "STORED" if col.generated_stored else "VIRTUAL"
        text += f" GENERATED ALWAYS AS ({col.generated_expr}) {kind}"
    if col.auto_increment:
        text += " NOT NULL AUTO_INCREMENT"
    else:
        if col.not_null:
            text += " NOT NULL"
        if not _no_default(col) and col.generated_expr is None:
            text += _default_clause(col, engine)
        if col.on_update_now:
            text += " ON UPDATE CURRENT_TIMESTAMP" + _fsp(col)
    if col.auto_random_bits:
        bits, range_bits = col.auto_random_bits, col.auto_random_range
        if range_bits in (0, _DEFAULT_AUTO_RANDOM_RANGE):
            text += f" /*T![auto_rand] AUTO_RANDOM({bits}) */"
        else:
            text += f" /*T![auto_rand] AUTO_RANDOM({bits}, {range_bits}) */"
    if col.comment:
        text += f" COMMENT '{output_format(col.comment)}'"
    return text


def _default_clause(col: ColumnInfo, engine: Engine) -> str:
    value = _default_text(col, engine)
    if value is None:
        if col.not_null:
            return ""
        return (" NULL" if col.tp == MySQLType.TIMESTAMP else "") + " DEFAULT NULL"
    if value == "CURRENT_TIMESTAMP":
        return " DEFAULT CURRENT_TIMESTAMP" + _fsp(col)
    assert col.default is not None
    if col.default.kind == "expr":
        return f" DEFAULT {output_format(value)}"
    if col.tp == MySQLType.BIT:
        return f" DEFAULT {value}"
    return f" DEFAULT '{output_format(value)}'"


def _index_definition(index: IndexInfo, info: TableInfo) -> str:
    if index.primary:
        text = "  PRIMARY KEY "
    elif index.unique:
        text = f"  UNIQUE KEY {escape_name(index.name)} "
    else:
        text = f"  KEY {escape_name(index.name)} "
    parts = []
    for ic in index.columns:
        col = info.columns[ic.offset]
        if col.hidden:
            parts.append(f"({col.generated_expr})")
        else:
            parts.append(escape_name(ic.name) + (f"({ic.length})" if ic.length >= 0 else ""))
    text += "(" + ",".join(parts) + ")"
    if index.invisible:
        text += " /*!80000 INVISIBLE */"
    if index.comment:
        text += f" COMMENT '{output_format(index.comment)}'"
    if index.primary:
        clustered = "CLUSTERED" if info.is_common_handle else "NONCLUSTERED"
        text += f" /*T![clustered_index] {clustered} */"
    return text


def partition_text(partition: PartitionInfo) -> str:
    """`AppendPartitionInfo`: the PARTITION BY clause that follows the table options."""
    kind = partition.type
    defaults = all(p.name == f"p{i}" and not p.comment for i, p in enumerate(partition.definitions))
    count = len(partition.definitions)
    if kind == "HASH" and defaults:
        return f"\nPARTITION BY HASH ({partition.expr}) PARTITIONS {count}"
    if kind == "KEY":
        columns = ",".join(escape_name(c) for c in partition.columns)
        if defaults:
            return f"\nPARTITION BY KEY ({columns}) PARTITIONS {count}"
        head = f"\nPARTITION BY KEY ({columns})\n("
    elif kind in ("RANGE COLUMNS", "LIST COLUMNS"):
        columns = ",".join(escape_name(c) for c in partition.columns)
        head = f"\nPARTITION BY {kind.split()[0]} COLUMNS({columns})\n("
    else:
        head = f"\nPARTITION BY {kind} ({partition.expr})\n("
    definitions = []
    for p in partition.definitions:
        text = f"PARTITION {escape_name(p.name)}"
        if kind.startswith("RANGE"):
            text += f" VALUES LESS THAN ({','.join(p.less_than)})"
        elif kind.startswith("LIST"):
            values = [v[0] if len(v) == 1 else "(" + ",".join(v) + ")" for v in p.in_values]
            text += f" VALUES IN ({','.join(values)})"
        if p.comment:
            text += f" COMMENT '{output_format(p.comment)}'"
        definitions.append(text)
    return head + ",\n ".join(definitions) + ")"


def create_sequence(info: TableInfo) -> str:
    """`ConstructResultOfShowCreateSequence`."""
    seq = info.sequence
    assert seq is not None
    text = f"CREATE SEQUENCE {escape_name(info.name)} start with {seq.start} minvalue"
    text += f" {seq.min_value} maxvalue {seq.max_value} increment by {seq.increment} "
    text += f"cache {seq.cache} " if seq.cache else "nocache "
    text += "cycle " if seq.cycle else "nocycle "
    text += "ENGINE=InnoDB"
    if info.comment:
        text += f" COMMENT='{output_format(info.comment)}'"
    return text


def create_view(info: TableInfo) -> str:
    """`fetchShowCreateTable4View`, with the definer TiDB records for `root`."""
    columns = ", ".join(escape_name(c.name) for c in info.columns)
    listed = f" ({columns})" if columns else ""
    return (
        "CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`%` SQL SECURITY DEFINER"
        f" VIEW {escape_name(info.name)}{listed} AS {info.view_select}"
    )


def create_database(name: str, charset: str, collation: str, if_not_exists: bool) -> str:
    """`ConstructResultOfShowCreateDatabase`."""
    text = "CREATE DATABASE " + ("IF NOT EXISTS " if if_not_exists else "") + escape_name(name)
    if charset:
        text += f" /*!40100 DEFAULT CHARACTER SET {charset} "
        if collation and collation != DEFAULT_COLLATION_OF.get(charset):
            text += f"COLLATE {collation} "
        text += "*/"
    return text
