"""`--expect DIR`: what a correct consumer must end with, and the upstream it stands for.

`DIR/<schema>.<table>.parquet` holds a replicated table's final rows in primary-key order, its
visible columns with the types a downstream MySQL would give them: integers as int64 (BIGINT
UNSIGNED and BIT as uint64), FLOAT/DOUBLE as float64, DECIMAL(M,D) as decimal(M,D), binary
strings as binary, every other value (dates and times as TiDB prints them, TIMESTAMP in
TiCDC's time zone; ENUM and SET members; JSON) as string. The file's key-value metadata says
which table version it is: `ticdc-sim.table-id`, `ticdc-sim.update-ts` (the table's schema
version ts), `ticdc-sim.schema-version` and `ticdc-sim.checkpoint-ts` (the run's last), and
`ticdc-sim.handle-key`, the JSON list of the columns TiCDC keys rows by. Each field's
`ticdc-sim.type` is its upstream column type as TiDB's FieldType holds it (JSON: tp, flen,
decimal, flag, charset, collation, elems), for readers that compare values as that type
(`ticdc-sim check`). Names are written as `table_file` writes them (`test.a%2Fb` for table
`a/b`).

`DIR/history/<schema>.<table>.<n>.parquet` is the upstream's MVCC history, the rows TiCDC's
consumer would read back with `tidb_snapshot` for a handle-key-only message: one file per
table version in the order they came (`n` from 0), the same columns (all nullable) after
`_commit_ts` (uint64) and `_op`: `insert`, `update` (the new row), `delete` (the old row),
or, at each DDL that touches the table, `reset` (no values: every earlier row is gone)
followed by one `row` for each row the table holds after the DDL. The row of a handle key
as of ts is the latest entry for it at or before ts after the latest reset at or before ts
(`History.row_at`). With `--expect-checkpoints`, `DIR/checkpoint-<ts>/<schema>.<table>.parquet`
holds every replicated table's rows at each checkpoint the run sent, as the final files do.
"""

from __future__ import annotations

import re
import shutil
import urllib.parse
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from ticdc_sim.errors import SimError
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mysql import INTEGER_RANGES, STRING_TYPES, MySQLType, TiDBFlag
from ticdc_sim.model.table import ColumnInfo, TableInfo

M = MySQLType
Row = tuple[Any, ...]


def _arrow_type(column: ColumnInfo) -> pa.DataType:
    tp = column.tp
    if tp in INTEGER_RANGES or tp == M.YEAR:
        return pa.uint64() if tp == M.LONGLONG and column.unsigned else pa.int64()
    if tp == M.BIT:
        return pa.uint64()
    if tp in (M.FLOAT, M.DOUBLE):
        return pa.float64()
    if tp == M.NEWDECIMAL:
        precision, scale = max(column.flen, 1), max(column.decimal, 0)
        return (pa.decimal128 if precision <= 38 else pa.decimal256)(precision, scale)
    if column.tp in STRING_TYPES and column.is_binary_charset:
        return pa.binary()
    return pa.string()


def _value(arrow_type: pa.DataType) -> Callable[[Any], Any]:
    if pa.types.is_string(arrow_type):
        return lambda v: v if v is None or isinstance(v, str) else str(v)
    if pa.types.is_decimal(arrow_type):
        return lambda v: None if v is None else Decimal(v)
    return lambda v: v


HANDLE_KEY = "ticdc-sim.handle-key"
COLUMN_TYPE = "ticdc-sim.type"


def _schema(info: TableInfo, metadata: Mapping[str, str], nullable: bool = False) -> pa.Schema:
    return pa.schema(
        [
            pa.field(
                c.name,
                _arrow_type(c),
                nullable=nullable or not c.not_null,
                metadata={COLUMN_TYPE: _column_type(c)},
            )
            for c in info.visible_columns
        ],
        metadata={
            "ticdc-sim.table-id": str(info.id),
            "ticdc-sim.update-ts": str(info.update_ts),
            HANDLE_KEY: orjson.dumps(info.handle_key_columns).decode(),
            **metadata,
        },
    )


def _column_type(column: ColumnInfo) -> bytes:
    return orjson.dumps(
        {
            "tp": int(column.tp),
            "flen": column.flen,
            "decimal": column.decimal,
            "flag": int(column.flag),
            "charset": column.charset,
            "collation": column.collation,
            "elems": column.elems,
        }
    )


