"""Upstream clusters, their sessions and changefeeds: what the Python API (`ticdc_sim.api`)
and the service (`ticdc_sim.service`, over HTTP and the MySQL port) run.

A `Cluster` is one simulated TiDB cluster: an engine (catalog, rows, TSO clock, seed) and the
changefeeds that capture it. Its work is serialised by one lock; different clusters run in
parallel. Each client session (an HTTP request, a MySQL connection) has a `SessionState`
holding its `Session`, which the engine is handed with each of its statements.

Transactions are TiDB's pessimistic ones (generator/sql/locks.py): a statement that needs a
row another session's transaction holds is undone by the engine (`Blocked`), and its session
waits here, with the cluster's lock released, until that transaction ends, then runs it again;
after `lock_wait_s` it gets error 1205 (the statement fails, the transaction stays), and a wait
that closes a cycle is a deadlock: its victim's transaction is rolled back with error 1213.
Reads, session statements and SHOW never wait. What a statement commits goes to the
changefeeds before the lock is released, so they see commits in commit-ts order.

Each changefeed is a `Feed` (`ticdc_sim.feed`), with a `FeedLog` (`ticdc_sim.feedlog`) of
the records it sent.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import logging
import re
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import chain, groupby
from operator import attrgetter, countOf, itemgetter
from typing import Any, cast

from sqlglot import exp

from ticdc_sim.config import Changefeed
from ticdc_sim.encoders.registry import (
    Limits,
    MemoryRegistry,
)
from ticdc_sim.errors import SimError, SQLError, WarningEntry, Warnings
from ticdc_sim.feed import (
    DEFAULT_RETRY,
    HELD,
    SNAPSHOT_LOST,
    Change,
    Feed,
    FeedSpec,
    Retry,
    build_changefeed,
)
from ticdc_sim.feedlog import Retain
from ticdc_sim.generator.sql import show
from ticdc_sim.generator.sql.engine import Engine, EngineConfig, ticdc_zone
from ticdc_sim.generator.sql.locks import DEADLOCK, LOCK_WAIT_TIMEOUT, Blocked, victim
from ticdc_sim.generator.sql.script import RawStatement, parse_raw, split_script
from ticdc_sim.generator.sql.session import Session
from ticdc_sim.generator.sql.txn import Transaction
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mysql import MySQLType
from ticdc_sim.model.tso import compose_ts, physical_ms
from ticdc_sim.sinks import Confirmed, Sink

_LOG = logging.getLogger("ticdc_sim.service")


# TiCDC's changefeed ids and namespaces (tiflow cdc/model/changefeed.go changeFeedIDRe)
NAME = r"^[a-zA-Z0-9]+(-[a-zA-Z0-9]+)*$"
NAME_MAX = 128
_NAME = re.compile(NAME)


def checked_name(what: str, value: str) -> str:
    """`value` if TiCDC takes it as a changefeed id or namespace (`what`), else TiCDC's
    error: `invalid changefeed_id: ...`, `invalid namespace: ...`."""
    if len(value) > NAME_MAX or not _NAME.fullmatch(value):
        raise InvalidParam(f"invalid {what}: {value}")
    return value


class Conflict(SimError):
    """A request at odds with the resource's state (409), with TiCDC's error code where
    TiCDC has one."""

    def __init__(self, message: str, error_code: str = "CDC:ErrChangeFeedAlreadyExists") -> None:
        super().__init__(message)
        self.error_code = error_code


class BadRequest(SimError):
    """A request the service cannot read (400)."""

    error_code = "SIM:InvalidRequest"


class MustWait(Exception):
    """A statement run `at_once` needs to wait (the engine has undone it): the caller runs
    it again where it may wait, on a thread."""


class BadSQL(SimError):
    """A script that cannot be read into statements, such as an unterminated quote (400)."""

    error_code = "SIM:SQLSyntax"


class TooLarge(SimError):
    """A request over one of the settings' limits (413)."""

    error_code = "SIM:TooLarge"


class InvalidParam(SimError):
    """A changefeed parameter TiCDC refuses (400), with TiCDC's error code."""

    def __init__(self, message: str, error_code: str = "CDC:ErrAPIInvalidParam") -> None:
        super().__init__(message)
        self.error_code = error_code


class StartTsBeforeGC(SimError):
    """A start-ts older than the history the cluster keeps (400)."""

    error_code = "CDC:ErrStartTsBeforeGC"


class SnapshotLost(SimError):
    """A changefeed's checkpoint older than the history the cluster keeps: it cannot go on."""

    error_code = SNAPSHOT_LOST
    retryable = False


class NotFound(SimError):
    """No such cluster (404)."""


class ChangefeedNotFound(NotFound):
    """No such changefeed (404), said as TiCDC says it: `changefeed not exists, ns/id`."""

    def __init__(self, namespace: str, feed_id: str) -> None:
        super().__init__(f"changefeed not exists, {namespace}/{feed_id}")


# -- the heap -----------------------------------------------------------------------------------


