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
  (clients and connections are made before the clock starts, and this process's heap is
  frozen out of its collector while the clock runs: the run times the service's work, not
  the load generator's)
  * replay: the same SQL through the CLI's engine and pipeline, no service, in 3 fresh
    processes one after another, 3 runs each: the rate the service is measured beside,
    cold (the median of the first runs, each in a new process as a CLI run is: the target's
    measure) and warm (the median of the others, as a running service is).
  * pool: 8 pymysql connections (`--pool`) to ONE cluster, and the same to a private MariaDB
    (tests/support_mariadb.py) in the same run, each doing short transactions (BEGIN; 1-3
    UPDATE/INSERT/DELETE by primary key; COMMIT) on (a) rows of its own and (b) a hot set of
    rows every connection touches; a transaction that fails with 1213 (deadlock) or 1205
    (lock wait timeout) is rolled back and retried, as an application would.
Printed per mode: transactions, rows/s, p50/p99 latency per transaction, errors; and whether
a client's changefeed holds the same row and DDL records as the replay; for the pool,
transactions/s, p50/p99 latency (retries included), deadlocks, lock-wait timeouts, lock waits
(MariaDB's Innodb_row_lock_waits; the service's ticdc_sim_lock_waits_total on /metrics) and
the ratio to MariaDB. Targets (2 cores): 0 errors, >= 20k rows/s and p99 < 100 ms over
HTTP, HTTP >= 0.8 of the replay's rate, MySQL >= 0.9 of the HTTP rate.

    python bench/service.py --modes pool --pool-txns 300
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import concurrent.futures
import contextlib
import functools
import gc
import multiprocessing
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import httpx  # noqa: E402
import pymysql  # noqa: E402
import workload  # noqa: E402

from support_mariadb import MariaDB  # noqa: E402
from support_service import Server  # noqa: E402
from ticdc_sim.config import changefeed  # noqa: E402
from ticdc_sim.errors import Warnings  # noqa: E402
from ticdc_sim.generator.sql.engine import Engine  # noqa: E402
from ticdc_sim.generator.sql.script import split_script  # noqa: E402
from ticdc_sim.pipeline import Pipeline  # noqa: E402
from ticdc_sim.sinks.memory import MemorySink  # noqa: E402

SINK = "memory://?protocol=canal-json&enable-tidb-extension=true&partition-num=3"
ROWS_PER_TXN = 100  # about: a range may take in rows deleted before
LOCK_WAIT_S = 5  # innodb_lock_wait_timeout of both servers in the pool


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

    def percentiles(self) -> tuple[float, float]:
        """p50 and p99 of the latencies, in ms."""
        lat = sorted(self.latencies)
        return statistics.median(lat) * 1000, lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000

    def report(self, mode: str, seconds: float, transactions: int) -> float:
        rows = self.rows
        p50, p99 = self.percentiles()
        print(
            f"{mode:<6} {transactions:>7,} txns  {rows / seconds:>9,.0f} rows/s"
            f"  p50 {p50:6.1f} ms  p99 {p99:6.1f} ms  errors {len(self.errors)}"
        )
        for error in self.errors[:3]:
            print(f"         {error}")
        return rows / seconds


async def http_client(
    client: httpx.AsyncClient, url: str, txns: list[list[str]], tally: Tally
) -> None:
    for statements in txns:
        started = time.perf_counter()
        response = await client.post(url, content=script(statements))
        tally.latencies.append(time.perf_counter() - started)
        result = response.json() if response.status_code == 200 else {}
        if not result.get("ok"):
            tally.errors.append(f"{url}: {response.status_code} {response.text[:200]}")
        tally.rows += sum(t["rows"] for t in result.get("transactions", ()))


def over_http(server: Server, work: dict[str, list[list[str]]]) -> tuple[Tally, float]:
    tally = Tally()

    async def everyone() -> float:
        # the clients are made before the clock starts: httpx builds an SSL context for
        # each (~17 ms), which is the load generator's cost, not the service's
        clients = [httpx.AsyncClient(timeout=60) for _ in work]
        try:
            started = time.perf_counter()
            await asyncio.gather(
                *(
                    http_client(client, f"{server.http}/sim/v1/clusters/{name}/sql", txns, tally)
                    for client, (name, txns) in zip(clients, work.items(), strict=True)
                )
            )
            return time.perf_counter() - started
        finally:
            for client in clients:
                await client.aclose()

    return tally, asyncio.run(everyone())


def over_mysql(server: Server, work: dict[str, list[list[str]]]) -> tuple[Tally, float]:
    tally = Tally()

    def client(conn: Any, name: str, txns: list[list[str]]) -> None:
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

    # connected before the clock starts, as the HTTP clients are made
    threads = [
        threading.Thread(
            target=client, args=(server.mysql(f"{name}.root", autocommit=True), name, txns)
        )
        for name, txns in work.items()
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally, time.perf_counter() - started


def replays(txns: list[list[str]], processes: int = 3) -> tuple[list[Any], int, float, float]:
    """`replay` in `processes` new processes, one after another: its records (the last's),
    rows, and the median seconds of the cold runs and of the warm ones. New processes, as
    a CLI run starts: this one's heap (the clients, their work) made the cold run's speed
    swing by a fifth from run to run."""
    done = []
    spawn = multiprocessing.get_context("spawn")
    for _ in range(processes):
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
            done.append(pool.submit(replay, txns).result())
    records, rows, _ = done[-1]
    cold = statistics.median(seconds[0] for _, _, seconds in done)
    warm = statistics.median(s for _, _, seconds in done for s in seconds[1:])
    return records, rows, cold, warm


def replay(txns: list[list[str]], runs: int = 3) -> tuple[list[Any], int, list[float]]:
    """One client's SQL through the CLI's engine and pipeline, `runs` times in this process
    (the first cold, as a CLI run is; the others warm, as a service is): its records (as
    `replayed_changes`), rows, and each run's seconds."""
    lines = [workload.TABLE + "\n"] + [script(t) for t in txns]
    seconds = []
    for _ in range(runs):
        feed = changefeed(SINK)
        sink = MemorySink()
        started = time.perf_counter()
        summary = Pipeline(feed, sink, Warnings()).run(
            Engine().run(split_script("".join(lines).splitlines(keepends=True), "bench.sql"))
        )
        seconds.append(time.perf_counter() - started)
    return replayed_changes(sink), summary.rows, seconds


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


# -- pool: concurrent short transactions on one cluster, beside MariaDB ----------------------

POOL_TABLE = "CREATE TABLE pool (id INT PRIMARY KEY, v BIGINT NOT NULL, note VARCHAR(32))"
POOL_ROWS = 1_000  # rows loaded before the run: each connection's own slice comes from here
HOT_ROWS = 8  # the overlapping scenario's shared rows (ids 1..HOT_ROWS)
RETRIED = {1213: "deadlocks", 1205: "lock-wait timeouts"}  # an application retries these
MAX_ATTEMPTS = 50


def pool_transactions(
    scenario: str, connection: int, connections: int, count: int
) -> list[list[str]]:
    """A connection's transactions: 1-3 row changes by primary key each. UPDATEs touch rows
    of its own slice (`disjoint`) or the hot set (`overlapping`), in random order, so two
    connections can wait on each other; INSERTs add rows of its own id range and DELETEs
    remove those again, so they never meet another connection's."""
    rng = random.Random(f"pool:{scenario}:{connection}")
    per = POOL_ROWS // connections
    own = range(1 + connection * per, 1 + (connection + 1) * per)
    mine = range(1, 1 + HOT_ROWS) if scenario == "overlapping" else own
    fresh, inserted = 1_000_000 + connection * 100_000, []
    out = []
    for i in range(count):
        statements = ["BEGIN"]
        for _ in range(rng.randint(1, 3)):
            kind = rng.random()
            if kind < 0.15:
                fresh += 1
                inserted.append(fresh)
                statements.append(f"INSERT INTO pool VALUES ({fresh}, 0, 'new {i}')")
            elif kind < 0.3 and inserted:
                statements.append(f"DELETE FROM pool WHERE id = {inserted.pop(0)}")
            else:
                key = rng.choice(mine)
                statements.append(
                    f"UPDATE pool SET v = v + 1, note = 'c{connection} {i}' WHERE id = {key}"
                )
        statements.append("COMMIT")
        out.append(statements)
    return out


class PoolTally(Tally):
    def __init__(self) -> None:
        super().__init__()
        self.retried = {code: 0 for code in RETRIED}

    def pool_report(self, label: str, seconds: float, lock_waits: int) -> float:
        p50, p99 = self.percentiles()
        rate = len(self.latencies) / seconds
        waits = f"{lock_waits:,}"
        print(
            f"  {label:<20} {rate:>8,.0f} txns/s  p50 {p50:6.1f} ms  p99 {p99:7.1f} ms"
            + "".join(f"  {name} {self.retried[code]:>4}" for code, name in RETRIED.items())
            + f"  lock waits {waits:>5}  errors {len(self.errors)}"
        )
        for error in self.errors[:3]:
            print(f"      {error}")
        return rate


def pool_run(connect: Any, work: list[list[list[str]]]) -> tuple[PoolTally, float]:
    """Each connection's transactions on a thread of its own, retried on 1213 and 1205."""
    tally = PoolTally()
    connections = [connect() for _ in work]

    def client(conn: Any, txns: list[list[str]]) -> None:
        with conn.cursor() as cur:
            for statements in txns:
                started = time.perf_counter()
                for _ in range(MAX_ATTEMPTS):
                    try:
                        for statement in statements:
                            cur.execute(statement)
                        break
                    except pymysql.err.OperationalError as e:
                        cur.execute("ROLLBACK")
                        if e.args[0] not in RETRIED:
                            with tally.lock:
                                tally.errors.append(f"{e.args[0]}: {e.args[1]}")
                            break
                        with tally.lock:
                            tally.retried[e.args[0]] += 1
                    except pymysql.err.MySQLError as e:  # counted and shown, the run goes on
                        cur.execute("ROLLBACK")
                        with tally.lock:
                            tally.errors.append(f"{e}")
                        break
                else:
                    with tally.lock:
                        tally.errors.append(f"gave up after {MAX_ATTEMPTS} attempts")
                with tally.lock:
                    tally.latencies.append(time.perf_counter() - started)

    threads = [
        threading.Thread(target=client, args=(conn, txns))
        for conn, txns in zip(connections, work, strict=True)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    for conn in connections:
        conn.close()
    return tally, seconds


def innodb_lock_waits(connect: Any) -> int:
    """MariaDB's Innodb_row_lock_waits."""
    with connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_row_lock_waits'")
        return int(cur.fetchone()[1])


def sim_lock_waits(server: Server, cluster: str) -> int:
    """The cluster's ticdc_sim_lock_waits_total, read off the service's /metrics."""
    series = f'ticdc_sim_lock_waits_total{{cluster="{cluster}"}} '
    for line in httpx.get(f"{server.http}/metrics").text.splitlines():
        if line.startswith(series):
            return int(float(line[len(series) :]))
    raise LookupError(f"/metrics has no {series.strip()}")


def pool_load(conn: Any) -> None:
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS pool")
        cur.execute(POOL_TABLE)
        values = ", ".join(f"({i}, 0, 'row {i}')" for i in range(1, POOL_ROWS + 1))
        cur.execute(f"INSERT INTO pool VALUES {values}")


def pool(
    targets: dict[str, tuple[Any, Any]], connections: int, count: int
) -> dict[str, dict[str, float]]:
    """Both scenarios on every target (name: a connect function and its lock waits so
    far); txns/s by scenario."""
    rates: dict[str, dict[str, float]] = {}
    print(
        f"pool: {connections} connections x {count} transactions (BEGIN; 1-3 row changes by"
        f" primary key; COMMIT), retried on 1213/1205"
    )
    for scenario in ("disjoint", "overlapping"):
        work = [pool_transactions(scenario, c, connections, count) for c in range(connections)]
        for name, (connect, waits) in targets.items():
            with connect() as admin:
                pool_load(admin)
            before = waits()
            tally, seconds = pool_run(connect, work)
            rate = tally.pool_report(f"{name} {scenario}", seconds, waits() - before)
            rates.setdefault(name, {})[scenario] = rate
    if "MariaDB" in rates:
        for scenario, rate in rates["sim"].items():
            print(f"  {scenario}: sim {rate / rates['MariaDB'][scenario]:.2f} of MariaDB")
    print()
    return rates


def over_pool(server: Server, connections: int, count: int) -> dict[str, dict[str, float]]:
    """The pool on cluster `pool` of the service (a memory changefeed, as the others'), and
    on a private MariaDB, one after the other on the same machine."""
    httpx.post(f"{server.http}/sim/v1/clusters", json={"id": "pool"}).raise_for_status()
    body = {"namespace": "pool", "changefeed_id": "bench", "sink_uri": SINK}
    httpx.post(f"{server.http}/api/v2/changefeeds", json=body).raise_for_status()
    targets: dict[str, tuple[Any, Any]] = {
        "sim": (
            lambda: server.mysql("pool.root", autocommit=True),
            lambda: sim_lock_waits(server, "pool"),
        )
    }
    maria, why = MariaDB.start(f"--innodb-lock-wait-timeout={LOCK_WAIT_S}")
    if maria is None:
        print(f"pool: no MariaDB beside the sim ({why})")
    else:
        with maria.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE test")
        port = maria.port
        connect = functools.partial(
            pymysql.connect,
            host="127.0.0.1",
            port=port,
            user="root",
            database="test",
            autocommit=True,
        )
        targets["MariaDB"] = (connect, functools.partial(innodb_lock_waits, connect))
    try:
        return pool(targets, connections, count)
    finally:
        if maria is not None:
            maria.stop()


@contextlib.contextmanager
def settled_heap() -> Iterator[None]:
    """This process's heap (the clients, their work, what the replay imported) out of its
    collector's walk while the clock runs: a full collection of it, 30-90 ms, stops every
    client at once and was counted as the service's latency (the p99 over HTTP)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--scripts", type=int, default=200, help="transactions per client")
    parser.add_argument("--modes", default="http,mysql,pool", help="of http, mysql, pool")
    parser.add_argument("--pool", type=int, default=8, help="the pool's connections")
    parser.add_argument("--pool-txns", type=int, default=200, help="transactions per connection")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(modes) - {"http", "mysql", "pool"}
    if unknown:
        parser.error(f"--modes: unknown {', '.join(sorted(unknown))} (http, mysql, pool)")
    data = Path(tempfile.mkdtemp(prefix="ticdc-sim-bench-")) / "data"
    # a cluster per client and mode, the pool's and `default`: over the 64 a service holds
    clusters = str(len(modes) * args.clients + 2)
    server = Server.start(data, lock_wait_s=str(LOCK_WAIT_S), max_clusters=clusters)
    try:
        results = {}
        checks = {}
        for mode, run in (("http", over_http), ("mysql", over_mysql)):
            if mode not in modes:
                continue
            work = {f"{mode}-{c}": transactions(c, args.scripts) for c in range(args.clients)}
            for name in work:
                setup(server, name)
            with settled_heap():
                tally, seconds = run(server, work)
            results[mode] = (tally, seconds)
            checks[mode] = changes(server, f"{mode}-0")
        if "pool" in modes:
            with settled_heap():
                over_pool(server, args.pool, args.pool_txns)
    finally:
        server.stop()
    if results:
        report(results, checks, args.clients, args.scripts)


def report(
    results: dict[str, tuple[Tally, float]],
    checks: dict[str, list[tuple[Any, ...]]],
    clients: int,
    scripts: int,
) -> None:
    expected, rows, cold, warm = replays(transactions(0, scripts))
    warm_rate = rows / warm
    print(
        f"{clients} clients x {scripts} transactions of {ROWS_PER_TXN} row changes"
        f" (10-column mixed table), a memory canal-json changefeed each\n"
    )
    rates = {
        mode: tally.report(mode, seconds, clients * scripts)
        for mode, (tally, seconds) in results.items()
    }
    replay_rate = rows / cold
    print(
        f"replay {scripts:>7,} txns  {replay_rate:>9,.0f} rows/s"
        "  (one client's SQL, no service: median of 3 new processes' first runs)"
    )
    print(f"  warm {scripts:>7,} txns  {warm_rate:>9,.0f} rows/s  (median of their 6 later runs)")
    print()
    for mode in results:
        same = checks[mode] == expected
        print(f"  {mode}: client 0's changefeed {'==' if same else '!='} the replay's records")
    http, mysql = rates.get("http"), rates.get("mysql")
    if http:
        print(f"  http {http / replay_rate:.2f} of replay ({http / warm_rate:.2f} of warm)", end="")
        print(f"; mysql {mysql / http:.2f} of http" if mysql else "")
    print()
    verdicts = [
        ("0 errors", not any(t.errors for t, _ in results.values())),
        ("changefeeds hold what the replay writes", all(c == expected for c in checks.values())),
    ]
    if http:
        _, p99 = results["http"][0].percentiles()
        verdicts += [
            (">= 20k rows/s over HTTP", http >= 20_000),
            (f"p99 < 100 ms over HTTP ({p99:.0f} ms)", p99 < 100),
            (
                f"HTTP >= 0.8 of the replay's rate ({http / replay_rate:.2f})",
                http >= 0.8 * replay_rate,
            ),
        ]
        if mysql:
            verdicts.append(
                (f"MySQL port >= 0.9 of HTTP ({mysql / http:.2f})", mysql >= 0.9 * http)
            )
    for target, met in verdicts:
        print(f"  {'met ' if met else 'MISS'}  {target}")


if __name__ == "__main__":
    main()
