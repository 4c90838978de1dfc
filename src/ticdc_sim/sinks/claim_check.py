"""The claim-check storage: where rows too large for Kafka go whole (tiflow
`pkg/sink/kafka/claimcheck/claim_check.go`, which writes through TiDB's external storage).

Only `file://` storage is simulated; S3, GCS and Azure URIs are refused by name. A file is
written to a temporary name and renamed, so a reader never sees half of one, and it is in
place before the message naming it is sent, as in TiCDC. TiCDC's consumer reads a location
back from its own storage URI and the location's base name (`filepath.Split`), so a fixture
directory can be moved and still be read.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ticdc_sim.encoders.large import Claim
from ticdc_sim.errors import ConfigError, SimError

_REMOTE = ("s3", "gcs", "gs", "azure", "azblob", "noop")


def storage_path(uri: str) -> Path:
    """The directory of a `file://` claim-check-storage-uri."""
    parts = urlsplit(uri)
    if parts.scheme == "file" and parts.path and not parts.netloc:
        return Path(unquote(parts.path))
    if parts.scheme in _REMOTE:
        raise ConfigError(
            f"claim-check-storage-uri {uri!r}: {parts.scheme}:// storage is not simulated;"
            " use file:///DIR"
        )
    raise ConfigError(f"claim-check-storage-uri {uri!r}: expected file:///DIR")


class ClaimStorage:
    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.root = storage_path(uri)

    def write(self, claims: list[Claim]) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            for claim in claims:
                path = self.root / claim.name
                temporary = path.with_name(f".{claim.name}.tmp")
                temporary.write_bytes(claim.content)
                os.replace(temporary, path)
        except OSError as e:
            raise SimError(f"claim-check storage {self.uri}: {e.strerror}: {e.filename}") from None

    def read(self, location: str) -> bytes:
        """The file a message's claim-check location names, by its base name."""
        name = location.rsplit("/", 1)[-1]
        path = self.root / name
        try:
            return path.read_bytes()
        except OSError as e:
            raise SimError(
                f"claim-check location {location!r}: cannot read {path}: {e.strerror}"
            ) from None
