"""The storage sink (file://, s3://) as a served changefeed and from the Python API: its files
flush on the simulated clock as in a replay, the service's data-directory guard confines them,
and what `records()`, `events()` and `/messages` show of them."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from support_s3 import S3Server
from test_storage import CSV, SCRIPT
from ticdc_sim.api import Simulator
from ticdc_sim.cli import app as cli
from ticdc_sim.errors import ConfigError
from ticdc_sim.service.app import create_app
from ticdc_sim.service.settings import Settings

TEXT = {"content-type": "text/plain"}
# the script's schema on the service's default database, each row a transaction of its own
SERVED = SCRIPT.replace("CREATE DATABASE shop; USE shop;\n", "CREATE DATABASE shop; USE shop;")


def files(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_a_served_storage_feed_writes_what_replay_writes(tmp_path: Path) -> None:
    """The script through `ticdc-sim replay`, and over HTTP into a file:// changefeed: the
    same files byte for byte, the flushes on the simulated clock (the script's sleeps); the
    last row waits for the next flush, or the changefeed's end."""
    (tmp_path / "cf.toml").write_text(CSV)
    script = tmp_path / "s.sql"
    script.write_text(SCRIPT)
    uri = f"{(tmp_path / 'cli').as_uri()}?protocol=csv"
    replayed = CliRunner().invoke(
        cli, ["replay", str(script), "--sink-uri", uri, "--config", str(tmp_path / "cf.toml")]
    )
    assert replayed.exit_code == 0, replayed.output
    expected = files(tmp_path / "cli")
    settings = Settings(
        data_dir=tmp_path / "data",
        mysql_port=0,
        default_sink_uri="file://storage?protocol=csv",
        default_config=tmp_path / "cf.toml",
    )
    served = tmp_path / "data" / "storage"
    with TestClient(create_app(settings)) as client:
        done = client.post("/sim/v1/clusters/default/sql", content=SCRIPT, headers=TEXT)
        assert done.status_code == 200 and done.json()["ok"], done.text
        data = sorted(n for n in expected if n.endswith(".csv"))
        assert sorted(n for n in files(served) if n.endswith(".csv")) == data[:-1]
        page = client.get("/sim/v1/clusters/default/changefeeds/default/messages?limit=1000")
        assert page.status_code == 200, page.text
        messages = page.json()["messages"]
        # a record per file written: its path the topic and key, its bytes the value
        assert {m["topic"] for m in messages} == set(files(served))
        written = [m for m in messages if m["topic"].endswith(".csv")]
        assert [base64.b64decode(m["value"]) for m in written] == [
            expected[m["topic"]] for m in written
        ]
        decoded = [d["type"] for m in written for d in m["decoded"]]
        assert decoded == ["insert", "insert", "update", "insert"]
    assert files(served) == expected


def test_the_guard_confines_file_and_allows_s3_endpoints_by_name(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", mysql_port=0, default_cluster=True)
    with TestClient(create_app(settings)) as client:

        def create(uri: str) -> tuple[int, str]:
            answer = client.post(
                "/api/v2/changefeeds", json={"changefeed_id": "cf", "sink_uri": uri}
            )
            return answer.status_code, answer.json().get("error_msg", "")

        outside = tmp_path / "elsewhere"
        assert create(f"file://{outside}?protocol=csv") == (
            403,
            f"file:// directory '{outside}' is outside the data directory"
            f" {(tmp_path / 'data').resolve()}",
        )
        assert create("s3://bucket/p?protocol=csv&endpoint=http://10.0.0.1:9000") == (
            403,
            "s3 endpoint http://10.0.0.1:9000 is not allowed here (the operator lists endpoints"
            " in TICDC_SIM_S3_ALLOW)",
        )
        assert create("s3://bucket/p?protocol=csv") == (
            403,
            "s3 endpoint aws is not allowed here (the operator lists endpoints in"
            " TICDC_SIM_S3_ALLOW)",
        )
        assert create("file://inside?protocol=csv")[0] == 200
        assert (tmp_path / "data" / "inside").is_dir()


def test_a_served_s3_feed_at_an_allowed_endpoint(s3: S3Server, tmp_path: Path) -> None:
    bucket = s3.bucket("served")
    settings = Settings(
        data_dir=tmp_path / "data",
        mysql_port=0,
        s3_allow=[s3.endpoint],
        default_sink_uri=s3.uri(bucket, "feed"),
    )
    with TestClient(create_app(settings)) as client:
        done = client.post(
            "/sim/v1/clusters/default/sql",
            content="CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);",
            headers=TEXT,
        )
        assert done.json()["ok"], done.text
        # a prefix inside another changefeed's is its output: refused, not cleared
        inside = {"changefeed_id": "cf", "sink_uri": s3.uri(bucket, "feed/sub")}
        refused = client.post("/api/v2/changefeeds", json=inside)
        assert (refused.status_code, refused.json()) == (
            409,
            {
                "error_msg": f"s3://{bucket}/feed is written by changefeed default/default: a"
                " sink directory has one changefeed",
                "error_code": "SIM:ErrSinkInUse",
            },
        )
    written = s3.objects(bucket, "feed")  # the service's stop closed the feed: all written
    assert sorted(written) == [
        "metadata",
        f"test/t/{min(n.split('/')[2] for n in written if n.count('/') > 3)}"
        "/2024-04-11/CDC00000000000000000001.csv",
        f"test/t/{min(n.split('/')[2] for n in written if n.count('/') > 3)}"
        "/2024-04-11/meta/CDC.index",
        next(n for n in written if n.startswith("test/t/meta/schema_")),
    ]
    assert written[next(n for n in written if n.endswith(".csv"))] == b'"I","t","test",1\r\n'


def test_the_python_api_reads_the_files_written_so_far(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with Simulator() as sim:
        feed = sim.changefeed(f"{out.as_uri()}?protocol=csv")
        sim.execute("CREATE TABLE test.t (id INT PRIMARY KEY, v VARCHAR(10));")
        sim.execute("INSERT INTO test.t VALUES (1, 'a');")
        # within the flush interval: the row is buffered, no data file yet
        assert [e["type"] for e in feed.events()] == ["ddl", "checkpoint"]
        sim.execute("DO SLEEP(6); INSERT INTO test.t VALUES (2, 'b');")
        found = feed.events()
        assert [(e["type"], e["topic"].rsplit("/", 1)[-1]) for e in found] == [
            ("ddl", found[0]["topic"].rsplit("/", 1)[-1]),
            ("insert", "CDC00000000000000000001.csv"),
            ("checkpoint", "metadata"),
        ]
        assert found[1]["columns"] == {"id": 1, "v": "a"}
        assert feed.events(topic="test/t/meta/") == found[:1]
        # records: each file as it was written, its path the topic
        assert {r.topic for r in feed.records()} == {
            "metadata",
            found[0]["topic"],
            found[1]["topic"],
            found[1]["topic"].rsplit("/", 1)[0] + "/meta/CDC.index",
        }
        assert not out.exists()  # a run's files move into place at its close
    assert [e["type"] for e in feed.events()] == ["ddl", "insert", "insert", "checkpoint"]
    assert sorted(n for n in files(out) if n.endswith(".csv")) == [
        found[1]["topic"],
        found[1]["topic"].replace("01.csv", "02.csv"),
    ]


def test_two_feeds_of_a_simulator_keep_apart(s3: S3Server, tmp_path: Path) -> None:
    bucket = s3.bucket("apart")
    with Simulator() as sim:
        sim.changefeed(s3.uri(bucket, "a"))
        with pytest.raises(ConfigError) as raised:
            sim.changefeed(s3.uri(bucket, "a/b"))
        assert str(raised.value) == (
            f"sink URI {s3.uri(bucket, 'a/b')!r}: changefeed feed-1 writes s3://{bucket}/a;"
            " give each changefeed an S3 prefix of its own, neither inside the other"
        )
        sim.changefeed(s3.uri(bucket, "ab"))  # a sibling prefix is apart
        sim.changefeed(f"{tmp_path.as_uri()}?protocol=csv")
        with pytest.raises(ConfigError, match="give each changefeed a directory"):
            sim.changefeed(f"{(tmp_path / 'in').as_uri()}?protocol=csv")


@pytest.mark.parametrize("scheme", ["file", "s3"])
def test_a_failed_storage_replay_says_what_it_wrote_and_where(
    scheme: str, s3: S3Server, tmp_path: Path
) -> None:
    """Not "records per topic: none": the data files, and where the files stay (file://
    leaves DIR.partial; s3:// has no staging)."""
    script = tmp_path / "b.sql"
    failing = "INSERT INTO t (id) VALUES (2);\n"
    script.write_text(
        "CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\nDO SLEEP(6);\n"
        "INSERT INTO t VALUES (2);\n" + failing
    )
    bucket = s3.bucket("failed")
    if scheme == "s3":
        uri, where = s3.uri(bucket, "fb"), f"stay in s3://{bucket}/fb"
    else:
        uri, where = f"{(tmp_path / 'fb').as_uri()}?protocol=csv", f"are in {tmp_path}/fb.partial"
    result = CliRunner().invoke(cli, ["replay", str(script), "--sink-uri", uri])
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        f"the 5 files written before the error {where}\n"
        "2 rows, 1 DDL, 2 checkpoints -> 2 data files\n"
        f"error: {script}:5:1: ERROR 1062 (23000): Duplicate entry '2' for key 't.PRIMARY'\n"
        "  in: INSERT INTO t (id) VALUES (2)\n"
    )
    if scheme == "s3":
        assert len(s3.objects(bucket, "fb")) == 5
    else:
        assert sum(1 for p in (tmp_path / "fb.partial").rglob("*") if p.is_file()) == 5


def test_a_storage_replay_refused_at_its_first_file_says_nothing_was_written(
    s3: S3Server, tmp_path: Path
) -> None:
    script = tmp_path / "c.sql"
    script.write_text("CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\n")
    bucket = s3.bucket("refused")
    uri = s3.uri(bucket, "fb", "protocol=csv&storage-class=WEIRD")
    result = CliRunner().invoke(cli, ["replay", str(script), "--sink-uri", uri])
    assert result.exit_code == 1, result.output
    first, summary, error = result.stderr.splitlines()[:3]
    assert (first, summary) == (
        f"no file was written to s3://{bucket}/fb before the error",
        "0 rows, 0 DDL, 0 checkpoints -> 0 data files",
    )
    assert error.startswith(f"error: s3://{bucket}/fb/test/t/meta/schema_")
    assert error.endswith(
        ": PutObject failed: S3 said InvalidStorageClass: The storage class you specified is"
        " not valid (HTTP 400)"
    )
