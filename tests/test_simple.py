"""simple (JSON and Avro) against TiCDC's vectors (tests/vectors/simple.json), the bootstrap
schedule through the pipeline, row checksums, and the stateful decoder."""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from support_changelog import decode, replay
from ticdc_sim.config import changefeed
from ticdc_sim.encoders import (
    CodecConfig,
    DecodedBootstrap,
    DecodedCheckpoint,
    DecodedDDL,
    DecodedRow,
)
from ticdc_sim.encoders.canal_json import REPLICATION_LAG_MS
from ticdc_sim.encoders.simple import Decoder, Encoder, _avro_bytes, table_schema
from ticdc_sim.errors import ConfigError, DecodeError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.model.actions import ActionType
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.table import TableInfo
from ticdc_sim.model.tso import physical_ms
from ticdc_sim.pipeline import Pipeline
from ticdc_sim.sinks.memory import MemorySink

V = json.loads((Path(__file__).parent / "vectors" / "simple.json").read_text())
DOC = V["doc"]
JSON = CodecConfig("simple")
AVRO = CodecConfig("simple", encoding_format="avro")


def created(ddl: str) -> TableInfo:
    *_, event = Engine().run(parse_statements(f"CREATE DATABASE IF NOT EXISTS test; {ddl};"))
    assert isinstance(event, DDLEvent) and event.table_info is not None
    return event.table_info


def test_s1_table_schema() -> None:
    info = created(V["S1"]["ddl"])
    want = {**V["S1"]["schema"], "tableID": info.id, "version": info.update_ts}
    assert table_schema(info, "v8.5") == want


def test_s1_every_types_data_type() -> None:
    case = V["S1-types"]
    schema = table_schema(created(case["ddl"]), "v8.5")
    got = {c["name"]: c["dataType"] for c in schema["columns"]}
    assert got == case["dataTypes"]
    defaults = {c["name"]: c["default"] for c in schema["columns"] if c["default"] is not None}
    assert defaults == case["defaults"]
    assert schema["indexes"] == case["indexes"]


def doc_events() -> tuple[TableInfo, list[RowChangedEvent]]:
    """The document's table (id 148 at version ...426) and its three rows."""
    script = f"CREATE DATABASE simple; {DOC['ddl']}; " + "; ".join(
        DOC[name]["sql"] for name in ("S2", "S3", "S4")
    )
    events = list(Engine().run(parse_statements(script)))
    ddl = next(e for e in events if isinstance(e, DDLEvent) and e.table == "user")
    assert ddl.table_info is not None
    info = ddl.table_info.evolve(id=DOC["table_id"], update_ts=DOC["version"])
    rows = [e for e in events if isinstance(e, RowChangedEvent)]
    return info, [
        row._replace(
            table=info, physical_table_id=DOC["table_id"], commit_ts=DOC[name]["commit_ts"]
        )
        for row, name in zip(rows, ("S2", "S3", "S4"), strict=True)
    ]


def same_but_build_ts(ours: bytes, theirs: str, ts: int) -> None:
    """Byte for byte but `buildTs`, TiCDC's wall clock there and our simulated one here."""
    build_ts = orjson.loads(ours)["buildTs"]
    assert build_ts == physical_ms(ts) + REPLICATION_LAG_MS
    wall = orjson.loads(theirs)["buildTs"]
    assert ours.replace(b'"buildTs":%d' % build_ts, b'"buildTs":%d' % wall) == theirs.encode()


@pytest.mark.parametrize("name", ["S2", "S3", "S4"])
def test_dml_examples(name: str) -> None:
    _, rows = doc_events()
    row = rows[["S2", "S3", "S4"].index(name)]
    (message,) = Encoder(JSON).build_groups([[row]])[0]
    assert message.key is None
    same_but_build_ts(message.value or b"", DOC[name]["json"], row.commit_ts)


def test_s5_watermark_and_s6_bootstrap() -> None:
    info, _ = doc_events()
    encoder = Encoder(JSON)
    ts = DOC["S5"]["commit_ts"]
    watermark = encoder.encode_checkpoint(ts)
    assert watermark is not None
    same_but_build_ts(watermark.value or b"", DOC["S5"]["json"], ts)
    bootstrap = encoder.encode_bootstrap(info, ts)
    assert orjson.loads(bootstrap.value or b"")["commitTs"] == 0
    same_but_build_ts(bootstrap.value or b"", DOC["S6"]["json"], ts)


