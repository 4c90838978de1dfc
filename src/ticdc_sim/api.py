"""The Python API: a simulated upstream TiDB cluster and its TiCDC changefeeds, in process.

    from ticdc_sim import Simulator

    with Simulator(seed=7) as sim:
        feed = sim.changefeed("memory://?protocol=canal-json")
        sim.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a')")
        feed.records()   # the Kafka records TiCDC would have written
        feed.events()    # the same, decoded as `ticdc-sim decode` prints them

A `Simulator` is the service's cluster (`ticdc_sim.cluster`) with one session of its own; its
changefeeds are the CLI's pipelines on the simulated clock, so a script executed here gives
the records `ticdc-sim replay` gives for it, byte for byte (reading the records in between
sends the pending batch, as TiCDC's 15 ms batch window would have on the wall clock).
`generate` runs a workload spec in process, as `ticdc-sim generate` does.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import reprlib
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ticdc_sim.cluster import Cluster, checked_name
from ticdc_sim.config import (
    Changefeed as ChangefeedConfig,
)
from ticdc_sim.config import (
    changefeed as changefeed_config,
)
from ticdc_sim.config import (
    parse_changefeed_mapping,
    parse_faults,
)
from ticdc_sim.encoders import decoder_for
from ticdc_sim.encoders.registry import MemoryRegistry
from ticdc_sim.errors import ConfigError, SimError, SQLError
from ticdc_sim.feed import Change, Feed, FeedSpec
from ticdc_sim.feedlog import FeedLog, LoggedSink, Retain
from ticdc_sim.generator.capture import captured
from ticdc_sim.generator.sql.ddl import Catalog
from ticdc_sim.generator.sql.engine import EngineConfig
from ticdc_sim.generator.sql.script import RawStatement, split_script
from ticdc_sim.generator.sql.upstream import showing
from ticdc_sim.generator.sql.values import load_zone
from ticdc_sim.jsonout import decoded_lines
from ticdc_sim.model.events import DDLEvent, Event, RowChangedEvent
from ticdc_sim.model.table import TableInfo, quoted_name, table_names
from ticdc_sim.model.tso import LAST_START_TS
from ticdc_sim.pipeline import Pipeline, eligible, registry_of
from ticdc_sim.scriptfiles import check_scripts, statements
from ticdc_sim.sinks import Record, Sink, open_sink, overlap, place
from ticdc_sim.sinks.storage import StorageDecoder, read_storage

if TYPE_CHECKING:
    from ticdc_sim.check import Diff, ExpectedTable
    from ticdc_sim.generator.sql.store import Row
    from ticdc_sim.sinks.upstream import Upstream

__all__ = ["Changefeed", "ChangefeedFailed", "Result", "Simulator", "generate"]

ConfigSource = str | os.PathLike[str] | Mapping[str, Any]
Name = tuple[str, str]  # schema, table
PathLike = (str, os.PathLike)


class ChangefeedFailed(SimError):
    """A changefeed's sink failed (the changefeed sends no more: the Python API has no
    supervisor to retry it, as the service's does); `results`: what
    the statements of the call that found it did (they committed upstream)."""

    def __init__(self, message: str, results: list[Result]) -> None:
        super().__init__(message)
        self.results = results


@dataclass(frozen=True, slots=True)
class Result:
    """What one statement did, as a MySQL client sees it."""

    statement: str
    line: int
    column: int
    affected_rows: int = 0
    insert_id: int = 0  # the OK packet's LAST_INSERT_ID
    commit_ts: int | None = None  # the TSO of what it committed; None: nothing committed
    columns: list[str] | None = None  # a result set's column labels (SELECT, SHOW)
    rows: list[tuple[Any, ...]] | None = None  # its rows
    warnings: list[str] = field(default_factory=list)  # what SHOW WARNINGS would list


class Changefeed:
    """One changefeed of a `Simulator` (`Simulator.changefeed` makes them)."""

    def __init__(self, feed: Feed, upstream: Upstream | None) -> None:
        self._feed = feed
        self._upstream = upstream
        self._failure_said = False  # its failure has been raised to the caller

    @property
    def error(self) -> str | None:
        """Why it sends no more, if its sink failed (the upstream goes on): its error, or
        the error a service would retry (`warning`)."""
        feed = self._feed
        if feed.error is None and feed.broken and feed.last_warning is not None:
            return feed.last_warning.message
        return feed.error

    @property
    def id(self) -> str:
        return self._feed.spec.id

    @property
    def config(self) -> ChangefeedConfig:
        """The changefeed's settings, as the sink URI and config gave them."""
        return self._feed.changefeed

    @property
    def checkpoint_ts(self) -> int:
        """The last checkpoint it sent (its start-ts before the first)."""
        return self._feed.checkpoint_ts

    @property
    def warnings(self) -> list[str]:
        """What TiCDC would have logged for it (config, dispatch, encoding)."""
        return [str(w) for w in self._feed.warnings]

    def records(self, topic: str | None = None, partition: int | None = None) -> list[Record]:
        """Every record it sent, by topic, then partition, in offset order; the pending
        batch is sent first. A storage sink's (file://, s3://) records are the files it
        wrote, each time it wrote one: the topic and key are the file's path, the value its
        bytes, partition 0."""
        with self._said():
            self._feed.send_pending()
        return self._feed.log.read(topic, partition, 0, sys.maxsize)

    def events(
        self, topic: str | None = None, partition: int | None = None
    ) -> list[dict[str, Any]]:
        """Its records decoded, one dict per event with its position (topic, partition,
        offset, index): what `ticdc-sim decode` prints. A storage sink's: the files it has
        written so far (on its flush interval of simulated time, and at close), as
        `ticdc-sim decode` walks them, each once; `topic` filters by path prefix."""
        feed = self._feed
        storage = feed.sink.storage
        if storage is None:
            decoder = decoder_for(feed.changefeed.codec, self._upstream, feed.registry)
            return list(decoded_lines(decoder, self.records(topic, partition), self._unreadable))
        with self._said():
            feed.send_pending()  # what the capture stage and the batch hold, to the sink
        with feed.lock:
            files = [
                r
                for r in read_storage(storage.written())
                if topic is None or r.topic.startswith(topic)
            ]
        decoder = StorageDecoder(feed.changefeed.codec)
        return list(decoded_lines(decoder, files, self._unreadable))

    def checkpoint(self) -> int:
        """Send the pending batch and a checkpoint now, as TiCDC's ticker would; its ts."""
        with self._said():
            return self._feed.checkpoint()

    @contextlib.contextmanager
    def _said(self) -> Iterator[None]:
        """A send that fails here ends the changefeed's sending (`Feed._failing`): said
        once."""
        try:
            yield
        except SimError as e:
            self._failure_said = True
            raise ChangefeedFailed(f"changefeed {self.id} failed: {e}", []) from None

    def _unreadable(self, record: Record, error: SimError) -> SimError:
        return SimError(
            f"changefeed {self.id}: {record.topic}[{record.partition}] offset {record.offset}:"
            f" {error}"
        )

    def __repr__(self) -> str:
        return f"<Changefeed {self.id} {self._feed.spec.sink_uri}>"


