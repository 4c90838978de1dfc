"""Shared nouns of ticdc-sim: MySQL types and flags, the table model, events and TSOs.

This package depends on nothing outside the standard library.
"""

from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent, Event, ResolvedEvent, RowChangedEvent
from ticdc_sim.model.mysql import ColumnFlag, MySQLType, TiDBFlag
from ticdc_sim.model.table import (
    ColumnDefault,
    ColumnInfo,
    IndexColumn,
    IndexInfo,
    PartitionDefinition,
    PartitionInfo,
    TableInfo,
)
from ticdc_sim.model.tso import TSOClock, compose_ts

__all__ = [
    "ActionType",
    "ColumnDefault",
    "ColumnFlag",
    "ColumnInfo",
    "DDLEvent",
    "Event",
    "IndexColumn",
    "IndexInfo",
    "MySQLType",
    "PartitionDefinition",
    "PartitionInfo",
    "ResolvedEvent",
    "RowChangedEvent",
    "TSOClock",
    "TableInfo",
    "TiDBFlag",
    "compose_ts",
]
