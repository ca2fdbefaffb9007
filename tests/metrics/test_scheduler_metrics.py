"""vc-scheduler metrics: upstream's names, labels and buckets, fed by the session observer."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from prometheus_client import generate_latest

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.api.resource import Resource
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework.observer import ON_SESSION_CLOSE, ON_SESSION_OPEN
from pyvolcano.metrics.buckets import exponential_buckets_range
from pyvolcano.metrics.scheduler import QueueState, SchedulerMetrics, SessionMetricsObserver
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.registry import default_registry
from pyvolcano.store.base import EPOCH

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
"""


class StepTimer:
    """A fake monotonic clock that advances 0.002 s at every reading."""

    def __init__(self) -> None:
        self.ticks = itertools.count()

    def __call__(self) -> float:
        return next(self.ticks) * 0.002


def run_session(cache: SchedulerCache, conf: str, metrics: SchedulerMetrics, now: float = 100.0) -> Any:
    config = load_scheduler_conf(conf)
    reg = default_registry()
    obs = SessionMetricsObserver(metrics, StepTimer())
    result = run_once(cache, config, reg.plugin_factories(config.plugin_names()),
                               reg.action_factories(config.actions), now=now, rng=np.random.default_rng(0),
                               observer=obs)
    metrics.observe_result(result)
    return result