def test_s7_alter_carries_both_table_schemas() -> None:
    info, _ = doc_events()
    case = DOC["S7"]
    events = list(
        Engine().run(parse_statements(f"CREATE DATABASE simple; {DOC['ddl']}; {case['alter']}"))
    )
    after = events[-1].table_info
    assert after is not None
    after = after.evolve(id=DOC["table_id"], update_ts=case["version"])
    ddl = DDLEvent(
        1, case["commit_ts"], ActionType.ADD_COLUMN, case["query"], "simple", "user", after, info
    )
    message = Encoder(JSON).encode_ddl(ddl)
    same_but_build_ts(message.value or b"", case["json"], case["commit_ts"])
    decoder = Decoder(JSON)
    assert decoder.decode(None, message.value) == [
        DecodedDDL("simple", "user", case["commit_ts"], case["query"], "ALTER")
    ]
    assert ("simple", "user", case["version"]) in decoder.schemas


def test_s8_avro_watermark_bytes() -> None:
    case = V["S8"]
    payload = {"version": 1, "commitTs": case["commit_ts"], "buildTs": case["build_ts"]}
    assert _avro_bytes("Watermark", "WATERMARK", payload).hex() == case["hex"]
    ours = Encoder(AVRO).encode_checkpoint(case["commit_ts"])
    assert ours is not None and (ours.value or b"")[:4] == bytes.fromhex(case["hex"])[:4]
    assert Decoder(AVRO).decode(None, ours.value) == [DecodedCheckpoint(case["commit_ts"])]


@pytest.mark.parametrize("config", [JSON, AVRO], ids=["json", "avro"])
def test_the_decoder_needs_a_schema_first(config: CodecConfig) -> None:
    info, rows = doc_events()
    encoder, decoder = Encoder(config), Decoder(config)
    (insert,) = encoder.build_groups([[rows[0]]])[0]
    with pytest.raises(DecodeError, match="before any BOOTSTRAP"):
        decoder.decode(None, insert.value)
    bootstrap = encoder.encode_bootstrap(info, rows[0].commit_ts)
    assert decoder.decode(None, bootstrap.value) == [
        DecodedBootstrap("simple", "user", DOC["table_id"], DOC["version"])
    ]
    (row,) = decoder.decode(None, insert.value)
    assert isinstance(row, DecodedRow) and row.keys == ("id",)
    assert row.columns == {"id": 1, "name": "John Doe", "age": 25, "score": 90.5}


SCRIPT = """
CREATE DATABASE d; USE d;
CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20), ts TIMESTAMP(3) NULL, b VARBINARY(4), u BIGINT UNSIGNED);
INSERT INTO t VALUES (1, 'a', '2024-01-02 03:04:05.678', X'00ff', 18446744073709551615);
UPDATE t SET v = 'b' WHERE id = 1;
DELETE FROM t WHERE id = 1;
"""


@pytest.mark.parametrize("fmt", ["json", "avro"])
def test_checksums_are_tidb_column_checksums_and_verified(fmt: str) -> None:
    toml = '[integrity]\nintegrity-check-level = "correctness"\n'
    run = replay(SCRIPT, f"memory://?protocol=simple&encoding-format={fmt}", toml)
    decoded = [e for _, e in decode(run.pipeline.feed, run.sink.records())]
    rows = [e for e in decoded if isinstance(e, DecodedRow)]
    sums = [r.extra["checksum"] for r in rows]
    assert [(s["version"], s["corrupted"]) for s in sums] == [(2, False)] * 3
    insert, update, delete = sums
    assert insert["previous"] == 0 and delete["current"] == 0
    assert update["previous"] == insert["current"] and update["current"] == delete["previous"]
    assert update["current"] != update["previous"]
    # a consumer recomputes them from the values: a changed value is caught
    if fmt == "json":
        record = next(r for r in run.sink.records() if r.value and b"INSERT" in r.value)
        tampered = record.value.replace(b'"v":"a"', b'"v":"z"')  # type: ignore[union-attr]
        decoder = Decoder(run.pipeline.feed.codec)
        for r in run.sink.records():
            if r.value and b"BOOTSTRAP" in r.value:
                decoder.decode(None, r.value)
        with pytest.raises(DecodeError, match="checksum"):
            decoder.decode(None, tampered)


