"""A file sink's disk full or its directory unwritable: the changefeed fails at once with a
clear error in the open API (not retried: the cause stays until someone acts), the cluster
goes on serving SQL, what was written before stays whole, and the sink writes on once space
is back (a resumed changefeed sends again from its checkpoint into the same sink).

The disk is a real one where the machine allows: a 256 KiB tmpfs mounted in a mount namespace
of the service's own (`unshare -rm`), read from outside through /proc/PID/root."""

from __future__ import annotations

import errno
import itertools
import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from support_service import Server
from ticdc_sim.encoders import Message
from ticdc_sim.service.app import create_app
from ticdc_sim.service.settings import Settings
from ticdc_sim.sinks import jsonl, staging
from ticdc_sim.sinks.jsonl import JsonlSink, read_jsonl
from ticdc_sim.sinks.parquet import ParquetSink, read_parquet
from ticdc_sim.sinks.retention import WRITE_FAILED, Rotation, WriteFailed
from ticdc_sim.sinks.staging import write_atomically

FULL = "No space left on device"
# a tmpfs on the data directory, in a mount namespace of the command's own, then the command
_MOUNT = 'mount -t tmpfs -o size=256k tmpfs "$0" && exec "$@"'


def _small_disk(directory: Path) -> list[str]:
    return ["unshare", "-rm", "sh", "-c", _MOUNT, str(directory)]


def _why_no_small_disk(directory: Path) -> str | None:
    """Why a tmpfs cannot be mounted here (no unshare, user namespaces off), if so."""
    if shutil.which("unshare") is None:
        return "unshare(1) is not installed"
    probe = subprocess.run(
        [*_small_disk(directory), "true"], capture_output=True, text=True, check=False
    )
    if probe.returncode:
        return f"unshare -rm cannot mount a tmpfs here: {probe.stderr.strip()}"
    return None


def _changefeed(http: str, feed: str) -> dict[str, Any]:
    found: dict[str, Any] = httpx.get(f"{http}/api/v2/changefeeds/{feed}").json()
    return found


def _failed_as_a_full_disk(info: dict[str, Any], data: Path) -> None:
    """The open API's changefeed: held with TiCDC's code and the file that could not be
    written."""
    assert info["state"] == "failed", info
    error = info["error"]
    assert error["code"] == WRITE_FAILED == "CDC:ErrProcessorUnknown"
    assert error["message"].startswith(f"cannot write {data}/"), error
    assert error["message"].endswith(f": {FULL}"), error


