"""The Spark engine against the one-process engine: the same records, byte for byte, on
local[1], local[2] and a standalone cluster, through every output (issue 14)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from support_oracle import AVRO_TOPICS
from ticdc_sim.cli import app
from ticdc_sim.config import changefeed
from ticdc_sim.encoders.avro import header
from ticdc_sim.errors import ConfigError, SimError
from ticdc_sim.generator.workload import Generator, parse
from ticdc_sim.pipeline import Pipeline, registry_file
from ticdc_sim.sinks import Record
from ticdc_sim.sinks.jsonl import read_jsonl
from ticdc_sim.sinks.kafka import read_topic
from ticdc_sim.sinks.memory import MemorySink
from ticdc_sim.sinks.parquet import read_parquet

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed")
if shutil.which("java") is None:
    pytest.skip("Spark needs a Java runtime (java is not on PATH)", allow_module_level=True)

from ticdc_sim.spark import generate, job, records, session  # noqa: E402
from ticdc_sim.testing.broker import Broker  # noqa: E402

# py4j (pyspark's bridge to the JVM) leaves its sockets to the garbage collector
pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

# three tables (a reference between them, key updates of an integer handle and of a unique
# key, a `_tidb_rowid` table), a storyline ALTER, multi-table transactions, hot keys (fixed
# ones too), unique Faker values and templates; a low commit rate, so the run spans many
# ticks of the checkpoint ticker (ranges)
SPEC = """
seed: 11
tables:
  - ddl: >-
      CREATE TABLE users (id BIGINT PRIMARY KEY, name VARCHAR(40), score DOUBLE,
      email VARCHAR(80), UNIQUE KEY (email))
    rows: 300
    keys: {hot: {count: 2, share: 0.3}, zipf: 1.2}
    columns:
      name: {faker: name}
      email: {faker: email}
  - ddl: >-
      CREATE TABLE orders (id BIGINT PRIMARY KEY, user_id BIGINT, amount DECIMAL(10,2),
      note TEXT, placed DATETIME(3))
    rows: 500
    weight: 3
    columns:
      user_id: {ref: users.id}
      amount: {uniform: [1, 500]}
      note: {faker: sentence, null_rate: 0.3}
    update: [amount, note]
    key_updates: {share: 0.1}
  - ddl: CREATE TABLE tags (id INT PRIMARY KEY NONCLUSTERED, tag VARCHAR(30), UNIQUE KEY (tag))
    rows: 50
    weight: 0.5
    key_updates: {share: 0.3, columns: [tag]}
    columns:
      tag: {template: "{word}-{row}"}
operations:
  events: 6000
  mix: {insert: 3, update: 5, delete: 2}
  transaction_size: {choice: {1: 5, 3: 3, 12: 1}}
  multi_table: 0.3
  keys: {hotspot: {keys: 0.05, share: 0.6}}
  commit_rate: 150
storyline:
  - at_event: 2500
    ddl: ALTER TABLE orders ADD COLUMN coupon VARCHAR(12) DEFAULT 'none'
    columns:
      coupon: {choice: [SPRING, VIP]}
    update: [amount, note, coupon]
