"""JSON forms of captured events and decoded messages, shared by the CLI and the service:
values JSON cannot hold are strings (DECIMAL) or `{"$binary": base64}` (binary strings)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ticdc_sim.encoders import Decoded, DecodedBootstrap, DecodedCheckpoint, DecodedDDL, Decoder
from ticdc_sim.errors import SimError, not_utf8
from ticdc_sim.generator.sql.values import raw_bytes
from ticdc_sim.model.events import DDLEvent, RowChangedEvent

if TYPE_CHECKING:  # annotations alone: printing events needs no sinks, nor their config
    from ticdc_sim.sinks import Record


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


def json_value(value: object) -> object:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return {"$binary": base64.b64encode(value).decode()}
    if isinstance(value, str) and not_utf8(value):
        # a string stored with tidb_skip_utf8_check: U+FFFD for its bytes, as Go's JSON does
        return raw_bytes(value).decode("utf-8", "replace")
    return value


def row_record(event: RowChangedEvent) -> dict[str, Any]:
    """A row change as one JSON object with the columns TiCDC emits (no virtual ones)."""
    info = event.table
    visible = [(i, c.name) for i, c in enumerate(info.columns) if not c.is_virtual_generated]

    def image(row: tuple[object, ...] | None) -> dict[str, object] | None:
        return None if row is None else {name: json_value(row[i]) for i, name in visible}

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


def decoded_record(event: Decoded) -> dict[str, Any]:
    """A decoded protocol event as one JSON object."""
    if isinstance(event, DecodedCheckpoint):
        return {"type": "checkpoint", "ts": event.ts}
    if isinstance(event, DecodedBootstrap):
        return {
            "type": "bootstrap",
            "schema": event.schema,
            "table": event.table,
            "table_id": event.table_id,
            "version": event.version,
        }
    if isinstance(event, DecodedDDL):
        return {
            "type": "ddl",
            "schema": event.schema,
            "table": event.table,
            "commit_ts": event.commit_ts,
            "query": event.query,
            "ddl_type": event.ddl_type,
        }

    def image(row: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if row is None else {k: json_value(v) for k, v in row.items()}

    return {
        "type": event.kind,
        "schema": event.schema,
        "table": event.table,
        "commit_ts": event.commit_ts,
        "columns": image(event.columns),
        "pre_columns": image(event.pre_columns),
        "keys": list(event.keys),
        **event.extra,
    }


def decoded_lines(
    decoder: Decoder,
    records: Iterable[Record],
    unreadable: Callable[[Record, SimError], SimError],
) -> Iterator[dict[str, Any]]:
    """Each record's events decoded, one object each with its position (topic, partition,
    offset, index among the record's events): what `ticdc-sim decode` prints. A record the
    decoder refuses raises what `unreadable` makes of it."""
    for record in records:
        try:
            decoded = decoder.decode(record.key, record.value)
        except SimError as e:
            raise unreadable(record, e) from None
        for index, event in enumerate(decoded):
            position = {
                "topic": record.topic,
                "partition": record.partition,
                "offset": record.offset,
                "index": index,
            }
            yield {**position, **decoded_record(event)}
