"""What a consumer does with the records: decode them, check TiCDC's ordering promises, merge
the partitions back into one changelog, and rebuild tables from it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ticdc_sim.config import Changefeed, changefeed
from ticdc_sim.encoders import (
    Decoded,
    DecodedBootstrap,
    DecodedCheckpoint,
    DecodedDDL,
    DecodedRow,
    decoder_for,
)
from ticdc_sim.encoders.registry import SchemaRegistry
from ticdc_sim.generator.sql.engine import Engine, EngineConfig
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.model.mounted import mount_row, mounter
from ticdc_sim.pipeline import Pipeline, Summary
from ticdc_sim.sinks import Record
from ticdc_sim.sinks.memory import MemorySink

# protocols whose rows carry no commit ts and that send no checkpoints (canal: only
# executeTime, in ms; maxwell: `ts`, in whole seconds)
WITHOUT_TS = frozenset({"canal", "maxwell"})
_KIND_ORDER = {"delete": 0, "update": 1, "insert": 2}
# a Kafka tombstone (avro's delete: its key, no value) carries no commit ts; it stands after
# the record before it on its partition
_AFTER_THE_PREVIOUS = 3


@dataclass
class Replay:
    engine: Engine
    pipeline: Pipeline
    sink: MemorySink
    summary: Summary


def replay(script: str, sink_uri: str, toml: str | None = None, **engine: Any) -> Replay:
    feed = changefeed(sink_uri, toml)
    eng = Engine(EngineConfig(**engine))
    sink = MemorySink()
    pipeline = Pipeline(feed, sink)
    summary = pipeline.run(eng.run(split_script(script.splitlines(keepends=True), "test.sql")))
    return Replay(eng, pipeline, sink, summary)


def decode(
    feed: Changefeed, records: Iterable[Record], registry: SchemaRegistry | None = None
) -> list[tuple[Record, Decoded]]:
    """`registry`: the one avro's records were written with (`Pipeline.registry`)."""
    decoder = decoder_for(feed.codec, registry=registry)
    return [(r, event) for r in records for event in decoder.decode(r.key, r.value)]


def check_ordering(decoded: list[tuple[Record, Decoded]], protocol: str = "") -> None:
    """TiCDC's promises per partition: checkpoints never go back, and every row or DDL after a
    checkpoint has a larger commit ts (protocols WITHOUT_TS carry neither)."""
    last: dict[tuple[str, int], int] = {}
    for record, event in decoded:
        where = (record.topic, record.partition)
        if isinstance(event, DecodedBootstrap):
            continue  # commit ts 0: a table schema, not a change
        if isinstance(event, DecodedCheckpoint):
            assert event.ts >= last.get(where, 0), f"checkpoint went back at {record}"
            last[where] = event.ts
        elif protocol not in WITHOUT_TS and not _tombstone(event):
            assert event.commit_ts is not None
            assert event.commit_ts > last.get(where, 0), f"{event} after checkpoint {last}"


def merged(decoded: list[tuple[Record, Decoded]]) -> list[DecodedRow | DecodedDDL]:
    """All partitions as one changelog in commit order; a broadcast DDL once."""
    changes = [e for _, e in decoded if isinstance(e, DecodedRow | DecodedDDL)]
    if any(e.commit_ts is None and not _tombstone(e) for e in changes):
        # canal, maxwell: no commit ts to merge rows by; one partition is already in commit
        # order (avro's tombstones have none either, and merge after their partition's last)
        assert len({(r.topic, r.partition) for r, _ in decoded}) == 1, "merging needs commit ts"
        return changes
    seen_ddl: set[tuple[Any, ...]] = set()
    out: list[tuple[tuple[int, int, int], DecodedRow | DecodedDDL]] = []
    last: dict[tuple[str, int], int] = {}  # the commit ts a partition is at
    for seq, (record, event) in enumerate(decoded):
        where = (record.topic, record.partition)
        if isinstance(event, DecodedCheckpoint | DecodedBootstrap):
            continue
        if _tombstone(event):
            out.append(((last.get(where, 0), _AFTER_THE_PREVIOUS, seq), event))
            continue
        assert event.commit_ts is not None, "merging partitions needs commit ts"
        last[where] = event.commit_ts
        if isinstance(event, DecodedDDL):
            key = (event.commit_ts, event.schema, event.table, event.query)
            if key in seen_ddl:
                continue
            seen_ddl.add(key)
            out.append(((event.commit_ts, -1, seq), event))
        else:
            out.append(((event.commit_ts, _KIND_ORDER[event.kind], seq), event))
    return [event for _, event in sorted(out, key=lambda item: item[0])]


