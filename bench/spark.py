"""The Spark engine's figures (issue 14): events/s on local[2] beside the one-process engine
and Spark's own I/O floor, measured in the same run.

    python bench/spark.py [--events 20000000] [--small 2000000] [--master local[2]]
    python bench/spark.py --rss-only --events 100000000    # the driver's peak RSS, once
                                                           # (to blackhole://)

The workload is bench/mixed-workload.yaml (the 10-column mixed-type table: 100k initial
rows, then inserts/updates/deletes in transactions of 1-8 rows with hot keys), canal-json,
to Parquet. Each measurement runs in its own process (so peak RSS is its own):
- local: the one-process engine (`ticdc-sim generate`), the baseline;
- spark: `--engine spark` on --master, at --small and at --events (cost linear in events?);
- floor: Spark writing the same number of rows, with a binary column of the records'
  average size (a real record's bytes with the row number in front, so it compresses like
  them) from `spark.range`, partitioned the same way: what Spark's writer costs alone.
Spark's session start (JVM, ~4 s) is outside the timings; everything else is inside.
Guards (on a 2-core machine Spark's JVM shares the CPU, so these are floors, not goals):
parallel efficiency (spark / (2 x local)) no worse than 0.45; driver peak RSS < 1 GB at 100M
events; events/s at --small and --events within 15%. Byte identity with one process and
cluster mode are held by tests/test_spark.py.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SPEC = Path(__file__).resolve().parent / "mixed-workload.yaml"
URI = "parquet://{dir}?protocol=canal-json&partition-num=3"
BLACKHOLE = "blackhole://?protocol=canal-json&partition-num=3"  # --rss-only: no 60 GB on disk


def _spec(events: int):  # type: ignore[no-untyped-def]
    from ticdc_sim.generator.workload import Override, load

    return load(SPEC, overrides=[Override(("operations", "events"), events, "--events")])


def _planned(events: int) -> int:
    return sum(t.rows for t in _spec(events).tables) + events


def measure_local(events: int, out: Path) -> dict[str, float]:
    from ticdc_sim.config import changefeed
    from ticdc_sim.generator.workload import Generator
    from ticdc_sim.pipeline import Pipeline
    from ticdc_sim.sinks import open_sink

    feed = changefeed(URI.format(dir=out))
    started = time.perf_counter()
    Pipeline(feed, open_sink(feed.sink)).run(Generator(_spec(events)).events())
    return {"seconds": time.perf_counter() - started}


def measure_spark(events: int, out: Path, master: str) -> dict[str, float]:
    from ticdc_sim.config import changefeed
    from ticdc_sim.spark import generate, session

    conf = dict(c.split("=", 1) for c in os.environ.get("BENCH_SPARK_CONF", "").split(",") if c)
    spark = session(master, conf)
    started = time.perf_counter()
    uri = BLACKHOLE if os.environ.get("BENCH_BLACKHOLE") else URI.format(dir=out)
    report = generate(_spec(events), changefeed(uri), master, spark=spark)
    seconds = time.perf_counter() - started
    java = _java_peak_kb()
    cpu = _cpu_seconds()
    spark.stop()
    return {
        "seconds": seconds,
        "records": sum(report.records.values()),
        "java_kb": java,
        **cpu,
    }


def measure_floor(rows: int, out: Path, master: str, sample: Path) -> dict[str, float]:
    """Spark's writer alone: `rows` rows shaped like the records (the sample's values)."""
    import pyarrow.parquet as pq

    from ticdc_sim.spark import session

    table = pq.read_table(next(sample.rglob("*.parquet")), columns=["value"])
    values = [v for v in table.column("value").to_pylist()[:1000] if v]
    size = sum(len(v) for v in values) // len(values)
    spark = session(master)
    base = values[len(values) // 2].hex()
    started = time.perf_counter()
    (
        spark.range(rows, numPartitions=spark.sparkContext.defaultParallelism * 4)
        .selectExpr(
            "'ticdc' as topic",
            "cast(id % 3 as int) as partition",
            "id as offset",
            "cast(null as binary) as key",
            f"substring(concat(cast(cast(id as string) as binary), unhex('{base}')), 1, {size})"
            " as value",
            "cast(map() as map<string,binary>) as headers",
            "id as commit_ts",
            "'row' as kind",
            "1 as rows",
            "'bench' as schema",
            "'t' as table",
        )
        .write.mode("overwrite")
        .option("compression", "zstd")
        .partitionBy("topic", "partition")
        .parquet(str(out))
    )
    seconds = time.perf_counter() - started
    spark.stop()
    return {"seconds": seconds, "value_bytes": size}


def _processes() -> dict[int, tuple[int, str, float]]:
    """pid -> (parent, name, CPU seconds) of every process we can read."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        found[int(stat.parent.name)] = (
            int(fields[1]),
            name,
            (int(fields[11]) + int(fields[12])) / tick,
        )
    return found


