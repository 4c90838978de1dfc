"""Encoder benchmark: events/s per protocol beside plain orjson of the same rows.

    python bench/encode.py [--events 60000] [--repeat 3]

One 10-column mixed-type table; the engine makes an insert/update/delete mix once (not timed),
then each protocol encodes every event on one core the way the pipeline drives it: append_row
for each row of a window, build at the end of the window (2048 rows, the pipeline's batch).
The baseline is `orjson.dumps` of each event's row as a dict, measured in the same run. Each
figure is the best of --repeat runs (this kind of machine varies by a factor of two from one
run to the next). Targets (issue 4): canal-json and open protocol >= 300k events/s, i.e. at
least 0.4 of the orjson rate.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ticdc_sim.encoders import PROTOCOLS, CodecConfig, encoder_for  # noqa: E402
from ticdc_sim.generator.engine import Engine  # noqa: E402
from ticdc_sim.generator.script import split_script  # noqa: E402
from ticdc_sim.model.events import RowChangedEvent  # noqa: E402
from ticdc_sim.pipeline import BATCH_ROWS  # noqa: E402

TABLE = (
    "CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR(32), qty INT, price DECIMAL(10,2),"
    " ratio DOUBLE, flag TINYINT, created DATETIME(3), note TEXT, code CHAR(4), score FLOAT);\n"
)


def make_events(count: int, seed: int = 5) -> list[RowChangedEvent]:
    rng = random.Random(seed)
    lines = [TABLE]
    live: list[int] = []
    next_id = 1
    while len(lines) < count:
        roll = rng.random()
        if roll < 0.6 or not live:
            lines.append(
                f"INSERT INTO t VALUES ({next_id}, 'name-{next_id}', {rng.randint(0, 999)}, "
                f"{rng.randint(0, 99999) / 100}, {rng.random()}, {rng.randint(0, 1)}, "
                f"'2024-01-01 00:00:{rng.randint(0, 59):02d}.123', 'note <{next_id}>', "
                f"'c{next_id % 99}', "
                f"{rng.randint(0, 9999) / 8});\n"
            )
            live.append(next_id)
            next_id += 1
        elif roll < 0.85:
            lines.append(
                f"UPDATE t SET qty = {rng.randint(0, 999)} WHERE id = {rng.choice(live)};\n"
            )
        else:
            victim = live.pop(rng.randrange(len(live)))
            lines.append(f"DELETE FROM t WHERE id = {victim};\n")
    return [e for e in Engine().run(split_script(lines)) if isinstance(e, RowChangedEvent)]


def best_rate(count: int, run: Callable[[], object], repeat: int) -> float:
    """Events per second of the fastest of `repeat` runs."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return count / best


def encode_all(protocol: str, events: list[RowChangedEvent]) -> None:
    encoder = encoder_for(CodecConfig(protocol))
    for start in range(0, len(events), BATCH_ROWS):
        for event in events[start : start + BATCH_ROWS]:
            encoder.append_row(event)
        encoder.build()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    events = make_events(args.events)
    names = [c.name for c in events[0].table.columns]
    dicts = [
        dict(zip(names, e.columns if e.columns is not None else e.pre_columns or (), strict=True))
        for e in events
    ]

    def baseline_run() -> None:
        for row in dicts:
            orjson.dumps(row, default=str)

    baseline = best_rate(len(events), baseline_run, args.repeat)
    print(f"{len(events)} events; plain orjson.dumps of the row dicts: {baseline:,.0f} events/s\n")
    print(f"{'protocol':<14} {'events/s':>10} {'vs orjson':>10}  target")
    for protocol in sorted(PROTOCOLS):
        rate = best_rate(len(events), lambda p=protocol: encode_all(p, events), args.repeat)
        met = rate >= 300_000 and rate >= 0.4 * baseline
        print(f"{protocol:<14} {rate:>10,.0f} {rate / baseline:>10.2f}  {'met' if met else 'MISS'}")


if __name__ == "__main__":
    main()
