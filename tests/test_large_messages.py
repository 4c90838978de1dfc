"""Large messages (encoders/large.py): rows over max-message-bytes become handle-key-only or
claim-check messages with TiCDC's bytes and size arithmetic, values may be compressed, and the
decoders make every row whole again as TiCDC's consumer does: claim-check files from the
storage, handle-key-only rows from the upstream (the --expect history).
"""

from __future__ import annotations

import base64
import random
from pathlib import Path
from typing import Any

import lz4.frame
import orjson
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from support_changelog import _sorted, merged, rebuild
from ticdc_sim.cli import app
from ticdc_sim.config import changefeed
from ticdc_sim.encoders import DecodedCheckpoint, DecodedDDL, DecodedRow, decoder_for, large
from ticdc_sim.errors import ConfigError, DecodeError, EncodeError
from ticdc_sim.generator.sql.engine import Engine, EngineConfig
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.pipeline import Pipeline
from ticdc_sim.sinks.claim_check import ClaimStorage
from ticdc_sim.sinks.expect import History, Recorder
from ticdc_sim.sinks.memory import MemorySink
from ticdc_sim.sinks.upstream import Upstream

PROTOCOLS = ["canal-json", "open-protocol"]


def _blob(seed: int, size: int) -> str:
    """An incompressible BLOB literal: random bytes, seeded."""
    return "X'" + random.Random(seed).randbytes(size).hex() + "'"


def _text(seed: int, size: int) -> str:
    """Random letters: a TEXT value neither snappy nor lz4 shrinks much."""
    generator = random.Random(seed)
    return "".join(generator.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(size))


DOC = _text(5, 1800)
SCRIPT = f"""
CREATE TABLE big (id INT PRIMARY KEY, name VARCHAR(20), body LONGBLOB);
CREATE TABLE uk (code VARCHAR(10) NOT NULL, v INT, doc TEXT, UNIQUE KEY (code));
INSERT INTO big VALUES (1, 'small', X'00'), (2, 'large', {_blob(2, 1500)});
INSERT INTO big VALUES (3, 'large too', {_blob(3, 1400)});
UPDATE big SET body = {_blob(1, 1600)} WHERE id = 1;
UPDATE big SET name = 'still large' WHERE id = 2;
INSERT INTO uk VALUES ('a', 1, '{DOC}'), ('b', 2, 'small');
UPDATE uk SET v = 5 WHERE code = 'a';
ALTER TABLE big ADD COLUMN extra INT DEFAULT 7;
UPDATE big SET name = 'after' WHERE id = 3;
DELETE FROM big WHERE id = 2;
DELETE FROM uk WHERE code = 'a';
TRUNCATE TABLE uk;
INSERT INTO uk VALUES ('a', 9, 'back');
"""
LIMIT = 1200


def _uri(protocol: str, **params: Any) -> str:
    query = {"protocol": protocol, "partition-num": 2, **params}
    if protocol == "canal-json":
        query["enable-tidb-extension"] = "true"
    return "memory://?" + "&".join(f"{k}={v}" for k, v in query.items())


def _toml(
    option: str, storage: Path | None = None, compression: str = "none", raw: bool = False
) -> str:
    lines = [
        "[sink.kafka-config.large-message-handle]",
        f'large-message-handle-option = "{option}"',
        f'large-message-handle-compression = "{compression}"',
    ]
    if storage is not None:
        lines.append(f'claim-check-storage-uri = "{storage.as_uri()}"')
    if raw:
        lines.append("claim-check-raw-value = true")
    return "\n".join(lines)


def run(
    uri: str, toml: str | None, expect: Path | None = None, script: str = SCRIPT
) -> tuple[Any, MemorySink]:
    feed = changefeed(uri, toml)
    engine = Engine(EngineConfig())
    sink = MemorySink()
    pipeline = Pipeline(feed, sink)
    recorder = None
    if expect is not None:
        recorder = pipeline.observer = Recorder(
            expect, engine.upstream.table_state, pipeline.replicates, True
        )
    pipeline.run(engine.run(split_script(script.splitlines(keepends=True), "t.sql")))
    if recorder is not None:
        recorder.close()
    return feed, sink