def column_of(field: pa.Field, offset: int) -> ColumnInfo | None:
    """The upstream column a table file's field stands for (its `ticdc-sim.type`); None for
    a file written before the type was recorded, or a field that is not ours."""
    try:
        found = orjson.loads((field.metadata or {})[COLUMN_TYPE.encode()])
        return ColumnInfo(
            id=offset + 1,
            name=field.name,
            offset=offset,
            tp=MySQLType(found["tp"]),
            flen=int(found["flen"]),
            decimal=int(found["decimal"]),
            flag=TiDBFlag(found["flag"]),
            charset=str(found["charset"]),
            collation=str(found["collation"]),
            elems=tuple(str(e) for e in found["elems"]),
        )
    except (KeyError, TypeError, ValueError, orjson.JSONDecodeError):
        return None


def stored_rows(info: TableInfo, rows: Iterable[Row | None]) -> Iterator[Row]:
    """Rows (the engine's, every column) as a table file holds them: the visible columns'
    values in the Parquet types; a None row as all nulls."""
    values = [(c.offset, _value(_arrow_type(c))) for c in info.visible_columns]
    nulls = (None,) * len(values)
    for row in rows:
        yield nulls if row is None else tuple(value(row[at]) for at, value in values)


def _columns(info: TableInfo, rows: Iterable[Row | None]) -> list[list[Any]]:
    """Rows as column lists of the Parquet types; None rows as all nulls."""
    data: list[list[Any]] = [[] for _ in info.visible_columns]
    for row in stored_rows(info, rows):
        for out, value in zip(data, row, strict=True):
            out.append(value)
    return data


def table_file(schema: str, table: str) -> str:
    """`<schema>.<table>`, the name of a table's files: a `%`, `/`, `\\`, `.` or control
    character in a name is written `%XX`, so no name reaches outside the directory or reads
    as another's."""
    return f"{_FILE_UNSAFE.sub(_escaped, schema)}.{_FILE_UNSAFE.sub(_escaped, table)}"


_FILE_UNSAFE = re.compile(r"[%/\\.\x00-\x1f\x7f]")


def table_of_file(stem: str) -> tuple[str, str] | None:
    """The (schema, table) whose files `table_file` names `stem`; None for another name."""
    schema, dot, table = stem.partition(".")
    if not dot or "." in table:
        return None
    return urllib.parse.unquote(schema), urllib.parse.unquote(table)


def _escaped(found: re.Match[str]) -> str:
    return f"%{ord(found.group()):02X}"


def _mkdir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SimError(f"--expect {path}: {e.strerror}") from None


def _write(path: Path, table: pa.Table) -> Path:
    try:
        pq.write_table(table, path)
    except (OSError, pa.ArrowException) as e:
        raise SimError(f"--expect: cannot write {path}: {e}") from None
    return path


def prepare(directory: str | Path) -> Path:
    """An empty --expect directory: what an earlier run wrote there is removed (its tables,
    history and checkpoints, which would otherwise mix with this run's); anything else in
    it is an error, so that a mistyped path never loses a user's files."""
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise SimError(f"--expect {root}: not a directory")
    ours = [p for p in root.iterdir() if _is_ours(p)] if root.is_dir() else []
    others = sorted(p.name for p in root.iterdir() if not _is_ours(p)) if root.is_dir() else []
    if others:
        shown = ", ".join(others[:3]) + (" ..." if len(others) > 3 else "")
        raise SimError(f"--expect {root}: holds files it did not write ({shown})")
    try:
        for path in ours:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
    except OSError as e:
        raise SimError(f"--expect {root}: cannot clear {e.filename}: {e.strerror}") from None
    _mkdir(root)
    return root


def _is_ours(path: Path) -> bool:
    """What a run writes: the history and checkpoint folders of Parquet files, and tables'
    files, whose metadata names their table (a user's own .parquet file is not ours)."""
    name = path.name
    if path.is_dir():
        folder = name in ("history", "history.partial") or name.startswith("checkpoint-")
        return folder and all(p.is_file() and p.suffix == ".parquet" for p in path.iterdir())
    if path.suffix != ".parquet":
        return False
    try:
        metadata = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowException):
        return False
    return b"ticdc-sim.table-id" in metadata


