"""s3://BUCKET/PREFIX: the storage sink's layout in a bucket, byte for byte what file:// writes,
through boto3 against moto's S3 server on loopback (tests/support_s3.py); decode reads it back;
every failure names the bucket and key and what S3 said."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from support_s3 import KEYS, S3Server
from test_storage import CSV, SCRIPT
from ticdc_sim.cli import app
from ticdc_sim.config import S3Location, changefeed, s3_location
from ticdc_sim.errors import ConfigError, SimError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import split_script
from ticdc_sim.pipeline import Pipeline
from ticdc_sim.sinks import open_sink
from ticdc_sim.sinks.store import S3Store


def replay(tmp_path: Path, uri: str, *extra: str) -> tuple[int, str]:
    script, config = tmp_path / "s.sql", tmp_path / "cf.toml"
    script.write_text(SCRIPT)
    config.write_text(CSV)
    done = CliRunner().invoke(
        app, ["replay", str(script), "--sink-uri", uri, "--config", str(config), *extra]
    )
    return done.exit_code, done.output


def files(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in directory.rglob("*")
        if p.is_file()
    }


@pytest.mark.parametrize("protocol", ["csv", "canal-json"])
def test_replay_to_s3_is_replay_to_file_file_by_file(
    s3: S3Server, tmp_path: Path, protocol: str
) -> None:
    bucket = s3.bucket(f"same-{protocol}")
    code, output = replay(tmp_path, s3.uri(bucket, "cdc/out", f"protocol={protocol}"))
    assert code == 0, output
    code, output = replay(tmp_path, f"{(tmp_path / 'out').as_uri()}?protocol={protocol}")
    assert code == 0, output
    on_disk = files(tmp_path / "out")
    assert len(on_disk) == 10
    assert s3.objects(bucket, "cdc/out") == on_disk


def test_decode_reads_s3_as_it_reads_file(s3: S3Server, tmp_path: Path) -> None:
    bucket = s3.bucket("decode-me")
    uri = s3.uri(bucket, "out")
    assert replay(tmp_path, uri)[0] == 0
    assert replay(tmp_path, f"{(tmp_path / 'out').as_uri()}?protocol=csv")[0] == 0
    config = str(tmp_path / "cf.toml")
    from_s3 = CliRunner().invoke(app, ["decode", uri, "--config", config])
    assert from_s3.exit_code == 0, from_s3.output
    from_file = CliRunner().invoke(
        app, ["decode", f"{(tmp_path / 'out').as_uri()}?protocol=csv", "--config", config]
    )
    assert from_s3.stdout == from_file.stdout
    kinds = [json.loads(line)["type"] for line in from_s3.stdout.splitlines()]
    assert kinds == [
        *("ddl", "ddl", "insert", "insert", "update", "ddl", "insert", "delete", "checkpoint"),
    ]
    empty = CliRunner().invoke(app, ["decode", s3.uri(bucket, "ouT")])
    assert empty.output == f"error: storage source: s3://{bucket}/ouT holds no objects\n"
    # a row that does not parse is named by its object
    wrong = CliRunner().invoke(app, ["decode", uri])
    assert wrong.exit_code == 1
    assert f"error: s3://{bucket}/out/shop/t/" in wrong.output
    assert "CDC00000000000000000001.csv offset 0: not a csv message" in wrong.output


def test_a_missing_bucket_is_said_before_anything_is_written(s3: S3Server, tmp_path: Path) -> None:
    code, output = replay(tmp_path, s3.uri("no-such-bucket", "out"))
    assert code == 1
    assert (
        "error: s3://no-such-bucket/out: HeadBucket failed: S3 said NoSuchBucket: the bucket"
        " does not exist (HTTP 404)\n"
    ) in output
    decoded = CliRunner().invoke(app, ["decode", s3.uri("no-such-bucket", "out")])
    assert decoded.output == (
        "error: s3://no-such-bucket/out: HeadBucket failed: S3 said NoSuchBucket: the bucket"
        " does not exist (HTTP 404)\n"
    )


def test_a_refused_endpoint(tmp_path: Path) -> None:
    pytest.importorskip("boto3", reason="the s3:// sink's client; CI installs it")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    code, output = replay(tmp_path, f"s3://bucket/out?protocol=csv&endpoint={endpoint}&{KEYS}")
    assert code == 1
    assert (
        f"error: s3://bucket/out: HeadBucket failed: cannot connect to the S3 endpoint"
        f" {endpoint}: Connection refused\n"
    ) in output


def test_a_failed_put_mid_run_is_reported(s3: S3Server) -> None:
    """The bucket gone while the changefeed runs: the next file's PutObject fails, said with
    its key and S3's answer, and the run ends with it (nothing is dropped silently)."""
    bucket = s3.bucket("goes-away")
    feed = changefeed(s3.uri(bucket, "out"))
    pipeline = Pipeline(feed, open_sink(feed.sink, feed=feed))
    events = list(Engine().run(split_script(SCRIPT.splitlines(keepends=True), "t.sql")))
    pipeline.push(events[0])  # CREATE DATABASE: its schema file is written
    client = s3.client()
    for key in s3.objects(bucket, "out"):
        client.delete_object(Bucket=bucket, Key=f"out/{key}")
    client.delete_bucket(Bucket=bucket)
    with pytest.raises(SimError) as raised:
        pipeline.run(events[1:])
    assert str(raised.value).startswith(f"s3://{bucket}/out/shop/t/meta/schema_")
    assert str(raised.value).endswith(
        ".json: PutObject failed: S3 said NoSuchBucket: The specified bucket does not exist"
        " (HTTP 404)"
    )