"""
FEEDS = [
    "?protocol=canal-json&enable-tidb-extension=true&partition-num=3",
    "?protocol=open-protocol&partition-num=4&max-batch-size=8",
    "?protocol=craft&partition-num=2&max-batch-size=8",
    "?protocol=maxwell&partition-num=2",
    "?protocol=debezium&enable-tidb-extension=true&partition-num=2",
]
DISPATCH = """
[sink]
dispatchers = [
  {matcher = ['*.orders'], partition = "index-value"},
  {matcher = ['*.users'], partition = "ts"},
]
"""

Row = tuple[str, int, int, bytes | None, bytes | None, tuple[tuple[str, bytes], ...]]


def local_records(query: str, toml: str | None = None) -> list[Row]:
    sink = MemorySink()
    feed = changefeed("memory://" + query, toml)
    Pipeline(feed, sink).run(Generator(parse(yaml.safe_load(SPEC))).events())
    return [_row(r) for r in sink.records()]


def _row(r: Record) -> Row:
    return (r.topic, r.partition, r.offset, r.key, r.value, tuple(sorted(r.headers.items())))


def spark_records(master: str, query: str, toml: str | None = None) -> list[Row]:
    spark = _session(master)
    df = records(spark, parse(yaml.safe_load(SPEC)), "blackhole://" + query, toml)
    try:
        rows = [
            (
                r["topic"],
                r["partition"],
                r["offset"],
                _bytes(r["key"]),
                _bytes(r["value"]),
                tuple(sorted((k, bytes(v)) for k, v in dict(r["headers"]).items())),
            )
            for r in df.collect()
        ]
    finally:
        spark.catalog.clearCache()
    return sorted(rows)


def _bytes(value: bytes | bytearray | None) -> bytes | None:
    return None if value is None else bytes(value)  # Spark's rows hold bytearrays


def same(got: list[Row], expected: list[Row], what: str) -> None:
    """The same records; otherwise the first that differs, readable."""
    assert len(got) == len(expected), what
    if digest(got) != digest(expected):
        first = next(i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b)
        pytest.fail(f"{what}: record {first} differs:\n{got[first]!r}\n{expected[first]!r}")


def digest(rows: list[Row]) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update(repr(row).encode())
    return h.hexdigest()


_current: dict[str, object] = {}


def _session(master: str):  # type: ignore[no-untyped-def]
    """One SparkContext a process: a different master stops the one before."""
    if _current.get("master") != master:
        if "spark" in _current:
            _current["spark"].stop()  # type: ignore[attr-defined]
        _current.update(master=master, spark=session(master))
    return _current["spark"]


@pytest.fixture(scope="module", autouse=True)
def _stop_spark() -> Iterator[None]:
    yield
    if "spark" in _current:
        _current.pop("spark").stop()  # type: ignore[attr-defined]
        _current.clear()


@pytest.mark.parametrize("query", FEEDS)
def test_local_1_and_local_2_give_the_one_process_records(query: str) -> None:
    expected = local_records(query)
    assert len({(r[0], r[1]) for r in expected}) > 1
    assert any(r[4] is not None and b"coupon" in r[4] for r in expected)  # the storyline ran
    for master in ("local[1]", "local[2]"):
        same(spark_records(master, query), expected, master)


def test_dispatchers_from_the_changefeed_config_agree() -> None:
    query = FEEDS[0]
    same(spark_records("local[2]", query, DISPATCH), local_records(query, DISPATCH), "local[2]")


@pytest.mark.parametrize(
    "toml", ["enable-old-value = false\n", "[sink.kafka-config]\noutput-raw-change-event = true\n"]
)
def test_the_changefeeds_capture_settings_agree(toml: str) -> None:
    """Old values off and raw change events: both engines capture as the changefeed says."""
    query = FEEDS[1]
    expected = local_records(query, toml)
    assert expected != local_records(query)
    same(spark_records("local[2]", query, toml), expected, "local[2]")


def test_canal_packs_the_batches_the_one_process_packs() -> None:
    query = "?protocol=canal&partition-num=2"  # a record per batch, as craft's are
    expected = local_records(query)
    assert any(r[4] is not None and r[4].count(b"rowsCount") > 1 for r in expected)
    same(spark_records("local[2]", query), expected, "local[2]")


NO_BOOTSTRAPS = "[sink]\nsend-bootstrap-interval-in-sec = 0\nsend-bootstrap-in-msg-count = 0\n"


def test_simple_avro_without_its_bootstrap_schedule() -> None:
    query = "?protocol=simple&encoding-format=avro&partition-num=2"
    expected = local_records(query, NO_BOOTSTRAPS)
    same(spark_records("local[2]", query, NO_BOOTSTRAPS), expected, "local[2]")
    with pytest.raises(ConfigError, match="BOOTSTRAP schedule runs with --engine local only"):
        spark_records("local[2]", "?protocol=simple")


def test_ranges_start_at_ticks_and_cover_the_run() -> None:
    spec = parse(yaml.safe_load(SPEC))
    feed = changefeed("blackhole://" + FEEDS[0])
    from ticdc_sim.spark import _Counting

    plan = job.plan(spec, feed, 4, Pipeline(feed, _Counting()), None)
    copy = job.Replica(spec, feed)
    assert plan.starts[0] == 0 and plan.starts[-1] == copy.txns
    assert plan.ranges > 4  # enough ticks to cut
    for start in plan.starts[1:-1]:  # the first transaction of a new 1 s cell
        cell = (copy.ms(start) - copy.origin_ms) // 1000
        assert (copy.ms(start - 1) - copy.origin_ms) // 1000 < cell


@pytest.mark.parametrize("ranges", [1, 7, 40])
def test_each_range_gets_a_partition_of_its_own(ranges: int) -> None:
    """by_range: range r's rows, and only they, in Spark partition r (no sampling job)."""
    from pyspark.sql import functions as F

    spark = _session("local[2]")
    rows = spark.range(ranges * 50).selectExpr(f"cast(id % {ranges} as int) as range")
    placed = (
        job.by_range(rows, ranges)
        .select("range", F.spark_partition_id().alias("at"))
        .distinct()
        .collect()
    )
    assert sorted((r["range"], r["at"]) for r in placed) == [(r, r) for r in range(ranges)]


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, ["generate", *args, "--no-progress"])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    return path


