"""Hostile command lines (issue 25): bad flags, missing files, directories and unreadable
files where files go, bad --set paths, bad numbers. A usage error exits 2 with click's
`Error: ...` naming the option; a bad value exits 1 with one located `error: ...` line
naming the option or file; never a traceback, in any output or log, and nothing written."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ticdc_sim.cli import app

SPEC = """\
tables:
  - ddl: CREATE TABLE t (id BIGINT PRIMARY KEY, v INT)
    rows: 3
operations:
  events: 10
"""
OUT = "parquet://{dir}/out?protocol=canal-json"
UNREADABLE = "/proc/self/mem"  # readable by nobody, root included: EIO


@pytest.fixture(autouse=True)
def _no_traceback_logged(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    yield
    assert "Traceback" not in caplog.text and "internal error" not in caplog.text.lower()


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A valid spec, a SQL script, a binary file and a directory, in `tmp_path`."""
    (tmp_path / "w.yaml").write_text(SPEC)
    (tmp_path / "q.sql").write_text(
        "CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\n"
    )
    (tmp_path / "b.bin").write_bytes(b"\x00\x01\x02PK\x03\x04")
    (tmp_path / "d").mkdir()
    return tmp_path


def run(args: list[str], directory: Path) -> Any:
    given = [a.format(dir=directory) for a in args]
    result = CliRunner().invoke(app, given)
    assert "Traceback" not in result.output and "internal error" not in result.output.lower()
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert not (directory / "out").exists() and not (directory / "out.partial").exists()
    return result


GENERATE = ["generate", "--workload", "{dir}/w.yaml", "--no-progress"]

USAGE: list[Any] = [  # exit 2: click's usage error, naming the option
    pytest.param(["generate"], "Missing option '--workload'.", id="no-workload"),
    pytest.param(
        [*GENERATE, "--events", "-1"],
        "Invalid value for '--events': Input should be greater than or equal to 0",
        id="negative-events",
    ),
    pytest.param(
        [*GENERATE, "--events", "1e3"],
        "Invalid value for '--events': Input should be a valid integer, unable to parse string"
        " as an integer",
        id="events-not-an-integer",
    ),
    pytest.param(
        [*GENERATE, "--duration", "soon"],
        "Invalid value for '--duration': Input should be a valid number, unable to parse"
        " string as a number",
        id="duration-not-a-number",
    ),
    pytest.param(
        [*GENERATE, "--events", "5", "--duration", "1"],
        "Invalid value for '--events' / '--duration': give one of them (the run's length is"
        " events or simulated seconds)",
        id="events-and-duration",
    ),
    pytest.param(
        [*GENERATE, "--seed", "x"],
        "Invalid value for '--seed': Input should be a valid integer, unable to parse string as"
        " an integer",
        id="seed-not-a-number",
    ),
    pytest.param(
        [*GENERATE, "--preview", "0"],
        "Invalid value for '--preview': Input should be greater than or equal to 1",
        id="preview-zero",
    ),
    pytest.param(
        [*GENERATE, "--engine", "turbo"],
        "Invalid value for '--engine': 'turbo': local or spark",
        id="unknown-engine",
    ),
    pytest.param(
        [*GENERATE, "--evnts", "5"],
        "No such option: --evnts (Possible options: --events)",
        id="typo-option",
    ),
    pytest.param(["replay"], "Missing argument 'SCRIPT.sql...'.", id="replay-no-script"),
    pytest.param(
        ["replay", "{dir}/q.sql", "--start-ts", "-5"],
        "Invalid value for '--start-ts': Input should be greater than or equal to 0",
        id="negative-start-ts",
    ),
    pytest.param(
        ["replay", "{dir}/q.sql", "--start-ts", str(2**64)],
        "Invalid value for '--start-ts': Input should be less than or equal to 9223372036854775807",
        id="start-ts-past-64-bits",
    ),
    pytest.param(
        ["ddl", "{dir}/q.sql", "--start-ts", str(2**63)],
        "Invalid value for '--start-ts': Input should be less than or equal to 9223372036854775807",
        id="ddl-start-ts-past-2^63",
    ),
    pytest.param(
        ["replay", "{dir}/q.sql", "--seed", "1.5"],
        "Invalid value for '--seed': Input should be a valid integer, unable to parse string as"
        " an integer",
        id="fractional-seed",
    ),
    pytest.param(
        ["replay", "{dir}/q.sql", "--seed", "-1"],
        "Invalid value for '--seed': Input should be greater than or equal to 0",
        id="negative-seed",  # RAND() gave seed 1's values
    ),
    pytest.param(["decode"], "Missing argument 'SOURCE'.", id="decode-no-source"),
    pytest.param(
        ["serve", "--port", "http"],
        "Invalid value for '--port': Input should be a valid integer, unable to parse string as"
        " an integer",
        id="port-not-a-number",
    ),
    pytest.param(["nosuch"], "No such command 'nosuch'.", id="unknown-command"),
]


