"""`ticdc-sim serve` in a subprocess, reached as users reach it: pymysql and the `mariadb`
command-line client on the MySQL port, HTTP with a live tail, and a changefeed publishing to
a real Kafka broker, read back and compared with what `ticdc-sim replay` writes."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pymysql
import pytest
from typer.testing import CliRunner

from support_service import Server, remain
from ticdc_sim.cli import app as cli
from ticdc_sim.config import changefeed
from ticdc_sim.encoders import decoder_for
from ticdc_sim.jsonout import decoded_record
from ticdc_sim.sinks import Record
from ticdc_sim.sinks import kafka as kafka_sink
from ticdc_sim.sinks.jsonl import read_jsonl
from ticdc_sim.testing.broker import Broker

SCRIPT = [
    "CREATE TABLE shop (id INT PRIMARY KEY, name VARCHAR(20), qty INT, price DECIMAL(8,2))",
    "INSERT INTO shop VALUES (1, 'a', 5, 1.50), (2, 'b', 6, 2.25), (3, 'c', 7, NULL)",
    "BEGIN",
    "UPDATE shop SET qty = qty + 1 WHERE id BETWEEN 2 AND 3",
    "DELETE FROM shop WHERE id = 1",
    "COMMIT",
    "ALTER TABLE shop ADD COLUMN note TEXT",
    "INSERT INTO shop (id, name, qty, note) VALUES (4, 'd', 1, 'x')",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    found = Server.start(tmp_path_factory.mktemp("serve"))
    yield found
    if found.process.poll() is None:
        found.stop()


def replayed(tmp_path: Path, statements: list[str], uri_query: str) -> list[Record]:
    """What `ticdc-sim replay` writes for `statements` into jsonl."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "script.sql"
    script.write_text("".join(f"{s};\n" for s in statements))
    out = tmp_path / "replayed"
    result = CliRunner().invoke(
        cli, ["replay", str(script), "--sink-uri", f"jsonl://{out}?{uri_query}"]
    )
    assert result.exit_code == 0, result.output
    return list(read_jsonl(str(out)))


def changes(records: list[Record], uri: str) -> dict[int, list[dict[str, Any]]]:
    """Each partition's row and DDL events in order, without the checkpoints: a service sends
    one after each request, the CLI after the script, and a batching protocol (open protocol)
    batches what each flush holds."""
    decoder = decoder_for(changefeed(uri).codec)
    out: dict[int, list[dict[str, Any]]] = {}
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        events = [decoded_record(e) for e in decoder.decode(r.key, r.value)]
        out.setdefault(r.partition, []).extend(e for e in events if e["type"] != "checkpoint")
    return out


# -- the MySQL port ------------------------------------------------------------------------------


def test_pymysql_sessions_transactions_and_errors(server: Server) -> None:
    conn = server.mysql(autocommit=True)
    with conn.cursor() as cur:
        cur.execute("SELECT @@version, @@tidb_version LIKE 'Release Version%', DATABASE()")
        version, is_tidb, database = cur.fetchone()
        assert version == "8.0.11-TiDB-v8.5.0" and is_tidb == 1 and database == "test"
        cur.execute("CREATE TABLE acct (id INT PRIMARY KEY, owner VARCHAR(10), bal DECIMAL(10,2))")
        assert cur.execute("INSERT INTO acct VALUES (1, 'ann', 10.00), (2, 'bob', 0.50)") == 2
        assert cur.execute("UPDATE acct SET bal = bal + 1 WHERE id >= 1") == 2
        with pytest.raises(pymysql.err.IntegrityError) as dup:
            cur.execute("INSERT INTO acct VALUES (1, 'eve', 0)")
        assert dup.value.args[0] == 1062 and "Duplicate entry" in dup.value.args[1]
        with pytest.raises(pymysql.err.ProgrammingError) as missing:
            cur.execute("SELECT * FROM nowhere")
        assert missing.value.args[0] == 1146
        cur.execute("SELECT COUNT(*), SUM(bal), MAX(owner) FROM acct WHERE id > 0")
        assert cur.fetchone() == (2, Decimal("12.50"), "bob")
        cur.execute("SHOW TABLES")
        assert ("acct",) in cur.fetchall()
        cur.execute("SELECT id, owner, bal FROM acct ORDER BY id")
        rows = cur.fetchall()
        assert rows == ((1, "ann", Decimal("11.00")), (2, "bob", Decimal("1.50")))
        # every column type reads back as the driver reads TiDB's
        cur.execute(
            "CREATE TABLE kinds (id INT PRIMARY KEY, d DATE, t DATETIME(3), tm TIME(1),"
            " b VARBINARY(4), j JSON, f DOUBLE, e ENUM('x','y'), y YEAR)"
        )
        cur.execute(
            "INSERT INTO kinds VALUES (1, '2024-02-29', '2024-02-29 10:00:00.125',"
            " '-10:00:00.5', x'00ff', '{\"a\": [1]}', 1.5, 'y', 2024)"
        )
        cur.execute("SELECT * FROM kinds")
        assert cur.fetchone() == (
            1,
            dt.date(2024, 2, 29),
            dt.datetime(2024, 2, 29, 10, 0, 0, 125000),
            -dt.timedelta(hours=10, microseconds=500000),
            b"\x00\xff",
            '{"a": [1]}',
            1.5,
            "y",
            2024,
        )

    # a transaction is the session's own; a rollback sends nothing
    before = httpx.get(f"{server.http}/api/v2/changefeeds/default/status").json()["messages"]
    other = server.mysql()
    with conn.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("INSERT INTO acct VALUES (3, 'cat', 3)")
        cur.execute("ROLLBACK")
    status = httpx.get(f"{server.http}/api/v2/changefeeds/default/status").json()
    assert status["messages"] == before
    # pymysql's default: autocommit off, commit() ends the transaction
    with other.cursor() as cur:
        cur.execute("INSERT INTO acct VALUES (4, 'dan', 4)")
    other.commit()
    with conn.cursor() as cur:
        cur.execute("SELECT id FROM acct ORDER BY id")
        assert [r[0] for r in cur.fetchall()] == [1, 2, 4]
    conn.close()
    other.close()


