"""The MySQL port against hostile and broken clients (issue 25's bad-input suite, `mysql_port`).

One row, one client: packets built by hand and sent over a raw socket (malformed handshakes
and commands, wrong sequence ids, oversized packets, unknown commands, bad passwords), clients
that go mid-transaction or mid-packet, and statements the port cannot answer. Each row says
the exact answer (MySQL error code, SQLSTATE and message, or the result) and whether the
server keeps the connection; every row also checks that the server logged no traceback, and
the disconnect rows that a transaction left open emitted nothing and holds no lock."""

from __future__ import annotations

import json
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pymysql
import pytest

from support_mysql_wire import (
    BASE,
    QUERY_ATTRIBUTES,
    SSL,
    Answer,
    Wire,
    handshake_response,
    scramble,
)
from support_service import Server, remain
from ticdc_sim.sinks.jsonl import read_jsonl

LOCK_WAIT_S = 3.0
MAX_PACKET = 64 << 20  # TiDB's max_allowed_packet
Seen = tuple[Any, ...]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    found = Server.start(tmp_path_factory.mktemp("hostile"), lock_wait_s=str(LOCK_WAIT_S))
    yield found
    printed = found.stop()
    assert "Traceback" not in printed and "internal error" not in printed, printed


def seen(answer: Answer) -> Seen:
    """What a test compares: the kind of answer and its exact content."""
    if answer.kind == "error":
        return ("error", answer.code, answer.state, answer.message)
    if answer.kind == "rows":
        return ("rows", answer.names, answer.rows)
    return (answer.kind,)


def after(w: Wire) -> str:
    """Whether the server kept the connection: it answers COM_PING, or it has closed."""
    try:
        w.command(b"\x0e")
        return "open" if w.answer().kind == "ok" else "answered ping with an error"
    except (EOFError, ConnectionError):
        return "closed"


def logged_in(server: Server, **options: Any) -> Wire:
    w = Wire(server.mysql_port)
    assert w.login(**options).kind == "ok"
    return w


# -- the handshake ------------------------------------------------------------------------------


def _handshake(payload: bytes | Callable[[Wire], bytes], seq: int = 1) -> Callable[[Server], Seen]:
    def scenario(server: Server) -> Seen:
        w = Wire(server.mysql_port)
        w.greeting()
        w.send(payload(w) if callable(payload) else payload, seq)
        answer = seen(w.answer())
        state = after(w)
        w.close()
        return (*answer, state)

    return scenario


def _right_password(
    user: str, password: str = "", database: str | None = "test"
) -> Callable[[Wire], bytes]:
    return lambda w: handshake_response(user, scramble(password, w.nonce), database)


def _refused_then_query(server: Server) -> Seen:
    """A client refused at login that sends a query anyway gets nothing: the connection is
    closed (it used to be served, password or not)."""
    w = Wire(server.mysql_port)
    answer = seen(w.login(password="guess"))
    try:
        w.query("SELECT 'served'")
        state = "served"
    except (EOFError, ConnectionError):
        state = "closed"
    w.close()
    return (*answer, state)


