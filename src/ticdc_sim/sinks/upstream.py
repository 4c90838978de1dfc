"""What `decode` resolves large messages with (`encoders.Upstream`): the claim-check storage of
the changefeed config, and the upstream's history in an `--expect` directory. Apart from
`sinks.expect`, which writes that history with pyarrow: decode without `--upstream` never
imports it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ticdc_sim.errors import DecodeError

if TYPE_CHECKING:
    from ticdc_sim.sinks.claim_check import ClaimStorage
    from ticdc_sim.sinks.expect import History


class Upstream:
    """The claim-check storage and the history of an `--expect` directory, either absent."""

    def __init__(self, claims: ClaimStorage | None, history: History | None) -> None:
        self.claims, self.history = claims, history

    @property
    def has_rows(self) -> bool:
        return self.history is not None

    def read_claim(self, location: str) -> bytes:
        if self.claims is None:
            raise DecodeError(
                f"a claim-check message names {location!r}, but the changefeed config has no"
                " claim-check-storage-uri"
            )
        return self.claims.read(location)

    def row_at(
        self, schema: str, table: str, ts: int, key: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        assert self.history is not None
        return self.history.row_at(schema, table, ts, key)