def _tombstone(event: Decoded) -> bool:
    return isinstance(event, DecodedRow) and event.kind == "delete" and event.commit_ts is None


def _identity(row: DecodedRow, image: dict[str, Any]) -> tuple[Any, ...]:
    names = row.keys or tuple(sorted(image))
    return tuple((n, image[n]) for n in names)


def rebuild(changelog: list[DecodedRow | DecodedDDL]) -> dict[str, list[dict[str, Any]]]:
    """Tables from a changelog of row changes and CREATE/DROP/TRUNCATE TABLE."""
    tables: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {}
    for event in changelog:
        name = f"{event.schema}.{event.table}"
        if isinstance(event, DecodedDDL):
            query = event.query.upper()
            if query.startswith(("CREATE TABLE", "TRUNCATE")):
                tables[name] = {}
            elif query.startswith("DROP TABLE"):
                tables.pop(name, None)
            continue
        rows = tables[name]
        if event.pre_columns is not None:
            key = _identity(event, event.pre_columns)
            assert key in rows, f"{event} changes a row the changelog never made"
            del rows[key]
        if event.columns is not None:
            key = _identity(event, event.columns)
            assert key not in rows, f"{event} inserts a row that is already there"
            rows[key] = event.columns
    return {name: _sorted(rows.values()) for name, rows in tables.items()}


def engine_state(run: Replay) -> dict[str, list[dict[str, Any]]]:
    """The engine's tables as a consumer sees them: replicated tables, visible columns,
    values as the protocols carry them (ENUM/SET numbers)."""
    state = {}
    for data in run.engine.upstream.tables.values():
        info = data.info
        if not run.pipeline.replicates(info):
            continue
        mounters = [mounter(c) for c in info.columns]
        rows = []
        for row in data.rows.values():
            mounted = mount_row(mounters, row)
            rows.append({c.name: mounted[c.offset] for c in info.visible_columns})
        state[f"{info.schema}.{info.name}"] = _sorted(rows)
    return state


def _sorted(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: repr(sorted(r.items())))


def consumed(
    records: list[Record], feed_uri: str, registry: SchemaRegistry | None = None
) -> list[tuple[Record, Decoded]]:
    """What a TiCDC-style consumer applies of the records, partition by partition in the
    order they were delivered: a change at or below the partition's checkpoint was applied
    before (TiCDC's consumer drops it as a fallback), and a change it applied already is a
    re-sent duplicate (its MySQL sink's safe mode applies it idempotently)."""
    resolved: dict[tuple[str, int], int] = {}
    applied: set[tuple[Any, ...]] = set()
    kept = []
    for record, event in decode(changefeed(feed_uri), records, registry):
        where = (record.topic, record.partition)
        if isinstance(event, DecodedCheckpoint):
            resolved[where] = max(resolved.get(where, 0), event.ts)
            continue
        if not isinstance(event, DecodedRow | DecodedDDL):
            continue
        assert event.commit_ts is not None
        if event.commit_ts <= resolved.get(where, 0):
            continue
        seen = (where, repr(event))
        if seen in applied:
            continue
        applied.add(seen)
        kept.append((record, event))
    return kept
