"""The `columns` partition dispatcher: tiflow `partition/columns.go`, ticdc
`downstreamadapter/sink/eventrouter/partition/columns.go`.

Hashes (schema, table) and then each configured column, matched case-insensitively, under the
table's own spelling of its name. Classic hashes NULL as "null"; the new architecture skips it.
"""

from __future__ import annotations

from ticdc_sim.errors import ConfigError
from ticdc_sim.model.events import RowChangedEvent
from ticdc_sim.model.mounted import mounter
from ticdc_sim.model.table import ColumnInfo, TableInfo, TiCDCFlagProfile
from ticdc_sim.partitioning.hash import modulo, position_inertia, value_string


class ColumnsDispatcher:
    def __init__(self, columns: list[str], profile: TiCDCFlagProfile = "classic") -> None:
        if not columns:
            raise ConfigError("the columns dispatcher needs `columns = [...]`")
        self.names = columns
        self.profile = profile
        self._columns: dict[int, tuple[TableInfo, list[tuple[ColumnInfo, int]]]] = {}

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
            mount = mounter(col)
            value = visible[position] if position < len(visible) else None
            value = value if mount is None else mount(value)
            if value is None and self.profile == "new-arch":
                continue
            writes.append((col.name.encode(), value_string(col, value)))
        sum32 = position_inertia(writes)
        return modulo(sum32, partitions), str(sum32)

    def _pick(self, info: TableInfo) -> list[tuple[ColumnInfo, int]]:
        found = [info.column(name) for name in self.names]
        missing = [n for n, c in zip(self.names, found, strict=True) if c is None]
        if missing:
            raise ConfigError(
                f"columns dispatcher: columns not found in {info.schema}.{info.name}: "
                + ", ".join(missing)
            )
        columns = [c for c in found if c is not None]
        virtual = [c.name for c in columns if c.is_virtual_generated]
        if virtual:
            raise ConfigError(
                f"columns dispatcher: found virtual generated columns in {info.schema}."
                f"{info.name}: " + ", ".join(virtual)
            )
        if self.profile == "new-arch":
            positions = {c.offset: i for i, c in enumerate(info.visible_columns)}
            return [(c, positions[c.offset]) for c in columns]
        return [(c, c.offset) for c in columns]  # tiflow's offset into the emitted row, as is