def test_prepared_statements_read_the_binary_protocol(server: Server) -> None:
    """mysql-connector's prepared cursors (COM_STMT_EXECUTE): parameters in, rows back in
    MySQL's binary row format, with the same values as the text protocol's."""
    connector = pytest.importorskip("mysql.connector", reason="mysql-connector-python absent")
    conn = connector.connect(
        host="127.0.0.1", port=server.mysql_port, user="root", database="test", autocommit=True
    )
    text, prepared = conn.cursor(), conn.cursor(prepared=True)
    text.execute(
        "CREATE TABLE prep (id INT PRIMARY KEY, d DATE, t DATETIME(3), tm TIME(1),"
        " b VARBINARY(4), f DOUBLE, p DECIMAL(6,2), s VARCHAR(8))"
    )
    prepared.execute(
        # a positive TIME: mysql-connector reads a negative one's binary form wrongly (it
        # negates the days alone), whichever server sends it (test_mysql_port holds that
        # to MariaDB, and the bytes to TiDB's)
        "INSERT INTO prep VALUES (%s, '2024-02-29', '2024-02-29 10:00:00.125', '10:00:00.5',"
        " x'00ff', %s, 3.25, %s)",
        (1, 1.5, "héllo"),  # mysql-mimic reads no DECIMAL or DATE parameters
    )
    assert prepared.rowcount == 1
    text.execute("SELECT * FROM prep")
    expected = text.fetchall()
    prepared.execute("SELECT * FROM prep WHERE id = %s", (1,))
    assert (
        prepared.fetchall()
        == expected
        == [
            (
                1,
                dt.date(2024, 2, 29),
                dt.datetime(2024, 2, 29, 10, 0, 0, 125000),
                dt.timedelta(hours=10, microseconds=500000),
                b"\x00\xff",
                1.5,
                Decimal("3.25"),
                "héllo",
            )
        ]
    )
    conn.close()


def test_a_second_session_waits_for_the_first_to_commit(server: Server) -> None:
    """A row the first session's open transaction holds: the second waits for it (a row
    of its own it writes at once), and the changefeed has the commits in commit order."""
    first, second = server.mysql(autocommit=True), server.mysql(autocommit=True)
    with first.cursor() as cur:
        cur.execute("CREATE TABLE waits (id INT PRIMARY KEY, n INT)")
        cur.execute("BEGIN")
        cur.execute("INSERT INTO waits VALUES (1, 0)")
    with second.cursor() as cur:
        cur.execute("INSERT INTO waits VALUES (3, 0)")  # another row: no wait
    done: list[float] = []

    def insert() -> None:
        with second.cursor() as cur:
            cur.execute("INSERT INTO waits VALUES (1, 0) ON DUPLICATE KEY UPDATE id = 2")
        done.append(time.monotonic())

    waiter = threading.Thread(target=insert)
    waiter.start()
    time.sleep(0.5)
    assert not done  # held back while the first session's transaction is open
    committed = time.monotonic()
    with first.cursor() as cur:
        cur.execute("COMMIT")
    waiter.join(30)
    assert done and done[0] >= committed
    # each commit went to the changefeed in commit order: 3, then 1, then 1 became 2 (a
    # changed key is sent as a delete and an insert, as TiCDC splits it)
    assert server.inserted("waits") == [3, 1, 2]
    with second.cursor() as cur:
        cur.execute("SELECT id FROM waits ORDER BY id")
        assert cur.fetchall() == ((2,), (3,))
    first.close()
    second.close()


