"""One body over every protocol: events -> records -> decoded events give back the same rows."""

from __future__ import annotations

import base64
from decimal import Decimal
from typing import Any

import pytest

from ticdc_sim.encoders import (
    PROTOCOLS,
    CodecConfig,
    DecodedCheckpoint,
    DecodedDDL,
    DecodedRow,
    debezium,
    decoder_for,
    encoder_for,
)
from ticdc_sim.encoders.registry import MemoryRegistry
from ticdc_sim.errors import ConfigError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.mounted import mount_row, mounter

SCRIPT = """
USE test;
CREATE TABLE every_type (
  id BIGINT PRIMARY KEY, ti TINYINT, si SMALLINT UNSIGNED, mi MEDIUMINT, i INT, ub BIGINT UNSIGNED,
  f FLOAT, d DOUBLE, dec_ DECIMAL(20,6), dt DATETIME(6), ts TIMESTAMP(3) NULL, da DATE, tm TIME(2), y YEAR,
  ch CHAR(5), vc VARCHAR(20), bi BINARY(3), vb VARBINARY(8), tx TEXT, bl BLOB, e ENUM('x','y','z'),
  s SET('p','q','r'), b BIT(10), j JSON, g INT AS (i + 1) VIRTUAL, gs INT AS (i * 2) STORED
);
INSERT INTO every_type (id, ti, si, mi, i, ub, f, d, dec_, dt, ts, da, tm, y, ch, vc, bi, vb, tx, bl, e, s, b, j) VALUES
  (1, -128, 65535, -8388608, 7, 18446744073709551615, 1.5, -2.25e-7, '-12345678901234.123456',
   '2024-02-29 23:59:59.999999', '2024-01-01 00:00:00.5', '2024-02-29', '-838:59:59', 2155,
   'ab', 'x<y>&"\\\\\\n\\t\u2028é', X'00FF', X'010203', 'text ü', X'00FF7F80', 'z', 'p,r', b'1010101010',
   '{"b": [1, "<&>"], "a": null}'),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
UPDATE every_type SET vc = 'changed', f = 3.25, e = 'x' WHERE id = 1;
DELETE FROM every_type WHERE id = 2;
"""


def events(script: str = SCRIPT) -> list[Any]:
    return list(Engine().run(parse_statements(script)))


