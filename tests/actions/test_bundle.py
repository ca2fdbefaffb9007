"""Specification tests for the victim bundles of gangpreempt / gangreclaim (upstream
actions/utils/bundle_test.go): the safe / whole split, plugin filtering and the bundle order."""

from __future__ import annotations

from typing import Any

from builders import node, open_session, pod, podgroup, queue
from pyvolcano.actions._bundle import (
    Bundle,
    BundleType,
    apply_allowed_tasks,
    create_job_bundles,
    sort_bundles_for_preempt,
)
from pyvolcano.api.resource import Resource
from pyvolcano.framework.session import Session

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: gang
"""


def session(min_member: int, pods: list[dict[str, Any]], **spec: Any) -> Session:
    return open_session(queue("q"), node("n1", cpu="16", memory="16Gi"),
                        podgroup("j", min_member=min_member, phase="Running", **spec), *pods, conf=CONF)


def worker(i: int, **labels: str) -> dict[str, Any]:
    return pod(f"j-{i}", "j", node_name="n1", phase="Running", priority=i,
               labels={"volcano.sh/task-spec": "worker", **labels})


def names(bundle: Bundle) -> list[str]:
    return [t.name for t in bundle.tasks]


def test_tasks_above_the_gang_minimum_are_safe_lowest_priority_first() -> None:
    ssn = session(3, [worker(i) for i in range(5)], minTaskMember={"worker": 3})
    job = ssn.jobs["ns/j"]
    bundles = create_job_bundles(job, list(job.tasks.values()))
    assert [(b.type, names(b)) for b in bundles] == [
        (BundleType.SAFE, ["j-0", "j-1"]), (BundleType.WHOLE, ["j-2", "j-3", "j-4"])]
    assert bundles[1].global_res.get("cpu") == 5000


def test_a_job_already_below_its_minimum_has_only_a_safe_bundle() -> None:
    ssn = session(10, [worker(i) for i in range(2)])
    job = ssn.jobs["ns/j"]
    bundles = create_job_bundles(job, list(job.tasks.values()))
    assert [(b.type, names(b)) for b in bundles] == [(BundleType.SAFE, ["j-0", "j-1"])]


def test_a_sub_group_minimum_caps_the_safe_evictions() -> None:
    # Three ready sub-groups of two with minSubGroups 2: one sub-group may break.
    policy = [{"name": "g", "subGroupSize": 2, "minSubGroups": 2, "matchLabelKeys": ["grp"]}]
    pods = [worker(i, grp=str(i // 2)) for i in range(6)]
    ssn = session(4, pods, subGroupPolicy=policy)
    job = ssn.jobs["ns/j"]
    local = [t for t in job.tasks.values() if t.name in ("j-0", "j-2", "j-4")]
    bundles = create_job_bundles(job, local)
    assert [(b.type, names(b)) for b in bundles] == [
        (BundleType.SAFE, ["j-0"]), (BundleType.WHOLE, ["j-2", "j-4"])]


def test_plugins_shrink_a_safe_bundle_but_never_a_whole_one() -> None:
    ssn = session(3, [worker(i) for i in range(5)], minTaskMember={"worker": 3})
    job = ssn.jobs["ns/j"]
    safe, whole = create_job_bundles(job, list(job.tasks.values()))
    allowed = {safe.tasks[0].uid, whole.tasks[0].uid}
    assert [(b.type, names(b)) for b in apply_allowed_tasks([safe, whole], allowed)] == [(BundleType.SAFE, ["j-0"])]


def test_bundles_sort_safe_first_then_victim_job_then_return_on_investment() -> None:
    ssn = session(3, [worker(i) for i in range(3)])
    job = ssn.jobs["ns/j"]
    tasks = sorted(job.tasks.values(), key=lambda t: t.name)
    cpu = Resource.from_list({"cpu": "1"})
    low_roi = Bundle(BundleType.WHOLE, job, [tasks[0]], cpu, Resource.from_list({"cpu": "4"}))
    high_roi = Bundle(BundleType.WHOLE, job, [tasks[1]], cpu, Resource.from_list({"cpu": "2"}))
    safe = Bundle(BundleType.SAFE, job, [tasks[2]], cpu, Resource())
    bundles = [low_roi, safe, high_roi]
    sort_bundles_for_preempt(bundles, cpu, lambda l, r: False)
    assert bundles == [safe, high_roi, low_roi]
