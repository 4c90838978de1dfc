"""TiCDC's storage-sink documents: schema files, the `metadata` checkpoint file and their paths.

Pure: what the storage sink writes beside the data files, as bytes and relative paths. Mirrors
tiflow `pkg/sink/cloudstorage/table_definition.go` (`TableDefinition`, `TableCol`,
`FromTiColumnInfo`, `Sum32`), `pkg/sink/cloudstorage/path.go` (`generateSchemaFilePath`,
`schemaFileNameFormat`) and `cdc/sink/ddlsink/cloudstorage/cloud_storage_ddl_sink.go`
(`WriteCheckpointTs`: `{"checkpoint-ts":N}`).

A schema file is `json.MarshalIndent(def, "", "    ")`; its name carries a checksum of a
*different* document: columns sorted by name, `Version` 0, no Query/Type/TableVersion
(`marshalWithoutQuery`), CRC32-IEEE (`hash.PositionInertia` on one write is plain CRC32), printed
`%010d`. TiCDC lists every column of the table there, virtual generated ones too, although the
CSV rows carry no value for them (the mounter leaves them out): a reader cannot pair such rows
with the file, TiCDC's consumer included. `decode` says so instead of mispairing.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

from ticdc_sim.encoders.reading import Fields, json_document
from ticdc_sim.golang import json as gj
from ticdc_sim.model.events import DDLEvent
from ticdc_sim.model.mysql import DEFAULT_LENGTH_AND_DECIMAL, UNSPECIFIED_LENGTH, TiDBFlag
from ticdc_sim.model.mysql import MySQLType as M
from ticdc_sim.model.table import ColumnInfo, TableInfo
from ticdc_sim.model.type_names import type_to_str

DEFINITION_VERSION = 1  # defaultTableDefinitionVersion
METADATA = "metadata"
# path.go schemaFileNameFormat / IsSchemaFile
SCHEMA_FILE = re.compile(r"meta/schema_\d+_\d{10}\.json$")

_TIME_SCALE = frozenset({M.TIMESTAMP, M.DATETIME, M.DURATION})
_FLOATS = frozenset({M.FLOAT, M.DOUBLE})
_PRECISION_ONLY = frozenset(
    {
        *(M.TINY, M.SHORT, M.INT24, M.LONG, M.LONGLONG, M.BIT, M.YEAR),
        *(M.VARCHAR, M.STRING, M.VAR_STRING),
        *(M.BLOB, M.TINY_BLOB, M.MEDIUM_BLOB, M.LONG_BLOB),
    }
)


def table_column(col: ColumnInfo) -> dict[str, Any]:
    """`TableCol.FromTiColumnInfo` (without column ids: `output-column-id` is off by
    default), keys in struct order, omitempty ones left out when empty."""
    from ticdc_sim.encoders.simple import column_default  # TiDB's GetDefaultValue, shared

    default_flen, default_decimal = DEFAULT_LENGTH_AND_DECIMAL.get(
        col.tp, (UNSPECIFIED_LENGTH, UNSPECIFIED_LENGTH)
    )
    flen = default_flen if col.flen == UNSPECIFIED_LENGTH else col.flen
    decimal = default_decimal if col.decimal == UNSPECIFIED_LENGTH else col.decimal
    decimal_not_default = col.decimal not in (default_decimal, 0, UNSPECIFIED_LENGTH)
    out: dict[str, Any] = {
        "ColumnName": col.name,
        "ColumnType": type_to_str(col).upper() + (" UNSIGNED" if col.unsigned else ""),
    }
    default = column_default(col)
    if default is not None:  # omitempty leaves a non-nil interface, even ""
        out["ColumnDefault"] = default
    if col.tp in _TIME_SCALE:
        if decimal_not_default:
            out["ColumnScale"] = str(decimal)
    elif col.tp in _FLOATS:
        out["ColumnPrecision"] = str(flen)
        if decimal_not_default:
            out["ColumnScale"] = str(decimal)
    elif col.tp == M.NEWDECIMAL:
        out["ColumnPrecision"], out["ColumnScale"] = str(flen), str(decimal)
    elif col.tp in _PRECISION_ONLY:
        out["ColumnPrecision"] = str(flen)
    if col.not_null:
        out["ColumnNullable"] = "false"
    if col.flag & TiDBFlag.PRI_KEY:
        out["ColumnIsPk"] = "true"
    return _ordered(out)


_COLUMN_ORDER = (
    "ColumnName",
    "ColumnType",
    "ColumnDefault",
    "ColumnPrecision",
    "ColumnScale",
    "ColumnNullable",
    "ColumnIsPk",
)


def _ordered(col: dict[str, Any]) -> dict[str, Any]:
    return {k: col[k] for k in _COLUMN_ORDER if k in col}


def definition(
    schema: str, info: TableInfo | None, version: int, query: str = "", action: int = 0
) -> dict[str, Any]:
    """`TableDefinition` of a table version (`FromTableInfo`), or of a schema (`info` None:
    `Table` "", `TableColumns` null); with the DDL's query and ActionType (`FromDDLEvent`)."""
    columns = None if info is None else [table_column(c) for c in info.columns]
    return {
        "Table": "" if info is None else info.name,
        "Schema": schema,
        "Version": DEFINITION_VERSION,
        "TableVersion": version,
        "Query": query,
        "Type": action,
        "TableColumns": columns,
        "TableColumnsTotal": 0 if columns is None else len(columns),
    }