def records_of(script: str, uri: str, toml: str = "") -> list[tuple[int, dict[str, Any]]]:
    run = replay(script, uri, toml or None)
    return [(r.partition, orjson.loads(r.value or b"null")) for r in run.sink.records()]


def test_bootstrap_before_a_tables_first_row_on_every_partition() -> None:
    out = records_of(SCRIPT, "memory://?protocol=simple&partition-num=2")
    by_partition: dict[int, list[str]] = {}
    for partition, message in out:
        by_partition.setdefault(partition, []).append(message["type"])
    for partition in (0, 1):
        kinds = by_partition[partition]
        assert kinds.index("BOOTSTRAP") < min(
            (kinds.index(k) for k in ("INSERT", "UPDATE", "DELETE") if k in kinds), default=99
        )
    assert sum(k == "BOOTSTRAP" for k in by_partition[0] + by_partition[1]) == 2


def test_bootstrap_to_partition_zero_only_and_disabled() -> None:
    toml = "[sink]\nsend-bootstrap-to-all-partition = false\n"
    out = records_of(SCRIPT, "memory://?protocol=simple&partition-num=3", toml)
    assert [p for p, m in out if m["type"] == "BOOTSTRAP"] == [0]
    off = "[sink]\nsend-bootstrap-interval-in-sec = 0\nsend-bootstrap-in-msg-count = 0\n"
    out = records_of(SCRIPT, "memory://?protocol=simple&partition-num=3", off)
    assert not [m for _, m in out if m["type"] == "BOOTSTRAP"]


def bootstraps_sent(toml: str, seconds: int = 40) -> list[int]:
    """The simulated times BOOTSTRAPs go out at, for one row a second."""
    feed = changefeed("memory://?protocol=simple", toml)
    events = list(Engine().run(parse_statements(SCRIPT.split("UPDATE")[0])))
    row = next(e for e in events if isinstance(e, RowChangedEvent))
    sink = MemorySink()
    pipeline = Pipeline(feed, sink)
    for event in events:
        if isinstance(event, DDLEvent):
            pipeline.push(event)
    for i in range(seconds):  # commit ts one second apart
        pipeline.push(row._replace(commit_ts=row.commit_ts + ((i * 1000) << 18)))
    pipeline.close()
    messages = [orjson.loads(r.value or b"") for r in sink.records()]
    return [
        m["buildTs"] - REPLICATION_LAG_MS
        for r, m in zip(sink.records(), messages, strict=True)
        if m["type"] == "BOOTSTRAP" and r.partition == 0
    ]


def test_bootstrap_every_interval_of_simulated_time_and_every_n_groups() -> None:
    # the first with the first row, then on the 5 s ticker once 10 s passed
    sent = bootstraps_sent("[sink]\nsend-bootstrap-interval-in-sec = 10\n")
    gaps = [b - a for a, b in zip(sent, sent[1:], strict=False)]
    assert len(sent) == 4 and gaps[1:] == [10_000, 10_000] and 10_000 <= gaps[0] <= 15_000, sent
    # or once 3 groups were sent since the last, checked on the same ticker
    sent = bootstraps_sent("[sink]\nsend-bootstrap-in-msg-count = 3\n")
    gaps = [b - a for a, b in zip(sent, sent[1:], strict=False)]
    assert len(sent) == 8 and set(gaps[1:]) == {5_000}, sent


