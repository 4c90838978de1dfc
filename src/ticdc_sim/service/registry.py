"""The service's clusters by id (`Registry`), and how a service's changefeed opens its sink."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from ticdc_sim.cluster import Cluster, Conflict, Heap, NotFound, close_all
from ticdc_sim.config import Changefeed
from ticdc_sim.sinks import Sink, open_sink
from ticdc_sim.sinks.memory import BlackholeSink


class Registry:
    """The service's clusters by id."""

    def __init__(self, limit: int = 64) -> None:
        self.clusters: dict[str, Cluster] = {}
        self.lock = threading.Lock()
        self.limit = limit

    def add(self, cluster: Cluster) -> Cluster:
        with self.lock:
            if cluster.id in self.clusters:
                raise Conflict(
                    f"cluster {cluster.id!r} already exists", "SIM:ErrClusterAlreadyExists"
                )
            if len(self.clusters) >= self.limit:
                raise Conflict(
                    f"the service holds {len(self.clusters)} clusters, the most it may"
                    " (TICDC_SIM_MAX_CLUSTERS); delete one first",
                    "SIM:ErrTooManyClusters",
                )
            self.clusters[cluster.id] = cluster
            return cluster

    def get(self, cluster_id: str) -> Cluster:
        found = self.clusters.get(cluster_id)
        if found is None:
            raise NotFound(
                f"cluster {cluster_id!r} does not exist (POST /sim/v1/clusters creates one)"
            )
        return found

    def remove(self, cluster_id: str) -> None:
        with self.lock:
            cluster = self.get(cluster_id)
            del self.clusters[cluster_id]
        cluster.close()

    def __iter__(self) -> Iterator[Cluster]:
        return iter(list(self.clusters.values()))

    def stop(self) -> None:
        """The service is stopping: every cluster refuses statements from now on."""
        for cluster in self:  # every script stops now, not once the one before it has
            cluster.stopping = True
        for cluster in self:
            cluster.stop()

    def close(self) -> list[str]:
        """Every cluster goes, its sinks flushed and closed; what went where."""
        Heap.release()
        with self.lock:
            clusters, self.clusters = list(self.clusters.values()), {}
        return close_all(((f"cluster {c.id}", c.close) for c in clusters), label=False)


def default_open_sink(
    feed: Changefeed, retain_bytes: int = 0, kafka_queue_bytes: int | None = None
) -> Sink:
    """A service's changefeed runs for as long as the service: file sinks write in place,
    rotate at `file-size` and keep `retain_bytes` at most (0: no cap); Kafka's local queue
    holds `kafka_queue_bytes` (the setting); a memory changefeed's records are kept by its
    log (`FeedLog`, up to TICDC_SIM_RETAIN_*) alone, not a second time, for ever, by a
    MemorySink."""
    if feed.sink.scheme == "memory":
        return BlackholeSink()
    return open_sink(
        feed.sink,
        overwrite=True,
        in_place=True,
        feed=feed,
        retain_bytes=retain_bytes,
        kafka_queue_bytes=kafka_queue_bytes,
    )
