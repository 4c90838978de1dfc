"""Turns on the service's event loop (service/turns.py): requests run in the order they
asked, at most `PER_PASS` between two of the loop's passes (where it reads its sockets),
neither an error nor a cancelled request loses the turn, and each event loop has turns of
its own. Then through the service: scripts of different clusters queued behind a held turn
run in the order they came, a MySQL statement waits for its turn too, and what would run
on a thread anyway (a changefeed writing files, another session's rows) does not queue."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx
import pytest

from test_at_once import MEMORY, _cluster, _run
from ticdc_sim.cluster import Cluster
from ticdc_sim.service.app import create_app
from ticdc_sim.service.settings import Settings
from ticdc_sim.service.turns import PER_PASS, LoopTurns, Turns


class Passes:
    """Counts the event loop's passes: a callback that schedules itself again each pass."""

    def __init__(self) -> None:
        self.count = 0
        self.loop = asyncio.get_running_loop()
        self.handle = self.loop.call_soon(self._tick)

    def _tick(self) -> None:
        self.count += 1
        self.handle = self.loop.call_soon(self._tick)

    def stop(self) -> None:
        self.handle.cancel()


def run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(asyncio.wait_for(main(), 10))


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    """The app started (its lifespan) and a client of it, on the running loop."""
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://sim") as client,
    ):
        yield client


async def settle(turns: Turns, waiting: int) -> None:
    """Until `waiting` requests are queued for the turn."""
    while len(turns._waiting) < waiting:
        await asyncio.sleep(0)


def test_requests_take_their_turns_in_the_order_they_asked_a_pass_at_a_time() -> None:
    async def main() -> None:
        turns, ran = Turns(), []
        passes = Passes()
        count = 2 * PER_PASS + 3

        async def request(number: int) -> None:
            async with turns.turn():
                ran.append((number, passes.count))

        async with turns.turn():  # held while everyone asks
            tasks = [asyncio.create_task(request(n)) for n in range(count)]
            await settle(turns, count)
        await asyncio.gather(*tasks)
        passes.stop()
        assert [n for n, _ in ran] == list(range(count))
        per_pass: dict[int, int] = {}
        for _, at in ran:
            per_pass[at] = per_pass.get(at, 0) + 1
        assert list(per_pass.values()) == [PER_PASS, PER_PASS, 3]
        assert len(set(per_pass)) == 3 and max(per_pass) - min(per_pass) == 2  # passes in a row

    run(main)


def test_a_request_that_asks_in_the_pass_a_turn_ended_waits_for_the_next_pass() -> None:
    """The loop reads its sockets between the two: what came meanwhile can ask first."""

    async def main() -> None:
        turns, passes = Turns(), Passes()
        async with turns.turn():
            ended = passes.count
        async with turns.turn():
            assert passes.count > ended
        passes.stop()

    run(main)


def test_a_turn_is_free_at_once_when_nobody_waits() -> None:
    async def main() -> None:
        turns = Turns()
        async with turns.turn():
            pass
        await asyncio.sleep(0)  # the pass after: free
        assert not turns._taken
        async with turns.turn():
            assert turns._taken

    run(main)


def test_an_error_in_the_turn_hands_it_on() -> None:
    async def main() -> None:
        turns, ran = Turns(), []

        async def failing() -> None:
            async with turns.turn():
                raise ValueError("the statement failed")

        async def after() -> None:
            async with turns.turn():
                ran.append("after")

        async with turns.turn():
            tasks = [asyncio.create_task(failing()), asyncio.create_task(after())]
            await settle(turns, 2)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(results[0], ValueError) and ran == ["after"]

    run(main)


@pytest.mark.parametrize("when", ["while waiting", "once handed the turn"])
def test_a_cancelled_request_does_not_keep_the_others_waiting(when: str) -> None:
    async def main() -> None:
        turns, ran = Turns(), []

        async def request(name: str) -> None:
            async with turns.turn():
                ran.append(name)

        async with turns.turn():
            first = asyncio.create_task(request("cancelled"))
            second = asyncio.create_task(request("second"))
            await settle(turns, 2)
            if when == "while waiting":
                first.cancel()
        if when == "once handed the turn":
            first.cancel()  # its waiter is done, its task not resumed yet
        await asyncio.gather(first, second, return_exceptions=True)
        assert first.cancelled() and ran == ["second"]
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert not turns._taken and not turns._holders

    run(main)


def test_scripts_of_different_clusters_run_in_the_order_they_came(tmp_path: Path) -> None:
    """Through the app: each script waits for the turn the test holds, queued in the order
    the requests came, and once it is free they commit in that order (each cluster's
    commit ts is its own, so the order is the order the answers came)."""
    settings = Settings(data_dir=tmp_path / "data", mysql_port=0, default_cluster=False)
    app = create_app(settings)
    turns = app.state.sim.turns
    names = [f"c{n}" for n in range(PER_PASS + 4)]

    async def main() -> None:
        async with serving(app) as client:
            for name in names:
                answer = await client.post("/sim/v1/clusters", json={"id": name})
                assert answer.status_code == 201, answer.text
                answer = await client.post(
                    f"/sim/v1/clusters/{name}/sql", content="CREATE TABLE t (id INT PRIMARY KEY)"
                )
                assert answer.json()["ok"], answer.text
            answered: list[str] = []

            async def script(name: str) -> None:
                answer = await client.post(
                    f"/sim/v1/clusters/{name}/sql", content="INSERT INTO t VALUES (1)"
                )
                assert answer.json()["ok"], answer.text
                answered.append(name)

            async with turns.here().turn():
                tasks = []
                for name in names:
                    tasks.append(asyncio.create_task(script(name)))
                    await settle(turns.here(), len(tasks))  # queued before the next one comes
                assert not answered
            await asyncio.gather(*tasks)
            assert answered == names

    run(main)


