"""A short CLI call imports what its command uses and nothing else (bench/startup.py has the
figures): each command runs in a fresh interpreter, which then lists what it imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# what none of these calls needs: the service's, the workload generator's, Spark's, the parquet
# and Kafka sinks', simple-avro's, the progress bar's; numpy (a FLOAT column's alone)
HEAVY = {
    "confluent_kafka",
    "faker",
    "fastapi",
    "fastavro",
    "mysql_mimic",
    "numpy",
    "pandas",
    "prometheus_client",
    "pyarrow",
    "pyspark",
    "rich",
    "starlette",
    "uvicorn",
    "yaml",
}

PROBE = """
import gc, json, sys
out, command = sys.argv[1], sys.argv[2:]
import ticdc_sim
if command != ["--import-only"]:
    from ticdc_sim.cli import main
    sys.argv = ["ticdc-sim", *command]
    try:
        main()
    except SystemExit as e:
        assert not e.code, e.code
with open(out, "w") as f:
    json.dump({"modules": sorted(sys.modules), "frozen": gc.get_freeze_count()}, f)
"""

SCRIPT = "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20));\nINSERT INTO t VALUES (1, 'a');\n"


def imported(tmp_path: Path, *command: str) -> set[str]:
    """The modules a fresh interpreter holds after running `command`, and their top-level
    packages."""
    modules = probe(tmp_path, *command)["modules"]
    return {*modules, *(name.split(".")[0] for name in modules)}


def probe(tmp_path: Path, *command: str) -> dict[str, Any]:
    out = tmp_path / "probe.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    ran = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *command],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stderr
    found: dict[str, Any] = json.loads(out.read_text())
    return found


@pytest.fixture
def script(tmp_path: Path) -> str:
    path = tmp_path / "one.sql"
    path.write_text(SCRIPT)
    return str(path)


def test_importing_the_package_and_the_cli_loads_no_engine(tmp_path: Path) -> None:
    assert imported(tmp_path, "--import-only") & (HEAVY | {"sqlglot", "pydantic", "typer"}) == set()
    # typer itself, not the SQL engine, the sinks or pydantic (typer's, once a command runs)
    assert imported(tmp_path, "--version") & (HEAVY | {"sqlglot", "pydantic"}) == set()


def test_help_loads_no_engine(tmp_path: Path) -> None:
    assert imported(tmp_path, "--help") & (HEAVY | {"sqlglot"}) == set()
    assert imported(tmp_path, "replay", "--help") & (HEAVY | {"sqlglot"}) == set()


def test_replay_and_ddl_to_stdout_load_the_engine_alone(tmp_path: Path, script: str) -> None:
    # nor the changefeed's config, encoders, router and sinks: no changefeed runs
    changefeed = {"ticdc_sim.config", "ticdc_sim.pipeline", "ticdc_sim.sinks"}
    loaded = imported(tmp_path, "replay", script)
    assert "sqlglot" in loaded  # the probe ran the command
    assert loaded & (HEAVY | changefeed) == set()
    assert imported(tmp_path, "ddl", script) & (HEAVY | changefeed) == set()


def test_replay_into_a_jsonl_sink_and_decode_load_no_heavy_module(
    tmp_path: Path, script: str
) -> None:
    sink = f"jsonl://{tmp_path / 'out'}?protocol=canal-json"
    assert imported(tmp_path, "replay", script, "--sink-uri", sink) & HEAVY == set()
    assert (tmp_path / "out").is_dir()
    # decode reads the records: no SQL engine, and pyarrow only for --upstream
    assert imported(tmp_path, "decode", sink) & (HEAVY | {"sqlglot"}) == set()


def test_the_heap_is_frozen_as_a_call_ends(tmp_path: Path, script: str) -> None:
    """The exit leaves what the call built to the process's end, not to the collector."""
    assert probe(tmp_path, "--import-only")["frozen"] == 0
    assert probe(tmp_path, "replay", script)["frozen"] > 0
