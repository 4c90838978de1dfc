"""/metrics in Prometheus' text format (prometheus-client): requests and their latency as
they happen; statements, transactions, events and messages, each bounded buffer's bytes
(changefeed logs, cluster histories, file sinks' disk), changefeed states and MySQL
connections read off the live objects at each scrape, so the engine's hot path pays nothing
for them; the process's own (RSS, CPU, open files) from prometheus-client's ProcessCollector."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, TypeVar

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ticdc_sim.feed import Feed
from ticdc_sim.model.tso import physical_ms
from ticdc_sim.sinks import OnDisk, place

if TYPE_CHECKING:
    from ticdc_sim.service.mysql import SimServer
    from ticdc_sim.service.registry import Registry

# TiCDC's changefeed states (tiflow cdc/model/changefeed.go FeedState), each a series of
# `ticdc_sim_changefeed_state`: 1 for a changefeed's current one, 0 for the rest
STATES = ("normal", "pending", "warning", "stopped", "failed", "finished")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "ticdc_sim_http_requests",
            "HTTP requests by method, route and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "ticdc_sim_http_request_seconds",
            "HTTP request latency by route",
            ["route"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=self.registry,
        )
        # each app its own registry: two apps in one process (tests) register it once each
        ProcessCollector(registry=self.registry)
        self.mysql: SimServer | None = None  # the MySQL port's server, while it serves

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def watch(self, clusters: Registry) -> None:
        self.registry.register(_Clusters(clusters))
        self.registry.register(_Connections(self))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _Connections(Collector):
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[GaugeMetricFamily]:
        server = self.metrics.mysql
        yield GaugeMetricFamily(
            "ticdc_sim_mysql_connections",
            "clients connected to the MySQL port",
            value=0 if server is None else len(server.connections),
        )


Family = TypeVar("Family", CounterMetricFamily, GaugeMetricFamily)


def _family(kind: type[Family], name: str, text: str, *labels: str) -> Family:
    return kind(name, text, labels=["cluster", *labels])


class _Clusters(Collector):
    def __init__(self, clusters: Registry) -> None:
        self.clusters = clusters

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        count, gauge = CounterMetricFamily, GaugeMetricFamily
        statements = _family(count, "ticdc_sim_statements", "statements executed")
        errors = _family(count, "ticdc_sim_statement_errors", "statements that failed")
        transactions = _family(count, "ticdc_sim_transactions", "transactions committed")
        events = _family(count, "ticdc_sim_events", "row and DDL events captured")
        lock_waits = _family(count, "ticdc_sim_lock_waits", "statements that waited for a row lock")
        deadlocks = _family(count, "ticdc_sim_deadlocks", "deadlocks (error 1213 to a victim)")
        timeouts = _family(
            count, "ticdc_sim_lock_wait_timeouts", "lock waits that timed out (error 1205)"
        )
        history = _family(
            gauge,
            "ticdc_sim_history_bytes",
            "bytes of committed events the cluster keeps for changefeeds starting or resuming"
            " in the past (TICDC_SIM_HISTORY_BYTES bounds them)",
        )
        safepoint = _family(  # a TSO is past float64's exact integers; its physical ms are not
            gauge,
            "ticdc_sim_history_gc_safepoint_ts",
            "the cluster's GC safepoint (a changefeed may start after it): its physical time,"
            " in ms",
        )
        feeds = FeedFamilies()
        for cluster in self.clusters:
            statements.add_metric([cluster.id], cluster.statements)
            errors.add_metric([cluster.id], cluster.errors)
            transactions.add_metric([cluster.id], cluster.transactions)
            events.add_metric([cluster.id], cluster.events)
            lock_waits.add_metric([cluster.id], cluster.lock_waits)
            deadlocks.add_metric([cluster.id], cluster.deadlocks)
            timeouts.add_metric([cluster.id], cluster.lock_wait_timeouts)
            history.add_metric([cluster.id], cluster.history_size)
            safepoint.add_metric([cluster.id], physical_ms(cluster.gc_safepoint))
            for feed_id, feed in list(cluster.feeds.items()):
                feeds.add(cluster.id, feed_id, feed)
        yield from (statements, errors, transactions, events, lock_waits, deadlocks, timeouts)
        yield from (history, safepoint)
        yield from feeds.families()


class FeedFamilies:
    """Each changefeed's series, by cluster and changefeed."""

    def __init__(self) -> None:
        count, gauge = CounterMetricFamily, GaugeMetricFamily
        self.messages = _family(
            count,
            "ticdc_sim_messages",
            "records a changefeed sent (a storage sink's: files it wrote, `topic` its place)",
            "changefeed",
            "protocol",
            "topic",
            "partition",
        )
        # as TiCDC's ticdc_owner_checkpoint_ts (owner/metrics.go)
        self.checkpoint = _family(
            gauge,
            "ticdc_sim_checkpoint_ts",
            "a changefeed's checkpoint ts: its physical time, in ms",
            "changefeed",
        )
        self.state = _family(
            gauge,
            "ticdc_sim_changefeed_state",
            "1 for a changefeed's state (TiCDC's names), 0 for the others",
            "changefeed",
            "state",
        )
        self.retained_bytes = _family(
            gauge,
            "ticdc_sim_feed_retained_bytes",
            "bytes of the records a changefeed keeps for reading (TICDC_SIM_RETAIN_BYTES)",
            "changefeed",
        )
        self.retained_records = _family(
            gauge,
            "ticdc_sim_feed_retained_records",
            "records a changefeed keeps for reading (TICDC_SIM_RETAIN_RECORDS)",
            "changefeed",
        )
        self.dropped = _family(
            count,
            "ticdc_sim_feed_dropped_records",
            "records a changefeed no longer keeps for reading (sent all the same)",
            "changefeed",
        )
        self.disk_bytes = _family(
            gauge,
            "ticdc_sim_sink_disk_bytes",
            "bytes of a file changefeed's output on disk (TICDC_SIM_FILE_RETAIN_BYTES)",
            "changefeed",
        )
        self.disk_files = _family(
            gauge, "ticdc_sim_sink_disk_files", "files of a file changefeed's output", "changefeed"
        )
        self.removed_bytes = _family(
            count,
            "ticdc_sim_sink_removed_bytes",
            "bytes of a file changefeed's oldest files removed to keep under its cap",
            "changefeed",
        )
        self.removed_files = _family(
            count,
            "ticdc_sim_sink_removed_files",
            "a file changefeed's oldest files removed to keep under its cap",
            "changefeed",
        )

    def add(self, cluster: str, feed_id: str, feed: Feed) -> None:
        at = [cluster, feed_id]
        log = feed.log
        protocol = feed.changefeed.codec.protocol
        if log.files:  # a series per file would grow without bound: one for the place
            where = place(feed.changefeed.sink) or "files"
            self.messages.add_metric([*at, protocol, where, "0"], log.total)
        else:
            for topic, partitions in log.counts().items():
                for partition, sent in partitions.items():
                    self.messages.add_metric([*at, protocol, topic, str(partition)], sent)
        # a TSO is past float64's exact integers; its physical ms are not
        self.checkpoint.add_metric(at, physical_ms(feed.checkpoint_ts))
        for state in STATES:
            self.state.add_metric([*at, state], 1 if feed.state == state else 0)
        with log.changed:  # bytes and records of one moment
            self.retained_bytes.add_metric(at, log.bytes)
            self.retained_records.add_metric(at, log.held)
            self.dropped.add_metric(at, log.dropped)
        sink = feed.sink.inner
        if isinstance(sink, OnDisk):
            held, files = sink.disk_usage()
            removed, gone = sink.removed()
            self.disk_bytes.add_metric(at, held)
            self.disk_files.add_metric(at, files)
            self.removed_bytes.add_metric(at, removed)
            self.removed_files.add_metric(at, gone)

    def families(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        yield from (self.messages, self.checkpoint, self.state)
        yield from (self.retained_bytes, self.retained_records, self.dropped)
        yield from (self.disk_bytes, self.disk_files, self.removed_bytes, self.removed_files)
