"""Node load from the Prometheus HTTP API (upstream metrics/source): the queries sent, the
figures read, and what a missing figure or an unreachable server gives."""

from __future__ import annotations

import pytest

from prometheus_api import PrometheusApi
from pyvolcano.conf import ConfigError
from pyvolcano.conf.metrics import MetricsConfig, read_metrics
from pyvolcano.metrics.source import PrometheusSource, UsageCollector
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.registry import default_registry
from waiting import free_port, wait_for


def test_each_node_is_asked_upstreams_two_queries_at_the_collection_time() -> None:
    with PrometheusApi() as prom:
        prom.cpu["n1"], prom.memory["n1"] = 42.5, 61.0
        usage = PrometheusSource(prom.url).collect(["n1"], now=100.0, unix_now=1_700_000_000.0)
    assert usage["n1"].cpu == {"10m": 42.5} and usage["n1"].memory == {"10m": 61.0}
    assert usage["n1"].metrics_time == 100.0
    cpu_q, mem_q = (r["query"] for r in prom.requests)
    assert cpu_q == ('avg_over_time(clamp_min(100 - (avg by (instance) (rate(node_cpu_seconds_total{mode="idle",'
                     'instance="n1"}[5m])) * 100), 0)[10m:30s])')
    assert mem_q == ('100*avg_over_time(((1-node_memory_MemAvailable_bytes{instance="n1"}/'
                     'node_memory_MemTotal_bytes{instance="n1"}))[10m:30s])')
    assert {r["time"] for r in prom.requests} == {"1700000000.000"}


def test_a_node_without_data_reads_as_idle_but_fresh() -> None:
    with PrometheusApi() as prom:
        usage = PrometheusSource(prom.url).collect(["ghost"], now=5.0, unix_now=0.0)
    assert usage["ghost"].cpu == {"10m": 0.0} and usage["ghost"].metrics_time == 5.0


def test_an_unreachable_server_reads_as_idle_nodes() -> None:
    usage = PrometheusSource(f"http://127.0.0.1:{free_port()}").collect(["n1"], now=1.0, unix_now=0.0)
    assert usage["n1"].cpu == {"10m": 0.0} and usage["n1"].memory == {"10m": 0.0}


def test_a_slow_server_is_given_up_on_after_the_request_timeout() -> None:
    with PrometheusApi() as prom:
        prom.cpu["n1"] = 90.0
        prom.delay = 1.0
        usage = PrometheusSource(prom.url, timeout=0.2).collect(["n1"], now=0.0, unix_now=0.0)
    assert usage["n1"].cpu == {"10m": 0.0}


def test_the_collector_thread_keeps_the_last_collection_for_the_scheduler_to_take() -> None:
    with PrometheusApi() as prom:
        prom.cpu["n1"] = 12.0
        collector = UsageCollector(MetricsConfig("prometheus", prom.url, interval=0.05), clock=lambda: 7.0)
        collector.set_nodes(["n1"])
        collector.start()
        try:
            usage = wait_for(collector.take, 5, "a collection")
        finally:
            collector.stop()
    assert usage["n1"].cpu == {"10m": 12.0} and usage["n1"].metrics_time == 7.0


@pytest.mark.parametrize(("metrics", "field"), [
    ("type: prometheus", "metrics.address"),
    ("type: graphite\n  address: http://x", "metrics.type"),
    ("type: elasticsearch\n  address: http://x", "metrics.type"),
    ("type: prometheus\n  address: prometheus:9090", "metrics.address"),
    ("type: prometheus\n  address: http://x\n  interval: often", "metrics.interval"),
])
def test_a_metrics_section_that_cannot_work_is_refused_with_its_field(metrics: str, field: str) -> None:
    text = f"actions: allocate\ntiers:\n- plugins:\n  - name: usage\nmetrics:\n  {metrics}\n"
    with pytest.raises(ConfigError) as e:
        load_configuration(default_registry(), text=text, source="conf")
    assert f"conf: {field}:" in str(e.value)


def test_metrics_section_defaults_and_nested_tls() -> None:
    conf = read_metrics({"type": "prometheus", "address": "https://p:9090", "tls": {"insecureSkipVerify": "true"}})
    assert conf == MetricsConfig("prometheus", "https://p:9090", 30.0, True)
    assert not read_metrics({}).enabled
