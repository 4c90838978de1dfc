"""Interleaved sessions, run the same way on MariaDB and on ticdc-sim (test_oracle_sessions).

A schedule is a list of steps, each a statement of one session. `drive` sends them in order,
each session's statement on a thread of its own: a statement that waits for a row lock is
seen waiting (MariaDB's `Innodb_row_lock_current_waits` counts as many waits as statements
unanswered, read live where INNODB_TRX is a cache that polling keeps stale; the simulator's
`Cluster.waiting`), never guessed from time, and the schedule goes on with the next step of
another session. Once a step has run, every waiting session is let settle (done, or waiting
again) before the next is sent, so both sides see the same order of events. Each statement's
answer (rows, affected rows or error code) is recorded in the order the answers came.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pymysql

from ticdc_sim.cluster import Cluster, SessionState
from ticdc_sim.generator.sql.script import split_script

Answer = tuple[Any, ...]  # ("rows", rows) | ("affected", n) | ("error", code)
SETTLE_S = 10.0  # how long a statement may take to be answered or to wait, at most


@dataclass(frozen=True)
class Step:
    session: int
    sql: str


class _Worker:
    """One session's thread: runs what it is given, one statement at a time."""

    def __init__(self, run: Callable[[str], Answer]) -> None:
        self.run = run
        self.inbox: queue.Queue[str | None] = queue.Queue()
        self.answers: queue.Queue[Answer] = queue.Queue()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while (sql := self.inbox.get()) is not None:
            self.answers.put(self.run(sql))

    def stop(self) -> None:
        self.inbox.put(None)
        self.thread.join(SETTLE_S)


class Side:
    """Sessions on one database: `run_in(i)` answers a statement of session i;
    `all_waiting(sessions)` says whether each of those sessions' statements waits for a
    lock."""

    def __init__(self, sessions: int) -> None:
        self.workers = [_Worker(self.run_in(i)) for i in range(sessions)]
        self.waits = 0  # times a statement was seen waiting once a step had run

    def run_in(self, session: int) -> Callable[[str], Answer]:
        raise NotImplementedError

    def all_waiting(self, sessions: list[int]) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()


class MariaDBSide(Side):
    def __init__(self, unix_socket: str, database: str, sessions: int) -> None:
        def connect() -> Any:
            return pymysql.connect(
                unix_socket=unix_socket, user="root", database=database, autocommit=True
            )

        self.conns = [connect() for _ in range(sessions)]
        self.control = connect()
        for conn in self.conns:
            with conn.cursor() as cur:
                cur.execute("SET SESSION innodb_lock_wait_timeout = 5")
        super().__init__(sessions)

    def run_in(self, session: int) -> Callable[[str], Answer]:
        def run(sql: str) -> Answer:
            try:
                with self.conns[session].cursor() as cur:
                    cur.execute(sql)
                    if cur.description is not None:
                        return ("rows", [tuple(r) for r in cur.fetchall()])
                    return ("affected", cur.rowcount)
            except pymysql.MySQLError as e:
                return ("error", e.args[0])

        return run

    def all_waiting(self, sessions: list[int]) -> bool:
        with self.control.cursor() as cur:
            cur.execute("SHOW STATUS LIKE 'Innodb_row_lock_current_waits'")
            return int(cur.fetchone()[1]) == len(sessions)

    def close(self) -> None:
        super().close()
        for conn in [*self.conns, self.control]:
            conn.close()


class SimSide(Side):
    def __init__(self, cluster: Cluster, sessions: int) -> None:
        self.cluster = cluster
        self.sessions: list[SessionState] = [cluster.session() for _ in range(sessions)]
        super().__init__(sessions)

    def run_in(self, session: int) -> Callable[[str], Answer]:
        def run(sql: str) -> Answer:
            (stmt,) = split_script([sql], f"session{session}.sql")
            outcome, _ = self.cluster.run(self.sessions[session], stmt)
            if outcome.error is not None:
                return ("error", outcome.error.code)
            if outcome.rows is not None:
                return ("rows", [tuple(r) for r in outcome.rows])
            return ("affected", outcome.affected_rows)

        return run

    def all_waiting(self, sessions: list[int]) -> bool:
        return all(self.cluster.waiting(self.sessions[i]) for i in sessions)

    def close(self) -> None:
        super().close()
        for session in self.sessions:
            self.cluster.end(session)


