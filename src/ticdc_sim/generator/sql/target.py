"""What the statement executors (dml.py, join.py) may ask of the engine running them, and
nothing else: declared here so that they import this module, never the engine (which
imports them), and mypy checks the engine against it wherever it hands itself over.

Reads go through `read_table` (a user table, or one of information_schema's) and
`table_data` (a table a statement writes); writes through `write` and `write_new`, undone with
the statement or its transaction; row locks through `check_images`, `lock_entries` and
`lock_rows` (locks.py); ids through the table's one allocator; the rest builds and checks rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from typing import Any, Protocol

from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.evaluate import SessionFunctions
from ticdc_sim.generator.sql.store import Index, TableData
from ticdc_sim.generator.sql.values import SqlMode
from ticdc_sim.model.table import ColumnInfo

Row = tuple[Any, ...]


class DMLTarget(SessionFunctions, Protocol):
    # CLIENT_FOUND_ROWS, and the rows a statement's writes do not show in its count
    affected_adjust: int

    @property
    def sql_mode(self) -> SqlMode: ...

    @property
    def found_rows(self) -> bool: ...

    @property
    def active(self) -> Sized: ...  # the open transactions: locks matter when more than one

    def read_table(self, table: exp.Table) -> TableData: ...

    def table_data(self, table: exp.Table) -> TableData: ...

    def write(self, table: TableData, handle: Any, row: Row | None) -> None: ...

    def write_new(self, table: TableData, handles: list[Any], rows: list[Row]) -> None: ...

    def check_images(self, table: TableData, hits: Callable[[Row], bool]) -> None: ...

    def lock_entries(
        self, table: TableData, index: Index, rows: list[Row], exclusive: bool
    ) -> None: ...

    def lock_rows(
        self, table: TableData, matched: list[tuple[Any, Row]], exclusive: bool, writes: bool
    ) -> None: ...

    def default_value(self, column: ColumnInfo) -> Any: ...

    def require_defaults(self, table: TableData, values: list[Any]) -> None: ...

    def finish_row(self, table: TableData, values: list[Any], ignore: bool = False) -> Row: ...

    def auto_id(self, table: TableData, value: Any) -> Any: ...

    def given_ids(self, table: TableData, values: list[Any]) -> None: ...

    def observe_id(self, table: TableData, value: int) -> None: ...

    def allocate(self, table: TableData, count: int) -> list[int]: ...

    def new_handle(self, table: TableData, row: Row) -> Any: ...

    def conflicts(self, table: TableData, handle: Any, row: Row) -> list[Any]: ...

    def key_order(self, handle: Any) -> Any: ...

    def unique_error(self, table: TableData, unique: Index, row: Row) -> SQLError: ...

    def duplicate_error(self, table: TableData, handle: Any, row: Row) -> SQLError: ...
