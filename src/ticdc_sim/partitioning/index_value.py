"""The `index-value` partition dispatcher (alias `rowid`): tiflow `partition/index_value.go`,
ticdc `downstreamadapter/sink/eventrouter/partition/index_value.go`.

Classic hashes (schema, table) and then, for each handle-key column in row order, the column
name with its value string (NULL hashes as "null"); with `index = name`, that index's columns
in index order. The new architecture skips NULL values.
"""

from __future__ import annotations

from ticdc_sim.errors import ConfigError
from ticdc_sim.model.mysql import ColumnFlag
from ticdc_sim.model.table import ColumnInfo, TableInfo, TiCDCProfile
from ticdc_sim.partitioning.hash import ColumnHashDispatcher


class IndexValueDispatcher(ColumnHashDispatcher):
    name = "index-value"

    def __init__(self, index: str = "", profile: TiCDCProfile = "v8.5") -> None:
        super().__init__(profile)
        self.index = index

    def _pick(self, info: TableInfo) -> list[tuple[ColumnInfo, int]]:
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
