"""Engine benchmark: realistic scripts end to end, beside sqlglot's parse and MariaDB.

    python bench/engine.py [--inserts 1000] [--realistic 20000] [--table-rows 1000000]
                           [--range-updates 200] [--big 1000000] [--no-mariadb]

Workloads (bench/workload.py: the 10-column mixed-type table of bench/encode.py, with a
secondary index), each replayed in a fresh process by the engine and the pipeline into
`blackhole://?protocol=canal-json`, i.e. every event encoded as TiCDC would:
  * `inserts`: INSERTs of 100 rows each (rows/s);
  * `literals`: the same with every literal form (hex, bit, negative, N'', introducers);
  * `realistic`: 100-row INSERTs, single-row and range UPDATE/DELETE by primary key, UPDATEs
    by the secondary index, explicit transactions (statements/s);
  * `range`: a `--table-rows` table, then 50-row range UPDATEs (ms per UPDATE, timed alone);
  * `big`: `--big` single-row statements streamed from disk (peak RSS; parse baseline only).
Baselines, measured in the same run on the same script:
  * sqlglot with its compiled extension (`sqlglotc`) parsing each statement, nothing else
    (bench/.venv-sqlglotc, created on first use from PyPI);
  * MariaDB (installed for the oracle tests) executing the script, fed by the `mariadb`
    client: once with its defaults (a durable commit, fsync per transaction) and once
    without the fsync (`innodb_flush_log_at_trx_commit=0`, a 256 MB buffer pool), since the
    engine keeps nothing on disk either.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import workload  # noqa: E402

BASELINE_VENV = ROOT / "bench" / ".venv-sqlglotc"
SINK = "blackhole://?protocol=canal-json"
NO_FSYNC = ("--innodb-flush-log-at-trx-commit=0", "--innodb-buffer-pool-size=256M")

# Replays the scripts in one session; reports the whole time and the last script's alone.
ENGINE_RUN = """
import json, resource, sys, time
from ticdc_sim.config import changefeed
from ticdc_sim.errors import Warnings
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.pipeline import Pipeline
from ticdc_sim.sinks import open_sink
sink, *paths = sys.argv[1:]
marks = []
def statements():
    for path in paths:
        marks.append(time.perf_counter())
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
            yield from split_script(f, path)
warnings = Warnings()
feed = changefeed(sink)
pipeline = Pipeline(feed, open_sink(feed.sink), warnings)
start = time.perf_counter()
summary = pipeline.run(Engine(warnings=warnings).run(statements()))
end = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": end - start, "last": end - marks[-1], "rows": summary.rows,
                  "rss_mb": rss}))
"""

BASELINE_RUN = """
import json, sys, time
import sqlglot
import sqlglot.parser
assert sqlglot.parser.__file__.endswith(".so"), "sqlglot is not the compiled build"
seconds = 0.0
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        for line in f:  # the generated scripts hold one statement a line
            start = time.perf_counter()
            sqlglot.parse_one(line, read="mysql")
            seconds += time.perf_counter() - start
