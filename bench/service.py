"""Service benchmark: many clients sending transactions over HTTP and over the MySQL port.

    python bench/service.py [--clients 32] [--scripts 200]

`ticdc-sim serve` runs in a subprocess (uvicorn, as users run it). Each client has a cluster
of its own with a memory changefeed (canal-json with the TiDB extension, 3 partitions, made
through TiCDC's open API) and sends `--scripts` transactions of 100 row changes to the
10-column mixed table of bench/workload.py: an 80-row INSERT, a 15-row range UPDATE and a
5-row range DELETE between BEGIN and COMMIT.
  * HTTP: each transaction is one POST of the script (asyncio + httpx, one connection per
    client);
  * MySQL: each client a pymysql connection (user `<cluster>.root`), one statement at a time
    as a driver sends them;
  * replay: the same SQL through the CLI's engine and pipeline in this process, no service:
    the rate the service is measured beside.
Printed per mode: transactions, rows/s, p50/p99 latency per transaction, errors; and whether
a client's changefeed holds the same row and DDL records as the replay. Targets (2 cores):
0 errors, p99 < 250 ms, >= 20k rows/s over HTTP, MySQL >= 0.5 of the HTTP rate.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import httpx  # noqa: E402
import workload  # noqa: E402

from support_service import Server  # noqa: E402
from ticdc_sim.config import changefeed  # noqa: E402
from ticdc_sim.errors import Warnings  # noqa: E402
from ticdc_sim.generator.sql.engine import Engine  # noqa: E402
from ticdc_sim.generator.sql.script import split_script  # noqa: E402
from ticdc_sim.pipeline import Pipeline  # noqa: E402
from ticdc_sim.sinks.memory import MemorySink  # noqa: E402

SINK = "memory://?protocol=canal-json&enable-tidb-extension=true&partition-num=3"
ROWS_PER_TXN = 100  # about: a range may take in rows deleted before


def transactions(client: int, count: int) -> list[list[str]]:
    """A client's transactions, statement by statement: 80 new rows, a 15-row range UPDATE
    and a 5-row range DELETE of rows it wrote before (100 row changes each)."""
    rng = random.Random(client)
    out = []
    for i in range(count):
        first = 1 + i * 80
        statements = ["BEGIN", workload.insert(rng, first, 80).rstrip(";")]
        low = rng.randint(1, first + 80 - 20)
        statements.append(
            f"UPDATE t SET price = price + 1, note = 'seen {i}' WHERE id BETWEEN {low} AND"
            f" {low + 14}"
        )
        statements.append(f"DELETE FROM t WHERE id >= {first + 70} AND id < {first + 75}")
        statements.append("COMMIT")
        out.append(statements)
    return out


def script(statements: list[str]) -> str:
    return "".join(f"{s};\n" for s in statements)


def setup(server: Server, name: str) -> None:
    httpx.post(f"{server.http}/sim/v1/clusters", json={"id": name}).raise_for_status()
    body = {"namespace": name, "changefeed_id": "bench", "sink_uri": SINK}
    httpx.post(f"{server.http}/api/v2/changefeeds", json=body).raise_for_status()
    ok = server.sql(workload.TABLE, name)["ok"]
    assert ok, f"creating the table on {name}"


class Tally:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.rows = 0  # row changes committed, as the answers count them
        self.lock = threading.Lock()

    def report(self, mode: str, seconds: float, transactions: int) -> float:
        rows = self.rows
        lat = sorted(self.latencies)
        p50 = statistics.median(lat) * 1000
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
        print(
            f"{mode:<6} {transactions:>7,} txns  {rows / seconds:>9,.0f} rows/s"
            f"  p50 {p50:6.1f} ms  p99 {p99:6.1f} ms  errors {len(self.errors)}"
        )
        for error in self.errors[:3]:
            print(f"         {error}")
        return rows / seconds


async def http_client(server: Server, name: str, txns: list[list[str]], tally: Tally) -> None:
    url = f"{server.http}/sim/v1/clusters/{name}/sql"
    async with httpx.AsyncClient(timeout=60) as client:
        for statements in txns:
            started = time.perf_counter()
            response = await client.post(url, content=script(statements))
            tally.latencies.append(time.perf_counter() - started)
            result = response.json() if response.status_code == 200 else {}
            if not result.get("ok"):
                tally.errors.append(f"{name}: {response.status_code} {response.text[:200]}")
            tally.rows += sum(t["rows"] for t in result.get("transactions", ()))


def over_http(server: Server, work: dict[str, list[list[str]]]) -> tuple[Tally, float]:
    tally = Tally()

    async def everyone() -> None:
        await asyncio.gather(*(http_client(server, n, t, tally) for n, t in work.items()))

    started = time.perf_counter()
    asyncio.run(everyone())
    return tally, time.perf_counter() - started


def over_mysql(server: Server, work: dict[str, list[list[str]]]) -> tuple[Tally, float]:
    tally = Tally()

    def client(name: str, txns: list[list[str]]) -> None:
        conn = server.mysql(f"{name}.root", autocommit=True)
        with conn.cursor() as cur:
            for statements in txns:
                started = time.perf_counter()
                rows = 0
                try:
                    for statement in statements:
                        rows += cur.execute(statement)
                except Exception as e:  # counted and shown, the run goes on
                    with tally.lock:
                        tally.errors.append(f"{name}: {e}")
                    cur.execute("ROLLBACK")
                    rows = 0
                with tally.lock:
                    tally.latencies.append(time.perf_counter() - started)
                    tally.rows += rows
        conn.close()

    threads = [threading.Thread(target=client, args=item) for item in work.items()]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally, time.perf_counter() - started


def replay(txns: list[list[str]]) -> tuple[MemorySink, int, float]:
    """One client's SQL through the CLI's engine and pipeline: its sink, rows, seconds."""
    lines = [workload.TABLE + "\n"] + [script(t) for t in txns]
    feed = changefeed(SINK)
    sink = MemorySink()
    started = time.perf_counter()
    summary = Pipeline(feed, sink, Warnings()).run(
        Engine().run(split_script("".join(lines).splitlines(keepends=True), "bench.sql"))
    )
    return sink, summary.rows, time.perf_counter() - started


def changes(server: Server, name: str) -> list[tuple[Any, ...]]:
    """A changefeed's row and DDL records, per partition in order (no checkpoints: a service
    sends one per request, the replay one per window)."""
    url = f"{server.http}/sim/v1/clusters/{name}/changefeeds/bench/messages"
    counts = httpx.get(url, params={"limit": 1, "decode": False}).json()["counts"]
    out = []
    for partition, count in sorted(counts.get("ticdc", {}).items(), key=lambda kv: int(kv[0])):
        start = 0
        while start < count:
            query = {"partition": partition, "from_offset": start, "limit": 10_000}
            found = httpx.get(url, params=query).json()["messages"]
            out += [
                (int(partition), m["key"], m["value"])
                for m in found
                if any(d["type"] != "checkpoint" for d in m["decoded"])
            ]
            start += len(found)
    return out


def replayed_changes(sink: MemorySink) -> list[tuple[Any, ...]]:
    """The replay's row and DDL records, as `changes` reads the service's."""
    b64 = base64.b64encode
    return [
        (r.partition, None if r.key is None else b64(r.key).decode(), b64(r.value or b"").decode())
        for r in sink.records()
        if b'"type":"TIDB_WATERMARK"' not in (r.value or b"")
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--scripts", type=int, default=200, help="transactions per client")
    args = parser.parse_args()
    server = Server.start(Path(tempfile.mkdtemp(prefix="ticdc-sim-bench-")) / "data")
    try:
        results = {}
        checks = {}
        for mode, run in (("http", over_http), ("mysql", over_mysql)):
            work = {f"{mode}-{c}": transactions(c, args.scripts) for c in range(args.clients)}
            for name in work:
                setup(server, name)
            tally, seconds = run(server, work)
            results[mode] = (tally, seconds)
            checks[mode] = changes(server, f"{mode}-0")
    finally:
        server.stop()
    sink, rows, replay_seconds = replay(transactions(0, args.scripts))
    expected = replayed_changes(sink)

    total = args.clients * args.scripts
    print(
        f"{args.clients} clients x {args.scripts} transactions of {ROWS_PER_TXN} row changes"
        f" (10-column mixed table), a memory canal-json changefeed each\n"
    )
    rates = {}
    for mode, (tally, seconds) in results.items():
        rates[mode] = tally.report(mode, seconds, total)
    replay_rate = rows / replay_seconds
    print(
        f"replay {args.scripts:>7,} txns  {replay_rate:>9,.0f} rows/s"
        "  (one client's SQL, no service)"
    )
    print()
    for mode in results:
        same = checks[mode] == expected
        print(f"  {mode}: client 0's changefeed {'==' if same else '!='} the replay's records")
    print(
        f"  http {rates['http'] / replay_rate:.2f} of replay; mysql"
        f" {rates['mysql'] / rates['http']:.2f} of http"
    )
    print()
    http_tally = results["http"][0]
    p99 = sorted(http_tally.latencies)[int(len(http_tally.latencies) * 0.99)] * 1000
    for target, met in [
        ("0 errors", not any(t.errors for t, _ in results.values())),
        ("p99 < 250 ms over HTTP", p99 < 250),
        (">= 20k rows/s over HTTP", rates["http"] >= 20_000),
        ("MySQL port >= 0.5 of HTTP", rates["mysql"] >= 0.5 * rates["http"]),
        ("changefeeds hold what the replay writes", all(c == expected for c in checks.values())),
    ]:
        print(f"  {'met ' if met else 'MISS'}  {target}")


if __name__ == "__main__":
    main()
