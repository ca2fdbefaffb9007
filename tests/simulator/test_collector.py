"""Metrics collection: fragmentation with respect to the pending pods."""

from __future__ import annotations

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.simulator.collector import fragmentation


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
