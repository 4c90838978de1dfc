"""The oracle check: a script run on MariaDB must leave the tables a consumer rebuilds from
the engine's changelog (DDL queries and row changes applied to a second MariaDB)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql

from support_changelog import WITHOUT_TS, check_ordering, decode, merged
from support_mariadb import SYSTEM_SCHEMAS, MariaDB
from ticdc_sim.config import changefeed
from ticdc_sim.encoders import Decoded, DecodedDDL, DecodedRow
from ticdc_sim.encoders.debezium import sanitize_name
from ticdc_sim.encoders.registry import MemoryRegistry, RegistryError
from ticdc_sim.errors import DecodeError, EncodeError, SQLError
from ticdc_sim.generator.capture import captured
from ticdc_sim.generator.sql.engine import Engine, EngineConfig
from ticdc_sim.generator.sql.script import RawStatement, read_script, split_script
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent, Event, RowChangedEvent
from ticdc_sim.model.mysql import BLOB_TYPES, MySQLType
from ticdc_sim.model.table import TableInfo
from ticdc_sim.model.tso import TSOClock, physical_ms
from ticdc_sim.pipeline import Pipeline
from ticdc_sim.sinks import Record, open_sink
from ticdc_sim.sinks.memory import MemorySink
from ticdc_sim.sinks.storage import StorageDecoder, read_storage

_SCHEMA_ACTIONS = {
    ActionType.CREATE_SCHEMA,
    ActionType.DROP_SCHEMA,
    ActionType.MODIFY_SCHEMA_CHARSET_AND_COLLATE,
}


# a storage-sink variant's prefix: who reads its files back (`file:protocol=csv`)
STORAGE_READERS = ("file:", "pyarrow-file:")


class MariaDBRejects(Exception):
    """MariaDB cannot run the script as it is (TiDB-only syntax or semantics)."""


class UnreadableInCSV(Exception):
    """TiCDC's csv files of the script cannot be read back: a table has virtual generated
    columns, which TiCDC's schema file lists and its rows leave out."""


class TiCDCFails(Exception):
    """TiCDC's protocol cannot carry the script: its encoder fails the changefeed on the
    data (avro: an ENUM's '' value, a default its type cannot parse), as the simulator does
    with TiCDC's error, or it names a table or column other than the script (avro's
    SanitizeName)."""


class TiCDCPanics(TiCDCFails):
    """TiCDC's own encoder panics on the script (maxwell: a schema DDL, an UPDATE of a binary
    value non-NULL before and after, a NULL VECTOR): the simulator refuses it as TiCDC would
    fail, so there is nothing to compare."""


class DefaultsCollide(Exception):
    """The protocol sends NULLs as the column's default (NULL_AS_DEFAULT), and two rows that
    MariaDB's UNIQUE key holds with NULLs collide on the default in the replica (MySQL error
    1062): a consumer applying TiCDC's debezium rows fails the same way."""


class UnsentDDL(Exception):
    """The changefeed sent no record for a DDL (debezium: TiCDC has no change type for it,
    ErrDDLUnsupportType, and sends nothing), and the replica built without it differs."""


# protocols that send no record for some DDL (debezium's EncodeDDLEvent): a mismatch of a
# script with such a DDL is UnsentDDL; one without is a mismatch as for every protocol
DROPS_DDL = frozenset({"debezium"})


@dataclass
class Outcome:
    tables: int
    rows: int
    mismatches: list[str]


def run_on_mariadb(conn: Any, statements: Iterable[RawStatement]) -> None:
    with conn.cursor() as cur:
        for stmt in statements:
            try:
                cur.execute(stmt.text)
            except pymysql.MySQLError as e:
                raise MariaDBRejects(f"{stmt.location}: {e}") from None
            except UnicodeEncodeError:  # not UTF-8 (GBK scripts): not runnable as it is
                raise MariaDBRejects(f"{stmt.location}: the script is not UTF-8") from None


def apply_changelog(conn: Any, events: Iterable[Event]) -> int:
    """Replay DDL queries and row changes on the replica, one transaction per commit ts."""

    def ddl(cur: Any, event: DDLEvent) -> None:
        if event.action not in _SCHEMA_ACTIONS and event.schema:
            cur.execute(f"USE `{event.schema}`")
        cur.execute(event.query)

    return _replay(conn, events, ddl, lambda _, event: row_change_sql(event))


