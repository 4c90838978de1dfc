"""Statements run on the service's event loop only when nothing they do can wait
(`Cluster.at_once`): no other session holding anything or waiting, every changefeed in
memory, a small script, and no recent slow run on the cluster; otherwise on a thread, where a
wait for a lock holds nothing else up. A script leaves the loop after its budget, and a
statement that needs to wait there all the same is undone and run on a thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

import ticdc_sim.cluster as cluster_module
from support_service import Server
from ticdc_sim.cluster import AT_ONCE_CHARS, LOOP_BUDGET_S, Cluster, MustWait, Script
from ticdc_sim.encoders import Message
from ticdc_sim.feed import FeedSpec
from ticdc_sim.feedlog import Retain
from ticdc_sim.generator.sql.script import split_script
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


def _rows(c: Cluster, sql: str) -> list[tuple[Any, ...]]:
    (stmt,) = split_script([sql], "test.sql")
    outcome, _ = c.run(c.session(), stmt)
    return outcome.rows or []


def test_statements_run_at_once_when_nothing_can_wait() -> None:
    c = _cluster(MemorySink, MemorySink)
    assert _now(c)
    assert not c.lock._is_owned()  # type: ignore[attr-defined]
    assert not _now(c, AT_ONCE_CHARS + 1)  # a big script: on a thread


def test_another_sessions_busy_transaction_sends_statements_to_a_thread() -> None:
    """One that read, wrote or locked could be waited for; one that only began cannot."""
    c = _cluster()
    holder, other = c.session(), c.session()
    _run(c, holder, "BEGIN")
    assert _now(c)  # it holds nothing yet
    _run(c, holder, "SELECT * FROM t")  # its snapshot: a DDL would wait for it
    assert not _now(c)
    assert not _now(c, session=other)
    assert _now(c, session=holder)  # the holder never waits for itself
    _run(c, holder, "COMMIT")
    assert _now(c, session=other)


def test_a_session_waiting_sends_statements_to_a_thread_and_a_missed_wait_is_undone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A waiter woken by a commit but not yet run again still queues first for its row: a
    newcomer would wait behind it. `at_once` says no while anyone waits; were a way to wait
    missed, the statement is undone and `MustWait` raised, never a wait on the loop."""
    c = _cluster()
    _run(c, c.session(), "INSERT INTO t VALUES (1, 0)")
    holder, waiter, newcomer = c.session(), c.session(), c.session()
    _run(c, holder, "BEGIN")
    _run(c, holder, "UPDATE t SET v = 1 WHERE id = 1")
    waiting = threading.Thread(target=_run, args=(c, waiter, "UPDATE t SET v = 2 WHERE id = 1"))
    waiting.start()
    deadline = time.monotonic() + 10
    while not c.waiting(waiter) and time.monotonic() < deadline:
        time.sleep(0.01)
    with c.lock:  # the waiter, woken by the commit, cannot run again yet
        _run(c, holder, "COMMIT")
        assert not _now(c)
        monkeypatch.setattr(c, "_waiters", set())  # a predicate that missed it
        script = Script(c, "INSERT INTO t VALUES (5, 5); UPDATE t SET v = 3 WHERE id = 1;")
        with c.at_once(10) as now:
            assert now
            assert not script.run(LOOP_BUDGET_S)  # stopped before the statement that waits
            (stmt,) = split_script(["UPDATE t SET v = 3 WHERE id = 1"], "test.sql")
            with pytest.raises(MustWait):
                c.run(newcomer, stmt)
        monkeypatch.undo()
    waiting.join(10)
    assert [o.statement for o in script.outcomes] == ["INSERT INTO t VALUES (5, 5)"]
    assert script.run()  # on a thread: the rest, after the waiter
    _run(c, newcomer, "UPDATE t SET v = 4 WHERE id = 1")
    rows = {r[0]: r[1] for r in _rows(c, "SELECT id, v FROM t")}
    assert rows == {1: 4, 5: 5}


