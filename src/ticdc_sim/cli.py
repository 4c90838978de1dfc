"""The `ticdc-sim` command line: thin wrappers over the generator, sinks and service."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from ticdc_sim.errors import SimError, SQLError
from ticdc_sim.generator.ddl import Catalog
from ticdc_sim.generator.script import parse_statements, read_script
from ticdc_sim.model.events import DDLEvent
from ticdc_sim.model.tso import TSOClock

app = typer.Typer(
    add_completion=False, help="A simulated TiCDC producer.", pretty_exceptions_show_locals=False
)


@app.callback()
def _root() -> None:
    """ticdc-sim: SQL in, TiCDC's messages out."""


def ddl_record(event: DDLEvent) -> dict[str, Any]:
    """A DDL event as one JSON object: what TiCDC emits plus the table model it works from."""
    record: dict[str, Any] = {
        "commit_ts": event.commit_ts,
        "type": int(event.action),
        "action": event.action.name,
        "schema": event.schema,
        "table": event.table,
        "query": event.query,
        "schema_version": event.schema_version,
    }
    info = event.table_info or event.pre_table_info
    if info is not None and info.columns:
        record["table_id"] = info.id
        record["physical_ids"] = list(info.physical_ids)
        record["handle_key"] = list(info.handle_key_columns)
        record["columns"] = {
            c.name: {"type": int(c.tp), "flag": int(f)}
            for c, f in zip(info.columns, info.ticdc_flags(), strict=True)
        }
    return record


@app.command()
def ddl(
    scripts: Annotated[list[Path], typer.Argument(help="SQL scripts of DDL (and USE) statements")],
    start_ts: Annotated[
        int, typer.Option(help="TSO the simulated clock starts after (0: a fixed default)")
    ] = 0,
) -> None:
    """Apply the DDL of SCRIPTS and print each DDL event TiCDC would emit, as JSON lines."""
    catalog = Catalog(clock=TSOClock.starting_at(start_ts) if start_ts else TSOClock())
    out = sys.stdout.buffer
    try:
        for path in scripts:
            for stmt in parse_statements(read_script(path), str(path)):
                try:
                    events = catalog.apply(stmt.expression, stmt.text)
                except SQLError as e:
                    raise e.with_context(stmt.location, stmt.text) from None
                for event in events:
                    out.write(orjson.dumps(ddl_record(event)) + b"\n")
    except SimError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None


def main() -> None:
    app()