def _replay(
    conn: Any,
    events: Iterable[Any],
    ddl: Callable[[Any, Any], None],
    row_sql: Callable[[Any, Any], tuple[str, list[Any]]],
) -> int:
    """DDL as they come, rows in one transaction per commit ts; each row must change one."""
    rows = 0
    open_ts: int | None = None
    with conn.cursor() as cur:
        for event in events:
            if isinstance(event, DDLEvent | DecodedDDL):
                if open_ts is not None:
                    cur.execute("COMMIT")
                    open_ts = None
                ddl(cur, event)
                continue
            if open_ts != event.commit_ts:
                if open_ts is not None:
                    cur.execute("COMMIT")
                cur.execute("BEGIN")
                open_ts = event.commit_ts
            sql, params = row_sql(cur, event)
            cur.execute(sql, params)
            if cur.rowcount != 1:
                raise AssertionError(f"{sql} {params} changed {cur.rowcount} rows")
            rows += 1
        if open_ts is not None:
            cur.execute("COMMIT")
    return rows


class DecodedApplier:
    """A consumer of decoded records: DDL queries as they are, row changes as SQL on the
    replica, rows found by the key columns the protocol names (else by every column that is
    not a float). Generated columns are the replica's to compute, as a MySQL sink leaves them."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._generated: dict[tuple[str, str], set[str]] = {}

    def generated(self, cur: Any, schema: str, table: str) -> set[str]:
        key = (schema, table)
        if key not in self._generated:
            cur.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = %s"
                " AND table_name = %s AND is_generated = 'ALWAYS'",
                (schema, table),
            )
            self._generated[key] = {name for (name,) in cur.fetchall()}
        return self._generated[key]

    def apply(self, changelog: Iterable[DecodedRow | DecodedDDL]) -> int:
        return _replay(self.conn, changelog, self.ddl, self.row_sql)

    def ddl(self, cur: Any, event: DecodedDDL) -> None:
        if event.table:
            cur.execute(f"USE `{event.schema}`")
        cur.execute(event.query)
        self._generated.clear()

    def row_sql(self, cur: Any, row: DecodedRow) -> tuple[str, list[Any]]:
        name = f"`{row.schema}`.`{row.table}`"
        skip = self.generated(cur, row.schema, row.table)
        if row.pre_columns is None:
            assert row.columns is not None
            cols = [c for c in row.columns if c not in skip]
            names = ", ".join(f"`{c}`" for c in cols)
            marks = ", ".join(["%s"] * len(cols))
            return f"INSERT INTO {name} ({names}) VALUES ({marks})", [row.columns[c] for c in cols]
        pre = row.pre_columns
        keys = row.keys or [c for c, v in pre.items() if c not in skip and not isinstance(v, float)]
        where = " AND ".join(f"`{c}` <=> %s" for c in keys)
        params = [pre[c] for c in keys]
        if row.columns is None:
            return f"DELETE FROM {name} WHERE {where} LIMIT 1", params
        cols = [c for c in row.columns if c not in skip]
        sets = ", ".join(f"`{c}` = %s" for c in cols)
        values = [row.columns[c] for c in cols]
        return f"UPDATE {name} SET {sets} WHERE {where} LIMIT 1", values + params


def _check_avro_names(tables: Iterable[TableInfo]) -> None:
    """Avro's records name schemas, tables and columns as SanitizeName leaves them: a consumer
    cannot find a table whose name it changed."""
    for info in tables:
        for name in (info.schema, info.name, *(c.name for c in info.visible_columns)):
            if sanitize_name(name) != name:
                raise TiCDCFails(f"avro carries {name!r} as {sanitize_name(name)!r}")


class UnreplicatedDrops(DecodedApplier):
    """A consumer of a changefeed without force-replicate: TiCDC sends the DROP TABLE of a
    table it did not replicate (no handle key; pipeline._ddl_replicated), and the ALTER that
    makes one eligible, of a table such a consumer never created."""

    def ddl(self, cur: Any, event: DecodedDDL) -> None:
        try:
            super().ddl(cur, event)
        except pymysql.err.MySQLError as e:
            if e.args[0] not in _NO_SUCH_TABLE:
                raise


# ER_BAD_TABLE_ERROR (a DROP), ER_NO_SUCH_TABLE (an ALTER that gives one a primary key)
_NO_SUCH_TABLE = (1051, 1146)


def _writable(info: TableInfo) -> list[int]:
    return [i for i, c in enumerate(info.columns) if c.generated_expr is None]


def _where(info: TableInfo, row: tuple[Any, ...]) -> tuple[str, list[Any]]:
    keys = info.handle_key_columns
    offsets = (
        [info.column(k).offset for k in keys]  # type: ignore[union-attr]
        if keys
        else _writable(info)
    )
    clause = " AND ".join(f"`{info.columns[o].name}` <=> %s" for o in offsets)
    return clause, [row[o] for o in offsets]


def row_change_sql(event: RowChangedEvent) -> tuple[str, list[Any]]:
    info = event.table
    name = f"`{info.schema}`.`{info.name}`"
    offsets = _writable(info)
    if event.kind == "insert":
        assert event.columns is not None
        cols = ", ".join(f"`{info.columns[o].name}`" for o in offsets)
        marks = ", ".join(["%s"] * len(offsets))
        return f"INSERT INTO {name} ({cols}) VALUES ({marks})", [event.columns[o] for o in offsets]
    assert event.pre_columns is not None
    where, params = _where(info, event.pre_columns)
    if event.kind == "delete":
        return f"DELETE FROM {name} WHERE {where} LIMIT 1", params
    assert event.columns is not None
    sets = ", ".join(f"`{info.columns[o].name}` = %s" for o in offsets)
    values = [event.columns[o] for o in offsets]
    return f"UPDATE {name} SET {sets} WHERE {where} LIMIT 1", values + params


def _through_storage(query: str, events: list[Any], reader: str) -> list[tuple[Record, Decoded]]:
    """`events` through a file:// changefeed (csv with commit ts and old values), its
    layout read back as TiCDC's storage consumer walks it: by ticdc-sim's decoder (`reader`
    "file"), or by pyarrow's CSV reader ("pyarrow-file", tests/support_arrow.py)."""
    from support_arrow import VirtualColumns, read_layout

    with tempfile.TemporaryDirectory() as directory:
        toml = "force-replicate = true\n[sink.csv]\ninclude-commit-ts = true\n"
        toml += "output-old-value = true\n"
        out = Path(directory, "out")
        feed = changefeed(f"{out.as_uri()}?{query}", toml)
        Pipeline(feed, open_sink(feed.sink, feed=feed)).run(events)
        decoder = StorageDecoder(feed.codec)
        try:
            if reader == "pyarrow-file":
                return read_layout(out)
            return [
                (record, event)
                for record in read_storage(str(out))
                for event in decoder.decode(record.key, record.value)
            ]
        except (DecodeError, VirtualColumns) as e:
            if isinstance(e, VirtualColumns) or "virtual generated columns" in str(e):
                raise UnreadableInCSV(str(e)) from None
            raise


