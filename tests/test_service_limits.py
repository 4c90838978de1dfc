"""What one client may hold of the service: MySQL connections (TiDB's max_connections, 1040
as MariaDB sends it), long data per connection (1153), result rows drained as they are
framed, HTTP requests at once (503 in the service's JSON shape), an HTTP answer's result
rows (an error that says what committed); and the changefeeds closed together."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pymysql
import pytest
from mysql_mimic.results import ResultColumn
from mysql_mimic.stream import MysqlStream
from mysql_mimic.types import ColumnType

from support_mariadb import MariaDB
from support_mysql_wire import Wire, handshake_response, parse_error
from support_service import Server
from ticdc_sim.cluster import CloseFailed, close_all
from ticdc_sim.errors import SimError
from ticdc_sim.service.mysql_wire import DRAIN_BYTES, MAX_PACKET, Stream

CONNECTIONS = 3
HTTP_AT_ONCE = 4
RESULT_BYTES = 1000
TOO_MANY = b"\xff\x10\x04#08004Too many connections"  # MariaDB's bytes (the oracle test)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    found = Server.start(
        tmp_path_factory.mktemp("limits") / "data",
        max_connections=str(CONNECTIONS),
        max_http_concurrency=str(HTTP_AT_ONCE),
        max_result_bytes=str(RESULT_BYTES),
    )
    yield found
    found.stop()


def _raw_error(port: int, user: str) -> bytes:
    """The packet that answers a login, raw."""
    w = Wire(port)
    try:
        w.greeting()
        w.send(handshake_response(user), 1)
        return w.read()
    finally:
        w.close()


# -- MySQL ------------------------------------------------------------------------------------


def test_a_connection_over_max_connections_gets_1040(server: Server) -> None:
    held = [server.mysql() for _ in range(CONNECTIONS)]
    try:
        assert _raw_error(server.mysql_port, "root") == TOO_MANY
        with pytest.raises(pymysql.OperationalError) as refused:
            server.mysql()
        assert refused.value.args == (1040, "Too many connections")
        held.pop().close()  # a place frees as a connection ends
        again = server.mysql()
        with again.cursor() as cursor:
            cursor.execute("SELECT 1")
            assert cursor.fetchall() == ((1,),)
        held.append(again)
    finally:
        for connection in held:
            connection.close()


def test_mariadb_answers_a_connection_over_max_connections_alike() -> None:
    """The oracle: the handshake, the client's answer, then 1040 (SQLSTATE 08004) where
    the OK would be (TiDB `openSession` checks the count there too). MariaDB's smallest
    max_connections is 10, and it keeps one more for a SUPER user (root)."""
    db, why = MariaDB.start("--max-connections=10")
    if db is None:
        pytest.skip(why)
    try:
        root = db.connect()
        with root.cursor() as cursor:
            cursor.execute("CREATE USER u@'%'")
        held = [pymysql.connect(host="127.0.0.1", port=db.port, user="u") for _ in range(9)]
        assert _raw_error(db.port, "u") == TOO_MANY
        for connection in [root, *held]:
            connection.close()
    finally:
        db.stop()


def _silent(port: int) -> socket.socket:
    """A socket that connects and never answers the greeting."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    return sock


def test_sockets_in_the_handshake_are_bounded_too(server: Server) -> None:
    """As many sockets may sit in the handshake as connections may be open: one more is
    closed at once, without a greeting; once they go, clients get in again."""
    silent = [_silent(server.mysql_port) for _ in range(CONNECTIONS)]
    try:
        for sock in silent:
            assert sock.recv(4)  # greeted
        extra = _silent(server.mysql_port)
        try:
            assert extra.recv(4) == b""  # closed, nothing said
        finally:
            extra.close()
    finally:
        for sock in silent:
            sock.close()
    deadline = 50
    while True:  # the server sees the closed sockets go
        try:
            connection = server.mysql()
            break
        except pymysql.OperationalError:
            deadline -= 1
            assert deadline, "no place freed"
            threading.Event().wait(0.1)
    connection.close()


def test_a_client_that_never_finishes_the_handshake_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MySQL's connect_timeout: the socket is closed once it passes, nothing said."""
    from ticdc_sim.service import mysql
    from ticdc_sim.service.registry import Registry
    from ticdc_sim.service.settings import Settings
    from ticdc_sim.service.turns import LoopTurns

    monkeypatch.setattr(mysql, "CONNECT_TIMEOUT_S", 0.2)

    async def run() -> bytes:
        listening = socket.create_server(("127.0.0.1", 0))
        port = listening.getsockname()[1]
        settings = Settings(mysql_port=port, max_connections=4)
        served = await mysql.start(settings, Registry(), LoopTurns(), listening)
        assert served is not None
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            greeting = await reader.read(4)
            assert greeting
            rest = await asyncio.wait_for(reader.read(), 5)  # to the end: the server closed
            writer.close()
            return rest
        finally:
            served.close()
            await served.wait_closed()

    rest = asyncio.run(run())
    # the end of the greeting, then the end of the stream: closed, no error packet after it
    assert rest.endswith(b"mysql_native_password\x00")


