"""Node load from a metrics source (upstream ``pkg/scheduler/metrics/source``, ``cache.GetMetricsData``).

:class:`PrometheusSource` asks the Prometheus HTTP API (``POST <address>/api/v1/query``, form
fields ``query`` and ``time``, as ``client_golang``'s API client does) two instant queries per
node, upstream's (:data:`CPU_QUERY`, :data:`MEMORY_QUERY`: the node's non-idle CPU time and
``1 - MemAvailable / MemTotal``, in percent, averaged over 10 minutes from node-exporter's
series labelled ``instance="<node>"``), and reads the first sample of a vector answer.

As upstream, a query that fails or answers no vector leaves that figure at 0, and every node
is stamped with the collection time whatever the answers: a Prometheus that is down reads as
idle nodes (docs/differences.md). Every request has a timeout and the whole collection a
deadline, so a slow server delays the next collection, never a scheduling session.

:class:`UsageCollector` runs the source on a thread every ``metrics.interval`` (upstream's
``wait.Until(sc.GetMetricsData, interval)``) and keeps the last collection for the scheduling
loop to take (:meth:`UsageCollector.take`), which sets it on its cache between sessions: the
cache is never written from the collector's thread.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any, Final

from pyvolcano.api.node_usage import NODE_METRICS_PERIOD, NodeUsage
from pyvolcano.conf.metrics import MetricsConfig

__all__ = ["CPU_QUERY", "MEMORY_QUERY", "PrometheusSource", "UsageCollector"]

logger = logging.getLogger(__name__)

CPU_QUERY: Final = ('avg_over_time(clamp_min(100 - (avg by (instance) (rate(node_cpu_seconds_total{{mode="idle",'
                    'instance="{node}"}}[5m])) * 100), 0)[{period}:30s])')
MEMORY_QUERY: Final = ('100*avg_over_time(((1-node_memory_MemAvailable_bytes{{instance="{node}"}}/'
                       'node_memory_MemTotal_bytes{{instance="{node}"}}))[{period}:30s])')
REQUEST_TIMEOUT: Final = 10.0
COLLECTION_DEADLINE: Final = 60.0


class PrometheusSource:
    """Upstream's ``PrometheusMetricsClient`` over the Prometheus HTTP API."""

    def __init__(self, address: str, *, insecure_skip_verify: bool = False, timeout: float = REQUEST_TIMEOUT,
                 deadline: float = COLLECTION_DEADLINE, monotonic: Callable[[], float] = time.monotonic):
        self.url = address.rstrip("/") + "/api/v1/query"
        self.timeout = timeout
        self.deadline = deadline
        self.monotonic = monotonic
        self.context: ssl.SSLContext | None = None
        if address.startswith("https://"):
            self.context = ssl.create_default_context()
            if insecure_skip_verify:
                logger.warning("metrics: TLS certificate verification is disabled, which is insecure")
                self.context.check_hostname = False
                self.context.verify_mode = ssl.CERT_NONE

    def query(self, promql: str, at: float, timeout: float) -> float | None:
        """The first sample of an instant vector query, or None (no data, an error)."""
        body = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"}).encode()
        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=self.context) as resp:
                doc: Any = json.loads(resp.read(10 << 20))
        except (urllib.error.URLError, OSError, ValueError) as e:
            logger.error("Error querying Prometheus: %s", e)
            return None
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, dict) or data.get("resultType") != "vector":
            return None
        result = data.get("result")
        if not isinstance(result, list) or not result:
            logger.warning("Warning querying Prometheus: no data found for %s", promql)
            return None
        try:
            return float(result[0]["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            return None

    def collect(self, nodes: Sequence[str], now: float, unix_now: float) -> dict[str, NodeUsage]:
        """Every node's load, stamped ``now`` (the scheduler's clock); ``unix_now`` is the query time."""
        out: dict[str, NodeUsage] = {}
        stop = self.monotonic() + self.deadline
        for node in nodes:
            figures = []
            for template in (CPU_QUERY, MEMORY_QUERY):
                left = stop - self.monotonic()
                value = self.query(template.format(node=node, period=NODE_METRICS_PERIOD), unix_now,
                                   min(self.timeout, left)) if left > 0 else None
                figures.append(0.0 if value is None else value)
            out[node] = NodeUsage.of(now, figures[0], figures[1])
        return out


class UsageCollector:
    """Collects node load on a thread every interval; the scheduling loop takes the results."""

    def __init__(self, conf: MetricsConfig, *, clock: Callable[[], float], unix_clock: Callable[[], float] = time.time,
                 source: PrometheusSource | None = None):
        self.conf = conf
        self.clock = clock
        self.unix_clock = unix_clock
        self.source = source or PrometheusSource(conf.address, insecure_skip_verify=conf.insecure_skip_verify)
        self._lock = threading.Lock()
        self._nodes: list[str] = []
        self._latest: dict[str, NodeUsage] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def set_nodes(self, nodes: Sequence[str]) -> None:
        with self._lock:
            self._nodes = list(nodes)

    def collect_once(self) -> None:
        with self._lock:
            nodes = list(self._nodes)
        usage = self.source.collect(nodes, self.clock(), self.unix_clock())
        with self._lock:
            self._latest = usage

    def take(self) -> dict[str, NodeUsage] | None:
        """The last collection not taken yet, or None."""
        with self._lock:
            latest, self._latest = self._latest, None
        return latest

    def start(self) -> UsageCollector:
        self._thread = threading.Thread(target=self._run, name="metrics", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.collect_once()
            except Exception:  # the collector must outlive a bad answer
                logger.exception("metrics collection failed")
            self._stop.wait(self.conf.interval)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