# protocols whose rows carry neither types nor keys (maxwell): the oracle's consumer types
# them from the catalog, the table versions of ticdc-sim's own DDL history (each DDL record
# names its commit ts), and TiCDC's maxwell rules:
# - a row carries no commit ts (`ts` is the commit's physical time in whole seconds): one
#   partition keeps Kafka order, which is commit order, and rows apply in that order;
# - a delete's row is in `old` (the decoder's pre image), an update's `old` holds the changed
#   columns only (the decoder's pre image is `data` overlaid with `old`);
# - a binary string is its base64 text: decoded back to bytes; ENUM, SET and BIT are numbers,
#   which MariaDB takes as an ENUM's index, a SET's bits and a BIT's value;
# - rows are found by the table's handle key (the catalog's), as TiCDC's MySQL sink finds them
UNTYPED = frozenset({"maxwell"})


def _typed(
    decoded: list[tuple[Record, Decoded]], events: list[Event]
) -> list[tuple[Record, Decoded]]:
    versions = {(e.commit_ts, e.schema, e.table): e for e in events if isinstance(e, DDLEvent)}
    tables: dict[tuple[str, str], TableInfo] = {}
    out: list[tuple[Record, Decoded]] = []
    for record, event in decoded:
        if isinstance(event, DecodedDDL):
            ddl = versions[event.commit_ts, event.schema, event.table]
            if ddl.pre_table_info is not None:
                tables.pop((ddl.pre_table_info.schema, ddl.pre_table_info.name), None)
            if ddl.table_info is not None:
                tables[ddl.table_info.schema, ddl.table_info.name] = ddl.table_info
        elif isinstance(event, DecodedRow):
            info = tables[event.schema, event.table]
            event = replace(
                event,
                columns=_typed_image(info, event.columns),
                pre_columns=_typed_image(info, event.pre_columns),
                keys=info.handle_key_columns,
            )
        out.append((record, event))
    return out


