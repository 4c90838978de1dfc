"""The `ticdc-sim` command line: `replay`, `ddl` and `decode`, thin wrappers over the engine,
the pipeline and the sinks."""

from __future__ import annotations

import dataclasses
import gc
import itertools
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer
from typer.core import TyperCommand

from ticdc_sim.errors import ConfigError, SimError, SQLError, Warnings
from ticdc_sim.model.tso import LAST_START_TS

# What a command runs is imported when it runs: a call pays for its own command (the SQL
# engine and sqlglot, the sinks, the encoders), not for the others' (tests/test_startup.py).
if TYPE_CHECKING:
    from ticdc_sim.config import Changefeed, SinkURI
    from ticdc_sim.encoders.registry import SchemaRegistry
    from ticdc_sim.generator.sql.ddl import Catalog
    from ticdc_sim.generator.sql.engine import Engine, EngineConfig
    from ticdc_sim.generator.workload.reading import Override
    from ticdc_sim.generator.workload.spec import Workload
    from ticdc_sim.model.events import DDLEvent, Event, RowChangedEvent
    from ticdc_sim.model.table import TableInfo
    from ticdc_sim.pipeline import Pipeline, Summary
    from ticdc_sim.sinks import Record
    from ticdc_sim.sinks.expect import Recorder
    from ticdc_sim.sinks.upstream import Upstream

app = typer.Typer(
    add_completion=False,
    help="A simulated TiCDC producer.",
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    no_args_is_help=True,
    context_settings={"max_content_width": 120, "help_option_names": ["-h", "--help"]},
)


class Command(TyperCommand):
    """A command whose usage line and arguments read as click writes them (`replay [OPTIONS]
    SCRIPT.sql...`), where typer writes `{scripts}...` and `<list[Path]>`."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        return pieces + [_shown(p) for p in self.get_params(ctx) if p.param_type_name == "argument"]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        params = self.get_params(ctx)
        arguments = [
            (_shown(p), getattr(p, "help", "") or "")
            for p in params
            if p.param_type_name == "argument"
        ]
        options = [p.get_help_record(ctx) for p in params if p.param_type_name == "option"]
        for title, rows in (("Arguments", arguments), ("Options", [r for r in options if r])):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _shown(param: Any) -> str:
    name = str(param.metavar or param.name.upper())
    return name if param.nargs == 1 or name.endswith("...") else f"{name}..."


StartTsOption = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=LAST_START_TS,
        metavar="TSO",
        help="TSO the simulated clock starts after (0: a fixed default)",
    ),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        metavar="CHANGEFEED.toml", help="TiCDC's changefeed TOML (dispatchers, protocol ...)"
    ),
]


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"ticdc-sim {version('ticdc-sim')}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    """ticdc-sim: SQL in, TiCDC's messages out."""
    _quiet_libraries()


def _quiet_libraries() -> None:
    """What libraries log (sqlglot's parser fallbacks, py4j's connections) is not for the
    user: the command reports every problem itself, once."""
    for name in ("sqlglot", "py4j"):
        found = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in found.handlers):
            found.addHandler(logging.NullHandler())
        found.propagate = False


@app.command(cls=Command, short_help="Print the DDL events TiCDC would emit for SCRIPTS.")
def ddl(
    scripts: Annotated[
        list[Path],
        typer.Argument(
            metavar="SCRIPT.sql...",
            help="SQL scripts; their DDL (and USE) statements are applied",
        ),
    ],
    start_ts: StartTsOption = None,
    database: Annotated[
        str, typer.Option(metavar="NAME", help="the database the session starts in")
    ] = "test",
) -> None:
    """Apply the DDL of SCRIPTS and print each DDL event TiCDC would emit, as JSON lines."""
    from ticdc_sim.generator.sql.ddl import Catalog
    from ticdc_sim.generator.sql.engine import is_ddl
    from ticdc_sim.generator.sql.script import parse_raw
    from ticdc_sim.jsonout import ddl_record
    from ticdc_sim.model.tso import TSOClock
    from ticdc_sim.scriptfiles import check_scripts, statements

    catalog = Catalog(clock=TSOClock.starting_at(start_ts) if start_ts else TSOClock())
    out = sys.stdout.buffer
    skipped = 0
    try:
        check_scripts(scripts)
        catalog.current_schema = _database(catalog, database)
        for raw in statements(scripts):
            stmt = parse_raw(raw)
            if stmt is None:
                continue
            if not is_ddl(stmt.expression):
                skipped += 1  # DML, transactions, SET ...: a mixed script is fine
                continue
            try:
                events = catalog.apply(stmt.expression, stmt.text)
            except SQLError as e:
                raise e.with_context(stmt.location, stmt.text) from None
            for event in events:
                out.write(orjson.dumps(ddl_record(event)) + b"\n")
    except SimError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    if skipped:
        what = "statement that is" if skipped == 1 else "statements that are"
        typer.echo(f"{skipped} {what} not DDL skipped", err=True)


def _check_session(time_zone: str, database: str) -> None:
    """--time-zone and --database as a new session takes them, or an error naming them."""
    from ticdc_sim.generator.sql.ddl import Catalog
    from ticdc_sim.generator.sql.values import load_zone

    try:
        load_zone(time_zone)
    except SQLError as e:
        raise ConfigError(f"--time-zone {time_zone!r}: {e}") from None
    _database(Catalog(), database)


def _database(catalog: Catalog, database: str) -> str:
    """--database as a new session takes it (its name as created), or an error naming it."""
    try:
        return catalog.schema(database).name
    except SQLError as e:
        raise ConfigError(
            f"--database {database!r}: {e} (a session starts in test; a script may CREATE"
            " DATABASE and USE it)"
        ) from None