def test_a_script_that_cannot_run_on_the_loop_does_not_wait_for_a_turn(tmp_path: Path) -> None:
    """The default cluster's changefeed writes files: its scripts run on threads, and a
    held turn (the loop busy with other clusters' scripts) does not hold them up."""
    settings = Settings(data_dir=tmp_path / "data", mysql_port=0)
    app = create_app(settings)
    turns = app.state.sim.turns

    async def main() -> None:
        async with serving(app) as client, turns.here().turn():  # held by the test meanwhile
            answer = await client.post(
                "/sim/v1/clusters/default/sql",
                content="CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)",
            )
            assert answer.json()["ok"], answer.text
            assert not turns.here()._waiting

    run(main)


def test_each_event_loop_has_turns_of_its_own() -> None:
    """A test client runs the app on a loop of its own for each request (without `with`),
    from as many threads as call it: a turn whose release was still to settle when its
    loop ended does not keep the next loop waiting, and a loop holding its turn does not
    hold up another running at the same time."""
    turns = LoopTurns()

    async def once() -> None:
        async with turns.here().turn():
            pass  # released: the turn is free from the loop's next pass, which never comes

    async def last() -> None:
        await once()
        asyncio.get_running_loop().stop()  # the loop ends with this pass

    loop = asyncio.new_event_loop()
    loop.create_task(last())
    loop.run_forever()
    assert turns._loops[loop]._taken
    loop.close()
    run(once)

    held, done = threading.Event(), threading.Event()

    async def holding() -> None:
        async with turns.here().turn():
            held.set()
            while not done.is_set():  # another loop's turn comes meanwhile
                await asyncio.sleep(0.01)

    holder = threading.Thread(target=asyncio.run, args=(holding(),))
    holder.start()
    assert held.wait(10)
    run(once)
    done.set()
    holder.join(10)


def test_a_test_client_without_with_serves_scripts_one_after_another(tmp_path: Path) -> None:
    """Each request on an event loop of its own, the turns with them."""
    from fastapi.testclient import TestClient

    settings = Settings(data_dir=tmp_path / "data", mysql_port=0, default_cluster=False)
    client = TestClient(create_app(settings))
    assert client.post("/sim/v1/clusters", json={"id": "c"}).status_code == 201
    body = {"namespace": "c", "changefeed_id": "mem", "sink_uri": "memory://?protocol=canal-json"}
    assert client.post("/api/v2/changefeeds", json=body).status_code == 200
    for sql in ("CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)", "SELECT 1"):
        answer = client.post("/sim/v1/clusters/c/sql", content=sql)
        assert answer.json()["ok"], answer.text


def test_a_statement_another_sessions_rows_would_send_to_a_thread_does_not_queue() -> None:
    """Another session's transaction holds a row: a statement that `at_once` would refuse
    goes to its thread without waiting for the turn first; the holder's own next statement
    (its COMMIT) still runs on the loop in its turn."""
    c = _cluster()
    holder, other = c.session(), c.session()
    _run(c, holder, "BEGIN")
    _run(c, holder, "INSERT INTO t VALUES (1, 1)")
    assert not c.may_run_at_once(10, other) and c.may_run_at_once(10, holder)

    async def main() -> None:
        turns = LoopTurns()
        async with turns.here().turn():  # held: the loop busy with other clusters' work
            async with turns.at_once(c, 10, other) as now:
                assert not now and not turns.here()._waiting
            asking = asyncio.create_task(_now(turns, c, holder))
            await settle(turns.here(), 1)
        assert await asking

    run(main)


async def _now(turns: LoopTurns, c: Cluster, session: Any) -> bool:
    async with turns.at_once(c, 10, session) as now:
        return now


def test_a_mysql_statement_waits_for_its_turn(tmp_path: Path) -> None:
    """The MySQL port's statements take the same turns as the HTTP scripts."""
    pymysql = pytest.importorskip("pymysql")
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    settings = Settings(data_dir=tmp_path / "data", mysql_port=port, default_cluster=False)
    app = create_app(settings, listening)
    turns = app.state.sim.turns

    async def main() -> None:
        async with serving(app) as client:
            assert (await client.post("/sim/v1/clusters", json={"id": "m"})).status_code == 201
            body = {"namespace": "m", "changefeed_id": "mem", "sink_uri": MEMORY}
            assert (await client.post("/api/v2/changefeeds", json=body)).status_code == 200
            answer = await client.post(
                "/sim/v1/clusters/m/sql", content="CREATE TABLE t (id INT PRIMARY KEY)"
            )
            assert answer.json()["ok"], answer.text
            loop = asyncio.get_running_loop()
            connect = functools.partial(
                pymysql.connect, host="127.0.0.1", port=port, user="m.root", autocommit=True
            )
            conn = await loop.run_in_executor(None, connect)
            try:
                cursor = conn.cursor()
                async with turns.here().turn():
                    inserted = loop.run_in_executor(
                        None, cursor.execute, "INSERT INTO test.t VALUES (1)"
                    )
                    await settle(turns.here(), 1)
                    assert not inserted.done()
                assert await inserted == 1
            finally:
                await loop.run_in_executor(None, conn.close)

    run(main)
