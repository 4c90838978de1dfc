"""What every route reaches: the settings, the clusters, the metrics; and the one way a
changefeed gets its sink (checked against the settings first)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request

from ticdc_sim.config import Changefeed
from ticdc_sim.service import guard
from ticdc_sim.service.metrics import Metrics
from ticdc_sim.service.runtime import Cluster, Registry, default_open_sink
from ticdc_sim.service.settings import Settings
from ticdc_sim.sinks import Sink


@dataclass
class State:
    settings: Settings
    registry: Registry
    metrics: Metrics
    ready: bool = False

    def new_cluster(self, cluster_id: str, seed: int) -> Cluster:
        settings = self.settings
        cluster = Cluster(
            cluster_id,
            seed,
            settings.lock_wait_s,
            settings.max_txn_rows,
            settings.history_events,
        )
        return self.registry.add(cluster)

    def checked_uri(self, uri: str) -> str:
        return guard.sink_uri(uri, self.settings)


def feed_sink(state: State) -> Callable[[Changefeed], Sink]:
    def make(feed: Changefeed) -> Sink:
        guard.changefeed(feed, state.settings)
        return default_open_sink(feed)

    return make


def state_of(request: Request) -> State:
    found: State = request.app.state.sim
    return found