class Simulator:
    """One simulated upstream TiDB cluster, with a session of its own that runs what
    `execute` is given, and the changefeeds `changefeed` adds. A context manager: leaving it
    closes the changefeeds (their last batch and checkpoint sent, sinks closed)."""

    def __init__(
        self,
        seed: int = 0,
        time_zone: str = "UTC",
        start_ts: int | None = None,
        database: str = "test",
    ) -> None:
        _whole("seed", seed)
        _argument(time_zone, "time_zone", str, "a zone name such as 'UTC', or '+hh:mm'")
        _argument(database, "database", str, "a database name")
        start_ts = _start_ts(start_ts)
        try:
            load_zone(time_zone)
        except SQLError as e:
            raise ConfigError(f"time_zone {time_zone!r}: {e.message}") from None
        try:
            database = Catalog().schema(database).name
        except SQLError as e:
            raise ConfigError(
                f"database {database!r}: {e.message} (a session starts in test; CREATE DATABASE"
                " and USE another)"
            ) from None
        config = EngineConfig(seed=seed, start_ts=start_ts, time_zone=time_zone)
        self.seed = seed
        self._cluster = Cluster(
            "simulator", seed, 50.0, 0, sys.maxsize, config=config, settle_heap=False
        )
        self._session = self._cluster.session(connection_id=1)  # replay's, in every simulator
        self._session.database = database
        self._feeds: dict[str, Changefeed] = {}
        self._ids = itertools.count(1)
        # each DDL's tables as they were right after it: the history `expect` writes
        self._after_ddl: dict[int, dict[Name, tuple[TableInfo, list[Row]] | None]] = {}
        self._closed = False

    @property
    def registry(self) -> MemoryRegistry:
        """The schema registry avro changefeeds without a `schema-registry` URL register
        in: `registry.schema(id)` is the schema a record's id names."""
        return self._cluster.registry

    # -- the upstream ------------------------------------------------------------------------

    def execute(self, sql: str | bytes, source: str = "<sql>") -> list[Result]:
        """Run the statements of `sql` in order in the simulator's session (a transaction
        may span calls); what each did. The first that fails raises `SQLError` (code,
        SQLSTATE, message, line and column in `sql`); those before it stay done, and an
        open transaction stays open, as in TiDB."""
        _argument(sql, "sql", (str, bytes), "statements, as str or as a script's bytes")
        _argument(source, "source", str, "the name errors give the statements' script")
        if isinstance(sql, bytes):  # as a script file's bytes are read
            sql = sql.decode("utf-8-sig", "surrogateescape")
        sql = sql.removeprefix("\ufeff")  # read_text() of a file that starts with a BOM
        return self._run(split_script(sql.splitlines(keepends=True), source))

    def execute_file(self, path: str | os.PathLike[str]) -> list[Result]:
        """Run a SQL script file as `ticdc-sim replay` reads it (DELIMITER, a BOM, pipes)."""
        _argument(path, "path", PathLike, "a SQL script's path")
        script = Path(path)
        check_scripts([script])
        return self._run(statements([script]))

    def _run(self, stmts: Iterable[RawStatement]) -> list[Result]:
        """The statements in order up to the first that fails; a changefeed that fails on
        the way is said once they have run (TiDB's session goes on when TiCDC fails)."""
        self._check_open()
        results: list[Result] = []
        for stmt in stmts:
            outcome, events = self._cluster.run(self._session, stmt)
            self._note_ddl(events)
            if outcome.error is not None:
                outcome.error.results = results
                raise outcome.error
            results.append(
                Result(
                    outcome.statement,
                    outcome.line,
                    outcome.column,
                    outcome.affected_rows,
                    outcome.insert_id,
                    outcome.commit_ts,
                    outcome.columns,
                    outcome.rows,
                    [str(w) for w in self._session.last_warnings],
                )
            )
        self._check_feeds(results)
        return results

    def rows(self, table: str) -> list[dict[str, Any]]:
        """A table's committed rows (`db.table`, or a table of the session's database; a
        name holding a dot quoted as MySQL quotes it, `` test.`a.b` ``), in primary-key
        order, by column name, valued as `--expect` stores them: int, float, Decimal, bytes,
        or str (dates and times as TiDB prints them, ENUM, SET, JSON)."""
        from ticdc_sim.sinks.expect import stored_rows

        _argument(table, "table", str, "a table's name, 'schema.table' or 'table'")
        named = [(s or self._session.database or "", n) for s, n in table_names(table)]
        upstream = self._cluster.engine.upstream
        with self._cluster.lock, showing(upstream.committed()):
            found = [t for t in (upstream.table_state(*name) for name in named) if t is not None]
        if not found:
            raise SQLError(f"Table '{'.'.join(named[0])}' doesn't exist", code=1146)
        if len(found) > 1:
            meant = " or ".join(quoted_name(info.schema, info.name) for info, _ in found)
            raise ConfigError(f"table {table!r} is {meant}: quote the names, as MySQL does")
        [(info, rows)] = found
        names = [c.name for c in info.visible_columns]
        return [dict(zip(names, values, strict=True)) for values in stored_rows(info, rows)]

    def expect(
        self, directory: str | os.PathLike[str], changefeed: Changefeed | None = None
    ) -> list[Path]:
        """Write what `ticdc-sim replay --expect DIR` writes: every replicated table's rows
        now, and the upstream's history as a changefeed captures it. Replicated and
        captured as `changefeed` does (its filter, old value and raw change settings), else
        as TiCDC's defaults do. The files written."""
        from ticdc_sim.sinks.expect import Recorder, prepare, write_expected

        _argument(directory, "directory", PathLike, "a directory's path")
        self._own(changefeed)
        cluster = self._cluster
        if cluster.gc_safepoint:
            raise SimError("the simulator's history was trimmed; expect() cannot write it")
        replicated, old_value, raw = eligible, True, False  # what `replay --expect` follows
        if changefeed is not None:
            replicated = changefeed._feed.pipeline.replicates
            old_value = changefeed.config.enable_old_value
            raw = changefeed.config.output_raw_change_event
        for feed in self._feeds.values():
            theirs = place(feed.config.sink)
            if theirs is not None and overlap(directory, theirs):
                raise ConfigError(
                    f"expect {str(directory)!r}: changefeed {feed.id} writes"
                    f" {feed.config.sink.target}; give each a directory of its own"
                )
        root = prepare(Path(directory))
        with cluster.lock:
            upstream = list(cluster.history)
            tables = self._replicated(changefeed)
            version = cluster.engine.catalog.schema_version
        recorder = Recorder(root, lambda schema, name: None, replicated)
        try:
            for ddl, rows in _by_ddl(captured(upstream, old_value, raw)):
                recorder.rows(e for e in rows if replicated(e.table))
                if ddl is not None:
                    recorder.lookup = _lookup(self._after_ddl.get(id(ddl), {}))
                    recorder.ddl(ddl)
        finally:
            recorder.close()
        checkpoint_ts = upstream[-1].commit_ts if upstream else 0
        return write_expected(root, tables, version, checkpoint_ts)

    def diff(
        self,
        target: Any,
        tables: Iterable[str] | None = None,
        *,
        rename: Mapping[str, str] | None = None,
        changefeed: Changefeed | None = None,
    ) -> Diff:
        """The consumer check: the downstream database `target` (a DB-API connection, or a
        URL: `sqlite:///FILE`, `mysql://USER:PASSWORD@HOST:PORT/`, any SQLAlchemy URL of a
        SQLite or MySQL-compatible database) against every replicated table's committed
        rows (`tables`: only these `schema.table`), values compared as MySQL stores them.
        Replicated: what `changefeed`'s filter lets through, else TiCDC's default. The
        missing, extra, duplicated and differing rows; `rename` maps a table to its
        downstream name (`ticdc_sim.check`)."""
        from ticdc_sim import check

        names, renamed = self._names(tables, rename)
        expected = self._expected(changefeed)
        return check.diff(expected, target, names, rename=renamed, named="target")

    def assert_replicated(
        self,
        target: Any,
        tables: Iterable[str] | None = None,
        *,
        rename: Mapping[str, str] | None = None,
        changefeed: Changefeed | None = None,
    ) -> Diff:
        """`diff`, raising `NotReplicated` (an AssertionError) with its report unless the
        downstream holds exactly the upstream's rows."""
        from ticdc_sim import check

        names, renamed = self._names(tables, rename)
        expected = self._expected(changefeed)
        return check.assert_replicated(expected, target, names, rename=renamed, named="target")

    def _names(
        self, tables: object, rename: object
    ) -> tuple[list[str] | None, dict[str, str] | None]:
        """`diff`'s `tables` and `rename` checked (`_checked_names`), a table named without its
        schema taken as one of the session's database, as `rows` takes it."""
        names, renamed = _checked_names(tables, rename)
        database = self._session.database

        def qualified(name: str) -> str:
            [(schema, table), *_] = table_names(name)
            return quoted_name(database, table) if schema is None and database else name

        return (
            None if names is None else [qualified(name) for name in names],
            None if renamed is None else {qualified(k): v for k, v in renamed.items()},
        )

    def _expected(self, changefeed: Changefeed | None) -> list[ExpectedTable]:
        from ticdc_sim.check import expected_from_engine

        self._own(changefeed)
        with self._cluster.lock:
            return expected_from_engine(self._replicated(changefeed))

    def _replicated(self, changefeed: Changefeed | None) -> list[tuple[TableInfo, list[Row]]]:
        """The committed rows of every table `changefeed` (else TiCDC by default) replicates;
        the caller holds the cluster's lock."""
        replicated = eligible if changefeed is None else changefeed._feed.pipeline.replicates
        upstream = self._cluster.engine.upstream
        with showing(upstream.committed()):  # the rows as committed
            return [(i, r) for i, r in upstream.table_states() if replicated(i)]

    def _own(self, changefeed: Changefeed | None) -> None:
        """`changefeed` is None or one this simulator made: another's filter is not this
        cluster's."""
        if changefeed is not None and not any(changefeed is f for f in self._feeds.values()):
            raise ConfigError(
                f"changefeed {changefeed!r}: not a changefeed of this simulator (its"
                " changefeed() makes them)"
            )

    def _note_ddl(self, events: Sequence[Change]) -> None:
        """Keep, for each DDL committed, the rows of the tables it touched right after it."""
        upstream = self._cluster.engine.upstream
        for event in events:
            if isinstance(event, DDLEvent):
                self._after_ddl[id(event)] = {
                    name: upstream.table_state(*name) for name in event.tables
                }

    # -- changefeeds -------------------------------------------------------------------------

    def changefeed(
        self,
        sink_uri: str,
        config: ConfigSource | None = None,
        faults: str | Mapping[str, Any] | None = None,
        start_ts: int | None = None,
        *,
        changefeed_id: str | None = None,
        overwrite: bool = False,
    ) -> Changefeed:
        """A changefeed of this cluster, as `ticdc-sim replay` takes one: TiCDC's sink URI
        (`memory://?protocol=canal-json` keeps the records here only; any sink works), a
        changefeed TOML (a path, its text, or the mapping it reads as) and a fault spec
        (`"duplicate-rate=0.1, restart-every=50"` or a mapping, as under [faults]), seeded
        by the simulator's seed. It captures what commits after `start_ts` (default: now;
        an earlier ts replays what committed since). `changefeed_id`: TiCDC's id rules
        (default `feed-<n>`); `overwrite`: replace earlier output in a jsonl or parquet
        directory."""
        self._check_open()
        _argument(sink_uri, "sink_uri", str, "a sink URI such as 'memory://?protocol=canal-json'")
        _argument(changefeed_id, "changefeed_id", (str, type(None)), "the changefeed's name")
        _argument(overwrite, "overwrite", bool, "True or False")
        if changefeed_id is not None:
            checked_name("changefeed_id", changefeed_id)
        start_ts = _start_ts(start_ts)
        toml, configured, source = _config(config)
        overrides: dict[str, Any] = {}
        if faults is not None:
            overrides = {"fault_seed": self.seed, **_faults(faults)}
        feed_id = changefeed_id or f"feed-{next(self._ids)}"
        spec = FeedSpec(
            feed_id,
            sink_uri,
            toml=toml,
            configured=configured,
            overrides=overrides,
            start_ts=start_ts,
        )
        # built once before the cluster's lock is taken: a bad URI or config is said as such
        built = changefeed_config(sink_uri, toml, source, overrides, configured)
        for other in self._feeds.values():
            _apart(built, other.config, f"changefeed {other.id}")

        def opened(feed: ChangefeedConfig) -> Sink:
            return _opened(feed, overwrite)

        feed = self._cluster.add_feed(spec, opened, Retain(), flush_each=False, announce=False)
        handle = self._feeds[feed_id] = Changefeed(feed, _claims(feed.changefeed))
        self._check_feeds()  # one from the past may fail on what it replays
        return handle

    @property
    def changefeeds(self) -> list[Changefeed]:
        return list(self._feeds.values())

    def _check_feeds(self, results: list[Result] | None = None) -> None:
        """A changefeed whose sink failed sends no more (no supervisor retries it here),
        said once, as `ChangefeedFailed` carrying what the statements did (they committed
        upstream)."""
        for handle in self._feeds.values():
            if handle.error is not None and not handle._failure_said:
                handle._failure_said = True
                raise ChangefeedFailed(
                    f"changefeed {handle.id} failed: {handle.error} (the upstream committed;"
                    " the changefeed sends nothing more)",
                    results or [],
                )

    # -- the end ------------------------------------------------------------------------------

    def close(self) -> list[str]:
        """Send each changefeed's pending batch and last checkpoint and close its sink, as a
        replay ends; what went where. Records stay readable; the upstream takes no more."""
        if self._closed:
            return []
        self._closed = True
        self._cluster.end(self._session)  # an open transaction is rolled back
        return self._cluster.close()

    def _check_open(self) -> None:
        if self._closed:
            raise SimError("the simulator is closed")

    def __enter__(self) -> Simulator:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        if not hasattr(self, "_closed"):  # its __init__ refused the settings
            return "<Simulator (not made)>"
        state = "closed" if self._closed else f"{len(self._feeds)} changefeeds"
        return f"<Simulator seed={self.seed} {state}>"