def _prepare(w: Wire, sql: str) -> int:
    """COM_STMT_PREPARE; its definitions (parameters, then result columns) read."""
    w.command(b"\x16" + sql.encode())
    head = w.read()
    stmt_id, columns, params = struct.unpack("<IHH", head[1:9])
    for count in (params, columns):
        for _ in range(count + 1 if count else 0):  # the definitions and their EOF
            w.read()
    return int(stmt_id)


def _long_data(w: Wire, stmt_id: int, param: int, size: int) -> None:
    w.command(b"\x18" + struct.pack("<IH", stmt_id, param) + bytes(size))


def _execute(w: Wire, stmt_id: int) -> bytes:
    """COM_STMT_EXECUTE of two string parameters (their values sent as long data)."""
    w.command(b"\x17" + struct.pack("<IBI", stmt_id, 0, 1) + b"\x00\x01\xfc\x00\xfc\x00")
    return w.read()


CHUNK = 15 << 20  # each under the 16 MiB packet


def _parameter_too_long(port: int) -> bytes:
    """What executing a statement answers once one parameter's long data passed 64 MiB."""
    w = Wire(port)
    try:
        assert w.login(database=None).kind == "ok"
        stmt_id = _prepare(w, "SELECT ?, ?")
        for _ in range(5):
            _long_data(w, stmt_id, 0, CHUNK)
        return _execute(w, stmt_id)
    finally:
        w.close()


PARAMETER_TOO_LONG = (
    b"\xff\x51\x04#HY000Parameter of prepared statement which is set through"
    b" mysql_send_long_data() is longer than 'max_allowed_packet' bytes"
)


def test_long_data_over_max_allowed_packet_is_said_at_execute_as_mariadb_does(
    server: Server,
) -> None:
    assert _parameter_too_long(server.mysql_port) == PARAMETER_TOO_LONG
    db, why = MariaDB.start("--max-allowed-packet=64M")
    if db is None:
        pytest.skip(why)
    try:
        assert _parameter_too_long(db.port) == PARAMETER_TOO_LONG
    finally:
        db.stop()


def test_long_data_is_bounded_per_connection_across_parameters_and_statements(
    server: Server,
) -> None:
    w = Wire(server.mysql_port)
    try:
        assert w.login().kind == "ok"
        first, second = _prepare(w, "SELECT ?, ?"), _prepare(w, "SELECT ?, ?")
        for stmt_id in (first, second):
            _long_data(w, stmt_id, 0, CHUNK)
            _long_data(w, stmt_id, 1, CHUNK)
        w.command(b"\x1a" + struct.pack("<I", first))  # COM_STMT_RESET gives its 30 MiB back
        assert w.answer().kind == "ok"
        _long_data(w, first, 0, CHUNK)
        _long_data(w, first, 1, CHUNK)  # 60 MiB held again: still under
        _long_data(w, first, 1, MAX_PACKET - 4 * CHUNK + 1)  # one byte over, in all
        error = parse_error(_execute(w, first))
        assert (error.code, error.state, error.message) == (
            1105,
            "HY000",
            "Parameters of prepared statements set through mysql_send_long_data() on this"
            " connection are longer than 'max_allowed_packet' bytes together; execute or"
            " reset the statements that hold some",
        )
        assert w.query("SELECT 1").rows == [("1",)]  # the connection goes on
        # the refused statement's data went, the other's 30 MiB stay: 34 more fit, not 35
        _long_data(w, first, 0, CHUNK)
        _long_data(w, first, 0, CHUNK)
        _long_data(w, second, 0, MAX_PACKET - 4 * CHUNK)  # 64 MiB held, in all
        _long_data(w, first, 1, 1)
        assert parse_error(_execute(w, first)).code == 1105
        assert w.query("SELECT 2").rows == [("2",)]
    finally:
        w.close()