@pytest.mark.parametrize("scheme", ["parquet", "jsonl"])
def test_cli_writes_the_local_engines_files(spec_file: Path, tmp_path: Path, scheme: str) -> None:
    _session("local[2]")  # the CLI takes the running session
    query = FEEDS[1]
    one = cli("--workload", str(spec_file), "--sink-uri", f"{scheme}://{tmp_path / 'one'}{query}")
    out = cli(
        "--workload",
        str(spec_file),
        "--sink-uri",
        f"{scheme}://{tmp_path / 'spark'}{query}",
        "--engine",
        "spark",
        "--master",
        "local[2]",
    )
    assert out == one and re.fullmatch(
        r"\d+ rows, 4 DDL, \d+ checkpoints -> records per topic: ticdc: \d+\n", out
    )
    read = read_parquet if scheme == "parquet" else read_jsonl
    expected = [_row(r) for r in read(str(tmp_path / "one"))]
    assert [_row(r) for r in read(str(tmp_path / "spark"))] == expected
    assert not (tmp_path / ".spark.partial").exists()
    assert not (tmp_path / ".spark.partial.ranges").exists()  # the ranges' records, gone
    if scheme == "parquet":  # Spark's files, nothing else
        names = {p.suffix for p in (tmp_path / "spark").rglob("*") if p.is_file()}
        assert names == {".parquet"}


def test_cli_to_kafka_gives_each_partition_in_order(broker: Broker, tmp_path: Path) -> None:
    _session("local[2]")
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    topic = f"spark-{os.getpid()}-{time.monotonic_ns()}"
    query = FEEDS[0]
    one = cli(
        "--workload", str(path), "--sink-uri", f"jsonl://{tmp_path / 'one'}{query}&topic={topic}"
    )
    out = cli(
        "--workload",
        str(path),
        "--sink-uri",
        f"kafka://{broker.bootstrap}/{topic}{query}",
        "--engine",
        "spark",
        "--master",
        "local[2]",
    )
    assert out == one  # the same summary line, from Spark's count of the records
    expected = [_row(r) for r in read_jsonl(str(tmp_path / "one"))]
    got = sorted(
        (
            _row(r)
            for r in read_topic(changefeed(f"kafka://{broker.bootstrap}/{topic}{query}").sink)
        ),
        key=lambda r: (r[0], r[1], r[2]),
    )
    assert got == expected


