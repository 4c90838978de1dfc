"""File sinks held flat: jsonl and parquet rotate at `file-size`, a cap removes the oldest
finished files (never one being written), the storage sink's buffers are bounded together,
readers read what remains in order, and each sink says what remains (`sinks.OnDisk`)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
from fastapi.testclient import TestClient

from support_s3 import S3Server
from ticdc_sim.config import changefeed
from ticdc_sim.encoders import Message
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.model.events import DDLEvent
from ticdc_sim.pipeline import Pipeline
from ticdc_sim.service.app import create_app
from ticdc_sim.service.settings import Settings
from ticdc_sim.sinks import OnDisk, open_sink
from ticdc_sim.sinks.jsonl import JsonlSink, read_jsonl
from ticdc_sim.sinks.parquet import ParquetSink, read_parquet
from ticdc_sim.sinks.retention import Rotation, size_text

LINE = 88  # bytes of one jsonl line of `_message()`: {"offset":N,...} with a 1-digit offset


def _message(ts: int = 1) -> Message:
    return Message(None, b"x" * 30, ts)


def _listing(folder: Path) -> list[tuple[str, int]]:
    return sorted((p.name, p.stat().st_size) for p in folder.iterdir())


def test_jsonl_segments_rotate_at_file_size(tmp_path: Path) -> None:
    """Two 88-byte lines fit in 200 bytes, a third starts the next segment: segments are
    named by their first offset, the live file is partition-P.jsonl, and the reader reads
    them in offset order."""
    sink = JsonlSink(str(tmp_path / "out"), in_place=True, rotation=Rotation(200))
    for _ in range(5):
        sink.send("t", 0, [_message()])
        sink.flush()
    assert _listing(tmp_path / "out" / "t") == [
        ("partition-0.00000000000000000000.jsonl", 2 * LINE),
        ("partition-0.00000000000000000002.jsonl", 2 * LINE),
        ("partition-0.jsonl", LINE),
    ]
    assert sink.disk_usage() == (5 * LINE, 3) and sink.removed() == (0, 0)
    assert sink.remaining() == f"440 bytes in 3 files remain in {tmp_path / 'out'}"
    sink.close()
    assert [r.offset for r in read_jsonl(str(tmp_path / "out"))] == [0, 1, 2, 3, 4]


def test_jsonl_cap_removes_the_oldest_segments_never_the_live_file(tmp_path: Path) -> None:
    sink = JsonlSink(str(tmp_path / "out"), in_place=True, rotation=Rotation(200, 400))
    assert isinstance(sink, OnDisk)
    for i in range(10):  # two partitions taking turns
        sink.send("t", i % 2, [_message()])
        sink.flush()
    # each partition: segments from 0 and 2, the live file from 4; finished in the order
    # 0:0, 1:0, 0:2, 1:2. Each time the sink passes 400 bytes the oldest goes
    assert _listing(tmp_path / "out" / "t") == [
        ("partition-0.jsonl", LINE),
        ("partition-1.00000000000000000002.jsonl", 2 * LINE),
        ("partition-1.jsonl", LINE),
    ]
    assert sink.disk_usage() == (4 * LINE, 3)
    assert sink.removed() == (6 * LINE, 3)
    assert sink.remaining() == (
        f"352 bytes in 3 files remain in {tmp_path / 'out'} (t[0] from offset 4,"
        " t[1] from offset 2, 3 files (528 bytes) removed by the cap)"
    )
    sink.close()
    kept = [(r.partition, r.offset) for r in read_jsonl(str(tmp_path / "out"))]
    assert kept == [(0, 4), (1, 2), (1, 3), (1, 4)]


def test_a_cli_run_keeps_one_file_per_partition_unless_the_uri_asks(tmp_path: Path) -> None:
    """DESIGN.md's layout for `replay`: `partition-<p>.jsonl`; `file-size` in the URI (at
    least TiCDC's 1 MiB) rotates it. A service's changefeed rotates at file-size always."""
    plain = open_sink(changefeed(f"jsonl://{tmp_path / 'plain'}?protocol=simple", None).sink)
    asked = changefeed(f"jsonl://{tmp_path / 'asked'}?protocol=simple&file-size=1048576", None)
    rotating = open_sink(asked.sink, feed=asked)
    big = Message(None, b"y" * 300_000, 1)
    for sink in (plain, rotating):
        sink.send("t", 0, [big] * 5)
        sink.close()
    assert [p.name for p in (tmp_path / "plain" / "t").iterdir()] == ["partition-0.jsonl"]
    line = len(b'{"offset":0,"key":null,"value":"","headers":{}}\n') + 400_000
    assert _listing(tmp_path / "asked" / "t") == [
        ("partition-0.00000000000000000000.jsonl", 2 * line),
        ("partition-0.00000000000000000002.jsonl", 2 * line),
        ("partition-0.jsonl", line),
    ]
    assert list(read_jsonl(str(tmp_path / "asked"))) == list(read_jsonl(str(tmp_path / "plain")))
    tiny = changefeed(f"jsonl://{tmp_path / 'tiny'}?protocol=simple&file-size=10", None)
    assert tiny.file_size == 1 << 20
    assert tiny.warnings == ("file-size 10 is too small; TiCDC uses 1048576",)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _parts(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_parquet_rolls_by_flush_interval_and_size_not_at_every_checkpoint(
    tmp_path: Path,
) -> None:
    """A service's parquet files: finished at the first checkpoint, then once the flush
    interval has passed since the last, or at file-size; the checkpoints between (a
    request each) add to the open file."""
    clock = Clock()
    sink = ParquetSink(
        str(tmp_path / "out"), in_place=True, rotation=Rotation(1 << 20, 0, 5), clock=clock
    )
    folder = tmp_path / "out" / "topic=t" / "partition=0"
    for second in range(11):  # a request a second for 11 s
        clock.now = second
        sink.send("t", 0, [_message(second)] * 3)
        sink.flush()
    # finished at 0 s, 5 s and 10 s; nothing open after the last
    assert _parts(folder) == ["part-0.parquet", "part-18.parquet", "part-3.parquet"]
    rows = [pq.ParquetFile(folder / f"part-{n}.parquet").metadata.num_rows for n in (0, 3, 18)]
    assert rows == [3, 15, 15]
    assert [r.offset for r in read_parquet(str(tmp_path / "out"))] == list(range(33))
    big = Message(None, bytes(range(256)) * 5000, 1)  # 1.28 MB: past file-size at once
    clock.now = 11
    sink.send("t", 0, [big])
    sink.send("t", 0, [_message(11)])  # a checkpoint record, marked in the file it went to
    sink.resolved("t", 0, 11)
    assert "part-33.parquet" in _parts(folder)  # finished without a checkpoint
    assert ".part-34.parquet.writing" in _parts(folder)
    sink.close()
    kinds = pq.read_table(folder / "part-34.parquet").column("kind").to_pylist()
    assert kinds == ["checkpoint"]


def _three_files(directory: Path, retain_bytes: int) -> ParquetSink:
    """Three finished files of two records each (interval 0: a file each checkpoint)."""
    clock = Clock()
    sink = ParquetSink(
        str(directory), in_place=True, rotation=Rotation(1 << 20, retain_bytes), clock=clock
    )
    for second in range(3):
        clock.now = second
        sink.send("t", 0, [_message(second)] * 2)
        sink.flush()
    return sink


def test_parquet_cap_keeps_the_newest_files_readable_from_their_offset(tmp_path: Path) -> None:
    uncapped = tmp_path / "all" / "topic=t" / "partition=0"
    _three_files(tmp_path / "all", 0).close()
    first, *rest = (uncapped / f"part-{n}.parquet" for n in (0, 2, 4))
    cap = sum(p.stat().st_size for p in rest)  # room for the newest two
    sink = _three_files(tmp_path / "out", cap)
    folder = tmp_path / "out" / "topic=t" / "partition=0"
    assert _parts(folder) == ["part-2.parquet", "part-4.parquet"]
    assert sink.removed() == (first.stat().st_size, 1) and sink.disk_usage() == (cap, 2)
    assert sink.remaining() == (
        f"{size_text(cap)} in 2 files remain in {tmp_path / 'out'} (t[0] from offset 2,"
        f" 1 file ({size_text(first.stat().st_size)}) removed by the cap)"
    )
    sink.close()
    assert [r.offset for r in read_parquet(str(tmp_path / "out"))] == [2, 3, 4, 5]


SCRIPT = "USE test; CREATE TABLE big (id INT PRIMARY KEY, s LONGTEXT);\n" + "".join(
    f"INSERT INTO big VALUES ({i}, REPEAT('z', 400000));\n" for i in range(6)
)
SCRIPT += "INSERT INTO big VALUES " + ", ".join(
    f"({i}, REPEAT('z', 400000))" for i in range(10, 14)
)


def _storage(uri: str, script: str, retain_bytes: int) -> tuple[list[int], object]:
    feed = changefeed(
        f"{uri}&file-size=1048576",
        "[sink]\ndate-separator = 'none'\nfile-index-digit = 6\n",
    )
    events = list(Engine().run(split_script(script.splitlines(keepends=True), "t.sql")))
    sink = open_sink(feed.sink, feed=feed, retain_bytes=retain_bytes)
    Pipeline(feed, sink).run(events)
    return [e.commit_ts for e in events if isinstance(e, DDLEvent)], sink


def test_storage_cap_removes_old_data_files_never_the_newest_of_a_directory(
    tmp_path: Path,
) -> None:
    """Three data files (1.2, 1.2 and 1.6 MB: test_storage's file-size case) under a 2.5 MB
    cap: the first two go once the third is written; schema, index and metadata stay."""
    (create,), sink = _storage(f"{(tmp_path / 'out').as_uri()}?protocol=csv", SCRIPT, 2_500_000)
    files = sorted(p.relative_to(tmp_path / "out").as_posix() for p in tmp_path.rglob("*.*"))
    assert files == [
        f"test/big/{create}/CDC000003.csv",
        f"test/big/{create}/meta/CDC.index",
        f"test/big/meta/schema_{create}_{_checksum(tmp_path / 'out', create)}.json",
    ]
    assert (tmp_path / "out" / "metadata").is_file()
    row = len(b'"I","big","test",0,"') + 400000 + len(b'"\r\n')
    assert isinstance(sink, OnDisk) and sink.removed() == (6 * row, 2)
    assert sink.disk_usage()[1] == 4  # the data file, the index, the schema, metadata


def test_s3_cap_deletes_the_oldest_objects(s3: S3Server) -> None:
    """The same cap over s3://: DeleteObject on the oldest data files."""
    bucket = s3.bucket("capped")
    (create,), sink = _storage(s3.uri(bucket, "out"), SCRIPT, 2_500_000)
    names = sorted(s3.objects(bucket, "out"))
    assert [n for n in names if n.endswith(".csv")] == [f"test/big/{create}/CDC000003.csv"]
    assert isinstance(sink, OnDisk) and sink.removed()[1] == 2 and len(names) == 4


def _checksum(root: Path, version: int) -> str:
    (schema,) = (root / "test" / "big" / "meta").iterdir()
    return schema.name.removeprefix(f"schema_{version}_").removesuffix(".json")


def test_storage_buffers_are_bounded_together_largest_first(tmp_path: Path) -> None:
    """A service's storage sink: all tables' buffers together hold at most file-size (1 MiB
    here); past it the largest is written at once (a's two rows), before the flush interval."""
    script = (
        "USE test; CREATE TABLE a (id INT PRIMARY KEY, s LONGTEXT);"
        " CREATE TABLE b (id INT PRIMARY KEY, s LONGTEXT);\n"
        "INSERT INTO a VALUES (1, REPEAT('a', 400000)), (2, REPEAT('a', 400000));\n"
        "INSERT INTO b VALUES (1, REPEAT('b', 400000));\n"
        "INSERT INTO a VALUES (3, REPEAT('a', 10));\n"
    )
    (create_a, create_b), _ = _storage(f"{(tmp_path / 'out').as_uri()}?protocol=csv", script, 0)
    a = tmp_path / "out" / "test" / "a" / str(create_a)
    b = tmp_path / "out" / "test" / "b" / str(create_b)
    assert sorted(p.name for p in a.glob("*.csv")) == ["CDC000001.csv", "CDC000002.csv"]
    assert (a / "CDC000001.csv").read_bytes().count(b"\r\n") == 2  # written when b came in
    assert (a / "CDC000002.csv").read_bytes().count(b"\r\n") == 1
    assert sorted(p.name for p in b.glob("*.csv")) == ["CDC000001.csv"]


def test_a_service_changefeed_rotates_and_caps_its_files(tmp_path: Path) -> None:
    """TICDC_SIM_FILE_RETAIN_BYTES over a jsonl changefeed rotating at 1 MiB: the oldest
    segments go, the records left read back from where they start."""
    settings = Settings(data_dir=tmp_path / "data", mysql_port=0, file_retain_bytes=3 << 20)
    uri = "jsonl://capped?protocol=canal-json&partition-num=1&file-size=1048576"
    with TestClient(create_app(settings)) as client:
        made = client.post("/api/v2/changefeeds", json={"changefeed_id": "capped", "sink_uri": uri})
        assert made.status_code == 200, made.text
        script = "CREATE TABLE t (id INT PRIMARY KEY, s LONGTEXT);\n" + "".join(
            f"INSERT INTO t VALUES ({i}, REPEAT('q', 300000));\n" for i in range(16)
        )
        answer = client.post("/sim/v1/clusters/default/sql", content=script)
        assert answer.status_code == 200, answer.text
        folder = tmp_path / "data" / "capped" / "ticdc"
        listing = _listing(folder)
        sink = client.app.state.sim.registry.get("default").feeds["capped"].sink.inner
        assert isinstance(sink, OnDisk)
        removed, total = sink.removed(), sum(size for _, size in listing)
        assert removed[1] == 5 and sink.disk_usage() == (total, 3)
        assert sink.remaining() == (
            f"{size_text(total)} in 3 files remain in {folder.parent} (ticdc[0] from offset"
            f" 11, 5 files ({size_text(removed[0])}) removed by the cap)"
        )
    # the DDL and rows 1-2 fill the first segment, then two 400 kB rows a segment; three
    # such files fit in 3 MiB, a fourth would not
    assert [name for name, _ in listing] == [
        "partition-0.00000000000000000011.jsonl",
        "partition-0.00000000000000000013.jsonl",
        "partition-0.jsonl",
    ]
    (line,) = {size // 2 for _, size in listing}
    assert 3 * 2 * line <= 3 << 20 < 4 * 2 * line
    records = list(read_jsonl(str(tmp_path / "data" / "capped")))
    assert [r.offset for r in records] == list(range(11, 17))
    assert all(len(r.value or b"") > 300_000 for r in records)
