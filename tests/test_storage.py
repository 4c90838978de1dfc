"""file://DIR: TiCDC's storage sink layout byte for byte, its flushes on the simulated clock,
and the layout read back as TiCDC's storage consumer walks it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ticdc_sim.config import changefeed
from ticdc_sim.encoders import DecodedCheckpoint, DecodedDDL, DecodedRow, cloudstorage
from ticdc_sim.errors import ConfigError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.model.events import DDLEvent, Event
from ticdc_sim.pipeline import Pipeline
from ticdc_sim.sinks import open_sink
from ticdc_sim.sinks.storage import StorageDecoder, read_storage

SCRIPT = """
CREATE DATABASE shop; USE shop;
CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10), b BLOB);
INSERT INTO t VALUES (1, 'a', X'00ff'), (2, NULL, NULL);
DO SLEEP(6);
UPDATE t SET v = 'x,"y' WHERE id = 1;
ALTER TABLE t ADD COLUMN c INT;
INSERT INTO t VALUES (3, 'c', NULL, 7);
DO SLEEP(86400);
DELETE FROM t WHERE id = 2;
"""
CSV = "[sink.csv]\ninclude-commit-ts = true\noutput-old-value = true\n"


def run(
    directory: Path, query: str, toml: str = "", script: str = SCRIPT
) -> tuple[list[Event], dict[str, bytes]]:
    """The script's events, and every file the sink wrote under `directory`."""
    feed = changefeed(f"{directory.as_uri()}?{query}", toml)
    events = list(Engine().run(split_script(script.splitlines(keepends=True), "t.sql")))
    Pipeline(feed, open_sink(feed.sink, feed=feed)).run(events)
    files = {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }
    return events, files


def ddl_ts(events: list[Event]) -> list[int]:
    return [e.commit_ts for e in events if isinstance(e, DDLEvent)]


def test_layout_byte_for_byte(tmp_path: Path) -> None:
    events, files = run(tmp_path / "out", "protocol=csv", "[sink]\nfile-index-digit = 6\n" + CSV)
    database, create, alter = ddl_ts(events)
    rows = [e for e in events if not isinstance(e, DDLEvent)]
    insert, update, insert3, delete = (
        rows[0].commit_ts,
        rows[2].commit_ts,
        rows[3].commit_ts,
        rows[4].commit_ts,
    )
    first, second = f"shop/t/{create}/2024-04-11", f"shop/t/{alter}/2024-04-12"
    create_def = cloudstorage.ddl_definition(
        next(e for e in events if isinstance(e, DDLEvent) and e.commit_ts == create)
    )  # type: ignore[arg-type]
    assert sorted(files) == sorted(
        [
            "metadata",
            f"shop/meta/schema_{database}_2805160324.json",
            cloudstorage.schema_path(create_def),
            f"shop/t/meta/schema_{alter}_0004306784.json",
            # the first file at the 5 s flush the sleep passes, the second at the ALTER
            f"{first}/CDC000001.csv",
            f"{first}/CDC000002.csv",
            f"{first}/meta/CDC.index",
            # the insert when the day-long sleep ends, the delete at the close
            f"{second}/CDC000001.csv",
            f"{second}/CDC000002.csv",
            f"{second}/meta/CDC.index",
        ]
    )
    assert (
        files[f"{first}/CDC000001.csv"]
        == (
            f'"I","t","shop",{insert},false,1,"a","AP8="\r\n'
            f'"I","t","shop",{insert},false,2,\\N,\\N\r\n'
        ).encode()
    )
    assert (
        files[f"{first}/CDC000002.csv"]
        == (
            f'"D","t","shop",{update},true,1,"a","AP8="\r\n'
            f'"I","t","shop",{update},true,1,"x,""y","AP8="\r\n'
        ).encode()
    )
    assert (
        files[f"{second}/CDC000001.csv"]
        == f'"I","t","shop",{insert3},false,3,"c",\\N,7\r\n'.encode()
    )
    assert (
        files[f"{second}/CDC000002.csv"]
        == f'"D","t","shop",{delete},false,2,\\N,\\N,\\N\r\n'.encode()
    )
    assert files[f"{first}/meta/CDC.index"] == b"CDC000002.csv\n"
    assert files["metadata"] == b'{"checkpoint-ts":%d}' % delete
    assert (
        files[f"shop/meta/schema_{database}_2805160324.json"]
        == (
            "{\n"
            '    "Table": "",\n'
            '    "Schema": "shop",\n'
            '    "Version": 1,\n'
            f'    "TableVersion": {database},\n'
            '    "Query": "CREATE DATABASE `shop`",\n'
            '    "Type": 1,\n'
            '    "TableColumns": null,\n'
            '    "TableColumnsTotal": 0\n'
            "}"
        ).encode()
    )