def rows(feed: Any, sink: MemorySink, upstream: Upstream | None = None) -> list[DecodedRow]:
    decoder = decoder_for(feed.codec, upstream)
    return [
        event
        for record in sink.records()
        for event in decoder.decode(record.key, record.value)
        if isinstance(event, DecodedRow)
    ]


def essence(row: DecodedRow) -> tuple[Any, ...]:
    return (row.kind, row.schema, row.table, row.commit_ts, row.columns, row.pre_columns)


@pytest.fixture(scope="module")
def reference() -> dict[str, list[tuple[Any, ...]]]:
    """Every protocol's rows with no size limit to speak of."""
    out = {}
    for protocol in PROTOCOLS:
        feed, sink = run(_uri(protocol), None)
        out[protocol] = sorted(map(essence, rows(feed, sink)), key=repr)
    return out


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    ("option", "compression"),
    [
        ("handle-key-only", "none"),
        ("handle-key-only", "snappy"),
        ("claim-check", "none"),
        ("claim-check", "lz4"),
        ("claim-check", "snappy"),
    ],
)
def test_large_rows_come_back_whole(
    tmp_path: Path,
    reference: dict[str, list[tuple[Any, ...]]],
    protocol: str,
    option: str,
    compression: str,
) -> None:
    storage = tmp_path / "claims"
    feed, sink = run(
        _uri(protocol, **{"max-message-bytes": LIMIT}),
        _toml(option, storage, compression),
        expect=tmp_path / "expect",
    )
    assert all(len(r.key or b"") + len(r.value or b"") + 36 <= LIMIT for r in sink.records())
    sent = rows(feed, sink)  # as sent: the large ones carry their handle key only
    flagged = (
        [r for r in sent if r.extra.get("onlyHandleKey")] if option == "handle-key-only" else []
    )
    claimed = sorted(p.name for p in storage.glob("*.json")) if storage.exists() else []
    # big 2 and 3 inserted, big 1 and 2 updated, big 3 updated after the ALTER, big 2
    # deleted (a delete sends its old row whole), uk 'a' inserted, updated and deleted
    large_rows = 9
    assert len(flagged) + len(claimed) == large_rows
    upstream = Upstream(ClaimStorage(storage.as_uri()), History(tmp_path / "expect"))
    whole = rows(feed, sink, upstream)
    assert sorted(map(essence, whole), key=repr) == reference[protocol]
    if option == "claim-check":
        locations = sorted(
            r.extra["claimCheckLocation"].rsplit("/", 1)[1]
            for r in whole
            if r.extra.get("claimCheckLocation")
        )
        assert locations == claimed
    else:
        assert sum(bool(r.extra.get("upstream")) for r in whole) == large_rows


def _big_insert(protocol: str, params: dict[str, Any], toml: str) -> tuple[Any, MemorySink]:
    script = f"CREATE TABLE big (id INT PRIMARY KEY, body BLOB);\nINSERT INTO big VALUES (2, {_blob(7, 600)});\n"
    return run(_uri(protocol, **params), toml, script=script)


def _rows_of(sink: MemorySink) -> list[Any]:
    return [
        r
        for r in sink.records()
        if r.value and (b'"isDdl":false' in r.value or r.key and b'"t":1' in r.key)
    ]


def test_canal_json_handle_key_only_bytes() -> None:
    feed, sink = _big_insert("canal-json", {"max-message-bytes": 500}, _toml("handle-key-only"))
    (record,) = [r for r in sink.records() if b'"type":"INSERT"' in (r.value or b"")]
    message = orjson.loads(record.value or b"")
    ts = message["_tidb"]["commitTs"]
    # canal_json_row_event_encoder.go newJSONMessageForDML with messageTooLarge
    assert record.value == (
        b'{"id":0,"database":"test","table":"big","pkNames":["id"],"isDdl":false,"type":"INSERT",'
        b'"es":%d,"ts":%d,"sql":"","sqlType":{"id":4},"mysqlType":{"id":"int"},"old":null,'
        b'"data":[{"id":"2"}],"_tidb":{"commitTs":%d,"onlyHandleKey":true}}'
        % (message["es"], message["ts"], ts)
    )
    assert record.key is None


