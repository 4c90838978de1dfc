"""Python API benchmark: what a test costs with the pytest plugin, and a simulator's memory.

    python bench/api.py [--tests 200] [--simulators 1000] [--replays 5] [--repeat 3]

The test, pytest-style, on the plugin's `ticdc_sim` fixture: a canal-json memory changefeed,
CREATE TABLE, one 100-row INSERT, then the records and the events read back. Run `--tests`
times in one pytest session in a subprocess, as a user runs it (the plugin loaded by `-p`,
no other plugin), each test timed from its setup to its teardown and report: the first (it
imports the simulator), then the median, p95 and mean of the others (target: < 20 ms a test
after the first); the best of `--repeat` sessions, since the machine is shared. Baselines,
in the same run, taking turns with it:
  * pytest alone: the same session of empty tests (pytest's own cost a test);
  * the work alone: the same work in a loop of `with Simulator()`, no pytest, in a
    subprocess;
  * `ticdc-sim replay`: the same SQL replayed by the CLI into jsonl, a subprocess a test,
    as a suite without the Python API runs it (`--replays` runs).
Memory: `--simulators` simulators made by the fixture's factory, each used as the test uses
one and closed, in one process; RSS after a full collection at every tenth; the growth from
the first tenth to the last (target: none, under 1 MB). RSS is also read after each test of
both pytest sessions: the plugin's growth is told apart from pytest's own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

ROWS = ", ".join(f"({i}, 'value {i}')" for i in range(100))
SQL = f"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20));\nINSERT INTO t VALUES {ROWS};\n"
SINK = "memory://?protocol=canal-json"
EVENTS = 101  # the CREATE TABLE and 100 rows

# times each test from setup to teardown, and reads RSS after it
CONFTEST = """
import json, os, time
import pytest

MARKS = []

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.perf_counter()
    try:
        return (yield)
    finally:
        MARKS.append((time.perf_counter() - start, rss_mb()))

def pytest_sessionfinish(session):
    with open(os.environ["BENCH_MARKS"], "w") as f:
        json.dump(MARKS, f)
"""

FIXTURE_TEST = f"""
import pytest

SQL = {SQL!r}

@pytest.mark.parametrize("i", range(TESTS))
def test_work(ticdc_sim, i):
    feed = ticdc_sim.changefeed({SINK!r})
    ticdc_sim.execute(SQL)
    assert len(feed.records()) == {EVENTS}
    assert len(feed.events()) == {EVENTS}
"""

EMPTY_TEST = """
import pytest

@pytest.mark.parametrize("i", range(TESTS))
def test_nothing(i):
    pass
"""

# the same work in a loop, no pytest: each iteration's seconds
WORK_LOOP = f"""
import json, sys, time
start = time.perf_counter()
from ticdc_sim import Simulator
times = []
for _ in range(int(sys.argv[1])):
    with Simulator() as sim:
        feed = sim.changefeed({SINK!r})
        sim.execute({SQL!r})
        assert len(feed.records()) == len(feed.events()) == {EVENTS}
    times.append(time.perf_counter() - start)
    start = time.perf_counter()
print(json.dumps(times))
"""

# simulators made and closed by the fixture's factory; RSS after a full collection
MEMORY = f"""
import gc, json, os, sys
from ticdc_sim.pytest_plugin import SimulatorFactory

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

count = int(sys.argv[1])
factory = SimulatorFactory(0)
marks = []
for i in range(1, count + 1):
    sim = factory()
    feed = sim.changefeed({SINK!r})
    sim.execute({SQL!r})
    assert len(feed.records()) == len(feed.events()) == {EVENTS}
    del sim, feed
    factory.close()
    if i % max(1, count // 10) == 0:
        gc.collect()
        marks.append((i, rss_mb()))
print(json.dumps(marks))
"""


def environment(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), **extra}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the plugin by -p, nothing else installed
    return env


class Run(NamedTuple):
    wall: float  # seconds, the whole process
    times: list[float]  # seconds, each test
    rss: list[float]  # MB after each test


def pytest_session(work: Path, test: str, tests: int) -> Run:
    """A pytest session of `tests` tests in a subprocess."""
    work.mkdir()
    (work / "conftest.py").write_text(CONFTEST)
    (work / "test_bench.py").write_text(test.replace("TESTS", str(tests)))
    marks = work / "marks.json"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "ticdc_sim.pytest_plugin", "test_bench.py"]
    start = time.perf_counter()
    done = subprocess.run(
        command, cwd=work, env=environment(BENCH_MARKS=str(marks)), capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"pytest failed:\n{done.stdout}{done.stderr}")
    times, rss = zip(*json.loads(marks.read_text()), strict=True)
    return Run(wall, list(times), list(rss))


def python(code: str, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=environment(), capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"the benchmark's subprocess failed:\n{done.stderr}")
    return json.loads(done.stdout)


def replays(work: Path, count: int) -> list[float]:
    """Seconds of each `ticdc-sim replay` of the test's SQL, a fresh process each."""
    script = work / "test.sql"
    script.write_text(SQL)
    out = []
    for i in range(count):
        sink = f"jsonl://{work / f'out-{i}'}?protocol=canal-json"
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "ticdc_sim", "replay", str(script), "--sink-uri", sink],
            env=environment(),
            check=True,
            capture_output=True,
        )
        out.append(time.perf_counter() - start)
    return out


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def spread(times: list[float]) -> tuple[float, float, float]:
    """Median, p95 and mean."""
    ordered = sorted(times)
    return (
        statistics.median(ordered),
        ordered[int(0.95 * (len(ordered) - 1))],
        statistics.mean(ordered),
    )