def generate(
    spec: str | os.PathLike[str] | Mapping[str, Any],
    sink_uri: str = "memory://?protocol=canal-json",
    config: ConfigSource | None = None,
    *,
    events: int | None = None,
    seed: int | None = None,
    overwrite: bool = False,
) -> list[Record]:
    """A workload spec (a YAML file, or the mapping it reads as) run in process, as
    `ticdc-sim generate --sink-uri` runs it: the records sent, by topic, partition, offset.
    `events` and `seed` replace the spec's."""
    from ticdc_sim.datasets import read_datasets
    from ticdc_sim.generator.workload import Generator, Override, SpecError, build, check, load

    _argument(
        spec, "spec", (*PathLike, Mapping), "a workload spec's path or the mapping it reads as"
    )
    _argument(sink_uri, "sink_uri", str, "a sink URI such as 'memory://?protocol=canal-json'")
    _argument(overwrite, "overwrite", bool, "True or False")
    overrides = []
    if events is not None:
        overrides = [
            Override(("operations", "events"), events, "events"),
            Override.remove(("operations", "duration_s"), "events"),
        ]
    if isinstance(spec, Mapping):
        workload = build(dict(spec), "spec", {}, Path.cwd(), seed, overrides)
    else:
        workload = load(Path(spec), seed, overrides)
    toml, configured, source = _config(config)
    feed = changefeed_config(sink_uri, toml, source, None, configured)
    log = FeedLog(Retain())
    try:
        datasets = read_datasets(workload)
        check(workload, datasets)
        # avro's registry before the sink: one that is not there leaves no output behind
        with registry_of(feed) as registry:
            sink = LoggedSink(_opened(feed, overwrite), log)
            pipeline = Pipeline(feed, sink, None, registry, register_at_ddl=True)
            pipeline.run(Generator(workload, datasets).events())
    except SpecError as e:
        raise e.located(workload) from None
    return log.read(None, None, 0, sys.maxsize)


