"""Flink reads ticdc-sim's debezium, canal-json and maxwell with its own formats
(`debezium-json`, `canal-json`, `maxwell-json`), and the tables it materialises equal MariaDB's.

Oracle scripts run on MariaDB and through the engine; each table's records (one topic per
table, one partition: Flink reads a file in order) are written one message value a line and
read by one Flink session for every script and format (tests/flink_driver.py). Skips, saying
why, where the Flink venv (make flink) or a Java Flink runs on is absent.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support_flink import (
    FORMATS,
    Column,
    catalog,
    deletes_as_maxwell,
    expected,
    flink_python,
    job_entry,
    materialised,
    maxwell_delete,
    run_driver,
    values,
)
from support_mariadb import MariaDB
from support_oracle import run_both, snapshot
from ticdc_sim.config import changefeed
from ticdc_sim.pipeline import Pipeline
from ticdc_sim.sinks.memory import MemorySink

ORACLE = Path(__file__).parent / "oracle_scripts"
# bounded (one JVM, a job per table): every table keeps its schema (Flink's table cannot
# follow an ALTER), and between them they hold every column type the oracle scripts use
SCRIPTS = ["dml_and_transactions", "keys_and_handles", "partitions", "expressions", "types"]
# the table whose DDL record (its CREATE TABLE) each format is given alone
DDL_CASE = ("dml_and_transactions", "test.accounts")
# a topic per table, as a Flink job reading one table subscribes to one
TOML = "force-replicate = true\n[sink]\ndispatchers = [{matcher = ['*.*'], topic = '{schema}_{table}'}]\n"


@dataclass
class Case:
    """A table of a script through one protocol: what MariaDB has, what Flink made of it."""

    rows: list[tuple[Any, ...]]
    columns: list[Column]
    primary: list[str]
    name: str  # the Flink table reading the records as TiCDC sends them
    # maxwell: the records with TiCDC's deletes rewritten as Maxwell sends them (FINDINGS)
    as_maxwell: str | None = None
    answers: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="module")
def flink(request: pytest.FixtureRequest) -> Iterator[dict[tuple[str, str], Any]]:
    """(script, protocol) -> {table: Case}, and ("ddl", protocol) -> Flink's answer to a DDL
    record; every table of every script and protocol read in one Flink session."""
    python, why = flink_python()
    if python is None:
        pytest.skip(f"Flink tests skipped: {why}")
    source: MariaDB = request.getfixturevalue("mariadb_pair")[0]  # not started to skip
    conn = source.connect()
    cases: dict[tuple[str, str], Any] = {}
    job: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as directory:

        def entry(name: str, messages: list[bytes], protocol: str, case: Case) -> str:
            path = Path(directory, f"{name}.json")
            path.write_bytes(b"".join(m + b"\n" for m in messages))
            job.append(job_entry(name, path, protocol, case.columns, case.primary))
            return name

        try:
            for script in SCRIPTS:
                path = ORACLE / f"{script}.sql"
                events = run_both(source, conn, path.read_text(), str(path))
                tables, rows = catalog(conn), snapshot(conn)
                for protocol in FORMATS:
                    feed = changefeed(f"memory://?protocol={protocol}&partition-num=1", TOML)
                    sink = MemorySink()
                    Pipeline(feed, sink).run(events)
                    topics = values(feed, sink.records())
                    by_table = cases.setdefault((script, protocol), {})
                    for table, (columns, primary) in tables.items():
                        name = f"{script}.{protocol}.{table}".replace(".", "__").replace("-", "_")
                        messages, ddl = topics.get(table.replace(".", "_"), ([], []))
                        case = Case(rows[table], columns, primary, name)
                        entry(name, messages, protocol, case)
                        if protocol == "maxwell" and any(map(maxwell_delete, messages)):
                            rewritten = [deletes_as_maxwell(m) for m in messages]
                            case.as_maxwell = entry(
                                f"{name}__as_maxwell", rewritten, protocol, case
                            )
                        if (script, table) == DDL_CASE:
                            cases[("ddl", protocol)] = entry(
                                f"ddl__{protocol}", ddl, protocol, case
                            )
                        by_table[table] = case
        finally:
            conn.close()
        answers = run_driver(python, job, Path(directory))
    for key, value in cases.items():
        if key[0] == "ddl":
            cases[key] = answers[value]
        else:
            for case in value.values():
                case.answers = answers
    yield cases


@pytest.mark.parametrize("protocol", list(FORMATS))
@pytest.mark.parametrize("script", SCRIPTS)
def test_flink_materialises_mariadbs_tables(
    script: str, protocol: str, flink: dict[tuple[str, str], Any]
) -> None:
    mismatches, compared = [], 0
    for table, case in flink[(script, protocol)].items():
        answer = case.answers[case.name]
        if case.as_maxwell is not None:  # TiCDC's deletes as sent: Flink fails, as found
            if thrown(answer) != MAXWELL_DELETE:
                mismatches.append(f"{table}: Flink's maxwell-json read TiCDC's deletes: {answer}")
            answer = case.answers[case.as_maxwell]
        if "error" in answer:
            mismatches.append(f"{table}: Flink's {FORMATS[protocol][0]} failed: {answer}")
            continue
        want = expected(case.rows, case.columns, protocol)
        got = materialised(answer["changes"], case.columns, case.primary)
        if want != got:
            mismatches.append(f"{table}: MariaDB has {want!r}, Flink materialises {got!r}")
        compared += len(want)
    assert mismatches == []
    assert compared > 0


def thrown(answer: dict[str, Any]) -> tuple[str, str] | None:
    """The Java exception Flink's reader threw and where, None where it read the records. (A
    NullPointerException's text is lost when several jobs fail at once: comments give it.)"""
    return (answer["error"].split(":")[0], answer["at"]) if "error" in answer else None