@app.command(cls=Command, short_help="Run SQL scripts as TiDB; send what TiCDC captures.")
def replay(
    scripts: Annotated[
        list[Path],
        typer.Argument(metavar="SCRIPT.sql...", help="SQL scripts, run in order in one session"),
    ],
    sink_uri: Annotated[
        str | None,
        typer.Option(
            metavar="URI",
            help="where TiCDC's messages go, e.g. jsonl:///tmp/out?protocol=canal-json"
            " (the sink URI of a changefeed; without it: the captured events as JSON lines)",
        ),
    ] = None,
    config: ConfigOption = None,
    overwrite: Annotated[
        bool, typer.Option(help="replace earlier output in the sink's directory or S3 prefix")
    ] = False,
    seed: Annotated[
        int,
        typer.Option(
            min=0,  # Python's Random takes -n for n: RAND() would repeat another seed's
            metavar="N",
            help="seed for RAND(), UUID() and AUTO_RANDOM shards",
        ),
    ] = 0,
    start_ts: StartTsOption = None,
    time_zone: Annotated[
        str,
        typer.Option(metavar="TZ", help="TiCDC's and the session's time zone (name or +hh:mm)"),
    ] = "UTC",
    continue_on_error: Annotated[
        bool, typer.Option(help="report a failing statement and go on with the next")
    ] = False,
    output_raw_change_event: Annotated[
        bool | None,
        typer.Option(
            help="keep updates of key columns whole instead of DELETE+INSERT",
            show_default="the config's output-raw-change-event, else false",
        ),
    ] = None,
    database: Annotated[
        str, typer.Option(metavar="NAME", help="the database the session starts in")
    ] = "test",
    old_value: Annotated[
        bool | None,
        typer.Option(
            help="the changefeed's enable-old-value (updates keep their old row)",
            show_default="the config's enable-old-value, else true",
        ),
    ] = None,
    expect: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="write what a correct consumer must end with: DIR/<schema>.<table>.parquet,"
            " every replicated table's final rows, and DIR/history/, the upstream's row"
            " versions (decode --upstream DIR reads handle-key-only messages with them)",
        ),
    ] = None,
    expect_checkpoints: Annotated[
        bool,
        typer.Option(
            help="with --expect: also every table's rows at each checkpoint sent,"
            " DIR/checkpoint-<ts>/<schema>.<table>.parquet"
        ),
    ] = False,
    faults: Annotated[
        str | None,
        typer.Option(
            metavar="KEY=VALUE,...",
            help="at-least-once scenarios, as under [faults] in the config, e.g."
            " 'duplicate-rate=0.01, restart-every=500, label=true' (seeded by --seed)",
        ),
    ] = None,
    resume_from: Annotated[
        str | None,
        typer.Option(
            metavar="TOPIC[P]=TS,...|@FILE",
            help="resume a failed kafka:// run from the checkpoints it printed (or a file"
            " holding them): the same scripts and --start-ts again, sending the changes after"
            " the smallest",
        ),
    ] = None,
) -> None:
    """Execute SCRIPTS as TiDB would; send what TiCDC captures to --sink-uri, or print it."""
    from ticdc_sim.generator.capture import captured
    from ticdc_sim.generator.sql.engine import Engine, EngineConfig, ticdc_zone
    from ticdc_sim.scriptfiles import check_scripts, statements

    flags: dict[str, Any] = {}
    if output_raw_change_event is not None:
        flags["output_raw_change_event"] = output_raw_change_event
    if old_value is not None:
        flags["enable_old_value"] = old_value
    flags["time_zone"] = ticdc_zone(time_zone)  # TiCDC's --tz, which simple names
    warnings = Warnings()  # one channel: the config's, the router's and the engine's
    resume = None if resume_from is None else _resume_points(resume_from, start_ts)
    if resume is not None and expect is not None:
        raise typer.BadParameter(
            "a resumed run sends part of the changes, so --expect's history would lack the"
            " failed run's: write --expect with a whole run (the same scripts and --start-ts"
            " give the same)",
            param_hint=_RESUME_FROM,
        )
    engine: Engine | None = None
    # statements that failed under --continue-on-error are said before an error that ends
    # the run (the end of a script inside a quote, a record the sink refuses)
    with _reported(warnings, lambda: engine.errors if engine is not None else []):
        if faults is not None:
            from ticdc_sim.config import parse_faults

            flags.update({"fault_seed": seed, **parse_faults(faults)})
        check_scripts(scripts)
        _check_session(time_zone, database)
        feed = None
        if sink_uri is not None:
            from ticdc_sim.config import changefeed

            feed = changefeed(sink_uri, _read_config(config), str(config or ""), flags)
        elif config is not None:
            raise ConfigError("--config needs --sink-uri: the config describes a changefeed")
        session = EngineConfig(
            seed=seed,
            start_ts=start_ts or 0,
            time_zone=time_zone,
            continue_on_error=continue_on_error,
            database=database,
        )
        engine = Engine(session, warnings=warnings)
        if expect_checkpoints and (expect is None or feed is None):
            raise ConfigError("--expect-checkpoints needs --expect and --sink-uri")
        if expect is not None:
            from ticdc_sim.sinks.expect import prepare

            if feed is not None:
                _apart(expect, feed.sink)
            prepare(expect)  # before any work: a directory of someone else's files is refused
        skipped = (lambda e: engine.errors.append(str(e))) if continue_on_error else None
        events = engine.run(statements(scripts, skipped))
        if feed is None:  # the changefeed's capture, without the rest of its pipeline
            _print_events(
                captured(
                    events,
                    old_value=flags.get("enable_old_value", True),
                    raw_change_event=flags.get("output_raw_change_event", False),
                )
            )
            replicated, checkpoint_ts = None, 0  # what TiCDC replicates by default
        else:
            recorder = None
            if expect is not None:
                recorder = partial(_recorder, expect, engine, expect_checkpoints)
            resuming = None
            if resume is not None:
                _resumable(feed, scripts)
                resuming = partial(_resuming, resume, partial(_ddl_of, scripts, session))
            pipeline = _replay_to_sink(
                feed, events, overwrite, warnings, recorder, start_ts=start_ts or 0, resume=resuming
            )
            replicated, checkpoint_ts = pipeline.replicates, pipeline.summary.checkpoint_ts
        if expect is not None:
            _write_expected(expect, engine, replicated, checkpoint_ts)
    _print_warnings(warnings)
    for error in engine.errors:
        typer.echo(f"error: {error}", err=True)
    if engine.errors:
        raise typer.Exit(1)