def test_config_keys_in_ticdc_spelling() -> None:
    feed = changefeed(
        "memory://?protocol=simple",
        "[sink]\nsend-bootstrap-interval-in-sec = 5\nsend-bootstrap-in-msg-count = 7\n"
        "send-bootstrap-to-all-partition = false\n"
        '[sink.kafka-config.codec-config]\nencoding-format = "avro"\n'
        '[integrity]\nintegrity-check-level = "correctness"\ncorruption-handle-level = "error"\n',
    )
    codec = feed.codec
    assert (codec.send_bootstrap_interval_in_sec, codec.send_bootstrap_in_msg_count) == (5, 7)
    assert not codec.send_bootstrap_to_all_partition and codec.encoding_format == "avro"
    assert codec.enable_row_checksum
    with pytest.raises(ConfigError, match="send-all-bootstrap-at-start.*not simulated"):
        changefeed("memory://?protocol=simple", "[sink]\nsend-all-bootstrap-at-start = true\n")
    with pytest.raises(ConfigError, match="json and avro"):
        changefeed("memory://?protocol=simple&encoding-format=protobuf")


def test_large_rows_send_the_handle_key_only() -> None:
    toml = (
        "[sink.kafka-config]\nmax-message-bytes = 1500\n"
        '[sink.kafka-config.large-message-handle]\nlarge-message-handle-option = "handle-key-only"\n'
    )
    script = SCRIPT.replace("VARCHAR(20)", "TEXT").replace("'a'", "'" + "a" * 2000 + "'")
    script = script.split("UPDATE")[0]
    out = records_of(script, "memory://?protocol=simple", toml)
    (insert,) = [m for _, m in out if m["type"] == "INSERT"]
    assert insert["handleKeyOnly"] is True and insert["data"] == {"id": "1"}


def test_avro_round_trip_through_the_pipeline() -> None:
    run = replay(SCRIPT, "memory://?protocol=simple&encoding-format=avro&partition-num=2")
    decoded = [e for _, e in decode(run.pipeline.feed, run.sink.records())]
    rows = [e for e in decoded if isinstance(e, DecodedRow)]
    assert [r.kind for r in rows] == ["insert", "update", "delete"]
    assert rows[0].columns == {
        "id": 1,
        "v": "a",
        "ts": "2024-01-02 03:04:05.678",
        "b": b"\x00\xff",
        "u": 2**64 - 1,
    }
    assert all(r.value and r.value[0] == 0x16 for r in run.sink.records())  # the Message branch


def test_new_architecture_ddl_type_and_column_order() -> None:
    info = created("CREATE TABLE test.o (a INT PRIMARY KEY, b INT)")
    moved = replace(info, columns=(info.columns[1], info.columns[0]))  # b defined first
    assert [c["name"] for c in table_schema(moved, "v8.5")["columns"]] == ["a", "b"]
    assert [c["name"] for c in table_schema(moved, "new-arch")["columns"]] == ["b", "a"]


@pytest.mark.parametrize("profile", ["v8.5", "new-arch"])
@pytest.mark.parametrize("checksums", [False, True])
@pytest.mark.parametrize("large", ["none", "handle-key-only", "claim-check"])
def test_avro_rows_are_the_bytes_fastavro_writes(checksums: bool, large: str, profile: str) -> None:
    from test_encoders import events as every_type_events

    config = replace(AVRO, enable_row_checksum=checksums, profile=profile)  # type: ignore[arg-type]
    encoder = Encoder(config)
    rows = [e for e in every_type_events() if isinstance(e, RowChangedEvent)]
    rows += [r._replace(physical_table_id=2**40, commit_ts=2**63 + 5) for r in rows]
    for row in rows:
        codec = encoder.codec(row.table)
        locations = ["s3://bucket/claims/x.json"] if large == "claim-check" else None
        (fast,) = codec.avro(row.kind, [row], large, locations)
        (record,) = codec.avro_records(row.kind, [row], large, locations)
        assert fast == _avro_bytes("DML", "DML", record)


def test_large_rows_with_claim_check_keep_the_whole_row_in_storage(tmp_path: Path) -> None:
    from ticdc_sim.encoders import large

    toml = (
        "[sink.kafka-config]\nmax-message-bytes = 1500\n"
        "[sink.kafka-config.large-message-handle]\n"
        'large-message-handle-option = "claim-check"\n'
        f'claim-check-storage-uri = "{tmp_path.as_uri()}"\n'
    )
    script = SCRIPT.replace("VARCHAR(20)", "TEXT").replace("'a'", "'" + "a" * 2000 + "'")
    out = records_of(script.split("UPDATE")[0], "memory://?protocol=simple", toml)
    (insert,) = [m for _, m in out if m["type"] == "INSERT"]
    assert insert["handleKeyOnly"] is True and insert["data"] == {"id": "1"}
    location = insert["claimCheckLocation"]
    assert location.startswith(tmp_path.as_uri() + "/")
    content = Path(location.removeprefix("file://")).read_bytes()
    _, whole = large.unclaim(content, raw=False)
    assert orjson.loads(whole)["data"]["v"] == "a" * 2000