@pytest.mark.parametrize(("args", "message"), USAGE)
def test_a_usage_error_names_the_option(files: Path, args: list[str], message: str) -> None:
    result = run(args, files)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("Usage: root ") and result.stderr.endswith(
        f"\n\nError: {message}\n"
    )


REFUSED: list[Any] = [  # exit 1: one line naming the option or file
    pytest.param(
        ["generate", "--workload", "{dir}/d"],
        "{dir}/d: is a directory, not a workload spec (YAML)",
        id="spec-is-a-directory",
    ),
    pytest.param(
        ["generate", "--workload", "{dir}/nope.yaml"],
        "{dir}/nope.yaml: No such file or directory",
        id="spec-missing",
    ),
    pytest.param(
        ["generate", "--workload", UNREADABLE],
        f"{UNREADABLE}: Input/output error",
        id="spec-unreadable",
    ),
    pytest.param(
        ["generate", "--workload", "{dir}/b.bin"],
        "{dir}/b.bin: not a workload spec: binary data (a NUL byte at offset 0)",
        id="spec-binary",
    ),
    pytest.param(
        [*GENERATE, "--events", str(10**16)],
        "--events: operations.events: must be at most 1,000,000,000,000,000, not 10000000000000000",
        id="events-too-many",
    ),
    pytest.param(
        [*GENERATE, "--duration", "-1"],
        "--duration: operations.duration_s: must be above 0, not -1.0",
        id="negative-duration",
    ),
    pytest.param(
        [*GENERATE, "--duration", "nan"],
        "--duration: operations.duration_s: must be a finite number, not nan",
        id="duration-nan",
    ),
    pytest.param(
        [*GENERATE, "--duration", "1e13"],
        "--duration: operations.duration_s: 1e+13 s at commit_rate 1000 is more than"
        " 1,000,000,000,000,000 transactions",
        id="duration-too-long",
    ),
    pytest.param(
        [*GENERATE, "--seed", "-1"], "--seed: seed: must be at least 0, not -1", id="negative-seed"
    ),
    pytest.param(
        [*GENERATE, "--seed", str(2**64)],
        "--seed: seed: must be below 2^63, not 18446744073709551616",
        id="seed-past-2^63",
    ),
    pytest.param(
        [*GENERATE, "--set", "operations.events"],
        "--set operations.events: expected PATH=VALUE (e.g. operations.events=5000)",
        id="set-without-value",
    ),
    pytest.param(
        [*GENERATE, "--set", "=5"],
        "--set =5: expected PATH=VALUE (e.g. operations.events=5000)",
        id="set-without-path",
    ),
    pytest.param(
        [*GENERATE, "--set", "tables[x].rows=1"],
        "--set tables[x].rows=1: 'tables[x].rows' is not a spec path (e.g."
        " tables[0].columns.amount)",
        id="set-bad-index",
    ),
    pytest.param(
        [*GENERATE, "--set", "tables..rows=1"],
        "--set tables..rows=1: 'tables..rows' is not a spec path (e.g. tables[0].columns.amount)",
        id="set-empty-part",
    ),
    pytest.param(
        [*GENERATE, "--set", "tables[9].rows=1"],
        "--set tables[9].rows: tables[9]: no such item: tables has 1 item",
        id="set-index-out-of-range",
    ),
    pytest.param(
        [*GENERATE, "--set", "tables.rows=1"],
        "--set tables.rows: tables: is not a mapping, so it has no keys to set",
        id="set-key-of-a-list",
    ),
    pytest.param(
        [*GENERATE, "--set", "seed.x=1"],
        "--set seed.x: seed: expected integer, not a mapping (e.g. `seed: 7`)",
        id="set-below-a-number",
    ),
    pytest.param(
        [*GENERATE, "--set", "operations.evnts=5"],
        "--set operations.evnts: unknown key; did you mean events? operations"
        " takes events, duration_s, mix, transaction_size, multi_table, keys, commit_rate,"
        " wall_rate",
        id="set-unknown-key",
    ),
    pytest.param(
        [*GENERATE, "--set", "tables[0].columns.nope.faker=name"],
        "--set tables[0].columns.nope.faker: tables[0].columns.nope: t has no such column",
        id="set-unknown-column",
    ),
    pytest.param(
        [*GENERATE, "--set", "operations.mix={{insert: 0, update: 0}}"],
        "--set operations.mix: at least one operation needs a weight above 0",
        id="set-a-mapping",
    ),
    pytest.param(
        [*GENERATE, "--set", "operations.events=[1"],
        "--set operations.events=[1: the value is not YAML: expected ',' or ']', but got"
        " '<stream end>'",
        id="set-bad-yaml",
    ),
    pytest.param(
        [*GENERATE, "--set", "operations.mix={{insert: 1, insert: 2}}"],
        "--set operations.mix={{insert: 1, insert: 2}}: the value is not YAML: key 'insert'"
        " given twice (first on line 1)",
        id="set-key-twice",  # the last one won, as the spec's file refuses
    ),
    pytest.param(
        [*GENERATE, "--set", "operations.keys=&a [*a]"],
        "--set operations.keys=&a [*a]: the value: an alias that contains itself",
        id="set-alias-loop",
    ),
    pytest.param(
        [*GENERATE, "--set", "tables[0].ddl=DROP TABLE t"],
        "--set tables[0].ddl: line 1 column 1: ERROR 1051 (42S02): Unknown table 'test.t'",
        id="set-ddl",
    ),
    pytest.param(
        [*GENERATE, "--engine", "spark"], "--engine spark needs --sink-uri", id="spark-without-sink"
    ),
    pytest.param(
        [*GENERATE, "--engine", "spark", "--master", "nowhere", "--sink-uri", OUT],
        "spark master 'nowhere': local, local[N], local[*], spark://HOST:PORT, yarn or k8s://URL",
        id="spark-bad-master",
    ),
    pytest.param(
        [*GENERATE, "--engine", "spark", "--conf", "foo", "--sink-uri", OUT],
        "--conf 'foo': NAME=VALUE",
        id="spark-bad-conf",
    ),
    pytest.param(
        [*GENERATE, "--config", "{dir}/q.sql"],
        "--config needs --sink-uri: the config describes a changefeed",
        id="config-without-sink",
    ),
    pytest.param(
        [*GENERATE, "--config", "{dir}/d", "--sink-uri", OUT],
        "cannot read {dir}/d: Is a directory",
        id="config-is-a-directory",
    ),
    pytest.param(
        [*GENERATE, "--config", UNREADABLE, "--sink-uri", OUT],
        f"cannot read {UNREADABLE}: Input/output error",
        id="config-unreadable",
    ),
    pytest.param(
        ["replay", "{dir}/d"], "cannot read {dir}/d: Is a directory", id="script-is-a-directory"
    ),
    pytest.param(
        ["replay", "{dir}/nope.sql", "--sink-uri", OUT],
        "cannot read {dir}/nope.sql: No such file or directory",
        id="script-missing",
    ),
    pytest.param(
        ["replay", UNREADABLE],
        f"cannot read {UNREADABLE}: Input/output error",
        id="script-unreadable",
    ),
    pytest.param(
        ["replay", "{dir}/b.bin", "--sink-uri", OUT],
        "{dir}/b.bin is not a SQL script: binary data (a NUL byte at offset 0)",
        id="script-binary",
    ),
    pytest.param(
        ["replay", "{dir}/q.sql", "--time-zone", "Mars/Olympus"],
        "--time-zone 'Mars/Olympus': ERROR 1298 (HY000): Unknown or incorrect time zone:"
        " 'Mars/Olympus'",
        id="bad-time-zone",
    ),
    pytest.param(
        ["replay", "{dir}/q.sql", "--database", "shop"],
        "--database 'shop': ERROR 1049 (42000): Unknown database 'shop' (a session starts in"
        " test; a script may CREATE DATABASE and USE it)",
        id="unknown-database",
    ),
    pytest.param(
        ["replay", "{dir}/q.sql", "--faults", "nonsense"],
        "--faults: 'nonsense' is not key=value (the value a number, true or false, or a list"
        " such as [100, 200])",
        id="faults-not-key-value",
    ),
    pytest.param(
        ["replay", "{dir}/q.sql", "--faults", "restart-every=5, label=yes"],
        "--faults: 'label=yes' is not key=value (the value a number, true or false, or a list"
        " such as [100, 200])",
        id="faults-not-a-value",  # was `--faults:3:9: Invalid value`, a line of our making
    ),
    pytest.param(
        ["replay", "{dir}/q.sql", "--faults", "seed=1,seed=2"],
        "--faults: seed is given twice",
        id="faults-twice",  # was `--faults:3:6: Cannot overwrite a value`
    ),
    pytest.param(
        ["replay", "{dir}/q.sql", "--expect-checkpoints"],
        "--expect-checkpoints needs --expect and --sink-uri",
        id="checkpoints-without-expect",
    ),
    pytest.param(
        ["replay", "{dir}/q.sql", "--sink-uri", OUT, "--expect", "{dir}/out"],
        "--expect {dir}/out: the parquet sink writes {dir}/out; give each a directory of its"
        " own, neither inside the other",
        id="expect-where-the-sink-writes",  # the files of both in one directory
    ),
    pytest.param(
        ["replay", "{dir}/q.sql", "--sink-uri", OUT, "--expect", "{dir}/out/expect"],
        "--expect {dir}/out/expect: the parquet sink writes {dir}/out; give each a directory"
        " of its own, neither inside the other",
        id="expect-inside-the-sink",  # was 'out is not empty', and out/expect left behind
    ),
    pytest.param(
        ["ddl", "{dir}/d"], "cannot read {dir}/d: Is a directory", id="ddl-of-a-directory"
    ),
    pytest.param(
        ["decode", "blackhole://?protocol=canal-json"],
        "decode reads jsonl://, parquet:// and file:// directories, s3:// prefixes and kafka:// topics, not blackhole://",
        id="decode-a-blackhole",
    ),
    pytest.param(
        ["workload-spec", "--output", "{dir}/d"],
        "cannot write {dir}/d: Is a directory",
        id="reference-into-a-directory",
    ),
    pytest.param(
        ["workload-spec", "--output", "{dir}/no/such/x.md"],
        "cannot write {dir}/no/such/x.md: No such file or directory",
        id="reference-nowhere",
    ),
    pytest.param(
        ["serve", "--data-dir", "{dir}/q.sql", "--port", "0", "--mysql-port", "0"],
        "--data-dir (TICDC_SIM_DATA_DIR) {dir}/q.sql: not a directory",
        id="serve-data-dir-a-file",
    ),
    pytest.param(
        ["serve", "--data-dir", "{dir}/d", "--host", "192.0.2.1", "--port", "0"],
        "--host (TICDC_SIM_HOST): cannot listen on 192.0.2.1:0: Cannot assign requested address",
        id="serve-host-not-ours",
    ),
    pytest.param(
        ["openapi", "--output", "{dir}/d"],
        "cannot write {dir}/d: Is a directory",
        id="openapi-into-a-directory",
    ),
]


