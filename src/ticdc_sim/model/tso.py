"""TSO timestamps (PD's `physical_ms << 18 | logical`) and a deterministic TSO clock.

Mirrors tikv/client-go `oracle.ComposeTS` / `ExtractPhysical`. The clock never reads the wall
clock: it starts at a given physical time and advances by simulated steps, so the same inputs
give the same timestamps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PHYSICAL_SHIFT_BITS = 18
LOGICAL_MASK = (1 << PHYSICAL_SHIFT_BITS) - 1

# 2024-04-11T01:31:12.265Z, the physical part of 449000000000000000, the research's vectors' ts.
DEFAULT_START_PHYSICAL_MS = 1712799072265


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
    """Hands out strictly increasing TSOs.

    `next()` allocates a TSO in the current simulated millisecond (logical + 1), `advance(ms)`
    moves simulated time forward. Both are pure arithmetic, so a clock built from the same
    start always yields the same sequence.
    """

    physical: int = DEFAULT_START_PHYSICAL_MS
    _logical: int = field(default=0, repr=False)
    _last: int = field(default=0, repr=False)

    @classmethod
    def starting_at(cls, start_ts: int) -> TSOClock:
        """A clock whose first `next()` is strictly greater than `start_ts`."""
        clock = cls(physical=physical_ms(start_ts), _logical=logical(start_ts))
        clock._last = start_ts
        return clock

    def advance(self, milliseconds: int) -> None:
        if milliseconds < 0:
            raise ValueError("the simulated clock cannot go back")
        if milliseconds:
            self.physical += milliseconds
            self._logical = 0

    def next(self) -> int:
        self._logical += 1
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