# --resume-from's entries: Kafka's topic names take letters, digits, '.', '_' and '-'
_RESUME_POINT = re.compile(
    r"(?P<topic>[A-Za-z0-9._-]+)\[(?P<partition>[0-9]{1,9})\]=(?P<ts>[0-9]{1,19})"
)
_RESUME_FROM = "'--resume-from'"


def _resume_points(value: str, start_ts: int | None) -> dict[tuple[str, int], int]:
    """--resume-from `TOPIC[P]=TS,...` (or @FILE holding it) as checkpoints by (topic,
    partition); a usage error naming the value and the position of what is wrong."""
    if start_ts is None:
        raise typer.BadParameter(
            "needs --start-ts, the one the failed run printed: the run's commit ts, and so its"
            " checkpoints, are those of that start",
            param_hint=_RESUME_FROM,
        )
    text, where = value, repr(value)
    if value.startswith("@"):
        try:
            text = Path(value[1:]).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            reason = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
            raise typer.BadParameter(
                f"cannot read {value[1:]}: {reason}", param_hint=_RESUME_FROM
            ) from None
        where = value[1:]
    points: dict[tuple[str, int], int] = {}
    at = 1  # the entry's first character, counted from 1
    for entry in text.split(","):
        start = at + len(entry) - len(entry.lstrip())
        found = _RESUME_POINT.fullmatch(entry.strip())
        if found is None or int(found["ts"]) > LAST_START_TS:
            raise typer.BadParameter(
                f"{where}, character {start}: {entry.strip()!r} is not TOPIC[PARTITION]=TS"
                " (a TSO; e.g. orders[0]=449000000001933327)",
                param_hint=_RESUME_FROM,
            )
        key = (found["topic"], int(found["partition"]))
        if key in points:
            raise typer.BadParameter(
                f"{where}, character {start}: {key[0]}[{key[1]}] again", param_hint=_RESUME_FROM
            )
        points[key] = int(found["ts"])
        at += len(entry) + 1
    return points


def _resumable(feed: Changefeed, scripts: list[Path]) -> None:
    """--resume-from resumes a kafka:// run, and reads the scripts twice (first for the
    topics the run sends to)."""
    if feed.sink.scheme != "kafka":
        raise typer.BadParameter(
            f"resumes a kafka:// run, not a {feed.sink.scheme}:// one", param_hint=_RESUME_FROM
        )
    for path in scripts:
        if not path.is_file():
            raise typer.BadParameter(
                f"reads the scripts twice, and {path} is not a file (a pipe reads once):"
                " save it to a file",
                param_hint=_RESUME_FROM,
            )


def _ddl_of(scripts: list[Path], session: EngineConfig) -> tuple[list[DDLEvent], int]:
    """A first run of the scripts: its DDL events, and its first commit's physical time (the
    checkpoint ticker's origin). An error ends it where the second run will stop too."""
    from ticdc_sim.generator.sql.engine import Engine
    from ticdc_sim.model.events import DDLEvent
    from ticdc_sim.model.tso import physical_ms
    from ticdc_sim.scriptfiles import statements

    engine = Engine(session, warnings=Warnings())  # the second run says the warnings
    ddls: list[DDLEvent] = []
    origin = None
    try:
        skipped = (lambda e: None) if session.continue_on_error else None
        for event in engine.run(statements(scripts, skipped)):
            if origin is None:
                origin = physical_ms(_commit_ts(event))
            if isinstance(event, DDLEvent):
                ddls.append(event)
    except SimError:
        pass
    return ddls, origin or 0


def _commit_ts(event: Event) -> int:
    from ticdc_sim.model.events import ResolvedEvent

    return event.ts if isinstance(event, ResolvedEvent) else event.commit_ts


def _resuming(
    points: dict[tuple[str, int], int],
    first_run: Callable[[], tuple[list[DDLEvent], int]],
    pipeline: Pipeline,
    events: Iterable[Event],
) -> Iterator[Event]:
    """The events after the smallest checkpoint of `points`, on a pipeline resumed there:
    TiCDC resumes a whole changefeed from one checkpoint, so partitions that had more
    acknowledged get at-least-once duplicates, and DDL before it is not sent again. Every
    (topic, partition) must be one the run sends to (`first_run` tells them), or nothing is
    sent."""
    from ticdc_sim.model.events import DDLEvent

    ddls, origin = first_run()
    topics = pipeline.topics(ddls)
    for (topic, partition), ts in points.items():
        count = topics.get(topic)
        if count is None:
            raise typer.BadParameter(
                f"{topic}[{partition}]={ts}: this run sends nothing to topic {topic!r} (its"
                f" topics: {', '.join(sorted(topics))})",
                param_hint=_RESUME_FROM,
            )
        if partition >= count:
            raise typer.BadParameter(
                f"{topic}[{partition}]={ts}: topic {topic!r} has partitions 0 to {count - 1}",
                param_hint=_RESUME_FROM,
            )
    point = min(points.values())
    history: list[DDLEvent] = []
    remaining = iter(events)
    for event in remaining:
        if _commit_ts(event) <= point:
            if isinstance(event, DDLEvent):
                history.append(event)
            continue
        pipeline.resume(history, point, origin)
        yield event
        yield from remaining
        return
    pipeline.resume(history, point, origin)