@pytest.mark.parametrize(
    ("separator", "dates"),
    [
        ("none", ["", ""]),
        ("year", ["/2024", "/2024"]),
        ("month", ["/2024-04", "/2024-04"]),
        ("day", ["/2024-04-11", "/2024-04-12"]),
    ],
)
def test_date_separator(tmp_path: Path, separator: str, dates: list[str]) -> None:
    events, files = run(
        tmp_path / "out", "protocol=csv", f"[sink]\ndate-separator = '{separator}'\n"
    )
    _, create, alter = ddl_ts(events)
    width = "0" * 19
    assert f"shop/t/{create}{dates[0]}/CDC{width}1.csv" in files
    assert f"shop/t/{alter}{dates[1]}/CDC{width}1.csv" in files


PARTITIONED = """
CREATE TABLE test.p (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 2;
INSERT INTO test.p VALUES (1), (2);
"""


@pytest.mark.parametrize("separate", [True, False])
def test_partition_separator(tmp_path: Path, separate: bool) -> None:
    toml = (
        f"[sink]\ndate-separator = 'none'\nenable-partition-separator = {str(separate).lower()}\n"
    )
    events, files = run(tmp_path / "out", "protocol=csv", toml, PARTITIONED)
    (create,) = ddl_ts(events)
    data = sorted(name for name in files if name.endswith(".csv"))
    info = next(e for e in events if isinstance(e, DDLEvent)).table_info
    assert info is not None and info.partition is not None
    one, two = info.partition.ids
    width = "0" * 19
    if separate:
        assert data == [
            f"test/p/{create}/{one}/CDC{width}1.csv",
            f"test/p/{create}/{two}/CDC{width}1.csv",
        ]
    else:  # both partitions' rows in one directory, numbered on
        assert data == [f"test/p/{create}/CDC{width}1.csv", f"test/p/{create}/CDC{width}2.csv"]


def test_file_size_flushes_a_full_buffer_once_its_transaction_is_in(tmp_path: Path) -> None:
    big = "USE test; CREATE TABLE big (id INT PRIMARY KEY, s LONGTEXT);\n" + "".join(
        f"INSERT INTO big VALUES ({i}, REPEAT('z', 400000));\n" for i in range(6)
    )
    big += "INSERT INTO big VALUES " + ", ".join(
        f"({i}, REPEAT('z', 400000))" for i in range(10, 14)
    )
    toml = "[sink]\ndate-separator = 'none'\nfile-index-digit = 6\n"
    events, files = run(tmp_path / "out", "protocol=csv&file-size=1048576", toml, big)
    (create,) = ddl_ts(events)
    sizes = [len(files[f"test/big/{create}/CDC00000{n}.csv"]) for n in (1, 2, 3)]

    def row(i: int) -> int:
        return len(f'"I","big","test",{i},"'.encode()) + 400000 + len(b'"\r\n')

    # 3 rows reach 1 MiB: written at once, twice; the 4-row transaction is not split
    assert sizes == [3 * row(0), 3 * row(0), sum(map(row, range(10, 14)))]


def test_canal_json_in_storage(tmp_path: Path) -> None:
    events, files = run(
        tmp_path / "out", "protocol=canal-json", "[sink]\ndate-separator = 'none'\n"
    )
    _, create, _ = ddl_ts(events)
    first = files[f"shop/t/{create}/CDC{'0' * 19}1.json"]
    lines = first.split(b"\r\n")
    assert len(lines) == 3 and lines[-1] == b""
    assert lines[0].startswith(b'{"id":0,"database":"shop","table":"t","pkNames":["id"]')


