"""The events that flow from the generator to the partitioner and the encoders.

Immutable like h11's events; they mirror tiflow `cdc/model/sink.go`
(`RowChangedEvent`, `DDLEvent`, `ResolvedEvent`). Row values are Python values in table column
order (`None` for SQL NULL); `columns`/`pre_columns` being empty encodes the row kind exactly as
TiCDC does: insert = columns only, delete = pre_columns only, update = both. Virtual generated
columns keep their computed value in place; TiCDC never emits them, so encoders iterate
`TableInfo.visible_columns`. The value forms are those of `generator/sql/values.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.table import TableInfo

Value = int | float | str | bytes | None
RowKind = Literal["insert", "update", "delete"]


class RowChangedEvent(NamedTuple):
    """One row change. A named tuple rather than a frozen dataclass: just as immutable, and
    built about four times faster, which matters at hundreds of thousands of rows a second.

    The engine guarantees `start_ts < commit_ts` and that at least one image is present.
    """

    start_ts: int
    commit_ts: int
    table: TableInfo
    physical_table_id: int  # the partition's id for partitioned tables, else the table id
    columns: tuple[Value, ...] | None  # new row image, one value per table column
    pre_columns: tuple[Value, ...] | None  # old row image
    row_id: int = 0  # the int handle (`_tidb_rowid` or the int PK); 0 for common handles

    @property
    def kind(self) -> RowKind:
        if self.pre_columns is None:
            return "insert"
        if self.columns is None:
            return "delete"
        return "update"

    @property
    def schema(self) -> str:
        return self.table.schema

    @property
    def table_name(self) -> str:
        return self.table.name


@dataclass(frozen=True, slots=True)
class DDLEvent:
    """One DDL as TiCDC emits it: one per affected table (RENAME/DROP of several split)."""

    start_ts: int
    commit_ts: int
    action: ActionType
    query: str  # the TiDB-restored text TiCDC sends (tiflow `cdc/owner/ddl_sink.go`)
    schema: str
    table: str  # "" for schema-level DDL
    table_info: TableInfo | None  # after the DDL; None when it dropped the table
    pre_table_info: TableInfo | None  # before the DDL; None when it created the table
    schema_version: int = 0
    source: str = ""  # the statement as the user wrote it

    def __post_init__(self) -> None:
        if not self.start_ts < self.commit_ts:
            raise ValueError(f"start ts {self.start_ts} must be below commit ts {self.commit_ts}")

    @property
    def tables(self) -> set[tuple[str, str]]:
        """The tables it names, as (schema, table): before and after a rename."""
        names = {(self.schema, self.table)} if self.table else set()
        for info in (self.pre_table_info, self.table_info):
            if info is not None:
                names.add((info.schema, info.name))
        return names


@dataclass(frozen=True, slots=True)
class ResolvedEvent:
    """A resolved (checkpoint / watermark) ts: every change with a smaller ts has been sent."""

    ts: int


Event = RowChangedEvent | DDLEvent | ResolvedEvent