def _apart(expect: Path, sink: SinkURI) -> None:
    """--expect and a file sink in directories of their own: each refuses the other's files
    (on the next run, if not on this one)."""
    from ticdc_sim.sinks import overlap, place

    where = place(sink)
    if where is not None and overlap(expect, where):
        raise ConfigError(
            f"--expect {expect}: the {sink.scheme} sink writes {sink.target}; give each a"
            " directory of its own, neither inside the other"
        )


@contextmanager
def _reported(warnings: Warnings, earlier: Callable[[], Iterable[str]] = tuple) -> Iterator[None]:
    """A SimError ends the command: the warnings so far, the `earlier` errors (statements
    skipped under --continue-on-error), then the error, exit status 1."""
    try:
        yield
    except SimError as e:
        _print_warnings(warnings)
        for error in [*earlier(), str(e)]:
            typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None


def _read_config(path: Path | None) -> bytes | None:
    """The file's bytes: config.py reads them as UTF-8 and locates a byte that is not."""
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None


def _print_events(events: Iterable[Event]) -> None:
    from ticdc_sim.jsonout import ddl_record, row_record
    from ticdc_sim.model.events import DDLEvent, RowChangedEvent

    out = sys.stdout.buffer
    for event in events:
        if isinstance(event, DDLEvent):
            out.write(orjson.dumps(ddl_record(event)) + b"\n")
        elif isinstance(event, RowChangedEvent):
            out.write(orjson.dumps(row_record(event)) + b"\n")


def _print_warnings(warnings: Warnings) -> None:
    for warning in warnings:
        typer.echo(f"warning: {warning}", err=True)


def _write_expected(
    directory: Path,
    engine: Engine,
    replicated: Callable[[TableInfo], bool] | None,
    checkpoint_ts: int,
) -> None:
    """The tables `replicated` picks, or without a changefeed those TiCDC replicates by
    default (`pipeline.eligible`), as --expect writes them."""
    from ticdc_sim.pipeline import eligible
    from ticdc_sim.sinks.expect import write_expected

    picked = replicated or eligible
    tables = [(info, rows) for info, rows in engine.upstream.table_states() if picked(info)]
    paths = write_expected(str(directory), tables, engine.catalog.schema_version, checkpoint_ts)
    typer.echo(f"expected state: {len(paths)} tables in {directory}", err=True)


def _recorder(directory: Path, engine: Engine, snapshots: bool, pipeline: Pipeline) -> Recorder:
    from ticdc_sim.sinks.expect import Recorder

    return Recorder(directory, engine.upstream.table_state, pipeline.replicates, snapshots)


def _replay_to_sink(
    feed: Changefeed,
    events: Iterable[Event],
    overwrite: bool,
    warnings: Warnings,
    recorder: Callable[[Pipeline], Recorder] | None = None,
    *,
    workload: bool = False,
    start_ts: int | None = None,
    resume: Callable[[Pipeline, Iterable[Event]], Iterable[Event]] | None = None,
) -> Pipeline:
    """`workload`: a generated workload's run (avro registers at each DDL, as Spark does);
    `start_ts`: a replay's, said with a Kafka run's resume points; `resume`: the events
    --resume-from sends, of the pipeline."""
    from ticdc_sim.pipeline import Pipeline, registry_of
    from ticdc_sim.sinks import open_sink

    # avro's registry first: a Kafka sink without one is refused before the brokers are
    # asked; an HTTP one is closed when the run ends, however it ends
    with registry_of(feed) as registry:
        sink = open_sink(feed.sink, overwrite=overwrite, warnings=warnings, feed=feed)
        pipeline = Pipeline(feed, sink, warnings, registry, register_at_ddl=workload)
        observer = pipeline.observer = recorder(pipeline) if recorder is not None else None
        try:
            for event in resume(pipeline, events) if resume is not None else events:
                pipeline.push(event)
        except BaseException as e:
            _finish(feed, pipeline, observer, e)
            _say_lost(sink, start_ts)
            raise
        try:
            _finish(feed, pipeline, observer, None)
        except SimError as e:
            if getattr(e, "resume_from", None) is not None:  # close's own report
                raise _with_resume(e, start_ts) from None
            _say_lost(sink, start_ts)  # a send that failed on the way to the end
            raise
    return pipeline


def _say_lost(sink: Any, start_ts: int | None) -> None:
    """A Kafka run that ended on an error: the records its brokers did not acknowledge, and
    where to resume (`KafkaSink.lost`)."""
    lost = getattr(sink, "lost", None)
    if lost is not None:
        typer.echo(f"error: {_with_resume(lost, start_ts)}", err=True)


def _with_resume(error: SimError, start_ts: int | None) -> SimError:
    """A Kafka run's unacknowledged records (`kafka.Unacknowledged`), with the options of a
    replay that resumes it; any other error as it is."""
    value = getattr(error, "resume_from", None)
    if value is None or start_ts is None:
        return error
    return SimError(
        f"{error}\nto resume, run the same command with: --start-ts {start_ts}"
        f" --resume-from '{value}'"
    )


def _finish(
    feed: Changefeed, pipeline: Pipeline, observer: Recorder | None, error: BaseException | None
) -> None:
    """Close the pipeline, or abort it after `error`: what was sent stays sent, as in Kafka,
    and a jsonl or parquet directory is left as DIR.partial. An error of the abort itself
    (a committed row the sink refuses) is said before `error`, which ended the run."""
    from ticdc_sim.config import STORAGE_SCHEMES
    from ticdc_sim.sinks.staging import partial_dir

    failed, late = error is not None, None
    try:
        if failed:
            pipeline.abort()
        else:
            pipeline.close()
    except SimError as e:
        failed, late = True, e
    except BaseException:
        failed = True
        raise
    finally:
        if observer is not None:
            observer.close(failed)
        if failed and feed.sink.scheme in ("jsonl", "parquet"):
            partial = partial_dir(Path(feed.sink.target))
            typer.echo(f"the records sent before the error are in {partial}", err=True)
        elif failed and feed.sink.scheme in STORAGE_SCHEMES:
            typer.echo(_files_left(feed, pipeline), err=True)
        _print_summary(pipeline.summary, storage=feed.sink.scheme in STORAGE_SCHEMES)
    if late is not None and error is None:
        raise late
    if late is not None and str(late) != str(error):
        typer.echo(f"error: {late}", err=True)