@pytest.mark.parametrize("protocol", ["csv", "canal-json"])
def test_decode_walks_schema_versions_as_the_consumer_does(tmp_path: Path, protocol: str) -> None:
    toml = CSV if protocol == "csv" else ""
    query = f"protocol={protocol}" + ("&enable-tidb-extension=true" if protocol != "csv" else "")
    events, _ = run(tmp_path / "out", query, toml)
    feed = changefeed(f"{(tmp_path / 'out').as_uri()}?{query}", toml)
    decoder = StorageDecoder(feed.codec)
    decoded = [
        e for r in read_storage(str(tmp_path / "out")) for e in decoder.decode(r.key, r.value)
    ]
    kinds = [type(e).__name__ for e in decoded]
    assert kinds == [
        "DecodedDDL",
        "DecodedDDL",
        "DecodedRow",
        "DecodedRow",
        "DecodedRow",
        "DecodedDDL",
        "DecodedRow",
        "DecodedRow",
        "DecodedCheckpoint",
    ]
    rows = [e for e in decoded if isinstance(e, DecodedRow)]
    source = [e for e in events if not isinstance(e, DDLEvent)]
    assert [(r.kind, r.commit_ts) for r in rows] == [(e.kind, e.commit_ts) for e in source]  # type: ignore[union-attr]
    assert rows[2].columns == {"id": 1, "v": 'x,"y', "b": b"\x00\xff"}
    assert isinstance(decoded[-1], DecodedCheckpoint) and decoded[-1].ts == source[-1].commit_ts
    assert (
        isinstance(decoded[5], DecodedDDL)
        and decoded[5].query == "ALTER TABLE `t` ADD COLUMN `c` INT"
    )


def test_flush_interval_and_file_size_out_of_range_are_overridden_with_warnings(
    tmp_path: Path,
) -> None:
    feed = changefeed(f"{tmp_path.as_uri()}?protocol=csv&flush-interval=500ms&file-size=10")
    assert (feed.flush_interval, feed.file_size) == ("2s", 1 << 20)
    assert feed.warnings == (
        "flush-interval 500ms is too small; TiCDC uses 2s",
        "file-size 10 is too small; TiCDC uses 1048576",
    )


@pytest.mark.parametrize(
    ("uri", "toml", "message"),
    [
        ("gcs://bucket/prefix?protocol=csv", "", "the gcs:// sink is not simulated yet"),
        (
            "file:///x?protocol=open-protocol",
            "",
            "unknown 'open-protocol' message protocol for sink",
        ),
        (
            "file:///x?protocol=csv",
            "[sink]\ndate-separator = 'week'\n",
            "date separator in storage sink is invalid: 'week'",
        ),
        (
            "file:///x?protocol=csv",
            "[sink.csv]\nquote = \"''\"\n",
            r"\[sink.csv\]: csv config quote contains more than one character",
        ),
        (
            "file:///x?protocol=csv",
            "[sink.csv]\ndelimiter = 'FEFA'\n",
            "csv config delimiter contains more than three characters",
        ),
        (
            "file:///x?protocol=csv",
            "[sink.csv]\nquote = 'E'\ndelimiter = 'FE'\n",
            "quote and delimiter has common characters",
        ),
        (
            "file:///x?protocol=csv",
            "[sink.csv]\ndelimiter = ''\n",
            "csv config delimiter cannot be empty",
        ),
        (
            "file:///x?protocol=csv",
            "[sink.csv]\nbinary-encoding-method = 'b32'\n",
            "can only be hex or base64",
        ),
        (
            "file:///x?protocol=csv&delete-only-output-handle-key-columns=true",
            "",
            "CSV protocol always output all columns",
        ),
        ("file:///x?protocol=csv&flush-interval=5", "", "'5' is not a duration"),
        (
            "file:///x?protocol=csv&ticdc-version=new-arch",
            "",
            "ticdc-version=new-arch with the storage sink is not simulated yet",
        ),
    ],
)
def test_what_ticdc_refuses(uri: str, toml: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        changefeed(uri, toml)


def test_a_directory_of_other_files_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "out" / "notes").mkdir(parents=True)
    (tmp_path / "out" / "notes" / "todo.txt").write_text("x")
    feed = changefeed(f"{(tmp_path / 'out').as_uri()}?protocol=csv")
    with pytest.raises(ConfigError, match="'notes', which is not ticdc-sim output"):
        open_sink(feed.sink, overwrite=True, feed=feed)


