"""Quantity formatting and pod quota usage used for PodGroup minResources."""

from __future__ import annotations

import pytest

from pyvolcano.controllers._common import go_duration
from pyvolcano.controllers._resources import add_lists, format_quantity, parse_list, pod_quota_usage, quantity


@pytest.mark.parametrize(("text", "times", "want"), [
    ("1", 2, "2"), ("500m", 3, "1500m"), ("1000m", 1, "1"), ("1Gi", 3, "3Gi"), ("512Mi", 3, "1536Mi"),
    ("1000", 1, "1k"), ("1500", 1, "1500"), ("1G", 2, "2G"), ("100Mi", 10, "1000Mi"), ("1e3", 2, "2e3"),
    ("0.1", 3, "300m"), ("1Ki", 1, "1Ki"), ("512", 1, "512"), ("0", 4, "0"), (2, 2, "4"),
])
def test_canonical_quantity(text: str | int, times: int, want: str) -> None:
    amount, fmt = quantity(text)
    assert format_quantity((amount * times, fmt)) == want


def test_sum_keeps_left_format() -> None:
    total = add_lists(parse_list({"memory": "1Gi"}), parse_list({"memory": "1G"}))
    assert total["memory"][1] == "BinarySI"
    assert format_quantity(total["memory"]) == "2073741824"  # not a whole number of Ki
    total = add_lists(parse_list({"memory": "1Gi"}), parse_list({"memory": "1Gi"}))
    assert format_quantity(total["memory"]) == "2Gi"


def test_terminal_pod_counts_only_as_object() -> None:
    pod = {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}, "status": {"phase": "Succeeded"}}
    assert list(pod_quota_usage(pod)) == ["count/pods"]


def test_sidecar_init_containers_and_overhead() -> None:
    pod = {"spec": {
        "initContainers": [
            {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
            {"name": "setup", "resources": {"requests": {"cpu": "2"}}},
        ],
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}],
        "overhead": {"cpu": "50m"},
    }}
    usage = {k: format_quantity(v) for k, v in pod_quota_usage(pod).items()}
    # max(1 + 0.1 sidecar, 2 + 0.1 while setup runs) + 0.05 overhead
    assert usage["cpu"] == "2150m"
    assert usage["limits.cpu"] == "2050m"


@pytest.mark.parametrize(("seconds", "want"), [
    (0, "0s"), (1.5, "1.5s"), (90, "1m30s"), (3600, "1h0m0s"), (3725.25, "1h2m5.25s"), (0.25, "250ms"),
])
def test_go_duration(seconds: float, want: str) -> None:
    assert go_duration(seconds) == want


def test_scheduler_reads_controller_min_resources_like_upstream() -> None:
    """NewResource skips count/* (IsCountQuota) and requests.<ext> is not an extended resource."""
    from pyvolcano.api.resource import Resource

    r = Resource.from_list({"count/pods": "3", "pods": "3", "cpu": "3", "requests.cpu": "3", "limits.cpu": "3",
                            "nvidia.com/gpu": "2", "requests.nvidia.com/gpu": "2"})
    assert (r.milli_cpu, r.scalars) == (3000.0, {"pods": 3.0, "nvidia.com/gpu": 2000.0})


def test_default_controllers_create_builtin_queues() -> None:
    import random

    from pyvolcano.controllers import default_controllers
    from pyvolcano.simulator.seeded_entropy import SeededEntropy
    from pyvolcano.store.memory import InMemoryStore

    store = InMemoryStore()
    names = [c.name for c in default_controllers(store=store, entropy=SeededEntropy(random.Random(0)))]
    assert names == ["queue-controller", "job-controller", "pg-controller", "gc-controller", "hyperNode-controller",
                     "jobflow-controller", "jobtemplate-controller", "cronjob-controller"]
    assert [q["metadata"]["name"] for q in store.list("Queue")] == ["default", "root"]
