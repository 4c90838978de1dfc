"""The `ts` partition dispatcher: tiflow `partition/ts.go` (commit ts modulo partitions)."""

from __future__ import annotations

from ticdc_sim.model.events import RowChangedEvent


class TsDispatcher:
    by_table = False

    def dispatch(self, event: RowChangedEvent, partitions: int) -> tuple[int, str]:
        return event.commit_ts % partitions, str(event.commit_ts)
