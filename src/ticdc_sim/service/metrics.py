"""/metrics in Prometheus' text format (prometheus-client): requests and their latency as
they happen; statements, transactions, events and messages read off the clusters at each
scrape, so the engine's hot path pays nothing for them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ticdc_sim.model.tso import physical_ms

if TYPE_CHECKING:
    from ticdc_sim.service.registry import Registry

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

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def watch(self, clusters: Registry) -> None:
        self.registry.register(_Clusters(clusters))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _Clusters(Collector):
    def __init__(self, clusters: Registry) -> None:
        self.clusters = clusters

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        statements = CounterMetricFamily(
            "ticdc_sim_statements", "statements executed", labels=["cluster"]
        )
        errors = CounterMetricFamily(
            "ticdc_sim_statement_errors", "statements that failed", labels=["cluster"]
        )
        transactions = CounterMetricFamily(
            "ticdc_sim_transactions", "transactions committed", labels=["cluster"]
        )
        events = CounterMetricFamily(
            "ticdc_sim_events", "row and DDL events captured", labels=["cluster"]
        )
        messages = CounterMetricFamily(
            "ticdc_sim_messages",
            "records a changefeed sent",
            labels=["cluster", "changefeed", "protocol", "topic", "partition"],
        )
        checkpoint = GaugeMetricFamily(  # as TiCDC's ticdc_owner_checkpoint_ts (owner/metrics.go)
            "ticdc_sim_checkpoint_ts",
            "a changefeed's checkpoint ts: its physical time, in ms",
            labels=["cluster", "changefeed"],
        )
        for cluster in self.clusters:
            statements.add_metric([cluster.id], cluster.statements)
            errors.add_metric([cluster.id], cluster.errors)
            transactions.add_metric([cluster.id], cluster.transactions)
            events.add_metric([cluster.id], cluster.events)
            for feed_id, feed in list(cluster.feeds.items()):
                protocol = feed.changefeed.codec.protocol
                for topic, partitions in feed.log.counts().items():
                    for partition, count in partitions.items():
                        labels = [cluster.id, feed_id, protocol, topic, str(partition)]
                        messages.add_metric(labels, count)
                # a TSO is past float64's exact integers; its physical ms are not
                checkpoint.add_metric([cluster.id, feed_id], physical_ms(feed.checkpoint_ts))
        yield from (statements, errors, transactions, events, messages, checkpoint)