@pytest.mark.parametrize(("args", "message"), REFUSED)
def test_a_bad_value_is_one_located_line(files: Path, args: list[str], message: str) -> None:
    result = run(args, files)
    expected = f"error: {message.format(dir=files)}\n"
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", expected)


def test_a_preview_larger_than_the_run_prints_the_run(files: Path) -> None:
    """--preview N beyond any run (or Python's integers for slicing) prints every event."""
    result = run([*GENERATE, "--preview", str(10**30)], files)
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 14  # DDL, 3 rows, 10


def test_version(files: Path) -> None:
    result = run(["--version"], files)
    assert (result.exit_code, result.stdout) == (0, "ticdc-sim 0.1.0\n")


def test_output_into_a_symlink_or_the_working_directory(
    files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A jsonl/parquet directory that exists stays and gets the output: a symlink's target
    (was a traceback, 'Cannot call rmtree on a symbolic link'), the working directory as `.`
    (was a traceback, and the staged output deleted); --overwrite replaces ours in it; a
    failed run leaves DIR.partial beside the directory itself and names it."""
    (files / "real").mkdir()
    (files / "link").symlink_to("real")
    monkeypatch.chdir(files / "real")
    for target in ("{dir}/link", "."):
        for scheme, entry in (("jsonl", "ticdc"), ("parquet", "topic=ticdc")):
            sink = f"{scheme}://{target}?protocol=canal-json"
            for again in ([], ["--overwrite"]):
                result = run(["replay", "{dir}/q.sql", "--sink-uri", sink, *again], files)
                assert (result.exit_code, result.stderr) == (
                    0,
                    "1 rows, 1 DDL, 0 checkpoints -> records per topic: ticdc: 2\n",
                )
                assert [p.name for p in (files / "real").iterdir()] == [entry]
            shutil.rmtree(files / "real" / entry)
    assert (files / "link").is_symlink() and sorted(p.name for p in files.iterdir()) == [
        "b.bin",
        "d",
        "link",
        "q.sql",
        "real",
        "w.yaml",
    ]
    (files / "dup.sql").write_text(
        "CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1), (1);\n"
    )
    result = run(["replay", "{dir}/dup.sql", "--sink-uri", "jsonl://.?protocol=canal-json"], files)
    assert result.exit_code == 1 and result.stderr.startswith(
        f"the records sent before the error are in {files}/real.partial\n"
    )
    assert list((files / "real").iterdir()) == []
    assert [p.name for p in (files / "real.partial").iterdir()] == ["ticdc"]


def test_decode_of_a_directory_some_other_sink_wrote(files: Path) -> None:
    """decode reads only the layout its sink writes: a parquet dataset read as jsonl (or the
    other way round), a stray file or a directory where a partition file goes is one error
    naming it (they decoded to nothing, exit 0, or a traceback)."""
    for scheme in ("jsonl", "parquet"):
        sink = f"{scheme}://{{dir}}/{scheme}?protocol=open-protocol"
        assert run(["replay", "{dir}/q.sql", "--sink-uri", sink], files).exit_code == 0
    jsonl, parquet = (
        "is not a topic directory of partition-<p>.jsonl files",
        "is not a topic=<t> directory of partition=<p>/part-*.parquet files",
    )
    (files / "d" / "ticdc" / "partition-0.jsonl").mkdir(parents=True)
    cases = [
        ("jsonl://{dir}/parquet", f"jsonl source: {files}/parquet/topic=ticdc {jsonl}"),
        ("parquet://{dir}/jsonl", f"parquet source: {files}/jsonl/ticdc {parquet}"),
        ("jsonl://{dir}/d", f"jsonl source: {files}/d/ticdc {jsonl}"),
    ]
    for source, message in cases:
        result = run(["decode", f"{source}?protocol=open-protocol"], files)
        assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"error: {message}\n")
    (files / "jsonl" / "ticdc" / "notes.txt").write_text("mine")
    result = run(["decode", "jsonl://{dir}/jsonl?protocol=open-protocol"], files)
    assert result.stderr == f"error: jsonl source: {files}/jsonl/ticdc {jsonl}\n"
    (files / "jsonl" / "ticdc" / "notes.txt").unlink()
    whole = run(["decode", "jsonl://{dir}/jsonl?protocol=open-protocol"], files)
    assert (
        whole.stdout
        == run(["decode", "parquet://{dir}/parquet?protocol=open-protocol"], files).stdout
    )
    assert (whole.exit_code, len(whole.stdout.splitlines())) == (0, 10)  # DDL, row, checkpoints


def test_serve_on_a_host_name_that_is_no_address(files: Path) -> None:
    """The host is named, not the port (was `--port: ... (while attempting to bind ...)`);
    the resolver's reason differs with the network, so only its head is held."""
    args = ["serve", "--data-dir", "{dir}/d", "--host", "nowhere.invalid", "--port", "0"]
    result = run(args, files)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith("error: --host (TICDC_SIM_HOST): nowhere.invalid: ")
    assert result.stderr.count("\n") == 1 and "while attempting" not in result.stderr


def test_decode_from_brokers_that_are_not_there(
    files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One line, not librdkafka's log lines ('FAIL [rdkafka#consumer-1] ...') before it."""
    from ticdc_sim.sinks import kafka

    monkeypatch.setattr(kafka, "_TIMEOUT_S", 1.0)
    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # as outside pytest
    result = run(["decode", "kafka://127.0.0.1:1/x?protocol=canal-json"], files)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "error: kafka 127.0.0.1:1: Failed to get metadata: Local: Broker transport failure\n"
    )


def test_faults_take_lists_with_commas(files: Path) -> None:
    """`restart-at=[1, 2]` is a list, as in the TOML (its comma split the item: "'2]' is
    not key=value"); `[1; 2]` still reads the same."""
    outputs = []
    for faults in ("restart-at=[1, 2], label=true", "restart-at=[1;2],label=true"):
        sink = "jsonl://{dir}/o?protocol=canal-json&enable-tidb-extension=true"
        result = run(
            ["replay", "{dir}/q.sql", "--sink-uri", sink, "--overwrite", "--faults", faults], files
        )
        assert (result.exit_code, result.stderr) == (
            0,
            "1 rows, 1 DDL, 2 checkpoints -> records per topic: ticdc: 8, and 1 injected by [faults]\n",
        )
        outputs.append(sorted((files / "o" / "ticdc").iterdir()))
        outputs[-1] = [p.read_bytes() for p in outputs[-1]]
    assert outputs[0] == outputs[1]


def test_decode_with_another_protocol_says_which_one_reads_it(files: Path) -> None:
    """Records read with another protocol than wrote them: the error says which protocol
    reads them (it said only where the reading stopped)."""
    sink = "jsonl://{dir}/j?protocol=simple"
    assert run(["replay", "{dir}/q.sql", "--sink-uri", sink], files).exit_code == 0
    result = run(["decode", "jsonl://{dir}/j?protocol=canal-json"], files)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"error: {files}/j/ticdc/partition-0.jsonl offset 0: not a canal-json message: `isDdl`"
        " is missing (it reads as protocol=simple: decode needs the writer's sink URI)\n"
    )


def test_a_set_value_reads_as_in_the_spec_file(files: Path) -> None:
    """`--set operations.events=2e1` is 20, as `events: 2e1` in the file (YAML 1.2's
    float; it was "expected integer, not '2e1'")."""
    by_file = files / "e.yaml"
    by_file.write_text(SPEC.replace("events: 10", "events: 2e1"))
    result = run([*GENERATE, "--set", "operations.events=2e1"], files)
    assert (
        result.exit_code == 0
        and result.stdout
        == run(["generate", "--workload", str(by_file), "--no-progress"], files).stdout
    )
    assert len(result.stdout.splitlines()) > 14  # the DDL, 3 rows and more than 10 events


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        (
            {"TICDC_SIM_DEFAULT_SINK_URI": "bogus://x"},
            "TICDC_SIM_DEFAULT_SINK_URI: sink URI 'bogus://x': unknown scheme 'bogus'",
        ),
        (
            {"TICDC_SIM_DEFAULT_CONFIG": "{dir}/none.toml"},
            "TICDC_SIM_DEFAULT_CONFIG {dir}/none.toml: No such file or directory",
        ),
        (
            {"TICDC_SIM_DEFAULT_CONFIG": "{dir}/bad.toml"},
            "TICDC_SIM_DEFAULT_CONFIG {dir}/bad.toml: config: enable-old-value: 'no' is not a"
            " boolean (true or false)",
        ),
    ],
)
def test_a_bad_default_changefeed_is_said_before_serving(
    files: Path, monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], message: str
) -> None:
    """A bad TICDC_SIM_DEFAULT_SINK_URI was a traceback and 'Application startup failed'."""
    (files / "bad.toml").write_text('enable-old-value = "no"\n')
    for name, value in environment.items():
        monkeypatch.setenv(name, value.format(dir=files))
    result = run(["serve", "--data-dir", "{dir}/d", "--port", "0", "--mysql-port", "0"], files)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith(f"error: {message.format(dir=files)}")
