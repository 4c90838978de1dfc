"""The jsonl fixture layout, its safety rules, file sinks written in place for a service's
changefeed (jsonl and parquet), and the CLI round trip replay -> decode."""

from __future__ import annotations

import base64
import errno
import os
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from ticdc_sim.cli import app
from ticdc_sim.encoders import Message
from ticdc_sim.errors import ConfigError, SimError
from ticdc_sim.sinks import jsonl, parquet
from ticdc_sim.sinks.jsonl import JsonlSink, read_jsonl
from ticdc_sim.sinks.memory import BlackholeSink
from ticdc_sim.sinks.parquet import ParquetSink, read_parquet


def test_layout_lines_and_offsets(tmp_path: Path) -> None:
    sink = JsonlSink(str(tmp_path / "out"))
    sink.send("a", 1, [Message(b"k", b"v1", 1), Message(None, b"v2", 2, headers={"h": b"\x00"})])
    sink.send("a", 1, [Message(None, None, 3)])
    sink.send("b", 0, [Message(None, b"x", 4)])
    sink.close()
    lines = (tmp_path / "out" / "a" / "partition-1.jsonl").read_bytes().splitlines()
    assert [orjson.loads(line) for line in lines] == [
        {"offset": 0, "key": "aw==", "value": "djE=", "headers": {}},
        {"offset": 1, "key": None, "value": "djI=", "headers": {"h": "AA=="}},
        {"offset": 2, "key": None, "value": None, "headers": {}},
    ]
    records = list(read_jsonl(str(tmp_path / "out")))
    assert [(r.topic, r.partition, r.offset, r.key, r.value) for r in records] == [
        ("a", 1, 0, b"k", b"v1"),
        ("a", 1, 1, None, b"v2"),
        ("a", 1, 2, None, None),
        ("b", 0, 0, None, b"x"),
    ]
    assert records[1].headers == {"h": b"\x00"}


def test_a_non_empty_directory_needs_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sink = JsonlSink(str(out))
    sink.send("t", 0, [Message(None, b"old", 1)])
    sink.close()
    with pytest.raises(ConfigError, match="is not empty; pass --overwrite"):
        JsonlSink(str(out))
    sink = JsonlSink(str(out), overwrite=True)
    sink.send("u", 0, [Message(None, b"new", 1)])
    sink.close()
    assert sorted(p.name for p in out.iterdir()) == ["u"]


def test_overwrite_refuses_foreign_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="'notes.txt', which is not ticdc-sim output"):
        JsonlSink(str(tmp_path), overwrite=True)
    assert (tmp_path / "notes.txt").exists()


