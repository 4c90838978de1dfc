"""SIGTERM under load: `ticdc-sim serve` with 8 clients (HTTP and MySQL) committing
transactions, stopped mid-load. Each answer is a commit or a clean refusal; every
acknowledged transaction is in the changefeed's files, whole, and nothing is there that was
not committed; what the service says it flushed is what is on disk."""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pymysql

from support_service import Server
from ticdc_sim.sinks.jsonl import read_jsonl

CLIENTS = 4  # of each kind
ROWS = 100
UPDATED = 21


@dataclass
class Txn:
    """One transaction a client tried: it inserts ids base..base+99, bumps `n` of the first
    21 of them and deletes what the previous one inserted (and is still there)."""

    table: str
    base: int
    deleted: frozenset[int]
    answer: str = ""  # "committed", "refused" (1053 / 503 / rolled back) or "lost"
    commit_ts: int | None = None  # an HTTP client's acknowledged commit_ts
    rows: int | None = None  # the row events the HTTP answer says it sent


@dataclass
class Client:
    table: str
    tried: list[Txn] = field(default_factory=list)
    present: set[int] = field(default_factory=set)  # ids committed and not deleted

    def next(self) -> Txn:
        base = len(self.tried) * ROWS
        deleted = frozenset(i for i in self.present if base - ROWS <= i < base)
        txn = Txn(self.table, base, deleted)
        self.tried.append(txn)
        return txn

    def committed(self, txn: Txn) -> None:
        txn.answer = "committed"
        self.present -= txn.deleted
        self.present |= set(range(txn.base, txn.base + ROWS))

    def statements(self, txn: Txn) -> list[str]:
        values = ", ".join(f"({i}, 'v{i}', 0)" for i in range(txn.base, txn.base + ROWS))
        last = txn.base + UPDATED - 1
        return [
            f"INSERT INTO {self.table} (id, v, n) VALUES {values}",
            f"UPDATE {self.table} SET n = n + 1 WHERE id BETWEEN {txn.base} AND {last}",
            f"DELETE FROM {self.table} WHERE id BETWEEN {txn.base - ROWS} AND {txn.base - 1}",
        ]


def _http(server: Server, client: Client, stop: threading.Event, odd: list[str]) -> None:
    with httpx.Client(timeout=30) as http:
        while not stop.is_set():
            txn = client.next()
            script = ";\n".join(["BEGIN", *client.statements(txn), "COMMIT"]) + ";"
            try:
                answer = http.post(f"{server.http}/sim/v1/clusters/default/sql", content=script)
            except httpx.ConnectError:  # the service has gone: nothing was sent
                client.tried.pop()
                return
            except httpx.RemoteProtocolError:  # sent as the service stopped: no answer
                txn.answer = "lost"
                return
            body = answer.json()
            if answer.status_code == 200 and body["ok"]:
                (committed,) = body["transactions"]
                txn.commit_ts, txn.rows = committed["commit_ts"], committed["rows"]
                client.committed(txn)
                continue
            txn.answer = "refused"
            errors = [s["error"]["code"] for s in body.get("statements", []) if s["error"]]
            if answer.status_code == 200 and errors == [1053] and not body["transactions"]:
                return  # stopped before its next statement: rolled back
            if answer.status_code == 503 and body["error_code"] == "SIM:ServiceStopping":
                return
            odd.append(f"HTTP {answer.status_code}: {answer.text}")
            return


_GONE = (2003, 2006, 2013)  # refused, gone away, lost: the service closed or has exited


def _mysql(server: Server, client: Client, stop: threading.Event, odd: list[str]) -> None:
    try:
        connection = server.mysql(autocommit=False)
    except pymysql.OperationalError as e:
        if e.args[0] not in (*_GONE, 1053):
            odd.append(f"MySQL connect: {e.args}")
        return
    with connection:
        while not stop.is_set():
            txn = client.next()
            try:
                with connection.cursor() as cursor:
                    for sql in client.statements(txn):
                        cursor.execute(sql)
                connection.commit()
            except pymysql.OperationalError as e:
                code = e.args[0]
                if code == 1053:  # refused before COMMIT, or COMMIT refused: rolled back
                    txn.answer = "refused"
                elif code in _GONE:  # the answer may have been lost with the connection
                    txn.answer = "lost"
                else:
                    odd.append(f"MySQL {e.args}")
                return
            client.committed(txn)


