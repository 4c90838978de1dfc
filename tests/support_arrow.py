"""A real consumer of the storage sink's csv files: pyarrow's CSV reader, each data file read
with the column names and types of its table version's schema file, its rows turned into the
changes a replica applies. Nothing of ticdc-sim's csv decoder is used; the files are walked in
TiCDC's storage consumer's order (schema file, then data files, per table version).

Types from the schema file's `ColumnType` (TiCDC's `TableCol`): integers, BIT and YEAR as
int64 (BIGINT UNSIGNED as uint64), FLOAT and DOUBLE as float32 and float64, DECIMAL as a
decimal of the file's precision and scale, binary strings as the base64 text they are written
as (decoded after), everything else (dates, times, JSON, ENUM and SET names) as strings, which
the replica converts as MySQL does.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyarrow import csv as pacsv

from ticdc_sim.encoders import Decoded, DecodedDDL, DecodedRow, cloudstorage
from ticdc_sim.sinks import Record
from ticdc_sim.sinks.storage import read_storage

_INTEGERS = {"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "BIT", "YEAR"}
_KINDS = {"I": "insert", "D": "delete", "U": "update"}
# what precedes the columns: with include-commit-ts and output-old-value (the oracle's), and
# without (TiCDC's defaults)
META = ("op", "table", "schema", "commit_ts", "is_update")
PLAIN = ("op", "table", "schema")


class VirtualColumns(Exception):
    """A file's rows have fewer fields than its schema file has columns: the table has
    virtual generated columns, which TiCDC's schema file lists and its rows leave out."""


def _arrow_type(column: dict[str, Any]) -> pa.DataType:
    if column["ColumnType"] == "BIGINT UNSIGNED":
        return pa.uint64()
    name = column["ColumnType"].removesuffix(" UNSIGNED")
    if name in _INTEGERS:
        return pa.int64()
    if name == "FLOAT":
        return pa.float32()
    if name == "DOUBLE":
        return pa.float64()
    if name.startswith("DECIMAL"):
        precision = int(column.get("ColumnPrecision", 10))
        scale = int(column.get("ColumnScale", 0))
        return (pa.decimal128 if precision <= 38 else pa.decimal256)(precision, scale)
    return pa.string()


def _read_as(wanted: pa.DataType) -> pa.DataType:
    """What the CSV reader converts to: a decimal256 it cannot, so text, cast after."""
    return pa.string() if pa.types.is_decimal256(wanted) else wanted


def _binary(column: dict[str, Any]) -> bool:
    name = column["ColumnType"]
    return "BLOB" in name or "BINARY" in name


def read_table_file(
    data: bytes, columns: list[dict[str, Any]], meta: tuple[str, ...] = META
) -> list[dict[str, Any]]:
    """One csv data file's rows, read by pyarrow with the schema file's columns after the
    `meta` fields."""
    names = [*meta, *(c["ColumnName"] for c in columns)]
    types = {c["ColumnName"]: _arrow_type(c) for c in columns}
    try:
        table = pacsv.read_csv(
            pa.py_buffer(data),
            read_options=pacsv.ReadOptions(column_names=names),
            convert_options=pacsv.ConvertOptions(
                null_values=["\\N"],  # unquoted only: a quoted "\N" is a string
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
                column_types={
                    "commit_ts": pa.uint64(),
                    "is_update": pa.bool_(),
                    **{name: _read_as(wanted) for name, wanted in types.items()},
                },
            ),
        )
        for name, wanted in types.items():
            if _read_as(wanted) != wanted:
                at = table.schema.get_field_index(name)
                table = table.set_column(at, name, table.column(name).cast(wanted))
    except pa.ArrowInvalid as e:
        if "Expected" in str(e) and "columns, got" in str(e):
            raise VirtualColumns(str(e)) from None
        raise
    rows: list[dict[str, Any]] = table.to_pylist()
    for row in rows:
        for column in columns:
            value = row[column["ColumnName"]]
            if value is not None and _binary(column):
                row[column["ColumnName"]] = base64.b64decode(value)
    return rows


def read_layout(directory: Path) -> list[tuple[Record, Decoded]]:
    """The changes of a storage sink's csv output (include-commit-ts, output-old-value): DDL
    from the schema files' queries, row changes from what pyarrow read; an update is its D
    and I rows (is-update true) joined."""
    versions: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    out: list[tuple[Record, Decoded]] = []
    for record in read_storage(str(directory)):
        name, data = record.topic, record.value or b""
        parts = name.split("/")
        if cloudstorage.is_schema_path(name):
            found = cloudstorage.read_definition(data, name)
            if found["Table"]:
                versions[(found["Schema"], found["Table"], str(found["TableVersion"]))] = found[
                    "TableColumns"
                ]
            if found["Query"]:
                ddl = DecodedDDL(
                    found["Schema"],
                    found["Table"],
                    found["TableVersion"],
                    found["Query"],
                    found["Type"],
                )
                out.append((record, ddl))
        elif name.endswith(".csv"):
            columns = versions[(parts[0], parts[1], parts[2])]
            # rows are found by the primary key the schema file marks (ColumnIsPk)
            keys = tuple(c["ColumnName"] for c in columns if c.get("ColumnIsPk") == "true")
            rows = read_table_file(data, columns)
            out += [(record, change) for change in _changes(rows, keys)]
    return out


def _changes(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> list[DecodedRow]:
    changes: list[DecodedRow] = []
    old: DecodedRow | None = None  # the D half of an update
    for row in rows:
        kind, schema, table = _KINDS[row.pop("op")], row.pop("schema"), row.pop("table")
        ts, is_update = row.pop("commit_ts"), row.pop("is_update")
        if is_update and kind == "delete":
            old = DecodedRow("delete", schema, table, ts, None, row, keys=keys)
        elif is_update and kind == "insert":
            assert old is not None and old.commit_ts == ts, "an update's I row without its D"
            changes.append(DecodedRow("update", schema, table, ts, row, old.pre_columns, keys=keys))
            old = None
        elif kind == "insert":
            changes.append(DecodedRow("insert", schema, table, ts, row, None, keys=keys))
        else:
            changes.append(DecodedRow(kind, schema, table, ts, None, row, keys=keys))
    return changes