def best(runs: list[Run]) -> Run:
    """The run whose tests after the first went fastest (others share the machine)."""
    return min(runs, key=lambda run: statistics.median(run.times[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--simulators", type=int, default=1000)
    parser.add_argument("--replays", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="best of N (the machine varies)")
    args = parser.parse_args()
    runs: dict[str, list[Run]] = {"fixture": [], "empty": [], "alone": []}
    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp:
        work = Path(tmp)
        for turn in range(args.repeat):  # taking turns, so that a slow spell hits all three
            print(f"turn {turn}: {args.tests} tests of each kind...", file=sys.stderr)
            runs["fixture"].append(
                pytest_session(work / f"fixture-{turn}", FIXTURE_TEST, args.tests)
            )
            runs["empty"].append(pytest_session(work / f"empty-{turn}", EMPTY_TEST, args.tests))
            runs["alone"].append(Run(0.0, python(WORK_LOOP, str(args.tests)), []))
        print(f"ticdc-sim replay: {args.replays} runs...", file=sys.stderr)
        replayed = replays(work, args.replays)
        print(f"memory: {args.simulators} simulators...", file=sys.stderr)
        memory = python(MEMORY, str(args.simulators))
    fixture, empty, alone = (best(runs[kind]) for kind in ("fixture", "empty", "alone"))

    median, p95, mean = spread(fixture.times[1:])
    empty_median, alone_median = (statistics.median(r.times[1:]) for r in (empty, alone))
    replay_median = statistics.median(replayed)
    print(f"\na test: a canal-json memory changefeed, CREATE TABLE, {EVENTS - 1} rows, records")
    print(f"and events read; {args.tests} tests a pytest session, best of {args.repeat}\n")
    print("                          first     median      p95       mean")
    print(f"fixture test          {ms(fixture.times[0])} {ms(median)} {ms(p95)} {ms(mean)}")
    print(f"empty test (pytest)   {ms(empty.times[0])} {ms(empty_median)}")
    print(f"the work alone        {ms(alone.times[0])} {ms(alone_median)}   (no pytest)")
    print(f"ticdc-sim replay      {ms(replayed[0])} {ms(replay_median)}   (a process a test)")
    print(
        f"\na fixture test: {(median - alone_median) * 1000:.1f} ms over the work alone"
        f" (pytest's empty test: {empty_median * 1000:.1f} ms), {median / alone_median:.2f}x"
        f" its time; {replay_median / median:.0f}x faster than a replay a test"
    )
    print(f"sessions: {fixture.wall:.1f} s with the fixture, {empty.wall:.1f} s empty")

    growth, empty_growth = (r.rss[-1] - r.rss[0] for r in (fixture, empty))
    print(
        f"\nRSS over a session: fixture {fixture.rss[0]:.1f} -> {fixture.rss[-1]:.1f} MB"
        f" ({growth:+.1f}), empty {empty.rss[0]:.1f} -> {empty.rss[-1]:.1f} MB"
        f" ({empty_growth:+.1f})"
    )
    marks = "  ".join(f"{n}: {mb:.1f}" for n, mb in memory)
    (first_n, first), (last_n, last) = memory[0], memory[-1]
    print(f"RSS (MB) after N simulators made and closed by the fixture's factory:\n  {marks}")
    print(f"  growth from {first_n} to {last_n}: {last - first:+.2f} MB\n")
    for target, met in [
        ("< 20 ms a test after the first (median)", median < 0.020),
        (f"no memory growth over {args.simulators} simulators (< 1 MB)", last - first < 1.0),
    ]:
        print(f"  {'met ' if met else 'MISS'}  {target}")


if __name__ == "__main__":
    main()
