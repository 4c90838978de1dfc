"""Start-up benchmark: what a short CLI call costs, beside `python -c pass`.

    python bench/startup.py [--runs 10] [--top 5]

Each command runs --runs times in fresh processes, the commands taking turns (a change in the
machine's load falls on all of them alike); each figure is the median wall time, and its ratio
to `python -c pass` measured in the same run, then the same of CPU time (user + system: the
steadier of the two on a shared machine). The commands, on this checkout's src/:
  * `python -c "import ticdc_sim"`;
  * `ticdc-sim --help`;
  * `replay one.sql`, the captured events printed (one.sql: a table and one row, the
    smallest script whose run takes both the DDL and the row path);
  * `replay one.sql --sink-uri jsonl://...?protocol=canal-json`;
  * `decode` of what that wrote.
Fixture users pay this on every call, so the level to keep is `replay one.sql` under 0.3 s.
Under each figure: the packages whose imports cost the most in that command (the self time of
their modules under `-X importtime`, a median of up to 3 runs), the place to look first when a
figure grows. Bytecode is cached (in a temporary PYTHONPYCACHEPREFIX, after a first run not
timed) as an installed package has it, whatever PYTHONDONTWRITEBYTECODE says.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 0.3
SCRIPT = "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20));\nINSERT INTO t VALUES (1, 'a');\n"


def commands(work: Path) -> dict[str, list[str]]:
    sink = f"jsonl://{work / 'out'}?protocol=canal-json"
    cli = [sys.executable, "-m", "ticdc_sim"]
    one = str(work / "one.sql")
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import ticdc_sim": [sys.executable, "-c", "import ticdc_sim"],
        "ticdc-sim --help": [*cli, "--help"],
        "replay one.sql": [*cli, "replay", one],
        "replay one.sql --sink-uri jsonl://": [
            *cli,
            "replay",
            one,
            "--sink-uri",
            sink,
            "--overwrite",
        ],
        "decode jsonl://": [*cli, "decode", sink],
    }


def environment(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run."""
    before, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    seconds, cpu = time.perf_counter() - start, _children_cpu() - before
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr.decode()}")
    return seconds, cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def importers(argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, float]:
    """Seconds of import time by top-level package (the sum of its modules' self times)."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], env=env, cwd=cwd, capture_output=True
    )
    spent: dict[str, float] = defaultdict(float)
    for line in done.stderr.decode().splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _, name = line.removeprefix("import time:").split("|")
        spent[name.strip().split(".")[0]] += int(own) / 1e6
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="fresh processes per command")
    parser.add_argument("--top", type=int, default=5, help="packages listed per command")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ticdc-sim-bench-") as tmp:
        work = Path(tmp)
        (work / "one.sql").write_text(SCRIPT)
        env = environment(work / "pycache")
        cases = commands(work)
        for argv in cases.values():  # bytecode written, the sink's directory made for decode
            run(argv, env, work)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, argv in cases.items():
                runs[name].append(run(argv, env, work))
        imports = {
            name: [importers(argv, env, work) for _ in range(min(args.runs, 3))]
            for name, argv in cases.items()
        }
    wall = {name: statistics.median(w for w, _ in spent) for name, spent in runs.items()}
    cpu = {name: statistics.median(c for _, c in spent) for name, spent in runs.items()}
    base, base_cpu = wall["python -c pass"], cpu["python -c pass"]
    print(f"median of {args.runs} runs, {sys.executable}; x: the ratio to python -c pass\n")
    print(f"{'':36} {'wall':>9} {'x':>6} {'cpu':>9} {'x':>6}")
    for name in cases:
        print(
            f"{name:36} {wall[name] * 1000:6.0f} ms {wall[name] / base:5.1f}x"
            f" {cpu[name] * 1000:6.0f} ms {cpu[name] / base_cpu:5.1f}x"
        )
        if name != "python -c pass":
            print(f"{'':38}imports (ms): {_heaviest(imports[name], args.top)}")
    print()
    for name in ("replay one.sql", "replay one.sql --sink-uri jsonl://"):
        met = wall[name] < TARGET_S
        print(f"  {'met ' if met else 'MISS'}  {name} < {TARGET_S} s")


def _heaviest(runs: list[dict[str, float]], top: int) -> str:
    packages = {p for spent in runs for p in spent}
    cost = {p: statistics.median(spent.get(p, 0.0) for spent in runs) for p in packages}
    heaviest = sorted(cost.items(), key=lambda item: -item[1])[:top]
    return ", ".join(f"{package} {seconds * 1000:.0f}" for package, seconds in heaviest)


if __name__ == "__main__":
    main()
