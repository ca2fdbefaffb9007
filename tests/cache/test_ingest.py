"""apply_event: which store changes can alter a scheduling decision."""

from __future__ import annotations

from typing import Any

from builders import node, pod, podgroup, queue
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.ingest import apply_event


def _with_meta(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj["metadata"]
    md.setdefault("uid", f"{md.get('namespace', '')}/{md['name']}")
    md.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
    return obj


def _cache(*objs: dict[str, Any]) -> SchedulerCache:
    cache = SchedulerCache()
    for o in objs:
        apply_event(cache, "ADDED", o["kind"], _with_meta(o))
    return cache


def _finished_job(name: str, q: str = "q") -> list[dict[str, Any]]:
    return [podgroup(name, queue=q, phase="Completed"),
            pod(f"{name}-0", name, node_name="n1", phase="Succeeded")]


def test_running_pod_deletion_frees_capacity_and_is_relevant() -> None:
    p = pod("p", "pg", node_name="n1", phase="Running")
    cache = _cache(node("n1"), queue("q"), podgroup("pg", phase="Running"), p)
    epoch = cache.capacity_epoch
    assert apply_event(cache, "DELETED", "Pod", p)
    assert cache.capacity_epoch > epoch


def test_cleanup_of_a_finished_job_is_quiet_while_its_queue_keeps_jobs() -> None:
    done_pg, done_pod = _finished_job("done")
    cache = _cache(node("n1"), queue("q"), podgroup("other", queue="q", phase="Inqueue"), done_pg, done_pod)
    epoch = cache.capacity_epoch
    assert not apply_event(cache, "DELETED", "Pod", done_pod)
    assert not apply_event(cache, "DELETED", "PodGroup", done_pg)
    assert cache.capacity_epoch == epoch
    # the job lost its PodGroup too, so its lost pod needs no session either
    assert not cache.take_status_changes()


def test_finished_pod_deletion_of_a_live_job_asks_for_a_session_later() -> None:
    done_pg, done_pod = _finished_job("done")
    cache = _cache(node("n1"), queue("q"), done_pg, done_pod)
    assert not apply_event(cache, "DELETED", "Pod", done_pod)
    assert cache.take_status_changes()  # the PodGroup is still there: its counts change
    assert not cache.take_status_changes()


def test_deleting_the_last_job_of_a_queue_is_relevant() -> None:
    done_pg, done_pod = _finished_job("done", q="lonely")
    cache = _cache(node("n1"), queue("q"), queue("lonely"), podgroup("other", queue="q"), done_pg, done_pod)
    assert not apply_event(cache, "DELETED", "Pod", done_pod)
    # proportion's queue set changes: deserved shares can move
    assert apply_event(cache, "DELETED", "PodGroup", done_pg)
