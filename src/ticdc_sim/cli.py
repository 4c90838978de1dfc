"""The `ticdc-sim` command line: thin wrappers over the generator, sinks and service."""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from ticdc_sim.errors import SimError, SQLError
from ticdc_sim.generator.ddl import Catalog
from ticdc_sim.generator.engine import Engine, EngineConfig
from ticdc_sim.generator.script import (
    RawStatement,
    parse_statements,
    read_script,
    split_script,
)
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
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


def _json_value(value: object) -> object:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return {"$binary": base64.b64encode(value).decode()}
    return value


def row_record(event: RowChangedEvent) -> dict[str, Any]:
    """A row change as one JSON object with the columns TiCDC emits (no virtual ones)."""
    info = event.table
    visible = [(i, c.name) for i, c in enumerate(info.columns) if not c.is_virtual_generated]

    def image(row: tuple[object, ...] | None) -> dict[str, object] | None:
        return None if row is None else {name: _json_value(row[i]) for i, name in visible}

    return {
        "commit_ts": event.commit_ts,
        "start_ts": event.start_ts,
        "kind": event.kind,
        "schema": info.schema,
        "table": info.name,
        "table_id": info.id,
        "physical_table_id": event.physical_table_id,
        "columns": image(event.columns),
        "pre_columns": image(event.pre_columns),
    }


def _statements(scripts: list[Path]) -> Iterator[RawStatement]:
    """Statements of every script, read lazily: memory holds one statement, not the file."""
    for path in scripts:
        try:
            handle = path.open(encoding="utf-8", errors="surrogateescape", newline="")
        except OSError as e:
            raise SQLError(f"cannot read {path}: {e.strerror}") from None
        with handle:
            yield from split_script(handle, str(path))


@app.command()
def replay(
    scripts: Annotated[list[Path], typer.Argument(help="SQL scripts, run in order in one session")],
    seed: Annotated[int, typer.Option(help="seed for RAND(), UUID() and AUTO_RANDOM shards")] = 0,
    start_ts: Annotated[
        int, typer.Option(help="TSO the simulated clock starts after (0: a fixed default)")
    ] = 0,
    time_zone: Annotated[
        str, typer.Option(help="TiCDC's and the session's time zone (name or +hh:mm)")
    ] = "UTC",
    continue_on_error: Annotated[
        bool, typer.Option(help="report a failing statement and go on with the next")
    ] = False,
    output_raw_change_event: Annotated[
        bool, typer.Option(help="keep updates of key columns whole instead of DELETE+INSERT")
    ] = False,
    database: Annotated[str, typer.Option(help="the database the session starts in")] = "test",
    old_value: Annotated[
        bool, typer.Option(help="the changefeed's enable-old-value (updates keep their old row)")
    ] = True,
) -> None:
    """Execute SCRIPTS as TiDB would and print what TiCDC captures, one JSON event a line."""
    config = EngineConfig(
        seed=seed,
        start_ts=start_ts,
        time_zone=time_zone,
        continue_on_error=continue_on_error,
        output_raw_change_event=output_raw_change_event,
        database=database,
        old_value=old_value,
    )
    out = sys.stdout.buffer
    try:
        engine = Engine(config)
        for event in engine.run(_statements(scripts)):
            record = ddl_record(event) if isinstance(event, DDLEvent) else row_record(event)
            out.write(orjson.dumps(record) + b"\n")
    except SimError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    for warning in engine.warnings:
        typer.echo(f"warning: {warning}", err=True)
    for error in engine.errors:
        typer.echo(f"error: {error}", err=True)
    if engine.errors:
        raise typer.Exit(1)


def main() -> None:
    app()