print(json.dumps({"seconds": seconds}))
"""


def baseline_python() -> Path:
    python = BASELINE_VENV / "bin" / "python"
    if not python.exists():
        print("creating bench/.venv-sqlglotc (sqlglot + sqlglotc from PyPI) ...", flush=True)
        venv.create(BASELINE_VENV, with_pip=True)
        version = _pinned("sqlglot")
        packages = [f"sqlglot=={version}", f"sqlglotc=={version}"]
        subprocess.run([python, "-m", "pip", "install", "--quiet", *packages], check=True)
    return python


def _pinned(package: str) -> str:
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        name, _, version = line.partition("==")
        if name.lower() == package:
            return version
    raise SystemExit(f"{package} is not pinned in constraints.txt")


def write(path: Path, lines: Iterable[str]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    return path


def run_json(python: Path | str, code: str, *args: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([str(python), "-c", code, *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"benchmark step failed:\n{done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


class Maria:
    """A private MariaDB server (tests/support_mariadb.py) fed scripts by the mariadb client."""

    def __init__(self, *options: str) -> None:
        from support_mariadb import MariaDB

        server, why = MariaDB.start(*options)
        if server is None:
            raise SystemExit(f"MariaDB baseline: {why} (or pass --no-mariadb)")
        self.server = server
        self.client = shutil.which("mariadb") or shutil.which("mysql")
        if self.client is None:
            raise SystemExit("MariaDB baseline: no mariadb client (or pass --no-mariadb)")

    def run(self, *paths: Path) -> tuple[float, float]:
        """Seconds for all scripts, and for the last alone, in a fresh `test` database."""
        conn = self.server.connect()
        self.server.reset(conn)
        conn.close()
        times = []
        for path in paths:
            start = time.perf_counter()
            with path.open("rb") as script:
                subprocess.run(
                    [self.client, f"--socket={self.server.root / 'sock'}", "-uroot", "test"],
                    stdin=script,
                    check=True,
                )
            times.append(time.perf_counter() - start)
        return sum(times), times[-1]

    def stop(self) -> None:
        self.server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inserts", type=int, default=1000, help="100-row INSERTs")
    parser.add_argument("--realistic", type=int, default=20_000, help="statements")
    parser.add_argument("--table-rows", type=int, default=1_000_000)
    parser.add_argument("--range-updates", type=int, default=200)
    parser.add_argument("--big", type=int, default=1_000_000, help="single-row statements")
    parser.add_argument("--no-mariadb", action="store_true", help="skip the MariaDB baselines")
    args = parser.parse_args()
    baseline = baseline_python()
    servers = (
        [] if args.no_mariadb else [("MariaDB", Maria()), ("MariaDB no fsync", Maria(*NO_FSYNC))]
    )
    report: list[tuple[str, str, float, str, dict[str, float]]] = []
    verdicts: list[tuple[str, bool]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="ticdc-sim-bench-") as tmp:
            work = Path(tmp)
            cases = {
                "inserts": [write(work / "inserts.sql", workload.inserts(args.inserts))],
                "literals": [write(work / "literals.sql", workload.literal_forms(args.inserts))],
                "realistic": [write(work / "realistic.sql", workload.realistic(args.realistic))],
                "range": [
                    write(work / "load.sql", workload.range_load(args.table_rows)),
                    write(
                        work / "ranges.sql",
                        workload.range_updates(args.table_rows, args.range_updates),
                    ),
                ],
                "big": [write(work / "big.sql", workload.single_rows(args.big))],
            }
            for name, paths in cases.items():
                print(f"running {name} ...", flush=True)
                engine = run_json(sys.executable, ENGINE_RUN, SINK, *map(str, paths))
                parse = run_json(baseline, BASELINE_RUN, *map(str, paths))
                # peak memory is the engine's own measure: no database beside it
                against = servers if name != "big" else []
                others = {label: server.run(*paths) for label, server in against}
                report.append(_figures(name, args, engine, parse, others, verdicts))
    finally:
        for _, server in servers:
            server.stop()
    print()
    for line in report:
        print(line)
    print()
    for target, met in verdicts:
        print(f"  {'met ' if met else 'MISS'}  {target}")


def _figures(
    name: str,
    args: argparse.Namespace,
    engine: dict[str, float],
    parse: dict[str, float],
    others: dict[str, tuple[float, float]],
    verdicts: list[tuple[str, bool]],
) -> str:
    seconds = engine["seconds"]
    lines = [f"{name}: ticdc-sim {seconds:.2f} s end to end, peak RSS {engine['rss_mb']:.0f} MB"]
    ratio = seconds / parse["seconds"]
    lines.append(
        f"  sqlglotc parse alone {parse['seconds']:.2f} s (ticdc-sim / parse: {ratio:.2f})"
    )
    for label, (total, last) in others.items():
        mine, theirs = (engine["last"], last) if name == "range" else (seconds, total)
        lines.append(f"  {label} {theirs:.2f} s (ticdc-sim / {label}: {mine / theirs:.2f})")
    if name in ("inserts", "literals"):
        rate = engine["rows"] / seconds
        lines.append(f"  {rate:,.0f} rows/s")
        what = "100-row INSERTs" if name == "inserts" else "100-row INSERTs of every literal form"
        verdicts.append((f">= 100k rows/s for {what}, end to end", rate >= 100_000))
    if name == "realistic":
        rates = f"{args.realistic / seconds:,.0f} statements/s, {engine['rows'] / seconds:,.0f}"
        lines.append(f"  {rates} events/s")
        if "MariaDB" in others:
            verdicts.append(
                (
                    "realistic script no slower than MariaDB (defaults)",
                    seconds <= others["MariaDB"][0],
                )
            )
        if "MariaDB no fsync" in others:
            verdicts.append(
                (
                    "realistic script no slower than MariaDB without fsync",
                    seconds <= others["MariaDB no fsync"][0],
                )
            )
    if name == "range":
        per = engine["last"] / args.range_updates * 1000
        lines.append(f"  {per:.2f} ms per 50-row range UPDATE on {args.table_rows:,} rows")
        for label, (_, last) in others.items():
            lines.append(f"  {label}: {last / args.range_updates * 1000:.2f} ms per UPDATE")
        verdicts.append(("50-row range UPDATE on the big table < 5 ms", per < 5))
    if name == "big":
        verdicts.append((f"peak RSS < 300 MB over {args.big:,} statements", engine["rss_mb"] < 300))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
