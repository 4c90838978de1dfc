"""Statements run on the service's event loop only when nothing they do can wait
(`Cluster.at_once`): no other session's open transaction, every changefeed in memory, a small
script, and no recent slow run on the cluster; otherwise on a thread, where a wait for a lock
holds nothing else up."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import httpx
import pytest

import ticdc_sim.cluster as cluster_module
from support_service import Server
from ticdc_sim.cluster import AT_ONCE_CHARS, Cluster
from ticdc_sim.encoders import Message
from ticdc_sim.feed import FeedSpec
from ticdc_sim.feedlog import Retain
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.service.state import on_cluster
from ticdc_sim.sinks import LocalSink
from ticdc_sim.sinks.memory import MemorySink

MEMORY = "memory://?protocol=canal-json"


class _Remote(LocalSink):
    """A sink that is not one of the in-memory kinds (a broker's or a file's stands here)."""

    def send(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        pass

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


def _cluster(*sinks: Callable[[], Any]) -> Cluster:
    c = Cluster("c", 7, lock_wait_s=5.0, max_txn_rows=1000, settle_heap=False)
    for number, sink in enumerate(sinks or (MemorySink,)):
        c.add_feed(FeedSpec(f"f{number}", MEMORY), lambda _, s=sink: s(), Retain())
    assert not c.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)").failed
    return c


def _now(c: Cluster, size: int = 10, session: Any = None) -> bool:
    with c.at_once(size, session) as now:
        if now:  # the lock is this thread's while the block runs
            assert c.lock._is_owned()  # type: ignore[attr-defined]
        return now


def _run(c: Cluster, session: Any, sql: str) -> None:
    (stmt,) = split_script([sql], "test.sql")
    outcome, _ = c.run(session, stmt)
    assert outcome.error is None, outcome.error


def test_statements_run_at_once_when_nothing_can_wait() -> None:
    c = _cluster(MemorySink, MemorySink)
    assert _now(c)
    assert not c.lock._is_owned()  # type: ignore[attr-defined]
    assert not _now(c, AT_ONCE_CHARS + 1)  # a big script: on a thread


def test_another_sessions_open_transaction_sends_statements_to_a_thread() -> None:
    c = _cluster()
    holder, other = c.session(), c.session()
    _run(c, holder, "BEGIN")
    _run(c, holder, "UPDATE t SET v = 1 WHERE id = 1")  # matches nothing, yet opens it
    assert not _now(c)  # a script of its own could wait for the holder's locks
    assert not _now(c, session=other)
    assert _now(c, session=holder)  # the holder never waits for itself
    _run(c, holder, "COMMIT")
    assert _now(c, session=other)


def test_a_changefeed_not_in_memory_sends_statements_to_a_thread() -> None:
    assert not _now(_cluster(MemorySink, _Remote))


def test_a_lock_held_elsewhere_sends_statements_to_a_thread() -> None:
    c = _cluster()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with c.lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        assert not _now(c)
    finally:
        release.set()
        holder.join()
    assert _now(c)


def test_a_slow_run_sends_the_clusters_next_ones_to_threads_for_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cluster_module, "SLOW_S", 0.01)
    c = _cluster()
    with c.at_once(10) as now:
        assert now
        time.sleep(0.05)  # a heavy statement
    assert not _now(c)
    c.slow_until = time.monotonic() - 1  # the cool-down passed
    assert _now(c)


def test_on_cluster_runs_on_the_loop_or_hands_over_to_the_thread() -> None:
    c = _cluster()
    ran: list[str] = []

    async def thread(work: Callable[[], str]) -> str:
        ran.append("thread")
        return await asyncio.to_thread(work)

    def work() -> str:
        return threading.current_thread().name

    async def both() -> tuple[str, str, str]:
        loop = threading.current_thread().name
        first = await on_cluster(c, 10, None, work, thread)
        holder = c.session()
        _run(c, holder, "BEGIN")
        _run(c, holder, "INSERT INTO t VALUES (1, 1)")
        second = await on_cluster(c, 10, None, work, thread)
        return loop, first, second

    loop, first, second = asyncio.run(both())
    assert first == loop and second != loop
    assert ran == ["thread"]


# -- the service: a wait on a thread holds nothing else up --------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    found = Server.start(tmp_path_factory.mktemp("serve") / "data", lock_wait_s="20")
    yield found
    if found.process.poll() is None:
        found.stop()


def test_a_script_waiting_for_a_lock_leaves_the_service_serving(server: Server) -> None:
    """A cluster with a memory changefeed (whose scripts run on the event loop while no
    transaction is open): a MySQL session holds a row, a script writing it waits on a
    thread, and meanwhile the service answers other requests and other sessions; the
    script goes on once the holder commits, and the changefeed has both in commit order."""
    httpx.post(f"{server.http}/sim/v1/clusters", json={"id": "waits"}).raise_for_status()
    body = {"namespace": "waits", "changefeed_id": "mem", "sink_uri": MEMORY}
    httpx.post(f"{server.http}/api/v2/changefeeds", json=body).raise_for_status()
    assert server.sql("CREATE TABLE w (id INT PRIMARY KEY, v INT)", "waits")["ok"]
    assert server.sql("INSERT INTO w VALUES (1, 0), (2, 0)", "waits")["ok"]
    holder = server.mysql("waits.root", autocommit=True)
    with holder.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("UPDATE w SET v = 1 WHERE id = 1")
    answers: list[dict[str, Any]] = []
    waiter = threading.Thread(
        target=lambda: answers.append(server.sql("UPDATE w SET v = 2 WHERE id = 1", "waits"))
    )
    waiter.start()
    time.sleep(0.5)
    assert not answers  # waiting for the holder
    started = time.monotonic()
    assert httpx.get(f"{server.http}/readyz").status_code == 200
    assert server.sql("UPDATE w SET v = 3 WHERE id = 2", "waits")["ok"]  # another row
    other = server.mysql("waits.root", autocommit=True)
    with other.cursor() as cur:
        cur.execute("SELECT v FROM w WHERE id = 2")
        assert cur.fetchall() == ((3,),)
    other.close()
    assert time.monotonic() - started < 5  # none of it waited for the holder
    with holder.cursor() as cur:
        cur.execute("COMMIT")
    holder.close()
    waiter.join(30)
    assert answers and answers[0]["ok"]
    url = f"{server.http}/sim/v1/clusters/waits/changefeeds/mem/messages"
    decoded = [
        d
        for m in httpx.get(url, params={"limit": 100}).json()["messages"]
        for d in m["decoded"]
        if d["type"] == "update"
    ]
    assert [(d["columns"]["id"], d["columns"]["v"]) for d in decoded] == [(2, 3), (1, 1), (1, 2)]