def _files_left(feed: Changefeed, pipeline: Pipeline) -> str:
    """Where a failed storage run's files are: file:// leaves DIR.partial; s3:// has no
    staging, its objects stay under the prefix (docs/sink-uri.md)."""
    from ticdc_sim.sinks import place
    from ticdc_sim.sinks.staging import partial_dir

    count = pipeline.storage.disk_usage()[1] if pipeline.storage is not None else 0
    files = "1 file" if count == 1 else f"{count} files"
    local = feed.sink.scheme == "file"
    where = partial_dir(Path(feed.sink.target)) if local else place(feed.sink)
    if not count:
        return f"no file was written to {where} before the error"
    return f"the {files} written before the error {'are in' if local else 'stay in'} {where}"


def _print_summary(summary: Summary, storage: bool = False) -> None:
    """What a run sent, in one line on stderr (both engines); `storage`: a file:// or s3://
    run, which sends files, not records."""
    per_topic = ", ".join(f"{t}: {n}" for t, n in summary.records.items()) or "none"
    storage = storage or bool(summary.files)
    sent = f"{summary.files} data files" if storage else f"records per topic: {per_topic}"
    typer.echo(
        f"{summary.rows} rows, {summary.ddls} DDL, {summary.checkpoints} checkpoints -> {sent}"
        + (
            f" ({summary.skipped_rows} rows, {summary.skipped_ddls} DDL of filtered or"
            " ineligible tables skipped)"
            if summary.skipped_rows or summary.skipped_ddls
            else ""
        )
        + (f", and {summary.injected} injected by [faults]" if summary.injected else ""),
        err=True,
    )


@app.command(cls=Command, short_help="Print the messages a sink holds, decoded.")
def decode(
    source: Annotated[
        str,
        typer.Argument(
            metavar="SOURCE",
            help="jsonl:///DIR?protocol=..., parquet:///DIR?..., file:///DIR?protocol=csv,"
            " s3://BUCKET/PREFIX?protocol=csv or kafka://HOST:PORT/TOPIC?..."
            " (the sink URI that wrote it)",
        ),
    ],
    config: Annotated[
        Path | None,
        typer.Option(
            metavar="CHANGEFEED.toml", help="the changefeed TOML the records were written with"
        ),
    ] = None,
    upstream: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="the --expect directory of the run: handle-key-only messages come out whole,"
            " read from its history as TiCDC's consumer reads upstream TiDB",
        ),
    ] = None,
) -> None:
    """Print every message of SOURCE decoded, one JSON object a line, with its position.
    Claim-check messages are read from the config's claim-check-storage-uri."""
    from ticdc_sim.config import changefeed

    try:
        feed = changefeed(source, _read_config(config), str(config or ""))
        _print_decoded(feed, _records(feed.sink), _upstream(feed, upstream))
    except SimError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None


def _print_decoded(
    feed: Changefeed,
    records: Iterable[Record],
    upstream: Upstream,
    limit: int | None = None,
    registry: SchemaRegistry | None = None,
) -> None:
    """Each record's messages decoded, one JSON object a line with its position; `limit`:
    no more than that many lines. Avro's schema ids are looked up in `registry`, else in
    the registry the source names or keeps beside its records (`_source_registry`)."""
    from ticdc_sim.config import STORAGE_SCHEMES
    from ticdc_sim.encoders import WITH_REGISTRY, Decoder, decoder_for
    from ticdc_sim.encoders.registry import close_registry
    from ticdc_sim.jsonout import decoded_lines

    opened = (
        _source_registry(feed)
        if registry is None and feed.codec.protocol in WITH_REGISTRY
        else None
    )
    if opened is not None:  # closed once read (an HTTP registry)
        try:
            _print_decoded(feed, records, upstream, limit, opened)
        finally:
            close_registry(opened)
        return
    out = sys.stdout.buffer
    decoder: Decoder = decoder_for(feed.codec, upstream, registry)
    if feed.sink.scheme in STORAGE_SCHEMES:
        from ticdc_sim.sinks.storage import StorageDecoder

        decoder = StorageDecoder(feed.codec)

    def unreadable(record: Record, error: SimError) -> SimError:
        hint = _reads_as(feed, record)
        return SimError(f"{_where(feed.sink, record)} offset {record.offset}: {error}{hint}")

    lines = decoded_lines(decoder, records, unreadable)
    for line in lines if limit is None else itertools.islice(lines, limit):
        out.write(orjson.dumps(line) + b"\n")


def _source_registry(feed: Changefeed) -> SchemaRegistry | None:
    """The registry avro records are read with: the one `schema-registry` names, else the
    schema-registry.json a replay wrote beside the jsonl or parquet records (without it, one
    that says, for the first record that names a schema, what would work)."""
    from ticdc_sim.encoders.registry import MemoryRegistry
    from ticdc_sim.pipeline import open_registry
    from ticdc_sim.sinks.staging import REGISTRY_FILE

    if feed.codec.schema_registry:
        return open_registry(feed.codec)
    if feed.sink.scheme not in ("jsonl", "parquet"):
        raise ConfigError(
            f"decode of avro records from {feed.sink.scheme}:// needs the schema registry"
            " they were written with: add ?schema-registry=http://HOST:PORT to the URI"
        )
    path = Path(feed.sink.target) / REGISTRY_FILE
    if not path.is_file():
        return _NoRegistry(path)
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: cannot read the schema registry ({e})") from None
    return MemoryRegistry.from_json(document, str(path))