class Heap:
    """The heap kept out of the collector's way. A service keeps what clusters hold (rows,
    the records changefeeds sent) for hours, and CPython's full collection walks every live
    object: a pause that grows with the heap and makes the latency's tail (bench/service.py
    over HTTP: p99 440-520 ms without). So every `SETTLE_S`, after a statement, the young
    generations are collected and what survives is frozen (`gc.freeze`), out of later
    collections' walk: a full collection walks at most that long's survivors (once a
    second, those were pauses of 50 ms, a tenth of the requests of that second). Removing a
    cluster or a changefeed unfreezes it all, so its cycles can be reclaimed."""

    SETTLE_S = 0.2

    def __init__(self) -> None:
        self.settle_at = time.monotonic() + self.SETTLE_S

    def settle(self) -> None:
        if time.monotonic() >= self.settle_at:
            self.settle_at = time.monotonic() + self.SETTLE_S
            gc.collect(1)
            gc.freeze()

    @staticmethod
    def release() -> None:
        """What was frozen may hold garbage now: let the next full collection see it."""
        gc.unfreeze()


HEAP = Heap()

# `Cluster.at_once`: what may run on the service's event loop (which serves every client
# meanwhile), and for how long a cluster whose work held it up for over SLOW_S runs on threads
AT_ONCE_CHARS = 64 << 10  # of SQL
LOOP_BUDGET_S = 0.05  # what a script runs on the loop before the rest goes to a thread
SLOW_S = 0.25
COOL_S = 60.0


# -- sessions -----------------------------------------------------------------------------------


class SessionState:
    """One client's session on the cluster: its `Session` (generator/sql/session.py: its
    settings, database, transaction, warnings), handed to the cluster's engine with each of
    its statements, and what the service keeps beside it."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.last_warnings: list[WarningEntry] = []  # SHOW WARNINGS
        self.waiting_for: Any = None  # the transaction whose lock it waits for
        self.pending: list[Change] = []  # committed, not yet replicated
        self.sent: dict[str, int] = {}  # records each changefeed sent for it

    def bind(self, engine: Engine) -> None:
        """The engine runs the next statement for this session (the caller holds the lock)."""
        engine.session = self.session
        if engine.catalog.current_schema != self.session.database:
            engine.catalog.current_schema = self.session.database
            engine.plans.clear()  # plans hold the current database's tables

    def unbind(self, engine: Engine) -> None:
        self.session.database = engine.catalog.current_schema  # USE, DROP DATABASE

    @property
    def connection_id(self) -> int:
        return self.session.connection_id

    @property
    def user(self) -> str:
        return self.session.user

    @property
    def found_rows(self) -> bool:
        return self.session.found_rows

    @found_rows.setter
    def found_rows(self, value: bool) -> None:
        self.session.found_rows = value

    @property
    def database(self) -> str | None:
        return self.session.database

    @database.setter
    def database(self, value: str | None) -> None:
        self.session.database = value

    @property
    def warnings(self) -> Warnings:
        return self.session.warnings

    @property
    def txn(self) -> Transaction | None:
        return self.session.txn


# connection ids, one sequence for the service's sessions, MySQL connections and HTTP
# requests alike (CONNECTION_ID() is the id the MySQL handshake gave)
next_connection_id = itertools.count(1).__next__


# -- changefeeds: feedlog.py and feed.py ------------------------------------------------------


def update_refused() -> Conflict:
    """TiCDC's answer to an update of a changefeed that is not stopped."""
    return Conflict(
        "changefeed update error: can only update changefeed config when it is stopped",
        "CDC:ErrChangefeedUpdateRefused",
    )


# -- clusters ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one statement did."""

    statement: str
    line: int
    column: int
    affected_rows: int = 0
    insert_id: int = 0  # the OK packet's: the statement's first generated id, else last given
    commit_ts: int | None = None
    columns: list[str] | None = None  # a result set
    types: list[MySQLType | None] | None = None  # its columns' types, where known
    rows: list[tuple[Any, ...]] | None = None
    error: SQLError | None = None


@dataclass
class Committed:
    commit_ts: int
    rows: int = 0
    ddl: list[str] = field(default_factory=list)


@dataclass
class Execution:
    outcomes: list[Outcome]
    committed: list[Committed]
    messages: dict[str, int]  # per changefeed: records this request sent
    warnings: list[str]

    @property
    def failed(self) -> bool:
        return any(o.error is not None for o in self.outcomes)