def ddl_definition(event: DDLEvent) -> dict[str, Any]:
    """The definition the DDL sink writes for a DDL (a dropped table's last version)."""
    info = event.table_info or event.pre_table_info
    if not event.table:
        info = None
    return definition(event.schema, info, event.commit_ts, event.query, int(event.action))


def checksum(definition: dict[str, Any]) -> int:
    """`Sum32`: CRC32 of the definition without query, columns sorted by name."""
    columns = sorted(definition["TableColumns"] or [], key=lambda c: c["ColumnName"].encode())
    payload = {
        "Table": definition["Table"],
        "Schema": definition["Schema"],
        "Version": 0,
        "TableColumns": columns,
        "TableColumnsTotal": definition["TableColumnsTotal"],
    }
    return zlib.crc32(marshal_indent(payload))


def schema_path(definition: dict[str, Any]) -> str:
    """`GenerateSchemaFilePath`: `schema[/table]/meta/schema_{version}_{checksum:010d}.json`."""
    table = definition["Table"]
    where = f"{definition['Schema']}/{table}" if table else definition["Schema"]
    return f"{where}/meta/schema_{definition['TableVersion']}_{checksum(definition):010d}.json"


def marshal_indent(value: Any, depth: int = 0) -> bytes:
    """`json.MarshalIndent(value, "", "    ")` of dicts, lists, str, int and None."""
    if isinstance(value, dict) and value:
        inner = b"\n" + b"    " * (depth + 1)
        members = [
            gj.dumps(k, gj.ENCODING_JSON) + b": " + marshal_indent(v, depth + 1)
            for k, v in value.items()
        ]
        return b"{" + inner + (b"," + inner).join(members) + b"\n" + b"    " * depth + b"}"
    if isinstance(value, list) and value:
        inner = b"\n" + b"    " * (depth + 1)
        items = [marshal_indent(v, depth + 1) for v in value]
        return b"[" + inner + (b"," + inner).join(items) + b"\n" + b"    " * depth + b"]"
    return gj.dumps(value, gj.ENCODING_JSON)


def schema_file(definition: dict[str, Any]) -> bytes:
    return marshal_indent(definition)


def metadata(ts: int) -> bytes:
    """The changefeed's `metadata` file (encoding/json of `{"checkpoint-ts":N}`)."""
    return b'{"checkpoint-ts":%d}' % ts


# -- reading -------------------------------------------------------------------------------------


def read_metadata(data: bytes) -> int:
    found = Fields(
        json_document(data, "storage", noun="metadata file"), "storage", "", "metadata file"
    )
    ts = found.ts("checkpoint-ts")
    assert ts is not None
    return ts


def read_definition(data: bytes, path: str = "") -> dict[str, Any]:
    """A schema file, checked field by field; its columns as `TableCol` dicts."""
    noun = f"schema file {path}" if path else "schema file"
    found = Fields(json_document(data, "storage", noun=noun), "storage", "", noun)
    out = {
        "Table": found.text("Table") if found.values.get("Table") != "" else "",
        "Schema": found.text("Schema"),
        "Version": found.integer("Version"),
        "TableVersion": found.ts("TableVersion"),
        "Query": found.maybe("Query", str) or "",
        "Type": found.maybe("Type", int) or 0,
        "TableColumns": None,
        "TableColumnsTotal": found.maybe("TableColumnsTotal", int) or 0,
    }
    columns = found.maybe("TableColumns", list)
    if columns is not None:
        out["TableColumns"] = [_read_column(found, i, c) for i, c in enumerate(columns)]
        if len(columns) != out["TableColumnsTotal"]:
            raise found.fail(
                f"`TableColumnsTotal` {out['TableColumnsTotal']} is not the number of"
                f" `TableColumns` ({len(columns)})"
            )
    return out


def _read_column(found: Fields, at: int, value: Any) -> dict[str, Any]:
    col = Fields(value, found.protocol, f"TableColumns[{at}]", found.noun)
    out = {"ColumnName": col.text("ColumnName"), "ColumnType": col.text("ColumnType")}
    for key in _COLUMN_ORDER[2:]:
        if key in col.values:
            out[key] = col.values[key]
    return out


def is_schema_path(path: str) -> bool:
    return SCHEMA_FILE.search(path) is not None