class _NoRegistry:
    """What a directory of avro records without its schema-registry.json is read with: a
    registry that holds nothing and says where the schemas are (a service's changefeed
    writes none: its cluster's registry holds them)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def register(self, subject: str, schema: str) -> int:
        raise AssertionError("decode registers nothing")

    def schema(self, schema_id: int) -> str:
        from ticdc_sim.encoders.registry import SCHEMA_NOT_FOUND, RegistryError

        raise RegistryError(
            SCHEMA_NOT_FOUND,
            f"no schema registry to look it up in: {self.path} (the one a replay writes beside"
            " its records) is not there, and the URI names no schema-registry; add"
            " ?schema-registry=URL of the registry the records were written with (a"
            " service's changefeed: its cluster's,"
            " http://HOST:PORT/sim/v1/clusters/{cluster}/schema-registry)",
        )


def _reads_as(feed: Changefeed, record: Record) -> str:
    """For a record its protocol cannot read: the other protocol that reads it, as a hint
    (decode given another URI than the one that wrote the records)."""
    from ticdc_sim.encoders import PROTOCOLS, decoder_for

    for protocol in PROTOCOLS:
        if protocol != feed.codec.protocol:
            try:
                decoder_for(dataclasses.replace(feed.codec, protocol=protocol)).decode(
                    record.key, record.value
                )
            except SimError:
                continue
            return f" (it reads as protocol={protocol}: decode needs the writer's sink URI)"
    return ""


def _upstream(feed: Changefeed, directory: Path | None) -> Upstream:
    from ticdc_sim.sinks.claim_check import ClaimStorage
    from ticdc_sim.sinks.upstream import Upstream

    uri = feed.codec.claim_check_storage_uri
    claims = ClaimStorage(uri) if uri else None
    history = None
    if directory is not None:
        from ticdc_sim.sinks.expect import History  # pyarrow's import, for --upstream alone

        history = History(directory)
    return Upstream(claims, history)


def _where(sink: SinkURI, record: Record) -> str:
    topic, partition = record.topic, record.partition
    if sink.scheme == "jsonl":
        return f"{sink.target}/{topic}/partition-{partition}.jsonl"
    if sink.scheme == "parquet":
        return f"{sink.target}/topic={topic}/partition={partition}"
    if sink.scheme == "file":
        return f"{sink.target}/{topic}"
    if sink.scheme == "s3":
        return f"s3://{sink.target}/{topic}"
    return f"kafka {topic}[{partition}]"


def _records(sink: SinkURI) -> Iterator[Record]:
    from ticdc_sim.config import STORAGE_SCHEMES

    if sink.scheme == "jsonl":
        from ticdc_sim.sinks.jsonl import read_jsonl

        return read_jsonl(sink.target)
    if sink.scheme == "parquet":
        from ticdc_sim.sinks.parquet import read_parquet

        return read_parquet(sink.target)
    if sink.scheme in STORAGE_SCHEMES:
        from ticdc_sim.sinks.storage import read_storage
        from ticdc_sim.sinks.store import read_store

        return read_storage(read_store(sink))
    if sink.scheme == "kafka":
        from ticdc_sim.sinks.kafka import read_topic

        return read_topic(sink)
    raise ConfigError(
        "decode reads jsonl://, parquet:// and file:// directories, s3:// prefixes and"
        " kafka:// topics,"
        f" not {sink.scheme}://"
    )


@app.command(cls=Command, short_help="Serve a simulated TiDB cluster with TiCDC changefeeds.")
def serve(
    host: Annotated[
        str | None,
        typer.Option(metavar="ADDRESS", help="address to bind (TICDC_SIM_HOST, 127.0.0.1)"),
    ] = None,
    port: Annotated[
        int | None, typer.Option(metavar="PORT", help="HTTP port (TICDC_SIM_PORT, 8300)")
    ] = None,
    mysql_port: Annotated[
        int | None,
        typer.Option(metavar="PORT", help="MySQL port, 0 for none (TICDC_SIM_MYSQL_PORT, 4000)"),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="where file sinks write (TICDC_SIM_DATA_DIR)"),
    ] = None,
) -> None:
    """Serve a simulated TiDB cluster with TiCDC changefeeds: the MySQL protocol, TiCDC's open
    API v2, SQL over HTTP and the playground page. Other settings: TICDC_SIM_* variables."""
    from pydantic import ValidationError

    from ticdc_sim.service.server import run

    given = {"host": host, "port": port, "mysql_port": mysql_port, "data_dir": data_dir}
    try:
        run({k: v for k, v in given.items() if v is not None})
    except ValidationError as e:
        problems = "; ".join(_setting_problem(p["loc"], p["msg"], given) for p in e.errors())
        typer.echo(f"error: {problems}", err=True)
        raise typer.Exit(2) from None
    except (SimError, OSError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None


def _setting_problem(where: tuple[Any, ...], message: str, given: dict[str, Any]) -> str:
    """A bad setting named as the user gave it: the option, else the variable."""
    name = str(where[0]) if where else "settings"
    variable = f"TICDC_SIM_{name.upper()}"
    if given.get(name) is not None:
        return f"--{name.replace('_', '-')}: {message} (got {given[name]})"
    return f"{variable}: {message}"


def _one_of(*choices: str) -> Callable[[str], str]:
    """An option's check: one of `choices`, else a usage error naming them."""

    def check(value: str) -> str:
        if value not in choices:
            raise typer.BadParameter(f"{value!r}: {' or '.join(choices)}")
        return value

    return check