def write_expected(
    directory: str | Path,
    tables: Iterable[tuple[TableInfo, Iterable[Row]]],
    schema_version: int,
    checkpoint_ts: int,
) -> list[Path]:
    """One file a table; returns the paths written."""
    root = Path(directory)
    _mkdir(root)
    metadata = {
        "ticdc-sim.schema-version": str(schema_version),
        "ticdc-sim.checkpoint-ts": str(checkpoint_ts),
    }
    return [
        _write(
            root / f"{table_file(info.schema, info.name)}.parquet",
            pa.table(_columns(info, rows), schema=_schema(info, metadata)),
        )
        for info, rows in tables
    ]


# -- the history and the checkpoint snapshots ------------------------------------------------

Name = tuple[str, str]  # schema, table
_HISTORY_ROWS = 1 << 16  # rows a history row group holds


class _Version:
    """One table version's history file, written a row group at a time."""

    def __init__(self, path: Path, info: TableInfo) -> None:
        self.path, self.info = path, info
        self.schema = pa.schema(
            [pa.field("_commit_ts", pa.uint64(), nullable=False), pa.field("_op", pa.string())]
        )
        for f in _schema(info, {}, nullable=True):
            self.schema = self.schema.append(f)
        self.schema = self.schema.with_metadata(_schema(info, {}).metadata)
        self.ts: list[int] = []
        self.ops: list[str] = []
        self.rows: list[Row | None] = []
        try:
            self.writer = pq.ParquetWriter(path, self.schema)
        except (OSError, pa.ArrowException) as e:
            raise SimError(f"--expect: cannot write {path}: {e}") from None

    def append(self, ts: int, op: str, row: Row | None) -> None:
        self.ts.append(ts)
        self.ops.append(op)
        self.rows.append(row)
        if len(self.ts) >= _HISTORY_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.ts:
            return
        data = [self.ts, self.ops, *_columns(self.info, self.rows)]
        try:
            self.writer.write_table(pa.table(data, schema=self.schema))
        except (OSError, pa.ArrowException) as e:
            raise SimError(f"--expect: cannot write {self.path}: {e}") from None
        self.ts, self.ops, self.rows = [], [], []

    def close(self) -> None:
        self.flush()
        self.writer.close()


class Recorder:
    """Follows a pipeline (`rows` in commit order, `ddl` once the engine has run it,
    `checkpoint`): writes the history and, with `snapshots`, the rows at each checkpoint.
    `lookup` answers a table's rows as the engine holds them right after a DDL."""

    def __init__(
        self,
        directory: str | Path,
        lookup: Callable[[str, str], tuple[TableInfo, list[Row]] | None],
        replicated: Callable[[TableInfo], bool],
        snapshots: bool = False,
    ) -> None:
        self.root = Path(directory)
        self.lookup, self.replicated, self.snapshots = lookup, replicated, snapshots
        _mkdir(self.root / "history")
        self._open: dict[Name, _Version] = {}
        self._parts: dict[Name, int] = {}
        self._state: dict[Name, tuple[TableInfo, dict[Row, Row]]] = {}
        self._keys: dict[int, list[int]] = {}  # handle-key offsets by id(TableInfo)

    def _version(self, name: Name, info: TableInfo) -> _Version:
        found = self._open.get(name)
        if found is not None:
            if found.info is info:
                return found
            found.close()
        part = self._parts.get(name, 0)
        self._parts[name] = part + 1
        path = self.root / "history" / f"{table_file(*name)}.{part}.parquet"
        version = self._open[name] = _Version(path, info)
        return version

    def _key(self, info: TableInfo, row: Row) -> Row:
        offsets = self._keys.get(id(info))
        if offsets is None:
            names = info.handle_key_columns
            offsets = self._keys[id(info)] = [c.offset for c in info.columns if c.name in names]
        return tuple(row[o] for o in offsets)

    def rows(self, events: Iterable[RowChangedEvent]) -> None:
        for event in events:
            info = event.table
            name = (info.schema, info.name)
            image = event.pre_columns if event.columns is None else event.columns
            assert image is not None
            self._version(name, info).append(event.commit_ts, event.kind, image)
            if self.snapshots:
                state = self._state.get(name)
                if state is None or state[0] is not info:
                    state = self._state[name] = (info, dict(state[1]) if state else {})
                key = self._key(info, image)
                if event.columns is None:
                    state[1].pop(key, None)
                else:
                    if event.pre_columns is not None:  # an update may move its key
                        state[1].pop(self._key(info, event.pre_columns), None)
                    state[1][key] = image

    def ddl(self, event: DDLEvent) -> None:
        names = event.tables
        if event.action == ActionType.DROP_SCHEMA:
            gone = event.schema.lower()
            names |= {n for n in [*self._open, *self._state] if n[0].lower() == gone}
        for name in sorted(names):
            found = self.lookup(*name)
            if found is None or not self.replicated(found[0]):
                version = self._open.pop(name, None)
                if version is not None:
                    version.append(event.commit_ts, "reset", None)
                    version.close()
                self._state.pop(name, None)
                continue
            info, rows = found
            version = self._version(name, info)
            version.append(event.commit_ts, "reset", None)
            for row in rows:
                version.append(event.commit_ts, "row", row)
            if self.snapshots:
                self._state[name] = (info, {self._key(info, r): r for r in rows})

    def checkpoint(self, ts: int) -> None:
        if not self.snapshots:
            return
        directory = self.root / f"checkpoint-{ts}"
        _mkdir(directory)
        metadata = {"ticdc-sim.checkpoint-ts": str(ts)}
        for (schema, table), (info, rows) in sorted(self._state.items()):
            ordered = [rows[k] for k in sorted(rows, key=_sortable)]
            data = pa.table(_columns(info, ordered), schema=_schema(info, metadata))
            _write(directory / f"{table_file(schema, table)}.parquet", data)

    def close(self, failed: bool = False) -> None:
        """Finish the files; after a failed run the history is `history.partial`: what
        was replicated before the failure, not the run's."""
        for version in self._open.values():
            version.close()
        self._open.clear()
        if failed:
            try:
                (self.root / "history").rename(self.root / "history.partial")
            except OSError as e:
                raise SimError(f"--expect {self.root}: {e.strerror}") from None