def test_the_mariadb_client(server: Server) -> None:
    client = shutil.which("mariadb") or shutil.which("mysql")
    if client is None:
        pytest.skip("no mariadb/mysql command-line client (Debian: mariadb-client)")
    base = [client, "-h", "127.0.0.1", "-P", str(server.mysql_port), "-u", "root", "test"]
    script = (
        "CREATE TABLE cli_t (id INT PRIMARY KEY, v VARCHAR(5));\n"
        "INSERT INTO cli_t VALUES (1, 'one'), (2, 'two');\n"
        "SELECT id, v FROM cli_t ORDER BY id;\n"
    )
    ran = subprocess.run([*base, "--batch"], input=script.encode(), capture_output=True, timeout=60)
    assert ran.returncode == 0, ran.stderr.decode()
    assert ran.stdout.decode().splitlines() == ["id\tv", "1\tone", "2\ttwo"]
    failed = subprocess.run(
        [*base, "-e", "INSERT INTO cli_t VALUES (1, 'dup')"], capture_output=True, timeout=60
    )
    assert failed.returncode == 1
    assert "ERROR 1062 (23000)" in failed.stderr.decode()


def test_passwords_tokens_and_cluster_users(tmp_path: Path) -> None:
    server = Server.start(tmp_path / "data", mysql_password="pw", token="tk")
    try:
        with pytest.raises(pymysql.err.OperationalError) as refused:
            server.mysql()
        assert refused.value.args[0] == 1045  # access denied
        server.mysql(password="pw").close()
        assert httpx.get(f"{server.http}/api/v2/changefeeds").status_code == 401
        auth = {"Authorization": "Bearer tk"}
        made = httpx.post(f"{server.http}/sim/v1/clusters", json={"id": "team"}, headers=auth)
        assert made.status_code == 201
        conn = server.mysql("team.root", password="pw", autocommit=True)
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE mine (id INT PRIMARY KEY)")
        conn.close()
        assert server.sql("SELECT * FROM mine", "team")["ok"]
        assert not server.sql("SELECT * FROM mine")["ok"]  # `default` has no such table
        with pytest.raises(pymysql.err.OperationalError) as unknown:
            server.mysql("nowhere.root", password="pw")
        assert "nowhere.root" in unknown.value.args[1]
        # a cluster removed under a connected session: its statements now fail, and say why
        conn = server.mysql("team.root", password="pw", autocommit=True)
        httpx.delete(f"{server.http}/sim/v1/clusters/team", headers=auth).raise_for_status()
        with conn.cursor() as cur, pytest.raises(pymysql.err.OperationalError) as gone:
            cur.execute("SELECT 1")
        assert "'team' has been removed" in gone.value.args[1]
        conn.close()
    finally:
        server.stop()


# -- HTTP: the tail and what lands on disk -------------------------------------------------------


def test_the_live_tail_streams_decoded_messages(server: Server) -> None:
    server.sql("CREATE TABLE tailed (id INT PRIMARY KEY)")
    seen: list[dict[str, Any]] = []
    url = f"{server.http}/sim/v1/clusters/default/changefeeds/default/tail"
    with httpx.stream("GET", url, timeout=30) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        lines = stream.iter_lines()
        assert next(lines) == ": tailing"
        server.sql("INSERT INTO tailed VALUES (7), (8)")
        for line in lines:
            if line.startswith("data: "):
                message = json.loads(line[len("data: ") :])
                seen += [d for d in message["decoded"] if d.get("table") == "tailed"]
            if len(seen) >= 2:
                break
    assert [d["columns"]["id"] for d in seen] == [7, 8]


def test_the_jsonl_changefeed_writes_as_it_goes_and_shutdown_says_where(tmp_path: Path) -> None:
    """Over the MySQL port, statement by statement: the same rows and DDL as the CLI's replay,
    partition by partition, in the folder the banner names while `serve` runs; stopping it
    says what each changefeed flushed where."""
    server = Server.start(tmp_path / "data")
    conn = server.mysql(autocommit=True)
    with conn.cursor() as cur:
        for statement in SCRIPT:
            cur.execute(statement)
    conn.close()
    folder = (tmp_path / "data" / "default").resolve()
    uri = "jsonl://x?protocol=canal-json&enable-tidb-extension=true"
    expected = replayed(tmp_path, SCRIPT, uri.partition("?")[2])
    running = list(read_jsonl(str(folder)))
    assert changes(running, uri) == changes(expected, uri)
    printed = server.stop()
    assert (
        f"changefeed      jsonl://default?{uri.partition('?')[2]}  (under {folder.parent})"
        in printed
    )
    assert "mysql -h 127.0.0.1" in printed
    served = list(read_jsonl(str(folder)))
    assert printed.endswith(
        "ticdc-sim stopped; every changefeed flushed and closed:\n"
        f"  changefeed default/default: {len(served)} records to jsonl files in {folder}\n"
        f"  changefeed default/default: {remain(folder)}\n"
    ), printed
    assert changes(served, uri) == changes(expected, uri)
    assert "Traceback" not in printed