# -- helpers --------------------------------------------------------------------------------------


def _config(
    config: ConfigSource | None,
) -> tuple[str | bytes | None, dict[str, Any] | None, str]:
    """A changefeed TOML given as a path, its text or its mapping: (TOML, settings read,
    what its errors name: the file, else `config`). A string is a path when there is that
    file (a folder may be named `run=1`) or it names a .toml, else TOML when it reads as TOML."""
    if config is None:
        return None, {}, "config"
    _argument(config, "config", (*PathLike, Mapping), "a path, the TOML's text or a mapping")
    if isinstance(config, Mapping):
        return None, parse_changefeed_mapping(config, "config"), "config"
    if isinstance(config, str) and any(c in config for c in "\n=[") and not _a_path(config):
        return config, None, "config"
    path = Path(config)
    try:
        return path.read_bytes(), None, str(path)
    except OSError as e:
        raise ConfigError(
            f"config {reprlib.repr(str(config))}: cannot read it ({e.strerror}); give a path, the"
            " TOML's text or a mapping"
        ) from None


def _a_path(text: str) -> bool:
    if "\n" not in text and text.endswith(".toml"):
        return True
    try:
        return Path(text).is_file()
    except OSError:  # a name too long for one: TOML text
        return False


def _faults(faults: str | Mapping[str, Any]) -> dict[str, Any]:
    _argument(faults, "faults", (str, Mapping), "'key=value, ...' or a mapping")
    if isinstance(faults, Mapping):
        settings = parse_changefeed_mapping({"faults": dict(faults)}, "faults")
        settings.pop("warnings", None)
        return settings
    return parse_faults(faults, "faults")