def value(m: SchedulerMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def cluster(*extra: dict[str, Any]) -> SchedulerCache:
    return cache_of(
        node("n1", cpu="4", memory="8Gi"),
        queue("q", weight=2), queue("idle"),
        podgroup("fits", min_member=2), pod("fits-0", "fits"), pod("fits-1", "fits"),
        podgroup("big", min_member=2), pod("big-0", "big", cpu="3"), pod("big-1", "big", cpu="3"),
        *extra,
    )


def test_bucket_helper_is_client_golangs_exponential_buckets_range():
    b = exponential_buckets_range(1, 5000, 20)
    assert len(b) == 20 and b[0] == 1 and b[-1] == pytest.approx(5000)
    assert all(b[i + 1] / b[i] == pytest.approx(b[1] / b[0]) for i in range(19))
    assert exponential_buckets_range(0.1, 100, 15)[-1] == pytest.approx(100)
    with pytest.raises(ValueError):
        exponential_buckets_range(0, 1, 3)


def test_histograms_have_upstreams_names_and_buckets():
    m = SchedulerMetrics()
    text = generate_latest(m.registry).decode()
    for name, n in [("volcano_e2e_scheduling_latency_milliseconds", 20),
                    ("volcano_open_session_duration_milliseconds", 20),
                    ("volcano_e2e_job_scheduling_latency_milliseconds", 30)]:
        assert f"# TYPE {name} histogram" in text
        assert text.count(f"{name}_bucket{{") == n + 1  # + the +Inf bucket
    m.update_action_duration("allocate", 0.0015)
    m.update_plugin_duration("gang", ON_SESSION_OPEN, 0.00025)
    text = generate_latest(m.registry).decode()
    assert text.count('volcano_action_scheduling_latency_milliseconds_bucket{action="allocate"') == 21
    assert text.count('volcano_plugin_scheduling_latency_milliseconds_bucket{OnSession="OnSessionOpen"') == 16
    assert value(m, "volcano_action_scheduling_latency_milliseconds_sum", action="allocate") == pytest.approx(1.5)
    assert value(m, "volcano_plugin_scheduling_latency_milliseconds_sum", plugin="gang",
                 OnSession="OnSessionOpen") == pytest.approx(0.25)


def test_durations_are_recorded_in_milliseconds():
    m = SchedulerMetrics()
    m.update_e2e_duration(0.25)
    assert value(m, "volcano_e2e_scheduling_latency_milliseconds_sum") == pytest.approx(250.0)
    assert value(m, "volcano_e2e_scheduling_latency_milliseconds_bucket", le="216.86605618721057") == 0
    assert value(m, "volcano_e2e_scheduling_latency_milliseconds_bucket", le="339.5269197619529") == 1


def test_observer_times_every_action_and_every_plugin_hook():
    m = SchedulerMetrics()
    run_session(cluster(), CONF, m)
    for action in ("enqueue", "allocate", "backfill"):
        assert value(m, "volcano_action_scheduling_latency_milliseconds_count", action=action) == 1
        # the fake timer advances 2 ms between the two readings around the action
        assert value(m, "volcano_action_scheduling_latency_milliseconds_sum", action=action) == pytest.approx(2.0)
    for plugin in ("priority", "gang", "drf", "predicates", "proportion"):
        for hook in (ON_SESSION_OPEN, ON_SESSION_CLOSE):
            assert value(m, "volcano_plugin_scheduling_latency_milliseconds_count", plugin=plugin,
                         OnSession=hook) == 1
    assert value(m, "volcano_open_session_duration_milliseconds_count") == 1
    # open = 2 readings around the whole open, with 5 plugins (2 readings each) inside
    assert value(m, "volcano_open_session_duration_milliseconds_sum") == pytest.approx(22.0)


def test_a_session_without_observer_is_unchanged():
    a, b = cluster(), cluster()
    config = load_scheduler_conf(CONF)
    reg = default_registry()
    plugins, actions = reg.plugin_factories(config.plugin_names()), reg.action_factories(config.actions)
    plain = run_once(a, config, plugins, actions, now=100.0, rng=np.random.default_rng(0))
    observed = run_once(b, config, plugins, actions, now=100.0, rng=np.random.default_rng(0),
                             observer=SessionMetricsObserver(SchedulerMetrics(), StepTimer()))
    assert plain.binds == observed.binds == [("ns/fits-0", "n1"), ("ns/fits-1", "n1")]
    assert plain.podgroup_phases == observed.podgroup_phases


def test_queue_gauges_come_from_proportion_after_the_session():
    m = SchedulerMetrics()
    run_session(cluster(), CONF, m)
    assert value(m, "volcano_queue_allocated_milli_cpu", queue_name="q") == 2000
    assert value(m, "volcano_queue_allocated_memory_bytes", queue_name="q") == 2 * 1024**3
    assert value(m, "volcano_queue_request_milli_cpu", queue_name="q") == 8000
    assert value(m, "volcano_queue_deserved_milli_cpu", queue_name="q") == 4000
    assert value(m, "volcano_queue_weight", queue_name="q") == 2
    assert value(m, "volcano_queue_share", queue_name="q") == pytest.approx(0.5)
    assert value(m, "volcano_queue_overused", queue_name="q") == 0
    assert value(m, "volcano_queue_allocated_scalar_resources", queue_name="q", resource="pods") == 2
    # a queue without jobs reports zeros, and nothing proportion does not compute
    assert value(m, "volcano_queue_allocated_milli_cpu", queue_name="idle") == 0
    assert value(m, "volcano_queue_weight", queue_name="idle") is None
    assert value(m, "volcano_queue_capacity_milli_cpu", queue_name="q") is None


def test_capacity_plugin_exports_capacity_and_real_capacity():
    conf = CONF.replace("name: proportion", "name: capacity")
    m = SchedulerMetrics()
    cache = cache_of(node("n1", cpu="4", memory="8Gi"),
                     queue("q", capability={"cpu": "3"}, deserved={"cpu": "2"}),
                     queue("other", guarantee={"resource": {"cpu": "1"}}),
                     podgroup("fits", min_member=1), pod("fits-0", "fits"))
    run_session(cache, conf, m)
    assert value(m, "volcano_queue_capacity_milli_cpu", queue_name="q") == 3000
    assert value(m, "volcano_queue_real_capacity_milli_cpu", queue_name="q") == 3000
    assert value(m, "volcano_queue_deserved_milli_cpu", queue_name="q") == 2000
    assert value(m, "volcano_queue_allocated_milli_cpu", queue_name="q") == 1000
    # the job-less queue: its guarantee on top of what no queue guarantees
    assert value(m, "volcano_queue_real_capacity_milli_cpu", queue_name="other") == 4000
    assert value(m, "volcano_queue_capacity_milli_cpu", queue_name="other") is None


def test_unschedulable_gangs_use_gangs_own_count():
    m = SchedulerMetrics()
    cache = cluster()
    run_session(cache, CONF, m)
    assert value(m, "volcano_unschedule_job_count") == 1
    # big-0 was allocated before big-1 failed: one task short, as gang's condition says
    message = next(c.message for c in cache.jobs["ns/big"].podgroup.conditions if c.type == "Unschedulable")
    assert message.startswith("1/2 tasks in gang unschedulable")
    assert value(m, "volcano_unschedule_task_count", job_id="big") == 1
    assert value(m, "volcano_unschedule_task_count", job_id="fits") == 0
    assert value(m, "volcano_job_retry_counts", job_id="big") == 1
    run_session(cluster(), CONF, m)
    assert value(m, "volcano_job_retry_counts", job_id="big") == 2
    text = generate_latest(m.registry).decode()
    assert "volcano_job_retry_counts_total" not in text
    assert 'volcano_job_retry_counts{job_id="big"} 2.0' in text


def test_schedule_attempts_count_binds_and_unschedulable_tasks():
    m = SchedulerMetrics()
    run_session(cluster(), CONF, m)
    assert value(m, "volcano_schedule_attempts_total", result="scheduled") == 2
    assert value(m, "volcano_schedule_attempts_total", result="unschedulable") == 2
    m.register_schedule_attempts("error")
    assert value(m, "volcano_schedule_attempts_total", result="error") == 1
    with pytest.raises(ValueError, match="expected one of scheduled, unschedulable, error"):
        m.register_schedule_attempts("failed")


def test_job_scheduling_times_for_a_job_placed_in_the_session():
    m = SchedulerMetrics()
    cache = cluster()
    created = cache.jobs["ns/fits"].creation_timestamp
    run_session(cache, CONF, m, now=created + 2.5)
    labels = {"job_name": "fits", "queue": "q", "job_namespace": "ns"}
    assert value(m, "volcano_e2e_job_scheduling_duration", **labels) == pytest.approx(2500.0)
    assert value(m, "volcano_e2e_job_scheduling_latency_milliseconds_count") == 1
    assert value(m, "volcano_e2e_job_scheduling_last_time", **labels) == int(EPOCH.timestamp() + created + 2.5)
    assert value(m, "volcano_e2e_job_scheduling_start_time", **labels) == int(EPOCH.timestamp() + created)
    # the gang that could not be placed has a start time but no duration
    big = {"job_name": "big", "queue": "q", "job_namespace": "ns"}
    assert value(m, "volcano_e2e_job_scheduling_start_time", **big) is not None
    assert value(m, "volcano_e2e_job_scheduling_duration", **big) is None


def test_job_share_follows_drf():
    m = SchedulerMetrics()
    run_session(cluster(), CONF, m)
    # 2 of 4 cpus, 2 of 8 GiB, 2 of 110 pods: the dominant share is cpu
    assert value(m, "volcano_job_share", job_ns="ns", job_id="fits") == pytest.approx(0.5)
    assert value(m, "volcano_job_share", job_ns="ns", job_id="big") == 0


def test_metrics_of_deleted_queues_and_jobs_are_removed():
    m = SchedulerMetrics()
    run_session(cluster(), CONF, m)
    cache = cache_of(node("n1", cpu="4", memory="8Gi"), queue("q", weight=2),
                     podgroup("fits", min_member=2), pod("fits-0", "fits"), pod("fits-1", "fits"))
    run_session(cache, CONF, m)
    assert value(m, "volcano_queue_allocated_milli_cpu", queue_name="idle") is None
    assert value(m, "volcano_queue_allocated_milli_cpu", queue_name="q") == 2000
    assert value(m, "volcano_unschedule_task_count", job_id="big") is None
    assert value(m, "volcano_job_retry_counts", job_id="big") is None
    assert value(m, "volcano_e2e_job_scheduling_start_time", job_name="big", queue="q", job_namespace="ns") is None


def test_a_scalar_resource_that_disappears_is_set_to_zero():
    m = SchedulerMetrics()
    m.update_queue(QueueState("q", Resource(1000, 0, {"nvidia.com/gpu": 2000}), Resource(), Resource()))
    m.update_queue(QueueState("q", Resource(1000, 0), Resource(), Resource()))
    assert value(m, "volcano_queue_allocated_scalar_resources", queue_name="q", resource="nvidia.com/gpu") == 0


def test_preemption_commits_feed_eviction_and_victim_metrics():
    low = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": 10}
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
            "value": 1000}
    preemptable = {"volcano.sh/preemptable": "true"}
    cache = cache_of(
        low, high, queue("q"), node("n1", cpu="2", memory="4Gi"),
        podgroup("low", min_member=1, phase="Running", priorityClassName="low"),
        podgroup("high", min_member=1, priorityClassName="high"),
        pod("low-0", "low", node_name="n1", phase="Running", labels=preemptable),
        pod("low-1", "low", node_name="n1", phase="Running", labels=preemptable),
        pod("high-0", "high"))
    conf = "actions: preempt\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n  - name: conformance\n" \
           "- plugins:\n  - name: proportion\n"
    m = SchedulerMetrics()
    result = run_session(cache, conf, m)
    assert result.evictions == ["ns/low-0"]
    assert value(m, "volcano_eviction_transactions_total", action="preempt") == 1
    assert value(m, "volcano_pod_preemption_victims") == 1
    m.register_eviction_transaction("shuffle")  # not one of upstream's four: not counted
    assert value(m, "volcano_eviction_transactions_total", action="shuffle") is None