def test_a_changefeed_not_in_memory_sends_statements_to_a_thread(
    server: Server, tmp_path: Path
) -> None:
    """A sink of another kind, a schema registry over HTTP (this service's own, which
    would wait on the very loop), claim-check files: each could wait."""
    assert not _now(_cluster(MemorySink, _Remote))
    registry = _cluster()
    httpx.post(f"{server.http}/sim/v1/clusters", json={"id": "registry"}).raise_for_status()
    url = f"{server.http}/sim/v1/clusters/registry/schema-registry"
    registry.add_feed(
        FeedSpec("avro", f"memory://?protocol=avro&schema-registry={url}"),
        lambda _: MemorySink(),
        Retain(),
    )
    try:
        assert not _now(registry)
    finally:
        registry.close()  # its registry's connection
    claims = _cluster()
    uri = (
        "memory://?protocol=open-protocol&max-message-bytes=300"
        f"&large-message-handle-option=claim-check&claim-check-storage-uri={tmp_path.as_uri()}"
    )
    claims.add_feed(FeedSpec("claims", uri), lambda _: MemorySink(), Retain())
    assert not _now(claims)
    assert all(f.in_memory for f in _cluster(MemorySink).feeds.values())


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


def test_a_script_stops_short_at_its_budget_and_goes_on_from_there() -> None:
    """On the loop a script runs for a budget; the rest runs later (on a thread), and
    what committed before the stop reached the changefeed first (others may commit in
    between)."""
    c = _cluster()
    script = Script(c, "INSERT INTO t VALUES (1, 1); BEGIN; INSERT INTO t VALUES (2, 2); COMMIT;")
    assert not script.run(budget_s=0)  # the first statement runs whatever the budget
    assert [o.statement for o in script.outcomes] == ["INSERT INTO t VALUES (1, 1)"]
    assert not c.lock._is_owned()  # type: ignore[attr-defined]
    other = c.session()
    _run(c, other, "INSERT INTO t VALUES (3, 3)")  # another session meanwhile
    assert script.run()
    result = script.result()
    assert not result.failed and len(result.outcomes) == 4
    assert [t.rows for t in result.committed] == [1, 1]
    sent = [orjson.loads(r.value or b"") for r in c.feeds["f0"].sink.inner.arrived]
    assert [m["data"][0]["id"] for m in sent if m["type"] == "INSERT"] == ["1", "3", "2"]
    assert result.messages == {"f0": 2}  # its own two rows (canal-json sends no checkpoint)


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


def test_a_long_script_on_the_loop_answers_1053_when_the_service_stops(tmp_path: Path) -> None:
    """A script of many slow statements hands its rest to a thread after its budget on the
    loop: the loop is free for a stop, and the script's next statement is refused."""
    server = Server.start(tmp_path / "data")
    try:
        httpx.post(f"{server.http}/sim/v1/clusters", json={"id": "heavy"}).raise_for_status()
        body = {"namespace": "heavy", "changefeed_id": "mem", "sink_uri": MEMORY}
        httpx.post(f"{server.http}/api/v2/changefeeds", json=body).raise_for_status()
        rows = ", ".join(f"({i})" for i in range(300))
        create = f"CREATE TABLE n (id INT PRIMARY KEY); INSERT INTO n VALUES {rows};"
        assert server.sql(create, "heavy")["ok"]
        script = "SELECT COUNT(*) FROM n a, n b WHERE a.id + b.id = 7;\n" * 400  # ~30 ms each
        answers: list[httpx.Response] = []
        url = f"{server.http}/sim/v1/clusters/heavy/sql"
        poster = threading.Thread(
            target=lambda: answers.append(httpx.post(url, content=script, timeout=120))
        )
        poster.start()
        time.sleep(1.0)
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 8  # not the whole script's ~12 s
        poster.join(30)
    finally:
        if server.process.poll() is None:
            server.process.kill()
    (answer,) = answers
    statements = answer.json()["statements"]
    assert 1 < len(statements) < 400
    assert statements[-1]["error"]["code"] == 1053, statements[-1]


def test_the_service_loads_at_start_what_a_first_request_would_import(server: Server) -> None:
    """numpy (FLOAT columns' digits): a first request that imported it waited ~70 ms, and
    with it every client the event loop served meanwhile."""
    maps = Path(f"/proc/{server.process.pid}/maps")
    if not maps.exists():
        pytest.skip("needs /proc (Linux) to see what the server process has loaded")
    deadline = time.monotonic() + 30
    while "_multiarray_umath" not in maps.read_text():
        assert time.monotonic() < deadline, "numpy was not loaded 30 s after the start"
        time.sleep(0.05)
