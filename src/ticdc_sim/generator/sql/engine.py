"""The statement executor: runs SQL the way a TiDB server does, one session's statement at
a time, on the upstream cluster (upstream.py: catalog, rows, TSO, open transactions, commit).

It owns what a TiDB server does between a client and TiKV: reading a statement (the
client's charset, the shape cache of compiled plans, sqlglot's parse), dispatching it (DML to
dml.py and join.py through the `DMLTarget` Protocol of target.py, DDL to the catalog, SET to
variables.py, SHOW to show.py), the session's transaction around it (begin, commit, the
undo of a failed statement), its result set, and building rows (defaults, auto ids,
generated columns). The session it runs for (session.py) is handed in by its caller.

Statements are atomic: a failing statement undoes its own writes only; ROLLBACK and failed
COMMITs emit nothing. DDL commits the open transaction first, as in TiDB.
"""

from __future__ import annotations

import datetime as dt
import functools
import gc
import hashlib
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, NamedTuple, TypeVar, cast

from sqlglot import exp

from ticdc_sim.errors import Location, SQLError, Warnings, not_utf8
from ticdc_sim.generator.capture import key_order
from ticdc_sim.generator.sql import aggregate, grouping, join, labels, subquery
from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.ddl import Catalog
from ticdc_sim.generator.sql.dml import (
    BulkPlan,
    Plan,
    compile_dml,
    compile_select,
    is_star,
    select_items,
    select_source,
    unaliased,
    where_rows,
)
from ticdc_sim.generator.sql.evaluate import (
    Context,
    Scope,
    evaluate_constant,
    stable_uuid,
    to_number,
)
from ticdc_sim.generator.sql.locks import Blocked
from ticdc_sim.generator.sql.script import (
    RawStatement,
    Statement,
    command_kind,
    parse_one,
    parse_raw,
    syntax_error,
)
from ticdc_sim.generator.sql.session import Session
from ticdc_sim.generator.sql.shapes import (
    Lexed,
    lex,
    marked_template,
    parameterize,
    row_params,
)
from ticdc_sim.generator.sql.store import (
    Index,
    TableData,
    duplicate_error,
)
from ticdc_sim.generator.sql.sysvars import (
    SERVER_VARIABLES,
)
from ticdc_sim.generator.sql.txn import BulkInsert, Transaction
from ticdc_sim.generator.sql.upstream import Upstream, rollback_to, showing
from ticdc_sim.generator.sql.values import (
    SqlMode,
    as_text,
    column_converter,
    format_date,
    format_datetime,
)
from ticdc_sim.generator.sql.variables import SESSION_VARIABLES, read_only, set_variables
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mysql import CHARSET_CODECS, MySQLType
from ticdc_sim.model.table import ColumnInfo, TableInfo
from ticdc_sim.model.tso import TSOClock, compose_ts, physical_ms

Event = RowChangedEvent | DDLEvent
Row = tuple[Any, ...]
_MISSING: Any = object()
_LONG_STATEMENT = 64 * 1024  # characters; see Engine._execute_raw
_Stmt = TypeVar("_Stmt", bound=Statement | RawStatement)


@dataclass(frozen=True)
class EngineConfig:
    """How the simulated cluster behaves (a changefeed's settings are its pipeline's)."""

    seed: int = 0
    start_ts: int = 0
    time_zone: str = "UTC"  # TiCDC's `tz` and the sessions' default time zone
    continue_on_error: bool = False
    database: str | None = "test"  # the session's current database, as `mysql -D test`


def ticdc_zone(name: str) -> str:
    """What TiCDC calls a time zone `load_zone` takes (Go's `Location.String()`, which the
    simple protocol writes beside TIMESTAMP values): SYSTEM is rendered as UTC here."""
    text = name.strip()
    return "UTC" if text.upper() in ("UTC", "SYSTEM") else text


class ResultSet(NamedTuple):
    """What a SELECT answers: its column names, rows and (where known) column types."""

    names: list[str]
    rows: list[Row]
    types: list[MySQLType | None]