def test_access_denied_and_timeouts_are_said_with_the_key(s3: S3Server) -> None:
    """What boto3 raises, as the sink says it: S3's code and message, or the timeout."""
    from botocore.exceptions import ClientError, ReadTimeoutError

    store = S3Store(s3_location(changefeed(s3.uri(s3.bucket("denied"), "out")).sink))

    def denied() -> None:
        raise ClientError(
            {
                "Error": {"Code": "AccessDenied", "Message": "Access Denied"},
                "ResponseMetadata": {"HTTPStatusCode": 403},
            },
            "PutObject",
        )

    def stalled() -> None:
        raise ReadTimeoutError(endpoint_url=f"{s3.endpoint}/denied/out/metadata")

    with pytest.raises(SimError) as raised:
        store._call("PutObject", "metadata", denied)
    assert str(raised.value) == (
        "s3://denied/out/metadata: PutObject failed: S3 said AccessDenied: Access Denied (HTTP 403)"
    )
    with pytest.raises(SimError) as raised:
        store._call("PutObject", "metadata", stalled)
    assert str(raised.value) == (
        "s3://denied/out/metadata: PutObject failed: timed out (Read timeout on endpoint URL:"
        f' "{s3.endpoint}/denied/out/metadata")'
    )


def test_a_prefix_with_output_is_replaced_only_when_asked(s3: S3Server, tmp_path: Path) -> None:
    bucket = s3.bucket("rerun")
    uri = s3.uri(bucket, "out")
    assert replay(tmp_path, uri)[0] == 0
    before = s3.objects(bucket, "out")
    code, output = replay(tmp_path, uri)
    assert code == 1
    assert (
        f"error: s3 sink: s3://{bucket}/out is not empty; pass --overwrite to replace it" in output
    )
    s3.client().put_object(Bucket=bucket, Key="out/shop/t/9/CDC1.csv", Body=b"stale")
    code, output = replay(tmp_path, uri, "--overwrite")
    assert code == 0, output
    assert s3.objects(bucket, "out") == before  # the stale object is gone
    s3.client().put_object(Bucket=bucket, Key="out/notes.txt", Body=b"mine")
    code, output = replay(tmp_path, uri, "--overwrite")
    assert code == 1
    assert (
        f"error: s3 sink: s3://{bucket}/out holds s3://{bucket}/out/notes.txt, which is not"
        " ticdc-sim output; refusing to overwrite it"
    ) in output


