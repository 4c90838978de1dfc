"""What a request may make the service touch: files under the data directory only, Kafka
brokers, S3 endpoints and schema registries on the operator's allow-lists only (a schema
registry: its own too). Checked before a changefeed is built."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import httpx

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


def schema_registry(feed: Changefeed, settings: Settings) -> None:
    """A changefeed's `schema-registry` (URI, [sink] or replica_config) may be the service's
    own (`http://HOST:PORT/sim/v1/clusters/{cluster}/schema-registry`) or one under a URL of
    TICDC_SIM_SCHEMA_REGISTRY_ALLOW: the service GETs and POSTs to it, checked before it does."""
    url = feed.codec.schema_registry
    if not url:
        return
    try:
        given = _origin_and_path(url)
    except (httpx.InvalidURL, ValueError):
        return  # not a URL: open_registry says so, without a request
    if given is None:
        return
    hosts = (settings.host, "127.0.0.1", "localhost")  # its own address, or loopback's
    if given[0] in {("http", host, settings.port) for host in hosts} and _ours(given[1]):
        return
    for allowed in settings.schema_registry_allow:
        try:
            found = _origin_and_path(allowed)
        except (httpx.InvalidURL, ValueError):
            continue
        if found is not None and given[0] == found[0] and _under(given[1], found[1]):
            return
    raise Forbidden(
        f"schema registry {_without_password(url)} is not allowed here (the operator lists"
        " registries in TICDC_SIM_SCHEMA_REGISTRY_ALLOW; this service's own is"
        f" http://{settings.host}:{settings.port}/sim/v1/clusters/{{cluster}}/schema-registry)"
    )


def _origin_and_path(url: str) -> tuple[tuple[str, str, int], str] | None:
    """((scheme, host, port), path) of an http(s) URL, as compared; None for another one."""
    parsed = httpx.URL(url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return None
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return (parsed.scheme, parsed.host, port), parsed.path.rstrip("/")


def _ours(path: str) -> bool:
    """Whether a path is a cluster's registry (or under it) on the service itself."""
    parts = path.split("/")  # "", "sim", "v1", "clusters", id, "schema-registry", ...
    return (
        len(parts) >= 6
        and parts[1:4] == ["sim", "v1", "clusters"]
        and parts[5] == ("schema-registry")
    )


def _under(path: str, allowed: str) -> bool:
    return path == allowed or path.startswith(allowed + "/")


def _without_password(url: str) -> str:
    parsed = httpx.URL(url.strip())
    hidden = parsed.copy_with(username=parsed.username, password="***")
    return str(hidden) if parsed.password else url.strip()


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