class Script:
    """A request's script on its cluster, in a session of its own: statements in order up to
    the first error, or until `time_limit_s` has passed (then the next statement fails with
    error 3024, as MAX_EXECUTION_TIME does). A transaction left open at the end is rolled
    back. `run` may stop short after a budget (the service's event loop gives a script
    `LOOP_BUDGET_S`) and a later `run` goes on from there, on another thread."""

    def __init__(
        self,
        cluster: Cluster,
        text: str,
        source: str = "request.sql",
        max_statements: int = 0,
        time_limit_s: float = 0.0,
    ) -> None:
        self.cluster, self.text, self.source = cluster, text, source
        self.max_statements, self.time_limit_s = max_statements, time_limit_s
        self.statements: list[RawStatement] | None = None  # split by the first `run`
        self.deadline: float | None = None
        self.session = cluster.session()
        self.outcomes: list[Outcome] = []
        self.events: list[Change] = []
        self.done = False

    def run(self, budget_s: float | None = None) -> bool:
        """The statements not run yet, under the cluster's lock, replicated at the end as
        the CLI replays a script (the same records, byte for byte); with `budget_s`,
        stopping at the first statement boundary after it has passed. Whether the script
        is done. A stop short, like a wait for a row lock, lets other sessions in: what
        committed before goes to the changefeeds first, so commit order holds."""
        if self.statements is None:
            self.statements = self._split()
            if self.time_limit_s:
                self.deadline = time.monotonic() + self.time_limit_s
        cluster, session = self.cluster, self.session
        stop_at = None if budget_s is None else time.monotonic() + budget_s
        with cluster.free:
            if not self.outcomes:
                session.sent = dict.fromkeys(cluster.feeds, 0)
            stopped = False
            try:
                for stmt in self.statements[len(self.outcomes) :]:
                    now = time.monotonic()
                    if stop_at is not None and now > stop_at and self.outcomes:
                        stopped = True  # (the first statement runs whatever the budget)
                        break
                    if self.deadline is not None and now > self.deadline:
                        self.outcomes.append(_timed_out(stmt, self.time_limit_s))
                        break
                    try:
                        outcome, committed = cluster.run(session, stmt, replicate=False)
                    except MustWait:  # undone: it runs again, first of the rest
                        stopped = True
                        break
                    self.outcomes.append(outcome)
                    self.events += committed
                    if outcome.error is not None:
                        break
            finally:
                if not stopped:
                    cluster.end(session)
                    self.done = True
                cluster.flush(session)
        return self.done

    def _split(self) -> list[RawStatement]:
        try:
            statements = list(split_script(self.text.splitlines(keepends=True), self.source))
        except SQLError as e:  # the script cannot be split: nothing of it runs
            raise BadSQL(f"{e} (no statement ran)") from None
        if self.max_statements and len(statements) > self.max_statements:
            raise TooLarge(
                f"{len(statements)} statements in one request; the limit is"
                f" {self.max_statements} (TICDC_SIM_MAX_STATEMENTS)"
            )
        return statements

    def result(self) -> Execution:
        warnings = [str(w) for w in self.session.warnings]
        return Execution(self.outcomes, _committed(self.events), self.session.sent, warnings)


