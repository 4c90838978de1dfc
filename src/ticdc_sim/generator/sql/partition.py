"""Which partition a row goes to, as TiDB routes it (`pkg/table/tables/partition.go`):
RANGE and RANGE COLUMNS by their bounds, LIST and LIST COLUMNS by their values, HASH by the
expression's value modulo the partition count, KEY by the hash of the key columns' bytes
(`pkg/util/codec` and the `partition.go` key hash); `TableData.router` caches each table's
router. Partition expressions are constants of the row: none may read the session's clock.
"""

from __future__ import annotations

import datetime as dt
import zlib
from collections.abc import Callable
from typing import Any

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.evaluate import (
    Context,
    compare,
    compile_expr,
    evaluate_constant,
    to_number,
)
from ticdc_sim.generator.sql.script import parse_one
from ticdc_sim.generator.sql.store import Row, TableData
from ticdc_sim.generator.sql.values import as_text

# -- partitions --------------------------------------------------------------------------------


def route_partition(table: TableData, row: Row) -> int:
    """The physical partition a row lives in (RANGE/LIST [COLUMNS], HASH)."""
    info = table.info
    part = info.partition
    assert part is not None
    if table.router is None or table.router[0] is not part:
        table.router = (part, _build_router(table))
    return table.router[1](row)


def _build_router(table: TableData) -> Callable[[Row], int]:
    info = table.info
    part = info.partition
    assert part is not None
    session = _ConstSession()
    if part.type in ("RANGE", "LIST", "HASH"):
        key_fn = compile_expr(parse_one(f"SELECT {part.expr}").expressions[0], table.scope)

        def keys(row: Row) -> tuple[Any, ...]:
            return (key_fn(Context(session=session, row=row)),)

    else:
        names = part.columns or info.handle_key_columns  # KEY() partitions by the primary key
        offsets = [table.scope.columns[c.lower()][0] for c in names]

        def keys(row: Row) -> tuple[Any, ...]:
            return tuple(row[o] for o in offsets)

    def value_of(text: str) -> Any:
        if text.upper() == "MAXVALUE":
            return _MAX
        return evaluate_constant(parse_one(f"SELECT {text}").expressions[0], session)

    defs = part.definitions
    if part.type == "HASH":
        count = len(defs)

        def route_hash(row: Row) -> int:
            value = keys(row)[0]
            number = 0 if value is None else int(to_number(value))
            return defs[abs(number % count)].id

        return route_hash
    if part.type.startswith("RANGE"):
        bounds = [tuple(value_of(v) for v in p.less_than) for p in defs]

        def route_range(row: Row) -> int:
            values = keys(row)
            for p, bound in zip(defs, bounds, strict=True):
                if _tuple_less(values, bound):
                    return p.id
            raise SQLError("Table has no partition for value", code=1526)

        return route_range
    if part.type.startswith("LIST"):
        members = [[tuple(value_of(v) for v in vs) for vs in p.in_values] for p in defs]
        default = next((p.id for p in defs if not p.in_values), None)

        def route_list(row: Row) -> int:
            values = keys(row)
            for p, options in zip(defs, members, strict=True):
                if any(_tuple_equal(values, o) for o in options):
                    return p.id
            if default is not None:
                return default
            raise SQLError("Table has no partition for value", code=1526)

        return route_list
    if part.type == "KEY":
        collations = [info.columns[o].collation for o in offsets]
        count = len(defs)

        def route_key(row: Row) -> int:
            # TiDB `ForKeyPruning.LocateKeyPartition`: CRC32 (IEEE) over each column's hash key
            data = b"".join(
                _key_partition_bytes(v, c) for v, c in zip(keys(row), collations, strict=True)
            )
            return defs[zlib.crc32(data) % count].id

        return route_key
    raise SQLError(f"DML on {part.type} partitioned tables is not supported", code=1105)


def _key_partition_bytes(value: Any, collation: str) -> bytes:
    """TiDB `Datum.ToHashKey`: the datum's string form under its collation's sort key."""
    if value is None:
        return b"\x00"
    if isinstance(value, bytes):
        return value
    text = value if isinstance(value, str) else as_text(value)
    if collation.endswith("_ci"):
        raise SQLError("KEY partitioning on a _ci collated column is not modelled", code=1105)
    if collation.endswith("_bin") and collation != "binary":
        text = text.rstrip(" ")  # PAD SPACE collations ignore trailing spaces
    return text.encode("utf-8", "surrogateescape")


_MAX: Any = type("_MaxValue", (), {})()


def _tuple_less(values: tuple[Any, ...], bound: tuple[Any, ...]) -> bool:
    for value, limit in zip(values, bound, strict=False):
        if limit is _MAX:
            return True
        if value is None:
            return True  # NULL sorts below everything
        result = compare(value, limit, False)
        if result is None:
            return True
        if result != 0:
            return result < 0
    return False


def _tuple_equal(values: tuple[Any, ...], option: tuple[Any, ...]) -> bool:
    return all(
        (v is None and o is None) or compare(v, o, False) == 0
        for v, o in zip(values, option, strict=False)
    )


class _ConstSession:
    """Session functions for constant partition expressions: none may read the clock."""

    def _refuse(self, *args: Any) -> Any:
        raise SQLError("this function is not allowed in partition expressions", code=1564)

    now = current_date = unix_timestamp = rand = uuid = last_insert_id = variable = sleep = _refuse
    sequence = user_variable = set_user_variable = _refuse

    def time_zone(self) -> dt.tzinfo:
        return dt.UTC
