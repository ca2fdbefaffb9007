"""Naming the resource no node could hold, where upstream's message names none."""

from __future__ import annotations

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.cache.unplaceable import unplaceable_reason, unplaceable_resources
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry


def _pod_with(name: str, group: str, **requests: str) -> dict:
    p = pod(name, group)
    p["spec"]["containers"][0]["resources"]["requests"].update(requests)
    return p


def test_a_pod_asking_for_ephemeral_storage_no_node_has_is_named() -> None:
    cache = cache_of(queue("q"), node("n1"), podgroup("pg"), _pod_with("p-0", "pg", **{"ephemeral-storage": "10Gi"}))
    job = cache.pg_jobs["ns/pg"]
    assert [name for name, _, _ in unplaceable_resources(cache, job)] == ["ephemeral-storage"]
    assert unplaceable_reason(cache, job) == (
        "Insufficient ephemeral-storage: a pod requests 10Gi, the largest node has 0")


def test_the_largest_node_counts_not_the_sum_of_nodes() -> None:
    cache = cache_of(queue("q"), node("n1", cpu="4"), node("n2", cpu="4"), podgroup("pg"),
                     pod("p-0", "pg", cpu="6"))
    assert unplaceable_reason(cache, cache.pg_jobs["ns/pg"]) == (
        "Insufficient cpu: a pod requests 6, the largest node has 4")


def test_nothing_is_named_when_every_request_fits_some_node() -> None:
    cache = cache_of(queue("q"), node("n1", cpu="4", nvidia_com__gpu="2"), podgroup("pg"),
                     _pod_with("p-0", "pg", **{"nvidia.com/gpu": "2"}))
    assert unplaceable_reason(cache, cache.pg_jobs["ns/pg"]) == ""


def test_a_podgroup_without_pods_is_checked_by_its_min_resources_against_the_cluster() -> None:
    cache = cache_of(queue("q"), node("n1", nvidia_com__gpu="8"), node("n2", nvidia_com__gpu="8"),
                     podgroup("pg", phase="Pending", minResources={"nvidia.com/gpu": "24"}))
    assert unplaceable_reason(cache, cache.pg_jobs["ns/pg"]) == (
        "Insufficient nvidia.com/gpu: minResources need 24, the cluster has 16")


def test_the_predicates_fit_error_keeps_upstreams_wording_for_ephemeral_storage() -> None:
    # Without proportion's queue check the task reaches the predicates, whose fit error names
    # the resource as upstream does; nothing needs adding then.
    n1 = node("n1")
    n1["status"]["allocatable"] = n1["status"]["capacity"] = {**n1["status"]["capacity"], "ephemeral-storage": "5Gi"}
    cache = cache_of(queue("q"), n1, podgroup("pg"), _pod_with("p-0", "pg", **{"ephemeral-storage": "10Gi"}))
    config = load_scheduler_conf('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'
                                 '  - name: predicates\n')
    schedule_objects(cache, config, default_registry(), sessions=1, seed=0)
    (cond,) = [c for c in cache.pg_jobs["ns/pg"].podgroup.conditions if c.type == "Unschedulable"]
    # upstream's wording, then the diagnosis' hint (docs/reasons.md)
    assert "Origin reason is p-0: 0/1 nodes are unavailable: 1 Insufficient ephemeral-storage. Hint: " in cond.message
    assert cond.message.endswith("needs 10Gi ephemeral-storage on one node; the largest free block is 5Gi on n1; "
                                 "the cluster has only 5Gi ephemeral-storage free")
    assert unplaceable_reason(cache, cache.pg_jobs["ns/pg"]) == (
        "Insufficient ephemeral-storage: a pod requests 10Gi, the largest node has 5Gi")
