"""Engine benchmark: statements/s, rows/s and peak RSS, each beside sqlglot's parse time.

    python bench/engine.py [--statements 20000] [--rows 10000] [--big 1000000]

Three generated workloads, each run in a fresh process:
  * `mixed`: single-row INSERT/UPDATE/DELETE statements (statements/s);
  * `multirow`: 10 INSERTs of `--rows` rows each (rows/s);
  * `big`: `--big` mixed statements streamed from disk (peak RSS).
The baseline is the time sqlglot with its compiled extension (`sqlglotc`) needs just to parse
the same script, measured in the same run in a separate virtualenv (bench/.venv-sqlglotc,
created on first use from PyPI). The engine's time includes reading, lexing, parsing,
executing and producing every event.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE_VENV = ROOT / "bench" / ".venv-sqlglotc"
TABLE = (
    "CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR(32), qty INT, "
    "price DECIMAL(10,2), note VARCHAR(64));\n"
)

ENGINE_RUN = """
import json, resource, sys, time
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import split_script
path = sys.argv[1]
start = time.perf_counter()
events = rows = 0
with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
    for event in Engine().run(split_script(f, path)):
        events += 1
        rows += hasattr(event, "columns")
seconds = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "events": events, "rows": rows, "rss_mb": rss}))
"""

BASELINE_RUN = """
import json, sys, time
import sqlglot
import sqlglot.parser
assert sqlglot.parser.__file__.endswith(".so"), "sqlglot is not the compiled build"
path = sys.argv[1]
seconds = 0.0
statements = 0
with open(path, encoding="utf-8") as f:
    for line in f:  # the generated scripts hold one statement a line
        start = time.perf_counter()
        sqlglot.parse_one(line, read="mysql")
        seconds += time.perf_counter() - start
        statements += 1
print(json.dumps({"seconds": seconds, "statements": statements}))
"""


def baseline_python() -> Path:
    python = BASELINE_VENV / "bin" / "python"
    if not python.exists():
        print("creating bench/.venv-sqlglotc (sqlglot + sqlglotc from PyPI) ...", flush=True)
        venv.create(BASELINE_VENV, with_pip=True)
        version = _pinned("sqlglot")
        subprocess.run(
            [
                python,
                "-m",
                "pip",
                "install",
                "--quiet",
                f"sqlglot=={version}",
                f"sqlglotc=={version}",
            ],
            check=True,
        )
    return python


def _pinned(package: str) -> str:
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        name, _, version = line.partition("==")
        if name.lower() == package:
            return version
    raise SystemExit(f"{package} is not pinned in constraints.txt")


def write_mixed(path: Path, count: int, seed: int = 1) -> int:
    rng = random.Random(seed)
    ids: list[int] = []
    next_id = 1
    with path.open("w") as f:
        f.write(TABLE)
        for i in range(count):
            roll = rng.random()
            if roll < 0.5 or not ids:
                f.write(
                    f"INSERT INTO t (id, name, qty, price, note) VALUES ({next_id}, "
                    f"'name-{next_id}', {rng.randint(0, 1000)}, {rng.randint(0, 99999) / 100}, "
                    f"'note {i}');\n"
                )
                ids.append(next_id)
                next_id += 1
            elif roll < 0.8:
                f.write(
                    f"UPDATE t SET qty = {rng.randint(0, 1000)}, note = 'u{i}' "
                    f"WHERE id = {rng.choice(ids)};\n"
                )
            else:
                j = rng.randrange(len(ids))
                ids[j], ids[-1] = ids[-1], ids[j]
                f.write(f"DELETE FROM t WHERE id = {ids.pop()};\n")
    return count


def write_multirow(path: Path, statements: int, rows: int, seed: int = 2) -> int:
    rng = random.Random(seed)
    next_id = 1
    with path.open("w") as f:
        f.write(TABLE)
        for _ in range(statements):
            values = []
            for _ in range(rows):
                values.append(
                    f"({next_id}, 'name-{next_id}', {rng.randint(0, 1000)}, "
                    f"{rng.randint(0, 99999) / 100}, 'note {next_id}')"
                )
                next_id += 1
            f.write(
                "INSERT INTO t (id, name, qty, price, note) VALUES " + ", ".join(values) + ";\n"
            )
    return statements * rows


def run_json(python: Path | str, code: str, path: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [str(python), "-c", code, str(path)], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise SystemExit(f"benchmark step failed:\n{done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", type=int, default=20_000)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--big", type=int, default=1_000_000)
    args = parser.parse_args()
    baseline = baseline_python()
    results = []
    with tempfile.TemporaryDirectory(prefix="ticdc-sim-bench-") as tmp:
        work = Path(tmp)
        cases = [
            ("mixed", write_mixed(work / "mixed.sql", args.statements), work / "mixed.sql"),
            (
                "multirow",
                write_multirow(work / "multirow.sql", 10, args.rows),
                work / "multirow.sql",
            ),
            ("big", write_mixed(work / "big.sql", args.big, seed=3), work / "big.sql"),
        ]
        for name, units, path in cases:
            print(
                f"running {name} ({units} {'rows' if name == 'multirow' else 'statements'})",
                flush=True,
            )
            engine = run_json(sys.executable, ENGINE_RUN, path)
            parse = run_json(baseline, BASELINE_RUN, path)
            results.append((name, units, engine, parse))
    print()
    print(
        f"{'workload':<10} {'units':>9} {'engine s':>9} {'sqlglotc parse s':>17} {'ratio':>6} "
        f"{'throughput':>16} {'peak RSS':>9}"
    )
    verdicts = []
    for name, units, engine, parse in results:
        ratio = engine["seconds"] / parse["seconds"]
        rate = units / engine["seconds"]
        unit = "rows/s" if name == "multirow" else "stmts/s"
        print(
            f"{name:<10} {units:>9} {engine['seconds']:>9.2f} {parse['seconds']:>17.2f} "
            f"{ratio:>6.2f} {rate:>9.0f} {unit:<7}{engine['rss_mb']:>8.0f}M"
        )
        if name == "mixed":
            verdicts.append(("engine/parse ratio <= 1.0 (mixed)", ratio <= 1.0))
        if name == "multirow":
            verdicts.append((">= 200k rows/s (multi-row INSERT)", rate >= 200_000))
        if name == "big":
            verdicts.append(("peak RSS < 300 MB (big)", engine["rss_mb"] < 300))
    print()
    for target, met in verdicts:
        print(f"  {'met ' if met else 'MISS'}  {target}")


if __name__ == "__main__":
    main()