# -- Kafka ---------------------------------------------------------------------------------------


def test_a_changefeed_to_kafka(broker: Broker, tmp_path: Path) -> None:
    """A changefeed made through TiCDC's open API publishes to Kafka; what the topic holds is
    what the CLI writes for the same SQL (HTTP: byte for byte; MySQL: rows and DDL)."""
    allow = json.dumps([broker.bootstrap])
    server = Server.start(tmp_path / "data", kafka_allow=allow)
    try:
        for via, topic in (
            ("http", f"svc-http-{time.time_ns()}"),
            ("mysql", f"svc-my-{time.time_ns()}"),
        ):
            cluster = f"k-{via}"
            httpx.post(f"{server.http}/sim/v1/clusters", json={"id": cluster}).raise_for_status()
            query = "protocol=open-protocol&partition-num=3"
            body = {
                "namespace": cluster,
                "changefeed_id": "to-kafka",
                "sink_uri": f"kafka://{broker.bootstrap}/{topic}?{query}",
            }
            made = httpx.post(f"{server.http}/api/v2/changefeeds", json=body)
            assert made.status_code == 200, made.text
            if via == "http":
                assert server.sql("".join(f"{s};\n" for s in SCRIPT), cluster)["ok"]
            else:
                conn = server.mysql(f"{cluster}.root", autocommit=True)  # TiDB Cloud's users
                with conn.cursor() as cur:
                    for statement in SCRIPT:
                        cur.execute(statement)
                conn.close()
            removed = httpx.delete(
                f"{server.http}/api/v2/changefeeds/to-kafka", params={"namespace": cluster}
            )
            assert removed.status_code == 200, removed.text
            uri = changefeed(f"kafka://{broker.bootstrap}/{topic}?protocol=open-protocol").sink
            published = kafka_sink.read_topic(uri)
            expected = replayed(tmp_path / via, SCRIPT, query)
            if via == "http":
                key = lambda r: (r.partition, r.offset)  # noqa: E731
                got = [(r.partition, r.offset, r.key, r.value) for r in sorted(published, key=key)]
                want = [(r.partition, r.offset, r.key, r.value) for r in sorted(expected, key=key)]
                assert got == want
            else:
                assert changes(published, body["sink_uri"]) == changes(expected, body["sink_uri"])
        status = httpx.get(f"{server.http}/metrics").text
        found = [line for line in status.splitlines() if "k-mysql" in line]
        assert 'ticdc_sim_transactions_total{cluster="k-mysql"} 5.0' in found, found
        assert 'ticdc_sim_events_total{cluster="k-mysql"} 9.0' in found, found
    finally:
        server.stop()


def test_a_port_in_use_is_one_clear_error_before_any_banner(tmp_path: Path) -> None:
    import socket
    import sys

    taken = socket.create_server(("127.0.0.1", 0))
    port = str(taken.getsockname()[1])
    base = [sys.executable, "-m", "ticdc_sim", "serve", "--data-dir", str(tmp_path)]
    try:
        for flags, option in (
            (["--port", port], "--port (TICDC_SIM_PORT)"),
            (["--port", "0", "--mysql-port", port], "--mysql-port (TICDC_SIM_MYSQL_PORT)"),
        ):
            ran = subprocess.run([*base, *flags], capture_output=True, text=True, timeout=60)
            assert ran.returncode == 1
            assert ran.stderr == f"error: {option}: cannot listen on 127.0.0.1:{port}: in use\n"
    finally:
        taken.close()


def test_a_bad_setting_names_the_option_or_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from ticdc_sim.cli import app

    ran = CliRunner().invoke(app, ["serve", "--port", "99999"])
    assert ran.exit_code == 2
    assert ran.stderr == "error: --port: Input should be less than or equal to 65535 (got 99999)\n"
    monkeypatch.setenv("TICDC_SIM_LOCK_WAIT_S", "soon")
    ran = CliRunner().invoke(app, ["serve"])
    assert ran.exit_code == 2
    assert ran.stderr.startswith("error: TICDC_SIM_LOCK_WAIT_S: Input should be a valid number")
