"""usage: nodes over the load thresholds are filtered, less loaded nodes score higher, load only
counts while fresh, and pods the metrics cannot show yet are estimated (the shadow cache)
(upstream usage/usage.go, estimator.go, shadow_cache.go)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from builders import cache_of, dump, node, pod, podgroup, queue
from prometheus_api import PrometheusApi
from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.api.node_usage import NodeUsage
from pyvolcano.cache.cache import SchedulerCache, SchedulerOptions
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework.session import Session, open_session
from pyvolcano.plugins.usage import Usage, composite, estimate
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry
from pyvolcano.runtime.scheduler import LiveScheduler
from pyvolcano.store.memory import InMemoryStore
from sim_builders import simulate, vcjob
from waiting import wait_for

CONF = """
actions: allocate
tiers:
- plugins:
  - name: usage
    arguments:
      thresholds: {cpu: 80, mem: 70}
"""


def _cache(*docs: dict[str, Any], load: dict[str, tuple[float, float]], at: float = 0.0) -> SchedulerCache:
    cache = cache_of(*docs)
    cache.set_node_usage({n: NodeUsage.of(at, cpu, mem) for n, (cpu, mem) in load.items()})
    return cache


def _session(cache: SchedulerCache, conf: str = CONF, now: float = 0.0) -> Session:
    config = load_scheduler_conf(conf)
    return open_session(cache, config, default_registry().plugin_factories(config.plugin_names()), now=now,
                        rng=np.random.default_rng(0))


NODES = [queue("q"), node("busy", cpu="8", memory="16Gi"), node("idle", cpu="8", memory="16Gi")]


def _feasible(ssn: Session) -> list[str]:
    [task] = [t for j in ssn.jobs.values() for t in j.tasks.values()]
    ok, _ = ssn.predicate_failures(task, ssn.all_node_indices())
    return [ssn.node_list[i].name for i in ssn.all_node_indices()[ok]]


def test_a_node_over_a_threshold_is_filtered_while_its_load_is_fresh() -> None:
    docs = [*NODES, podgroup("pg"), pod("a", "pg")]
    assert _feasible(_session(_cache(*docs, load={"busy": (85, 10), "idle": (5, 5)}))) == ["idle"]
    assert _feasible(_session(_cache(*docs, load={"busy": (10, 75), "idle": (5, 5)}))) == ["idle"]
    # Figures older than 5 minutes are not used: every node passes.
    assert _feasible(_session(_cache(*docs, load={"busy": (85, 10)}), now=301)) == ["busy", "idle"]


def test_the_failure_names_the_resource_over_its_limit() -> None:
    docs = [*NODES, podgroup("pg"), pod("a", "pg")]
    out = schedule_objects(_cache(*docs, load={"busy": (95, 10), "idle": (95, 10)}), load_scheduler_conf(CONF),
                           default_registry(), sessions=1, seed=0)
    assert out["diagnoses"]["ns/pg"]["node_failures"] == {"the CPU load of the node exceeds the upper limit.": 2}


def test_the_less_loaded_node_scores_higher() -> None:
    docs = [*NODES, podgroup("pg"), pod("a", "pg")]
    ssn = _session(_cache(*docs, load={"busy": (60, 40), "idle": (10, 20)}))
    [task] = ssn.jobs["ns/pg"].tasks.values()
    scores = ssn.node_order_scores(task, ssn.all_node_indices())
    # ((1 - cpu) + (1 - mem)) / 2 * 100 * usage.weight (5)
    assert list(scores) == pytest.approx([250.0, 425.0])


def test_pods_placed_in_the_session_count_until_the_metrics_show_them() -> None:
    # Equal measured load: the first 4-cpu pod goes to either node, and its shadow estimate
    # (4 cpu × 0.7) makes the other node the better one for the second.
    docs = [*NODES, podgroup("pg", min_member=2), pod("a", "pg", cpu="4"), pod("b", "pg", cpu="4")]
    cache = _cache(*docs, load={"busy": (10, 10), "idle": (10, 10)})
    out = schedule_objects(cache, load_scheduler_conf(CONF), default_registry(), sessions=1, seed=0)
    assert sorted(out["binds"].values()) == ["busy", "idle"]


def test_the_node_order_is_calcnodescore_of_each_node_after_placements() -> None:
    docs = [*NODES, node("stale", cpu="8", memory="16Gi"), podgroup("pg", min_member=2),
            pod("a", "pg", cpu="4", memory="2Gi"), pod("b", "pg", cpu="2", memory="4Gi")]
    cache = _cache(*docs, load={"busy": (60, 40), "idle": (10, 20)})
    cache.set_node_usage({**cache.node_usage, "stale": NodeUsage.of(-400.0, 5, 5)})
    ssn = _session(cache)
    [plugin] = [p for _, p in ssn.plugins if isinstance(p, Usage)]
    a, b = sorted(ssn.jobs["ns/pg"].tasks.values(), key=lambda t: t.name)
    assert ssn.allocate(a, ssn.nodes["busy"]) and ssn.allocate(b, ssn.nodes["idle"])
    idx = ssn.all_node_indices()
    expected = [plugin.score(n) if plugin.fresh(n.name) is not None else 0.0 for n in ssn.node_list]
    assert list(plugin.scores(idx)) == expected
    assert expected[2] == 0.0 and expected[0] < 250.0


def test_batched_replicas_decide_as_one_pod_at_a_time() -> None:
    # The node order is cached and batched, but the shadow estimate is allocate-event state:
    # a replica placed on a node lowers its score for the next one, with and without batching.
    docs: list[dict[str, Any]] = [queue("q"), *(node(f"n{i:02d}", cpu="16", memory="64Gi") for i in range(24))]
    for j in range(4):
        docs.append(podgroup(f"g{j}", min_member=10))
        docs += [pod(f"g{j}-{r}", f"g{j}", cpu=str(j + 1), memory="2Gi") for r in range(10)]
    load = {f"n{i:02d}": (float((i * 37) % 70), float((i * 53) % 60)) for i in range(24)}
    conf = CONF.replace("actions: allocate", "actions: enqueue, allocate").replace(
        "- plugins:", "- plugins:\n  - name: gang\n  - name: predicates\n  - name: binpack")

    def binds(batch: bool) -> dict[str, str]:
        cache = SchedulerCache.from_objects(load_manifest_text(dump(*docs), "test.yaml"),
                                            SchedulerOptions(batch_replicas=batch))
        cache.set_node_usage({n: NodeUsage.of(0.0, cpu, mem) for n, (cpu, mem) in load.items()})
        return dict(schedule_objects(cache, load_scheduler_conf(conf), default_registry(), sessions=1, seed=3)["binds"])

    per_pod = binds(False)
    assert len(per_pod) == 40
    assert binds(True) == per_pod


def test_estimates_follow_upstreams_formulas() -> None:
    assert estimate(1000, 2000, 0.7, 0.5, 1.2) == pytest.approx((700 + 500) * 1.2)
    assert estimate(1000, 0, 0.7, 0.5, 1.0) == pytest.approx(700)  # no limit: the request is the limit
    assert estimate(1000, 1000, 1.0, 0.0, 1.5) == pytest.approx(1000)  # capped at the limit
    assert composite(50, 2000, 8000) == pytest.approx(0.75)
    assert composite(90, 4000, 8000) == 1.0


def test_out_of_range_arguments_keep_upstreams_defaults() -> None:
    s = Usage({"usage.weight": -1, "thresholds": {"cpu": 150, "mem": 60},
               "estimator": {"request_ratio": 2, "risk_factor": 0.5, "be_cpu": "500m", "be_mem": 100}}).settings
    assert (s.usage_weight, s.cpu_threshold, s.mem_threshold, s.request_ratio, s.risk_factor) == (5, 80, 60, 0.7, 1.2)
    assert (s.be_cpu, s.be_memory) == (500.0, 100 * 1024 * 1024)


def test_the_live_scheduler_takes_node_load_from_prometheus(tmp_path: Any) -> None:
    with PrometheusApi() as prom:
        prom.cpu.update({"busy": 95.0, "idle": 5.0})
        prom.memory.update({"busy": 20.0, "idle": 20.0})
        store = InMemoryStore(clock=lambda: 0.0)
        for doc in NODES:
            store.create(doc)
        conf = tmp_path / "scheduler.conf"
        conf.write_text(CONF + f"metrics:\n  type: prometheus\n  address: {prom.url}\n  interval: 100ms\n")
        sched = LiveScheduler(store, conf_path=conf, clock=lambda: 1000.0)
        try:
            def loaded() -> NodeUsage | None:
                sched.run_once()
                return sched.cache.node_usage.get("busy")

            usage = wait_for(loaded, 10, "the collector's first figures")
            store.create(podgroup("pg"))
            store.create(pod("a", "pg"))
            wait_for(lambda: (sched.run_once(), store.get("Pod", "ns", "a")["spec"].get("nodeName"))[1], 10,
                     "the pod to be bound")
        finally:
            sched.close(wait=True)
    assert usage.cpu == {"10m": 95.0} and usage.metrics_time == 1000.0
    assert store.get("Pod", "ns", "a")["spec"]["nodeName"] == "idle"


def test_in_a_simulation_node_load_comes_from_the_running_pods() -> None:
    conf = CONF + "metrics:\n  type: prometheus\n  address: http://prometheus.invalid:9090\n  interval: 10s\n"
    # "big" runs 7 of 8 cpus on one node from t=0; "late" comes at 30s and must avoid that node.
    objs = [(0, node("n1", cpu="8", memory="16Gi")), (0, node("n2", cpu="8", memory="16Gi")),
            (0, vcjob("big", cpu="7", duration="10m")), (30, vcjob("late", cpu="1", duration="1m"))]
    _res, sim = simulate(objs, conf=conf, until=40)
    where = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in sim.store.list("Pod")}
    assert where["late-t-0"] != where["big-t-0"]
    [(busy, usage)] = [(n, u) for n, u in sim.cache.node_usage.items() if u.cpu["10m"] > 80]
    assert busy == where["big-t-0"] and usage.cpu["10m"] == pytest.approx(87.5)


def test_unknown_keys_are_refused_with_the_closest_one_suggested() -> None:
    from pyvolcano.conf.loader import ConfigError
    from pyvolcano.runtime.configuration import load_configuration

    def error(arguments: str) -> str:
        text = f"actions: allocate\ntiers:\n- plugins:\n  - name: usage\n    arguments: {arguments}\n"
        with pytest.raises(ConfigError) as info:
            load_configuration(default_registry(), text=text, source="sched.conf")
        return str(info.value)

    assert "did you mean 'usage.weight'?" in error("{usage.wieght: 2}")
    assert "thresholds.memory" in error("{thresholds: {cpu: 80, memory: 70}}")
    assert "one of cpu, mem" in error("{thresholds: {cpu: 80, memory: 70}}")
