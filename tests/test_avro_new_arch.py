"""avro as the new architecture writes it (ticdc-version=new-arch, pingcap/ticdc arvo.go),
against tests/vectors/avro_new_arch.json: vectors derived from the Go code (ticdc's tests
assert no bytes), each beside what v8.5 writes where the two differ."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest

from ticdc_sim.config import changefeed
from ticdc_sim.encoders import CodecConfig, DecodedRow, decoder_for
from ticdc_sim.encoders.avro import Encoder
from ticdc_sim.encoders.registry import MemoryRegistry
from ticdc_sim.errors import DecodeError, EncodeError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.table import TableInfo

VECTORS = json.loads((Path(__file__).parent / "vectors" / "avro_new_arch.json").read_text())


def _table(ddl: str) -> TableInfo:
    (event,) = Engine().run(parse_statements(f"USE test; {ddl};"))
    assert isinstance(event, DDLEvent) and event.table_info is not None
    return event.table_info


def _events(case: dict[str, Any]) -> list[RowChangedEvent]:
    info = _table(case["table"])
    return [
        RowChangedEvent(
            e["commit_ts"] - 1,
            e["commit_ts"],
            info,
            info.id,
            None if e["post"] is None else tuple(e["post"]),
            None if e["pre"] is None else tuple(e["pre"]),
        )
        for e in case["events"]
    ]


def _encode(config: CodecConfig, rows: list[RowChangedEvent]) -> tuple[MemoryRegistry, list[Any]]:
    registry = MemoryRegistry()
    encoder = Encoder(config, registry, lambda schema, table: "default")
    messages = []
    for row in rows:
        encoder.append_row(row)
        messages += encoder.build()
    return registry, messages


def _as_written(row: RowChangedEvent, image: tuple[Any, ...] | None) -> dict[str, Any]:
    """An image as ticdc's record holds it: every column, a virtual one NULL."""
    assert image is not None
    return {c.name: None if c.is_virtual_generated else image[c.offset] for c in row.table.columns}


def _hex(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: c["name"])
def test_new_architecture_records_byte_for_byte_and_back(case: dict[str, Any]) -> None:
    config = changefeed("memory://" + case["uri"]).codec
    assert config.profile == "new-arch"
    rows = _events(case)
    registry, messages = _encode(config, rows)
    assert [(_hex(m.key), _hex(m.value)) for m in messages] == [
        (e["key"], e["value"]) for e in case["events"]
    ]
    subjects = registry.to_json()["subjects"]
    if "key_schema" in case:
        assert registry.schema(subjects["default-key"][0]) == case["key_schema"]
        assert registry.schema(subjects["default-value"][0]) == case["value_schema"]
    decoder = decoder_for(config, registry=registry)
    for row, message in zip(rows, messages, strict=True):
        if message.value[:1] == b"\x00":  # fastavro (the plain library) reads the record
            schema = fastavro.parse_schema(
                json.loads(registry.schema(int(message.value[1:5].hex(), 16)))
            )
            fastavro.schemaless_reader(io.BytesIO(message.value[5:]), schema)
        (got,) = decoder.decode(message.key, message.value)
        assert isinstance(got, DecodedRow)
        assert (got.kind, got.schema, got.table) == (row.kind, "test", row.table.name)
        if got.columns is not None:
            assert got.columns == _as_written(row, row.columns)
        if config.avro_include_before_value and row.pre_columns is not None:
            assert got.pre_columns == _as_written(row, row.pre_columns)
        with_ts = config.enable_tidb_extension or message.value[:1] == b"\x03"
        assert got.commit_ts == (row.commit_ts if with_ts else None)


@pytest.mark.parametrize(
    "case", [c for c in VECTORS["cases"] if "v8.5_value" in c["events"][0]], ids=lambda c: c["name"]
)
def test_what_v85_writes_instead(case: dict[str, Any]) -> None:
    config = changefeed("memory://" + case["uri"].replace("new-arch", "v8.5")).codec
    _, (message,) = _encode(config, _events(case))
    (vector,) = case["events"]
    assert (_hex(message.key), _hex(message.value)) == (
        vector.get("v8.5_key", vector["key"]),
        vector["v8.5_value"],
    )