def _transactions(directory: Path) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """The row events in the files, per (table, commitTs)."""
    found: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for record in read_jsonl(str(directory)):
        message = json.loads(record.value or b"{}")
        if message.get("type") in ("INSERT", "UPDATE", "DELETE"):
            key = (message["table"], int(message["_tidb"]["commitTs"]))
            for row in message["data"]:
                found.setdefault(key, []).append({"type": message["type"], **row})
    return found


def _whole(txn: Txn, events: list[dict[str, Any]]) -> None:
    """The transaction's net change, as TiCDC sends it: its rows inserted (the first 21
    with n bumped, in the row's last image), the previous rows deleted."""
    deleted = {int(e["id"]) for e in events if e["type"] == "DELETE"}
    last = {int(e["id"]): int(e["n"]) for e in events if e["type"] != "DELETE"}
    assert deleted == txn.deleted, (txn, sorted(deleted))
    assert last == {i: int(i < txn.base + UPDATED) for i in range(txn.base, txn.base + ROWS)}


def test_sigterm_under_load_flushes_every_committed_transaction(tmp_path: Path) -> None:
    server = Server.start(tmp_path / "data")
    setup = ";".join(
        f"CREATE TABLE t{i} (id INT PRIMARY KEY, v VARCHAR(64), n INT)" for i in range(2 * CLIENTS)
    )
    server.sql(setup)
    clients = [Client(f"t{i}") for i in range(2 * CLIENTS)]
    stop, odd = threading.Event(), []
    threads = [
        threading.Thread(target=_http if i < CLIENTS else _mysql, args=(server, c, stop, odd))
        for i, c in enumerate(clients)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and sum(len(c.tried) for c in clients) < 120:
        time.sleep(0.05)
    server.process.send_signal(signal.SIGTERM)
    for thread in threads:
        thread.join(30)
    stop.set()
    assert not any(thread.is_alive() for thread in threads)  # each ended on the stop
    server.process.wait(timeout=60)
    printed = server.log.read_text()
    assert server.process.returncode == 0, printed
    assert odd == []
    assert "Traceback" not in printed and "bug in ticdc-sim" not in printed, printed

    # (what follows the directory, after a `;`, is what remains on disk)
    said = re.search(
        r"changefeed default/default: (\d+) records to jsonl files in ([^;\n]+)", printed
    )
    assert said is not None, printed
    directory = Path(said.group(2))
    files = sorted(directory.rglob("*.jsonl"))
    assert files
    assert all(f.read_bytes().endswith(b"\n") for f in files)
    assert sum(f.read_bytes().count(b"\n") for f in files) == int(said.group(1))

    found = _transactions(directory)
    tried = {(t.table, t.base): t for c in clients for t in c.tried}
    answers = Counter(t.answer for t in tried.values())
    assert answers["committed"] >= 2 * CLIENTS, answers  # every client committed some
    on_disk: set[tuple[str, int]] = set()
    for (table, commit_ts), events in found.items():
        base = min(int(e["id"]) for e in events if e["type"] != "DELETE") // ROWS * ROWS
        txn = tried[(table, base)]  # nothing that no client tried
        assert txn.answer in ("committed", "lost"), txn  # nor what was refused
        assert txn.commit_ts in (None, commit_ts)
        assert txn.rows in (None, len(events))
        _whole(txn, events)
        on_disk.add((table, base))
    acknowledged = {k for k, t in tried.items() if t.answer == "committed"}
    assert acknowledged <= on_disk  # every acknowledged commit reached the files
    lost = on_disk - acknowledged  # committed, the answer lost in the shutdown: whole
    assert len(lost) <= answers["lost"]
