"""Row locks, the waits-for graph and row versions (generator/sql/locks.py) on their own; the
engine's use of them is tested against MariaDB in test_oracle_sessions.py."""

from __future__ import annotations

import pytest

from ticdc_sim.generator.sql.locks import Blocked, LockTable, Versions, victim


def test_exclusive_locks_conflict_and_shared_locks_share() -> None:
    locks = LockTable()
    locks.take("t1", ("t", 1), exclusive=True)
    locks.take("t1", ("t", 1), exclusive=False)  # its own lock never blocks it
    with pytest.raises(Blocked) as blocked:
        locks.take("t2", ("t", 1), exclusive=False)
    assert (blocked.value.holder, blocked.value.key) == ("t1", ("t", 1))
    locks.take("t2", ("t", 2), exclusive=False)
    locks.take("t3", ("t", 2), exclusive=False)  # two sharers
    with pytest.raises(Blocked) as blocked:
        locks.take("t3", ("t", 2), exclusive=True)  # an upgrade waits for the other sharer
    assert blocked.value.holder == "t2"
    assert locks.holds("t1") == 1 and locks.holds("t3") == 1


def test_release_frees_every_key_and_the_wait() -> None:
    locks = LockTable()
    locks.take("t1", ("t", 1), exclusive=True)
    locks.take("t1", ("u", 1), exclusive=True)
    assert locks.wait("t2", "t1") is None
    assert locks.waiting_for("t2") == "t1"
    locks.release("t1")
    assert len(locks) == 0 and locks.holds("t1") == 0
    locks.take("t2", ("t", 1), exclusive=True)
    locks.release("t2")
    assert locks.waiting_for("t2") is None


def test_a_wait_that_closes_a_cycle_names_it() -> None:
    locks = LockTable()
    assert locks.wait("a", "b") is None
    assert locks.wait("b", "c") is None
    assert locks.wait("c", "a") == ["c", "a", "b"]
    locks.stop_waiting("c")
    assert locks.wait("d", "a") is None  # a chain, no cycle
    assert locks.wait("e", "e") == ["e"]


def test_a_cycle_not_through_the_waiter_is_not_its_deadlock() -> None:
    locks = LockTable()
    locks.wait("a", "b")
    locks.wait("b", "a")  # (reported when it formed)
    assert locks.wait("c", "a") is None


def test_the_victim_is_the_lightest_then_the_one_that_closed_the_cycle() -> None:
    assert victim(["c", "a", "b"], {"a": 1, "b": 5, "c": 3}) == "a"
    assert victim(["c", "a"], {"a": 2, "c": 2}) == "c"
    assert victim(["c", "a"], {"a": 2, "c": 4}) == "a"


def test_versions_give_the_image_a_snapshot_holds_and_are_purged() -> None:
    versions = Versions()
    versions.keep(10, {"t": {1: (1, "a"), 2: None}})  # updated 1, inserted 2 at ts 10
    versions.keep(20, {"t": {1: (1, "b")}})  # updated 1 again at ts 20
    assert sorted(versions.before(5)) == [("t", 1, (1, "a")), ("t", 2, None)]
    assert sorted(versions.before(15)) == [("t", 1, (1, "b"))]
    assert list(versions.before(20)) == []
    versions.purge(15)  # the oldest open snapshot is at 15: ts 10 is no one's
    assert sorted(versions.before(5)) == [("t", 1, (1, "b"))]
    versions.purge(None)
    assert not versions
