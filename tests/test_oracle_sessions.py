"""Concurrent sessions against MariaDB: random interleavings of 2-4 sessions' transactions
(tests/support_interleave.py) answer alike, statement by statement, on InnoDB's REPEATABLE
READ and on the simulator's pessimistic transactions (generator/sql/locks.py); the final
tables agree, and the simulator's changelog rebuilds them on a replica."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from support_interleave import READ, ROWS, TABLE, MariaDBSide, SimSide, Step, drive, schedule
from support_mariadb import MariaDB
from support_oracle import apply_changelog
from ticdc_sim.cluster import Cluster

SEEDS = range(40)
_databases = itertools.count()


@pytest.fixture
def database(mariadb_pair: tuple[MariaDB, MariaDB]) -> Iterator[tuple[MariaDB, str]]:
    """A fresh database holding `t` on the source server."""
    source, _ = mariadb_pair
    name = f"s{next(_databases)}"
    conn = source.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
        cur.execute(f"USE {name}")
        cur.execute(TABLE)
        cur.execute(ROWS)
    yield source, name
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE {name}")
    conn.close()


def on_mariadb(server: MariaDB, database: str, steps: list[Step]) -> tuple[list[Any], list[Any]]:
    sessions = 1 + max(s.session for s in steps)
    side = MariaDBSide(str(server.root / "sock"), database, sessions)
    try:
        answers = drive(side, steps)
        with side.control.cursor() as cur:
            cur.execute(f"USE {database}")
            cur.execute(READ)
            final = [tuple(r) for r in cur.fetchall()]
    finally:
        side.close()
    return answers, final


def on_sim(steps: list[Step]) -> tuple[list[Any], list[Any], Cluster, int]:
    cluster = Cluster("t", 7, lock_wait_s=5.0, max_txn_rows=10_000)
    setup = cluster.execute(f"{TABLE}; {ROWS}")
    assert not setup.failed
    sessions = 1 + max(s.session for s in steps)
    side = SimSide(cluster, sessions)
    try:
        answers = drive(side, steps)
    finally:
        side.close()
    final = cluster.execute(READ).outcomes[0].rows
    assert final is not None
    return answers, [tuple(r) for r in final], cluster, side.waits


def by_session(answers: list[Any]) -> dict[int, list[Any]]:
    found: dict[int, list[Any]] = {}
    for session, sql, answer in answers:
        found.setdefault(session, []).append((sql, answer))
    return found


def report(seed: int, steps: list[Step], ours: list[Any], theirs: list[Any]) -> str:
    lines = [f"seed {seed}: the schedule, then the answers (ticdc-sim | MariaDB)"]
    lines += [f"  s{s.session}: {s.sql}" for s in steps]
    for mine, real in itertools.zip_longest(ours, theirs):
        mark = "  " if mine == real else "!!"
        lines.append(f"{mark} {mine} | {real}")
    return "\n".join(lines)


@pytest.mark.parametrize("seed", SEEDS)
def test_interleaved_sessions_answer_as_mariadb(
    seed: int, database: tuple[MariaDB, str], mariadb_pair: tuple[MariaDB, MariaDB]
) -> None:
    steps = schedule(seed)
    theirs, their_table = on_mariadb(*database, steps)
    ours, our_table, cluster, _ = on_sim(steps)
    # each session's answers in its order (waiters a commit frees at once answer in any
    # order, on either side)
    assert by_session(ours) == by_session(theirs), report(seed, steps, ours, theirs)
    assert our_table == their_table
    # commits in commit-ts order, each transaction once
    stamps = [e.commit_ts for e in cluster.history]
    assert stamps == sorted(stamps)
    # the changelog rebuilds the table on a replica
    _, replica = mariadb_pair
    conn = replica.connect()
    try:
        replica.reset(conn)
        apply_changelog(conn, list(cluster.history))
        with conn.cursor() as cur:
            cur.execute("USE test")
            cur.execute(READ)
            assert [tuple(r) for r in cur.fetchall()] == our_table
    finally:
        conn.close()


def test_mariadb_answers_a_schedule_the_same_each_time(database: tuple[MariaDB, str]) -> None:
    """The driver's order of answers is InnoDB's, not the machine's timing."""
    steps = schedule(3)
    server, name = database
    first = on_mariadb(server, name, steps)
    conn = server.connect()
    with conn.cursor() as cur:
        cur.execute(f"USE {name}")
        cur.execute("DELETE FROM t")
        cur.execute(ROWS)
    conn.close()
    assert on_mariadb(server, name, steps) == first


def test_the_schedules_exercise_waits_and_deadlocks() -> None:
    """The seeds are not all quiet: some statements wait, some sessions deadlock."""
    waits = deadlocks = 0
    for seed in SEEDS[:12]:
        answers, _, _, waited = on_sim(schedule(seed))
        deadlocks += sum(1 for _, _, answer in answers if answer == ("error", 1213))
        waits += waited
    assert deadlocks > 0 and waits > 0
