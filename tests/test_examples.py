"""The example a user copies, examples/consumer-tests, run as the user runs it: copied out of
the project (so it leans on nothing here: not tests/, not the project's pytest settings), by
pytest in a subprocess, with ticdc-sim's plugin loaded from the installed package, against
this run's MariaDB and Kafka broker. Warnings are errors there too."""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).parent.parent / "examples" / "consumer-tests"


def _optional(request: pytest.FixtureRequest, name: str) -> Any:
    """A session fixture, or None where it skips (no MariaDB, no broker here)."""
    try:
        return request.getfixturevalue(name)
    except pytest.skip.Exception:
        return None


def test_the_consumer_example_passes_where_a_user_copies_it(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    copy = tmp_path / "consumer-tests"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    args, unavailable = [], set()
    mariadb = _optional(request, "mariadb")
    if mariadb is not None:
        args += ["--mysql-url", f"mysql://root@localhost/?unix_socket={mariadb.root / 'sock'}"]
        request.addfinalizer(lambda: _drop_shop(mariadb))  # the server is the session's
    else:
        unavailable |= {
            "test_the_consumer_replicates_to_mysql",
            "test_ddl_is_applied_in_its_place[mysql]",
        }
    broker = _optional(request, "broker")
    if broker is not None:
        args += ["--kafka-bootstrap", broker.bootstrap]
    else:
        unavailable.add("test_the_consumer_reads_kafka")
    report = tmp_path / "report.xml"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-W", "error", "-p", "no:cacheprovider"]
        + ["-q", f"--junitxml={report}", *args],
        cwd=copy,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    outcomes = {
        case.attrib["name"]: "skipped" if case.find("skipped") is not None else "passed"
        for case in ET.parse(report).iter("testcase")
    }
    assert {name for name, outcome in outcomes.items() if outcome == "skipped"} == unavailable
    # the whole suite ran: the naive consumer's test among it
    assert "test_a_naive_consumer_is_caught_by_the_checker_under_duplicates" in outcomes


def _drop_shop(mariadb: Any) -> None:
    conn = mariadb.connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute("DROP DATABASE IF EXISTS shop")
    finally:
        conn.close()