def test_a_watermark_delete_is_the_new_architectures_only() -> None:
    uri = "memory://?protocol=avro&enable-tidb-extension=true&avro-enable-watermark=true"
    (case,) = [c for c in VECTORS["cases"] if c["name"] == "watermark-delete"]
    delete = _events(case)[1]
    config = changefeed(uri).codec  # v8.5: a tombstone
    registry, (message,) = _encode(config, [delete])
    assert (message.key.hex(), message.value) == ("000000000102", None)
    with pytest.raises(DecodeError, match="does not start with the magic byte 0"):
        decoder_for(config, registry=registry).decode(message.key, b"\x03" + bytes(8))
    config = changefeed(uri + "&ticdc-version=new-arch").codec
    registry, _ = _encode(config, [delete])
    decoder = decoder_for(config, registry=registry)
    with pytest.raises(DecodeError, match="0x03 and an 8-byte commit ts, not 5 bytes"):
        decoder.decode(message.key, b"\x03" + bytes(4))
    with pytest.raises(DecodeError, match="a watermark delete without a key"):
        decoder.decode(None, b"\x03" + bytes(8))


def test_v85_decoders_refuse_the_delete_op() -> None:
    (case,) = [c for c in VECTORS["cases"] if c["name"] == "include-before-value-with-extension"]
    config = changefeed("memory://" + case["uri"]).codec
    registry, messages = _encode(config, _events(case))
    classic = decoder_for(CodecConfig("avro", enable_tidb_extension=True), registry=registry)
    with pytest.raises(DecodeError, match="`_tidb_op` 'd' is not c or u"):
        classic.decode(messages[2].key, messages[2].value)


def test_a_not_null_virtual_column_is_ticdcs_encoding_error() -> None:
    # its field is a plain int, and the chunk row's NULL no int: goavro refuses the record
    case = {
        "table": "CREATE TABLE gen (id INT NOT NULL PRIMARY KEY, g INT AS (id + 1) VIRTUAL NOT NULL)",
        "events": [{"commit_ts": 1024, "pre": None, "post": [1, 2]}],
    }
    config = changefeed("memory://?protocol=avro&ticdc-version=new-arch").codec
    with pytest.raises(EncodeError) as found:
        _encode(config, _events(case))
    assert str(found.value) == (
        "avro: a NULL in NOT NULL column 'g', which goavro cannot write"
        " (TiCDC: ErrAvroEncodeToBinary)"
    )


def test_a_watermark_ddl_names_ticdcs_target_table() -> None:
    # encoder.go EncodeDDLEvent: GetTargetSchemaName/GetTargetTableName, which for EXCHANGE
    # PARTITION name the normal table (schemastore buildPersistedDDLEventForExchangePartition)
    script = (
        "CREATE DATABASE a; CREATE DATABASE b; USE a;"
        " CREATE TABLE pt (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 2;"
        " CREATE TABLE b.nt (id INT PRIMARY KEY);"
        " ALTER TABLE pt EXCHANGE PARTITION p0 WITH TABLE b.nt;"
    )
    (event,) = list(Engine().run(parse_statements(script)))[-1:]
    assert isinstance(event, DDLEvent)
    uri = "memory://?protocol=avro&enable-tidb-extension=true&avro-enable-watermark=true"
    named = {}
    for profile in ("v8.5", "new-arch"):
        config = changefeed(f"{uri}&ticdc-version={profile}").codec
        message = Encoder(config, MemoryRegistry()).encode_ddl(event)
        assert message is not None and message.value is not None
        document = json.loads(message.value[1:])
        named[profile] = (document["schema"], document["table"])
    assert named == {"v8.5": ("a", "pt"), "new-arch": ("b", "nt")}