class Engine:
    """Executes statements; `run()` yields DDL and row events as transactions commit.

    What the statement executors (dml.py, join.py) use of it is declared in target.py
    (`DMLTarget`); they never import this module. Sessions of a service share one engine
    and its `upstream`; `session` is the one whose statement runs, which `cluster.py` hands
    in with each statement.
    """

    def __init__(
        self,
        config: EngineConfig | None = None,
        catalog: Catalog | None = None,
        warnings: Warnings | None = None,
    ):
        self.config: EngineConfig = config or EngineConfig()
        seed = self.config.seed
        start = self.config.start_ts
        clock = TSOClock.starting_at(start, seed) if start else TSOClock(seed=seed)
        self.catalog = catalog or Catalog(clock=clock)
        if self.config.database and self.catalog.current_schema is None:
            self.catalog.current_schema = self.catalog.schema(self.config.database).name
        # the session its statements run for (a service hands in each client's own)
        self.session: Session = Session.of(
            self.config.time_zone,
            self.catalog.current_schema,
            warnings=warnings if warnings is not None else Warnings(),
        )
        # the cluster: catalog, rows, open transactions and their locks (upstream.py)
        self.upstream = Upstream(self.catalog, self.session.zone, lambda: self.session)
        self.rng = random.Random(self.config.seed)
        self.uuid_counter = 0
        # what one statement did, read by its caller before the next: its affected rows,
        # whether it took ids, and the last id it gave an auto column explicitly (the OK
        # packet's insert id when it took none, TiDB `StmtCtx.InsertID`)
        self.affected_rows = 0
        self.ids_this_statement = False
        self.insert_id = 0
        # affected rows the statement's writes do not show: a row whose key changed (two
        # writes, one row), an ON DUPLICATE KEY UPDATE (MySQL counts 2), a found row
        self.affected_adjust = 0
        self.location: Location | None = None  # of the statement being executed
        self.plans: dict[tuple[str, ...], Plan | None] = {}  # by statement shape; None: parse
        self.errors: list[str] = []  # failed statements skipped under continue_on_error
        self.count_affected = False  # whether `step` counts `affected_rows` (a service asks)
        self.max_txn_rows = 0  # rows one transaction may write (txn-total-size-limit); 0: any
        # literal defaults converted to their column's type, per session settings
        self._literal_defaults: dict[tuple[ColumnInfo, SqlMode, dt.tzinfo], Any] = {}

    # -- the session's, read where a statement needs them -----------------------------------

    @property
    def sql_mode(self) -> SqlMode:
        return self.session.sql_mode

    @property
    def found_rows(self) -> bool:
        return self.session.found_rows

    @property
    def zone(self) -> dt.tzinfo:
        return self.session.zone

    @property
    def warnings(self) -> Warnings:
        return self.session.warnings

    @property
    def txn(self) -> Transaction | None:
        return self.session.txn

    @property
    def last_id(self) -> int:
        return self.session.last_id

    @property
    def active(self) -> dict[Transaction, None]:
        return self.upstream.active

    # -- session functions (evaluate.SessionFunctions) ---------------------------------------

    def _moment(self) -> dt.datetime:
        ts = (
            self.session.txn.start_ts
            if self.session.txn
            else compose_ts(self.catalog.clock.physical, 0)
        )
        utc = dt.datetime.fromtimestamp(physical_ms(ts) / 1000, dt.UTC)
        return utc.astimezone(self.session.zone).replace(tzinfo=None)

    def now(self, fsp: int) -> str:
        return format_datetime(self._moment(), fsp)

    def current_date(self) -> str:
        return format_date(self._moment())

    def unix_timestamp(self) -> Decimal:
        ts = (
            self.session.txn.start_ts
            if self.session.txn
            else compose_ts(self.catalog.clock.physical, 0)
        )
        return Decimal(physical_ms(ts) // 1000)

    def rand(self) -> float:
        return self.rng.random()

    def uuid(self) -> str:
        self.uuid_counter += 1
        return stable_uuid(self.config.seed, self.uuid_counter)

    def last_insert_id(self) -> int:
        return self.session.last_id

    def sleep(self, seconds: float | None) -> int:
        """SLEEP(n) (tidb `builtinSleepSig`): the simulated clock moves on n seconds, to
        the millisecond; NULL or a negative n is 1210 in strict mode, else nothing."""
        if seconds is None or seconds < 0 or seconds > _LONGEST_SLEEP_S:
            if self.session.sql_mode.strict or (seconds is not None and seconds > 0):
                raise SQLError("Incorrect arguments to sleep", code=1210)
            return 0
        self.catalog.clock.advance(round(seconds * 1000))
        return 0

    def time_zone(self) -> dt.tzinfo:
        return self.session.zone

    def variable(self, name: str) -> Any:
        """@@name; also DATABASE(), USER() and CONNECTION_ID() by their pseudo names."""
        own = SESSION_VARIABLES.get(name)
        if own is not None:
            value = own.get(self)
            # a boolean reads as 1 or 0 (TiDB `SysVar.GetNativeValType`)
            return int(value) if isinstance(value, bool) else value
        pseudo = {
            "database()": self.catalog.current_schema,
            "user()": self.session.user,
            "connection_id()": self.session.connection_id,
            **self.session.charsets,
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.session.noop_values:
            return self.session.noop_values[name]
        if name in SERVER_VARIABLES:
            return SERVER_VARIABLES[name]
        raise SQLError(f"Unknown system variable '{name}'", code=1193)

    def sequence(self, op: str, schema: str | None, name: str, value: Any = None) -> Any:
        """NEXTVAL / LASTVAL / SETVAL of a sequence, as one TiDB server hands values out."""
        info = self.catalog.table(schema, name)
        if info.sequence is None:
            raise SQLError(f"'{info.schema}.{info.name}' is not SEQUENCE", code=1347)
        return self.upstream.sequence(op, info, int(to_number(value)) if op == "SETVAL" else 0)

    def user_variable(self, name: str) -> Any:
        return self.session.user_variables.get(name)  # never set: NULL

    def set_user_variable(self, name: str, value: Any) -> Any:
        self.session.user_variables[name] = value
        return value

    def warn(self, kind: str, message: str) -> None:
        """Report, once per kind, something accepted that has no effect here."""
        self.session.warnings.warn(kind, message, self.location)

    def no_effect(self, kind: str) -> None:
        self.warn(kind, f"{kind} has no effect on data here; accepted and skipped")

    def set_charset(self, variables: Sequence[str], value: Any) -> None:
        """SET NAMES (`variables`: client, connection and results) or one character_set_
        variable; the client's is how the bytes of later statements are read. Results may
        be NULL (no conversion: what JDBC asks for)."""
        charset = None if value is None else as_text(value).lower()
        if charset == "default":  # the server's
            charset = str(SERVER_VARIABLES["character_set_server"])
        if charset is None and list(variables) != ["character_set_results"]:
            message = f"Variable '{variables[0]}' can't be set to the value of 'NULL'"
            raise SQLError(message, code=1231)
        if charset is not None and charset not in CHARSET_CODECS:
            raise SQLError(f"Unknown character set: '{as_text(value)}'", code=1115)
        for name in variables:
            self.session.charsets[name] = charset
        self.plans.clear()

    def as_client_sent(self, stmt: _Stmt) -> _Stmt | RawStatement:
        """The statement as the client charset reads it (itself in UTF-8)."""
        text = self.as_client_text(stmt.text)
        return stmt if text is stmt.text else RawStatement(text, stmt.location)

    def as_client_text(self, text: str) -> str:
        """A statement's text as the client charset reads it (`text` itself in UTF-8):
        scripts are decoded as UTF-8 with surrogate escapes, so their bytes come back
        exactly and decode again here. Bytes the charset does not read are TiDB's error
        1300, naming them in hex (parser `charset.generateEncodingErr`)."""
        charset = str(self.session.charsets["character_set_client"])
        codec = CHARSET_CODECS[charset]
        if codec is None:
            return text
        try:
            return text.encode("utf-8", "surrogateescape").decode(codec)
        except UnicodeDecodeError as e:
            # TiDB's GBK takes two bytes for any character from 0x80 up (encodingGBK.Peek)
            end = e.start + 2 if charset == "gbk" else e.end
            bad = e.object[e.start : end].hex().upper()
            raise SQLError(f"Invalid {charset} character string: '{bad}'", code=1300) from None

    def set_sql_mode(self, text: str) -> None:
        self.use_mode(replace(SqlMode.parse(text), check_utf8=self.session.sql_mode.check_utf8))

    def use_mode(self, mode: SqlMode) -> None:
        self.session.sql_mode = (
            mode  # tables convert values under it from now on (`TableData.mode`)
        )

    # -- running scripts ---------------------------------------------------------------------

    def run(self, statements: Iterable[Statement | RawStatement]) -> Iterator[Event]:
        """Execute statements in order, yielding events as their transactions commit.

        Split-off statements (`script.split_script`) go through the shape cache first; an
        explicit transaction still open at the end is rolled back, as when a client leaves,
        with a warning when it wrote rows (they are not sent). What a statement committed
        before it failed (the implicit commit of a bad DDL, say) is yielded before its error
        is raised.
        """
        for stmt in statements:
            error = self.step(stmt)
            if self.upstream.outbox:
                events, self.upstream.outbox = self.upstream.outbox, []
                yield from events
            if error is not None:
                if not self.config.continue_on_error:
                    self.abort()
                    raise error from None
                self.errors.append(str(error))
        if self.session.txn is not None and any(self.session.txn.first.values()):
            self.session.warnings.warn(
                "uncommitted",
                "a transaction was still open at the end: rolled back, as when a client"
                " disconnects, and its rows not sent (end it with COMMIT)",
                self.session.txn.location,
            )
        self.abort()

    def step(self, stmt: Statement | RawStatement) -> SQLError | None:
        """Execute one statement, in the session's transaction; its error, located, or None.
        What it committed is in `upstream.outbox`; a failed statement changed nothing (an explicit
        transaction stays open, as in MySQL). `affected_rows` counts what it wrote."""
        self.location = stmt.location
        self.affected_rows = 0
        self.ids_this_statement, self.insert_id = False, 0
        try:
            stmt = self.as_client_sent(stmt)
            if isinstance(stmt, RawStatement):
                self._execute_raw(stmt)
            else:
                self.execute(stmt.expression, stmt.text)
        except SQLError as e:
            return e.with_context(stmt.location, stmt.text)
        except (MemoryError, Blocked):
            raise
        except Exception as e:  # reported as this statement's error
            return _unexpected(e).with_context(stmt.location, stmt.text)
        return None

    def query(self, node: exp.Select, text: str) -> ResultSet:
        """A SELECT's result set (of one table, or of constants): column names (labelled
        as TiDB labels them from the statement's `text`, as written: never regenerated from
        `node`, which can be deeper than generating SQL may recurse), rows as a client of
        TiDB reads them, and each column's type where it is a table's column or an
        aggregate. Nothing is written; what the engine cannot answer is an SQLError."""
        try:
            if subquery.present(node):
                node = cast(exp.Select, self._inlined(node))
            if node.args.get("locks"):
                return self._locking_query(node, text)
            upstream = self.upstream
            images = upstream.snapshot(self.session.txn) if upstream.active else []
            if not images:
                return self._query(node, text)
            with showing(images):  # the snapshot, for this read only
                return self._query(node, text)
        except (SQLError, MemoryError, Blocked):
            raise
        except Exception as e:  # reported as this statement's error
            raise _unexpected(e) from None

    def _inlined(self, node: exp.Expr) -> exp.Expr:
        """`node` with its uncorrelated subqueries answered (subquery.py), read as the
        session reads now."""

        def answer(query: exp.Select) -> list[Row]:
            return self.query(query, query.sql(dialect=d.TiDB)).rows

        return subquery.inline(node, answer, self._column_names)

    def _column_names(self, table: exp.Table) -> set[str]:
        info = self.catalog.find_table(table.text("db") or None, table.name)
        return {c.name.lower() for c in info.columns} if info is not None else set()

    def _locking_query(self, node: exp.Select, text: str) -> ResultSet:
        """SELECT ... FOR UPDATE / LOCK IN SHARE MODE: the latest committed rows, locked
        (dml.py's matcher takes the locks), in a transaction of its own under autocommit."""
        found: list[ResultSet] = []
        self._statement(lambda: found.append(self._query(node, text)))
        return found[0]

    def _query(self, node: exp.Select, text: str) -> ResultSet:
        if node.args.get("into") is not None:
            raise SQLError("SELECT ... INTO has no result set", code=1105)
        if join.is_join(node):
            return self._join_query(node, text)
        node = unaliased(node)
        table = self._source_table(node)
        columns = {c.name.lower(): c for c in table.info.columns} if table else {}
        names: list[str] = []
        types: list[MySQLType | None] = []
        for e, label in zip(node.expressions, labels.select_labels(text, node), strict=True):
            if table is not None and is_star(e):
                shown = [c for c in table.info.columns if not c.hidden]
                names += [c.name for c in shown]
                types += [c.tp for c in shown]
                continue
            names.append(label)
            types.append(aggregate.result_type(e.unalias(), columns))
        return ResultSet(names, self._rows(node, table), types)

    def _join_query(self, node: exp.Select, text: str) -> ResultSet:
        """A SELECT of several tables (join.py), named and typed as `_query` does."""
        found = join.sources(self, node)
        columns = {c.name.lower(): c for s in found for c in s.data.info.columns}
        names: list[str] = []
        types: list[MySQLType | None] = []
        for e, label in zip(node.expressions, labels.select_labels(text, node), strict=True):
            expanded = join.shown(found, e)
            if expanded is not None:
                names += [c.name for c, _ in expanded]
                types += [c.tp for c, _ in expanded]
                continue
            names.append(label)
            types.append(aggregate.result_type(e.unalias(), columns))
        if not grouping.is_grouped(node):
            return ResultSet(names, join.rows(self, node), types)
        joined = join.scope(found)
        rows = join.joined_rows(self, node, found, joined)
        tables = [(s.alias, s.offset, s.data.info) for s in found]
        read = grouping.Read(joined, rows, tables, join.items(found, node))
        return ResultSet(names, grouping.answer(self, node, read), types)

    def _source_table(self, node: exp.Select) -> TableData | None:
        source = select_source(node, grouped=True)
        return self.read_table(source.this) if source is not None else None

    def _rows(self, node: exp.Select, table: TableData | None) -> list[Row]:
        """A SELECT's rows: grouped (grouping.py) where it groups, aggregates or DISTINCTs."""
        if not grouping.is_grouped(node):
            return compile_select(self, node)([])
        if table is None:  # of constants: one row to group
            return grouping.answer(self, node, grouping.Read(Scope(), [()], [], node.expressions))
        aggregated = not node.args.get("group") and grouping.aggregates(node)
        if aggregated and "ONLY_FULL_GROUP_BY" in self.session.sql_mode.names:
            aggregate.check_full_group_by(node, table.info)
        source = select_source(node, grouped=True)
        assert source is not None  # `table` is its table
        items = [item for item, _ in select_items(node, table)]
        tables = [(source.this.alias_or_name, 0, table.info)]
        read = grouping.Read(table.scope, where_rows(self, table, node), tables, items)
        return grouping.answer(self, node, read)

    def _execute_raw(self, raw: RawStatement) -> None:
        if len(raw.text) < _LONG_STATEMENT or not gc.isenabled():
            self._execute_lexed(raw)
            return
        # A long statement (a many-row INSERT) allocates rows and events that all survive:
        # collecting while it runs finds nothing and costs a fifth of its time.
        gc.disable()
        try:
            self._execute_lexed(raw)
        finally:
            gc.enable()

    def _execute_lexed(self, raw: RawStatement) -> None:
        lexed = lex(raw.text)
        if lexed is not None:
            bare = _BARE_STATEMENTS.get(lexed.key)
            if bare is not None:  # every transaction of a script has two: no parse for them
                bare(self)
                return
            if lexed.key not in self.plans:
                self.plans[lexed.key] = self._template_plan(lexed)
            plan = self.plans[lexed.key]
            if isinstance(plan, BulkPlan) and lexed.extra:
                bulk_plan = plan

                def bulk() -> None:
                    if not bulk_plan.bulk(self, lexed):
                        bulk_plan(self, row_params(lexed))

                self._statement(bulk)
                return
            if plan is not None:
                self._statement(lambda: plan(self, row_params(lexed)))
                return
        if raw.text[:12].lstrip()[:4].upper() in _SHOW_WORDS and self._answered(raw.text):
            return
        stmt = parse_raw(raw)
        if stmt is not None:
            self.execute(stmt.expression, stmt.text)

    def _answered(self, text: str) -> bool:
        """A SHOW or DESCRIBE in a script: answered as TiDB answers it (so a SHOW CREATE
        TABLE of no table is 1146, and a SHOW that TiDB has not a syntax error), the result
        set then dropped with the no-effect warning; False for EXPLAIN of a statement."""
        # show.py reads the engine's catalog and session, so it imports this module
        from ticdc_sim.generator.sql import show

        if show.answer(self, text, []) is None:
            return False
        self.no_effect("SHOW" if text.lstrip()[:4].upper() == "SHOW" else "DESCRIBE")
        return True

    def _template_plan(self, lexed: Lexed) -> Plan | None:
        """A compiled plan for every statement of this shape, or None to parse each one."""
        if lexed.key[0] not in ("INSERT", "REPLACE", "UPDATE", "DELETE"):
            return None
        marked = marked_template(lexed)
        if marked is None:
            return None
        try:
            template = parse_one(marked)
            plain = parse_one(lexed.template_text)
            node = parameterize(template, plain, [kind for kind, _ in lexed.literals])
            return compile_dml(self, node) if node is not None else None
        except SQLError:
            return None  # the statement's own parse reports the error, located

    def execute(self, node: exp.Expr, source: str = "") -> None:
        """Execute one parsed statement; what it commits goes to `upstream.outbox`."""
        if not_utf8(source):
            _check_text(node)
        if node.args.get("returning") is not None:  # PostgreSQL's and MariaDB's, not TiDB's
            at = source.upper().rfind("RETURNING")
            line = source.count("\n", 0, at) + 1
            col = at - source.rfind("\n", 0, at) - 1 + len("RETURNING")
            near = source[at:].strip()[:80]
            raise SQLError(syntax_error(line, col, near, "TiDB has no RETURNING"), code=1064)
        handler = _STATEMENTS.get(type(node))
        if handler is not None:
            if subquery.present(node):
                node = self._inlined(node)
            handler(self, node, source)
            return
        kind = _NO_EFFECT.get(type(node))
        if kind is not None:
            self.no_effect(kind)
            return
        if is_ddl(node):
            self.commit()
            # DDL waits for the transactions that read or wrote (MySQL's metadata locks)
            busy = self.upstream.busy()
            if busy is not None:
                raise Blocked(busy, None)
            self.plans.clear()  # plans hold tables and the current database
            # checked under the settings of the session running it (sessions share a catalog)
            self.catalog.sql_mode = self.session.sql_mode
            self.catalog.clustered_index = self.session.clustered_index
            for event in self.catalog.apply(node, source):
                self.upstream.sync_table(event, functools.partial(_migrate_rows, engine=self))
                self.upstream.outbox.append(event)
            return
        if isinstance(node, exp.Command) and (command := command_kind(source)) is not None:
            self.no_effect(command)
            return
        if isinstance(node, exp.Condition | exp.Alias):
            # a statement the parser took for an expression (`FOO BAR` as `FOO AS BAR`):
            # none of TiDB's, but FLUSH, which changes no data
            word = source.split(None, 1)[0] if source.strip() else ""
            if word.upper() == "FLUSH":
                self.no_effect("FLUSH")
                return
            near = source.strip()[:80]
            raise SQLError(syntax_error(1, len(word), near, "not a statement"), code=1064)
        raise SQLError(f"unsupported statement: {type(node).__name__}", code=1105)

    def abort(self) -> None:
        """The session's open transaction, if any, rolled back."""
        txn, self.session.txn = self.session.txn, None
        if txn is not None:
            self.upstream.rollback(txn)

    # -- transactions ------------------------------------------------------------------------

    def begin(self) -> Transaction:
        txn = self.session.txn
        if txn is None:
            isolation = self.session.next_isolation or self.session.isolation
            self.session.next_isolation = None
            txn = self.session.txn = self.upstream.begin(self.location, isolation)
        return txn

    def commit(self) -> None:
        txn, self.session.txn = self.session.txn, None
        if txn is not None:
            self.upstream.commit(txn)

    # -- locks (locks.py): only where another transaction is open ----------------------------

    def check_images(self, table: TableData, hits: Callable[[Row], bool]) -> None:
        """A locking read waits for another transaction that changed a row it reads."""
        self.upstream.check_images(self.session.txn, table, hits)

    def lock_entries(
        self, table: TableData, index: Index, rows: list[Row], exclusive: bool
    ) -> None:
        """The entries of `rows` in the unique index a locking read found them through."""
        self.upstream.lock_entries(self.begin(), table, index, rows, exclusive)

    def lock_rows(
        self, table: TableData, matched: list[tuple[Any, Row]], exclusive: bool, writes: bool
    ) -> None:
        """The rows a locking read or an UPDATE/DELETE (`writes`) matched, locked to the end
        of the transaction (`Upstream.lock_rows`)."""
        self.upstream.lock_rows(self.begin(), table, matched, exclusive, writes)

    def write(self, table: TableData, handle: Any, row: Row | None) -> None:
        """Put or delete one row key inside the open transaction."""
        self.upstream.write(self.begin(), table, handle, row)

    def write_new(self, table: TableData, handles: list[Any], rows: list[Row]) -> None:
        """Insert rows under distinct handles that hold no row (checked by the caller)."""
        self.upstream.write_new(self.begin(), table, handles, rows)

    def _statement(self, body: Callable[[], None]) -> None:
        """Run one DML statement atomically, committing it under autocommit."""
        implicit = (
            self.session.autocommit if self.session.txn is None else self.session.txn.implicit
        )
        txn = self.begin()
        txn.implicit = implicit
        mark = len(txn.undo)
        self.ids_this_statement = False
        self.affected_adjust = 0
        try:
            body()
            if self.max_txn_rows:
                self._check_size(txn)
        except SQLError:
            rollback_to(txn, mark)
            if implicit:
                self.session.txn = None
                self.upstream.end(txn)
            raise
        except Blocked:  # undone; it runs again once the lock is free (its locks stay)
            rollback_to(txn, mark)
            raise
        if self.count_affected:
            self.affected_rows = self._affected(txn, mark) + self.affected_adjust
        if implicit:
            self.commit()

    def _check_size(self, txn: Transaction) -> None:
        written = sum(len(keys) for keys in txn.first.values())
        if written > self.max_txn_rows:
            raise SQLError(
                f"Transaction is too large, size: {written} rows; the limit is"
                f" {self.max_txn_rows} (the statement was undone)",
                code=8004,
            )

    @staticmethod
    def _affected(txn: Transaction, mark: int) -> int:
        """The statement's writes whose key's row changed (a REPLACE that deletes one row
        and writes another counts both); `affected_adjust` makes that MySQL's count."""
        count = 0
        for entry in txn.undo[mark:]:
            if isinstance(entry, BulkInsert):
                count += len(entry.handles)
            elif entry.table.rows.get(entry.handle) != entry.previous:
                count += 1
        return count

    # -- commit: TiKV's fold and TiCDC's order -----------------------------------------------

    # -- DDL ---------------------------------------------------------------------------------

    def read_table(self, table: exp.Table) -> TableData:
        """The table a SELECT reads: a user table, or one of information_schema's."""
        schema = table.text("db") or self.catalog.current_schema
        if schema and schema.lower() == "information_schema":
            from ticdc_sim.generator.sql import infoschema  # it reads show.py, which imports this

            return infoschema.table(self, table.name)
        return self.table_data(table)

    def table_data(self, table: exp.Table) -> TableData:
        """The table a statement writes (or reads: `read_table`)."""
        schema = table.text("db") or self.catalog.current_schema
        if schema and schema.lower() == "information_schema":
            # TiDB's answer to a write into a memory table
            message = "Access denied for user 'root'@'%' to database 'information_schema'"
            raise SQLError(message, code=1044)
        info = self.catalog.table(table.text("db") or None, table.name)
        if info.is_view:
            raise SQLError(f"'{info.schema}.{info.name}' is a view", code=1288)
        return self.upstream.table_data(info)

    # -- row building ------------------------------------------------------------------------

    def default_value(self, column: ColumnInfo) -> Any:
        """The value a row takes for a column it leaves out, in the column's stored form."""
        default = column.default
        if default is None:
            if column.not_null and not column.auto_increment and not column.auto_random_bits:
                return _NO_DEFAULT
            return None
        if default.kind == "literal":
            key = (column, self.session.sql_mode, self.session.zone)
            if key not in self._literal_defaults:
                convert = column_converter(column, lambda: self.session.zone, self.session.sql_mode)
                self._literal_defaults[key] = convert(default.value)
            return self._literal_defaults[key]
        if default.kind == "null":
            return None
        if default.kind == "now":
            return self.now(max(column.decimal, 0))
        return evaluate_constant(parse_one(f"SELECT {default.sql}").expressions[0], self)

    @staticmethod
    def require_defaults(table: TableData, values: list[Any]) -> None:
        """MySQL 1364 for a NOT NULL column without default that a row left out."""
        if _NO_DEFAULT in values:
            offset = values.index(_NO_DEFAULT)
            raise SQLError(
                f"Field '{table.info.columns[offset].name}' doesn't have a default value",
                code=1364,
            )

    def finish_row(self, table: TableData, values: list[Any], ignore: bool = False) -> Row:
        """Generated columns, auto ids and strict conversion of a new row image."""
        self.require_defaults(table, values)
        auto = table.auto_offset
        if auto is not None and values[auto] is None:
            values[auto] = self.allocate(table, 1)[0]  # before conversion: NOT NULL
        converters = table.ignore_input_converters if ignore else table.input_converters
        converted = [conv(v) for conv, v in zip(converters, values)]  # noqa: B905
        if auto is not None:
            converted[auto] = self.auto_id(table, converted[auto])
        if table.generated:
            ctx = Context(session=self, row=tuple(converted))
            for offset, fn in table.generated:
                converted[offset] = table.converters[offset](fn(ctx))
                ctx.row = tuple(converted)
        return tuple(converted)

    # -- ids: one allocator per table (TableData.take_ids) -----------------------------------

    def auto_id(self, table: TableData, value: Any) -> Any:
        """The auto column's value in a new row: the converted `value`, or a new id where it
        is NULL or 0 (MySQL without NO_AUTO_VALUE_ON_ZERO). An explicit id moves the
        allocator past it."""
        if value is None or value == 0:
            return self.allocate(table, 1)[0]
        self.observe_id(table, value)
        self.insert_id = int(value)
        return value

    def given_ids(self, table: TableData, values: list[Any]) -> None:
        """Explicit ids of a statement's rows (none NULL or 0), in row order."""
        self.observe_id(table, max(values))
        self.insert_id = int(values[-1])

    def observe_id(self, table: TableData, value: int) -> None:
        column = table.info.columns[table.auto_offset] if table.auto_offset is not None else None
        if column is not None and column.auto_random_bits:
            # TiDB rebases on the incremental bits only (meta/autoid RebaseAutoRandomBase)
            value &= (1 << _incremental_bits(column)) - 1
        table.observe_id(int(value))

    def allocate(self, table: TableData, count: int) -> list[int]:
        """`count` new ids of the table's auto column; the first is LAST_INSERT_ID() when it
        is the statement's first. AUTO_RANDOM ids get shard bits from a derived seed (TiDB
        hashes the start ts): deterministic here."""
        first = table.take_ids(count)
        ids = list(range(first, first + count))
        column = table.info.columns[table.auto_offset] if table.auto_offset is not None else None
        if column is not None and column.auto_random_bits:
            mask = (1 << column.auto_random_bits) - 1
            shift = _incremental_bits(column)
            ids = [value | (self._shard(table, value) & mask) << shift for value in ids]
        if not self.ids_this_statement:
            self.session.last_id, self.ids_this_statement = ids[0], True
        return ids

    def _shard(self, table: TableData, value: int) -> int:
        digest = hashlib.blake2b(
            f"{self.config.seed}:{table.info.id}:{value}".encode(), digest_size=8
        ).digest()
        return int.from_bytes(digest, "big")

    def new_handle(self, table: TableData, row: Row) -> Any:
        if table.handle_offsets:
            return table.handle_of(row)
        return table.take_ids(1)  # `_tidb_rowid` shares the table's allocator

    def conflicts(self, table: TableData, handle: Any, row: Row) -> list[Any]:
        """Handles of existing rows that `row` would collide with, in check order."""
        found: list[Any] = []
        if table.handle_offsets and handle in table.rows:
            found.append(handle)
        for unique in table.uniques:
            key = unique.key(row)
            if key is None:
                continue
            other = unique.entries.get(key)
            if other is not None and other not in found:
                found.append(other)
        if found and len(self.upstream.active) > 1:
            self.upstream.wait_for_holders(self.session.txn, table, found)
        return found

    @staticmethod
    def key_order(handle: Any) -> Any:
        return key_order(handle)

    @staticmethod
    def unique_error(table: TableData, unique: Index, row: Row) -> SQLError:
        return duplicate_error(table.info, unique.info, row, unique.offsets)

    def duplicate_error(self, table: TableData, handle: Any, row: Row) -> SQLError:
        if len(self.upstream.active) > 1 and table.handle_offsets and handle in table.rows:
            self.upstream.wait_for_holders(self.session.txn, table, [handle])
        info = table.info
        if table.handle_offsets and handle in table.rows:
            pk = info.primary_index
            name = pk.name if pk else "PRIMARY"
            shown = "-".join(as_text(row[o]) for o in table.handle_offsets)
            return SQLError(f"Duplicate entry '{shown}' for key '{info.name}.{name}'", code=1062)
        for unique in table.uniques:
            key = unique.key(row)
            if key is not None and key in unique.entries:
                return duplicate_error(info, unique.info, row, unique.offsets)
        raise AssertionError("no conflict")


class UnexpectedError(SQLError):
    """A statement's error that is no SQL error of its own: a nesting deeper than the
    interpreter's stack, or a bug of ours. Code 1105 as what the engine cannot answer, but a
    script's SELECT never skips one as such (`_select`)."""


def _unexpected(error: Exception) -> UnexpectedError:
    """An exception that is not an SQLError, as the statement's error."""
    if isinstance(error, RecursionError):
        return UnexpectedError("the statement is nested too deeply", code=1105)
    return UnexpectedError(
        f"internal error ({type(error).__name__}: {error}); please report this statement",
        code=1105,
    )


def _incremental_bits(column: ColumnInfo) -> int:
    """AUTO_RANDOM(S, R): below the sign bit and S shard bits, the allocator's own bits."""
    return column.auto_random_range - 1 - column.auto_random_bits


_NO_DEFAULT: Any = type("_NoDefault", (), {"__repr__": lambda self: "<no default>"})()


def _migrate_rows(
    old: TableInfo, new: TableInfo, rows: dict[Any, Row], engine: Engine
) -> dict[Any, Row]:
    """Rows of `old` reshaped for `new` (ADD/DROP/MODIFY COLUMN), matched by column id."""
    by_id = {c.id: i for i, c in enumerate(old.columns)}
    converters = [
        column_converter(c, lambda: engine.session.zone, engine.session.sql_mode)
        for c in new.columns
    ]
    fillers: list[Any] = []
    for column in new.columns:
        if column.id in by_id:
            fillers.append(None)
        else:
            value = engine.default_value(column)
            fillers.append(None if value is _NO_DEFAULT else value)
    migrated: dict[Any, Row] = {}
    for handle, row in rows.items():
        values = [
            row[by_id[c.id]] if c.id in by_id else fillers[i] for i, c in enumerate(new.columns)
        ]
        if any(c.not_null and v is None for c, v in zip(new.columns, values, strict=True)):
            values = [
                _zero_value(c) if c.not_null and v is None else v
                for c, v in zip(new.columns, values, strict=True)
            ]
        migrated[handle] = tuple(conv(v) for conv, v in zip(converters, values, strict=True))
    return migrated


# TiDB's zero value per type, for existing rows under a new NOT NULL column with no default.
_ZERO_VALUES: dict[MySQLType, Any] = {
    MySQLType.JSON: "null",
    MySQLType.DATE: "0000-00-00",
    MySQLType.DATETIME: "0000-00-00 00:00:00",
    MySQLType.TIMESTAMP: "0000-00-00 00:00:00",
    MySQLType.DURATION: "00:00:00",
    MySQLType.SET: "",
    MySQLType.TIDB_VECTOR_FLOAT32: "[]",
}
_STRING_TYPES = frozenset(
    {
        MySQLType.VARCHAR,
        MySQLType.STRING,
        MySQLType.VAR_STRING,
        MySQLType.TINY_BLOB,
        MySQLType.BLOB,
        MySQLType.MEDIUM_BLOB,
        MySQLType.LONG_BLOB,
    }
)


def _zero_value(column: ColumnInfo) -> Any:
    """What TiDB fills existing rows with for a new NOT NULL column without a default."""
    if column.tp == MySQLType.ENUM:
        return column.elems[0] if column.elems else ""
    if column.tp in _STRING_TYPES:
        return b"" if column.charset == "binary" else ""
    return _ZERO_VALUES.get(column.tp, 0)  # numbers, BIT and YEAR


# -- statements --------------------------------------------------------------------------------


# TiDB's bound: what Go's time.Duration holds (math.MaxFloat64 / 1e9 in its check, but a
# Duration overflows past ~292 years)
_LONGEST_SLEEP_S = 9_223_372_036.0


def _has_side_effects(node: exp.Expr) -> bool:
    """Whether evaluating `node` changes the session: sequences advanced, variables set,
    the clock moved on (SLEEP)."""
    return (
        node.find(exp.NextValueFor, exp.PropertyEQ) is not None
        or any(
            f.name.upper() in ("NEXTVAL", "SETVAL", "SLEEP") for f in node.find_all(exp.Anonymous)
        )
        or node.args.get("into") is not None
    )


def _check_text(node: exp.Expr) -> None:
    """Names, and the strings of DDL (comments, defaults, members), go into the catalog and
    the queries TiCDC sends: bytes of the script that are not UTF-8 are refused there with
    MySQL's error 1300. (TiDB's lexer takes any byte from 0x80 up into a name, which no
    consumer of a changefeed could then read.) Values are checked by their column."""
    ddl = is_ddl(node)
    for found in node.walk():
        text = found.this if isinstance(found, exp.Identifier | exp.Literal) else None
        if not isinstance(text, str) or (isinstance(found, exp.Literal) and not ddl):
            continue
        if not_utf8(text):
            raise SQLError(f"Invalid utf8mb4 character string: '{text}'", code=1300)


def is_ddl(node: exp.Expr) -> bool:
    """Whether a statement is DDL (commits the open transaction, changes the catalog)."""
    return isinstance(
        node,
        exp.Create
        | exp.Drop
        | exp.Alter
        | exp.TruncateTable
        | d.RenameTables
        | d.AlterDatabase
        | d.RecoverTable
        | d.Flashback
        | exp.Use,
    )


_SHOW_WORDS = frozenset({"SHOW", "DESC", "EXPL"})  # how SHOW, DESCRIBE and EXPLAIN begin
# Statements that change no data: accepted, with one warning per kind (what a user reads).
_NO_EFFECT: dict[type, str] = {
    exp.Union: "SELECT",
    exp.Analyze: "ANALYZE",
    exp.Show: "SHOW",
    exp.Describe: "DESCRIBE",
    d.Admin: "ADMIN",
    d.PolicyStatement: "a placement policy or resource group statement",
}


def _use(engine: Engine, node: exp.Use, source: str) -> None:
    if node.this is not None and node.this.name.lower() == "information_schema":
        engine.catalog.current_schema = "information_schema"  # no schema of the catalog's
    else:
        engine.catalog.apply(node, source)
    engine.plans.clear()


# START TRANSACTION / BEGIN modes TiDB takes (its parser's BeginStmt); READ ONLY is a noop
# function there, refused unless tidb_enable_noop_functions (executor/simple.go executeBegin)
_TRANSACTION_MODES = frozenset(
    {"READ WRITE", "WITH CONSISTENT SNAPSHOT", "WITH CAUSAL CONSISTENCY ONLY", "PESSIMISTIC",
     "OPTIMISTIC"}
)  # fmt: skip


def _transaction(engine: Engine, node: exp.Expr, source: str) -> None:
    for mode in node.args.get("modes") or []:
        if mode.upper() == "READ ONLY":
            raise read_only()
        if mode.upper() not in _TRANSACTION_MODES:
            at = source.upper().find(mode.split()[0].upper())
            near = source[at:].strip()[:80]
            raise SQLError(syntax_error(1, at + 1, near, "not a transaction mode"), code=1064)
    _start(engine)


def _start(engine: Engine) -> None:
    engine.commit()  # BEGIN commits an open transaction (MySQL)
    engine.begin()


def _commit(engine: Engine, node: exp.Expr, source: str) -> None:
    engine.commit()


def _rollback(engine: Engine, node: exp.Rollback, source: str) -> None:
    savepoint = node.args.get("savepoint")
    if savepoint is not None:
        name = savepoint.name.lower()
        txn = engine.session.txn
        if txn is None or name not in txn.savepoints:
            raise SQLError(f"SAVEPOINT {savepoint.name} does not exist", code=1305)
        mark = txn.savepoints[name]
        rollback_to(txn, mark)
        names = list(txn.savepoints)  # savepoints set after this one are gone (MySQL)
        txn.savepoints = {k: txn.savepoints[k] for k in names[: names.index(name) + 1]}
        return
    engine.abort()


def _savepoint(engine: Engine, node: d.Savepoint, source: str) -> None:
    name = node.this.name.lower()
    if node.args.get("release"):
        if engine.session.txn is None or name not in engine.session.txn.savepoints:
            raise SQLError(f"SAVEPOINT {node.this.name} does not exist", code=1305)
        del engine.session.txn.savepoints[name]
        return
    if engine.session.txn is None and engine.session.autocommit:
        return  # a savepoint outside a transaction is a no-op (MySQL)
    txn = engine.begin()
    txn.savepoints.pop(name, None)  # re-setting a name moves it to the end
    txn.savepoints[name] = len(txn.undo)


def _do(engine: Engine, node: d.Do, source: str) -> None:
    """DO expr, ...: evaluated for their effects (NEXTVAL, @x := ...), results dropped."""
    if not _has_side_effects(node):
        engine.warn("DO", "DO without sequence functions or assignments has no effect")
    for item in node.expressions:
        evaluate_constant(item, engine)


def _select(engine: Engine, node: exp.Select, source: str) -> None:
    """A SELECT changes data only by its effects: INTO @vars, sequence functions, `@x :=
    ...`. Without any it is still evaluated, so that it fails where TiDB's would (a value
    out of range, an unknown column); what the engine cannot answer is skipped."""
    if not _has_side_effects(node):
        try:
            engine.query(node, source)
        except SQLError as e:
            if e.code != 1105 or isinstance(e, UnexpectedError):
                raise
        engine.no_effect("SELECT")
        return
    into = node.args.get("into")
    targets = into.expressions if into is not None else []
    if into is not None and not (targets and all(isinstance(t, exp.Parameter) for t in targets)):
        raise SQLError("SELECT ... INTO takes user variables (@x) only here", code=1105)
    query = node.copy()
    query.set("into", None)
    rows = engine._rows(query, engine._source_table(query))
    if into is None:
        return
    names = [t.name.lower() for t in targets]
    if rows and len(rows[0]) != len(names):
        raise SQLError("The used SELECT statements have a different number of columns", code=1222)
    if len(rows) > 1:
        raise SQLError("Result consisted of more than one row", code=1172)
    if not rows:
        engine.warn("SELECT INTO", "SELECT ... INTO found no row; the variables keep their values")
        return
    for name, value in zip(names, rows[0], strict=True):
        engine.set_user_variable(name, value)


def _dml(engine: Engine, node: exp.Expr, source: str) -> None:
    plan = compile_dml(engine, node)
    engine._statement(lambda: plan(engine, [[]]))


# Statements of bare words, by their lexed words (shapes.py), run without a parse.
_BARE_STATEMENTS: dict[tuple[str, ...], Callable[[Engine], None]] = {
    ("BEGIN",): _start,
    ("START", "TRANSACTION"): _start,
    ("COMMIT",): Engine.commit,
    ("ROLLBACK",): Engine.abort,
}

_STATEMENTS: dict[type, Callable[[Engine, Any, str], None]] = {
    exp.Insert: _dml,
    d.ReplaceInto: _dml,
    exp.Update: _dml,
    exp.Delete: _dml,
    exp.Transaction: _transaction,
    exp.Commit: _commit,
    exp.Rollback: _rollback,
    d.Savepoint: _savepoint,
    exp.Set: set_variables,
    d.Do: _do,
    exp.Select: _select,
    exp.Use: _use,
}