def test_canal_json_claim_check_file_and_message(tmp_path: Path) -> None:
    storage = tmp_path / "cc"
    feed, sink = _big_insert(
        "canal-json", {"max-message-bytes": 500}, _toml("claim-check", storage)
    )
    (record,) = [r for r in sink.records() if b'"type":"INSERT"' in (r.value or b"")]
    message = orjson.loads(record.value or b"")
    (path,) = storage.iterdir()
    assert message["_tidb"] == {
        "commitTs": message["_tidb"]["commitTs"],
        "claimCheckLocation": f"{storage.as_uri()}/{path.name}",
    }
    assert message["data"] == [{"id": "2"}] and message["sqlType"] == {"id": 4}
    # claim_check.go WriteMessage: encoding/json of ClaimCheckMessage, a nil key as null
    content = orjson.loads(path.read_bytes())
    assert list(content) == ["key", "value"] and content["key"] is None
    whole = orjson.loads(base64.b64decode(content["value"]))
    assert whole["_tidb"] == {"commitTs": message["_tidb"]["commitTs"]}
    assert set(whole["data"][0]) == {"id", "body"}
    assert path.name.endswith(".json") and len(path.stem) == 36 and path.stem[14] == "4"


def test_canal_json_claim_check_raw_value(tmp_path: Path) -> None:
    storage = tmp_path / "cc"
    toml = _toml("claim-check", storage, "snappy", raw=True)
    feed, sink = _big_insert("canal-json", {"max-message-bytes": 500}, toml)
    (path,) = storage.iterdir()
    whole = orjson.loads(
        large.decompress("snappy", path.read_bytes(), "canal-json")
    )  # the value alone
    assert set(whole["data"][0]) == {"id", "body"}
    upstream = Upstream(ClaimStorage(storage.as_uri()), None)
    (row,) = [r for r in rows(feed, sink, upstream) if r.kind == "insert"]
    assert set(row.columns or {}) == {"id", "body"}


@pytest.mark.parametrize(
    ("profile", "tail"),
    [
        ("v8.5", b',"rid":2,"t":1,"ccl":"%s"}'),
        ("new-arch", b',"t":1,"ohk":true,"ohk":false,"ccl":"%s"}'),  # codec.go: ohk written twice
    ],
)
def test_open_protocol_claim_check_key_and_file(tmp_path: Path, profile: str, tail: bytes) -> None:
    storage = tmp_path / "cc"
    params = {"max-message-bytes": 500, "ticdc-version": profile}
    feed, sink = _big_insert("open-protocol", params, _toml("claim-check", storage))
    (record,) = [r for r in sink.records() if b'"t":1' in (r.key or b"")]
    (path,) = storage.iterdir()
    location = f"{storage.as_uri()}/{path.name}".encode()
    key = (record.key or b"")[16:]
    assert key.startswith(b'{"ts":') and key.endswith(
        b',"scm":"test","tbl":"big"' + tail % location
    )
    assert (record.value or b"")[8:] == b'{"u":{"id":{"t":3,"h":true,"f":11,"v":2}}}'
    # the file holds the row as a record of its own: u64be(1) + framed key, framed value
    content = orjson.loads(path.read_bytes())
    framed_key, framed_value = (base64.b64decode(content[k]) for k in ("key", "value"))
    assert framed_key[:8] == b"\0\0\0\0\0\0\0\1" and b'"ccl"' not in framed_key
    assert b'"body"' in framed_value


