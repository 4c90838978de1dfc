"""TiCDC's PositionInertia hash and the value strings dispatchers feed it.

tiflow `pkg/hash/position_inertia.go`: each `Write(parts...)` takes the CRC-32 (IEEE) of the
concatenated parts and XORs it into the running value, so the order of writes does not
matter but the split inside one write does not either. `value_string` is tiflow
`cdc/model/sink.go` `ColumnValueString` applied to mounted values (`model.mounted`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from ticdc_sim.golang import format_f
from ticdc_sim.model.mysql import MySQLType
from ticdc_sim.model.table import ColumnInfo


def position_inertia(writes: Iterable[Iterable[bytes]]) -> int:
    """The uint32 sum after `Reset()` and one `Write` per item of `writes`."""
    value = 0
    for parts in writes:
        value ^= zlib.crc32(b"".join(parts))
    return value


def value_string(col: ColumnInfo, value: Any) -> bytes:
    """`ColumnValueString` of a mounted value: the bytes the dispatchers hash."""
    if value is None:
        return b"null"
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, float):
        return format_f(value, 32 if col.tp == MySQLType.FLOAT else 64).encode()
    if isinstance(value, Decimal):
        return format(value, "f").encode()
    return str(int(value)).encode()


def modulo(sum32: int, partitions: int) -> int:
    """`int32(sum32 % uint32(partitionNum))`."""
    return sum32 % partitions
