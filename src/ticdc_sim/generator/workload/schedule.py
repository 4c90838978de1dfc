"""Which row each operation of a workload takes, for a run of events at once, in numpy.

Each table's live rows are the row ids [born - live, born), and its fixed hot rows
[hot_from, hot_from + count) once born, which no delete takes. An insert appends row `born`;
a delete takes the oldest live row outside the hot ones; an update takes a hot row for the
hot share of the updates, else a live row by the key distribution, counted from the newest;
an update or delete while nothing is there to take writes nothing. So per table `born` is a
prefix count of inserts and `live` a walk of +1 (an insert past the hot rows) and -1 (a
delete) reflected at 0 (Skorokhod: live = walk - min(0, running min of walk)). A key update
(an update that gives the row new keys) takes the table's next key serial, a prefix count
of key updates too. All are scans over the run, from the counters it starts with: a
parallel engine computes any run alone once it knows those, and the single-process engine
gets the same rows, to the bit (the same numpy arithmetic everywhere).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ticdc_sim.generator.workload.spec import Keys

INSERT, UPDATE, DELETE, REKEY, SKIPPED = 0, 1, 2, 3, -1


@dataclass
class Plan:
    """A run of events, planned: per event its effective kind and row; per table the
    counters before each event (for references) and after the run."""

    kinds: np.ndarray  # INSERT / UPDATE / DELETE / REKEY / SKIPPED
    rows: np.ndarray  # the row id each event takes (-1 when skipped)
    serials: np.ndarray  # a key update's serial: the table's key updates before it
    born_before: np.ndarray  # [table, event]: born before the event
    live_before: np.ndarray  # [table, event]: live rows before the event
    born_after: np.ndarray  # [table]
    live_after: np.ndarray  # [table]
    rekeyed_after: np.ndarray  # [table]: key updates so far


def plan(
    tables: np.ndarray,
    kinds: np.ndarray,
    u: np.ndarray,
    born: np.ndarray,
    live: np.ndarray,
    keys: list[Keys],
    rekeyed: np.ndarray | None = None,
    hot_from: np.ndarray | None = None,
) -> Plan:
    """Events with their `tables` (indexes), drawn `kinds` and key draws `u` in [0, 1), from
    per-table counters `born`, `live` (outside the hot rows), `rekeyed` (key updates) and
    `hot_from` (the first hot row); `keys`: each table's key distribution."""
    count, width = len(kinds), len(born)
    hot_count = np.array([0 if k.hot is None else k.hot.count for k in keys], dtype=np.int64)
    first_hot = np.zeros(width, dtype=np.int64) if hot_from is None else hot_from
    born_before = np.empty((width, count), dtype=np.int64)
    live_before = np.empty((width, count), dtype=np.int64)
    born_after = born.astype(np.int64).copy()
    live_after = live.astype(np.int64).copy()
    for t in range(width):
        mine = tables == t
        inserts = (mine & (kinds == INSERT)).astype(np.int64)
        born_before[t, 0] = born_after[t]
        born_before[t, 1:] = born_after[t] + np.cumsum(inserts)[:-1]
        cold = inserts * (born_before[t] >= first_hot[t] + hot_count[t])
        steps = cold - (mine & (kinds == DELETE)).astype(np.int64)
        walk = live_after[t] + np.cumsum(steps)
        after = walk - np.minimum(np.minimum.accumulate(walk), 0)
        live_before[t, 0] = live_after[t]
        live_before[t, 1:] = after[:-1]
        if count:
            born_after[t] = born_before[t, -1] + inserts[-1]
            live_after[t] = after[-1]
    index = np.arange(count)
    own_born = born_before[tables, index]
    own_live = live_before[tables, index]
    own_hot = np.clip(own_born - first_hot[tables], 0, hot_count[tables])
    nothing = np.where(kinds == DELETE, own_live, own_live + own_hot) <= 0
    effective = np.where((kinds != INSERT) & nothing, SKIPPED, kinds)
    rows = np.full(count, -1, dtype=np.int64)
    rows = np.where(effective == INSERT, own_born, rows)
    rows = np.where(effective == DELETE, own_born - own_live, rows)
    updates = (effective == UPDATE) | (effective == REKEY)
    for t in np.unique(tables[updates]).tolist():
        which = updates & (tables == t)
        rows[which] = pick(
            u[which], own_born[which], own_live[which], own_hot[which], first_hot[t], keys[t]
        )
    serials = np.full(count, -1, dtype=np.int64)
    rekeyed_after = np.zeros(width, dtype=np.int64) if rekeyed is None else rekeyed.copy()
    rekeys = effective == REKEY
    if rekeys.any():
        for t in range(width):
            mine = rekeys & (tables == t)
            serials[mine] = rekeyed_after[t] + np.arange(int(mine.sum()))
            rekeyed_after[t] += int(mine.sum())
    return Plan(
        effective, rows, serials, born_before, live_before, born_after, live_after, rekeyed_after
    )


def pick(
    u: np.ndarray, born: np.ndarray, live: np.ndarray, hot: np.ndarray, first_hot: int, keys: Keys
) -> np.ndarray:
    """The rows updates take: a hot one for the hot share (or when no other is live), else
    one of the `live` newest by the key distribution."""
    if keys.hot is None:
        rows: np.ndarray = born - 1 - rank(u, live, keys)
        return rows
    share = keys.hot.share
    to_hot = (hot > 0) & ((u < share) | (live <= 0))
    # the draw, stretched over the part it fell in
    stretched = np.clip((u - share) / max(1.0 - share, 1e-12), 0.0, np.nextafter(1.0, 0.0))
    rest = np.where(hot > 0, stretched, u)  # no hot row born yet: the draw as it is
    within = np.where(u < share, u / share, stretched)
    hot_row = first_hot + np.minimum(np.floor(within * hot), np.maximum(hot - 1, 0))
    cold_row = born - 1 - rank(rest, np.maximum(live, 1), keys)
    picked: np.ndarray = np.where(to_hot, hot_row, cold_row).astype(np.int64)
    return picked


def rank(u: np.ndarray, live: np.ndarray, keys: Keys) -> np.ndarray:
    """Which live row an update takes, counted from the newest (0)."""
    size = live.astype(np.float64)
    if keys.zipf is not None:
        s = keys.zipf
        if abs(s - 1.0) < 1e-9:
            picked = np.floor(size**u) - 1
        else:
            top = size ** (1 - s)
            picked = np.floor((1 + u * (top - 1)) ** (1 / (1 - s))) - 1
    elif keys.hotspot is not None:
        hot = np.maximum(1, np.floor(size * keys.hotspot.keys))
        share = keys.hotspot.share
        cold = hot + np.floor((u - share) / (1 - share) * (size - hot))
        picked = np.where(u < share, np.floor(u / share * hot), np.where(size > hot, cold, 0))
    else:
        picked = np.floor(u * size)
    out: np.ndarray = np.clip(picked, 0, live - 1).astype(np.int64)
    return out