class _Writer:
    """A transport's writer that keeps what each drain sent."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.sent.append(bytes(data))

    async def drain(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False


def test_result_rows_are_sent_as_they_are_framed() -> None:
    """A big result leaves in pieces of about DRAIN_BYTES, each sent before the next is
    framed, and the bytes are those of one write of every row."""
    columns = [ResultColumn("id", ColumnType.LONGLONG), ResultColumn("v", ColumnType.STRING)]
    rows = [(i, "x" * 200) for i in range(20_000)]  # about 4 MiB
    writer = _Writer()
    stream = Stream(MysqlStream(None, writer))  # type: ignore[arg-type]
    asyncio.run(stream.write_text_rows(rows, columns))
    asyncio.run(stream.drain())
    whole = MysqlStream(None, None)  # type: ignore[arg-type]
    whole.write_text_rows(rows, columns)
    assert b"".join(writer.sent) == bytes(whole._buffer)
    assert len(writer.sent) >= len(whole._buffer) // (2 * DRAIN_BYTES)
    assert max(len(piece) for piece in writer.sent) < 2 * DRAIN_BYTES


# -- HTTP -------------------------------------------------------------------------------------


def _held_request(server: Server, body: bytes) -> socket.socket:
    """A request under way: its headers sent, its body not yet whole."""
    port = int(server.http.rsplit(":", 1)[1])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = (
        "POST /sim/v1/clusters/default/sql HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    s.sendall(head.encode() + body[:6])
    return s


def _status(s: socket.socket, rest: bytes) -> int:
    s.sendall(rest)
    answer = b""
    while chunk := s.recv(65536):
        answer += chunk
    s.close()
    return int(answer.split(b" ", 2)[1])


def test_requests_over_max_http_concurrency_get_503_in_the_service_shape(
    server: Server,
) -> None:
    body = b"SELECT 1"
    held = [_held_request(server, body) for _ in range(HTTP_AT_ONCE)]
    try:
        over = httpx.get(f"{server.http}/sim/v1/clusters")
        assert over.status_code == 503
        assert over.headers["retry-after"] == "1"
        assert over.json() == {
            "error_msg": f"the service has {HTTP_AT_ONCE} connections or requests at once,"
            " its limit (TICDC_SIM_MAX_HTTP_CONCURRENCY); try again shortly",
            "error_code": "SIM:TooManyRequests",
        }
        registry = httpx.get(f"{server.http}/sim/v1/clusters/default/schema-registry/subjects")
        assert registry.status_code == 503
        assert registry.json() == {  # Confluent's shape, for the registry's clients
            "error_code": 503,
            "message": over.json()["error_msg"],
        }
    finally:
        statuses = [_status(s, body[6:]) for s in held]
    assert statuses == [200] * HTTP_AT_ONCE  # the requests under way were served
    assert httpx.get(f"{server.http}/sim/v1/clusters").status_code == 200


def test_result_rows_over_max_result_bytes_say_what_committed(server: Server) -> None:
    values = ", ".join(f"({i}, '{'v' * 20}')" for i in range(1, 41))
    script = (
        "CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR(20));\n"
        f"INSERT INTO big VALUES {values};\n"
        "SELECT id FROM big WHERE id <= 3;\n"
        "SELECT * FROM big;\n"
        "INSERT INTO big VALUES (41, 'after');\n"
    )
    answer = httpx.post(f"{server.http}/sim/v1/clusters/default/sql", content=script)
    assert answer.status_code == 413, answer.text
    error = answer.json()
    assert error["error_code"] == "SIM:ResultTooLarge"
    said = re.fullmatch(
        r"the result rows of statement 4 \(line 4, column 1: SELECT \* FROM big\) take the"
        rf" answer over {RESULT_BYTES} bytes \(TICDC_SIM_MAX_RESULT_BYTES\); select fewer rows"
        r" \(LIMIT\), or read them over the MySQL port, which sends rows as they go\. The"
        r" script ran to its end; what it committed stays committed: 3 transactions"
        r" \(commit_ts (\d+), (\d+), (\d+)\)",
        error["error_msg"],
    )
    assert said is not None, error["error_msg"]
    # the three are the changefeed's: the table, the 40 rows, the one after
    page = httpx.get(
        f"{server.http}/sim/v1/clusters/default/changefeeds/default/messages",
        params={"limit": 10_000},
    ).json()["messages"]
    sent: dict[int, set[str]] = {}
    for message in page:
        value = json.loads(base64.b64decode(message["value"]))
        if value.get("table") == "big":
            sent.setdefault(int(value["_tidb"]["commitTs"]), set()).add(value["type"])
    assert sorted(sent) == [int(ts) for ts in said.groups()]
    assert [sent[ts] for ts in sorted(sent)] == [{"CREATE"}, {"INSERT"}, {"INSERT"}]
    small = httpx.post(
        f"{server.http}/sim/v1/clusters/default/sql", content="SELECT id FROM big LIMIT 2"
    )
    assert small.json()["statements"][0]["rows"] == [[1], [2]]


# -- closing ----------------------------------------------------------------------------------


def test_close_all_closes_every_part_at_once_and_says_it_in_order() -> None:
    """Three parts that each wait for the others (closed one after another, the first
    would wait for ever); the last finishes first; what they said, and the failure, come
    in the order the parts were given."""
    together = threading.Barrier(3, timeout=10)
    finished = {name: threading.Event() for name in "abc"}
    after = {"a": "b", "b": "c"}  # a finishes after b, b after c
    done: list[str] = []

    def part(name: str, fails: bool = False) -> Any:
        def close() -> list[str]:
            together.wait()
            if name in after:
                assert finished[after[name]].wait(10)
            done.append(name)
            finished[name].set()
            if fails:
                raise SimError("broker gone")
            return [f"{name} flushed"]

        return close

    with pytest.raises(CloseFailed) as failed:
        close_all([("a", part("a")), ("b", part("b", fails=True)), ("c", part("c"))])
    assert done == ["c", "b", "a"]
    assert failed.value.said == ["a: a flushed", "c: c flushed"]
    assert str(failed.value) == "b: broker gone"
    assert close_all([("only", lambda: ["x"])], label=False) == ["x"]