def _cpu_seconds() -> dict[str, float]:
    """CPU seconds so far of the JVM and of the Python workers under it (pyspark's daemon
    forks them; those that exited are counted in their parent's children times only when
    reaped, so this is a lower bound for the workers)."""
    table = _processes()
    me = os.getpid()
    java = [pid for pid, (parent, name, _) in table.items() if parent == me and "java" in name]
    below = set(java)
    changed = True
    while changed:
        changed = False
        for pid, (parent, _, _) in table.items():
            if parent in below and pid not in below:
                below.add(pid)
                changed = True
    return {
        "java_cpu": sum(table[p][2] for p in java),
        "workers_cpu": sum(table[p][2] for p in below - set(java)),
    }


def _java_peak_kb() -> float:
    """Peak RSS of this process's JVM (Spark's driver; in local mode also the executors)."""
    peak = 0.0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if fields.get("PPid", "").strip() == str(os.getpid()) and "java" in fields.get("Name", ""):
            peak = max(peak, float(fields.get("VmHWM", "0 kB").split()[0]))
    return peak


def child(args: argparse.Namespace) -> None:
    out = Path(args.out)
    if args.child == "local":
        figures = measure_local(args.events, out)
    elif args.child == "spark":
        figures = measure_spark(args.events, out, args.master)
    else:
        figures = measure_floor(args.events, out, args.master, Path(args.sample))
    figures["python_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(figures))


def run(what: str, events: int, out: Path, args: argparse.Namespace, sample: Path | None = None):  # type: ignore[no-untyped-def]
    command = [sys.executable, __file__, "--child", what, "--events", str(events)]
    command += ["--out", str(out), "--master", args.master]
    if sample is not None:
        command += ["--sample", str(sample)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{what} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000_000)
    parser.add_argument("--small", type=int, default=2_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rss-only", action="store_true", help="one Spark run: its peak RSS")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--sample", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    work = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    try:
        print(f"mixed-workload.yaml, canal-json to Parquet, Spark on {args.master}")
        if args.rss_only:  # records counted, not kept: the driver's side is the same
            os.environ["BENCH_BLACKHOLE"] = "1"
            planned = _planned(args.events)
            spark = run("spark", args.events, work / "spark", args)
            print(
                f"spark {planned:,} events: {spark['seconds']:.1f} s,"
                f" {planned / spark['seconds']:,.0f} events/s; driver (Python) peak RSS"
                f" {spark['python_kb'] / 1024:,.0f} MB, JVM peak RSS"
                f" {spark['java_kb'] / 1024:,.0f} MB"
            )
            return
        rows = []
        local = run("local", args.events, work / "local", args)
        shutil.rmtree(work / "local", ignore_errors=True)
        small = run("spark", args.small, work / "small", args)
        shutil.rmtree(work / "small", ignore_errors=True)
        spark = run("spark", args.events, work / "spark", args)
        floor = run("floor", int(spark["records"]), work / "floor", args, work / "spark")
        planned, planned_small = _planned(args.events), _planned(args.small)
        rate = {
            "local": planned / local["seconds"],
            "spark_small": planned_small / small["seconds"],
            "spark": planned / spark["seconds"],
            "floor": spark["records"] / floor["seconds"],
        }
        rows.append(("one process (baseline)", planned, local["seconds"], rate["local"]))
        rows.append((f"spark {args.master}", planned_small, small["seconds"], rate["spark_small"]))
        rows.append((f"spark {args.master}", planned, spark["seconds"], rate["spark"]))
        rows.append(("floor: spark.range write", spark["records"], floor["seconds"], rate["floor"]))
        print(f"{'':28}{'events':>14}{'seconds':>10}{'events/s':>12}")
        for name, count, seconds, per_s in rows:
            print(f"{name:28}{count:>14,}{seconds:>10.1f}{per_s:>12,.0f}")
        cores = int(args.master[6:-1]) if args.master[6:-1].isdigit() else os.cpu_count() or 1
        efficiency = rate["spark"] / (cores * rate["local"])
        print(f"spark / {cores} x one process (parallel efficiency): {efficiency:.2f}  (>= 0.45)")
        print(f"spark / floor: {rate['spark'] / rate['floor']:.2f}")
        print(
            f"events/s at {args.small:,} vs {args.events:,}:"
            f" {rate['spark_small'] / rate['spark']:.2f}"
            " (within 0.85-1.15)"
        )
        print(
            f"driver peak RSS: Python {spark['python_kb'] / 1024:,.0f} MB, JVM (driver and, in"
            f" local mode, executors) {spark['java_kb'] / 1024:,.0f} MB; one process"
            f" {local['python_kb'] / 1024:,.0f} MB"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
