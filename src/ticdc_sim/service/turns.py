"""Turns on the service's event loop for the statements run on it (`Cluster.at_once`): the
scripts and statements of every client, HTTP or MySQL, in the order they asked, at most
`PER_PASS` of them between two of the loop's reads of its sockets.

Without turns the loop serves in batches: it reads every request that came while it
worked, then runs them all before it reads again. A request that comes just after a read
waits for the whole batch, then for its place in the next one, and that place follows the
order the sockets are reported in, not the order requests came in: with 32 clients, one
unlucky in that order waited two rounds of the others' work, turn after turn
(bench/service.py over HTTP: p99 twice the p50, 90-150 ms). In turns a request waits for
those that asked before it, about one round (p99 51-70 ms, 1.1-1.5x the p50, as fast).

A turn orders work, it does not exclude it: the block runs without awaiting (the cluster's
lock, taken in `at_once`, is what keeps two statements of a cluster apart), so the
requests handed their turn in one pass run one after another, in the order they asked."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import deque
from collections.abc import AsyncIterator

from ticdc_sim.cluster import Cluster, SessionState

# Requests handed their turn at once, each pass: one would be fairest, but a read of the
# sockets between every two costs 3-4% of the service's rate; 8 cost none that the
# benchmark sees, and a request read late waits at most their 8 (~12 ms) more
PER_PASS = 8


class LoopTurns:
    """The service's turns: one queue (`Turns`) for each event loop it runs on. uvicorn runs
    one; a test client runs the app on a loop of its own for each request (without `with`),
    from as many threads as call it, and a loop's queue goes with the loop."""

    def __init__(self) -> None:
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Turns]
        self._loops = weakref.WeakKeyDictionary()

    def here(self) -> Turns:
        """The running loop's."""
        loop = asyncio.get_running_loop()
        turns = self._loops.get(loop)
        if turns is None:
            turns = self._loops[loop] = Turns()
        return turns

    @contextlib.asynccontextmanager
    async def at_once(
        self, cluster: Cluster, size: int, session: SessionState | None = None
    ) -> AsyncIterator[bool]:
        """`Cluster.at_once` in the loop's turn: whether statements of `size` characters (a
        script, or `session`'s next one) run now on the loop, the cluster's lock held while
        the block runs. One that could not run there (`Cluster.may_run_at_once`: a big
        script, another session's transaction holding rows, a changefeed not in memory)
        does not wait for a turn."""
        if not cluster.may_run_at_once(size, session):
            yield False
            return
        async with self.here().turn():
            with cluster.at_once(size, session) as now:
                yield now


class Turns:
    """One event loop's turns."""

    def __init__(self) -> None:
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._taken = False  # until the pass after the last holder's release
        self._holders = 0  # handed their turn, not yet done

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """The turn, once every request that asked before has had its own."""
        if self._taken:
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():  # handed the turn: done with it
                    self._release()
                raise  # else left in the queue, done: `_hand_on` skips it
        else:
            self._taken = True
            self._holders = 1
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        self._holders -= 1
        # the next ones resume at the loop's next pass, after its read; with none waiting,
        # the turn is free from that pass on, so that what this pass read asks first
        if not self._holders and not self._hand_on():
            asyncio.get_running_loop().call_soon(self._free)

    def _hand_on(self) -> bool:
        while self._waiting and self._holders < PER_PASS:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                self._holders += 1
        return self._holders > 0

    def _free(self) -> None:
        if not self._hand_on():
            self._taken = False