BAD_HANDSHAKE = ("error", 1043, "08S01", "Bad handshake", "closed")
HANDSHAKES = [
    ("handshake-garbage", _handshake(b"\x01\x02"), BAD_HANDSHAKE),
    (
        "handshake-user-without-nul",  # mysql-mimic spun on this forever, the loop with it
        _handshake(struct.pack("<IIB", BASE, 1 << 24, 46) + bytes(23) + b"root"),
        BAD_HANDSHAKE,
    ),
    (
        "handshake-auth-shorter-than-its-length",
        _handshake(struct.pack("<IIB", BASE, 1 << 24, 46) + bytes(23) + b"root\0\x14abc"),
        BAD_HANDSHAKE,
    ),
    (
        "handshake-ssl-request",  # no TLS here: the request is refused, not half-served
        _handshake(struct.pack("<IIB", BASE | SSL, 1 << 24, 46) + bytes(23)),
        BAD_HANDSHAKE,
    ),
    (
        "handshake-wrong-sequence-id",
        _handshake(_right_password("root"), seq=3),
        ("error", 1156, "08S01", "Got packets out of order", "closed"),
    ),
    (
        "handshake-wrong-password-then-query",
        _refused_then_query,
        (
            "error",
            1045,
            "28000",
            "Access denied for user 'root'@'%' (using password: YES)",
            "closed",
        ),
    ),
    (
        "handshake-user-of-no-cluster",
        _handshake(_right_password("nowhere.root")),
        (
            "error",
            1045,
            "28000",
            "Access denied for user 'nowhere.root'@'%' (using password: NO) (no cluster 'nowhere')",
            "closed",
        ),
    ),  # fmt: skip
    (
        "handshake-unknown-database",
        _handshake(_right_password("root", database="nope")),
        ("error", 1049, "42000", "Unknown database 'nope'", "closed"),
    ),
    (
        "handshake-unknown-collation",  # read as TiDB's default, utf8mb4
        _handshake(
            lambda w: (
                struct.pack("<IIB", BASE, 1 << 24, 250)
                + bytes(23)
                + b"root\0\0mysql_native_password\0"
            )
        ),
        ("ok", "open"),
    ),
]


# -- commands -----------------------------------------------------------------------------------


def _command(payload: bytes, **login: Any) -> Callable[[Server], Seen]:
    def scenario(server: Server) -> Seen:
        w = logged_in(server, **login)
        w.command(payload)
        answer = seen(w.answer())
        state = after(w)
        w.close()
        return (*answer, state)

    return scenario


def _prepared(
    sql: str, execute: Callable[[int], bytes], then: bytes | None = None
) -> Callable[[Server], Seen]:
    """Prepare `sql`, send the execute built for its statement id, and maybe one more
    command; the last answer."""

    def scenario(server: Server) -> Seen:
        w = logged_in(server)
        stmt_id, _ = w.prepare(sql)
        w.command(execute(stmt_id))
        answer = seen(w.answer(binary=True))
        if then is not None:
            w.command(then.replace(b"{id}", struct.pack("<I", stmt_id)))
            answer = seen(w.answer())
        state = after(w)
        w.close()
        return (*answer, state)

    return scenario


def _execute(stmt_id: int, params: bytes = b"", flags: int = 0) -> bytes:
    return b"\x17" + struct.pack("<IBI", stmt_id, flags, 1) + params


def _one_param(kind: int, value: bytes, bound: int = 1) -> Callable[[int], bytes]:
    return lambda stmt_id: _execute(stmt_id, b"\x00" + bytes([bound, kind, 0]) + value)


INJECTION = b"x' OR '1'='1 -- \\'; DROP TABLE t; -- ?"


def _lenenc(data: bytes) -> bytes:
    return bytes([len(data)]) + data


def _quiet(payload: bytes) -> Callable[[Server], Seen]:
    """A command MySQL does not answer (COM_STMT_CLOSE, COM_STMT_SEND_LONG_DATA): the next
    command is answered as if it had not been sent."""

    def scenario(server: Server) -> Seen:
        w = logged_in(server)
        w.command(payload)
        state = after(w)
        w.close()
        return ("no answer", state)

    return scenario


def _statements(*sql: str | bytes, **login: Any) -> Callable[[Server], Seen]:
    """Queries in one connection; the last one's answer."""

    def scenario(server: Server) -> Seen:
        w = logged_in(server, **login)
        answer = None
        for text in sql:
            answer = w.query(text)
        assert answer is not None
        state = after(w)
        w.close()
        return (*seen(answer), state)

    return scenario


def _wrong_sequence(server: Server) -> Seen:
    w = logged_in(server)
    w.send(b"\x03SELECT 1", 5)
    answer = seen(w.answer())
    state = after(w)
    w.close()
    return (*answer, state)