def test_open_protocol_handle_key_only_key() -> None:
    feed, sink = _big_insert("open-protocol", {"max-message-bytes": 500}, _toml("handle-key-only"))
    (record,) = [r for r in sink.records() if b'"t":1' in (r.key or b"")]
    assert (record.key or b"").endswith(b',"scm":"test","tbl":"big","rid":2,"t":1,"ohk":true}')


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_size_arithmetic_at_the_boundary(protocol: str) -> None:
    """TiCDC's limit is inclusive: a record of exactly max-message-bytes goes whole."""
    feed, sink = _big_insert(protocol, {}, _toml("handle-key-only"))
    (record,) = [r for r in sink.records() if b'"body"' in (r.value or b"")]
    if protocol == "canal-json":
        size = len(record.value or b"") + 36  # Message.Length()
    else:  # len(k) + len(v) + MaxRecordOverhead + 16 + 8
        size = len(record.key or b"") + len(record.value or b"") + 36
    for limit, whole in ((size, True), (size - 1, False)):
        _, again = _big_insert(protocol, {"max-message-bytes": limit}, _toml("handle-key-only"))
        sent = [
            r
            for r in again.records()
            if r.value and len(r.value) > 8 and b'"t":2' not in (r.key or b"")
        ]
        assert any(b'"body"' in (r.value or b"") for r in sent) is whole, limit


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_too_large_without_handling_or_even_as_handle_key(protocol: str) -> None:
    with pytest.raises(
        EncodeError, match=r"exceeds max-message-bytes 500 \(TiCDC: ErrMessageTooLarge\)"
    ):
        _big_insert(protocol, {"max-message-bytes": 500}, _toml("none"))
    script = f"CREATE TABLE k (id VARCHAR(700) PRIMARY KEY, v INT);\nINSERT INTO k VALUES ('{'k' * 600}', 1);\n"
    with pytest.raises(EncodeError, match="even with only its handle-key columns"):
        run(_uri(protocol, **{"max-message-bytes": 500}), _toml("handle-key-only"), script=script)


