"""parquet:// holds, record for record, what jsonl:// holds for the same replay, plus the
convenience columns; it is written in row groups and staged like jsonl; decode reads it."""

from __future__ import annotations

from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ticdc_sim.cli import app
from ticdc_sim.config import changefeed
from ticdc_sim.encoders import Message
from ticdc_sim.errors import ConfigError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.pipeline import Pipeline
from ticdc_sim.sinks import open_sink, parquet
from ticdc_sim.sinks.jsonl import read_jsonl
from ticdc_sim.sinks.parquet import ParquetSink, read_parquet

SCRIPT = """
CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10), b VARBINARY(4));
INSERT INTO t VALUES (1, 'a', X'00ff'), (2, 'b', NULL), (3, 'c', X'');
UPDATE t SET v = 'z' WHERE id >= 2;
ALTER TABLE t ADD COLUMN w INT;
DELETE FROM t WHERE id = 1;
"""
PARAMS = "protocol=canal-json&enable-tidb-extension=true&partition-num=2"


def replay(uri: str) -> None:
    feed = changefeed(uri)
    pipeline = Pipeline(feed, open_sink(feed.sink))
    pipeline.run(Engine().run(split_script(SCRIPT.splitlines(keepends=True), "t.sql")))


def test_the_records_are_jsonl_s_with_convenience_columns(tmp_path: Path) -> None:
    replay(f"jsonl://{tmp_path / 'j'}?{PARAMS}")
    replay(f"parquet://{tmp_path / 'p'}?{PARAMS}")
    assert list(read_parquet(str(tmp_path / "p"))) == list(read_jsonl(str(tmp_path / "j")))
    table = ds.dataset(tmp_path / "p", partitioning="hive").to_table()
    assert set(table.column_names) >= {"topic", "partition", "offset", "commit_ts", "kind"}
    rows = table.to_pylist()
    kinds = {row["kind"] for row in rows}
    assert kinds == {"row", "ddl", "checkpoint"}
    assert all(row["schema"] == "test" and row["table"] == "t" for row in rows if row["rows"])
    assert all(row["commit_ts"] > 0 for row in rows)


def test_row_groups_stream_and_files_read_back_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parquet, "ROW_GROUP_ROWS", 3)
    sink = ParquetSink(str(tmp_path / "out"))
    messages = [Message(b"k%d" % i, b"v%d" % i, i, 1, "s", "t", {"h": b"\x01"}) for i in range(8)]
    sink.send("a", 1, messages)
    assert [m.ts for m in sink.files[("a", 1)].pending] == [6, 7]  # 6 already written
    sink.close()
    path = tmp_path / "out" / "topic=a" / "partition=1" / "part-0.parquet"
    assert pq.ParquetFile(path).num_row_groups == 3
    records = list(read_parquet(str(tmp_path / "out")))
    assert [(r.offset, r.key, r.headers) for r in records] == [
        (i, b"k%d" % i, {"h": b"\x01"}) for i in range(8)
    ]


def test_staged_like_jsonl(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sink = ParquetSink(str(out))
    sink.send("a", 0, [Message(None, b"x", 1)])
    sink.abort()
    assert not out.exists() and (tmp_path / "out.partial" / "topic=a").is_dir()
    replay(f"parquet://{out}?{PARAMS}")
    with pytest.raises(ConfigError, match="is not empty; pass --overwrite"):
        ParquetSink(str(out))
    (out / "mine.txt").write_text("x")
    with pytest.raises(ConfigError, match="'mine.txt', which is not ticdc-sim output"):
        ParquetSink(str(out), overwrite=True)


def test_decode_reads_parquet_as_it_reads_jsonl(tmp_path: Path) -> None:
    replay(f"jsonl://{tmp_path / 'j'}?{PARAMS}")
    replay(f"parquet://{tmp_path / 'p'}?{PARAMS}")
    runner = CliRunner()
    from_parquet = runner.invoke(app, ["decode", f"parquet://{tmp_path / 'p'}?{PARAMS}"])
    from_jsonl = runner.invoke(app, ["decode", f"jsonl://{tmp_path / 'j'}?{PARAMS}"])
    assert from_parquet.exit_code == 0, from_parquet.output
    assert from_parquet.output == from_jsonl.output and from_parquet.output


def test_a_dataset_of_many_files_reads_with_few_file_descriptors(tmp_path: Path) -> None:
    """A service's changefeed finishes a file at each checkpoint: reading its thousands of
    files opens one at a time (all at once ran out of descriptors)."""
    import resource
    import subprocess
    import sys

    sink = ParquetSink(str(tmp_path / "many"), in_place=True)
    for n in range(300):
        sink.send("t", 0, [Message(None, f"v{n}".encode(), n + 1)])
        sink.flush()
    sink.close()
    assert len(list((tmp_path / "many" / "topic=t" / "partition=0").iterdir())) == 300
    program = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))\n"
        "from ticdc_sim.sinks.parquet import read_parquet\n"
        "values = [r.value for r in read_parquet(sys.argv[1])]\n"
        "assert values == [f'v{n}'.encode() for n in range(300)], values[:3]\n"
    )
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[1] >= 128
    subprocess.run([sys.executable, "-c", program, str(tmp_path / "many")], check=True)