def _too_large(server: Server) -> Seen:
    """A COM_QUERY over max_allowed_packet, sent as MySQL splits it (16 MiB packets): the
    server answers 1153 before reading what is over the limit, then closes."""
    w = logged_in(server)
    whole = 0xFFFFFF
    chunk = b"\x03" + b" " * (whole - 1)
    try:
        for seq in range(MAX_PACKET // whole + 1):
            w.send(chunk if seq == 0 else b" " * whole, seq)
    except ConnectionError:
        pass  # the server stopped reading
    answer = seen(w.answer())
    state = after(w)
    w.close()
    return (*answer, state)


def _too_many_prepared(server: Server) -> Seen:
    w = logged_in(server)
    prepare = struct.pack("<I", 9) + b"\x16SELECT 1"
    w.sock.sendall(prepare * 16383)  # all at once, then the answers
    answers = [w.answer() for _ in range(16383)]
    state = after(w)
    w.close()
    return (sum(a.kind == "ok" for a in answers), *seen(answers[-1]), state)


MALFORMED = ("error", 1835, "HY000", "Malformed communication packet.", "open")
COMMANDS = [
    ("command-empty-packet", _command(b""),
     ("error", 1105, "HY000", "command 0 not supported now", "open")),
    ("command-unknown-byte", _command(b"\xfa"),
     ("error", 1105, "HY000", "command 250 not supported now", "open")),
    ("command-debug", _command(b"\x0d"),
     ("error", 1105, "HY000", "command 13 not supported now", "open")),
    ("command-process-kill", _command(b"\x0c\x01\x00\x00\x00"),
     ("error", 1105, "HY000", "command 12 not supported now", "open")),
    ("stmt-execute-too-short", _command(b"\x17\x01"), MALFORMED),
    ("stmt-execute-unknown-statement", _command(_execute(99)),
     ("error", 1243, "HY000",
      "Unknown prepared statement handler (99) given to mysqld_stmt_execute", "open")),
    ("stmt-fetch-unknown-statement", _command(b"\x1c" + struct.pack("<II", 77, 1)),
     ("error", 1243, "HY000",
      "Unknown prepared statement handler (77) given to mysqld_stmt_fetch", "open")),
    ("stmt-fetch-without-a-cursor",
     _prepared("SELECT 1", lambda i: _execute(i), then=b"\x1c{id}\x01\x00\x00\x00"),
     ("error", 1421, "HY000", "The statement (1) has no open cursor.", "open")),
    ("stmt-execute-without-its-parameter", _prepared("SELECT ?", lambda i: _execute(i)),
     MALFORMED),
    ("stmt-execute-unknown-parameter-type", _prepared("SELECT ?", _one_param(0x99, b"x")),
     ("error", 1210, "HY000",
      "Incorrect arguments to mysqld_stmt_execute: unknown parameter type 153", "open")),
    ("stmt-execute-types-never-bound", _prepared("SELECT ?", _one_param(0xFD, b"", bound=0)),
     MALFORMED),
    ("stmt-execute-string-is-data-not-sql",
     _prepared("SELECT ?", _one_param(0xFD, _lenenc(INJECTION))),
     ("rows", ["?"], [(INJECTION.decode(),)], "open")),
    ("stmt-execute-negative-time",
     _prepared("SELECT ?", _one_param(0x0B, b"\x08\x01\x00\x00\x00\x00\x01\x02\x03")),
     ("rows", ["?"], [("-01:02:03",)], "open")),
    ("stmt-close-unknown-statement", _quiet(b"\x19" + struct.pack("<I", 5)),
     ("no answer", "open")),
    ("stmt-long-data-unknown-statement", _quiet(b"\x18" + struct.pack("<IH", 5, 0) + b"xx"),
     ("no answer", "open")),
    ("stmt-prepare-over-max-prepared-stmt-count", _too_many_prepared,
     (16382, "error", 1461, "42000",
      "Can't create more than max_prepared_stmt_count statements (current value: 16382)",
      "open")),
    ("field-list-without-nul", _command(b"\x04beside"), MALFORMED),
    ("field-list-unknown-table", _command(b"\x04nope\0"),
     ("error", 1146, "42S02", "Table 'test.nope' doesn't exist", "open")),
    ("set-option-unknown", _command(b"\x1b\x05\x00"), MALFORMED),
    ("set-option-multi-statements-on", _command(b"\x1b\x00\x00"), ("eof", "open")),
    ("change-user-too-short", _command(b"\x11"), MALFORMED),
    ("change-user-wrong-password",
     _command(b"\x11root\0\x14" + bytes(20) + b"test\0\x2e\x00mysql_native_password\0"),
     ("error", 1045, "28000", "Access denied for user 'root'@'%' (using password: YES)",
      "closed")),
    ("init-db-unknown", _command(b"\x02nope"),
     ("error", 1049, "42000", "Unknown database 'nope'", "open")),
    ("prepare-too-many-placeholders",
     _command(b"\x16SELECT " + b",".join([b"?"] * 65536)),
     ("error", 1390, "HY000", "Prepared statement contains too many placeholders", "open")),
    ("prepare-two-statements", _command(b"\x16SELECT 1; SELECT 2"),
     ("error", 8115, "HY000", "Can not prepare multiple statements", "open")),
    ("init-db-not-utf8", _command(b"\x02\xff\xfe"),
     ("error", 1300, "HY000", "Invalid utf8mb4 character string: '\\xFF\\xFE'", "open")),
    ("query-wrong-sequence-id", _wrong_sequence,
     ("error", 1156, "08S01", "Got packets out of order", "closed")),
    ("query-over-max-allowed-packet", _too_large,
     ("error", 1153, "08S01", "Got a packet bigger than 'max_allowed_packet' bytes", "closed")),
    ("query-attributes-shorter-than-their-count",
     _command(b"\x03\x05\x01", capabilities=BASE | QUERY_ATTRIBUTES), MALFORMED),
]  # fmt: skip


# -- statements the port cannot answer, and odd SQL ----------------------------------------

SYNTAX = (
    "You have an error in your SQL syntax; check the manual that corresponds to your TiDB version"
)
STATEMENTS = [
    ("query-several-without-multi-statements", _statements("SELECT 1; SELECT 2"),
     ("error", 8130, "HY000",
      "client has multi-statement capability disabled. Run SET GLOBAL"
      " tidb_multi_statement_mode='ON' after you understand the security risk", "open")),
    ("query-unterminated-quote", _statements("SELECT 'abc"),
     ("error", 1064, "42000", "unterminated ' quote at end of script", "open")),
    ("query-not-utf8-literal", _statements(b"SELECT '\xff' AS x"),
     ("rows", ["x"], [("\ufffd",)], "open")),
    ("query-trailing-nul", _statements(b"SELECT 1 AS one\0"),
     ("rows", ["one"], [("1",)], "open")),
    ("query-nested-too-deeply", _statements("SELECT " + "(" * 3000 + "1" + ")" * 3000),
     ("error", 1064, "42000",
      f'{SYNTAX} for the right syntax to use line 1 column 108 near "(((((((((((((((((((("'
      " (expressions nest more than 100 levels deep)", "open")),
    ("query-kill", _statements("KILL 5"),
     ("error", 1105, "HY000", "unsupported statement: Kill", "open")),
    ("query-show-not-simulated-warns", _statements("SHOW ENGINES", "SHOW WARNINGS"),
     ("rows", ["Level", "Code", "Message"],
      [("Warning", "1105", "SHOW ENGINES is not simulated here: answered with no rows")],
      "open")),
    ("query-show-garbage", _statements("SHOW GARBAGE"),
     ("error", 1064, "42000",
      f'{SYNTAX} for the right syntax to use line 1 column 12 near "GARBAGE"', "open")),
    ("query-empty", _statements(""), ("ok", "open")),
    ("query-sleep", _statements("SELECT SLEEP(1)"), ("rows", ["SLEEP(1)"], [("0",)], "open")),
    ("query-decimal-zero-as-mysql-prints-it",  # was '0E-7' and '-0.000'
     _statements("SELECT 0.000 / 1 AS q, -0.000 * 1 AS z"),
     ("rows", ["q", "z"], [("0.0000000", "0.000")], "open")),
]  # fmt: skip


# -- clients that go --------------------------------------------------------------------------


def _goes_mid_transaction(table: str, leave: Callable[[Wire], None]) -> Callable[[Server], Seen]:
    """A client inserts inside a transaction, then goes as `leave` goes; another client's
    insert must not wait, and only its row is emitted."""

    def scenario(server: Server) -> Seen:
        w = logged_in(server)
        for sql in (f"CREATE TABLE {table} (id INT PRIMARY KEY)", "BEGIN",
                    f"INSERT INTO {table} VALUES (1)"):  # fmt: skip
            assert w.query(sql).kind == "ok"
        leave(w)
        other = logged_in(server)
        started = time.monotonic()
        answer = seen(other.query(f"INSERT INTO {table} VALUES (2)"))
        waited = time.monotonic() - started < LOCK_WAIT_S / 2
        other.close()
        return (*answer, "no wait" if waited else "waited", server.inserted(table))

    return scenario


def _quit(w: Wire) -> None:
    w.command(b"\x01")
    w.close()


def _half_packet(w: Wire) -> None:
    w.sock.sendall(struct.pack("<I", 100) + b"\x03SEL")
    w.close()


def _mid_result(w: Wire) -> None:
    w.command(b"\x03SELECT " + b", ".join(b"REPEAT('x', 1000)" for _ in range(500)))
    w.reset()


def _gone_at_greeting(server: Server) -> Seen:
    with socket.create_connection(("127.0.0.1", server.mysql_port)):
        pass
    w = logged_in(server)
    answer = seen(w.query("SELECT 1 AS one"))
    w.close()
    return answer


GOING = [
    ("client-reset-mid-transaction", _goes_mid_transaction("gone_rst", Wire.reset),
     ("ok", "no wait", [2])),
    ("com-quit-inside-transaction", _goes_mid_transaction("gone_quit", _quit),
     ("ok", "no wait", [2])),
    ("client-closes-mid-packet-inside-transaction",
     _goes_mid_transaction("gone_half", _half_packet), ("ok", "no wait", [2])),
    ("client-resets-mid-result-inside-transaction",
     _goes_mid_transaction("gone_result", _mid_result), ("ok", "no wait", [2])),
    ("client-closes-at-the-greeting", _gone_at_greeting, ("rows", ["one"], [("1",)])),
]  # fmt: skip

CASES = HANDSHAKES + COMMANDS + STATEMENTS + GOING


@pytest.mark.parametrize(
    ("scenario", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_hostile_client(server: Server, scenario: Callable[[Server], Seen], expected: Seen) -> None:
    logged = len(server.log.read_bytes())
    assert scenario(server) == expected
    time.sleep(0.05)  # what the server logs about a connection it just closed
    printed = server.log.read_bytes()[logged:].decode("utf-8", "replace")
    assert "Traceback" not in printed and "internal error" not in printed, printed


def test_the_suite_is_the_size_the_issue_asks() -> None:
    assert len(CASES) >= 30


# -- stopping the service with clients connected ----------------------------------------------


def _tail(server: Server, events: list[str]) -> None:
    url = f"{server.http}/sim/v1/clusters/default/changefeeds/default/tail"
    with httpx.stream("GET", url, timeout=30) as response:
        events += [line for line in response.iter_lines() if line.startswith(("event", "data"))]


def _waits(server: Server, answers: list[Any]) -> None:
    conn = server.mysql()
    try:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO stopping VALUES (1)")  # the open transaction's row
        answers.append("inserted")
    except pymysql.MySQLError as e:
        answers.append(e.args)


def _slow_body(server: Server, answers: list[Any]) -> None:
    """A request whose body never arrives whole."""
    port = int(server.http.rpartition(":")[2])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"POST /sim/v1/clusters/default/sql HTTP/1.1\r\nHost: x\r\n")
        s.sendall(b"Content-Length: 100\r\n\r\nSELECT")
        answer = b""
        while chunk := s.recv(4096):  # the answer, then the server closes
            answer += chunk
        answers.append(answer.partition(b"\r\n")[0])
        answers.append(answer.rpartition(b"\r\n")[2])


@pytest.mark.parametrize(
    ("sig", "times"),
    [(signal.SIGINT, 1), (signal.SIGTERM, 1), (signal.SIGINT, 2)],
    ids=["ctrl-c", "sigterm", "ctrl-c-twice-with-a-body-that-never-arrives"],
)
def test_stopping_with_clients_connected(tmp_path: Path, sig: signal.Signals, times: int) -> None:
    """Ctrl-C or SIGTERM while a session holds an open transaction, another waits for its
    lock, a tail streams (and, for a second Ctrl-C, a request's body never arrives): the
    tail ends with an `end` event, the waiting session gets 1053, the open transaction is
    rolled back and nothing of it is emitted, every sink is flushed, and the log holds no
    traceback. (It hung on the tail until a second Ctrl-C, which logged tracebacks of
    CancelledError and KeyboardInterrupt; SIGTERM ended it before it said what it flushed.)"""
    server = Server.start(tmp_path / "data", lock_wait_s="30")
    owner = server.mysql(autocommit=True)
    with owner.cursor() as cur:
        for sql in ("CREATE TABLE stopping (id INT PRIMARY KEY)",
                    "INSERT INTO stopping VALUES (3)", "BEGIN",
                    "INSERT INTO stopping VALUES (1)"):  # fmt: skip
            cur.execute(sql)
    events: list[str] = []
    waiting: list[Any] = []
    slow: list[Any] = []
    clients = [threading.Thread(target=_tail, args=(server, events)),
               threading.Thread(target=_waits, args=(server, waiting))]  # fmt: skip
    if times > 1:
        clients.append(threading.Thread(target=_slow_body, args=(server, slow)))
    for client in clients:
        client.start()
    time.sleep(0.5)
    printed = server.stop(sig, times)
    for client in clients:
        client.join(10)
    assert events[-2:] == ["event: end", 'data: {"reason":"the service is stopping"}']
    assert waiting == [(1053, "Server shutdown in progress")]
    if times > 1:
        assert slow == [
            b"HTTP/1.1 503 Service Unavailable",
            b'{"error_msg":"the service stopped before the request finished",'
            b'"error_code":"SIM:ServiceStopping"}',
        ]
    folder = (tmp_path / "data" / "default").resolve()
    sent = list(read_jsonl(str(folder)))
    messages = [json.loads(r.value) for r in sent if r.value]
    inserted = [row["id"] for m in messages if m["type"] == "INSERT" for row in m["data"]]
    assert inserted == ["3"]
    assert printed.endswith(
        "ticdc-sim stopped; every changefeed flushed and closed:\n"
        f"  changefeed default/default: {len(sent)} records to jsonl files in {folder}\n"
        f"  changefeed default/default: {remain(folder)}\n"
    ), printed
    assert "Traceback" not in printed and "ERROR" not in printed, printed


def test_a_plain_user_once_default_is_deleted_is_told_which_cluster(tmp_path: Path) -> None:
    """Plain `root` reaches cluster `default`; once it is deleted, the refusal names it (it
    named the user: "no cluster 'root'")."""
    server = Server.start(tmp_path / "data")
    assert httpx.delete(f"{server.http}/sim/v1/clusters/default").status_code == 204
    w = Wire(server.mysql_port)
    assert seen(w.login()) == (
        "error",
        1045,
        "28000",
        "Access denied for user 'root'@'%' (using password: NO) (no cluster 'default')",
    )
    w.close()
    printed = server.stop()
    assert "Traceback" not in printed, printed