@pytest.mark.parametrize("compression", ["snappy", "lz4"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_compression_shrinks_every_value_and_decodes(protocol: str, compression: str) -> None:
    script = "CREATE TABLE t (id INT PRIMARY KEY, doc TEXT);\n" + "".join(
        f"INSERT INTO t VALUES ({i}, '{'abc' * 400}');\n" for i in range(5)
    )
    plain_feed, plain = run(_uri(protocol), None, script=script)
    feed, sink = run(
        _uri(protocol, **{"max-message-bytes": 900}),
        _toml("none", compression=compression),
        script=script,
    )
    assert sorted(map(essence, rows(feed, sink)), key=repr) == sorted(
        map(essence, rows(plain_feed, plain)), key=repr
    )
    decoded = [e for r in sink.records() for e in decoder_for(feed.codec).decode(r.key, r.value)]
    assert any(isinstance(e, DecodedDDL) for e in decoded)
    assert any(isinstance(e, DecodedCheckpoint) for e in decoded)
    assert (
        sum(len(r.value or b"") for r in sink.records())
        < sum(len(r.value or b"") for r in plain.records()) / 2
    )


def test_lz4_is_the_frame_pierrec_writes_by_default() -> None:
    value = large.compress("lz4", b"x" * 100)
    # magic, FLG 0x64 (version 1, independent blocks, content checksum), BD 0x70 (4 MiB
    # blocks), header checksum: pierrec/lz4 v4 NewWriter defaults
    assert value[:7] == bytes.fromhex("04224d186470b9")
    assert lz4.frame.decompress(value) == b"x" * 100
    assert large.decompress("snappy", large.compress("snappy", b"y" * 100), "simple") == b"y" * 100
    with pytest.raises(DecodeError) as refused:
        large.decompress("lz4", b"plain", "simple")
    assert str(refused.value) == (
        "not a simple message: the value is not lz4-compressed"
        " (LZ4F_getFrameInfo failed with code: ERROR_frameType_unknown)"
    )


@pytest.mark.parametrize(
    ("uri", "toml", "message"),
    [
        (
            "memory://?protocol=canal-json",
            _toml("handle-key-only"),
            "but enable-tidb-extension is false",
        ),
        (_uri("open-protocol"), _toml("claim-check"), "the claim-check-storage-uri is empty"),
        (
            _uri("open-protocol"),
            _toml("claim-check", Path("/tmp/cc"), raw=True),
            "raw value is not supported for the open protocol",
        ),
        (
            _uri("open-protocol"),
            _toml("nonsense"),
            "'nonsense' is not one of none, handle-key-only",
        ),
        (
            _uri("open-protocol"),
            _toml("none", compression="zstd"),
            "compression is not supported, got zstd",
        ),
        (
            _uri("open-protocol"),
            "force-replicate = true\n" + _toml("handle-key-only"),
            "force-replicate must be disabled",
        ),
    ],
)
def test_bad_large_message_settings_are_refused(uri: str, toml: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        changefeed(uri, toml)


def test_remote_claim_check_storage_is_named(tmp_path: Path) -> None:
    toml = _toml("claim-check").replace(
        'compression = "none"', 'compression = "none"\nclaim-check-storage-uri = "s3://bucket/cc"'
    )
    with pytest.raises(ConfigError, match="s3:// storage is not simulated"):
        run(_uri("canal-json"), toml)


def test_history_answers_as_of_a_snapshot_and_checkpoints_hold_the_rows(tmp_path: Path) -> None:
    expect = tmp_path / "expect"
    feed, sink = run(_uri("canal-json"), None, expect=expect)
    history = History(expect)
    decoded = rows(feed, sink)
    (insert_a,) = [
        r
        for r in decoded
        if r.table == "uk"
        and r.kind == "insert"
        and (r.columns or {}).get("code") == "a"
        and r.columns
        and r.columns["v"] == 1
    ]
    ts = insert_a.commit_ts
    assert ts is not None
    assert history.row_at("test", "uk", ts - 1, {"code": "a"}) is None
    assert history.row_at("test", "uk", ts, {"code": "a"}) == {"code": "a", "v": 1, "doc": DOC}
    (truncate,) = [
        r
        for r in decoded
        if r.table == "uk" and r.kind == "insert" and r.columns and r.columns["v"] == 9
    ]
    assert truncate.commit_ts is not None
    # TRUNCATE resets the table: 'b' is gone after it, and 'a' is back only with the insert
    assert history.row_at("test", "uk", truncate.commit_ts - 1, {"code": "b"}) is None
    assert history.row_at("test", "uk", truncate.commit_ts, {"code": "a"}) == {
        "code": "a",
        "v": 9,
        "doc": "back",
    }
    (deleted,) = [r for r in decoded if r.kind == "delete" and r.table == "big"]
    assert deleted.commit_ts is not None and deleted.pre_columns is not None
    assert history.row_at(
        "test", "big", deleted.commit_ts - 1, {"id": 2}
    ) == deleted.pre_columns | {"extra": 7}
    assert history.row_at("test", "big", deleted.commit_ts, {"id": 2}) is None
    # each checkpoint's snapshot is what the changelog up to it builds
    checkpoints = sorted(int(p.name.split("-")[1]) for p in expect.glob("checkpoint-*"))
    assert len(checkpoints) >= 5  # two CREATEs, the ALTER, the TRUNCATE, the last commit
    changelog = merged(
        [(r, e) for r in sink.records() for e in decoder_for(feed.codec).decode(r.key, r.value)]
    )
    for ts in checkpoints:
        built = rebuild([e for e in changelog if (e.commit_ts or 0) <= ts])
        snapshot = {
            p.name.removesuffix(".parquet"): _sorted(pq.read_table(p).to_pylist())
            for p in (expect / f"checkpoint-{ts}").glob("*.parquet")
        }
        assert snapshot.get("test.uk") == built.get("test.uk"), ts
    assert snapshot["test.uk"] == [{"code": "a", "v": 9, "doc": "back"}]


def test_cli_round_trip_with_expect_and_upstream(tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_text(SCRIPT)
    config = tmp_path / "c.toml"
    config.write_text(_toml("handle-key-only"))
    sink = f"jsonl://{tmp_path}/out?protocol=open-protocol&max-message-bytes={LIMIT}"
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "replay",
            str(script),
            "--sink-uri",
            sink,
            "--config",
            str(config),
            "--expect",
            str(tmp_path / "exp"),
            "--expect-checkpoints",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "exp" / "history").is_dir()
    assert list((tmp_path / "exp").glob("checkpoint-*/test.big.parquet"))
    bare = runner.invoke(app, ["decode", sink, "--config", str(config)])
    assert bare.exit_code == 0, bare.output
    lines = [orjson.loads(line) for line in bare.stdout.splitlines()]
    assert sum(bool(line.get("onlyHandleKey")) for line in lines) == 9
    whole = runner.invoke(
        app, ["decode", sink, "--config", str(config), "--upstream", str(tmp_path / "exp")]
    )
    assert whole.exit_code == 0, whole.output
    lines = [orjson.loads(line) for line in whole.stdout.splitlines()]
    assert sum(bool(line.get("upstream")) for line in lines) == 9
    wrong = runner.invoke(
        app, ["decode", sink, "--config", str(config), "--upstream", str(tmp_path)]
    )
    assert wrong.exit_code == 1 and "no history/ directory" in wrong.output


def _random_script(seed: int) -> str:
    """Inserts, updates (key-changing ones too) and deletes of rows whose sizes straddle
    the limit, on a PK table and a unique-key table, with a DDL in between."""
    rng = random.Random(seed)
    lines = [
        "CREATE TABLE p (id INT PRIMARY KEY, a VARCHAR(3000), b BLOB);",
        "CREATE TABLE q (k VARCHAR(20) NOT NULL, c TEXT, UNIQUE KEY (k));",
    ]
    ids: list[int] = []
    for step in range(40):
        size = rng.choice([10, 300, 900, 1500])
        if rng.random() < 0.5 or not ids:
            new = step + 1
            ids.append(new)
            lines.append(
                f"INSERT INTO p (id, a, b) VALUES ({new}, '{_text(seed * 100 + step, size)}', {_blob(step, size // 2)});"
            )
            lines.append(f"INSERT INTO q VALUES ('k{new}', '{_text(step, size)}');")
        elif rng.random() < 0.6:
            target = rng.choice(ids)
            lines.append(f"UPDATE p SET a = '{_text(step, size)}' WHERE id = {target};")
            lines.append(f"UPDATE q SET c = '{_text(step + 1, size)}' WHERE k = 'k{target}';")
        elif rng.random() < 0.5:
            target = ids.pop(rng.randrange(len(ids)))
            lines.append(f"DELETE FROM p WHERE id = {target};")
            lines.append(f"DELETE FROM q WHERE k = 'k{target}';")
        else:
            target = rng.choice(ids)
            moved = 10_000 + step
            ids[ids.index(target)] = moved
            lines.append(f"UPDATE p SET id = {moved} WHERE id = {target};")  # DELETE + INSERT
        if step == 20:
            lines.append("ALTER TABLE p ADD COLUMN z INT DEFAULT 3;")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", range(4))
def test_random_large_rows_come_back_whole(tmp_path: Path, seed: int) -> None:
    script = _random_script(seed)
    for protocol in PROTOCOLS:
        feed, sink = run(_uri(protocol), None, script=script)
        want = sorted(map(essence, rows(feed, sink)), key=repr)
        for option, compression in (("handle-key-only", "lz4"), ("claim-check", "snappy")):
            where = tmp_path / f"{protocol}-{option}"
            storage = where / "claims"
            feed, sink = run(
                _uri(protocol, **{"max-message-bytes": LIMIT}),
                _toml(option, storage, compression),
                expect=where / "expect",
                script=script,
            )
            upstream = Upstream(ClaimStorage(storage.as_uri()), History(where / "expect"))
            resolved = rows(feed, sink, upstream)
            assert sorted(map(essence, resolved), key=repr) == want, (protocol, option)
            made_whole = [r for r in resolved if {"upstream", "claimCheckLocation"} & set(r.extra)]
            assert len(made_whole) >= 10, (protocol, option)