def test_what_the_spark_engine_refuses_is_named(spec_file: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["generate", "--workload", str(spec_file), "--engine", "spark", "--no-progress"]
    for uri, message in [
        ("memory://?protocol=canal-json", "--engine spark writes parquet://"),
        (
            f"jsonl://{tmp_path / 'x'}?protocol=canal-json",
            "[faults] are simulated by --engine local only",
        ),
    ]:
        config = tmp_path / "faults.toml"
        config.write_text("[faults]\nduplicate-rate = 0.1\n")
        extra = ["--config", str(config)] if "faults" in message else []
        result = runner.invoke(app, [*base, "--sink-uri", uri, *extra])
        assert result.exit_code == 1, result.output
        assert message in result.output
    result = runner.invoke(app, [*base[:-3], "--engine", "turbo"])
    assert result.exit_code == 2
    assert "Error: Invalid value for '--engine': 'turbo': local or spark" in result.stderr
    uri = f"parquet://{tmp_path / 'y'}?protocol=canal-json"
    for master in ("nowhere", "local[0]", "spark:/x"):  # refused before a JVM starts
        result = runner.invoke(app, [*base, "--sink-uri", uri, "--master", master])
        assert result.exit_code == 1, result.output
        assert f"spark master {master!r}: local, local[N]" in result.output
        assert not (tmp_path / "y").exists() and not (tmp_path / ".y.partial").exists()


def test_the_cli_on_spark_prints_what_the_one_process_run_prints(spec_file: Path) -> None:
    """Issue 25: a Spark run's stderr is its summary line, as the one-process run's (no
    log4j start-up chatter, no JVM warnings), and nothing on stdout."""
    uri = "blackhole://?protocol=canal-json&enable-tidb-extension=true"
    local = CliRunner().invoke(app, ["generate", "--workload", str(spec_file), "--sink-uri", uri])
    assert local.exit_code == 0, local.output
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = ["generate", "--workload", str(spec_file), "--sink-uri", uri, "--no-progress"]
    args += ["--engine", "spark", "--master", "local[1]"]
    run = subprocess.run(
        [sys.executable, "-m", "ticdc_sim", *args], capture_output=True, env=env, timeout=600
    )
    assert (run.returncode, run.stdout) == (0, b""), run.stderr.decode()[-3000:]
    assert run.stderr.decode() == local.stderr


def test_a_setting_the_jvm_refuses_is_its_reason_in_one_line(spec_file: Path) -> None:
    """Issue 25: spark-submit's reason, not a frame of its stack (was `spark master local[1]:
    spark job: spark: the JVM did not start: at org.apache.spark.deploy.SparkSubmitArguments
    .error(...)`, the master blamed for a setting)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = ["generate", "--workload", str(spec_file), "--no-progress", "--engine", "spark"]
    args += ["--sink-uri", "blackhole://?protocol=canal-json", "--master", "local[1]"]
    args += ["--conf", "spark.driver.memory="]
    run = subprocess.run(
        [sys.executable, "-m", "ticdc_sim", *args], capture_output=True, env=env, timeout=600
    )
    assert (run.returncode, run.stdout) == (1, b"")
    assert run.stderr.decode() == (
        "error: spark: the JVM did not start: org.apache.spark.SparkException: Driver memory"
        " must be a positive number\n"
    )


def test_a_task_error_is_one_line() -> None:
    spark = _session("local[2]")

    def fail(batches):  # type: ignore[no-untyped-def]
        for _ in batches:
            raise SimError("kafka 127.0.0.1:1: cannot reach the brokers")
        yield from ()

    with pytest.raises(Exception) as caught:
        spark.range(2).mapInArrow(fail, "id long").collect()
    error = job.failure(caught.value)  # type: ignore[arg-type]
    assert str(error) == "kafka 127.0.0.1:1: cannot reach the brokers"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the {what} exited: {process.stdout.read().decode()[-2000:]}")  # type: ignore[union-attr]
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    pytest.fail(f"the {what} did not listen on {port}")


def test_a_standalone_cluster_gives_the_same_records(tmp_path: Path) -> None:
    """A real master and worker from pyspark's own spark-class, on loopback."""
    home = Path(pyspark.__file__).parent
    spark_class = home / "bin" / "spark-class"
    if not spark_class.exists():
        pytest.skip(f"{spark_class} is missing from the pyspark wheel")
    if "spark" in _current:  # the cluster's driver is this process
        _current.pop("spark").stop()  # type: ignore[attr-defined]
        _current.clear()
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOG_DIR": str(tmp_path / "logs"),
        "SPARK_WORKER_DIR": str(tmp_path / "work"),
    }
    master_port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    started: list[subprocess.Popen[bytes]] = []
    try:
        master = subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
            + ["--port", str(master_port), "--webui-port", str(ui)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        started.append(master)
        _wait_port(master_port, master, "master")
        url = f"spark://127.0.0.1:{master_port}"
        worker = subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.worker.Worker", url]
            + ["--host", "127.0.0.1", "--cores", "2", "--memory", "1g"]
            + ["--webui-port", str(worker_ui), "--work-dir", str(tmp_path / "work")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        started.append(worker)
        query = FEEDS[0]
        same(spark_records(url, query), local_records(query), url)
    finally:
        if "spark" in _current:
            _current.pop("spark").stop()  # type: ignore[attr-defined]
            _current.clear()
        for process in reversed(started):
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()


CHANGES_DDL = (
    "CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR(20), price DECIMAL(10,2),"
    " at DATETIME(3), data BLOB, UNIQUE KEY u_name (name))"
)
CHANGES_SQL = """
INSERT INTO items VALUES (1,'a',1.50,'2024-01-01 00:00:00.123',x'00ff'),(2,'b',2,NULL,NULL),
  (3,'c',3.25,'2024-01-02 10:00:00',x'01');
UPDATE items SET price = price + 1 WHERE id = 2;
BEGIN;
UPDATE items SET id = 10 WHERE id = 1;
INSERT INTO items VALUES (5,'e',1,NULL,NULL);
COMMIT;
UPDATE items SET name = 'z' WHERE id = 3;
DELETE FROM items WHERE id = 2;
"""
ITEMS = "struct<id:long,name:string,price:decimal(10,2),at:string,data:binary>"


def _item(id_: int, name: str, price: str, at: str | None, data: bytes | None) -> dict:
    return {"id": id_, "name": name, "price": Decimal(price), "at": at, "data": data}


@pytest.mark.parametrize(
    "toml",
    [None, "enable-old-value = false\n", "[sink.kafka-config]\noutput-raw-change-event = true\n"],
)
def test_records_from_changes_are_those_of_the_sql_engine(toml: str | None) -> None:
    """A user's DataFrame of row changes (key-changing updates unsplit) gives the records
    the SQL engine's changelog of the same statements gives: same values, same order (a
    moved primary key is a delete and an insert in the sorter's order), the update of a
    unique key split as TiCDC splits it, and the changefeed's capture settings honoured."""
    from ticdc_sim.generator.sql.engine import Engine, EngineConfig
    from ticdc_sim.generator.sql.script import split_script
    from ticdc_sim.model.events import DDLEvent
    from ticdc_sim.model.tso import compose_ts, physical_ms
    from ticdc_sim.spark.changes import records_from_changes

    query = FEEDS[1]
    feed = changefeed("memory://" + query, toml)
    engine = Engine(EngineConfig(database="test"))
    script = (CHANGES_DDL + ";\n" + CHANGES_SQL).splitlines(keepends=True)
    events = list(engine.run(split_script(script)))
    ddl, rows = events[0], events[1:]
    assert isinstance(ddl, DDLEvent) and ddl.table_info is not None
    stamps = sorted({e.commit_ts for e in rows})
    a = _item(1, "a", "1.50", "2024-01-01 00:00:00.123", b"\x00\xff")
    b = _item(2, "b", "2.00", None, None)
    c = _item(3, "c", "3.25", "2024-01-02 10:00:00.000", b"\x01")
    b2 = {**b, "price": Decimal("3.00")}
    changes = [
        (stamps[0], "insert", None, a),
        (stamps[0], "insert", None, b),
        (stamps[0], "insert", None, c),
        (stamps[1], "update", b, b2),
        (stamps[2], "update", a, {**a, "id": 10}),
        (stamps[2], "insert", None, _item(5, "e", "1.00", None, None)),
        (stamps[3], "update", c, {**c, "name": "z"}),
        (stamps[4], "delete", b2, None),
    ]
    spark = _session("local[2]")
    df = spark.createDataFrame(changes, f"commit_ts long, op string, before {ITEMS}, after {ITEMS}")
    got = records_from_changes(spark, df, CHANGES_DDL, "blackhole://" + query, toml)
    try:
        rows_got = sorted(
            (
                r["topic"],
                r["partition"],
                r["offset"],
                _bytes(r["key"]),
                _bytes(r["value"]),
                tuple(sorted((k, bytes(v)) for k, v in dict(r["headers"]).items())),
            )
            for r in got.collect()
        )
    finally:
        spark.catalog.clearCache()
    ts = compose_ts(physical_ms(stamps[0]) - 1, 1)  # the CREATE TABLE, 1 ms before
    created = replace(
        ddl, start_ts=ts - 1, commit_ts=ts, table_info=ddl.table_info.evolve(update_ts=ts)
    )
    sink = MemorySink()
    Pipeline(feed, sink).run([created, *rows])
    same(rows_got, [_row(r) for r in sink.records()], "records_from_changes")


def test_bad_changes_are_named() -> None:
    from ticdc_sim.spark.changes import records_from_changes

    spark = _session("local[2]")
    a = _item(1, "a", "1.50", None, None)
    cases = [
        ([(1 << 40, "upsert", None, a)], "op 'upsert' (insert, update, delete)"),
        ([(1 << 40, "insert", a, a)], "an insert has an after image and no before"),
        (
            [(1 << 40, "insert", None, {**a, "name": "x" * 30})],
            "after.name: ERROR 1406 (22001): Data too long",
        ),
    ]
    for rows, message in cases:
        df = spark.createDataFrame(
            rows, f"commit_ts long, op string, before {ITEMS}, after {ITEMS}"
        )
        with pytest.raises(SimError, match=re.escape(message)):
            records_from_changes(spark, df, CHANGES_DDL)
        spark.catalog.clearCache()
    df = spark.createDataFrame(
        [(1 << 40, "insert", a)], f"commit_ts long, op string, after {ITEMS}"
    )
    with pytest.raises(SimError, match="no column 'before'"):
        records_from_changes(spark, df, CHANGES_DDL)


SEEDED = """
seed: 5
tables:
  - ddl: >-
      CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner VARCHAR(30), balance DECIMAL(12,2),
      opened DATETIME, note TEXT)
    initial_from: {path: accounts.FORMAT}
    columns:
      note: {faker: sentence}
    update: [balance, note]
operations:
  events: 3000
  mix: {insert: 2, update: 6, delete: 1}
  commit_rate: 200
"""


def _accounts(tmp_path: Path, form: str) -> Path:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    count = 400
    table = pa.table(
        {
            "id": pa.array([1000 + 7 * i for i in range(count)], pa.int64()),
            "owner": [f"owner {i}" for i in range(count)],
            "balance": pa.array([Decimal(f"{i}.{i % 100:02d}") for i in range(count)]),
            "opened": [f"2020-01-{1 + i % 28:02d} 10:00:00" for i in range(count)],
        }
    )
    path = tmp_path / f"accounts.{form}"
    if form == "parquet":
        pq.write_table(table, path)
    else:
        pacsv.write_csv(table, path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SEEDED.replace("FORMAT", form))
    return spec


@pytest.mark.parametrize("form", ["parquet", "csv"])
def test_initial_rows_from_a_file_read_by_spark(tmp_path: Path, form: str) -> None:
    """The file's rows are the initial rows (its keys, its values until an update writes
    them); Spark's reader and pyarrow's give the same records."""
    spec = _accounts(tmp_path, form)
    _session("local[2]")
    query = FEEDS[0] + "&topic=accounts"
    cli("--workload", str(spec), "--sink-uri", f"jsonl://{tmp_path / 'one'}{query}")
    cli(
        "--workload",
        str(spec),
        "--sink-uri",
        f"jsonl://{tmp_path / 'spark'}{query}",
        "--engine",
        "spark",
        "--master",
        "local[2]",
    )
    expected = [_row(r) for r in read_jsonl(str(tmp_path / "one"))]
    same([_row(r) for r in read_jsonl(str(tmp_path / "spark"))], expected, form)
    values = b"".join(r[4] or b"" for r in expected)
    assert b'"owner":"owner 399"' in values and b'"id":"3793"' in values  # from the file
    assert b'"id":"3800"' in values  # a new row: the key after the file's largest


def test_avro_schema_ids_are_the_one_process_runs(tmp_path: Path) -> None:
    """Each task registers every table version's schemas as its DDL passes, resumed from the
    run's history: the same ids as one process, and parquet's registry file the same."""
    query = "?protocol=avro&enable-tidb-extension=true&partition-num=2"
    feed = changefeed("memory://" + query, AVRO_TOPICS)
    sink = MemorySink()
    pipeline = Pipeline(feed, sink)
    pipeline.run(Generator(parse(yaml.safe_load(SPEC))).events())
    expected = sorted(_row(r) for r in sink.records())
    assert {r[4][:5] for r in expected if r[4]} == {header(i) for i in (2, 4, 6, 7)}
    same(spark_records("local[2]", query, AVRO_TOPICS), expected, "local[2]")
    out = tmp_path / "out"
    generate(
        parse(yaml.safe_load(SPEC)),
        changefeed(f"parquet://{out}" + query, AVRO_TOPICS),
        "local[2]",
        spark=_session("local[2]"),
    )
    assert (out / "schema-registry.json").read_bytes() == registry_file(pipeline.registry)