class Cluster:
    def __init__(
        self,
        cluster_id: str,
        seed: int,
        lock_wait_s: float,
        max_txn_rows: int,
        history_events: int = 1_000_000,
        history_bytes: int = 64 << 20,
        max_feeds: int = 64,
        config: EngineConfig | None = None,
        settle_heap: bool = True,
        registry_limits: Limits | None = None,
        retry: Retry = DEFAULT_RETRY,
    ):
        """`config`: the upstream's time zone, start ts and default database (`seed` wins
        over its seed); `settle_heap`: freeze what survives collections (`Heap`), for a
        service that runs for hours, not a library's host process; `registry_limits`: what
        its schema registry may hold; `retry`: how its changefeeds' failing sinks are
        retried."""
        self.settle_heap = settle_heap
        self.id = cluster_id
        self.max_feeds = max_feeds
        self.seed = seed
        self.created = time.time()
        self.engine = Engine(replace(config or EngineConfig(), seed=seed))
        self.engine.count_affected = True
        self.engine.max_txn_rows = max_txn_rows
        self.feeds: dict[str, Feed] = {}
        # the Confluent registry the service serves; avro changefeeds without a URL use it
        self.registry = MemoryRegistry(registry_limits)
        self.closed = False
        self.stopping = False  # the service is stopping: statements are refused (1053)
        self.lock = threading.RLock()
        self.free = threading.Condition(self.lock)  # notified when a transaction ended
        self._waiters: set[SessionState] = set()  # sessions waiting for a row lock
        self.lock_wait_s = lock_wait_s
        # what committed, for changefeeds created with a start-ts in the past and for those
        # resuming from their checkpoint; what falls out of it moves the GC safepoint, before
        # which TiCDC refuses a start-ts and fails a changefeed
        self.history: deque[Change] = deque()
        self._sizes: deque[tuple[int, int]] = deque()  # each transaction's: events, bytes
        self.history_events = history_events
        self.history_bytes = history_bytes
        self.history_size = 0  # bytes the history holds now
        self.gc_safepoint = 0
        self.retry = retry
        self.statements = 0
        self.errors = 0
        self.transactions = 0
        self.events = 0
        # row lock waits (InnoDB's Innodb_row_lock_waits), deadlocks and lock wait timeouts
        self.lock_waits = 0
        self.deadlocks = 0
        self.lock_wait_timeouts = 0
        self.slow_until = 0.0  # monotonic: until when nothing runs `at_once` (it was slow)
        self._on_loop = False  # inside an `at_once` block that said yes

    def session(self, user: str = "root@127.0.0.1", connection_id: int = 0) -> SessionState:
        """A new session; `connection_id`: its MySQL connection's (an HTTP request's is new)."""
        config = self.engine.config
        session = Session.of(
            config.time_zone,
            config.database,
            user=user,
            connection_id=connection_id or next_connection_id(),
        )
        return SessionState(session)

    # -- running statements ----------------------------------------------------------------

    @contextlib.contextmanager
    def at_once(self, size: int, session: SessionState | None = None) -> Iterator[bool]:
        """Whether statements of `size` characters (a script, or `session`'s next one) may
        run now on the caller's thread: the service's event loop, saving the hop to a worker
        thread and the GIL's handoffs back, a fifth of a 100-row script's request with 32
        clients (bench/service.py). True, with the cluster's lock held until the block
        ends, only when nothing they do can wait:
          * the lock is free now;
          * no other session's transaction has read, written or locked anything
            (`Upstream.busy`) and no session waits (a request queued for a row goes
            before a new one, even once the row is free): no lock to wait for, and none
            can be taken while the lock is held;
          * every changefeed sends to memory (`Feed.in_memory`): no broker, disk or peer;
        and when they cannot hold the loop up long: at most `AT_ONCE_CHARS`, and nothing
        run so took over `SLOW_S` in the last `COOL_S` (a heavy statement, a scan of a big
        table: the cluster's work goes to threads for a while). A script run so stops after
        `LOOP_BUDGET_S` (`Script.run`), the rest going to a thread. Should a statement run
        so need to wait all the same, it is undone and `MustWait` raised (a script stops
        before it): the caller runs it again on a thread."""
        if not self.lock.acquire(blocking=False):
            yield False
            return
        started = time.monotonic()
        try:
            self._on_loop = self.may_run_at_once(size, session)
            yield self._on_loop
        finally:
            self._on_loop = False
            self.lock.release()
            ended = time.monotonic()
            if ended - started > SLOW_S:
                self.slow_until = ended + COOL_S

    def may_run_at_once(self, size: int, session: SessionState | None = None) -> bool:
        """`at_once`'s conditions but the lock's. Under the lock, the answer; without it,
        a hint that reads only snapshots (`Upstream.busy`, the changefeeds): the service
        asks it before a statement waits for its turn on the loop (service/turns.py), so
        that one that could not run there goes to its thread at once."""
        own = session.txn if session is not None else None
        return (
            size <= AT_ONCE_CHARS
            and time.monotonic() >= self.slow_until
            and not self._waiters
            and self.engine.upstream.busy(besides=own) is None
            and all(feed.in_memory for feed in list(self.feeds.values()))
        )

    def execute(
        self,
        text: str,
        source: str = "request.sql",
        max_statements: int = 0,
        time_limit_s: float = 0.0,
    ) -> Execution:
        """A script in a session of its own, run to its end (`Script`)."""
        script = Script(self, text, source, max_statements, time_limit_s)
        script.run()
        return script.result()

    def run(
        self, session: SessionState, stmt: RawStatement, replicate: bool = True
    ) -> tuple[Outcome, list[Change]]:
        """One statement of a session, waiting for the row locks it needs; what it
        committed has gone to the changefeeds (or, with `replicate` False, waits in the
        session for the caller, holding the lock, to `flush` it)."""
        line, column = (stmt.location.line, stmt.location.col) if stmt.location else (1, 1)
        outcome = Outcome(stmt.text.strip(), line, column)
        with self.free:
            try:
                events = self._until_done(session, stmt, outcome)
            except SQLError as e:
                outcome.error = e.with_context(stmt.location, stmt.text)
                return outcome, []
            finally:
                session.waiting_for = None
                if session.txn is not None:
                    self.engine.upstream.locks.dequeue(session.txn)  # it has what it waited for
            if events:
                outcome.commit_ts = events[-1].commit_ts
                self.transactions += len({e.commit_ts for e in events})
                session.pending += events
                if replicate:
                    self.flush(session)
        if self.settle_heap:
            HEAP.settle()
        return outcome, events

    def _until_done(
        self, session: SessionState, stmt: RawStatement, outcome: Outcome
    ) -> list[Change]:
        """The statement run, and run again each time the lock it waited for is free."""
        deadline = time.monotonic() + self.lock_wait_s
        waited_for = None  # a lock is waited for once, however often its waiter wakes
        while True:
            self._check_open()
            try:
                return self._step(session, stmt, outcome)
            except Blocked as blocked:
                if self._on_loop:  # `at_once` missed a way to wait: never on the loop
                    raise MustWait from None
                session.waiting_for = blocked.holder
                if blocked.key is not None and blocked.key != waited_for:
                    self.lock_waits += 1
                    waited_for = blocked.key
                self._wait(session, blocked, deadline)

    def _wait(self, session: SessionState, blocked: Blocked, deadline: float) -> None:
        """The session waits for the transaction in its way to end (the caller then runs
        its statement again): error 1205 at `deadline`, 1213 when its transaction is a
        deadlock's victim, and 1053 when the service stops meanwhile."""
        self.flush(session)  # others commit while it waits: what it committed goes first
        upstream, txn = self.engine.upstream, session.txn
        if txn is not None:
            if blocked.key is not None:
                upstream.locks.enqueue(txn, blocked.key)
            cycle = cast("list[Transaction] | None", upstream.locks.wait(txn, blocked.holder))
            if cycle is not None:
                chosen = victim(cycle, {t: upstream.weight(t) for t in cycle})
                self.deadlocks += 1
                if chosen is txn:
                    self._abort(session)
                    raise SQLError(DEADLOCK[1], code=DEADLOCK[0])
                chosen.killed = True  # its session, waiting, rolls it back as it wakes
                self.free.notify_all()
        self._waiters.add(session)
        try:
            left = deadline - time.monotonic()
            if left <= 0:
                if txn is not None and txn.implicit:  # an autocommit statement: all of it
                    self._abort(session)
                self.lock_wait_timeouts += 1
                raise SQLError(LOCK_WAIT_TIMEOUT[1], code=LOCK_WAIT_TIMEOUT[0])
            self.free.wait(left)
            if txn is not None and txn.killed:
                self._abort(session)
                raise SQLError(DEADLOCK[1], code=DEADLOCK[0])
        finally:
            self._waiters.discard(session)
            if txn is not None:
                upstream.locks.stop_waiting(txn)

    def flush(self, session: SessionState) -> None:
        """What the session committed and has not replicated, to the changefeeds."""
        if session.pending:
            pending, session.pending = session.pending, []
            for feed_id, count in self._replicate(pending).items():
                session.sent[feed_id] = session.sent.get(feed_id, 0) + count

    def waiting(self, session: SessionState) -> bool:
        """Whether the session is waiting for another transaction's lock (tests ask)."""
        return session.waiting_for is not None

    def _step(self, session: SessionState, stmt: RawStatement, outcome: Outcome) -> list[Change]:
        """The statement on the engine, in the session's state; what it committed."""
        engine = self.engine
        session.bind(engine)
        before = {w.kind: w.count for w in engine.warnings}
        ended = engine.upstream.ended
        try:
            if not self._answer(session, stmt, outcome):
                outcome.error = engine.step(stmt)  # an explicit transaction stays open
                outcome.affected_rows = engine.affected_rows
                outcome.insert_id = (
                    engine.last_id if engine.ids_this_statement else engine.insert_id
                )
            events, engine.upstream.outbox = engine.upstream.outbox, []
            self.statements += 1
            self.errors += outcome.error is not None
            self.events += len(events)
            return events
        finally:
            if not show.is_diagnostics(stmt.text):  # SHOW WARNINGS keeps what it shows
                session.last_warnings = [
                    w for w in engine.warnings if before.get(w.kind) != w.count
                ]
            session.unbind(engine)
            if engine.upstream.ended != ended:
                self._wake()

    def _answer(self, session: SessionState, stmt: RawStatement, outcome: Outcome) -> bool:
        """A statement that answers with a result set (SHOW, DESCRIBE, SELECT), answered
        into `outcome`; False for the rest."""
        self.engine.location = stmt.location  # where what it warns of happened
        try:
            stmt = self.engine.as_client_sent(stmt)  # as the engine reads what it runs
            result = show.answer(self.engine, stmt.text, session.last_warnings)
            if result is None:
                query = _select_query(stmt)
                if query is None:
                    return False
                result = self.engine.query(query, stmt.text)
        except SQLError as e:
            outcome.error = e.with_context(stmt.location, stmt.text)
            return True
        except RecursionError:  # as the engine says it of a statement it runs
            error = SQLError("the statement is nested too deeply", code=1105)
            outcome.error = error.with_context(stmt.location, stmt.text)
            return True
        outcome.columns, outcome.types = result.names, result.types
        outcome.rows = [tuple(r) for r in result.rows]
        return True

    def end(self, session: SessionState) -> None:
        """A session goes: its open transaction is rolled back. One that wrote nothing
        holds nothing to undo, so a session that goes never waits for another."""
        with self.free:
            if session.txn is not None:
                self._abort(session)

    def _abort(self, session: SessionState) -> None:
        """The session's transaction is rolled back; waiters for its locks try again."""
        session.bind(self.engine)
        self.engine.abort()
        session.unbind(self.engine)
        self._wake()

    def _wake(self) -> None:
        """A transaction ended: every waiting session tries its statement again (and is
        not waiting until it is blocked again)."""
        for waiter in self._waiters:
            waiter.waiting_for = None
        self.free.notify_all()

    def _check_open(self) -> None:
        """A statement of a cluster removed while its client was still connected, or of a
        service that is stopping, is refused (TiDB refuses statements once it shuts down)."""
        if self.closed:
            raise SQLError(f"cluster {self.id!r} has been removed", code=1105)
        if self.stopping:
            raise SQLError("Server shutdown in progress", code=1053)

    def _replicate(self, events: list[Change]) -> dict[str, int]:
        """Committed events to the history and every changefeed; the records each sent."""
        safepoint = self.gc_safepoint
        self._keep(events)
        if self.gc_safepoint != safepoint:
            self._fail_behind()
        sent = {}
        for feed_id, feed in list(self.feeds.items()):
            before = feed.log.total
            # a failing feed is stopped with its error; the transaction committed upstream
            with contextlib.suppress(SimError):
                feed.push(events)
            sent[feed_id] = feed.log.total - before
        return sent

    def _keep(self, events: list[Change]) -> None:
        """The events into the history, the oldest transactions out until both bounds
        hold: a transaction goes whole (the safepoint is its commit ts, and what is kept of
        a transaction at the safepoint is never read)."""
        sizes = [(len(t), transaction_bytes(t)) for t in _transactions(events)]
        self.history.extend(events)
        self._sizes.extend(sizes)
        self.history_size += sum(size for _, size in sizes)
        history, kept, popleft = self.history, self._sizes, self.history.popleft
        while history and (
            len(history) > self.history_events or self.history_size > self.history_bytes
        ):
            count, size = kept.popleft()
            for _ in range(count - 1):
                popleft()
            self.gc_safepoint = popleft().commit_ts
            self.history_size -= size

    def changes_since(self, ts: int) -> list[Change]:
        """What committed after `ts`, from the history; SnapshotLost when the history no
        longer reaches back to it (TiCDC's changefeed behind the GC safepoint)."""
        with self.lock:
            if ts < self.gc_safepoint:
                raise self._snapshot_lost(ts)
            return [e for e in self.history if e.commit_ts > ts]

    def _snapshot_lost(self, ts: int) -> SnapshotLost:
        return SnapshotLost(
            "fail to create or maintain changefeed due to snapshot loss caused by GC."
            f" checkpoint-ts {ts} is earlier than or equal to GC safepoint at"
            f" {self.gc_safepoint} (TICDC_SIM_HISTORY_BYTES and TICDC_SIM_HISTORY_EVENTS"
            " bound what is kept)"
        )

    def _fail_behind(self) -> None:
        """Changefeeds waiting (stopped, failed, retrying) whose point to go on from the
        history no longer reaches fail now, as TiCDC fails one the GC safepoint passes, not
        at their next restart or resume."""
        for feed in list(self.feeds.values()):
            point = feed.waiting_at()
            if point is not None and point < self.gc_safepoint:
                feed.fail(self._snapshot_lost(point))

    # -- changefeeds -----------------------------------------------------------------------

    def add_feed(
        self,
        spec: FeedSpec,
        open_sink_: Callable[[Changefeed], Sink],
        retain: Retain,
        flush_each: bool = True,
        announce: bool = True,
    ) -> Feed:
        """A new changefeed; one with a start-ts in the past first replicates what has
        committed since (tiflow `cdc/api/v2/api_helpers.go` verifies the start-ts so)."""
        with self.lock:
            if spec.id in self.feeds:
                raise Conflict(f"changefeed already exists, {spec.id}")
            if len(self.feeds) >= self.max_feeds:
                raise Conflict(
                    f"cluster {self.id!r} holds {len(self.feeds)} changefeeds, the most it may"
                    " (TICDC_SIM_MAX_CHANGEFEEDS); remove one first",
                    "SIM:ErrTooManyChangefeeds",
                )
            self._check_range(spec)
            feed = self._new_feed(
                spec, open_sink_, retain, flush_each=flush_each, announce=announce
            )
            past = self.changes_since(spec.start_ts)
            if past:
                try:
                    feed.push(past)
                except SimError:
                    feed.close()
                    raise
            self.feeds[spec.id] = feed
            return feed

    def _new_feed(
        self,
        spec: FeedSpec,
        open_sink_: Callable[[Changefeed], Sink],
        retain: Retain,
        **options: Any,
    ) -> Feed:
        """A changefeed of this cluster: its time zone, registry, history and retries."""
        return Feed(
            self._zoned(spec),
            open_sink_,
            retain,
            registry=self.registry,
            history=self.changes_since,
            retry=self.retry,
            **options,
        )

    def _zoned(self, spec: FeedSpec) -> FeedSpec:
        """The spec with the cluster's time zone as TiCDC's --tz (simple names it)."""
        zone = ticdc_zone(self.engine.config.time_zone)
        return replace(spec, overrides={"time_zone": zone, **spec.overrides})

    def _check_range(self, spec: FeedSpec) -> None:
        clock = self.engine.catalog.clock
        now = clock.last or compose_ts(clock.physical, 0)  # PD's time, before any TSO
        if not spec.start_ts:
            spec.start_ts = now
        elif spec.start_ts > now:
            raise InvalidParam(f"invalid start-ts {spec.start_ts}, larger than current tso {now}")
        elif spec.start_ts <= self.gc_safepoint:
            raise self._before_gc(spec.start_ts)
        if spec.target_ts and spec.target_ts <= spec.start_ts:
            raise InvalidParam(
                f"fail to create changefeed because target-ts {spec.target_ts} is earlier"
                f" than start-ts {spec.start_ts}",
                "CDC:ErrTargetTsBeforeStartTs",
            )

    def replace_feed(
        self, spec: FeedSpec, open_sink_: Callable[[Changefeed], Sink], retain: Retain
    ) -> Feed:
        """A stopped changefeed rebuilt from a new spec: still stopped, with what it held
        back, its creation time and its checkpoint. A spec that cannot be built changes
        nothing. On the same directory the old sink writes on for the new changefeed (its
        files and offsets stay, as a TiCDC changefeed updated to a new protocol writes on)."""
        with self.lock:
            old = self.feed(spec.id)
            if old.state not in HELD:  # resumed since the request looked
                raise update_refused()
            new, before = build_changefeed(spec).sink, old.changefeed.sink
            same_files = new.scheme in ("jsonl", "parquet") and (new.scheme, new.target) == (
                before.scheme,
                before.target,
            )
            kept = old.handed_over() if same_files else None
            feed = self._new_feed(spec, open_sink_, retain, since=old, kept=kept)
            feed.state = "stopped"
            self.feeds[spec.id] = feed
        if not same_files:
            old.close()
        return feed

    def resume_feed(self, feed_id: str) -> None:
        """Resume a stopped or failed changefeed (the cluster's lock first, then the feed's,
        as a commit takes them); refused, as TiCDC's API refuses it, when the history no
        longer reaches where it would go on from."""
        with self.lock:
            feed = self.feed(feed_id)
            point = feed.waiting_at()
            lost = feed.error_code == SNAPSHOT_LOST and feed.state == "failed"
            if lost or (point is not None and point < self.gc_safepoint):
                raise self._before_gc(feed.checkpoint_ts if point is None else point)
            feed.resume()

    def _before_gc(self, start_ts: int) -> StartTsBeforeGC:
        return StartTsBeforeGC(
            f"fail to create or maintain changefeed because start-ts {start_ts} is earlier"
            f" than or equal to GC safepoint at {self.gc_safepoint}"
            " (TICDC_SIM_HISTORY_BYTES and TICDC_SIM_HISTORY_EVENTS bound what is kept)"
        )

    def tick(self) -> None:
        """The supervisor's look at each changefeed (`Feed.tick`). The sinks restarts go
        into are opened first, at once and without the cluster's lock (`Feed.reopen`): gone
        brokers take their timeout to say so, for each changefeed at the same time."""
        feeds = list(self.feeds.values())
        due = [feed for feed in feeds if feed.restart_due]
        opened: dict[int, Sink | None] = {}
        if due:
            with ThreadPoolExecutor(len(due), thread_name_prefix="reopen") as pool:
                opened = dict(zip(map(id, due), pool.map(Feed.reopen, due), strict=True))
        for feed in feeds:
            fresh = opened.get(id(feed))
            with self.lock:
                if self.feeds.get(feed.spec.id) is feed:  # not removed meanwhile
                    feed.tick(fresh)
                elif isinstance(fresh, Confirmed):
                    fresh.discard()

    def feed(self, feed_id: str) -> Feed:
        found = self.feeds.get(feed_id)
        if found is None:
            raise ChangefeedNotFound(self.id, feed_id)
        return found

    def remove_feed(self, feed_id: str) -> list[str]:
        """The changefeed closed and gone; what it sent where, and what remains on disk."""
        with self.lock:
            feed = self.feed(feed_id)
            del self.feeds[feed_id]
        try:
            return feed.close()
        finally:
            Heap.release()

    def stop(self) -> None:
        """The service is stopping: a script stops before its next statement, a session
        waiting for a lock stops waiting, and both answer 1053; what runs now finishes."""
        self.stopping = True  # seen by a script between statements, without the lock
        with self.free:
            self.free.notify_all()

    def close(self) -> list[str]:
        """Every changefeed goes, its sink flushed and closed; what went where. What the
        heap froze is let go: a cluster frozen while it ran (a `Simulator`'s too) is freed."""
        with self.free:
            self.closed = True
            feeds, self.feeds = list(self.feeds.values()), {}
            self.free.notify_all()  # sessions waiting for a lock of a removed cluster
        try:
            return close_all((f"changefeed {self.id}/{feed.spec.id}", feed.close) for feed in feeds)
        finally:
            Heap.release()