def drive(side: Side, schedule: Sequence[Step]) -> list[tuple[int, str, Answer]]:
    """Run `schedule` on `side`: each step once its session is free, in schedule order
    otherwise; the answers, in the order they came."""
    pending = list(schedule)
    busy: dict[int, str] = {}
    answers: list[tuple[int, str, Answer]] = []

    def collect(session: int) -> bool:
        try:
            answer = side.workers[session].answers.get_nowait()
        except queue.Empty:
            return False
        answers.append((session, busy.pop(session), answer))
        return True

    def settle() -> None:
        """Every busy session answered or seen waiting (for its lock, again)."""
        deadline = time.monotonic() + SETTLE_S
        while busy:
            for session in sorted(busy):
                collect(session)
            if busy and side.all_waiting(sorted(busy)):
                side.waits += len(busy)
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"sessions {sorted(busy)} neither answer nor wait")
            time.sleep(0.002)

    while pending or busy:
        step = next((s for s in pending if s.session not in busy), None)
        if step is None:  # everyone left is waiting: a lock wait timeout ends one
            before = len(answers)
            deadline = time.monotonic() + SETTLE_S
            while len(answers) == before:
                if time.monotonic() > deadline:
                    raise AssertionError(f"sessions {sorted(busy)} wait for ever")
                for session in sorted(busy):
                    collect(session)
                time.sleep(0.002)
            settle()
            continue
        pending.remove(step)
        busy[step.session] = step.sql
        side.workers[step.session].inbox.put(step.sql)
        settle()
    return answers


TABLE = "CREATE TABLE t (id INT PRIMARY KEY, u INT UNIQUE, v INT)"
ROWS = "INSERT INTO t VALUES " + ", ".join(f"({i}, {10 * i}, 0)" for i in range(1, 7))
READ = "SELECT id, u, v FROM t ORDER BY id"


def schedule(seed: int) -> list[Step]:
    """A random interleaving of 2-4 sessions' transactions on rows of `t` by key.

    Only what InnoDB and TiDB lock alike: point statements on rows that always exist (ids
    1..6 by primary or unique key), inserts of keys of the session's own (and of one key
    two sessions race for), deletes of a row the transaction inserted. No locking read of
    a missing key or of a range, which InnoDB would turn into a gap lock (locks.py)."""
    rng = random.Random(f"interleave:{seed}")
    sessions = rng.randint(2, 4)
    programs: list[list[str]] = []
    for s in range(sessions):
        program: list[str] = []
        if rng.random() < 0.25:
            program.append("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        own = iter(range(100 + 10 * s, 110 + 10 * s))
        for _ in range(rng.randint(1, 2)):
            explicit = rng.random() < 0.8
            if explicit:
                program.append("BEGIN")
            inserted: list[int] = []
            for _ in range(rng.randint(2, 4) if explicit else 1):
                program.append(_operation(rng, s, own, inserted))
            if explicit:
                program.append("COMMIT" if rng.random() < 0.75 else "ROLLBACK")
        programs.append(program)
    steps: list[Step] = []
    cursors = [0] * sessions
    while any(c < len(p) for c, p in zip(cursors, programs, strict=True)):
        s = rng.choice([i for i in range(sessions) if cursors[i] < len(programs[i])])
        steps.append(Step(s, programs[s][cursors[s]]))
        cursors[s] += 1
    return steps


def _operation(rng: random.Random, session: int, own: Any, inserted: list[int]) -> str:
    i, k = rng.randint(1, 6), rng.randint(1, 9)
    choices = [
        READ,
        f"SELECT v FROM t WHERE id = {i}",
        f"SELECT v FROM t WHERE id = {i} FOR UPDATE",
        f"SELECT v FROM t WHERE u = {10 * i} LOCK IN SHARE MODE",
        f"UPDATE t SET v = v + {k} WHERE id = {i}",
        f"UPDATE t SET v = v * 2 + {k} WHERE u = {10 * i}",
        "insert",
    ]
    if session < 2:
        choices.append(f"INSERT INTO t VALUES (50, 500, {k})")
    if inserted:
        choices.append("delete")
    choice = rng.choice(choices)
    if choice == "insert":
        key = next(own)
        inserted.append(key)
        return f"INSERT INTO t VALUES ({key}, {key * 10}, {k})"
    if choice == "delete":
        return f"DELETE FROM t WHERE id = {inserted.pop(rng.randrange(len(inserted)))}"
    return choice
