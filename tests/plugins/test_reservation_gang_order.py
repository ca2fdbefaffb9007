"""``reservation.gangOrder: shortestFirst``: waiting gangs with the shortest expected runtime go
first, until a gang has waited as long as its own runtime (it is then due, and goes before the
gangs that are not); other jobs keep the session's order."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from builders import node, open_session, pod, podgroup, queue
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.framework.session import Session
from pyvolcano.plugins.reservation import ReservationPlugin
from pyvolcano.store.base import to_rfc3339
from sim_builders import simulate, vcjob


def _conf(order: str | None, *, lend: bool = False) -> str:
    args: dict[str, Any] = {"reservation.lendShares": lend} if lend else {}
    if order is not None:
        args["reservation.gangOrder"] = order
    return yaml.safe_dump({"actions": "enqueue, allocate, backfill", "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "reservation", "arguments": args}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"}, {"name": "nodeorder"}]}]})


def _gang(name: str, created: float, runtime: str | None, *, pods: bool = True, **extra: Any) -> list[dict[str, Any]]:
    """A gang of two 2-cpu pods created at ``created`` s; with ``pods`` false, a Pending PodGroup
    whose pods do not exist yet, its runtime on the PodGroup."""
    pg = podgroup(name, queue="a", min_member=2, phase="Inqueue" if pods else "Pending",
                  minResources={"cpu": "4"}, **extra)
    pg["metadata"]["creationTimestamp"] = to_rfc3339(created)
    if not pods:
        if runtime is not None:
            pg["metadata"]["annotations"] = {"pyvolcano.io/duration": runtime}
        return [pg]
    out = [pg]
    for i in range(2):
        p = pod(f"{name}-{i}", name, cpu="2", memory=None)
        if runtime is not None:
            p["metadata"]["annotations"]["pyvolcano.io/duration"] = runtime
        out.append(p)
    return out


def _session(*docs: dict[str, Any], now: float, order: str | None = "shortestFirst") -> Session:
    return open_session(queue("a"), node("n1", cpu="2"), *docs, conf=_conf(order), now=now)


def _first(ssn: Session, a: str, b: str) -> str:
    """Which of jobs ``a`` and ``b`` the session's job order puts first."""
    return a if ssn.job_order_fn(ssn.jobs[f"ns/{a}"], ssn.jobs[f"ns/{b}"]) else b


def test_shorter_waiting_gang_goes_before_an_older_longer_one() -> None:
    docs = (*_gang("long", 0, "1000s"), *_gang("short", 5, "100s"))
    assert _first(_session(*docs, now=10), "long", "short") == "short"
    assert _first(_session(*docs, now=10, order=None), "long", "short") == "long"
    assert _first(_session(*docs, now=10, order="jobOrder"), "long", "short") == "long"


def test_gang_that_has_waited_its_runtime_is_due_and_goes_first() -> None:
    docs = (*_gang("long", 0, "1000s"), *_gang("short", 900, "500s"))
    assert _first(_session(*docs, now=999), "long", "short") == "short"
    assert _first(_session(*docs, now=1000), "long", "short") == "long"  # short has waited 100 s of its 500


def test_two_due_gangs_keep_the_session_order() -> None:
    docs = (*_gang("old", 0, "100s"), *_gang("new", 50, "10s"))
    assert _first(_session(*docs, now=500), "old", "new") == "old"


def test_gang_without_a_runtime_is_due_at_once() -> None:
    docs = (*_gang("short", 0, "100s"), *_gang("unknown", 5, None))
    assert _first(_session(*docs, now=10), "short", "unknown") == "unknown"


def test_pending_podgroup_without_pods_is_ordered_by_its_own_runtime() -> None:
    docs = (*_gang("long", 0, "1000s"), *_gang("planned", 5, "100s", pods=False))
    assert _first(_session(*docs, now=10), "long", "planned") == "planned"
    no_runtime = (*_gang("long", 0, "1000s"), *_gang("planned", 5, None, pods=False))
    assert _first(_session(*no_runtime, now=10), "long", "planned") == "planned"  # due: declares none


def test_a_job_that_is_not_a_waiting_gang_keeps_the_session_order() -> None:
    single = [podgroup("single", queue="a"), pod("single-0", "single", cpu="1", memory=None)]
    single[0]["metadata"]["creationTimestamp"] = to_rfc3339(0)
    single[1]["metadata"]["annotations"]["pyvolcano.io/duration"] = "5000s"
    docs = (*single, *_gang("short", 5, "100s"))
    assert _first(_session(*docs, now=10), "single", "short") == "single"


def test_unknown_gang_order_is_an_argument_error() -> None:
    with pytest.raises(ArgumentError, match=r"reservation\.gangOrder.*expected jobOrder or shortestFirst"):
        ReservationPlugin({"reservation.gangOrder": "shortest"})


def _scenario() -> list[tuple[float, dict[str, Any]]]:
    """One queue, two 4-cpu nodes both busy until 100 s; then a 1000 s gang of two 4-cpu pods,
    and 5 s later a 50 s one: only one of them fits at a time."""
    long_gang = vcjob("long", replicas=2, cpu="4", duration="1000s")
    short_gang = vcjob("short", replicas=2, cpu="4", duration="50s")
    for job, runtime in ((long_gang, "1000s"), (short_gang, "50s")):
        job["metadata"]["annotations"] = {"pyvolcano.io/duration": runtime}
    return [(0, node("n1", cpu="4", memory="64Gi")), (0, node("n2", cpu="4", memory="64Gi")),
            (0, vcjob("busy", replicas=2, cpu="4", duration="100s")),
            (10, long_gang), (15, short_gang)]


def _starts(conf: str) -> dict[str, float | None]:
    result, _ = simulate(_scenario(), conf=conf)
    return {k.split("/")[1]: j.started for k, j in result.jobs.items()}


def test_simulated_short_gang_starts_first_and_the_long_one_right_after() -> None:
    fifo = _starts(_conf(None))
    shortest = _starts(_conf("shortestFirst"))
    assert fifo["long"] is not None and fifo["short"] is not None
    assert shortest["long"] is not None and shortest["short"] is not None
    assert 100 <= fifo["long"] <= 105 and fifo["short"] >= 1100
    assert 100 <= shortest["short"] <= 105 and 150 <= shortest["long"] <= 160
    # the gangs' mean wait: (90 + 1085) / 2 s first come first served, (140 + 85) / 2 s shortest first
    assert (shortest["long"] - 10) + (shortest["short"] - 15) < (fifo["long"] - 10) + (fifo["short"] - 15)


def test_job_order_argument_decides_as_the_plugin_without_it() -> None:
    assert _starts(_conf("jobOrder")) == _starts(_conf(None))