def maxwell_carried(value: Any) -> Any:
    """A value as maxwell's JSON carries it: no types, so binary strings in base64 and
    DECIMALs as their strings."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return str(value) if isinstance(value, Decimal) else value


# the script a protocol runs instead of SCRIPT (maxwell: TiCDC's encoder panics on an UPDATE
# of a binary column non-NULL before and after, so its binary values are cleared first)
SCRIPTS = {
    "maxwell": SCRIPT.replace(
        "UPDATE every_type SET vc",
        "UPDATE every_type SET bi = NULL, vb = NULL, bl = NULL WHERE id = 1;\n"
        "UPDATE every_type SET vc",
    ),
}


def expected_values(
    event: RowChangedEvent,
    row: tuple[Any, ...] | None,
    variant: str = "",
    mounted: bool = True,
) -> dict[str, Any] | None:
    if row is None:
        return None
    info = event.table
    values = mount_row([mounter(c) for c in info.columns], row) if mounted else row
    carry = CARRIED.get(variant, lambda c, v: v)
    return {c.name: carry(c, values[c.offset]) for c in info.visible_columns}


# what a protocol's types cannot carry, as its decoder gives it back
CARRIED = {
    "debezium": debezium.carried,
    "debezium-new-arch": debezium.carried,
    "maxwell": lambda c, v: maxwell_carried(v),
}


# every protocol, and each encoding and option that changes how values are written
VARIANTS = {
    **{p: {} for p in sorted(PROTOCOLS)},
    "simple-avro": {"protocol": "simple", "encoding_format": "avro"},
    "simple-checksums": {"protocol": "simple", "enable_row_checksum": True},
    "simple-avro-new-arch": {
        "protocol": "simple",
        "encoding_format": "avro",
        "profile": "new-arch",
    },
    "simple-avro-checksums": {
        "protocol": "simple",
        "encoding_format": "avro",
        "enable_row_checksum": True,
    },
    # csv: commit ts and old values are options; both modes of writing strings
    "csv": {"csv_include_commit_ts": True, "csv_output_old_value": True},
    # avro: DDL and checkpoints only in TiCDC's test-only watermark mode; both type options,
    # and row checksums (which TiCDC allows only with both as strings)
    "avro": {"avro_enable_watermark": True},
    "avro-strings-checksums": {
        "protocol": "avro",
        "avro_enable_watermark": True,
        "avro_decimal_handling_mode": "string",
        "avro_bigint_unsigned_handling_mode": "string",
        "enable_row_checksum": True,
    },
    # the new architecture's avro: old rows as `_ticdc_before` (with checksums, which sort the
    # columns by id), and without them, a delete's commit ts in its 0x03 watermark record
    "avro-new-arch": {
        "protocol": "avro",
        "profile": "new-arch",
        "avro_enable_watermark": True,
        "avro_include_before_value": True,
        "avro_decimal_handling_mode": "string",
        "avro_bigint_unsigned_handling_mode": "string",
        "enable_row_checksum": True,
    },
    "avro-new-arch-key-only": {
        "protocol": "avro",
        "profile": "new-arch",
        "avro_enable_watermark": True,
    },
    # the new architecture's debezium: its source schema, start_ts, virtual columns listed twice
    "debezium-new-arch": {
        "protocol": "debezium",
        "profile": "new-arch",
        "debezium_include_start_ts": True,
    },
    "csv-escaped-hex-header": {
        "protocol": "csv",
        "csv_include_commit_ts": True,
        "csv_output_old_value": True,
        "csv_quote": "",
        "csv_delimiter": "[*]",
        "csv_binary_encoding_method": "hex",
        "csv_output_field_header": True,
        "terminator": "\n",
    },
}
# protocols that carry no row's commit ts and send no checkpoints (canal: only `executeTime`,
# ms; maxwell: the commit's second, though its DDL carries the whole ts)
WITHOUT_TS = frozenset({"canal", "maxwell"})
DDL_WITHOUT_TS = frozenset({"canal"})
# protocols whose old image is the key alone (no old values; a delete is its key, with no
# value, so no commit ts)
KEY_ONLY = frozenset({"avro", "avro-strings-checksums", "avro-new-arch-key-only"})
# ... of which a delete carries its commit ts (the new architecture's watermark delete)
DELETE_WITH_TS = frozenset({"avro-new-arch-key-only"})
# protocols whose records name every column, a virtual generated one as NULL (ticdc's avro)
EVERY_COLUMN = frozenset({"avro-new-arch", "avro-new-arch-key-only"})


def every_column(values: dict[str, Any] | None, event: RowChangedEvent) -> dict[str, Any] | None:
    return None if values is None else {c.name: values.get(c.name) for c in event.table.columns}


# csv rows are read with the schema file's columns: it lists virtual generated columns, which
# the rows leave out (so TiCDC's consumer cannot read such a table), and it names no ENUM or
# SET members (the rows carry the names, not the numbers)
_CSV_SCRIPT = SCRIPT.replace(", g INT AS (i + 1) VIRTUAL", "")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_type_and_event_kind_round_trips(variant: str) -> None:
    settings: dict[str, Any] = {"protocol": variant, **VARIANTS[variant]}
    config = CodecConfig(**settings, enable_tidb_extension=True, max_batch_size=1)
    registry = MemoryRegistry()  # avro's schemas, by the ids its records name
    encoder, decoder = encoder_for(config, registry), decoder_for(config, registry=registry)
    csv = config.protocol == "csv"
    source = events(_CSV_SCRIPT if csv else SCRIPTS.get(variant, SCRIPT))
    decoded: list[Any] = []
    for event in source:
        if isinstance(event, DDLEvent):
            message = encoder.encode_ddl(event)
            decoded += decoder.decode(message.key, message.value)
        else:
            encoder.append_row(event)
            decoded += [d for m in encoder.build() for d in decoder.decode(m.key, m.value)]
    checkpoint = encoder.encode_checkpoint(source[-1].commit_ts)
    if variant in WITHOUT_TS:
        assert checkpoint is None
    else:
        assert checkpoint is not None
        assert decoder.decode(checkpoint.key, checkpoint.value) == [
            DecodedCheckpoint(source[-1].commit_ts)
        ]
    assert len(decoded) == len(source)
    for event, got in zip(source, decoded, strict=True):
        if isinstance(event, DDLEvent):
            assert isinstance(got, DecodedDDL)
            assert (got.schema, got.table, got.commit_ts, got.query) == (
                event.schema,
                event.table,
                None if variant in DDL_WITHOUT_TS else event.commit_ts,
                event.query,
            )
            continue
        assert isinstance(got, DecodedRow)
        tombstone = variant in KEY_ONLY - DELETE_WITH_TS and event.kind == "delete"
        assert (got.kind, got.schema, got.table, got.commit_ts) == (
            event.kind,
            "test",
            "every_type",
            None if variant in WITHOUT_TS or tombstone else event.commit_ts,
        )
        columns = expected_values(event, event.columns, variant, not csv)
        pre = expected_values(event, event.pre_columns, variant, not csv)
        if variant in EVERY_COLUMN:
            columns, pre = every_column(columns, event), every_column(pre, event)
        assert got.columns == columns
        if variant in KEY_ONLY and pre is not None:
            pre = {"id": pre["id"]}
        assert got.pre_columns == pre


@pytest.mark.parametrize("protocol", ["nonsense", "avro-json", "debezium-avro"])
def test_protocols_not_simulated_yet_fail_clearly(protocol: str) -> None:
    with pytest.raises(ConfigError, match=protocol):
        encoder_for(CodecConfig(protocol))
