"""sla: waiting-time job order and the enqueue / pipelined votes of overdue jobs."""

from __future__ import annotations

from typing import Any

import pytest

from builders import node, open_session, pod, podgroup, queue, schedule
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.plugins.sla import Sla

# sla in tier 1 outvotes overcommit's rejection in tier 2 once a job is overdue.
SLA_BEFORE_OVERCOMMIT = """
actions: "enqueue"
tiers:
- plugins:
  - name: sla
    arguments:
      sla-waiting-time: 2s
- plugins:
  - name: overcommit
"""

ORDER_ONLY = """
actions: "enqueue"
tiers:
- plugins:
  - name: sla
    arguments:
      sla-waiting-time: 10m
"""


def group(name: str, *, created: int = 0, wait: str | None = None, **spec: Any) -> dict[str, Any]:
    pg = podgroup(name, phase="Pending", **spec)
    pg["metadata"]["creationTimestamp"] = created
    if wait is not None:
        pg["metadata"]["annotations"] = {"volcano.sh/sla-waiting-time": wait}
    return pg


def too_big(name: str, **kw: Any) -> dict[str, Any]:
    """A PodGroup that overcommit rejects on a 4-cpu node (idle 4.8 cpu)."""
    return group(name, minResources={"cpu": "10"}, **kw)


def test_overdue_job_is_enqueued_despite_a_later_tier_rejection() -> None:
    # Sessions run at now = 0, 1, 2: the job is created at 0 with a 2 s waiting time.
    docs = [queue("q"), node("n1", cpu="4"), too_big("late")]
    assert schedule(*docs, conf=SLA_BEFORE_OVERCOMMIT, sessions=2)["podgroups"]["ns/late"] == "Pending"
    assert schedule(*docs, conf=SLA_BEFORE_OVERCOMMIT, sessions=3)["podgroups"]["ns/late"] == "Inqueue"


def test_job_annotation_overrides_the_global_waiting_time() -> None:
    docs = [queue("q"), node("n1", cpu="4"), too_big("own", wait="1s"), too_big("global")]
    out = schedule(*docs, conf=SLA_BEFORE_OVERCOMMIT, sessions=2)["podgroups"]
    assert out == {"ns/global": "Pending", "ns/own": "Inqueue"}


def test_plain_annotation_key_is_accepted() -> None:
    pg = too_big("plain")
    pg["metadata"]["annotations"] = {"sla-waiting-time": "1s"}
    out = schedule(queue("q"), node("n1", cpu="4"), pg, conf=SLA_BEFORE_OVERCOMMIT, sessions=2)
    assert out["podgroups"]["ns/plain"] == "Inqueue"


def test_sla_in_a_later_tier_cannot_override_a_rejection() -> None:
    conf = """
actions: "enqueue"
tiers:
- plugins:
  - name: overcommit
- plugins:
  - name: sla
    arguments:
      sla-waiting-time: 1s
"""
    out = schedule(queue("q"), node("n1", cpu="4"), too_big("late"), conf=conf, sessions=3)
    assert out["podgroups"]["ns/late"] == "Pending"


def test_vote_abstains_before_the_deadline_and_permits_from_it() -> None:
    # Abstaining leaves the decision to overcommit (reject); permitting ends the vote in tier 1.
    docs = [queue("q"), node("n1", cpu="4"), too_big("j", created=100, wait="30s")]
    for now, admitted in [(129.0, False), (130.0, True), (500.0, True)]:
        ssn = open_session(*docs, conf=SLA_BEFORE_OVERCOMMIT, now=now)
        assert ssn.job_enqueueable(ssn.jobs["ns/j"]) is admitted


def test_overdue_job_counts_as_pipelined_before_gang() -> None:
    conf = """
actions: "allocate"
tiers:
- plugins:
  - name: sla
    arguments:
      sla-waiting-time: 1m
- plugins:
  - name: gang
"""
    docs = [queue("q"), node("n1"), group("j", created=0, min_member=2), pod("j-0", "j"), pod("j-1", "j")]
    early = open_session(*docs, conf=conf, now=59.0)
    late = open_session(*docs, conf=conf, now=60.0)
    assert early.job_pipelined(early.jobs["ns/j"]) is False
    assert late.job_pipelined(late.jobs["ns/j"]) is True


def test_jobs_with_a_waiting_time_come_first_then_earlier_deadline() -> None:
    # Creation time and UID alone would order: later, a-none, soon.
    docs = [queue("q"), node("n1"),
            group("a-none", created=0),
            group("soon", created=100, wait="1m"),   # deadline 160
            group("later", created=0, wait="5m")]    # deadline 300
    conf = """
actions: "enqueue"
tiers:
- plugins:
  - name: sla
"""
    ssn = open_session(*docs, conf=conf)
    none, soon, later = (ssn.jobs[f"ns/{n}"] for n in ("a-none", "soon", "later"))
    assert ssn.job_order_fn(soon, later) and not ssn.job_order_fn(later, soon)
    assert ssn.job_order_fn(later, none) and not ssn.job_order_fn(none, later)


def test_global_waiting_time_applies_to_jobs_without_an_annotation() -> None:
    # a: created 50 + global 10 m = 650; b: created 10 + own 20 m = 1210. a first, although
    # creation time alone would put b first.
    docs = [queue("q"), node("n1"), group("a", created=50), group("b", created=10, wait="20m")]
    ssn = open_session(*docs, conf=ORDER_ONLY)
    assert ssn.job_order_fn(ssn.jobs["ns/a"], ssn.jobs["ns/b"])
    assert not ssn.job_order_fn(ssn.jobs["ns/b"], ssn.jobs["ns/a"])


@pytest.mark.parametrize("value", [1, "soon", "", True])
def test_waiting_time_argument_must_be_a_duration_string(value: object) -> None:
    with pytest.raises(ArgumentError, match="sla-waiting-time"):
        Sla({"sla-waiting-time": value})


@pytest.mark.parametrize("value", ["0s", "-1m"])
def test_non_positive_waiting_time_is_ignored(value: str) -> None:
    assert Sla({"sla-waiting-time": value}).job_waiting_time is None


def test_waiting_time_argument_parses_go_durations() -> None:
    assert Sla({"sla-waiting-time": "1h2m3s500ms"}).job_waiting_time == pytest.approx(3723.5)

