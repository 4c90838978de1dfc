"""`--expect DIR`: what a correct consumer must end with, one Parquet file a replicated table.

`DIR/<schema>.<table>.parquet` holds the table's final rows in primary-key order, its visible
columns with the types a downstream MySQL would give them: integers as int64 (BIGINT
UNSIGNED and BIT as uint64), FLOAT/DOUBLE as float64, DECIMAL(M,D) as decimal(M,D), binary
strings as binary, every other value (dates and times as TiDB prints them, TIMESTAMP in
TiCDC's time zone; ENUM and SET members; JSON) as string. The file's key-value metadata says
which table version it is: `ticdc-sim.table-id`, `ticdc-sim.update-ts` (the table's schema
version ts), `ticdc-sim.schema-version` and `ticdc-sim.checkpoint-ts` (the run's last).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ticdc_sim.errors import SimError
from ticdc_sim.model.mysql import INTEGER_RANGES, STRING_TYPES, MySQLType
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


def write_expected(
    directory: str,
    tables: Iterable[tuple[TableInfo, Iterable[Row]]],
    schema_version: int,
    checkpoint_ts: int,
) -> list[Path]:
    """One file a table; returns the paths written."""
    root = Path(directory)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SimError(f"--expect {root}: {e.strerror}") from None
    written = []
    for info, rows in tables:
        columns = info.visible_columns
        types = [_arrow_type(c) for c in columns]
        schema = pa.schema(
            [
                pa.field(c.name, t, nullable=not c.not_null)
                for c, t in zip(columns, types, strict=True)
            ],
            metadata={
                "ticdc-sim.table-id": str(info.id),
                "ticdc-sim.update-ts": str(info.update_ts),
                "ticdc-sim.schema-version": str(schema_version),
                "ticdc-sim.checkpoint-ts": str(checkpoint_ts),
            },
        )
        values = [_value(t) for t in types]
        data: list[list[Any]] = [[] for _ in columns]
        for row in rows:
            for out, column, value in zip(data, columns, values, strict=True):
                out.append(value(row[column.offset]))
        path = root / f"{info.schema}.{info.name}.parquet"
        try:
            pq.write_table(pa.table(data, schema=schema), path)
        except (OSError, pa.ArrowException) as e:
            raise SimError(f"--expect: cannot write {path}: {e}") from None
        written.append(path)
    return written