def test_reading_a_foreign_file_says_which(tmp_path: Path) -> None:
    run(tmp_path / "out", "protocol=csv")
    (tmp_path / "out" / "shop" / "stray.txt").write_text("x")
    with pytest.raises(ConfigError, match="stray.txt is not part of TiCDC's storage layout"):
        list(read_storage(str(tmp_path / "out")))


def test_replay_then_decode_on_the_command_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ticdc_sim.cli import app

    script = tmp_path / "s.sql"
    script.write_text(SCRIPT)
    config = tmp_path / "cf.toml"
    config.write_text(CSV)
    uri = f"{(tmp_path / 'out').as_uri()}?protocol=csv"
    replayed = CliRunner().invoke(
        app, ["replay", str(script), "--sink-uri", uri, "--config", str(config)]
    )
    assert replayed.exit_code == 0, replayed.output
    assert "5 rows, 3 DDL, 6 checkpoints -> 4 data files" in replayed.output
    decoded = CliRunner().invoke(app, ["decode", uri, "--config", str(config)])
    assert decoded.exit_code == 0, decoded.output
    lines = [json.loads(line) for line in decoded.stdout.splitlines()]
    assert [line["type"] for line in lines] == [
        "ddl",
        "ddl",
        "insert",
        "insert",
        "update",
        "ddl",
        "insert",
        "delete",
        "checkpoint",
    ]
    assert lines[4]["columns"] == {"id": 1, "v": 'x,"y', "b": {"$binary": "AP8="}}
    # read without the config's options, the rows do not parse: said with the file
    wrong = CliRunner().invoke(app, ["decode", uri])
    assert wrong.exit_code == 1
    assert (
        f"error: {tmp_path / 'out'}/shop/t/{lines[1]['commit_ts']}/2024-04-11/"
        "CDC00000000000000000001.csv offset 0: not a csv message: shop.t has 3 columns in its"
        " schema file, the row 5 values: written with other [sink.csv] options"
    ) in wrong.output


def test_pyarrow_reads_every_data_file_with_its_schema_file(tmp_path: Path) -> None:
    """A real consumer: pyarrow's CSV reader, the column names and types from the schema
    file of each file's table version (tests/support_arrow.py), gives the rows the decoder
    gives. The oracle corpus runs it at scale (test_oracle.py, pyarrow-file-csv)."""
    from support_arrow import PLAIN, read_table_file

    run(tmp_path / "out", "protocol=csv", "[sink]\ndate-separator = 'none'\n")
    feed = changefeed(f"{(tmp_path / 'out').as_uri()}?protocol=csv")
    decoder = StorageDecoder(feed.codec)
    checked = 0
    for record in read_storage(str(tmp_path / "out")):
        if not record.topic.endswith(".csv"):
            decoder.decode(record.key, record.value)
            continue
        schema, table, version = record.topic.split("/")[:3]
        (schema_file,) = (tmp_path / "out" / schema / table / "meta").glob(
            f"schema_{version}_*.json"
        )
        columns = cloudstorage.read_definition(schema_file.read_bytes())["TableColumns"]
        read = read_table_file(record.value or b"", columns, PLAIN)
        decoded = decoder.decode(record.key, record.value)
        assert [r.pop("op") for r in read] == [
            {"insert": "I", "update": "U", "delete": "D"}[e.kind] for e in decoded
        ]  # type: ignore[union-attr]
        for row, event in zip(read, decoded, strict=True):
            assert isinstance(event, DecodedRow)
            image = event.columns or event.pre_columns or {}
            assert row == {"table": "t", "schema": "shop", **image}
            checked += 1
    assert checked == 5


def test_cloud_storage_config_keys_and_the_uri_winning(tmp_path: Path) -> None:
    toml = "[sink.cloud-storage-config]\nflush-interval = '20s'\nfile-size = 2097152\nworker-count = 4\n"
    feed = changefeed(f"{tmp_path.as_uri()}?protocol=csv", toml)
    assert (feed.flush_interval, feed.file_size) == ("20s", 2 << 20)
    feed = changefeed(f"{tmp_path.as_uri()}?protocol=csv&flush-interval=3s", toml)
    assert feed.flush_interval == "3s"
    with pytest.raises(ConfigError, match="schema files with column ids are not simulated yet"):
        changefeed(
            f"{tmp_path.as_uri()}?protocol=csv",
            "[sink.cloud-storage-config]\noutput-column-id = true\n",
        )
