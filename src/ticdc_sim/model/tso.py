"""TSO timestamps (PD's `physical_ms << 18 | logical`) and a deterministic TSO clock.

Mirrors tikv/client-go `oracle.ComposeTS` / `ExtractPhysical`. The clock never reads the wall
clock: it starts at a given physical time and advances by simulated steps, so the same inputs
give the same timestamps.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

PHYSICAL_SHIFT_BITS = 18
LOGICAL_MASK = (1 << PHYSICAL_SHIFT_BITS) - 1

# 2024-04-11T01:31:12.265Z, the physical part of 449000000000000000, the research's vectors' ts.
DEFAULT_START_PHYSICAL_MS = 1712799072265
# the latest TSO a clock may start after (`--start-ts`, `Simulator(start_ts=)`): a TSO is 64
# bits, and a clock started past 2^63 (the year 3084) would soon run out of them
LAST_START_TS = (1 << 63) - 1


def compose_ts(physical_ms: int, logical: int) -> int:
    if not 0 <= logical <= LOGICAL_MASK:
        raise ValueError(f"logical part {logical} out of range 0..{LOGICAL_MASK}")
    if physical_ms < 0:
        raise ValueError(f"physical part {physical_ms} is negative")
    return (physical_ms << PHYSICAL_SHIFT_BITS) | logical


def physical_ms(ts: int) -> int:
    return ts >> PHYSICAL_SHIFT_BITS


def logical(ts: int) -> int:
    return ts & LOGICAL_MASK


@dataclass
class TSOClock:
    """Hands out strictly increasing TSOs, as one session of a busy cluster sees them.

    PD serves every client of the cluster from one counter, so the TSOs one session gets
    skip logical values (other sessions took them) and simulated time passes between its
    transactions: `next()` moves the logical part on by a seeded step of 1..32, `pause()`
    moves time on by a seeded 1..8 ms, `advance(ms)` by exactly `ms`. The steps come from
    the clock's own generator seeded by `seed`, so a clock built from the same start and
    seed always yields the same sequence (and the logical parts vary, which TiCDC's `ts`
    dispatcher depends on).
    """

    physical: int = DEFAULT_START_PHYSICAL_MS
    _logical: int = field(default=0, repr=False)
    _last: int = field(default=0, repr=False)
    seed: int = 0
    started: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        self._steps = random.Random(f"tso:{self.seed}")  # derived seed, no shared state
        self.started = self.physical  # the cluster's start: its Uptime counts from here

    @classmethod
    def starting_at(cls, start_ts: int, seed: int = 0) -> TSOClock:
        """A clock whose first `next()` is strictly greater than `start_ts`."""
        clock = cls(physical=physical_ms(start_ts), _logical=logical(start_ts), seed=seed)
        clock._last = start_ts
        return clock

    def advance(self, milliseconds: int) -> None:
        if milliseconds < 0:
            raise ValueError("the simulated clock cannot go back")
        if milliseconds:
            self.physical += milliseconds
            self._logical = 0

    def pause(self) -> None:
        """Time between two transactions of the session: 1..8 ms."""
        self.advance(self._steps.randint(1, 8))

    def next(self) -> int:
        self._logical += self._steps.randint(1, 32)
        if self._logical > LOGICAL_MASK:  # PD moves to the next millisecond when logical overflows
            self.physical += 1
            self._logical = 1
        ts = compose_ts(self.physical, self._logical)
        assert ts > self._last
        self._last = ts
        return ts

    @property
    def last(self) -> int:
        """The last TSO handed out (or the start ts)."""
        return self._last