class CloseFailed(SimError):
    """Parts that failed to close, together; `said`: what the others flushed where."""

    def __init__(self, errors: list[str], said: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.said = said


def close_all(
    parts: Iterable[tuple[str, Callable[[], list[str]]]], label: bool = True
) -> list[str]:
    """Close every part, all of them even when one fails, at once: a Kafka sink's close
    waits up to 30 s for its broker, and a dead broker behind each of several changefeeds
    must not make a shutdown wait that many times over. What each says it flushed where,
    `label`led with its name, in the order of `parts` (CloseFailed if any failed)."""
    parts = list(parts)
    if len(parts) > 1:
        with ThreadPoolExecutor(len(parts), thread_name_prefix="close") as pool:
            closed = list(pool.map(_closed, parts))
    else:
        closed = [_closed(part) for part in parts]
    said: list[str] = []
    errors: list[str] = []
    for (name, _), (lines, error) in zip(parts, closed, strict=True):
        said += [f"{name}: {line}" if label else line for line in lines]
        if error is not None:
            errors.append(f"{name}: {error}")
    if errors:
        raise CloseFailed(errors, said)
    return said


def _closed(part: tuple[str, Callable[[], list[str]]]) -> tuple[list[str], SimError | None]:
    """What one part said it flushed where (unlabelled: a CloseFailed's own lines are
    labelled already), and its error."""
    try:
        return part[1](), None
    except CloseFailed as e:
        return e.said, e
    except SimError as e:
        return [], e


# What one event of the history holds beyond its values: the named tuple, its images' tuples
# and the deque slots (measured with tracemalloc on CPython 3.11: 337 B for an insert of three
# columns, 65 B of which its string and 84 B its three ints); a DDL's table infos are counted
# as a fixed kilobyte (they are shared with the catalog while the table lives).
_EVENT_BYTES = 120
_IMAGE_BYTES = 40
_DDL_BYTES = 1024


def held_bytes(event: Change) -> int:
    """About what an event of the history holds in memory (values shared by both images,
    and None's one shared object, counted each time: the bound errs on the safe side)."""
    return transaction_bytes([event])


_COMMIT_TS = attrgetter("commit_ts")  # of both kinds of event
_IMAGES = itemgetter(4, 5)  # a RowChangedEvent's columns and pre_columns

_TABLE = attrgetter("table")  # a RowChangedEvent's (consecutive ones are mostly the same)


def transaction_bytes(events: list[Change]) -> int:
    """`held_bytes` of events summed, the rows' in C-level passes (this runs for every row
    committed), table by table: the values of fixed-size columns at their most
    (`TableInfo.value_sizes`), the others one by one (sizing each value cost 6% of a
    100-row script's request, bench/service.py)."""
    rows = cast("list[RowChangedEvent]", events)
    ddl = 0
    if countOf(map(type, events), RowChangedEvent) < len(events):
        rows = [e for e in events if isinstance(e, RowChangedEvent)]
        ddl = sum(
            _DDL_BYTES + len(e.query) + len(e.source) for e in events if isinstance(e, DDLEvent)
        )
    size = ddl + _EVENT_BYTES * len(rows)
    for _, same in groupby(rows, _TABLE):
        table_rows = list(same)
        fixed, varying = table_rows[0].table.value_sizes
        images = list(filter(None, chain.from_iterable(map(_IMAGES, table_rows))))
        size += (_IMAGE_BYTES + fixed) * len(images) + 8 * sum(map(len, images))
        if len(varying) == 1:
            size += sum(map(sys.getsizeof, map(itemgetter(*varying), images)))
        elif varying:
            values = chain.from_iterable(map(itemgetter(*varying), images))
            size += sum(map(sys.getsizeof, values))
    return size


def _transactions(events: list[Change]) -> Iterator[list[Change]]:
    """The events by transaction: they come in commit order, each transaction's together
    (a DDL commits alone)."""
    for _, transaction in groupby(events, _COMMIT_TS):
        yield list(transaction)


def _timed_out(stmt: RawStatement, limit: float) -> Outcome:
    line, column = (stmt.location.line, stmt.location.col) if stmt.location else (1, 1)
    error = SQLError(
        f"Query execution was interrupted, the request ran over {limit:g} s"
        " (TICDC_SIM_REQUEST_TIME_S)",
        code=3024,
    )
    return Outcome(
        stmt.text.strip(), line, column, error=error.with_context(stmt.location, stmt.text)
    )


def _select_query(stmt: RawStatement) -> exp.Select | None:
    """A SELECT that answers with a result set (not INTO, not a side effect of its own)."""
    words = stmt.text.lstrip().lstrip("(").lstrip()[:6].upper()
    if words != "SELECT" and words[:4] != "WITH":
        return None
    try:
        parsed = parse_raw(stmt)
    except (SQLError, RecursionError):
        return None  # the engine reports it, located
    node = None if parsed is None else parsed.expression
    if isinstance(node, exp.SetOperation):  # an answer of nothing would be a wrong one
        raise SQLError(
            f"{type(node).__name__.upper()} result sets are not simulated yet: query each"
            " SELECT on its own",
            code=1105,
        )
    if not isinstance(node, exp.Select) or node.args.get("into") is not None:
        return None
    return node


def _committed(events: list[Change]) -> list[Committed]:
    out = []
    for transaction in _transactions(events):
        done = Committed(transaction[0].commit_ts)
        done.rows = countOf(map(type, transaction), RowChangedEvent)
        if done.rows < len(transaction):
            done.ddl = [e.query for e in transaction if isinstance(e, DDLEvent)]
        out.append(done)
    return out


def commit_time(ts: int) -> str:
    """A TSO's physical time, as TiCDC's JSONTime prints it."""
    ms = physical_ms(ts)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}"
