"""The `ticdc-sim` command line."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import typer

from ticdc_sim.errors import SimError
from ticdc_sim.generator.ddl import Catalog
from ticdc_sim.generator.script import parse_statements, read_script
from ticdc_sim.model.tso import TSOClock

app = typer.Typer(add_completion=False, help="A simulated TiCDC producer.")


@app.callback()
def _root() -> None:
    """ticdc-sim: SQL in, TiCDC's messages out."""


@app.command()
def ddl(
    scripts: list[Path] = typer.Argument(..., help="SQL scripts with DDL (and USE) statements"),
    start_ts: int = typer.Option(0, help="TSO the simulated clock starts after (0 = default)"),
) -> None:
    """Apply the DDL of SCRIPTS and print each DDL event TiCDC would emit, as JSON lines."""
    catalog = Catalog(clock=TSOClock.starting_at(start_ts) if start_ts else TSOClock())
    out = sys.stdout.buffer
    try:
        for path in scripts:
            for stmt in parse_statements(read_script(path), str(path)):
                node = stmt.expression
                if node.key == "use":
                    catalog.schema(node.this.name)
                    catalog.current_schema = catalog.schemas[node.this.name.lower()].name
                    continue
                try:
                    events = catalog.apply(node, stmt.text)
                except SimError as e:
                    raise e.with_context(stmt.location, stmt.text) if hasattr(e, "with_context") else e
                for ev in events:
                    info = ev.table_info or ev.pre_table_info
                    record = {
                        "commit_ts": ev.commit_ts,
                        "type": int(ev.action),
                        "action": ev.action.name,
                        "schema": ev.schema,
                        "table": ev.table,
                        "query": ev.query,
                        "schema_version": ev.schema_version,
                    }
                    if info is not None and info.columns:
                        record["table_id"] = info.id
                        record["physical_ids"] = list(info.physical_ids)
                        record["handle_key"] = list(info.handle_key_columns)
                        record["columns"] = {
                            c.name: {"type": int(c.tp), "flag": int(f)}
                            for c, f in zip(info.columns, info.ticdc_flags(), strict=True)
                        }
                    out.write(orjson.dumps(record) + b"\n")
    except SimError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None


def main() -> None:
    app()