@app.command(cls=Command, short_help="Generate a synthetic workload into a sink.")
def generate(
    workload: Annotated[
        Path, typer.Option(metavar="SPEC.yaml", help="the workload spec (docs/workload-spec.md)")
    ],
    sink_uri: Annotated[
        str | None,
        typer.Option(
            metavar="URI",
            help="where TiCDC's messages go (without it: the events as JSON lines)",
        ),
    ] = None,
    config: ConfigOption = None,
    events: Annotated[
        int | None,
        typer.Option(min=0, metavar="N", help="operations.events: this many row changes"),
    ] = None,
    duration: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS", help="operations.duration_s: this many simulated seconds of them"
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option(metavar="N", help="the spec's seed, replaced")] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="PATH=VALUE",
            help="a value of the spec replaced, as the spec's errors name it; the value is YAML:"
            " --set operations.mix.delete=2 --set 'tables[0].columns.amount={uniform: [1, 9]}'"
            " (repeatable)",
        ),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option(help="replace earlier output in the sink's directory or S3 prefix")
    ] = False,
    preview: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="print the first N events as JSON lines (with --sink-uri: as decoded from"
            " the records) and stop",
        ),
    ] = None,
    progress: Annotated[
        bool, typer.Option(help="a progress bar on stderr, when it is a terminal")
    ] = True,
    engine: Annotated[
        str,
        typer.Option(
            metavar="local|spark",
            callback=_one_of("local", "spark"),
            help="local: one process, streaming; spark: a PySpark job",
        ),
    ] = "local",
    master: Annotated[
        str,
        typer.Option(
            metavar="MASTER", help="--engine spark: local[*], local[N], spark://host:port, yarn"
        ),
    ] = "local[*]",
    conf: Annotated[
        list[str] | None,
        typer.Option(metavar="NAME=VALUE", help="--engine spark: a Spark setting (repeatable)"),
    ] = None,
) -> None:
    """Generate a synthetic workload (tables, value generators, an operation mix) and send
    what TiCDC would capture of it to --sink-uri: the same bytes for the same spec and seed,
    whichever the engine."""
    from ticdc_sim.config import changefeed
    from ticdc_sim.datasets import read_datasets
    from ticdc_sim.generator.capture import captured
    from ticdc_sim.generator.workload import Generator, SpecError, check, load

    warnings = Warnings()
    with _reported(warnings):
        spec = load(workload, seed, _overrides(events, duration, set_ or []))
        try:
            if engine == "spark" and preview is None:
                if sink_uri is None:
                    raise ConfigError("--engine spark needs --sink-uri")
                settings = _spark_settings(conf or [])
                if progress and sys.stderr.isatty():  # Spark's own bar: stages, tasks done
                    settings.setdefault("spark.ui.showConsoleProgress", "true")
                spark_feed = changefeed(sink_uri, _read_config(config), str(config or ""))
                _generate_on_spark(spec, spark_feed, master, settings, overwrite, warnings)
                _print_warnings(warnings)
                return
            feed: Changefeed | None = None
            if sink_uri is not None:
                feed = changefeed(sink_uri, _read_config(config), str(config or ""))
            elif config is not None:
                raise ConfigError("--config needs --sink-uri: the config describes a changefeed")
            datasets = read_datasets(spec)
            generator = Generator(spec, datasets)
            if preview is not None:
                first = itertools.islice(generator.events(), min(preview, sys.maxsize))
                _preview(feed, first, preview, warnings)
                return
            # what would fail mid-run (a chapter, a key column too small, distinct values
            # running out) is found by a walk of the schedule before any record is sent
            check(spec, datasets)
            stream: Iterable[DDLEvent | RowChangedEvent] = generator.events()
            if spec.operations.wall_rate:
                stream = _paced(stream, spec.operations.wall_rate)
            if progress and sys.stderr.isatty():  # a bar in a log file is noise
                stream = _progress(stream, generator.planned_events())
            if feed is None:  # a default changefeed's capture, without the rest of its pipeline
                _print_events(captured(stream))
            else:
                _replay_to_sink(feed, stream, overwrite, warnings, workload=True)
        except SpecError as e:
            raise e.located(spec) from None
    _print_warnings(warnings)


def _overrides(events: int | None, duration: float | None, given: list[str]) -> list[Override]:
    """--events, --duration and --set as changes to the spec's YAML."""
    from ticdc_sim.generator.workload import Override

    out = []
    if events is not None and duration is not None:
        raise typer.BadParameter(
            "give one of them (the run's length is events or simulated seconds)",
            param_hint="'--events' / '--duration'",
        )
    if events is not None:
        out.append(Override(("operations", "events"), events, "--events"))
        out.append(Override.remove(("operations", "duration_s"), "--events"))
    if duration is not None:
        out.append(Override(("operations", "duration_s"), duration, "--duration"))
        out.append(Override.remove(("operations", "events"), "--duration"))
    return out + [Override.parse(text) for text in given]


def _spark_settings(given: list[str]) -> dict[str, str]:
    settings = {}
    for item in given:
        name, equals, value = item.partition("=")
        if not equals or not name.strip():
            raise ConfigError(f"--conf {item!r}: NAME=VALUE")
        settings[name.strip()] = value
    return settings


def _preview(
    feed: Changefeed | None,
    events: Iterable[DDLEvent | RowChangedEvent],
    count: int,
    warnings: Warnings,
) -> None:
    """The first `count` events: without a changefeed as captured, with one as a consumer
    decodes the records it would send (in the order sent; nothing is written)."""
    from ticdc_sim.generator.capture import captured
    from ticdc_sim.pipeline import Pipeline, registry_of
    from ticdc_sim.sinks.memory import MemorySink

    if feed is None:
        _print_events(captured(events))
        return
    sink = MemorySink()
    with registry_of(feed) as registry:  # open until the records are decoded
        pipeline = Pipeline(feed, sink, warnings, registry, register_at_ddl=True)
        for event in events:
            pipeline.push(event)
        pipeline.close()
        _print_decoded(feed, sink.arrived, _upstream(feed, None), count, registry)