def test_credentials_from_the_environment(
    s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-env")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "from-env")
    bucket = s3.bucket("env-keys")
    code, output = replay(tmp_path, f"s3://{bucket}/x?protocol=csv&endpoint={s3.endpoint}")
    assert code == 0, output
    assert "metadata" in s3.objects(bucket, "x")


def test_an_assumed_role_writes(s3: S3Server, tmp_path: Path) -> None:
    """role-arn: STS's AssumeRole at the same endpoint (aws-sdk-go's session-wide endpoint),
    the files written with the role's keys."""
    bucket = s3.bucket("by-role")
    role = "arn:aws:iam::123456789012:role/cdc"
    code, output = replay(tmp_path, s3.uri(bucket, "r") + f"&role-arn={role}&external-id=ext-1")
    assert code == 0, output
    assert "metadata" in s3.objects(bucket, "r")
    code, output = replay(tmp_path, s3.uri(bucket, "q") + f"&role-arn={role}&external-id=x")
    assert code == 1
    assert (
        f"error: s3://{bucket}/q: AssumeRole {role} failed: Parameter validation failed:"
        " Invalid length for parameter ExternalId, value: 1, valid min length: 2\n"
    ) in output


def test_the_bucket_region_must_be_the_one_asked_for(s3: S3Server) -> None:
    bucket = s3.bucket("in-europe", region="eu-west-1")
    feed = changefeed(s3.uri(bucket, "p") + "&region=us-west-2")
    with pytest.raises(ConfigError) as raised:
        open_sink(feed.sink, feed=feed)
    assert str(raised.value) == (
        "s3 bucket and region are not matched, bucket=in-europe, input region=us-west-2,"
        " real region=eu-west-1"
    )
    feed = changefeed(s3.uri(bucket, "p"))  # unasked: the bucket's own
    open_sink(feed.sink, feed=feed).close()
    assert "metadata" not in s3.objects(bucket, "p")  # nothing replicated, no checkpoint


def test_messages_do_not_repeat_the_keys() -> None:
    with pytest.raises(ConfigError) as raised:
        changefeed("s3://b/p?protocol=csv&Access_Key=AK&secret_access_key=S+1&regoin=x")
    assert str(raised.value) == (
        "sink URI 's3://b/p?protocol=csv&Access_Key=redacted&secret_access_key=redacted"
        "&regoin=x': unknown parameter 'regoin'"
    )
    with pytest.raises(ConfigError) as raised:
        changefeed("s3://b/p?protocol=csv&access-key=AK&endpoint=minio")
    assert str(raised.value) == (
        "sink URI 's3://b/p?protocol=csv&access-key=redacted&endpoint=minio': scheme not"
        " found in endpoint 'minio'"
    )


def test_without_boto3_the_sink_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # import boto3 raises ImportError
    feed = changefeed("s3://bucket/out?protocol=csv")
    with pytest.raises(ConfigError) as raised:
        open_sink(feed.sink, feed=feed)
    assert str(raised.value) == (
        "the s3:// sink needs boto3, which is not installed (pip install boto3)"
    )


# -- the URI, as TiDB's br/pkg/storage parses it (no server needed); its refusals: test_config.py


def test_the_uri_parameters_map_to_the_client() -> None:
    found = s3_location(
        changefeed(
            "s3://b/a/b/?protocol=csv&Access_Key=AK&secret_access_key=s+e/c=&region=eu-west-1"
            "&endpoint=http://minio:9000/&storage-class=STANDARD_IA&sse=aws:kms"
            "&sse-kms-key-id=k1&acl=private&provider=ceph&role-arn=arn:aws:iam::1:role/r"
            "&external-id=x&session-token=t&object-lock-enabled=true"
        ).sink
    )
    # fields in order; force-path-style on: TiCDC's default for a URI; a + is itself in the
    # secret, as TiCDC reads it (ParseRawURL)
    assert found == S3Location(
        *("b", "a/b", "http://minio:9000", "eu-west-1", "ceph", True, False),
        *("AK", "s+e/c=", "t", "arn:aws:iam::1:role/r", "x"),
        *("STANDARD_IA", "aws:kms", "k1", "private"),
    )
    alibaba = s3_location(changefeed("s3://b?protocol=csv&provider=alibaba").sink)
    assert (alibaba.prefix, alibaba.force_path_style) == ("", False)
    path_style = s3_location(changefeed("s3://b/p?protocol=csv&force-path-style=false").sink)
    assert not path_style.force_path_style
    assert found.url("metadata") == "s3://b/a/b/metadata"
