"""rescheduling: lowNodeUtilization through shuffle every interval — pods leave the most loaded
nodes for the room below the targets of the low ones, lowest priority first
(upstream rescheduling/low_node_utilization.go, node_utilization_util.go)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.api.node_usage import NodeUsage
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import ConfigError, load_scheduler_conf
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.registry import default_registry
from sim_builders import simulate, vcjob


def conf(params: str = "", *, interval: str = "5m", period: str = "10m") -> str:
    return f"""
actions: shuffle
tiers:
- plugins:
  - name: rescheduling
    arguments:
      interval: {interval}
      metricsPeriod: {period}
      strategies:
      - name: lowNodeUtilization
{params or '''        params:
          thresholds: {cpu: 20, memory: 20}
          targetThresholds: {cpu: 50, memory: 50}'''}
"""


def _running(name: str, node_name: str, cpu: str, priority: int | None = None) -> dict[str, Any]:
    return pod(name, "pg", node_name=node_name, phase="Running", cpu=cpu, memory="1Gi", priority=priority)


def _cluster(load: dict[str, tuple[float, float]]) -> SchedulerCache:
    docs = [queue("q"), node("hot", cpu="10", memory="100Gi"), node("cold", cpu="10", memory="100Gi"),
            podgroup("pg", phase="Running", min_member=1),
            _running("low", "hot", "2", priority=1), _running("high", "hot", "2", priority=100),
            _running("mid", "hot", "2", priority=50)]
    cache = cache_of(*docs)
    cache.set_node_usage({n: NodeUsage.of(0.0, cpu, mem) for n, (cpu, mem) in load.items()})
    return cache


def _shuffle(cache: SchedulerCache, text: str, now: float) -> list[str]:
    config = load_scheduler_conf(text)
    reg = default_registry()
    return run_once(cache, config, reg.plugin_factories(config.plugin_names()), reg.action_factories(config.actions),
                    now=now, rng=np.random.default_rng(0)).evictions


def test_the_first_run_comes_one_interval_after_the_start() -> None:
    cache = _cluster({"hot": (70, 10), "cold": (5, 5)})
    assert _shuffle(cache, conf(), now=0) == []
    assert _shuffle(cache, conf(), now=300) == []  # not *more* than 5m yet
    assert _shuffle(cache, conf(), now=301) != []
    assert _shuffle(cache, conf(), now=302) == []  # the next run is 5m after this one


def test_pods_leave_the_hot_node_lowest_priority_first_until_it_is_under_target() -> None:
    # hot at 70% cpu, target 50%: each 2-cpu pod takes 20 points off; after two it is at 30%.
    cache = _cluster({"hot": (70, 10), "cold": (5, 5)})
    _shuffle(cache, conf(), now=0)
    assert sorted(_shuffle(cache, conf(), now=301)) == ["ns/low", "ns/mid"]


def test_nothing_moves_when_every_node_is_low_or_none_is_high() -> None:
    cache = _cluster({"hot": (10, 10), "cold": (5, 5)})
    _shuffle(cache, conf(), now=0)
    assert _shuffle(cache, conf(), now=301) == []  # every node is low
    cache = _cluster({"hot": (40, 10), "cold": (5, 5)})
    _shuffle(cache, conf(), now=0)
    assert _shuffle(cache, conf(), now=301) == []  # hot is not over its target


def test_upstreams_default_metrics_period_reads_no_load() -> None:
    # The collector fills only the 10m averages: metricsPeriod 5m (the default) sees 0 everywhere.
    cache = _cluster({"hot": (70, 10), "cold": (5, 5)})
    _shuffle(cache, conf(period="5m"), now=0)
    assert _shuffle(cache, conf(period="5m"), now=301) == []


def test_a_strategy_without_params_yields_nothing() -> None:
    cache = _cluster({"hot": (70, 10), "cold": (5, 5)})
    text = conf("        params: ~")
    _shuffle(cache, text, now=0)
    assert _shuffle(cache, text, now=301) == []


@pytest.mark.parametrize(("params", "field"), [
    ("        params: {thresholds: {cpu: 20.5}}", "strategies[0].params.thresholds.cpu"),
    ("        params: {targetThresholds: 50}", "strategies[0].params.targetThresholds"),
])
def test_thresholds_must_be_integer_percents(params: str, field: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_configuration(default_registry(), text=conf(params), source="conf")
    assert f"arguments.{field}" in str(e.value)


def test_in_a_simulation_a_hot_node_is_relieved_through_shuffle() -> None:
    text = """
actions: "enqueue, allocate, shuffle"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: rescheduling
    arguments:
      interval: 1m
      metricsPeriod: 10m
      strategies:
      - name: lowNodeUtilization
        params:
          thresholds: {cpu: 20, memory: 100}
          targetThresholds: {cpu: 50, memory: 100}
metrics:
  type: prometheus
  address: http://prometheus.invalid:9090
  interval: 30s
"""
    pinned = vcjob("pinned", cpu="3", replicas=3, duration="30m", node_selector={"kubernetes.io/hostname": "hot"})
    objs = [(0, node("hot", cpu="10", memory="64Gi", labels={"kubernetes.io/hostname": "hot"})),
            (0, node("cold", cpu="10", memory="64Gi", labels={"kubernetes.io/hostname": "cold"})), (0, pinned)]
    res, _sim = simulate(objs, conf=text, until=200)
    evicted = [e for _t, e in res.timeline if e.startswith("evict")]
    assert evicted and all("(shuffle)" in e for e in evicted)
