"""A real S3 API on loopback for the s3:// sink's tests: moto's server (`ThreadedMotoServer`,
werkzeug serving moto's S3 over HTTP on a free port), reached by boto3 as any S3 endpoint is;
not moto's in-process mock of boto3. CI installs moto (pyproject's dev extra); without it the
tests that need it are skipped, saying so."""

from __future__ import annotations

import logging
import socket
from dataclasses import dataclass
from typing import Any

KEYS = "access-key=testing&secret-access-key=testing"  # moto takes any keys


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class S3Server:
    endpoint: str
    server: Any

    @classmethod
    def start(cls) -> tuple[S3Server | None, str]:
        try:
            from moto.server import ThreadedMotoServer
        except ImportError as e:
            return None, f"moto[server] is not installed ({e}); CI installs it"
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
        port = _free_port()
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        server.start()
        return cls(f"http://127.0.0.1:{port}", server), ""

    def stop(self) -> None:
        self.server.stop()

    def client(self) -> Any:
        """boto3's own client of the server, to look at what the sink wrote."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )

    def bucket(self, name: str, region: str = "us-east-1") -> str:
        """A new empty bucket (in `region`)."""
        where = {} if region == "us-east-1" else {"LocationConstraint": region}
        self.client().create_bucket(Bucket=name, CreateBucketConfiguration=where)
        return name

    def objects(self, bucket: str, prefix: str) -> dict[str, bytes]:
        """Every object under `prefix`/, by its name below it, read with boto3 alone."""
        client = self.client()
        found = client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/")
        return {
            item["Key"][len(prefix) + 1 :]: client.get_object(Bucket=bucket, Key=item["Key"])[
                "Body"
            ].read()
            for item in found.get("Contents", [])
        }

    def uri(self, bucket: str, prefix: str, query: str = "protocol=csv") -> str:
        return f"s3://{bucket}/{prefix}?{query}&endpoint={self.endpoint}&{KEYS}"