def _generate_on_spark(
    spec: Workload,
    feed: Changefeed,
    master: str,
    conf: dict[str, str],
    overwrite: bool,
    warnings: Warnings,
) -> None:
    from ticdc_sim.pipeline import Summary
    from ticdc_sim.spark import generate as generate_on_spark

    report = generate_on_spark(
        spec, feed, master, overwrite=overwrite, warnings=warnings, conf=conf
    )
    _print_summary(
        Summary(report.rows, report.ddls, report.checkpoints, records=report.per_topic())
    )


def _paced(
    events: Iterable[DDLEvent | RowChangedEvent], rate: float
) -> Iterator[DDLEvent | RowChangedEvent]:
    """The events at no more than `rate` a second of real time (operations.wall_rate), for
    live runs into Kafka: ahead of the clock, it sleeps."""
    started = time.monotonic()
    for done, event in enumerate(events, 1):
        yield event
        ahead = done / rate - (time.monotonic() - started)
        if ahead > 0.005:
            time.sleep(ahead)


def _progress(
    events: Iterable[DDLEvent | RowChangedEvent], total: int | None
) -> Iterator[DDLEvent | RowChangedEvent]:
    """The events, counted on a progress bar (events/s, ETA) on stderr."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("generating"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]} events/s"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("events", total=total, rate="-")
        started, done = time.perf_counter(), 0
        for event in events:
            yield event
            done += 1
            if done % 4096 == 0:
                rate = done / max(time.perf_counter() - started, 1e-9)
                bar.update(task, completed=done, rate=f"{rate:,.0f}")
        bar.update(task, completed=done)


@app.command(
    "workload-spec", cls=Command, short_help="Print the workload spec's reference (Markdown)."
)
def workload_spec(
    output: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="write here instead of stdout (docs/workload-spec.md)"),
    ] = None,
) -> None:
    """Print the workload spec's reference (Markdown): every option of a `generate
    --workload` spec with its shape, default and a working example."""
    from ticdc_sim.generator.workload.reference import render

    _write(output, render().encode())


@app.command(cls=Command, short_help="Print the service's OpenAPI document.")
def openapi(
    output: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="write here instead of stdout (openapi/openapi.json)"),
    ] = None,
) -> None:
    """Print the service's OpenAPI document, as `GET /openapi.json` serves it."""
    import orjson

    from ticdc_sim.service.app import create_app
    from ticdc_sim.service.settings import Settings

    schema = create_app(Settings(mysql_port=0)).openapi()
    _write(output, orjson.dumps(schema, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")


def _write(output: Path | None, text: bytes) -> None:
    """`text` to the file `output`, or stdout; a file that cannot be written is an error."""
    try:
        if output is None:
            sys.stdout.buffer.write(text)
        else:
            output.write_bytes(text)
    except OSError as e:
        typer.echo(f"error: cannot write {output}: {e.strerror}", err=True)
        raise typer.Exit(1) from None


@app.command(cls=Command, short_help="Compare a consumer's database with replay --expect.")
def check(
    expect: Annotated[
        Path,
        typer.Option(
            metavar="DIR",
            help="what the consumer must end with: replay's --expect directory (or one of"
            " its checkpoint-<ts>/ folders)",
        ),
    ],
    target: Annotated[
        str,
        typer.Option(
            metavar="URL",
            help="the consumer's database: sqlite:///FILE, mysql://USER:PASSWORD@HOST:PORT/"
            " (?unix_socket=PATH&time-zone=TZ: TiCDC's time zone, TIMESTAMP is read in it),"
            " or an SQLAlchemy URL of a SQLite or MySQL-compatible database",
        ),
    ],
    table: Annotated[
        list[str] | None,
        typer.Option(metavar="SCHEMA.TABLE", help="compare this table only (repeatable)"),
    ] = None,
    rename: Annotated[
        list[str] | None,
        typer.Option(
            metavar="SCHEMA.TABLE=NAME",
            help="the table's name downstream, NAME or SCHEMA.NAME (default: the same name;"
            " on SQLite, the table of the database attached as SCHEMA, else of main)"
            " (repeatable)",
        ),
    ] = None,
    limit: Annotated[
        int,
        typer.Option(min=0, metavar="N", help="rows shown of each kind of difference, a table"),
    ] = 10,
) -> None:
    """Compare the consumer's downstream database with what the upstream replicated (replay
    --expect DIR): rows missing downstream, extra rows, and rows whose values differ as MySQL
    would store them. Exit status: 0 equal, 1 different, 2 the check could not run."""
    from ticdc_sim.check import diff, expected_from_dir

    renames = dict(_renamed(item) for item in rename or [])
    try:
        found = diff(expected_from_dir(expect), target, table or None, rename=renames)
    except SimError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    typer.echo(found.report(limit))
    if found:
        raise typer.Exit(1)


def _renamed(item: str) -> tuple[str, str]:
    """--rename SCHEMA.TABLE=NAME."""
    table, equals, name = (part.strip() for part in item.partition("="))
    if not (equals and table and name):
        raise typer.BadParameter(f"{item!r}: SCHEMA.TABLE=NAME", param_hint="'--rename'")
    return table, name


def main() -> None:
    try:
        # help piped to a file or pager: 120 columns, not the 80 click assumes of a non-terminal
        # (help is click's, not rich's: TERMINAL_WIDTH is not read)
        app(**({} if sys.stdout.isatty() else {"terminal_width": 120}))
    finally:
        # The process ends here. Frozen, what the command imported and built is left to the
        # exit instead of being collected object by object on the way out, a fifth of a short
        # call's time. Nothing waits on a collection: the sinks have closed their files, and
        # atexit handlers run all the same.
        gc.freeze()