def _sortable(key: Row) -> tuple[tuple[bool, Any], ...]:
    return tuple((v is None, v) for v in key)


class History:
    """The history files read back, for handle-key-only messages (what TiCDC's consumer asks
    upstream TiDB with `SET @@tidb_snapshot`)."""

    def __init__(self, directory: str | Path) -> None:
        self.root = Path(directory) / "history"
        if not self.root.is_dir():
            raise SimError(
                f"--upstream {directory}: no history/ directory (write one with replay --expect)"
            )
        self._tables: dict[Name, tuple[list[tuple[int, int]], list[dict[str, Any]]]] = {}

    def _load(self, schema: str, table: str) -> tuple[list[tuple[int, int]], list[dict[str, Any]]]:
        name = (schema, table)
        found = self._tables.get(name)
        if found is not None:
            return found
        prefix = f"{table_file(schema, table)}."
        paths = sorted(
            (
                p  # not another table whose name has this one's as a prefix
                for p in self.root.glob(f"{_glob_escape(prefix)}*.parquet")
                if p.stem.removeprefix(prefix).isdigit()
            ),
            key=lambda p: int(p.stem.removeprefix(prefix)),
        )
        resets: list[tuple[int, int]] = []  # (commit ts, sequence)
        entries: list[dict[str, Any]] = []
        for path in paths:
            try:
                rows = pq.read_table(path).to_pylist()
            except (OSError, pa.ArrowException) as e:
                raise SimError(f"--upstream: cannot read {path}: {e}") from None
            for row in rows:
                if row["_op"] == "reset":
                    resets.append((row["_commit_ts"], len(entries)))
                entries.append(row)
        found = self._tables[name] = (resets, entries)
        return found

    def row_at(
        self, schema: str, table: str, ts: int, key: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """The row whose columns `key` names hold those values, as of ts."""
        resets, entries = self._load(schema, table)
        at = bisect_right(resets, (ts, len(entries)))
        start = resets[at - 1][1] + 1 if at else 0
        found = None
        for entry in entries[start:]:
            if entry["_commit_ts"] > ts:
                break
            if all(entry.get(k) == v for k, v in key.items()):
                found = None if entry["_op"] == "delete" else entry
        if found is None:
            return None
        return {k: v for k, v in found.items() if k not in ("_commit_ts", "_op")}


def _glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)
