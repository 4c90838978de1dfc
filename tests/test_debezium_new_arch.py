"""debezium as the new architecture writes it (ticdc-version=new-arch, pingcap/ticdc
pkg/sink/codec/debezium/codec.go): ticdc's vectors (tests/vectors/debezium_new_arch.json), and
what differs from v8.5, derived from the code where ticdc's tests assert no bytes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from ticdc_sim.config import changefeed
from ticdc_sim.encoders import CodecConfig, DecodedDDL, DecodedRow
from ticdc_sim.encoders.canal_json import REPLICATION_LAG_MS
from ticdc_sim.encoders.debezium import Decoder, Encoder
from ticdc_sim.errors import ConfigError, EncodeError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.table import TableInfo

VECTORS = json.loads((Path(__file__).parent / "vectors" / "debezium_new_arch.json").read_text())
NEW_ARCH = {"profile": "new-arch", "cluster_id": VECTORS["cluster_id"]}


def _table(ddl: str) -> TableInfo:
    (event,) = list(Engine().run(parse_statements(f"{ddl};")))[-1:]
    assert isinstance(event, DDLEvent) and event.table_info is not None
    return event.table_info


def _wall_clock(value: bytes) -> Any:
    """The record with TiCDC's tests' clock as `payload.ts_ms` in place of ours (the commit's
    physical ms plus the simulated lag)."""
    document = orjson.loads(value)
    payload = document["payload"]
    assert payload["ts_ms"] == payload["source"]["ts_ms"] + REPLICATION_LAG_MS
    payload["ts_ms"] = VECTORS["now_ms"]
    return document


def _ddl(case: dict[str, Any], info: TableInfo) -> DDLEvent:
    event = case["event"]
    pre = None
    if "pre" in event:
        pre = dataclasses.replace(info, schema=event["pre"][0], name=event["pre"][1])
    if event.get("dropped"):
        info, pre = None, info  # type: ignore[assignment]
    return DDLEvent(
        0, 1, ActionType[event["action"]], event["query"], event["schema"], event["name"],
        info, pre,
    )  # fmt: skip


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: c["name"])
def test_ticdc_vectors_and_back(case: dict[str, Any]) -> None:
    config = CodecConfig("debezium", **NEW_ARCH, **case["config"])
    encoder, event = Encoder(config), case["event"]
    info = _table(case["table"])
    if event["kind"] == "ddl":
        message = encoder.encode_ddl(_ddl(case, info))
    else:
        new, old = event.get("columns"), event.get("pre_columns")
        encoder.append_row(RowChangedEvent(0, 1, info, 1, new and tuple(new), old and tuple(old)))
        (message,) = encoder.build()
    assert message is not None and message.key is not None and message.value is not None
    # TiCDC's tests compare with require.JSONEq
    assert orjson.loads(message.key) == orjson.loads(case["key"])
    assert _wall_clock(message.value) == orjson.loads(case["value"])
    (decoded,) = Decoder(config).decode(message.key, message.value)
    if event["kind"] == "ddl":
        assert isinstance(decoded, DecodedDDL)
        assert (decoded.schema, decoded.table, decoded.query) == (
            "test",
            event["name"],
            event["query"],
        )
    else:
        assert isinstance(decoded, DecodedRow) and decoded.keys == ("tiny",)
        row = decoded.pre_columns if event["kind"] == "delete" else decoded.columns
        image = event.get("columns") or event["pre_columns"]
        assert (decoded.kind, row) == (event["kind"], {"tiny": image[0]})


def _rows(script: str, **settings: Any) -> list[Any]:
    config = CodecConfig("debezium", **{**NEW_ARCH, **settings})
    encoder, out = Encoder(config), []
    for event in Engine().run(parse_statements("USE test;" + script)):
        if isinstance(event, RowChangedEvent):
            encoder.append_row(event)
            (message,) = encoder.build()
            out.append((event, orjson.loads(message.value)))
    return out


def _source_fields(document: Any) -> list[str]:
    (source,) = [f for f in document["schema"]["fields"] if f["field"] == "source"]
    return [f["field"] for f in source["fields"]]


_FIXED = [
    "version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "table",
    "server_id", "gtid", "file", "pos", "row", "thread", "query",
]  # fmt: skip


def test_the_source_schema_declares_the_extension_and_start_ts() -> None:
    # codec.go writeSourceSchema: commit_ts and cluster_id with the extension (v8.5 never),
    # start_ts last with debezium-include-start-ts; the payload's start_ts sits between
    # commit_ts and cluster_id (debezium_test.go TestEncodeStartTsInSource)
    script = "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);"
    ((event, plain),) = _rows(script)
    assert _source_fields(plain) == _FIXED
    ((_, extended),) = _rows(script, enable_tidb_extension=True)
    assert _source_fields(extended) == [*_FIXED, "commit_ts", "cluster_id"]
    ((_, both),) = _rows(script, enable_tidb_extension=True, debezium_include_start_ts=True)
    assert _source_fields(both) == [*_FIXED, "commit_ts", "cluster_id", "start_ts"]
    assert list(both["payload"]["source"])[-3:] == ["commit_ts", "start_ts", "cluster_id"]
    assert both["payload"]["source"]["start_ts"] == event.start_ts
    config = CodecConfig("debezium", **NEW_ARCH, debezium_include_start_ts=True)
    encoder = Encoder(config)
    encoder.append_row(event)
    (message,) = encoder.build()
    (decoded,) = Decoder(config).decode(message.key, message.value)
    assert isinstance(decoded, DecodedRow) and decoded.extra["start_ts"] == event.start_ts
    ((_, classic),) = _rows(script, profile="v8.5", enable_tidb_extension=True)
    assert _source_fields(classic) == _FIXED


def test_ddl_and_checkpoints_never_declare_start_ts() -> None:
    # codec_test.go TestStartTsNotInDDLAndCheckpointEvents
    config = CodecConfig(
        "debezium", **NEW_ARCH, enable_tidb_extension=True, debezium_include_start_ts=True
    )
    encoder = Encoder(config)
    checkpoint = encoder.encode_checkpoint(3)
    assert checkpoint is not None and checkpoint.value is not None
    assert b"start_ts" not in checkpoint.value
    assert _source_fields(orjson.loads(checkpoint.value)) == [*_FIXED, "commit_ts", "cluster_id"]
    info = _table("CREATE TABLE test.t (id INT PRIMARY KEY)")
    ddl = encoder.encode_ddl(
        DDLEvent(0, 1, ActionType.CREATE_TABLE, "CREATE TABLE t (id INT)", "test", "t", info, None)
    )
    assert ddl is not None and ddl.value is not None and b"start_ts" not in ddl.value


def test_virtual_columns_are_listed_in_place_and_again() -> None:
    # EncodeValue: every column of GetColumns() (the column selector takes all), then
    # HasVirtualColumns' loop lists the virtual ones again; the values skip them
    script = "CREATE TABLE t (id INT PRIMARY KEY, g INT AS (id + 1) VIRTUAL, a INT); INSERT INTO t VALUES (1, DEFAULT, 2);"
    ((_, new),) = _rows(script)
    ((_, classic),) = _rows(script, profile="v8.5")
    names = [f["field"] for f in new["schema"]["fields"][0]["fields"]]
    assert names == ["id", "g", "a", "g"]
    assert [f["field"] for f in classic["schema"]["fields"][0]["fields"]] == ["id", "a", "g"]
    assert new["payload"]["after"] == classic["payload"]["after"] == {"id": 1, "a": 2}


def test_a_null_with_a_default_reads_the_default_through_the_chunk_datum() -> None:
    # getValueFromDefault then the datum's getter: TIME's string datum is 0 microseconds,
    # a BIGINT UNSIGNED default above 2^63 - 1 fails ParseInt and reads 0
    script = (
        "CREATE TABLE t (id INT PRIMARY KEY, t TIME DEFAULT '01:00:00',"
        " u BIGINT UNSIGNED DEFAULT 18446744073709551615, n INT DEFAULT 7);"
        " INSERT INTO t VALUES (1, NULL, NULL, NULL);"
    )
    ((_, new),) = _rows(script, debezium_disable_schema=True)
    ((_, classic),) = _rows(script, profile="v8.5", debezium_disable_schema=True)
    assert new["payload"]["after"] == {"id": 1, "t": 0, "u": 0, "n": 7}
    assert classic["payload"]["after"] == {"id": 1, "t": 3_600_000_000, "u": -1, "n": 7}


def test_a_null_in_a_date_with_a_default_is_ticdcs_panic() -> None:
    script = "CREATE TABLE t (id INT PRIMARY KEY, d DATE DEFAULT '2020-01-02');"
    assert _rows(script + " INSERT INTO t VALUES (1, '2021-01-01');")
    with pytest.raises(EncodeError) as found:
        _rows(script + " INSERT INTO t VALUES (1, NULL);")
    assert str(found.value) == (
        "debezium: a NULL in DATE column 'd', which has a default: TiCDC's encoder panics on it"
        " (datum.GetMysqlTime of the default's string datum: interface conversion:"
        " interface {} is nil, not types.Time)"
    )


def test_exchange_partition_names_the_normal_table() -> None:
    # schemastore buildPersistedDDLEventForExchangePartition: the event's names are the
    # normal table's, its extra names (the tableChanges id) the partitioned table's
    script = (
        "CREATE DATABASE a; CREATE DATABASE b; USE a;"
        " CREATE TABLE pt (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 2;"
        " CREATE TABLE b.nt (id INT PRIMARY KEY);"
        " ALTER TABLE pt EXCHANGE PARTITION p0 WITH TABLE b.nt;"
    )
    (event,) = list(Engine().run(parse_statements(script)))[-1:]
    assert isinstance(event, DDLEvent)
    found = {}
    for profile in ("v8.5", "new-arch"):
        config = CodecConfig("debezium", profile=profile, debezium_disable_schema=True)
        message = Encoder(config).encode_ddl(event)
        assert message is not None and message.key is not None and message.value is not None
        payload = orjson.loads(message.value)["payload"]
        change = payload["tableChanges"][0]
        found[profile] = (
            orjson.loads(message.key)["payload"]["databaseName"],
            payload["source"]["db"],
            payload["source"]["table"],
            change["id"],
            [c["name"] for c in change["table"]["columns"]],
        )
    assert found == {
        "v8.5": ("a", "a", "pt", '"a"."pt"', ["id"]),
        "new-arch": ("b", "b", "nt", '"a"."pt"', ["id"]),
    }


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        (
            "memory://?protocol=debezium&ticdc-version=new-arch&schema-registry=http://r",
            'Debezium protocol does not support schema registry; use protocol "debezium-avro"'
            " (ErrCodecInvalidConfig)",
        ),
        (
            "memory://?protocol=canal-json&ticdc-version=new-arch&debezium-include-start-ts=true",
            'debezium-include-start-ts only takes effect with protocol "debezium"'
            " (ErrCodecInvalidConfig)",
        ),
        (
            "memory://?protocol=debezium-avro&ticdc-version=new-arch",
            "sink URI parameter protocol: protocol 'debezium-avro' is not simulated yet",
        ),
    ],
)
def test_what_the_new_architecture_refuses(uri: str, message: str) -> None:
    with pytest.raises(ConfigError) as found:
        changefeed(uri)
    assert str(found.value) == message


def test_include_start_ts_is_the_new_architectures() -> None:
    uri = "memory://?protocol=debezium&ticdc-version=new-arch"
    assert changefeed(uri + "&debezium-include-start-ts=true").codec.debezium_include_start_ts
    toml = "[sink.debezium]\ninclude-start-ts = true\n"
    assert changefeed(uri, toml).codec.debezium_include_start_ts
    feed = changefeed("memory://?protocol=debezium&debezium-include-start-ts=true")
    assert not feed.codec.debezium_include_start_ts
    assert feed.warnings == (
        "debezium-include-start-ts is the new architecture's (ticdc-version=new-arch);"
        " TiCDC v8.5 has no such option and ignores it",
    )
