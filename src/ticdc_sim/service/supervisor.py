"""The service's supervisor: one thread that looks at every changefeed about once a second, as
TiCDC's owner ticks (tiflow cdc/owner/owner.go), so that what happens between requests is seen
and acted on: a Kafka send the brokers refused after the request that made it returned, a
failing changefeed's restart once its backoff has passed (`Feed.tick`)."""

from __future__ import annotations

import logging
import threading

from ticdc_sim.errors import SimError
from ticdc_sim.service.registry import Registry

_LOG = logging.getLogger("ticdc_sim.service")
TICK_S = 1.0  # TiCDC's owner tick
STOP_WAIT_S = 5.0


class Supervisor:
    def __init__(self, registry: Registry, interval_s: float = TICK_S) -> None:
        self.registry = registry
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="supervisor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stops ticking. A tick under way is waited for a few seconds, not for the brokers
        it may be waiting for: the changefeeds close regardless (their own locks order them
        with it), and the thread, a daemon, goes with the process."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(STOP_WAIT_S)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            for cluster in list(self.registry):
                if self._stop.is_set():
                    return
                try:
                    cluster.tick()
                except SimError as e:  # a changefeed's own error is in its state already
                    _LOG.warning("cluster %s: %s", cluster.id, e)
                except Exception:  # the supervisor must outlive a bug, which is logged
                    _LOG.exception("cluster %s: the supervisor's tick failed", cluster.id)