def test_a_full_disk_fails_the_changefeed_and_sql_goes_on(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    reason = _why_no_small_disk(data)
    if reason is not None:
        pytest.skip(reason)
    server = Server.start(data, wrap=_small_disk(data))
    try:
        seen = Path(f"/proc/{server.process.pid}/root{data}")  # the service's tmpfs
        uri = "parquet://pq?protocol=canal-json&flush-interval=0s"  # a file each request
        made = httpx.post(
            f"{server.http}/api/v2/changefeeds", json={"changefeed_id": "pq", "sink_uri": uri}
        )
        assert made.status_code == 200, made.text
        server.sql("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
        noise = random.Random(28)
        sent = 0
        while sent < 400 and any(
            _changefeed(server.http, feed)["state"] == "normal" for feed in ("default", "pq")
        ):
            value = noise.randbytes(1500).hex()  # 3 kB a row, hardly compressible
            answer = server.sql(f"INSERT INTO t VALUES ({sent}, '{value}')")
            assert answer["ok"] and answer["transactions"], answer  # committed: SQL goes on
            sent += 1
        for feed in ("default", "pq"):
            _failed_as_a_full_disk(_changefeed(server.http, feed), data)
        counted = server.sql("SELECT COUNT(*) FROM t")["statements"][0]["rows"]
        assert counted == [[sent]]
        # what was written before the disk filled: whole lines, every row in order from the
        # first; whole parquet files, nothing half-written left behind
        ids = [
            row["id"]
            for record in read_jsonl(str(seen / "default"))
            for row in orjson.loads(record.value or b"null")["data"] or []
        ]
        assert ids == [str(i) for i in range(len(ids))] and ids
        parts = sorted((seen / "pq").rglob("*.parquet*"))
        assert parts and all(p.suffix == ".parquet" for p in parts)
        for part in parts:
            assert pq.ParquetFile(part).metadata.num_rows > 0
        assert list(read_parquet(str(seen / "pq")))
    finally:
        printed = server.stop()
    assert "changefeed default/default:" in printed and f"then it failed: cannot write {data}/" in (
        printed
    )


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", mysql_port=0)
    with TestClient(create_app(settings)) as c:
        yield c


def test_an_unwritable_directory_fails_the_changefeed_with_its_path(
    client: TestClient, tmp_path: Path
) -> None:
    """A file where the changefeed's topic directory goes (`mkdir` refuses, as it refuses a
    directory without write permission): the changefeed fails naming the path; SQL goes on."""
    body = {"changefeed_id": "blocked", "sink_uri": "jsonl://blocked?protocol=canal-json"}
    assert client.post("/api/v2/changefeeds", json=body).status_code == 200
    blocker = tmp_path / "data" / "blocked" / "ticdc"
    blocker.write_text("not a directory")
    sql = "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);"
    answer = client.post("/sim/v1/clusters/default/sql", content=sql)
    assert answer.status_code == 200 and answer.json()["ok"]
    info = client.get("/api/v2/changefeeds/blocked").json()
    assert info["state"] == "failed"
    assert info["error"]["code"] == "CDC:ErrProcessorUnknown"
    assert info["error"]["message"] == f"cannot write {blocker}: File exists"
    assert client.get("/api/v2/changefeeds/default").json()["state"] == "normal"
    counted = client.post("/sim/v1/clusters/default/sql", content="SELECT COUNT(*) FROM t")
    assert counted.json()["statements"][0]["rows"] == [[1]]


def _enospc_after_half(real: Any) -> Any:
    def disk_full(fd: int, data: bytes) -> int:
        real(fd, data[: len(data) // 2])  # half of it reaches the disk, then ENOSPC
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    return disk_full


def _messages(*values: bytes) -> list[Message]:
    return [Message(None, v, 1) for v in values]


def test_jsonl_writes_on_after_a_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The failed flush leaves whole lines only and drops its lines; the same sink, sent
    them again from the checkpoint once space is back, appends them at the offsets they
    would have had."""
    sink = JsonlSink(str(tmp_path / "out"), in_place=True)
    sink.send("t", 0, _messages(b"a", b"b"))
    sink.flush()
    monkeypatch.setattr(jsonl.os, "write", _enospc_after_half(os.write))
    sink.send("t", 0, _messages(b"c", b"d"))
    with pytest.raises(WriteFailed) as failed:
        sink.flush()
    path = tmp_path / "out" / "t" / "partition-0.jsonl"
    assert str(failed.value) == f"cannot write {path}: {FULL}"
    assert failed.value.error_code == "CDC:ErrProcessorUnknown" and not failed.value.retryable
    assert [r.value for r in read_jsonl(str(tmp_path / "out"))] == [b"a", b"b"]
    monkeypatch.undo()
    sink.send("t", 0, _messages(b"c", b"d"))
    sink.close()
    written = [(r.offset, r.value) for r in read_jsonl(str(tmp_path / "out"))]
    assert written == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]


def test_parquet_keeps_its_finished_files_and_writes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that cannot be written whole is removed, never renamed in; the next starts
    where the finished ones end."""
    sink = ParquetSink(str(tmp_path / "out"), in_place=True, rotation=Rotation(1 << 20))
    sink.send("t", 0, _messages(b"a", b"b"))
    sink.flush()

    def disk_full(self: pq.ParquetWriter, table: pa.Table, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, f"Error writing bytes to file. Detail: [errno 28] {FULL}")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", disk_full)
    sink.send("t", 0, _messages(b"c", b"d"))
    folder = tmp_path / "out" / "topic=t" / "partition=0"
    with pytest.raises(WriteFailed, match=f"^cannot write {folder}/part-2.parquet: {FULL}$"):
        sink.flush()
    assert sorted(p.name for p in folder.iterdir()) == ["part-0.parquet"]
    monkeypatch.undo()
    sink.send("t", 0, _messages(b"c", b"d"))
    sink.close()
    assert sorted(p.name for p in folder.iterdir()) == ["part-0.parquet", "part-2.parquet"]
    written = [(r.offset, r.value) for r in read_parquet(str(tmp_path / "out"))]
    assert written == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]


def test_an_atomic_write_that_fails_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The storage sink's files, `metadata` and the schema registry beside a directory:
    a temporary file, then a rename; a full disk leaves the old file and no temporary."""
    target = tmp_path / "metadata"
    write_atomically(target, b'{"checkpoint-ts":1}')
    real = Path.write_bytes

    def disk_full(self: Path, data: bytes) -> int:
        real(self, data[:3])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(staging.Path, "write_bytes", disk_full)
    with pytest.raises(WriteFailed, match=f"^cannot write {target}: {FULL}$"):
        write_atomically(target, b'{"checkpoint-ts":2}')
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["metadata"]
    assert target.read_bytes() == b'{"checkpoint-ts":1}'


@pytest.mark.parametrize("update", [False, True], ids=["resumed", "updated-then-resumed"])
@pytest.mark.parametrize("scheme", ["jsonl", "parquet"])
def test_a_changefeed_resumed_after_a_full_disk_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheme: str, update: bool
) -> None:
    """The write that failed took lines (jsonl) or an unfinished file (parquet, with rows
    sent before it) with it; resumed once space is back (or updated, then resumed), the
    changefeed goes on from what is on disk, and a TiCDC-style consumer of the files
    rebuilds the cluster's table."""
    from support_changelog import consumed, merged, rebuild

    uri = f"{scheme}://out?protocol=canal-json&enable-tidb-extension=true"
    settings = Settings(data_dir=tmp_path / "data", mysql_port=0, backoff_init_s=0.05)
    with TestClient(create_app(settings)) as client:
        made = client.post("/api/v2/changefeeds", json={"changefeed_id": "f", "sink_uri": uri})
        assert made.status_code == 200, made.text
        cluster = client.app.state.sim.registry.get("default")  # type: ignore[attr-defined]
        if scheme == "parquet":  # 10 s pass between requests: each finishes its files
            cluster.feeds["f"].sink.inner.clock = itertools.count(0, 10).__next__

        def sql(text: str) -> None:
            answer = client.post("/sim/v1/clusters/default/sql", content=text)
            assert answer.status_code == 200 and answer.json()["ok"], answer.text

        sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20));")
        for i in range(5):
            sql(f"INSERT INTO t VALUES ({i}, 'v{i}'); UPDATE t SET v = 'u{i}' WHERE id = {i};")
        if scheme == "jsonl":
            monkeypatch.setattr(jsonl.os, "write", _enospc_after_half(os.write))
        else:  # two requests' rows sit in open files, then finishing them fails
            sink = cluster.feeds["f"].sink.inner
            sink.clock = lambda: 100
            sql("INSERT INTO t VALUES (5, 'v5'); INSERT INTO t VALUES (6, 'v6');")

            def disk_full(self: pq.ParquetWriter, table: pa.Table, **kwargs: Any) -> None:
                raise OSError(errno.ENOSPC, FULL)

            monkeypatch.setattr(pq.ParquetWriter, "write_table", disk_full)
            sink.clock = itertools.count(1000, 10).__next__
        for i in range(7, 9):  # the failure: SQL is answered all the same
            sql(f"INSERT INTO t VALUES ({i}, 'v{i}');")
        status = client.get("/api/v2/changefeeds/f/status").json()
        assert status["state"] == "failed", status
        assert status["last_error"]["code"] == WRITE_FAILED
        monkeypatch.undo()
        sql("DELETE FROM t WHERE id = 1;")
        if update:  # the same files, another config: it goes on from what is on disk
            body = {"sink_uri": uri, "replica_config": {"force_replicate": True}}
            assert client.put("/api/v2/changefeeds/f", json=body).status_code == 200
        assert client.post("/api/v2/changefeeds/f/resume").status_code == 200
        cluster.tick()  # the supervisor's restart, now rather than within a second
        assert client.get("/api/v2/changefeeds/f/status").json()["state"] == "normal"
        sql("INSERT INTO t VALUES (9, 'v9');")
        rows = client.post("/sim/v1/clusters/default/sql", content="SELECT id, v FROM t;")
        expected = {tuple(r) for r in rows.json()["statements"][0]["rows"]}
    read = read_jsonl if scheme == "jsonl" else read_parquet
    records = list(read(str(tmp_path / "data" / "out")))
    tables = rebuild(merged(consumed(records, f"memory://?{uri.split('?')[1]}")))
    assert {(r["id"], r["v"]) for r in tables["test.t"]} == expected
