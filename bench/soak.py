"""Soak benchmark: is the service's memory held flat, by bytes, under steady load (issue 28)?

    python bench/soak.py [--minutes 10] [--clients 8] [--port-kind http|mysql|both]
                         [--sample 10]

`ticdc-sim serve` runs in a subprocess with its defaults (the default cluster and its jsonl
canal-json changefeed) in a temporary data directory, on free ports. `--clients` threads per
port (`both`: that many over HTTP and that many over the MySQL port at once) each own a table
`(id INT PRIMARY KEY, v VARCHAR(64), n INT)` and send, until the time is up, transactions of
221 row changes that leave the table small: INSERT 100 new rows, UPDATE 21 of them, DELETE the
100 the previous transaction inserted.
  * HTTP: each transaction is one POST of the script to the SQL endpoint; it counts as
    committed only if the answer is ok and its `transactions` are not empty (a transaction
    whose changes cancel out commits nothing, and the answer is still ok);
  * MySQL: pymysql, a statement at a time; committed only if each statement's affected rows
    are the ones expected (100, 21, 100).
Anything else is a failure, counted and its first few shown.

Every `--sample` seconds (10) it samples the server process's RSS (psutil if installed, else
VmRSS of /proc/PID/status), the data directory's bytes and the records the default changefeed
has sent (`ticdc_sim_messages_total`), and prints the curve: time, RSS MB, data MB, records/s
since the previous sample. The baseline is the idle server's RSS right after start, before
any load. Then, each with "met" or "NOT MET":
  * the plateau (the mean RSS over the last half of the run) and the growth of RSS over the
    last half (last sample against the one at half time): target under 5%;
  * the highest RSS against the memory the configured byte bounds (BOUND_SETTINGS) stand
    for: SLACK times their sum, plus FIXED_OVERHEAD_MB (the interpreter, libraries and
    threads). The bounds count the bytes the service holds (tracemalloc agrees within 10%);
    RSS holds about as much again, the allocators' slack under steady churn: records and
    history events freed oldest first while new ones come leave pools partly used;
  * the highest RSS against the target: under 600 MB with the defaults.
The server is stopped as Ctrl-C stops it (SIGINT; SIGTERM if it has not exited in 60 s) and
its exit code and last words are printed. The data directory's largest size is judged against
`file_retain_bytes` plus each partition's live file (`file-size`, 64 MB). The exit status is 1
when a verdict is NOT MET or a client saw a failure.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

import httpx  # noqa: E402

from support_service import Server  # noqa: E402
from ticdc_sim.config import DEFAULT_PARTITION_NUM  # noqa: E402
from ticdc_sim.service.settings import Settings  # noqa: E402

# The settings that bound, in bytes, what grows in memory with this load: the records the one
# changefeed keeps for reading and the history the one cluster keeps. The rest is bounded per
# item (a request body, a MySQL packet, a file's buffer), and FIXED_OVERHEAD_MB covers it here.
BOUND_SETTINGS = ("retain_bytes", "history_bytes")
FIXED_OVERHEAD_MB = 150  # idle server about 85 MB, plus threads and their arenas
# RSS per byte held under churn: measured 2.0 with 48 MB of bounds (RSS 179 MB) and 1.9 with
# 192 MB (444 MB), 2026-11-26; MALLOC_ARENA_MAX=2 took 25 MB off the latter
SLACK = 2.0
# on disk: the closed files the cap keeps, plus each partition's live file up to `file-size`
DISK_SETTING = "file_retain_bytes"
FILE_SIZE = 64 << 20  # TiCDC's default file-size, the default changefeed's rotation size
TARGET_MB = 600
GROWTH_TARGET = 0.05
MB = 1 << 20


def rss_bytes(pid: int) -> int:
    try:
        import psutil  # type: ignore[import-untyped]

        return int(psutil.Process(pid).memory_info().rss)
    except ImportError:
        status = Path(f"/proc/{pid}/status").read_text()
        found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        assert found is not None, f"no VmRSS in /proc/{pid}/status"
        return int(found.group(1)) * 1024


def dir_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):  # rotated or removed while walked
                total += os.stat(os.path.join(root, name)).st_size
    return total


def records_sent(server: Server) -> int:
    text = httpx.get(f"{server.http}/metrics", timeout=60).text
    pattern = r'^ticdc_sim_messages_total\{[^}]*changefeed="default"[^}]*\} (\S+)$'
    return int(sum(float(v) for v in re.findall(pattern, text, re.MULTILINE)))


def configured_bounds() -> dict[str, int]:
    """The byte bounds the service has, as it would read them (defaults, or the environment)."""
    settings = Settings()
    return {n: int(getattr(settings, n)) for n in BOUND_SETTINGS}


def statements(table: str, base: int) -> list[str]:
    values = ",".join(f"({base + k},'value-{base + k}-abcdefghijklmnop',{k})" for k in range(100))
    return [
        "BEGIN",
        f"INSERT INTO {table} VALUES {values}",
        f"UPDATE {table} SET n = n + 1 WHERE id BETWEEN {base} AND {base + 20}",
        f"DELETE FROM {table} WHERE id BETWEEN {base - 100} AND {base - 1}",
        "COMMIT",
    ]


def create(table: str) -> str:
    return f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(64), n INT)"


class Tally:
    def __init__(self) -> None:
        self.committed = 0
        self.failures: list[str] = []
        self.lock = threading.Lock()

    def add(self, failure: str | None) -> None:
        with self.lock:
            if failure is None:
                self.committed += 1
            else:
                self.failures.append(failure)


def http_client(server: Server, table: str, until: float, tally: Tally) -> None:
    url = f"{server.http}/sim/v1/clusters/default/sql"
    with httpx.Client(timeout=120) as client:
        client.post(url, content=create(table)).raise_for_status()
        base = 0
        while time.monotonic() < until:
            script = "".join(f"{s};\n" for s in statements(table, base))
            try:
                response = client.post(url, content=script)
                answer = response.json() if response.status_code == 200 else {}
                ok = answer.get("ok") and answer.get("transactions")
                tally.add(None if ok else f"{table}: {response.status_code} {response.text[:200]}")
            except httpx.HTTPError as e:
                tally.add(f"{table}: {e!r}")
            base += 100


def mysql_client(server: Server, table: str, until: float, tally: Tally) -> None:
    conn = server.mysql(autocommit=True)
    with conn.cursor() as cur:
        cur.execute(create(table))
        base = 0
        while time.monotonic() < until:
            expected = [0, 100, 21, 100 if base else 0, 0]
            try:
                affected = [cur.execute(s) for s in statements(table, base)]
                ok = affected == expected
                tally.add(None if ok else f"{table}: affected rows {affected}, not {expected}")
            except Exception as e:  # counted and shown, the run goes on
                tally.add(f"{table}: {e}")
                cur.execute("ROLLBACK")
            base += 100
    conn.close()


def sample_loop(
    server: Server, threads: list[threading.Thread], every: float, started: float
) -> list[tuple[float, int, int, int]]:
    """(seconds, RSS, data bytes, records sent) every `every` s until the clients are done."""
    pid = server.process.pid
    samples = [(0.0, rss_bytes(pid), dir_bytes(server.data_dir), records_sent(server))]
    print(f"{'t (s)':>6} {'RSS MB':>8} {'data MB':>9} {'records/s':>10}")
    print(f"{0:>6.0f} {samples[0][1] / MB:>8.0f} {samples[0][2] / MB:>9.0f} {'':>10}")
    while any(t.is_alive() for t in threads):
        next_at = started + len(samples) * every
        while time.monotonic() < next_at and any(t.is_alive() for t in threads):
            time.sleep(0.2)
        now = time.monotonic() - started
        sample = (now, rss_bytes(pid), dir_bytes(server.data_dir), records_sent(server))
        rate = (sample[3] - samples[-1][3]) / (now - samples[-1][0])
        samples.append(sample)
        print(f"{now:>6.0f} {sample[1] / MB:>8.0f} {sample[2] / MB:>9.0f} {rate:>10,.0f}")
    return samples


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def report(samples: list[tuple[float, int, int, int]], idle: int) -> bool:
    """Prints the verdicts; whether every one is met."""
    half = samples[len(samples) // 2 :]  # from the sample at (about) half time
    plateau = sum(s[1] for s in half) / len(half)
    growth = (half[-1][1] - half[0][1]) / half[0][1]
    peak = max(s[1] for s in samples)
    bounds = configured_bounds()
    allowed = SLACK * sum(bounds.values()) + FIXED_OVERHEAD_MB * MB
    named = ", ".join(f"{n} {v / MB:,.0f} MB" for n, v in bounds.items()) or "none configured"
    print(f"baseline: idle server RSS {idle / MB:.0f} MB right after start")
    print(f"plateau: mean RSS over the last half {plateau / MB:.0f} MB")
    print(
        f"growth over the last half ({half[0][0]:.0f}-{half[-1][0]:.0f} s):"
        f" {growth:+.1%} (target under {GROWTH_TARGET:.0%}): {verdict(growth < GROWTH_TARGET)}"
    )
    print(
        f"peak RSS {peak / MB:.0f} MB against {SLACK:g} x the bounds ({named})"
        f" + {FIXED_OVERHEAD_MB} MB fixed overhead = {allowed / MB:,.0f} MB:"
        f" {verdict(peak <= allowed)}"
    )
    print(
        f"peak RSS {peak / MB:.0f} MB against the target {TARGET_MB} MB:"
        f" {verdict(peak < TARGET_MB * MB)}"
    )
    first, last = samples[0], samples[-1]
    disk = max(s[2] for s in samples)
    disk_allowed = int(getattr(Settings(), DISK_SETTING)) + FILE_SIZE * DEFAULT_PARTITION_NUM
    second = samples[min(1, len(samples) - 1)]
    rate = (second[2] - first[2]) / MB / max(second[0] - first[0], 1e-9)
    print(
        f"data dir {last[2] / MB:,.0f} MB after {last[0]:.0f} s"
        f" ({rate:.1f} MB/s written in the first interval); the most"
        f" {disk / MB:,.0f} MB against {DISK_SETTING} + {DEFAULT_PARTITION_NUM} live files of"
        f" {FILE_SIZE / MB:.0f} MB = {disk_allowed / MB:,.0f} MB: {verdict(disk <= disk_allowed)}"
    )
    return (
        growth < GROWTH_TARGET
        and peak <= allowed
        and peak < TARGET_MB * MB
        and (disk <= disk_allowed)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=8, help="threads per port")
    parser.add_argument("--port-kind", choices=["http", "mysql", "both"], default="both")
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between samples")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="ticdc-sim-soak-"))
    server = Server.start(workdir / "data")
    try:
        idle = rss_bytes(server.process.pid)
        kinds = ["http", "mysql"] if args.port_kind == "both" else [args.port_kind]
        clients = {"http": http_client, "mysql": mysql_client}
        tallies = {kind: Tally() for kind in kinds}
        started = time.monotonic()
        until = started + args.minutes * 60
        threads = [
            threading.Thread(
                target=clients[kind], args=(server, f"{kind}{i}", until, tallies[kind])
            )
            for kind in kinds
            for i in range(args.clients)
        ]
        print(
            f"{args.clients} client(s) over {' and '.join(kinds)} for {args.minutes:g} min;"
            f" pid {server.process.pid}, data dir {server.data_dir}"
        )
        for thread in threads:
            thread.start()
        samples = sample_loop(server, threads, args.sample, started)
        seconds = time.monotonic() - started
        for kind, tally in tallies.items():
            print(
                f"{kind:<5} transactions committed {tally.committed:,}"
                f" ({tally.committed / seconds:,.0f}/s), failures {len(tally.failures)}"
            )
            for failure in tally.failures[:3]:
                print(f"    {failure}")
        met = report(samples, idle) and not any(t.failures for t in tallies.values())
    finally:
        stop(server)
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(0 if met else 1)


def stop(server: Server) -> None:
    """As Ctrl-C stops it; SIGTERM after 60 s, SIGKILL after 60 more. Says how it exited."""
    started = time.monotonic()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        server.process.send_signal(sig)
        try:
            code: Any = server.process.wait(timeout=60)
            break
        except subprocess.TimeoutExpired:
            code = None
    took = time.monotonic() - started
    last = server.log.read_text().strip().splitlines()[-3:]
    print(f"server stopped by {sig.name} in {took:.1f} s, exit code {code}")
    for line in last:
        print(f"    {line}")


if __name__ == "__main__":
    main()
