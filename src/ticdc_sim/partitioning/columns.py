"""The `columns` partition dispatcher: tiflow `partition/columns.go`, ticdc
`downstreamadapter/sink/eventrouter/partition/columns.go`.

Hashes (schema, table) and then each configured column, matched case-insensitively, under the
table's own spelling of its name. Classic hashes NULL as "null"; the new architecture skips it.
"""

from __future__ import annotations

from ticdc_sim.errors import ConfigError
from ticdc_sim.model.table import ColumnInfo, TableInfo, TiCDCProfile
from ticdc_sim.partitioning.hash import ColumnHashDispatcher


class ColumnsDispatcher(ColumnHashDispatcher):
    name = "columns"

    def __init__(self, columns: list[str], profile: TiCDCProfile = "v8.5") -> None:
        if not columns:
            raise ConfigError("the columns dispatcher needs `columns = [...]`")
        super().__init__(profile)
        self.names = columns

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
