"""Reads changelog files with Flink's own formats (PyFlink): run by tests/test_flink.py with the
Flink venv's Python, never imported by the suite.

    flink_driver.py JOB OUT

JOB is a JSON list of tables, each {"name", "format", "path", "columns": [[name, flink type]],
"primary_key": [names], "options": {…}}: one `filesystem` table per entry, read with its
`format` (debezium-json, canal-json, maxwell-json). OUT gets one JSON line per table:
{"name", "changes": [[row kind, [values]]]} with Flink's RowKind (+I -U +U -D) as Flink
emitted it, or {"name", "error": Flink's exception, "at": its top frame} where the reader failed. Values are written
as Flink gives them: numbers as numbers, DECIMAL and temporal values as their text (TIMESTAMP
as Flink's CAST to STRING), BYTES as hex. One TableEnvironment serves every table: the JVM starts once.
"""

from __future__ import annotations

import datetime
import decimal
import json
import sys
from collections.abc import Iterator
from typing import Any

from py4j.protocol import Py4JJavaError
from pyflink.table import EnvironmentSettings, TableEnvironment

BATCH = 8  # jobs in flight at once


def _value(value: Any) -> Any:
    if isinstance(value, decimal.Decimal | datetime.date | datetime.time):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    return value


def _ddl(table: dict[str, Any]) -> str:
    columns = [f"`{name}` {tp}" for name, tp in table["columns"]]
    if table["primary_key"]:
        keys = ", ".join(f"`{k}`" for k in table["primary_key"])
        columns.append(f"PRIMARY KEY ({keys}) NOT ENFORCED")
    options = {"connector": "filesystem", "path": table["path"], "format": table["format"]}
    options.update(table.get("options", {}))
    with_ = ", ".join(f"'{k}' = '{v}'" for k, v in options.items())
    return f"CREATE TEMPORARY TABLE `{table['name']}` ({', '.join(columns)}) WITH ({with_})"


def _select(table: dict[str, Any]) -> str:
    # a TIMESTAMP as Flink's text of it: PyFlink's collect cuts it to milliseconds
    columns = (
        f"CAST(`{name}` AS STRING)" if tp.startswith("TIMESTAMP") else f"`{name}`"
        for name, tp in table["columns"]
    )
    return f"SELECT {', '.join(columns)} FROM `{table['name']}`"


def _cause(error: Py4JJavaError) -> dict[str, str]:
    """The innermost Java exception: its class and message, and where Flink threw it (a
    NullPointerException's message is lost when it crosses from a task to the client)."""
    throwable = error.java_exception
    while throwable.getCause() is not None:
        throwable = throwable.getCause()
    frames = throwable.getStackTrace()
    return {
        "error": f"{throwable.getClass().getName()}: {throwable.getMessage()}",
        "at": frames[0].toString() if len(frames) else "",
    }


def read(env: TableEnvironment, tables: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Each table's changelog. Jobs are submitted BATCH at a time, then collected: a job's
    submission (planning, a mini cluster) is most of its time, and overlaps the others'."""
    for at in range(0, len(tables), BATCH):
        batch = tables[at : at + BATCH]
        for table in batch:
            env.execute_sql(_ddl(table))
        results = [env.execute_sql(_select(table)) for table in batch]
        for table, result in zip(batch, results, strict=True):
            try:
                with result.collect() as rows:
                    changes = [[str(row.get_row_kind()), [_value(v) for v in row]] for row in rows]
            except Py4JJavaError as e:
                yield {"name": table["name"], **_cause(e)}
                continue
            yield {"name": table["name"], "changes": changes}


def main(job: str, out: str) -> None:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")  # one reader: a file's order is kept
    env.get_config().set("table.local-time-zone", "UTC")
    with open(job) as f:
        tables = json.load(f)
    with open(out, "w") as f:
        for answer in read(env, tables):
            f.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
