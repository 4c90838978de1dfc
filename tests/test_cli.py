"""The `ticdc-sim` commands on the bundled examples and on bad input; their help."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import typer
from typer.testing import CliRunner

from ticdc_sim.cli import app
from ticdc_sim.sinks.jsonl import read_jsonl

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


def test_ddl_reads_a_script_as_replay_does(tmp_path: Path) -> None:
    """Issue 25: `ddl` starts in `test` as `replay` does (was ERROR 1046 for a script without
    USE), takes --database, skips a UTF-8 byte order mark as the mysql client does (was
    ERROR 1064), and a syntax error quotes its own statement, not the rest of the file."""
    script = tmp_path / "bom.sql"
    script.write_bytes(
        b"\xef\xbb\xbfCREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\n"
    )
    for command in ("ddl", "replay"):
        result = CliRunner().invoke(app, [command, str(script)])
        assert result.exit_code == 0, result.output
        first = orjson.loads(result.stdout.splitlines()[0])
        assert (first["action"], first["schema"], first["table"]) == ("CREATE_TABLE", "test", "t")
    assert result.stdout.splitlines()[1].startswith('{"commit_ts"')  # replay's insert
    ddl = CliRunner().invoke(app, ["ddl", str(script)])
    assert ddl.stderr == "1 statement that is not DDL skipped\n"
    shop = CliRunner().invoke(app, ["ddl", str(script), "--database", "shop"])
    assert (shop.exit_code, shop.stdout) == (1, "")
    assert shop.stderr == (
        "error: --database 'shop': ERROR 1049 (42000): Unknown database 'shop' (a session"
        " starts in test; a script may CREATE DATABASE and USE it)\n"
    )
    bad = tmp_path / "bad.sql"
    bad.write_text("CREATE TABLE t (id INT PRIMARY KEY,);\nCREATE TABLE u (id INT PRIMARY KEY);\n")
    for command in ("ddl", "replay"):
        result = CliRunner().invoke(app, [command, str(bad)])
        assert (result.exit_code, result.stdout) == (1, "")
        assert result.stderr == (
            f"error: {bad}:1:35: ERROR 1064 (42000): You have an error in your SQL syntax;"
            " check the manual that corresponds to your TiDB version for the right syntax to"
            " use line 1 column 35 near \",)\" (Expected an item after ',')\n"
            "  in: CREATE TABLE t (id INT PRIMARY KEY,)\n"
        )


def test_continue_on_error_reports_every_failure_before_the_one_that_ends_the_run(
    tmp_path: Path,
) -> None:
    """Issue 25: under --continue-on-error a script that ends inside a quote is one more
    failed statement and the next script follows (the earlier errors were lost); a record
    the sink refuses ends the run after the statements' errors, and the partial output is
    named (it was not when the refusal came at the end); a refusal while aborting after a
    failed statement is said before that statement (it replaced it)."""
    first, second = tmp_path / "a.sql", tmp_path / "b.sql"
    first.write_text(
        "CREATE TABLE t (id INT PRIMARY KEY, v TEXT);\nINSERT INTO t VALUES (1, 'a');\n"
        "INSERT INTO t VALUES (1, 'b');\nINSERT INTO t VALUES (2, 'open\n"
    )
    second.write_text("INSERT INTO t VALUES (3, REPEAT('x', 2000));\n")
    duplicate = (
        f"error: {first}:3:1: ERROR 1062 (23000): Duplicate entry '1' for key 't.PRIMARY'\n"
        "  in: INSERT INTO t VALUES (1, 'b')\n"
    )
    unterminated = (
        f"error: {first}:4:1: ERROR 1064 (42000): unterminated ' quote at end of script\n"
    )
    result = CliRunner().invoke(app, ["replay", str(first), str(second), "--continue-on-error"])
    assert result.exit_code == 1 and result.stderr == duplicate + unterminated
    rows = [orjson.loads(line) for line in result.stdout.splitlines()[1:]]
    assert [r["columns"]["id"] for r in rows] == [1, 3]
    out = tmp_path / "out"
    sink = f"jsonl://{out}?protocol=canal-json&max-message-bytes=1024"
    too_large = (
        "error: a canal-json message of 2270 bytes for test.{table} at commit ts {ts} exceeds"
        " max-message-bytes 1024 (TiCDC: ErrMessageTooLarge)\n"
    )
    partial = f"the records sent before the error are in {out}.partial\n"
    result = CliRunner().invoke(
        app, ["replay", str(first), str(second), "--continue-on-error", "--sink-uri", sink]
    )
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"{partial}2 rows, 1 DDL, 0 checkpoints -> records per topic: ticdc: 1\n"
        + duplicate
        + unterminated
        + too_large.format(table="t", ts=rows[1]["commit_ts"])
    )
    assert not out.exists() and len(list(read_jsonl(f"{out}.partial"))) == 1  # the DDL
    # the too large row is still in the pipeline when a statement fails
    second.write_text(
        "CREATE TABLE u (id INT PRIMARY KEY, v TEXT);\n"
        "INSERT INTO u VALUES (3, REPEAT('x', 2000));\nINSERT INTO u VALUES (3, 'c');\n"
    )
    result = CliRunner().invoke(app, ["replay", str(second), "--sink-uri", sink])
    assert (result.exit_code, result.stdout) == (1, "")
    row = orjson.loads(CliRunner().invoke(app, ["replay", str(second)]).stdout.splitlines()[1])
    assert result.stderr == (
        f"{partial}1 rows, 1 DDL, 0 checkpoints -> records per topic: ticdc: 1\n"
        + too_large.format(table="u", ts=row["commit_ts"])
        + f"error: {second}:3:1: ERROR 1062 (23000): Duplicate entry '3' for key 'u.PRIMARY'\n"
        "  in: INSERT INTO u VALUES (3, 'c')\n"
    )


def test_help_piped_is_120_columns_wide() -> None:
    """Issue 25: help read through a pipe or pager is 120 columns, as main() means it (it
    set rich's TERMINAL_WIDTH, which click's help does not read: it was 80)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": ""}
    ran = subprocess.run(
        [sys.executable, "-m", "ticdc_sim", "replay", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert ran.returncode == 0 and ran.stderr == ""
    widths = [len(line) for line in ran.stdout.splitlines()]
    assert 100 < max(widths) <= 120
    assert (
        "  --sink-uri URI                  where TiCDC's messages go, e.g."
        " jsonl:///tmp/out?protocol=canal-json (the sink URI of\n" in ran.stdout
    )


def test_a_transaction_left_open_is_rolled_back_with_a_warning(tmp_path: Path) -> None:
    """Issue 25: a script that ends inside a transaction that wrote rows has it rolled back
    as a client's disconnect would, and says so (the rows vanished without a word)."""
    script = tmp_path / "open.sql"
    script.write_text(
        "CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\n"
        "BEGIN;\nINSERT INTO t VALUES (2);\n"
    )
    result = CliRunner().invoke(app, ["replay", str(script)])
    assert result.exit_code == 0
    assert [orjson.loads(line).get("kind") for line in result.stdout.splitlines()] == [
        None,  # the DDL
        "insert",
    ]
    assert result.stderr == (
        f"warning: {script}:3:1: a transaction was still open at the end: rolled back, as"
        " when a client disconnects, and its rows not sent (end it with COMMIT)\n"
    )
    script.write_text("CREATE TABLE t (id INT PRIMARY KEY);\nBEGIN;\n")  # wrote nothing
    assert CliRunner().invoke(app, ["replay", str(script)]).stderr == ""


def test_a_script_from_a_pipe_is_read_whole(tmp_path: Path) -> None:
    """Issue 25: `replay /dev/stdin` and `<(zcat dump.sql.gz)` read the pipe once, as it
    streams (the check for binary data consumed its first 64 KiB: a small script ran as
    nothing at all, exit 0; a large one lost its start); binary data there is still said."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    script = "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20));\n" + "".join(
        f"INSERT INTO t VALUES ({i}, 'v{i}');\n"
        for i in range(3000)  # past 64 KiB
    )
    for command in ("replay", "ddl"):
        ran = subprocess.run(
            [sys.executable, "-m", "ticdc_sim", command, "/dev/stdin"],
            input=script.encode(),
            capture_output=True,
            env=env,
            timeout=120,
        )
        assert ran.returncode == 0, ran.stderr.decode()
        last = orjson.loads(ran.stdout.splitlines()[-1])
        if command == "replay":
            assert len(ran.stdout.splitlines()) == 3001 and last["columns"]["id"] == 2999
        else:
            assert len(ran.stdout.splitlines()) == 1 and last["action"] == "CREATE_TABLE"
    ran = subprocess.run(
        [sys.executable, "-m", "ticdc_sim", "replay", "/dev/stdin"],
        input=b"SET @a = 1;\n\x00\x01PK",
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert (ran.returncode, ran.stdout) == (1, b"")
    assert (
        ran.stderr == b"error: /dev/stdin is not a SQL script: binary data (a NUL byte on line 2)\n"
    )
