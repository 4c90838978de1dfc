"""The `ticdc-sim` commands on the bundled examples and on bad input; their help."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
import typer
from typer.testing import CliRunner

from ticdc_sim.cli import app

EXAMPLE = Path(__file__).parents[1] / "examples" / "shop.sql"


def test_ddl_on_the_bundled_example() -> None:
    result = CliRunner().invoke(app, ["ddl", str(EXAMPLE), "--start-ts", "449000000000000000"])
    assert result.exit_code == 0, result.output
    events = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [e["action"] for e in events] == [
        "CREATE_SCHEMA",
        "CREATE_TABLE",
        "CREATE_TABLE",
        "MULTI_SCHEMA_CHANGE",
        "RENAME_TABLE",
        "TRUNCATE_TABLE_PARTITION",
    ]
    assert all(e["schema"] == "shop" for e in events)
    commit_ts = [e["commit_ts"] for e in events]
    assert commit_ts == sorted(commit_ts) and commit_ts[0] > 449000000000000000
    customers = events[1]
    assert customers["handle_key"] == ["id"]
    assert customers["columns"]["id"] == {"type": 8, "flag": 11}  # BIGINT, PK|HK|Binary
    orders = events[2]
    assert orders["handle_key"] == ["id", "placed_at"]
    assert len(orders["physical_ids"]) == 2
    renamed, truncated = events[4], events[5]
    assert renamed["query"] == "RENAME TABLE `orders` TO `purchases`"
    assert renamed["table_id"] == orders["table_id"]
    # TRUNCATE PARTITION gives the truncated partition a new physical id, keeps the other
    assert truncated["physical_ids"][1] == orders["physical_ids"][1]
    assert truncated["physical_ids"][0] not in orders["physical_ids"]


def test_ddl_error_names_file_line_and_statement(tmp_path: Path) -> None:
    script = tmp_path / "bad.sql"
    script.write_text("USE test; CREATE TABLE t (a INT);\n\n  CREATE TABLE t (b INT);\n")
    result = CliRunner().invoke(app, ["ddl", str(script)])
    assert result.exit_code == 1
    assert f"{script}:3:3: ERROR 1050 (42S01): Table 't' already exists" in result.stderr
    assert "in: CREATE TABLE t (b INT)" in result.stderr


def test_use_of_an_unknown_database_fails(tmp_path: Path) -> None:
    script = tmp_path / "use.sql"
    script.write_text("USE nowhere;\n")
    result = CliRunner().invoke(app, ["ddl", str(script)])
    assert result.exit_code == 1
    assert "ERROR 1049 (42000): Unknown database 'nowhere'" in result.stderr


ORDERS = EXAMPLE.parent / "orders.sql"


def test_replay_of_the_examples() -> None:
    result = CliRunner().invoke(app, ["replay", str(EXAMPLE), str(ORDERS), "--seed", "1"])
    assert result.exit_code == 0, result.output
    events = [orjson.loads(line) for line in result.stdout.splitlines()]
    rows = [e for e in events if "kind" in e]
    assert len(events) - len(rows) == 6  # the DDL of shop.sql
    assert [r["kind"] for r in rows].count("insert") >= 4
    assert all(r["commit_ts"] > r["start_ts"] for r in rows)
    # the rolled-back DELETE left no trace; the partition move is a delete plus an insert
    moved = [
        r
        for r in rows
        if (r["columns"] or r["pre_columns"])["id"] == 1 and r["table"] == "purchases"
    ]
    assert {r["kind"] for r in moved[-2:]} == {"delete", "insert"}
    again = CliRunner().invoke(app, ["replay", str(EXAMPLE), str(ORDERS), "--seed", "1"])
    assert again.stdout == result.stdout  # deterministic


def test_replay_error_is_located_and_nothing_half_written(tmp_path: Path) -> None:
    script = tmp_path / "bad.sql"
    script.write_text(
        "CREATE TABLE t (id INT PRIMARY KEY, v TINYINT);\n"
        "INSERT INTO t VALUES (1, 1);\n"
        "INSERT INTO t VALUES (2, 2),\n  (3, 300);\n"
    )
    result = CliRunner().invoke(app, ["replay", str(script)])
    assert result.exit_code == 1
    assert (
        f"{script}:3:1: ERROR 1264 (22003): Out of range value for column 'v' at row 2"
        in result.stderr
    )
    rows = [orjson.loads(line) for line in result.stdout.splitlines() if '"kind"' in line]
    assert [r["columns"]["id"] for r in rows] == [1]


def test_replay_continue_on_error(tmp_path: Path) -> None:
    script = tmp_path / "dup.sql"
    script.write_text(
        "CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\n"
        "INSERT INTO t VALUES (1);\nINSERT INTO t VALUES (2);\n"
    )
    result = CliRunner().invoke(app, ["replay", str(script), "--continue-on-error"])
    assert result.exit_code == 1
    assert f"{script}:3:1: ERROR 1062 (23000)" in result.stderr
    rows = [orjson.loads(line) for line in result.stdout.splitlines() if '"kind"' in line]
    assert [r["columns"]["id"] for r in rows] == [1, 2]


def test_replay_of_a_missing_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["replay", str(tmp_path / "nope.sql")])
    assert result.exit_code == 1
    assert "cannot read" in result.stderr


def test_replay_reports_every_warning_once_through_one_channel(tmp_path: Path) -> None:
    script = tmp_path / "w.sql"
    script.write_text(
        "CREATE TABLE t (id INT PRIMARY KEY);\nANALYZE TABLE t;\nANALYZE TABLE t;\n"
        "SET GLOBAL tidb_gc_life_time = '10m';\nINSERT INTO t VALUES (1);\n"
    )
    config = tmp_path / "cf.toml"
    config.write_text('[[sink.dispatchers]]\nmatcher = ["*.*"]\npartition = "nonsense"\n')
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "replay",
            str(script),
            "--config",
            str(config),
            "--sink-uri",
            f"jsonl://{out}?protocol=canal-json&enable-tidb-extension=false",
        ],
    )
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: {config}: sink.dispatchers[0].partition: partition dispatcher 'nonsense' of"
        " rule ['*.*'] is unknown; TiCDC uses the default (table) dispatcher instead",
        f"warning: {script}:2:1: ANALYZE has no effect on data here; accepted and skipped"
        " (2 times)",
        f"warning: {script}:4:1: SET GLOBAL tidb_gc_life_time changes no session of this"
        " script; accepted and skipped",
    ]


def test_a_failed_replay_leaves_its_records_as_partial_output(tmp_path: Path) -> None:
    script = tmp_path / "fails.sql"
    script.write_text(
        "CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\n"
        "INSERT INTO t VALUES (1);\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["replay", str(script), "--sink-uri", f"jsonl://{out}?protocol=open-protocol"]
    )
    assert result.exit_code == 1
    assert f"{script}:3:1: ERROR 1062 (23000)" in result.stderr
    assert f"the records sent before the error are in {out}.partial" in result.stderr
    assert not out.exists() and not (tmp_path / ".out.partial").exists()
    assert sorted(p.name for p in (tmp_path / "out.partial" / "ticdc").iterdir()) == [
        "partition-0.jsonl",
        "partition-1.jsonl",
        "partition-2.jsonl",
    ]


def test_a_missing_script_is_reported_before_any_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["replay", str(tmp_path / "nope.sql"), "--sink-uri", f"jsonl://{out}?protocol=canal-json"],
    )
    assert result.exit_code == 1
    assert f"cannot read {tmp_path / 'nope.sql'}" in result.stderr
    assert not out.exists() and not (tmp_path / "out.partial").exists()


def test_syntax_errors_read_as_tidbs_and_a_binary_file_gets_one_line(tmp_path: Path) -> None:
    script = tmp_path / "bad.sql"
    script.write_text("CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUESS (1);\n")
    result = CliRunner().invoke(app, ["replay", str(script)])
    assert result.exit_code == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"error: {script}:2:")
    assert "ERROR 1064 (42000): You have an error in your SQL syntax" in first
    assert "Traceback" not in result.output
    binary = tmp_path / "data.sql"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    result = CliRunner().invoke(app, ["replay", str(binary)])
    assert result.exit_code == 1
    assert (
        result.stderr.strip()
        == f"error: {binary} is not a SQL script: binary data (a NUL byte at offset 8)"
    )


COMMANDS = ["ddl", "replay", "decode", "serve", "generate", "workload-spec", "openapi"]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_says_everything_it_is_given(command: str) -> None:
    """Issue 25: each option's help whole (no `[faults]` taken for markup, no example cut),
    usage as click writes it (`SCRIPT.sql...`, not `{scripts}`), no `<bool>`/`<str>`."""
    result = CliRunner().invoke(app, [command, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    found = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    for param in found.params:
        if param.help:
            assert " ".join(param.help.split()) in text.replace("- ", "-"), param.name
    assert not re.search(r"\{\w+\}|<(bool|str|int|float|path|list\[)", text), text


def test_the_options_read_as_documented() -> None:
    replay = " ".join(CliRunner().invoke(app, ["replay", "--help"]).stdout.split())
    assert "Usage: root replay [OPTIONS] SCRIPT.sql..." in replay
    assert (
        "as under [faults] in the config, e.g. 'duplicate-rate=0.01, restart-every=500," in replay
    )
    assert (
        "--old-value / --no-old-value the changefeed's enable-old-value (updates keep their"
        in replay
    )
    assert "[default: (the config's enable-old-value, else true)]" in replay
    root = CliRunner().invoke(app, ["--help"]).stdout
    assert "workload-spec  Print the workload spec's reference (Markdown)." in root
    missing = CliRunner().invoke(app, ["replay"])
    assert missing.exit_code == 2 and "Error: Missing argument 'SCRIPT.sql...'." in missing.stderr


def test_a_statement_sqlglot_cannot_parse_gets_our_error_only(tmp_path: Path) -> None:
    """Issue 25: sqlglot's 'Falling back to parsing as a Command' warning is not printed
    before the error (the SQL engine's own message, located, is all the user sees)."""
    script = tmp_path / "call.sql"
    script.write_text("CALL p();\n")
    result = CliRunner().invoke(app, ["replay", str(script)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {script}:1:1: ")
    assert "Falling back" not in result.output and "Traceback" not in result.output