def test_a_failed_write_leaves_whole_lines_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = JsonlSink(str(tmp_path / "out"))
    sink.send("t", 0, [Message(None, b"first", 1)])
    sink.files[("t", 0)].flush()
    real_write = os.write

    def disk_full(fd: int, data: bytes) -> int:
        real_write(fd, data[: len(data) // 2])  # half a line reaches the disk, then ENOSPC
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(jsonl.os, "write", disk_full)
    sink.send("t", 0, [Message(None, b"second", 2)])
    with pytest.raises(SimError, match="No space left on device"):
        sink.close()
    monkeypatch.undo()
    assert not (tmp_path / "out").exists()  # nothing that looks complete
    assert [r.value for r in read_jsonl(str(tmp_path / "out.partial"))] == [b"first"]


def test_in_place_jsonl_is_readable_at_each_flush(tmp_path: Path) -> None:
    """A service's changefeed: files in DIR itself, whole lines on disk after each flush
    (its checkpoint), nothing hidden beside it; earlier output of ours is replaced."""
    out = tmp_path / "out"
    (out / "old").mkdir(parents=True)
    (out / "old" / "partition-0.jsonl").write_bytes(b"")
    sink = JsonlSink(str(out), overwrite=True, in_place=True)
    assert list(out.iterdir()) == []
    sink.send("t", 0, [Message(None, b"a", 1), Message(None, b"b", 2)])
    assert list(read_jsonl(str(out))) == []  # buffered until the checkpoint
    sink.flush()
    assert [r.value for r in read_jsonl(str(out))] == [b"a", b"b"]
    sink.send("t", 0, [Message(None, b"c", 3)])
    sink.send("u", 1, [Message(None, b"d", 4)])
    sink.flush()
    assert [(r.topic, r.offset, r.value) for r in read_jsonl(str(out))] == [
        ("t", 0, b"a"),
        ("t", 1, b"b"),
        ("t", 2, b"c"),
        ("u", 0, b"d"),
    ]
    sink.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert len(list(read_jsonl(str(out)))) == 4


def test_in_place_parquet_finishes_a_file_at_each_flush(tmp_path: Path) -> None:
    """Parquet is readable only whole: each flush finishes the partition's file, the next
    records start `part-<first offset>.parquet`, and the file being written stays hidden."""
    out = tmp_path / "out"
    sink = ParquetSink(str(out), overwrite=True, in_place=True)
    sink.send("t", 0, [Message(None, b"a", 1), Message(None, b"b", 2)])
    folder = out / "topic=t" / "partition=0"
    assert [p.name for p in folder.iterdir()] == [".part-0.parquet.writing"]
    assert list(read_parquet(str(out))) == []
    sink.flush()
    sink.send("t", 0, [Message(None, b"c", 3)])
    assert [r.value for r in read_parquet(str(out))] == [b"a", b"b"]
    sink.flush()
    assert sorted(p.name for p in folder.iterdir()) == ["part-0.parquet", "part-2.parquet"]
    assert [(r.offset, r.value) for r in read_parquet(str(out))] == [
        (0, b"a"),
        (1, b"b"),
        (2, b"c"),
    ]
    sink.send("t", 0, [Message(None, b"d", 4)])
    sink.close()
    assert [r.offset for r in read_parquet(str(out))] == [0, 1, 2, 3]
    # a killed service leaves a file being written: still ours to replace
    (folder / ".part-4.parquet.writing").write_bytes(b"PAR1")
    ParquetSink(str(out), overwrite=True, in_place=True).close()
    assert list(out.iterdir()) == []


def test_no_file_descriptor_left_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file per partition stays open: past the process's limit, the sink says so (the
    service's changefeed then fails with it) instead of raising an OSError."""

    def exhausted(*args: object, **kwargs: object) -> int:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(jsonl.os, "open", exhausted)
    sink = JsonlSink(str(tmp_path / "j"))
    with pytest.raises(
        SimError, match=r"cannot write .*/t/partition-0.jsonl: Too many open files$"
    ):
        sink.send("t", 0, [Message(None, b"a", 1)])
    monkeypatch.setattr(parquet.pq, "ParquetWriter", exhausted)
    out = ParquetSink(str(tmp_path / "p"))
    with pytest.raises(
        SimError, match=r"cannot write .*/topic=t/partition=0: .*Too many open files"
    ):
        out.send("t", 0, [Message(None, b"a", 1)])


def test_a_sink_directory_that_cannot_be_made_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for in_place in (False, True):
        with pytest.raises(ConfigError, match=r"jsonl sink: cannot write .*file/.*Not a directory"):
            JsonlSink(str(tmp_path / "file" / "out"), in_place=in_place)


def test_reading_reports_a_cut_line(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "partition-0.jsonl").write_bytes(b'{"offset":0,"key":null,"val')
    with pytest.raises(SimError, match=r"partition-0.jsonl:1: the last line is cut off"):
        list(read_jsonl(str(tmp_path)))


SCRIPT = """
CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10));
INSERT INTO t VALUES (1, 'a'), (2, 'b');
UPDATE t SET v = 'c' WHERE id = 1;
DELETE FROM t WHERE id = 2;
"""


@pytest.mark.parametrize(
    "protocol",
    ["canal-json", "open-protocol", "craft", "simple", "simple&encoding-format=avro", "canal"],
)
def test_cli_replay_then_decode(tmp_path: Path, protocol: str) -> None:
    script = tmp_path / "s.sql"
    script.write_text(SCRIPT)
    config = tmp_path / "cf.toml"
    config.write_text('[[sink.dispatchers]]\nmatcher = ["*.*"]\npartition = "index-value"\n')
    uri = f"jsonl://{tmp_path}/out?protocol={protocol}&partition-num=2&enable-tidb-extension=true"
    runner = CliRunner()
    done = runner.invoke(app, ["replay", str(script), "--sink-uri", uri, "--config", str(config)])
    assert done.exit_code == 0, done.output
    assert "4 rows, 1 DDL" in done.output
    first = sorted((tmp_path / "out" / "ticdc").iterdir())
    assert [p.name for p in first] == ["partition-0.jsonl", "partition-1.jsonl"]
    again = runner.invoke(app, ["replay", str(script), "--sink-uri", uri])
    assert again.exit_code == 1 and "pass --overwrite" in again.output
    again = runner.invoke(app, ["replay", str(script), "--sink-uri", uri, "--overwrite"])
    assert again.exit_code == 0
    decoded = runner.invoke(app, ["decode", uri])
    assert decoded.exit_code == 0, decoded.output
    lines = [orjson.loads(line) for line in decoded.stdout.splitlines()]
    rows = [
        (x["type"], x["columns"], x["pre_columns"])
        for x in lines
        if x["type"] in ("insert", "update", "delete")
    ]
    assert ("insert", {"id": 1, "v": "a"}, None) in rows
    assert ("update", {"id": 1, "v": "c"}, {"id": 1, "v": "a"}) in rows
    assert ("delete", None, {"id": 2, "v": "b"}) in rows
    assert all({"topic", "partition", "offset", "index"} <= set(x) for x in lines)


def test_cli_replay_is_deterministic(tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_text(
        SCRIPT + "INSERT INTO t VALUES (3, LEFT(UUID(), 10)), (4, LEFT(RAND(), 10));\n"
    )
    outputs = []
    for run in ("a", "b"):
        uri = f"jsonl://{tmp_path}/{run}?protocol=canal-json&enable-tidb-extension=true"
        assert (
            CliRunner()
            .invoke(app, ["replay", str(script), "--sink-uri", uri, "--seed", "9"])
            .exit_code
            == 0
        )
        outputs.append(
            {
                p.relative_to(tmp_path / run): p.read_bytes()
                for p in (tmp_path / run).rglob("*.jsonl")
            }
        )
    assert outputs[0] == outputs[1] and outputs[0]


def test_cli_errors_name_the_problem(tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_text(SCRIPT)
    runner = CliRunner()
    bad = runner.invoke(
        app, ["replay", str(script), "--sink-uri", "jsonl:///x?protocol=canal-json&oops=1"]
    )
    assert bad.exit_code == 1 and "unknown parameter 'oops'" in bad.output
    config = tmp_path / "cf.toml"
    config.write_text("[sink]\nprotocol = 'canal-json'\n")
    bad = runner.invoke(app, ["replay", str(script), "--config", str(config)])
    assert bad.exit_code == 1 and "--config needs --sink-uri" in bad.output
    missing = runner.invoke(app, ["decode", f"jsonl://{tmp_path}/none?protocol=canal-json"])
    assert missing.exit_code == 1 and "is not a directory" in missing.output
    (tmp_path / "junk" / "t").mkdir(parents=True)
    value = base64.b64encode(b"not json").decode()
    (tmp_path / "junk" / "t" / "partition-0.jsonl").write_text(
        f'{{"offset":0,"key":null,"value":"{value}","headers":{{}}}}\n'
    )
    junk = runner.invoke(app, ["decode", f"jsonl://{tmp_path}/junk?protocol=canal-json"])
    assert junk.exit_code == 1 and junk.output == (
        f"error: {tmp_path}/junk/t/partition-0.jsonl offset 0: not a canal-json message:"
        " not JSON at byte 0 (invalid literal, expected 'null')\n"
    )


@pytest.mark.parametrize("field", ["key", "value"])
def test_a_jsonl_record_whose_bytes_are_not_base64_is_refused(tmp_path: Path, field: str) -> None:
    (tmp_path / "t").mkdir()
    record = {"offset": 0, "key": None, "value": "e30=", "headers": {}, field: "!!!"}
    (tmp_path / "t" / "partition-0.jsonl").write_bytes(orjson.dumps(record) + b"\n")
    with pytest.raises(SimError, match=r"partition-0.jsonl:1: not a jsonl record \(Only base64"):
        list(read_jsonl(str(tmp_path)))


def test_the_blackhole_counts_records_and_their_key_and_value_bytes() -> None:
    sink = BlackholeSink()
    sink.send("t", 0, [Message(b"key", b"value", 1), Message(None, b"12", 2)])
    sink.send("t", 1, [Message(b"k", None, 3)])  # a tombstone: a key, no value
    assert (sink.records, sink.bytes) == (3, 3 + 5 + 2 + 1)
