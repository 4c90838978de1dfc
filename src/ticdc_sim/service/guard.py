"""What a request may make the service touch: files under the data directory only, Kafka
brokers and S3 endpoints on the operator's allow-lists only. Checked before a changefeed is
built."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from ticdc_sim.cluster import TooLarge
from ticdc_sim.config import Changefeed, parse_sink_uri, s3_location, sink_uri_text
from ticdc_sim.errors import SimError
from ticdc_sim.service.settings import Settings
from ticdc_sim.sinks import DIRECTORY_SINKS, place
from ticdc_sim.sinks.claim_check import storage_path

AWS = "aws"  # TICDC_SIM_S3_ALLOW's name of AWS's own endpoint (a URI without endpoint=)


class Forbidden(SimError):
    """A sink outside what the settings allow (403)."""


def inside(root: Path, path: Path, what: str) -> Path:
    """`path` (relative: to `root`) if it stays under `root` once resolved."""
    base = root.resolve()
    found = (base / path).resolve()
    if found != base and base not in found.parents:
        raise Forbidden(f"{what} {str(path)!r} is outside the data directory {base}")
    return found


def sink_uri(text: str, settings: Settings) -> str:
    """The sink URI a changefeed may use: file sinks under the data directory (a relative
    path is taken from it), Kafka only on allowed brokers, S3 only at allowed endpoints."""
    uri = parse_sink_uri(text)
    if uri.scheme in DIRECTORY_SINKS:
        path = inside(settings.data_dir, Path(uri.target), f"{uri.scheme}:// directory")
        return sink_uri_text(uri.scheme, str(path), urlsplit(text.strip()).query)
    if uri.scheme == "kafka":
        hosts = [h.strip() for h in uri.target.split(",") if h.strip()]
        refused = [h for h in hosts if h not in settings.kafka_allow]
        if refused:
            raise Forbidden(
                f"kafka broker {', '.join(refused)} is not allowed here"
                " (the operator lists brokers in TICDC_SIM_KAFKA_ALLOW)"
            )
    if uri.scheme == "s3":
        endpoint = s3_location(uri).endpoint or AWS
        if endpoint not in settings.s3_allow:
            raise Forbidden(
                f"s3 endpoint {endpoint} is not allowed here (the operator lists endpoints in"
                " TICDC_SIM_S3_ALLOW)"
            )
    return text


def directory(checked_uri: str) -> str | None:
    """Where a checked sink URI writes: a file sink's directory, an S3 prefix."""
    return place(parse_sink_uri(checked_uri))


def changefeed(feed: Changefeed, settings: Settings) -> None:
    """What the built changefeed writes besides its sink (claim-check files), and how
    many partitions: every one gets a checkpoint record at each request, and a file."""
    uri = feed.codec.claim_check_storage_uri
    if uri:
        inside(settings.data_dir, storage_path(uri), "claim-check-storage-uri")
    limit = settings.max_partitions
    if feed.partition_num_set and feed.partition_num > limit:
        raise TooLarge(
            f"partition-num {feed.partition_num} is over the {limit} partitions a changefeed"
            " may have here (TICDC_SIM_MAX_PARTITIONS)"
        )
