"""The upstream engine: executes SQL scripts the way TiDB would and yields what TiKV records.

It stands in for TiDB + TiKV. Tables live in memory keyed by their row handle; a transaction
records the first image of every row key it writes, and at COMMIT the engine turns
(first image, final image) per key into row changes, which is exactly how TiKV folds a
transaction's writes per key (insert+update -> insert, insert+delete -> nothing, delete+insert
-> update). Every change carries its full before and after image, unsplit, and rows leave in
the order TiCDC's sorter reads them (tiflow `cdc/processor/sourcemanager/sorter/pebble/
encoding/key.go`: per physical table, delete < update < insert, then by row key). What a
changefeed captures of them (old value, the split of key-changing updates) is its own
pipeline's business (`generator/capture.py`), so one cluster feeds changefeeds of any setting.

Statements are atomic: a failing statement undoes its own writes only; ROLLBACK and failed
COMMITs emit nothing. DDL commits the open transaction first, as in TiDB.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import gc
import hashlib
import random
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, NamedTuple, TypeVar, cast

from sqlglot import exp

from ticdc_sim.errors import Location, SQLError, Warnings, not_utf8
from ticdc_sim.generator.capture import key_order
from ticdc_sim.generator.sql import aggregate, join, labels
from ticdc_sim.generator.sql import dialect as d
from ticdc_sim.generator.sql.commit import emitted, row_events
from ticdc_sim.generator.sql.ddl import Catalog
from ticdc_sim.generator.sql.dml import BulkPlan, Plan, compile_dml, compile_select, select_source
from ticdc_sim.generator.sql.evaluate import (
    Context,
    evaluate_constant,
    stable_uuid,
    to_number,
)
from ticdc_sim.generator.sql.locks import Blocked, IndexKey, LockTable, Versions
from ticdc_sim.generator.sql.partition import route_partition
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
    ENTRY_SIZE_LIMIT,
    Index,
    TableData,
    duplicate_error,
    entry_size,
    entry_too_large,
)
from ticdc_sim.generator.sql.sysvars import (
    CHARSET_VARIABLES,
    KNOWN_VARIABLES,
    SERVER_VARIABLES,
    SWITCH_VARIABLES,
    isolation_level,
    known_value,
)
from ticdc_sim.generator.sql.txn import BulkInsert, Transaction, Write
from ticdc_sim.generator.sql.values import (
    TIDB_DEFAULT_SQL_MODE,
    SqlMode,
    as_text,
    column_converter,
    format_date,
    format_datetime,
    load_zone,
)
from ticdc_sim.model.actions import ActionType
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


# -- tables ------------------------------------------------------------------------------------


# -- transactions ------------------------------------------------------------------------------


class ResultSet(NamedTuple):
    """What a SELECT answers: its column names, rows and (where known) column types."""

    names: list[str]
    rows: list[Row]
    types: list[MySQLType | None]


class Engine:
    """Executes statements; `run()` yields DDL and row events as transactions commit.

    What the statement executors (dml.py, join.py) use of it is declared in target.py
    (`DMLTarget`); they never import this module. Sessions of a service share one engine:
    the catalog, rows, TSO clock and the open transactions' locks and versions (`active`,
    `locks`, `versions`) are the cluster's, the rest is the session's, which `cluster.py`
    puts in place for each statement.
    """

    def __init__(
        self,
        config: EngineConfig | None = None,
        catalog: Catalog | None = None,
        warnings: Warnings | None = None,
    ):
        self.config = config or EngineConfig()
        seed = self.config.seed
        start = self.config.start_ts
        clock = TSOClock.starting_at(start, seed) if start else TSOClock(seed=seed)
        self.catalog = catalog or Catalog(clock=clock)
        if self.config.database and self.catalog.current_schema is None:
            self.catalog.current_schema = self.catalog.schema(self.config.database).name
        self.tables: dict[int, TableData] = {}
        # the session its statements run for (a service hands in each client's own)
        self.session = Session.of(
            self.config.time_zone,
            self.catalog.current_schema,
            warnings=warnings if warnings is not None else Warnings(),
        )
        self.cdc_zone = self.session.zone
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
        self.sequences: dict[int, list[Any]] = {}  # sequence table id -> [next value, last]
        self.dropped: dict[int, TableData] = {}  # dropped tables' rows, for RECOVER TABLE
        self.errors: list[str] = []  # failed statements skipped under continue_on_error
        self.outbox: list[Event] = []  # committed, not yet yielded by `run`
        self.count_affected = False  # whether `step` counts `affected_rows` (a service asks)
        self.max_txn_rows = 0  # rows one transaction may write (txn-total-size-limit); 0: any
        # every session's open transaction (sessions share the engine: see locks.py)
        self.active: dict[Transaction, None] = {}
        self.ended = 0  # transactions ended: a waiter's lock may be free
        self.locks = LockTable()
        self.versions = Versions()
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
        seq = info.sequence
        if seq is None:
            raise SQLError(f"'{info.schema}.{info.name}' is not SEQUENCE", code=1347)
        state = self.sequences.setdefault(info.id, [seq.start, None])  # [next, last]
        if op == "LASTVAL":
            return state[1]
        if op == "SETVAL":
            target = int(to_number(value))
            ahead = target >= state[0] if seq.increment > 0 else target <= state[0]
            if not ahead:
                return None
            state[0] = target + seq.increment
            return target
        current = state[0]
        if not seq.min_value <= current <= seq.max_value:
            if not seq.cycle:
                raise SQLError(f"Sequence '{info.schema}.{info.name}' has run out", code=4135)
            current = seq.min_value if seq.increment > 0 else seq.max_value
        state[0], state[1] = current + seq.increment, current
        return current

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
        self._use_mode(replace(SqlMode.parse(text), check_utf8=self.session.sql_mode.check_utf8))

    def _use_mode(self, mode: SqlMode) -> None:
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
            if self.outbox:
                events, self.outbox = self.outbox, []
                yield from events
            if error is not None:
                if not self.config.continue_on_error:
                    self._abort()
                    raise error from None
                self.errors.append(str(error))
        if self.session.txn is not None and any(self.session.txn.first.values()):
            self.session.warnings.warn(
                "uncommitted",
                "a transaction was still open at the end: rolled back, as when a client"
                " disconnects, and its rows not sent (end it with COMMIT)",
                self.session.txn.location,
            )
        self._abort()

    def step(self, stmt: Statement | RawStatement) -> SQLError | None:
        """Execute one statement, in the session's transaction; its error, located, or None.
        What it committed is in `outbox`; a failed statement changed nothing (an explicit
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
            if node.args.get("locks"):
                return self._locking_query(node, text)
            images = self._snapshot() if self.active else []
            if not images:
                return self._query(node, text)
            with showing(images):  # the snapshot, for this read only
                return self._query(node, text)
        except (SQLError, MemoryError, Blocked):
            raise
        except Exception as e:  # reported as this statement's error
            raise _unexpected(e) from None

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
        table = self._source_table(node)
        columns = {c.name.lower(): c for c in table.info.columns} if table else {}
        names: list[str] = []
        types: list[MySQLType | None] = []
        for e, label in zip(node.expressions, labels.select_labels(text, node), strict=True):
            if isinstance(e, exp.Star) and table is not None:
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
        if not aggregate.is_aggregate(node):
            return ResultSet(names, join.rows(self, node), types)
        inner, folds = aggregate.split(node, lambda value: evaluate_constant(value, self))
        return ResultSet(names, [aggregate.fold(join.rows(self, inner), folds)], types)

    def _source_table(self, node: exp.Select) -> TableData | None:
        source = select_source(node)
        return self.read_table(source.this) if source is not None else None

    def _rows(self, node: exp.Select, table: TableData | None) -> list[Row]:
        """A SELECT's rows; with aggregates (and no GROUP BY), its one row."""
        if not aggregate.is_aggregate(node):
            return compile_select(self, node)([])
        if table is not None and "ONLY_FULL_GROUP_BY" in self.session.sql_mode.names:
            aggregate.check_full_group_by(node, table.info)
        inner, folds = aggregate.split(node, lambda value: evaluate_constant(value, self))
        return [aggregate.fold(compile_select(self, inner)([]), folds)]

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
        """Execute one parsed statement; what it commits goes to `outbox`."""
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
            handler(self, node, source)
            return
        kind = _NO_EFFECT.get(type(node))
        if kind is not None:
            self.no_effect(kind)
            return
        if is_ddl(node):
            self._commit()
            # DDL waits for the transactions that read or wrote (MySQL's metadata locks)
            busy = [t for t in self.active if t.first or t.read_ts or self.locks.holds(t)]
            if busy:
                raise Blocked(busy[0], None)
            self.plans.clear()  # plans hold tables and the current database
            # checked under the settings of the session running it (sessions share a catalog)
            self.catalog.sql_mode = self.session.sql_mode
            self.catalog.clustered_index = self.session.clustered_index
            for event in self.catalog.apply(node, source):
                self._sync_table(event)
                self.outbox.append(event)
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

    def _abort(self) -> None:
        txn = self.session.txn
        if txn is not None:
            self._rollback_to(0)
            self.session.txn = None
            self._end(txn)

    # -- transactions ------------------------------------------------------------------------

    def _begin(self) -> Transaction:
        if self.session.txn is None:
            self.catalog.clock.pause()  # simulated time moves on between transactions
            isolation, self.session.next_isolation = (
                self.session.next_isolation or self.session.isolation,
                None,
            )
            self.session.txn = Transaction(self.catalog.clock.next(), self.location, isolation)
            self.active[self.session.txn] = None
        return self.session.txn

    def _commit(self) -> None:
        txn, self.session.txn = self.session.txn, None
        if txn is None:
            return
        if any(txn.first.values()):
            commit_ts = self.catalog.clock.next()
            if any(t.read_ts is not None for t in self.active if t is not txn):
                self.versions.keep(commit_ts, txn.first)  # an open snapshot reads before it
            self.outbox.extend(self._row_events(txn, commit_ts))
        self._end(txn)

    def _end(self, txn: Transaction) -> None:
        """A transaction ends: its locks go, and the versions no snapshot reads."""
        self.active.pop(txn, None)
        self.locks.release(txn)
        self.ended += 1
        if self.versions:
            snapshots = [t.read_ts for t in self.active if t.read_ts is not None]
            self.versions.purge(min(snapshots, default=None))

    # -- locks (locks.py): only where another transaction is open ----------------------------

    def holder(self, table: TableData, handle: Any, exclusive: bool = True) -> Any:
        """Another open transaction that wrote or locked the row under `handle`, or None."""
        txn = self.session.txn
        if txn is not None and handle in txn.first.get(table, ()):
            return None  # its own write: it holds the row
        for other in self.active:
            if other is not txn:
                firsts = other.first.get(table)
                if firsts is not None and handle in firsts:
                    return other
        key = (table, handle)
        return self.locks.blocker(txn, key, exclusive) or self.locks.ahead(txn, key, exclusive)

    def _check_write(
        self, txn: Transaction, table: TableData, handle: Any, row: Row | None
    ) -> None:
        """A write waits for the transaction holding its row, or holding (as a row it
        changed) a unique key the new row takes."""
        holder = self.holder(table, handle)
        if holder is not None:
            raise Blocked(holder, (table, handle))
        if row is None or not table.uniques:
            return
        keys = [(unique, unique.key(row)) for unique in table.uniques]
        for other in self.active:
            firsts = other.first.get(table) if other is not txn else None
            for h, before in (firsts or {}).items():
                if before is not None and any(
                    k is not None and u.key(before) == k for u, k in keys
                ):
                    raise Blocked(other, (table, h))

    def check_images(self, table: TableData, hits: Callable[[Row], bool]) -> None:
        """A locking read waits for another transaction that changed a row it reads: one
        the statement's condition holds for before or after that change."""
        if len(self.active) < 2:
            return
        rows = table.rows
        for other in self.active:
            if other is self.session.txn:
                continue
            for h, before in (other.first.get(table) or {}).items():
                after = rows.get(h)
                if (before is not None and hits(before)) or (after is not None and hits(after)):
                    raise Blocked(other, (table, h))

    def lock_entries(
        self, table: TableData, index: Index, rows: list[Row], exclusive: bool
    ) -> None:
        """The entries of `rows` in the unique index a locking read found them through."""
        txn = self._begin()
        if not (txn.implicit and len(self.active) < 2):
            for row in rows:
                self._lock(txn, table, IndexKey(index.info.name, index.entry(row)), exclusive)

    def lock_rows(
        self, table: TableData, matched: list[tuple[Any, Row]], exclusive: bool, writes: bool
    ) -> None:
        """The rows a locking read or an UPDATE/DELETE (`writes`) matched, locked to the end
        of the transaction. A statement of the only open transaction needs no lock for the
        rows it writes (its writes hold them) and, writing, none for the rest: the rows an
        UPDATE matches and leaves as they were are then not locked against a transaction
        that begins later (InnoDB would lock them; the cost is every row of every range)."""
        if writes and len(self.active) < 2:
            return
        txn = self._begin()
        if not (txn.implicit and len(self.active) < 2):
            for handle, _ in matched:
                self._lock(txn, table, handle, exclusive)

    def _lock(self, txn: Transaction, table: TableData, handle: Any, exclusive: bool) -> None:
        _intend(txn, table, exclusive)
        if len(self.active) > 1:
            holder = self.holder(table, handle, exclusive)
            if holder is not None:
                raise Blocked(holder, (table, handle))
        self.locks.take(txn, (table, handle), exclusive)

    def weight(self, txn: Transaction) -> int:
        """What a deadlock's victim loses, as MariaDB weighs it (`lock0lock.cc`): its undo
        records and its lock structures (a table's intention lock, one per index and mode).
        Checked against MariaDB 10.11: the lighter dies, the one closing the cycle on a tie."""
        undo = sum(len(e.handles) if isinstance(e, BulkInsert) else 1 for e in txn.undo)
        intents = sum(len(modes) for modes in txn.intents.values())
        return undo + len(self.locks.structs(txn)) + intents

    def _snapshot(self) -> list[tuple[TableData, list[tuple[Any, Row | None]]]]:
        """The rows a plain read must see other than the tables hold them: other open
        transactions' writes undone, and what committed after this transaction's snapshot
        (REPEATABLE READ; READ COMMITTED and autocommit reads see every commit)."""
        txn = self.session.txn
        read_ts = None
        if txn is not None and txn.isolation != "READ-COMMITTED":
            if txn.read_ts is None:
                txn.read_ts = self.catalog.clock.last
            read_ts = txn.read_ts
        images: dict[tuple[TableData, Any], Row | None] = {}
        for other in self.active:
            if other is not txn:
                for table, firsts in other.first.items():
                    for handle, before in firsts.items():
                        images[table, handle] = before
        if read_ts is not None and self.versions:
            for kept, handle, before in self.versions.before(read_ts):
                images[cast(TableData, kept), handle] = before
        if txn is not None and images:
            for table, firsts in txn.first.items():
                for handle in firsts:
                    images.pop((table, handle), None)
        by_table: dict[TableData, list[tuple[Any, Row | None]]] = {}
        for (table, handle), image in images.items():
            by_table.setdefault(table, []).append((handle, image))
        return list(by_table.items())

    def _rollback_to(self, mark: int) -> None:
        assert self.session.txn is not None
        undo, first = self.session.txn.undo, self.session.txn.first
        while len(undo) > mark:
            entry = undo.pop()
            if isinstance(entry, BulkInsert):
                for handle in entry.handles:
                    entry.table.put(handle, None)
                firsts = first[entry.table]
                for handle in entry.touched:
                    del firsts[handle]
                continue
            table, handle, previous, first_touch = entry
            table.put(handle, previous)
            if first_touch:
                del first[table][handle]

    def write(self, table: TableData, handle: Any, row: Row | None) -> None:
        """Put or delete one row key inside the open transaction."""
        if row is not None and table.large_rows:
            _check_entry(table, handle, row)
        txn = self._begin()
        if table not in txn.intents:
            _intend(txn, table, True)
        if len(self.active) > 1:
            self._check_write(txn, table, handle, row)
        firsts = txn.first.get(table)
        if firsts is None:
            firsts = txn.first[table] = {}
        previous = table.rows.get(handle)
        first_touch = handle not in firsts
        if first_touch:
            firsts[handle] = previous
        txn.undo.append(Write(table, handle, previous, first_touch))
        table.put(handle, row)

    def write_new(self, table: TableData, handles: list[Any], rows: list[Row]) -> None:
        """Insert rows under distinct handles that hold no row (checked by the caller)."""
        if table.large_rows:
            for handle, row in zip(handles, rows, strict=True):
                _check_entry(table, handle, row)
        txn = self._begin()
        if table not in txn.intents:
            _intend(txn, table, True)
        if len(self.active) > 1:
            for handle, row in zip(handles, rows, strict=True):
                self._check_write(txn, table, handle, row)
        firsts = txn.first.get(table)
        if firsts is None:
            firsts = txn.first[table] = {}
        touched = [h for h in handles if h not in firsts] if firsts else handles
        firsts.update(dict.fromkeys(touched))
        txn.undo.append(BulkInsert(table, handles, touched))
        table.put_new(handles, rows)

    def _statement(self, body: Callable[[], None]) -> None:
        """Run one DML statement atomically, committing it under autocommit."""
        implicit = (
            self.session.autocommit if self.session.txn is None else self.session.txn.implicit
        )
        txn = self._begin()
        txn.implicit = implicit
        mark = len(txn.undo)
        self.ids_this_statement = False
        self.affected_adjust = 0
        try:
            body()
            if self.max_txn_rows:
                self._check_size(txn)
        except SQLError:
            self._rollback_to(mark)
            if implicit:
                self.session.txn = None
                self._end(txn)
            raise
        except Blocked:  # undone; it runs again once the lock is free (its locks stay)
            self._rollback_to(mark)
            raise
        if self.count_affected:
            self.affected_rows = self._affected(txn, mark) + self.affected_adjust
        if implicit:
            self._commit()

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

    def _row_events(self, txn: Transaction, commit_ts: int) -> list[RowChangedEvent]:
        return row_events(txn, commit_ts, self.cdc_zone)

    def _emitted(self, table: TableData, row: Row | None) -> Row | None:
        return emitted(table, row, self.cdc_zone)

    def table_states(self) -> Iterator[tuple[TableInfo, list[Row]]]:
        """Every table's rows now, as TiCDC's mounter hands them on, in key order."""
        for data in self.tables.values():
            if not (data.info.is_sequence or data.info.is_view):
                yield data.info, self._rows_of(data)

    def table_state(self, schema: str, name: str) -> tuple[TableInfo, list[Row]] | None:
        """One table's rows now, as `table_states`; None if there is no such table."""
        info = self.catalog.find_table(schema, name)
        data = None if info is None else self.tables.get(info.id)
        if data is None or data.info.is_sequence or data.info.is_view:
            return None
        return data.info, self._rows_of(data)

    def _rows_of(self, data: TableData) -> list[Row]:
        order = sorted(data.rows, key=None if data.int_handle else key_order)
        return [self._emitted(data, data.rows[h]) or () for h in order]

    # -- DDL ---------------------------------------------------------------------------------

    def _sync_table(self, event: DDLEvent) -> None:
        before, after = event.pre_table_info, event.table_info
        if _exchanges_partition(event) and before is not None and after is not None:
            self._exchange_partition(before, after)
            return
        if before is not None and (after is None or after.id != before.id):
            data = self.tables.pop(before.id, None)
            if data is not None and after is not None and not _drops_rows(event):
                self.tables[after.id] = data
            elif data is not None and event.action in (
                ActionType.DROP_TABLE,
                ActionType.TRUNCATE_TABLE,
            ):
                self.dropped[before.id] = data  # for RECOVER and FLASHBACK TABLE
        recovered = event.action == ActionType.RECOVER_TABLE and after is not None
        if recovered and after is not None and after.id in self.dropped:
            self.tables[after.id] = self.dropped.pop(after.id)
        if after is None or after.is_view:
            return
        data = self.tables.get(after.id)
        if data is None:
            self.tables[after.id] = self._new_table_data(after)
            return
        if before is not None and _drops_rows(event):
            data.rows.clear()
        if before is not None and _drops_partitions(event):
            # rows of truncated (re-numbered) or dropped partitions are gone
            kept = set(after.physical_ids)
            for handle, row in list(data.rows.items()):
                if route_partition(data, row) not in kept:
                    data.put(handle, None)
        old_info = data.info
        if before is not None and old_info.columns != after.columns:
            data.rows = _migrate_rows(old_info, after, data.rows, self)
        data.bind(after)

    def _exchange_partition(self, before: TableInfo, after: TableInfo) -> None:
        """EXCHANGE PARTITION: the partition's rows and the other table's rows swap tables.

        TiDB swaps the two physical ids; the rows keep their handles.
        """
        (lost,) = set(before.physical_ids) - set(after.physical_ids)  # now the other table's
        (gained,) = set(after.physical_ids) - set(before.physical_ids)  # the other's old id
        data = self.tables[after.id]
        leaving = [(h, r) for h, r in data.rows.items() if route_partition(data, r) == lost]
        for handle, _ in leaving:
            data.put(handle, None)
        other = self.tables.pop(gained, None)
        arriving = list(other.rows.items()) if other is not None else []
        data.bind(after)
        for handle, row in arriving:
            data.put(handle, row)
        other_info = next(
            t
            for schema in self.catalog.schemas.values()
            for t in schema.tables.values()
            if t.id == lost
        )
        swapped = self._new_table_data(other_info)
        swapped.next_id = other.next_id if other is not None else swapped.next_id
        for handle, row in leaving:
            swapped.put(handle, row)
        self.tables[other_info.id] = swapped

    def _new_table_data(self, info: TableInfo) -> TableData:
        # values are converted in the time zone and sql_mode of the session running the
        # statement, read at each use
        return TableData(info, lambda: self.session.zone, lambda: self.session.sql_mode)

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
        data = self.tables.get(info.id)
        if data is None:
            data = self.tables[info.id] = self._new_table_data(info)
        return data

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
        if found and len(self.active) > 1:
            self._wait_for_holders(table, found)
        return found

    def _wait_for_holders(self, table: TableData, handles: list[Any]) -> None:
        """A duplicate of a row another transaction holds is known once it ends: InnoDB's
        duplicate check waits for its lock (the row may be rolled back)."""
        for handle in handles:
            holder = self.holder(table, handle, exclusive=False)
            if holder is not None:
                raise Blocked(holder, (table, handle))

    @staticmethod
    def key_order(handle: Any) -> Any:
        return key_order(handle)

    @staticmethod
    def unique_error(table: TableData, unique: Index, row: Row) -> SQLError:
        return duplicate_error(table.info, unique.info, row, unique.offsets)

    def duplicate_error(self, table: TableData, handle: Any, row: Row) -> SQLError:
        if len(self.active) > 1 and table.handle_offsets and handle in table.rows:
            self._wait_for_holders(table, [handle])
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


def _check_entry(table: TableData, handle: Any, row: Row) -> None:
    """TiDB's txn-entry-size-limit: no key and value over 6 MiB (error 8025)."""
    size = entry_size(table, handle, row)
    if size > ENTRY_SIZE_LIMIT:
        raise entry_too_large(size)


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


def _drops_rows(event: DDLEvent) -> bool:
    return event.action in (ActionType.TRUNCATE_TABLE, ActionType.DROP_TABLE)


def _exchanges_partition(event: DDLEvent) -> bool:
    return event.action == ActionType.EXCHANGE_TABLE_PARTITION


def _drops_partitions(event: DDLEvent) -> bool:
    return event.action in (ActionType.TRUNCATE_TABLE_PARTITION, ActionType.DROP_TABLE_PARTITION)


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


def _read_only() -> SQLError:
    return SQLError(
        "function READ ONLY has only noop implementation in tidb now, use"
        " tidb_enable_noop_functions to enable these functions",
        code=1235,
    )


def _transaction(engine: Engine, node: exp.Expr, source: str) -> None:
    for mode in node.args.get("modes") or []:
        if mode.upper() == "READ ONLY":
            raise _read_only()
        if mode.upper() not in _TRANSACTION_MODES:
            at = source.upper().find(mode.split()[0].upper())
            near = source[at:].strip()[:80]
            raise SQLError(syntax_error(1, at + 1, near, "not a transaction mode"), code=1064)
    engine._commit()  # BEGIN commits an open transaction (MySQL)
    engine._begin()


def _commit(engine: Engine, node: exp.Expr, source: str) -> None:
    engine._commit()


def _rollback(engine: Engine, node: exp.Rollback, source: str) -> None:
    savepoint = node.args.get("savepoint")
    if savepoint is not None:
        name = savepoint.name.lower()
        txn = engine.session.txn
        if txn is None or name not in txn.savepoints:
            raise SQLError(f"SAVEPOINT {savepoint.name} does not exist", code=1305)
        mark = txn.savepoints[name]
        engine._rollback_to(mark)
        names = list(txn.savepoints)  # savepoints set after this one are gone (MySQL)
        txn.savepoints = {k: txn.savepoints[k] for k in names[: names.index(name) + 1]}
        return
    engine._abort()


def _savepoint(engine: Engine, node: d.Savepoint, source: str) -> None:
    name = node.this.name.lower()
    if node.args.get("release"):
        if engine.session.txn is None or name not in engine.session.txn.savepoints:
            raise SQLError(f"SAVEPOINT {node.this.name} does not exist", code=1305)
        del engine.session.txn.savepoints[name]
        return
    if engine.session.txn is None and engine.session.autocommit:
        return  # a savepoint outside a transaction is a no-op (MySQL)
    txn = engine._begin()
    txn.savepoints.pop(name, None)  # re-setting a name moves it to the end
    txn.savepoints[name] = len(txn.undo)


def _set(engine: Engine, node: exp.Set, source: str) -> None:
    for item in node.expressions:
        if item.text("kind").upper() == "NAMES":
            engine.set_charset(CHARSET_VARIABLES, item.this.name)
            continue
        assignment = item.this
        if not isinstance(assignment, exp.EQ | exp.PropertyEQ):
            if any(e.name.upper() == "READ ONLY" for e in item.expressions):
                raise _read_only()  # SET TRANSACTION READ ONLY: TiDB's checkReadOnly
            level = isolation_level([e.name for e in item.expressions])
            if level is not None and not item.args.get("global_"):
                if _SESSION_SCOPE.search(source):
                    engine.session.isolation = level
                else:  # SET TRANSACTION ...: the next transaction only (MySQL)
                    engine.session.next_isolation = level
                continue
            engine.warn(
                f"SET {item.sql(dialect=d.TiDB)}",
                f"SET {item.sql(dialect=d.TiDB)} has no effect here; accepted and skipped",
            )
            continue
        target, value_node = assignment.this, assignment.expression
        if isinstance(target, exp.Parameter):  # @x = expr
            engine.set_user_variable(target.name.lower(), evaluate_constant(value_node, engine))
            continue
        name = target.name.lower()
        if item.text("kind").upper() == "GLOBAL" or target.text("kind").upper() == "GLOBAL":
            engine.warn(
                f"SET GLOBAL {name}",
                f"SET GLOBAL {name} changes no session of this script; accepted and skipped",
            )
            continue
        own = SESSION_VARIABLES.get(name)
        if isinstance(value_node, exp.Column | exp.Var) and not value_node.args.get("table"):
            value: Any = value_node.name  # a bare word: ON, OFF, utf8, SYSTEM ...
            if own is not None and value.upper() == "DEFAULT":  # the server's value
                value = own.default(engine)
        else:
            value = evaluate_constant(value_node, engine)
        if own is not None:
            own.set(engine, value)
        elif name in KNOWN_VARIABLES:
            switch = name in SWITCH_VARIABLES
            engine.session.noop_values[name] = (
                int(_switch(name, value)) if switch else known_value(name, value)
            )
        else:
            engine.warn(f"variable {name}", f"variable {name} is accepted and has no effect")


_SESSION_SCOPE = re.compile(r"\bSET\s+(SESSION|LOCAL)\s+TRANSACTION\b", re.IGNORECASE)


def _set_isolation(engine: Engine, value: Any, name: str) -> None:
    engine.session.isolation = known_value(name, as_text(value))  # 1231, 8048 as TiDB


def _switch(name: str, value: Any) -> bool:
    """A boolean system variable's value: 1/0, ON/OFF or TRUE/FALSE (MySQL 1231 else)."""
    text = as_text(value).upper()
    if text not in _SWITCHES:
        message = f"Variable '{name}' can't be set to the value of '{as_text(value)}'"
        raise SQLError(message, code=1231)
    return _SWITCHES[text]


_SWITCHES = {"1": True, "ON": True, "TRUE": True, "0": False, "OFF": False, "FALSE": False}


def _set_autocommit(engine: Engine, value: Any) -> None:
    on = _switch("autocommit", value)
    if on and not engine.session.autocommit:
        engine._commit()  # turning autocommit on commits (MySQL)
    engine.session.autocommit = on


def _set_time_zone(engine: Engine, value: Any) -> None:
    engine.session.zone = load_zone(as_text(value))
    engine.session.zone_name = as_text(value)


def _set_clustered_index(engine: Engine, value: Any) -> None:
    # pkg/sessionctx/vardef: ON (the default, DefTiDBEnableClusteredIndex), OFF, INT_ONLY
    mode = {"1": "ON", "0": "OFF"}.get(as_text(value).upper(), as_text(value).upper())
    if mode not in ("ON", "OFF", "INT_ONLY"):
        raise SQLError(
            f"Variable 'tidb_enable_clustered_index' can't be set to the value of '{value}'",
            code=1231,
        )
    engine.session.clustered_index = mode


def _set_skip_utf8_check(engine: Engine, value: Any) -> None:
    # TiDB's tidb_skip_utf8_check: strings reach character columns unchecked
    skip = _switch("tidb_skip_utf8_check", value)
    engine._use_mode(replace(engine.session.sql_mode, check_utf8=not skip))


class SessionVariable(NamedTuple):
    """A system variable with an effect here: its session value (booleans as bool), how SET
    applies a value to it, and the server's value, which SET ... = DEFAULT restores."""

    get: Callable[[Engine], Any]
    set: Callable[[Engine, Any], None]
    default: Callable[[Engine], Any]


def _charset_variable(name: str) -> SessionVariable:
    """character_set_client, _connection or _results: SET NAMES sets all three."""
    return SessionVariable(
        lambda e: e.session.charsets[name],
        lambda e, value: e.set_charset([name], value),
        lambda e: SERVER_VARIABLES[name],
    )


def _set_read_only(engine: Engine, value: Any) -> None:
    if _switch("transaction_read_only", value):
        raise _read_only()  # TiDB's checkReadOnly, without tidb_enable_noop_functions


SESSION_VARIABLES: dict[str, SessionVariable] = {
    "autocommit": SessionVariable(lambda e: e.session.autocommit, _set_autocommit, lambda e: True),
    "sql_mode": SessionVariable(
        lambda e: str(e.session.sql_mode),
        lambda e, value: e.set_sql_mode(as_text(value)),
        lambda e: TIDB_DEFAULT_SQL_MODE,
    ),
    "tidb_skip_utf8_check": SessionVariable(
        lambda e: not e.session.sql_mode.check_utf8, _set_skip_utf8_check, lambda e: False
    ),
    "tidb_enable_clustered_index": SessionVariable(
        lambda e: e.session.clustered_index, _set_clustered_index, lambda e: "ON"
    ),
    "time_zone": SessionVariable(
        lambda e: e.session.zone_name, _set_time_zone, lambda e: e.config.time_zone
    ),
    **{name: _charset_variable(name) for name in CHARSET_VARIABLES},
    **{
        name: SessionVariable(
            lambda e: e.session.isolation,
            functools.partial(lambda n, e, value: _set_isolation(e, value, n), name),
            lambda e: "REPEATABLE-READ",
        )
        for name in ("transaction_isolation", "tx_isolation")
    },
    **{
        name: SessionVariable(lambda e: False, _set_read_only, lambda e: False)
        for name in ("tx_read_only", "transaction_read_only")
    },
}


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


_STATEMENTS: dict[type, Callable[[Engine, Any, str], None]] = {
    exp.Insert: _dml,
    d.ReplaceInto: _dml,
    exp.Update: _dml,
    exp.Delete: _dml,
    exp.Transaction: _transaction,
    exp.Commit: _commit,
    exp.Rollback: _rollback,
    d.Savepoint: _savepoint,
    exp.Set: _set,
    d.Do: _do,
    exp.Select: _select,
    exp.Use: _use,
}


def _intend(txn: Transaction, table: TableData, exclusive: bool) -> None:
    """The table's intention lock a row lock needs: IX covers IS, IS not IX."""
    held = txn.intents.get(table, ())
    if "IX" not in held and (exclusive or "IS" not in held):
        txn.intents[table] = (*held, "IX" if exclusive else "IS")


@contextlib.contextmanager
def showing(images: list[tuple[TableData, list[tuple[Any, Row | None]]]]) -> Iterator[None]:
    """The tables with `images` put under their keys while the caller (alone on them) reads
    them, and the rows they hold now put back after."""
    now = [(table, [(h, table.rows.get(h)) for h, _ in rows]) for table, rows in images]
    put_rows(images)
    try:
        yield
    finally:
        put_rows(now)


def put_rows(images: list[tuple[TableData, list[tuple[Any, Row | None]]]]) -> None:
    """Rows put under their keys: every key emptied first, so no unique key is held twice
    midway (each set of images is whole: a table's state before or after)."""
    for table, rows in images:
        for handle, _ in rows:
            table.put(handle, None)
    for table, rows in images:
        for handle, row in rows:
            if row is not None:
                table.put(handle, row)
