"""--expect DIR: the final rows a correct consumer must end with, one Parquet file a table."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from ticdc_sim.cli import app

SCRIPT = """
CREATE TABLE a (id BIGINT UNSIGNED PRIMARY KEY, d DECIMAL(6,2), t DATETIME(3),
  ts TIMESTAMP(0) NULL, e ENUM('x','y'), b BLOB, f DOUBLE, y YEAR, bits BIT(4), j JSON);
INSERT INTO a VALUES (18446744073709551615, 1.5, '2024-01-02 03:04:05.6', '2024-01-02 03:04:05',
  'y', X'00ff', 0.25, 2024, b'1010', '{"k": [1, 2]}');
INSERT INTO a (id) VALUES (7);
UPDATE a SET d = d * 2 WHERE id > 100;
CREATE TABLE gone (id INT PRIMARY KEY);
DROP TABLE gone;
CREATE TABLE nokey (v INT);
INSERT INTO nokey VALUES (1);
CREATE TABLE skipped (id INT PRIMARY KEY);
INSERT INTO skipped VALUES (1);
"""


def test_final_rows_typed_per_table_with_their_version(tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_text(SCRIPT)
    config = tmp_path / "c.toml"
    config.write_text('[filter]\nrules = ["*.*", "!test.skipped"]\n')
    out = tmp_path / "expect"
    result = CliRunner().invoke(
        app,
        [
            "replay",
            str(script),
            "--sink-uri",
            "memory://?protocol=canal-json&enable-tidb-extension=true",
            "--config",
            str(config),
            "--time-zone",
            "+08:00",
            "--expect",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    # filtered, no key, gone: only `a` has final rows; the history holds every version
    assert sorted(p.name for p in out.iterdir()) == ["history", "test.a.parquet"]
    history = {p.name: pq.read_table(p) for p in (out / "history").iterdir()}
    assert sorted(history) == ["test.a.0.parquet", "test.gone.0.parquet"]
    ops = [(r["_op"], r["id"]) for r in history["test.a.0.parquet"].to_pylist()]
    assert ops == [
        ("reset", None),
        ("insert", 18446744073709551615),
        ("insert", 7),
        ("update", 18446744073709551615),
    ]
    assert [r["_op"] for r in history["test.gone.0.parquet"].to_pylist()] == ["reset", "reset"]
    table = pq.read_table(out / "test.a.parquet")
    assert table.to_pylist() == [
        {
            "id": 7,
            "d": None,
            "t": None,
            "ts": None,
            "e": None,
            "b": None,
            "f": None,
            "y": None,
            "bits": None,
            "j": None,
        },
        {
            "id": 18446744073709551615,
            "d": Decimal("3.00"),
            "t": "2024-01-02 03:04:05.600",
            "ts": "2024-01-02 03:04:05",  # in TiCDC's time zone, as the session wrote it
            "e": "y",
            "b": b"\x00\xff",
            "f": 0.25,
            "y": 2024,
            "bits": 10,
            "j": '{"k": [1, 2]}',
        },
    ]
    metadata = table.schema.metadata
    assert int(metadata[b"ticdc-sim.table-id"]) > 0
    assert int(metadata[b"ticdc-sim.checkpoint-ts"]) > int(metadata[b"ticdc-sim.update-ts"]) > 0
    assert str(table.schema.field("d").type) == "decimal128(6, 2)"
    # what a reader compares values as (ticdc-sim check): the key, each upstream type
    assert metadata[b"ticdc-sim.handle-key"] == b'["id"]'
    types = {f.name: json.loads(f.metadata[b"ticdc-sim.type"]) for f in table.schema}
    assert (types["d"], types["e"], types["id"]["flag"]) == (
        {
            "tp": 246,
            "flen": 6,
            "decimal": 2,
            "flag": 128,  # BINARY, as TiDB flags numbers
            "charset": "binary",
            "collation": "binary",
            "elems": [],
        },
        {
            "tp": 247,
            "flen": -1,
            "decimal": 0,
            "flag": 0,
            "charset": "utf8mb4",
            "collation": "utf8mb4_bin",
            "elems": ["x", "y"],
        },
        163,  # NOT NULL, PRIMARY KEY, UNSIGNED, BINARY
    )
    assert not table.schema.field("id").nullable


def test_a_rerun_replaces_the_earlier_expected_state_and_foreign_files_stop_it(
    tmp_path: Path,
) -> None:
    script = tmp_path / "s.sql"
    out = tmp_path / "expect"
    uri = "memory://?protocol=canal-json"
    runner = CliRunner()
    script.write_text("CREATE TABLE old (id INT PRIMARY KEY);\nINSERT INTO old VALUES (1);\n")
    first = runner.invoke(
        app,
        ["replay", str(script), "--sink-uri", uri, "--expect", str(out), "--expect-checkpoints"],
    )
    assert first.exit_code == 0, first.output
    script.write_text("CREATE TABLE new (id INT PRIMARY KEY);\n")
    second = runner.invoke(app, ["replay", str(script), "--sink-uri", uri, "--expect", str(out)])
    assert second.exit_code == 0, second.output
    assert sorted(p.name for p in out.iterdir()) == ["history", "test.new.parquet"]
    assert [p.name for p in (out / "history").iterdir()] == ["test.new.0.parquet"]
    (out / "notes.txt").write_text("mine")
    third = runner.invoke(app, ["replay", str(script), "--sink-uri", uri, "--expect", str(out)])
    assert third.exit_code == 1
    assert "holds files it did not write (notes.txt)" in third.output
    assert (out / "notes.txt").read_text() == "mine" and (out / "test.new.parquet").exists()
    # a user's own Parquet file (was deleted as if an earlier run had written it)
    (out / "notes.txt").unlink()
    pq.write_table(pa.table({"a": [1]}), out / "accounts.parquet")
    (out / "history" / "readme.md").write_text("mine")
    fourth = runner.invoke(app, ["replay", str(script), "--sink-uri", uri, "--expect", str(out)])
    assert (fourth.exit_code, fourth.stdout) == (1, "")
    assert (
        fourth.stderr
        == f"error: --expect {out}: holds files it did not write (accounts.parquet, history)\n"
    )
    assert pq.read_table(out / "accounts.parquet").to_pylist() == [{"a": 1}]


def replay_expecting(script: Path, out: Path) -> Any:
    """`replay SCRIPT --expect OUT` into a memory sink."""
    uri = "memory://?protocol=canal-json"
    return CliRunner().invoke(app, ["replay", str(script), "--sink-uri", uri, "--expect", str(out)])


def test_a_failed_run_leaves_its_history_marked_partial(tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_text(
        "CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\nINSERT INTO nope VALUES (2);\n"
    )
    out = tmp_path / "expect"
    result = replay_expecting(script, out)
    assert result.exit_code == 1 and "doesn't exist" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["history.partial"]
    (history,) = (out / "history.partial").iterdir()
    assert [r["_op"] for r in pq.read_table(history).to_pylist()] == ["reset", "insert"]


def test_table_names_are_file_names_that_stay_in_the_directory(tmp_path: Path) -> None:
    """A `/`, `\\`, `.` or `%` in a schema or table name is written %XX in the file names
    (`../evil` made --expect fail: 'No such file or directory', and could reach outside it;
    `a.b` of test read as table b of schema test.a); the history reads them back."""
    from ticdc_sim.sinks.expect import History

    script = tmp_path / "s.sql"
    script.write_text(
        "CREATE TABLE `../evil` (id INT PRIMARY KEY, v INT);\n"
        "INSERT INTO `../evil` VALUES (1, 10);\n"
        "CREATE TABLE `a.b%` (id INT PRIMARY KEY);\nINSERT INTO `a.b%` VALUES (2);\n"
    )
    out = tmp_path / "expect"
    result = replay_expecting(script, out)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "history",
        "test.%2E%2E%2Fevil.parquet",
        "test.a%2Eb%25.parquet",
    ]
    assert sorted(p.name for p in (out / "history").iterdir()) == [
        "test.%2E%2E%2Fevil.0.parquet",
        "test.a%2Eb%25.0.parquet",
    ]
    assert pq.read_table(out / "test.%2E%2E%2Fevil.parquet").to_pylist() == [{"id": 1, "v": 10}]
    row = History(out).row_at("test", "../evil", 2**63 - 1, {"id": 1})
    assert row is not None and (row["id"], row["v"]) == (1, 10)