def test_task_stage_latency_validates_the_stage():
    m = SchedulerMetrics()
    m.update_task_schedule_duration("Bound", 1.2)
    assert value(m, "volcano_task_scheduling_latency_milliseconds_sum", stage="Bound") == pytest.approx(1200)
    with pytest.raises(ValueError, match="expected one of Watched, Assumed, PreBound, Bound"):
        m.update_task_schedule_duration("Done", 1)


def test_each_recorder_has_its_own_registry():
    a, b = SchedulerMetrics(), SchedulerMetrics()
    a.update_e2e_duration(0.01)
    assert value(b, "volcano_e2e_scheduling_latency_milliseconds_count") == 0


def test_an_unchanged_job_keeps_counting_in_later_sessions():
    m = SchedulerMetrics()
    cache = cluster()
    run_session(cache, CONF, m, now=100.0)
    run_session(cache, CONF, m, now=101.0)
    run_session(cache, CONF, m, now=102.0)
    assert value(m, "volcano_job_retry_counts", job_id="big") == 3
    assert value(m, "volcano_unschedule_job_count") == 1
    # now that fits holds 2 cpus, neither big task fits any more: gang says 2/2, and so do we
    message = next(c.message for c in cache.jobs["ns/big"].podgroup.conditions if c.type == "Unschedulable")
    assert message.startswith("2/2 tasks in gang unschedulable")
    assert value(m, "volcano_unschedule_task_count", job_id="big") == 2
    assert value(m, "volcano_schedule_attempts_total", result="unschedulable") == 6
    # fits was bound in the first session; its scheduling time is not moved by later ones
    labels = {"job_name": "fits", "queue": "q", "job_namespace": "ns"}
    created = cache.jobs["ns/fits"].creation_timestamp
    assert value(m, "volcano_e2e_job_scheduling_duration", **labels) == pytest.approx((100.0 - created) * 1000)