def test_every_ddl_type_with_its_table_schemas() -> None:
    script = """
    CREATE DATABASE k; USE k;
    CREATE TABLE a (id INT PRIMARY KEY, v INT);
    RENAME TABLE a TO b;
    CREATE INDEX iv ON b (v);
    DROP INDEX iv ON b;
    ALTER TABLE b ADD COLUMN w INT;
    TRUNCATE TABLE b;
    DROP TABLE b;
    """
    out = records_of(script, "memory://?protocol=simple&partition-num=1")
    ddl = [m for _, m in out if m["type"] not in ("WATERMARK", "BOOTSTRAP")]
    shapes = [(m["type"], "tableSchema" in m, "preTableSchema" in m) for m in ddl]
    assert shapes == [
        ("QUERY", False, False),  # CREATE DATABASE: no table
        ("CREATE", True, False),
        ("RENAME", True, True),
        ("CINDEX", True, True),
        ("DINDEX", True, True),
        ("ALTER", True, True),
        ("TRUNCATE", True, True),
        ("ERASE", True, True),
    ]
    rename = ddl[2]
    assert (rename["preTableSchema"]["table"], rename["tableSchema"]["table"]) == ("a", "b")
    truncate = ddl[6]
    assert truncate["tableSchema"]["tableID"] != truncate["preTableSchema"]["tableID"]


@pytest.mark.parametrize("config", [JSON, AVRO], ids=["json", "avro"])
def test_truncated_or_corrupted_messages_are_refused_clearly(config: CodecConfig) -> None:
    import random

    run = replay(
        SCRIPT,
        "memory://?protocol=simple&partition-num=1"
        + ("&encoding-format=avro" if config is AVRO else ""),
    )
    values = [r.value for r in run.sink.records() if r.value]
    rng = random.Random(15)
    for value in values:
        decoder = Decoder(config)
        for other in values:  # every schema known, so only the damage can fail
            decoder.learn(other)
        for end in range(0, len(value), max(1, len(value) // 40)):
            with pytest.raises(DecodeError, match="simple"):
                decoder.decode(None, value[:end])
        for _ in range(60):
            data = bytearray(value)
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            with contextlib.suppress(DecodeError):
                decoder.decode(None, bytes(data))


@pytest.mark.parametrize("encoding", ["json", "avro"])
def test_a_timestamp_names_ticdcs_time_zone(tmp_path: Path, encoding: str) -> None:
    """TIMESTAMP text is in TiCDC's --tz and simple names that zone beside it (it was always
    "UTC", whatever --time-zone rendered the text in)."""
    from typer.testing import CliRunner

    from ticdc_sim.cli import app
    from ticdc_sim.sinks.jsonl import read_jsonl

    script = tmp_path / "s.sql"
    script.write_text(
        "CREATE TABLE t (id INT PRIMARY KEY, ts TIMESTAMP);\n"
        "INSERT INTO t VALUES (1, '2024-01-01 08:00:00');\n"
    )
    out = tmp_path / "out"
    uri = f"jsonl://{out}?protocol=simple&encoding-format={encoding}"
    args = ["replay", str(script), "--time-zone", "Asia/Shanghai", "--sink-uri", uri]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    values = [r.value or b"" for r in read_jsonl(str(out))]
    if encoding == "json":
        named = b'"ts":{"location":"Asia/Shanghai","value":"2024-01-01 08:00:00"}'
    else:  # the Timestamp branch (6), then location and value as Avro strings
        named = b"\x0c\x1aAsia/Shanghai\x262024-01-01 08:00:00"
    assert sum(named in v for v in values) == 1
    assert not any(b"UTC" in v for v in values)
