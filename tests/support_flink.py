"""Flink as an independent reader: its own `debezium-json`, `canal-json` and `maxwell-json`
formats read ticdc-sim's records, and the table Flink's changelog materialises must equal
MariaDB's.

PyFlink lives in its own venv (it pins numpy, pyarrow, protobuf and apache-beam versions the
project's venv does not want): `make flink` builds it at FLINK_VENV. Flink's Kafka connector
is not on PyPI, so each table's records go to a file, one message value a line, read by
Flink's `filesystem` connector; tests/flink_driver.py runs there and writes Flink's changelog
(RowKind and values) back as JSON.

Flink reads what it is told: each column is declared with the Flink type the format's JSON
can be read as (TYPES, from MariaDB's catalog), and MariaDB's values are put in the form that
type takes (Flink's normalisation: below, per format). Nothing else is loosened.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support_mariadb import SYSTEM_SCHEMAS
from ticdc_sim.config import Changefeed
from ticdc_sim.encoders import DecodedDDL, decoder_for
from ticdc_sim.sinks import Record

ROOT = Path(__file__).parents[1]
FLINK_VENV = Path(os.environ.get("TICDC_SIM_FLINK_VENV", ROOT / ".venv-flink"))
DRIVER = Path(__file__).parent / "flink_driver.py"
# Flink 2.x runs on Java 11, 17 and 21
JAVA_VERSIONS = {11, 17, 21}

# ticdc-sim's protocol: Flink's format and the options TiCDC's output needs
FORMATS: dict[str, tuple[str, dict[str, str]]] = {
    # TiCDC sends the schema part unless debezium-disable-schema
    "debezium": ("debezium-json", {"debezium-json.schema-include": "true"}),
    "canal-json": ("canal-json", {}),
    "maxwell": ("maxwell-json", {}),
}


@dataclass(frozen=True)
class Column:
    """A column as MariaDB's information_schema.columns has it."""

    name: str
    data_type: str  # DATA_TYPE: int, varchar, datetime ...
    column_type: str  # COLUMN_TYPE: unsigned, enum and set members
    precision: int | None
    scale: int | None
    fsp: int | None

    @property
    def unsigned(self) -> bool:
        return "unsigned" in self.column_type

    @property
    def members(self) -> list[str]:
        return [m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", self.column_type)]


Convert = Callable[[Column, Any], Any]
Rule = tuple[Callable[[Column], str], Convert]
_EPOCH = datetime.datetime(1970, 1, 1)


def _same(_: Column, v: Any) -> Any:
    return v


def _text(_: Column, v: Any) -> Any:
    return str(v)


def _hex(_: Column, v: Any) -> Any:
    return v.hex()


def _fixed(tp: str) -> Callable[[Column], str]:
    return lambda _: tp


def _decimal(c: Column) -> str:
    # Flink's DECIMAL holds 38 digits: wider ones are read as their text
    return f"DECIMAL({c.precision}, {c.scale})" if (c.precision or 0) <= 38 else "STRING"


_MICRO = datetime.timedelta(microseconds=1)


def _fraction(c: Column, micros: int) -> str:
    """`micros` as the fsp digits a fractional second shows, none for fsp 0."""
    return f".{micros:06d}"[: (c.fsp or 0) + 1] if c.fsp else ""


def _time_text(c: Column, v: datetime.timedelta) -> str:
    """MySQL's text of a TIME: [-]HH:MM:SS[.fraction]."""
    seconds, micros = divmod(abs(v) // _MICRO, 1_000_000)
    sign = "-" if v < datetime.timedelta(0) else ""
    return f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" + _fraction(
        c, micros
    )


def _datetime_text(c: Column, v: datetime.datetime) -> str:
    """Flink's text of a TIMESTAMP(fsp) (the driver casts it: see flink_driver.py)."""
    return v.strftime("%Y-%m-%d %H:%M:%S") + _fraction(c, v.microsecond)


def _zoned(c: Column, v: datetime.datetime) -> str:
    """Debezium's ZonedTimestamp: ISO-8601 in UTC."""
    return v.strftime("%Y-%m-%dT%H:%M:%S") + _fraction(c, v.microsecond) + "Z"


def _epoch(c: Column, v: datetime.datetime) -> int:
    """Debezium's Timestamp (ms) or MicroTimestamp (fsp > 3) of a DATETIME."""
    unit = datetime.timedelta(milliseconds=1) if (c.fsp or 0) <= 3 else _MICRO
    return (v - _EPOCH) // unit


def _enum_index(c: Column, v: str) -> int:
    return c.members.index(v) + 1 if v else 0


def _set_bits(c: Column, v: str) -> int:
    return sum(1 << c.members.index(m) for m in v.split(",") if m)


def _bit_bytes(c: Column, v: bytes) -> Any:
    # Debezium: BIT(1) a boolean, wider BITs their bytes little-endian
    n = int.from_bytes(v, "big")
    return (
        bool(n) if c.precision == 1 else n.to_bytes(((c.precision or 1) + 7) // 8, "little").hex()
    )


def _bigint(c: Column, v: int) -> Any:
    return str(v) if c.unsigned else v  # DECIMAL(20, 0) comes back as its text


def _signed64(c: Column, v: int) -> int:
    # TiCDC's debezium sends BIGINT UNSIGNED as an int64 (debezium.go: "int64")
    return v - (1 << 64) if c.unsigned and v >= 1 << 63 else v


_INTEGERS = ("tinyint", "smallint", "mediumint", "int", "year")
_STRINGS = ("char", "varchar", "tinytext", "text", "mediumtext", "longtext")
_BINARIES = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")

# MariaDB's DATA_TYPE -> format -> (Flink type, MariaDB's value as Flink gives it back).
# canal-json sends every value as text (Flink parses it into the declared type), maxwell and
# debezium as JSON numbers and strings; what each format makes of a MySQL type is TiCDC's:
# ENUM/SET as their index/bits and binary strings as ISO-8859-1 text in canal-json, ENUM/SET
# as their index/bits and binary strings as base64 in maxwell, DECIMAL as a double, dates as
# days, DATETIME as epoch ms (µs above fsp 3), TIMESTAMP as ISO text and TIME as µs in
# debezium. TIME goes to Flink as text where it is text: Flink's TIME stops at 24 hours.
TYPES: dict[str, dict[str, Rule]] = {
    "canal-json": {
        **dict.fromkeys(_INTEGERS, (_fixed("BIGINT"), _same)),
        "bigint": (lambda c: "DECIMAL(20, 0)" if c.unsigned else "BIGINT", _bigint),
        "decimal": (_decimal, _text),
        **dict.fromkeys(("float", "double"), (_fixed("DOUBLE"), _same)),
        **dict.fromkeys(_STRINGS, (_fixed("STRING"), _same)),
        **dict.fromkeys(_BINARIES, (_fixed("STRING"), lambda _, v: v.decode("latin-1"))),
        "enum": (_fixed("BIGINT"), _enum_index),
        "set": (_fixed("BIGINT"), _set_bits),
        "bit": (_fixed("DECIMAL(20, 0)"), lambda _, v: str(int.from_bytes(v, "big"))),
        "date": (_fixed("DATE"), _text),
        **dict.fromkeys(
            ("datetime", "timestamp"), (lambda c: f"TIMESTAMP({c.fsp})", _datetime_text)
        ),
        "time": (_fixed("STRING"), _time_text),
    },
    "debezium": {
        **dict.fromkeys(_INTEGERS, (_fixed("BIGINT"), _same)),
        "bigint": (_fixed("BIGINT"), _signed64),
        "decimal": (_fixed("DOUBLE"), lambda _, v: float(v)),
        **dict.fromkeys(("float", "double"), (_fixed("DOUBLE"), _same)),
        **dict.fromkeys((*_STRINGS, "enum", "set"), (_fixed("STRING"), _same)),
        **dict.fromkeys(_BINARIES, (_fixed("BYTES"), _hex)),
        "bit": (lambda c: "BOOLEAN" if c.precision == 1 else "BYTES", _bit_bytes),
        "date": (_fixed("INT"), lambda _, v: (v - _EPOCH.date()).days),
        "datetime": (_fixed("BIGINT"), _epoch),
        "timestamp": (_fixed("STRING"), _zoned),
        "time": (_fixed("BIGINT"), lambda _, v: v // _MICRO),
    },
}
TYPES["maxwell"] = {
    **TYPES["canal-json"],
    **dict.fromkeys(_BINARIES, (_fixed("BYTES"), _hex)),
}


def rule(protocol: str, column: Column) -> Rule:
    try:
        return TYPES[protocol][column.data_type]
    except KeyError:
        raise AssertionError(
            f"{protocol}: no Flink type for MariaDB's {column.data_type}"
        ) from None


def flink_python() -> tuple[Path | None, str]:
    """The Flink venv's Python and a Java Flink runs on, or None and why not."""
    python = FLINK_VENV / "bin" / "python"
    if not python.exists():
        return None, f"no Flink venv at {FLINK_VENV} (make flink builds it)"
    java = Path(os.environ["JAVA_HOME"], "bin", "java") if "JAVA_HOME" in os.environ else None
    found = str(java) if java else shutil.which("java")
    if found is None:
        return None, "no Java: set JAVA_HOME or put java on PATH"
    version = subprocess.run([found, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)', version)
    if match is None or int(match.group(1)) not in JAVA_VERSIONS:
        return None, f"{found} is not Java {sorted(JAVA_VERSIONS)} (Flink 2.x): {version[:80]!r}"
    return python, ""


def catalog(conn: Any) -> dict[str, tuple[list[Column], list[str]]]:
    """Every user table's columns and primary key, as MariaDB has them."""
    tables: dict[str, tuple[list[Column], list[str]]] = {}
    with conn.cursor() as cur:
        cur.execute(
            "SELECT c.table_schema, c.table_name, column_name, data_type, column_type,"
            " numeric_precision, numeric_scale, datetime_precision, column_key"
            " FROM information_schema.columns c JOIN information_schema.tables t"
            " USING (table_schema, table_name) WHERE t.table_type = 'BASE TABLE'"
            " ORDER BY c.table_schema, c.table_name, ordinal_position"
        )
        for schema, table, name, tp, full, precision, scale, fsp, key in cur.fetchall():
            if schema.lower() in SYSTEM_SCHEMAS:
                continue
            columns, primary = tables.setdefault(f"{schema}.{table}", ([], []))
            columns.append(Column(name, tp, full, precision, scale, fsp))
            if key == "PRI":
                primary.append(name)
    return tables


def values(
    feed: Changefeed, records: Iterable[Record]
) -> dict[str, tuple[list[bytes], list[bytes]]]:
    """Each topic's row messages and DDL messages, one Flink message each: a maxwell record's
    concatenated objects split (Flink's maxwell-json reads one object a message). TiCDC puts
    a table's DDL in its topic; Flink's debezium-json and maxwell-json fail on them (FINDINGS),
    so a Flink job gets the rows and the DDL are kept to show that."""
    decoder = decoder_for(feed.codec)
    out: dict[str, tuple[list[bytes], list[bytes]]] = {}
    for record in records:
        if record.value:
            rows, ddl = out.setdefault(record.topic, ([], []))
            decoded = decoder.decode(record.key, record.value)
            into = ddl if any(isinstance(d, DecodedDDL) for d in decoded) else rows
            into.extend(_split(record.value, feed.codec.protocol))
    return out


def _split(value: bytes, protocol: str) -> list[bytes]:
    if protocol != "maxwell":
        return [value]
    text, decoder, parts, at = value.decode(), json.JSONDecoder(), [], 0
    while at < len(text):
        _, end = decoder.raw_decode(text, at)
        parts.append(text[at:end].encode())
        at = end
    return parts


def maxwell_delete(message: bytes) -> bool:
    return bool(json.loads(message)["type"] == "delete")


def deletes_as_maxwell(message: bytes) -> bytes:
    """A TiCDC maxwell message with a delete's row moved from `old` to `data`, where Maxwell
    sends it; anything else as it is."""
    if not maxwell_delete(message):
        return message
    document = json.loads(message)
    document["data"] = document.pop("old")
    return json.dumps(document).encode()


def job_entry(
    name: str, path: Path, protocol: str, columns: list[Column], primary: list[str]
) -> dict[str, Any]:
    fmt, options = FORMATS[protocol]
    return {
        "name": name,
        "format": fmt,
        "path": str(path),
        "columns": [[c.name, rule(protocol, c)[0](c)] for c in columns],
        "primary_key": primary,
        "options": options,
    }


def run_driver(python: Path, job: list[dict[str, Any]], directory: Path) -> dict[str, Any]:
    """Every table through one Flink session: name -> {"changes": …} or {"error": …}."""
    (directory / "job.json").write_text(json.dumps(job))
    out = directory / "out.jsonl"
    done = subprocess.run(
        [str(python), str(DRIVER), str(directory / "job.json"), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise AssertionError(f"the Flink driver failed ({done.returncode}): {done.stderr[-3000:]}")
    return {entry["name"]: entry for entry in map(json.loads, out.read_text().splitlines())}


def materialised(
    changes: list[list[Any]], columns: list[Column], primary: list[str]
) -> list[tuple[Any, ...]]:
    """Flink's changelog applied: by primary key where the table has one (as an upsert sink
    keys it), else as a bag whose retractions must each find their row."""
    offsets = [i for i, c in enumerate(columns) if c.name in primary]
    by_key: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    bag: Counter[tuple[Any, ...]] = Counter()
    for kind, values in changes:
        row = tuple(values)
        if offsets:
            key = tuple(row[o] for o in offsets)
            if kind in ("+I", "+U"):
                by_key[key] = row
            elif by_key.pop(key, None) is None:
                raise AssertionError(f"Flink's {kind} {row} retracts a key it never inserted")
        elif kind in ("+I", "+U"):
            bag[row] += 1
        elif bag[row] == 0:
            raise AssertionError(f"Flink's {kind} {row} retracts a row it never inserted")
        else:
            bag[row] -= 1
    rows = list(by_key.values()) if offsets else list(bag.elements())
    return sorted(rows, key=repr)


def expected(
    rows: list[tuple[Any, ...]], columns: list[Column], protocol: str
) -> list[tuple[Any, ...]]:
    """MariaDB's rows in the form Flink gives them back for `protocol` (TYPES' conversions)."""
    converts = [rule(protocol, c)[1] for c in columns]
    out = [
        tuple(
            None if v is None else f(c, v) for f, c, v in zip(converts, columns, row, strict=True)
        )
        for row in rows
    ]
    return sorted(out, key=repr)