def test_capacity_plugin_declares_the_queue_attributes_the_metrics_read() -> None:
    from pyvolcano.framework.interfaces import CapacityStateExporter
    from pyvolcano.plugins.capacity.plugin import Capacity

    plugin = Capacity({})
    assert isinstance(plugin, CapacityStateExporter)
    assert plugin.queue_attrs() == ({}, False)     # outside a session


def test_reservation_gauges_follow_the_held_reservations() -> None:
    from types import SimpleNamespace

    from pyvolcano.api.reservation import Reservation, ReservationBook
    from pyvolcano.metrics.scheduler import SchedulerMetrics

    m = SchedulerMetrics()
    book = ReservationBook()
    book.replace({"ns/g": Reservation("ns/g", "q", 0, 150.0, 60.0, (("n1", (("cpu", 8000.0),)),
                                                                      ("n2", (("cpu", 8000.0),))), 100.0)}, None)
    ssn: Any = SimpleNamespace(memo=SimpleNamespace(reservations=book), now=100.0)
    m._observe_reservations(ssn)
    labels = {"job_ns": "ns", "job_id": "g", "queue_name": "q"}
    assert m.registry.get_sample_value("volcano_reservation_start_seconds", labels) == 50.0
    assert m.registry.get_sample_value("volcano_reservation_nodes", labels) == 2.0
    book.clear()
    m._observe_reservations(ssn)
    assert m.registry.get_sample_value("volcano_reservation_nodes", labels) is None
