"""The `table` (and `default`) partition dispatcher: tiflow `partition/table.go`,
`partition/default.go` (default is table from v7.4 and in the new architecture)."""

from __future__ import annotations

from ticdc_sim.model.events import RowChangedEvent
from ticdc_sim.partitioning.hash import modulo, position_inertia


class TableDispatcher:
    def dispatch(self, event: RowChangedEvent, partitions: int) -> tuple[int, str]:
        info = event.table
        sum32 = position_inertia([(info.schema.encode(), info.name.encode())])
        return modulo(sum32, partitions), f"{info.schema}.{info.name}"
