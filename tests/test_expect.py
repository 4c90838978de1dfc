"""--expect DIR: the final rows a correct consumer must end with, one Parquet file a table."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

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
    assert sorted(p.name for p in out.iterdir()) == ["test.a.parquet"]  # filtered, no key, gone
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
    assert not table.schema.field("id").nullable