_BINARY_STRINGS = BLOB_TYPES | {MySQLType.STRING, MySQLType.VARCHAR, MySQLType.VAR_STRING}


def _typed_image(info: TableInfo, image: dict[str, Any] | None) -> dict[str, Any] | None:
    if image is None:
        return None
    out = dict(image)
    for name, value in image.items():
        column = info.column(name)
        assert column is not None, f"{info.schema}.{info.name} has no column {name!r}"
        if value is not None and column.is_binary_charset and column.tp in _BINARY_STRINGS:
            out[name] = base64.b64decode(value, validate=True)
    return out


def _unsent(events: list[Event], decoded: list[tuple[Record, Decoded]]) -> list[str]:
    sent = {(e.commit_ts, e.query) for _, e in decoded if isinstance(e, DecodedDDL)}
    return [
        e.query for e in events if isinstance(e, DDLEvent) and (e.commit_ts, e.query) not in sent
    ]


def snapshot(conn: Any) -> dict[str, list[tuple[Any, ...]]]:
    tables: dict[str, list[tuple[Any, ...]]] = {}
    with conn.cursor() as cur:
        cur.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
            " WHERE table_type = 'BASE TABLE'"
        )
        for schema, table in cur.fetchall():
            if schema.lower() in SYSTEM_SCHEMAS:
                continue
            cur.execute(f"SELECT * FROM `{schema}`.`{table}`")
            rows = [tuple(_normalized(v) for v in row) for row in cur.fetchall()]
            tables[f"{schema}.{table}"] = sorted(rows, key=_row_key)
    return tables


def _normalized(value: Any) -> Any:
    # MariaDB keeps JSON text as written; TiDB stores it normalized. Compare documents.
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.dumps(json.loads(value), sort_keys=True)
        except ValueError:
            return value
    return value


# protocols TiCDC refuses force-replicate with (avro): tables without a handle key are not
# replicated, and are left out of the comparison
WITHOUT_FORCE_REPLICATE = ("avro",)

# avro's topic rule, as TiCDC's docs ask: one table a topic, so one table's schemas a subject
AVRO_TOPICS = '[sink]\ndispatchers = [{matcher = ["*.*"], topic = "tidb_{schema}_{table}"}]\n'


def round_trip_registry() -> MemoryRegistry:
    """A registry that takes every schema: the oracle checks that the bytes carry the rows
    back, and its scripts change columns in ways the default BACKWARD refuses (a column added
    NOT NULL without a default, a type narrowed), which fails TiCDC's changefeed there
    (tests/test_avro.py has that refusal on each surface)."""
    registry = MemoryRegistry()
    registry.set_level("NONE")
    return registry


def _drop_unreplicated(conn: Any, replicated: set[str]) -> None:
    """Drop from the source the tables the changefeed did not replicate."""
    with conn.cursor() as cur:
        cur.execute("SET foreign_key_checks = 0")
        for name in snapshot(conn):
            if name not in replicated:
                schema, table = name.split(".", 1)
                cur.execute(f"DROP TABLE `{schema}`.`{table}`")


# protocols that send DECIMAL as a double (debezium, as TiCDC does): compared as the double
AS_DOUBLES = frozenset({"debezium"})