_MAXWELL_JSON = "org.apache.flink.formats.json.maxwell.MaxwellJsonDeserializationSchema"
_DEBEZIUM_JSON = "org.apache.flink.formats.json.debezium.DebeziumJsonDeserializationSchema"

# TiCDC's maxwell sends a deleted row in `old` and no `data` (maxwell_message.go,
# rowChangeToMaxwellMsg); Maxwell itself, and so Flink's maxwell-json, has it in `data`:
#   java.lang.NullPointerException: Cannot invoke "org.apache.flink.table.data.GenericRowData
#   .setRowKind(org.apache.flink.types.RowKind)" because "delete" is null
MAXWELL_DELETE = (
    "java.lang.NullPointerException",
    f"{_MAXWELL_JSON}.deserialize(MaxwellJsonDeserializationSchema.java:171)",
)

# Where Flink's reader and TiCDC's format disagree: TiCDC puts a table's DDL in the table's
# topic (real Debezium sends schema changes to a topic of their own); Flink's debezium-json
# and maxwell-json fail on such a record, canal-json skips it (TiCDC's DDL type is CREATE):
#   debezium-json: java.lang.NullPointerException: Cannot invoke "Object.toString()" because
#   the return value of "org.apache.flink.table.data.GenericRowData.getField(int)" is null
#   maxwell-json: java.io.IOException: Unknown "type" value "table-create". The Maxwell JSON
#   message is '{"type":"table-create",…
DDL_ANSWERS = {
    "debezium": (
        "java.lang.NullPointerException",
        f"{_DEBEZIUM_JSON}.deserialize(DebeziumJsonDeserializationSchema.java:158)",
    ),
    "canal-json": None,
    "maxwell": (
        "java.io.IOException",
        f"{_MAXWELL_JSON}.deserialize(MaxwellJsonDeserializationSchema.java:176)",
    ),
}


@pytest.mark.parametrize("protocol", list(FORMATS))
def test_flink_reads_ticdcs_ddl_record_as_found(protocol: str, flink: dict[Any, Any]) -> None:
    answer = flink[("ddl", protocol)]
    assert thrown(answer) == DDL_ANSWERS[protocol]
    if protocol == "maxwell":
        assert answer["error"].startswith(
            'java.io.IOException: Unknown "type" value "table-create". The Maxwell JSON message'
            ' is \'{"type":"table-create","database":"test","table":"accounts",'
        )
    elif protocol == "canal-json":
        assert answer["changes"] == []