def _apart(new: ChangefeedConfig, other: ChangefeedConfig, whose: str) -> None:
    """Two changefeeds' file sinks in directories of their own: one would replace the
    other's files at close."""
    mine, theirs = place(new.sink), place(other.sink)
    if mine is not None and theirs is not None and overlap(mine, theirs):
        what = "an S3 prefix" if new.sink.scheme == "s3" else "a directory"
        raise ConfigError(
            f"sink URI {new.sink.text!r}: {whose} writes {theirs}; give each changefeed"
            f" {what} of its own, neither inside the other"
        )


def _whole(name: str, value: Any) -> None:
    """A seed: a whole number that fits Go's int64, as the CLI takes it."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 63:
        raise ConfigError(f"{name} {value!r:.60}: a whole number from 0 to 2^63-1")


def _argument(value: object, name: str, kinds: type | tuple[type, ...], wanted: str) -> None:
    """An argument of another type is refused by its name, before it fails deep inside as
    an AttributeError; a bool is not taken for an int."""
    allowed = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
        raise ConfigError(f"{name} {reprlib.repr(value)}: {wanted}")


def _start_ts(start_ts: object) -> int:
    """A start-ts as given (None: 0, the default), refused as `--start-ts` refuses it."""
    given = 0 if start_ts is None else start_ts
    if not isinstance(given, int) or isinstance(given, bool) or not 0 <= given <= LAST_START_TS:
        raise ConfigError(
            f"start_ts {reprlib.repr(start_ts)}: a TSO, 0 to {LAST_START_TS} (None: the default)"
        )
    return given


def _checked_names(
    tables: object, rename: object
) -> tuple[list[str] | None, dict[str, str] | None]:
    """`diff`'s `tables` as a list (one name, or any iterable of them) and `rename` as a
    dict, refused by name when they do not hold names."""
    if rename is not None and not (
        isinstance(rename, Mapping)
        and all(isinstance(name, str) for item in rename.items() for name in item)
    ):
        raise ConfigError(
            f"rename {reprlib.repr(rename)}: a mapping of 'schema.table' to its downstream name"
        )
    renamed = None if rename is None else dict(rename)
    if tables is None:
        return None, renamed
    names = [tables] if isinstance(tables, str) else None
    if isinstance(tables, Iterable) and names is None:
        names = list(tables)
    if names is None or not all(isinstance(name, str) for name in names):
        raise ConfigError(f"tables {reprlib.repr(tables)}: 'schema.table' names")
    return names, renamed


def _opened(feed: ChangefeedConfig, overwrite: bool) -> Sink:
    """A changefeed's sink; a directory that holds output says how to replace it here."""
    from ticdc_sim.sinks.staging import NotEmpty

    try:
        return open_sink(feed.sink, overwrite=overwrite, feed=feed)
    except NotEmpty as e:
        raise NotEmpty(e.sink, e.root, "overwrite=True") from None


def _claims(feed: ChangefeedConfig) -> Upstream | None:
    """What resolves claim-check messages when its events are decoded."""
    uri = feed.codec.claim_check_storage_uri
    if not uri:
        return None
    from ticdc_sim.sinks.claim_check import ClaimStorage
    from ticdc_sim.sinks.upstream import Upstream

    return Upstream(ClaimStorage(uri), None)


def _lookup(
    tables: Mapping[Name, tuple[TableInfo, list[Row]] | None],
) -> Callable[[str, str], tuple[TableInfo, list[Row]] | None]:
    return lambda schema, name: tables.get((schema, name))


def _by_ddl(history: Iterable[Event]) -> Iterator[tuple[DDLEvent | None, list[RowChangedEvent]]]:
    """The history as runs of row changes, each ended by the DDL after it (None at the end)."""
    rows: list[RowChangedEvent] = []
    for event in history:
        if isinstance(event, DDLEvent):
            yield event, rows
            rows = []
        elif isinstance(event, RowChangedEvent):
            rows.append(event)
    yield None, rows
