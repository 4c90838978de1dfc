"""The `table` (and `default`) partition dispatcher: tiflow `partition/table.go`,
`partition/default.go` (default is table from v7.4 and in the new architecture)."""

from __future__ import annotations

from ticdc_sim.model.events import RowChangedEvent
from ticdc_sim.partitioning.hash import modulo, position_inertia


class TableDispatcher:
    by_table = True

    def __init__(self) -> None:
        # every row of a table goes to one partition: hashed once per table
        self._cache: dict[tuple[str, str, int], tuple[int, str]] = {}

    def dispatch(self, event: RowChangedEvent, partitions: int) -> tuple[int, str]:
        info = event.table
        key = (info.schema, info.name, partitions)
        found = self._cache.get(key)
        if found is None:
            sum32 = position_inertia([(info.schema.encode(), info.name.encode())])
            found = self._cache[key] = (modulo(sum32, partitions), f"{info.schema}.{info.name}")
        return found
