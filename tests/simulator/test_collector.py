"""Metrics collection: fragmentation with respect to the pending pods, and when samples are taken."""

from __future__ import annotations

import pytest

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.simulator.collector import fragmentation
from pyvolcano.simulator.report.stats import summarize
from sim_builders import simulate, vcjob


def test_no_pending_pods_means_no_fragmentation() -> None:
    cache = cache_of(queue("q"), node("g", nvidia_com__gpu="4"), podgroup("pg"),
                     pod("r-0", "pg", node_name="g", phase="Running"))
    assert fragmentation(cache) == 0.0


def test_idle_gpus_a_pending_pod_cannot_use_count_as_fragmented() -> None:
    # Node g1 has 1 idle GPU but no idle CPU left for the pending pod: that GPU is fragmented.
    # Node g2 is empty and can host the pending pod: its GPUs are not fragmented.
    docs = [queue("q"), node("g1", cpu="4", nvidia_com__gpu="2"), node("g2", cpu="8", nvidia_com__gpu="2"),
            podgroup("run"), podgroup("want")]
    running = pod("r-0", "run", cpu="4", node_name="g1", phase="Running")
    running["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    pending = pod("w-0", "want", cpu="2")
    pending["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    cache = cache_of(*docs, running, pending)
    assert fragmentation(cache) == 1.0


def test_samples_count_a_job_as_running_once_its_pods_are_bound() -> None:
    # One job waits 1 s (enqueued at 0, allocated at 1) and runs 300 s: it is pending for 1 s of
    # the 301 s makespan, so the time-weighted mean is 1/301 (the session's own sample, taken
    # before the pods started, used to say 1.0).
    res, sim = simulate([(0, node("n1")), (0, vcjob("j", duration="300s"))])
    rec = res.jobs["default/j"]
    assert (rec.started, rec.finished) == (1.0, 301.0)
    assert summarize(sim.metrics)["summary"]["mean_pending_jobs"] == pytest.approx(1 / 301)
    # (the session a second later that sets the PodGroup Running samples the same counts again)
    assert [(s.t, s.pending_jobs, s.running_jobs) for s in sim.metrics.samples] == [
        (0.0, 1, 0), (1.0, 0, 1), (2.0, 0, 1), (301.0, 0, 0)]


def test_a_job_finishing_between_sessions_is_sampled_when_it_finishes() -> None:
    # With a 10 s period, job a ends at 10.5 s, between two sessions: the counts drop then.
    _, sim = simulate([(0, node("n1")), (0, vcjob("a", duration="0.5s")), (0, vcjob("b", duration="100s"))],
                      period=10.0)
    assert (10.5, 0, 1) in {(s.t, s.pending_jobs, s.running_jobs) for s in sim.metrics.samples}
