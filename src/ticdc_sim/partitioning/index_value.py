"""The `index-value` partition dispatcher (alias `rowid`): tiflow `partition/index_value.go`,
ticdc `downstreamadapter/sink/eventrouter/partition/index_value.go`.

Classic hashes (schema, table) and then, for each handle-key column in row order, the column
name with its value string (NULL hashes as "null"); with `index = name`, that index's columns
in index order. The new architecture skips NULL values.
"""

from __future__ import annotations

from typing import Any

from ticdc_sim.errors import ConfigError
from ticdc_sim.model.events import RowChangedEvent
from ticdc_sim.model.mounted import mounter
from ticdc_sim.model.mysql import ColumnFlag
from ticdc_sim.model.table import ColumnInfo, TableInfo, TiCDCFlagProfile
from ticdc_sim.partitioning.hash import modulo, position_inertia, value_string

Picked = list[tuple[ColumnInfo, int]]  # (column, position in the emitted row)


class IndexValueDispatcher:
    def __init__(self, index: str = "", profile: TiCDCFlagProfile = "classic") -> None:
        self.index = index
        self.profile = profile
        self._columns: dict[int, tuple[TableInfo, Picked]] = {}  # by table version

    def dispatch(self, event: RowChangedEvent, partitions: int) -> tuple[int, str]:
        info = event.table
        cached = self._columns.get(id(info))
        if cached is None or cached[0] is not info:  # ids are reused once a version is gone
            cached = self._columns[id(info)] = (info, self._pick(info))
        picked = cached[1]
        row = event.columns if event.columns is not None else event.pre_columns
        assert row is not None
        visible = [row[c.offset] for c in info.visible_columns]
        writes = [(info.schema.encode(), info.name.encode())]
        for col, position in picked:
            if position >= len(visible):
                raise ConfigError(
                    f"index-value dispatcher: index {self.index!r} of {info.schema}.{info.name}"
                    " reads past the row (TiCDC fails the changefeed here)"
                )
            value = _mounted(col, visible[position])
            if value is None and self.profile == "new-arch":
                continue
            writes.append((col.name.encode(), value_string(col, value)))
        sum32 = position_inertia(writes)
        return modulo(sum32, partitions), str(sum32)

    def _pick(self, info: TableInfo) -> Picked:
        visible = info.visible_columns
        if not self.index:
            flags = info.ticdc_flags(self.profile)
            return [
                (c, i) for i, c in enumerate(visible) if flags[c.offset] & ColumnFlag.HANDLE_KEY
            ]
        index = info.index(self.index)
        if index is None:
            raise ConfigError(
                f"index-value dispatcher: table {info.schema}.{info.name} has no index"
                f" {self.index!r}"
            )
        if self.profile == "new-arch":
            positions = {c.offset: i for i, c in enumerate(visible)}
            return [(info.columns[ic.offset], positions[ic.offset]) for ic in index.columns]
        # tiflow takes the offset in TableInfo.Columns and reads the emitted row with it, which
        # skips virtual generated columns: the wrong column when one comes first (kept as is)
        return [(info.columns[ic.offset], ic.offset) for ic in index.columns]


def _mounted(col: ColumnInfo, value: Any) -> Any:
    mount = mounter(col)
    return value if mount is None else mount(value)