def _doubles(tables: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    return {
        name: [tuple(float(v) if isinstance(v, Decimal) else v for v in row) for row in rows]
        for name, rows in tables.items()
    }


# protocols that send a NULL as the column's DEFAULT (debezium: TiCDC's writeDebeziumFieldValue
# writes the default of a column that has one in place of its NULL): MariaDB's NULL in a
# column with a literal default is compared as that default. A NULL under any other default
# (CURRENT_TIMESTAMP, an expression) is outside the rule and stays a mismatch
NULL_AS_DEFAULT = frozenset({"debezium"})
DUPLICATE_ENTRY = 1062  # ER_DUP_ENTRY
# information_schema.columns.column_default of a literal on MariaDB: a quoted string, a number,
# a bit literal ('NULL' is DEFAULT NULL, and also what a nullable column without one shows)
_LITERAL_DEFAULT = re.compile(r"'.*'|b'[01]*'|-?[0-9]+(\.[0-9]*)?(e[+-]?[0-9]+)?", re.S)


Tables = dict[str, list[tuple[Any, ...]]]
# a table's replacements by column position, from its schema and name (and a cursor)
Replacements = Callable[[Any, str, str], dict[int, Any]]


def _replaced(conn: Any, tables: Tables, pick: Replacements, when: Callable[[Any], bool]) -> Tables:
    """`tables` (MariaDB's) with each value `when` holds for replaced by its column's pick."""
    out = dict(tables)
    with conn.cursor() as cur:
        for name, rows in tables.items():
            schema, table = name.split(".", 1)
            by = pick(cur, schema, table) if rows else {}
            if by:
                out[name] = sorted(
                    (
                        tuple(by[i] if i in by and when(v) else v for i, v in enumerate(row))
                        for row in rows
                    ),
                    key=_row_key,
                )
    return out


def _literal_defaults(cur: Any, schema: str, table: str) -> dict[int, Any]:
    """Each column with a literal default: the default as MariaDB types it (`DEFAULT(col)`)."""
    cur.execute(
        "SELECT ordinal_position, column_name, column_default FROM information_schema.columns"
        " WHERE table_schema = %s AND table_name = %s AND is_generated = 'NEVER'",
        (schema, table),
    )
    literal = [
        (position - 1, column)
        for position, column, default in cur.fetchall()
        if default is not None and _LITERAL_DEFAULT.fullmatch(default)
    ]
    if not literal:
        return {}
    picked = ", ".join(f"DEFAULT(`{column}`)" for _, column in literal)
    cur.execute(f"SELECT {picked} FROM `{schema}`.`{table}` LIMIT 1")
    return dict(zip((i for i, _ in literal), cur.fetchone(), strict=True))


# protocols that send a DATE or DATETIME Go's time.Parse refuses (a zero date, a zero month or
# day: 1000-00-00) as null, or as 0 (the epoch) in a NOT NULL column (debezium: TiCDC's
# writeDebeziumFieldValue): MariaDB's such dates (pymysql gives those as text) are compared so
INVALID_DATES_AS_EPOCH = frozenset({"debezium"})
_EPOCHS = {"date": dt.date(1970, 1, 1), "datetime": dt.datetime(1970, 1, 1)}


def _dates_as_sent(cur: Any, schema: str, table: str) -> dict[int, Any]:
    """Each DATE and DATETIME column: what debezium sends for an invalid date in it."""
    cur.execute(
        "SELECT ordinal_position, data_type, is_nullable FROM information_schema.columns"
        " WHERE table_schema = %s AND table_name = %s AND data_type IN ('date', 'datetime')",
        (schema, table),
    )
    return {p - 1: None if n == "YES" else _EPOCHS[t] for p, t, n in cur.fetchall()}


def _row_key(row: tuple[Any, ...]) -> str:
    return repr(tuple(float(v) if isinstance(v, Decimal) else v for v in row))


def run_both(source: MariaDB, conn: Any, text: str, name: str, **config: Any) -> list[Event]:
    """Run `text` on a reset MariaDB (`conn`) and on the engine: the engine's events. Raises
    MariaDBRejects where MariaDB cannot run it, SQLError where the engine fails."""
    statements = list(split_script(text.splitlines(keepends=True), name))
    source.reset(conn)
    with conn.cursor() as cur:  # NOW() on MariaDB reads the engine's simulated clock
        cur.execute(f"SET timestamp = {physical_ms(TSOClock().next()) / 1000}")
    run_on_mariadb(conn, statements)
    engine = Engine(EngineConfig(**config))
    engine.catalog.current_schema = "test"
    return list(engine.run(statements))


# a consumer of a changefeed's records other than ticdc-sim's decoder: what it decodes
Consumer = Callable[[list[Record]], list[tuple[Record, Decoded]]]


def check_script(
    source: MariaDB,
    replica: MariaDB,
    text: str,
    name: str,
    protocol: str | None = None,
    consumer: Consumer | None = None,
    **config: Any,
) -> Outcome:
    """Run `text` on MariaDB and through the engine; compare every table. With a `protocol`,
    the changelog goes through the pipeline (every table replicated, 3 partitions) and the
    replica gets what a consumer decodes from the records: ticdc-sim's decoder, or
    `consumer`. An avro protocol naming a `schema-registry` registers there (else in a
    registry of level NONE, `round_trip_registry`)."""
    src, dst = source.connect(), replica.connect()
    try:
        replica.reset(dst)
        unsent: list[str] = []  # DDL queries the changefeed sent no record for (DROPS_DDL)
        # the rules below are the protocol's, whatever its parameters (a profile, say)
        rules = (protocol or "").split("&", 1)[0]
        try:
            events = run_both(source, src, text, name, **config)
        except SQLError as e:
            return Outcome(0, 0, [f"engine failed where MariaDB did not: {e}"])
        with dst.cursor() as cur:
            # a consumer applies rows in commit order, not in foreign-key order
            cur.execute("SET foreign_key_checks = 0")
            # and stores what upstream stored: zero dates too (TiCDC's MySQL sink does the same)
            cur.execute("SET sql_mode = 'NO_ENGINE_SUBSTITUTION'")
            cur.execute("USE test")
        if protocol is None:  # what a default changefeed captures: key changes split
            rows = apply_changelog(dst, captured(events))
        elif protocol.startswith(STORAGE_READERS):  # the storage sink: its files, read back
            reader, query = protocol.split(":", 1)
            rows = DecodedApplier(dst).apply(merged(_through_storage(query, events, reader)))
        else:
            # without commit ts (canal) a consumer cannot merge partitions: it reads one
            partitions = 1 if protocol in WITHOUT_TS else 3
            avro = protocol.startswith(WITHOUT_FORCE_REPLICATE)
            feed = changefeed(
                f"memory://?protocol={protocol}&partition-num={partitions}"
                "&enable-tidb-extension=true",
                AVRO_TOPICS if avro else "force-replicate = true\n",
            )
            sink = MemorySink()
            registry = round_trip_registry() if avro and not feed.codec.schema_registry else None
            pipeline = Pipeline(feed, sink, registry=registry)
            try:
                pipeline.run(events)
            except EncodeError as e:
                if "TiCDC's encoder panics" in str(e):
                    raise TiCDCPanics(str(e)) from None
                if "(TiCDC: " not in str(e):
                    raise
                raise TiCDCFails(str(e)) from None
            except RegistryError as e:  # a schema no Confluent registry takes (a field twice)
                raise TiCDCFails(str(e)) from None
            records = list(sink.records())
            decoded = (
                decode(feed, records, pipeline.registry) if consumer is None else consumer(records)
            )
            applier = DecodedApplier(dst)
            if avro:
                _check_avro_names(pipeline.tables.values())
                replicated = {f"{i.schema}.{i.name}" for i in pipeline.tables.values()}
                _drop_unreplicated(src, replicated)
                applier = UnreplicatedDrops(dst)
            check_ordering(decoded, protocol)
            if rules in UNTYPED:
                decoded = _typed(decoded, events)
            if rules in DROPS_DDL:
                unsent = _unsent(events, decoded)
            try:
                rows = applier.apply(merged(decoded))
            except (pymysql.MySQLError, AssertionError) as e:
                if unsent:  # the replica cannot follow: a table the DDL made is not there ...
                    raise UnsentDDL(f"{protocol} sends no record for {unsent[0]!r}: {e}") from None
                duplicate = isinstance(e, pymysql.IntegrityError) and e.args[0] == DUPLICATE_ENTRY
                if rules in NULL_AS_DEFAULT and duplicate:
                    raise DefaultsCollide(f"{protocol}: {e.args[1]}") from None
                raise
        expected, actual = snapshot(src), snapshot(dst)
        if rules in NULL_AS_DEFAULT:  # the protocol sends a NULL as the column's default
            expected = _replaced(src, expected, _literal_defaults, lambda v: v is None)
        if rules in INVALID_DATES_AS_EPOCH:  # and an invalid date as null or the epoch
            expected = _replaced(src, expected, _dates_as_sent, lambda v: isinstance(v, str))
        if rules in AS_DOUBLES:  # the protocol sends DECIMAL as a double
            expected, actual = _doubles(expected), _doubles(actual)
        mismatches = []
        for table in sorted(set(expected) | set(actual)):
            want, got = expected.get(table), actual.get(table)
            if want != got:
                mismatches.append(f"{table}: MariaDB has {want!r}, the changelog gives {got!r}")
        if mismatches and unsent:
            raise UnsentDDL(f"{protocol} sends no record for {unsent[0]!r}: {mismatches[0]}")
        return Outcome(len(expected), rows, mismatches)
    finally:
        src.close()
        dst.close()


CORPUS = Path(__file__).parents[2] / "shared" / "corpus"
KNOWN_DIFFERENCES = Path(__file__).parent / "oracle_known_differences.txt"


@dataclass
class CorpusRun:
    """The corpus's scripts by what became of them through one protocol and consumer."""

    passed: list[str]
    rejected: list[str]  # TiDB-only syntax or semantics: not an oracle case
    unreadable: list[str]  # virtual generated columns: TiCDC's csv cannot say them
    # TiCDC's encoder fails the changefeed or panics on the data (avro: an ENUM's '';
    # maxwell: a schema DDL), or renames what the script names (avro's SanitizeName)
    refused: list[str]
    failed: dict[str, str]  # the first mismatch of each
    # debezium: no record for a DDL it has no change type for (CREATE SEQUENCE ...), and a
    # replica built without it differs
    unsent: list[str] = field(default_factory=list)
    apart: list[str] = field(default_factory=list)  # what the consumer cannot read

    def check_known(self, passed_at_least: int = 60) -> None:
        """Every difference listed in oracle_known_differences.txt, and every one listed
        there still a difference (or not carried), and at least that many scripts passed."""
        lines = KNOWN_DIFFERENCES.read_text().splitlines()
        entries = (line.split(" | ", 1) for line in lines if line and not line.startswith("#"))
        known = {path.strip() for path, _ in entries}
        unexpected = {k: v for k, v in self.failed.items() if k not in known}
        fixed = sorted(known - set(self.failed) - set(self.refused) - set(self.apart))
        assert unexpected == {}, "new differences from MariaDB"
        assert fixed == [], "these now match: remove them from oracle_known_differences.txt"
        assert len(self.passed) >= passed_at_least


def run_corpus(
    pair: tuple[MariaDB, MariaDB],
    protocol: str | None,
    consumer: Consumer | None = None,
    apart: type[Exception] | None = None,
) -> CorpusRun:
    """`check_script` over every script of ../shared/corpus (the caller skips without it);
    a script `consumer` raises `apart` on is counted apart."""
    run = CorpusRun([], [], [], [], {})
    for path in sorted(CORPUS.rglob("*.sql")):
        name = str(path.relative_to(CORPUS))
        try:
            outcome = check_script(*pair, read_script(path), str(path), protocol, consumer)
        except MariaDBRejects:
            run.rejected.append(name)
        except UnreadableInCSV:
            run.unreadable.append(name)
        except TiCDCFails:
            run.refused.append(name)
        except UnsentDDL:
            run.unsent.append(name)
        except Exception as e:
            if apart is None or not isinstance(e, apart):
                raise
            run.apart.append(name)
        else:
            if outcome.mismatches:
                run.failed[name] = outcome.mismatches[0][:300]
            else:
                run.passed.append(name)
    return run
