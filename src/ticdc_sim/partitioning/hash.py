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

from ticdc_sim.errors import ConfigError
from ticdc_sim.golang.strconv import format_f
from ticdc_sim.model.events import RowChangedEvent
from ticdc_sim.model.mounted import Mounter, mounter
from ticdc_sim.model.mysql import MySQLType
from ticdc_sim.model.table import ColumnInfo, TableInfo, TiCDCProfile


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


class ColumnHashDispatcher:
    """What index-value and columns share: hash (schema, table) and then picked columns.

    `_pick` chooses a table version's columns once, each with its position in the emitted
    row (virtual generated columns left out) and its mounter; the new architecture skips NULLs.
    """

    by_table = False

    name = ""

    def __init__(self, profile: TiCDCProfile) -> None:
        self.profile = profile
        self._picked: dict[int, tuple[TableInfo, list[Picked]]] = {}  # by table version

    def _pick(self, info: TableInfo) -> list[tuple[ColumnInfo, int]]:
        raise NotImplementedError

    def dispatch(self, event: RowChangedEvent, partitions: int) -> tuple[int, str]:
        info = event.table
        cached = self._picked.get(id(info))
        if cached is None or cached[0] is not info:  # ids are reused once a version is gone
            picked = [(c, p, mounter(c)) for c, p in self._pick(info)]
            cached = self._picked[id(info)] = (info, picked)
        row = event.columns if event.columns is not None else event.pre_columns
        assert row is not None
        visible = [row[c.offset] for c in info.visible_columns]
        writes = [(info.schema.encode(), info.name.encode())]
        for col, position, mount in cached[1]:
            if position >= len(visible):
                raise ConfigError(
                    f"{self.name} dispatcher: column {col.name} of {info.schema}.{info.name}"
                    " is read past the end of the row (TiCDC fails the changefeed here)"
                )
            value = visible[position] if mount is None else mount(visible[position])
            if value is None and self.profile == "new-arch":
                continue
            writes.append((col.name.encode(), value_string(col, value)))
        sum32 = position_inertia(writes)
        return modulo(sum32, partitions), str(sum32)


Picked = tuple[ColumnInfo, int, Mounter | None]  # column, position in the emitted row, mounter
