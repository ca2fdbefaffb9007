"""``reservation.lendShares``: the reserved gang's queue lends its idle share to pods that end
before the reservation starts, and what stays idle after the gang has its share to pods that end
later; proportion's Allocatable and Overused honour the loan."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from builders import node, open_session, pod, podgroup, queue, schedule
from pyvolcano.api.task import TaskInfo
from pyvolcano.framework.session import Session
from pyvolcano.store.base import to_rfc3339
from sim_builders import simulate, vcjob


def _conf(lend: bool | None) -> str:
    plugins: list[dict[str, Any]] = [{"name": "predicates"}, {"name": "proportion"}, {"name": "nodeorder"}]
    if lend is not None:
        plugins.append({"name": "reservation", "arguments": {"reservation.lendShares": lend}})
    return yaml.safe_dump({"actions": "allocate, backfill",
                           "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]}, {"plugins": plugins}]})


def _timed(doc: dict[str, Any], runtime: str, *, started: float | None = None) -> dict[str, Any]:
    doc["metadata"]["annotations"]["pyvolcano.io/duration"] = runtime
    if started is not None:
        doc["status"]["startTime"] = to_rfc3339(started)
    return doc


def _cluster(*borrowers: dict[str, Any], pods: tuple[str, str] = ("110", "110"),
             held: str = "4", gang_cpu: str = "6") -> list[dict[str, Any]]:
    """Queues a (weight 3) and b (weight 1) on two 8-cpu nodes (of ``pods`` pods each). b runs
    ``held`` cpu on n1 until 200 s (4: its deserved share); a's gang of two 6-cpu pods waits for
    n1, so it is reserved from 200 s, and a's deserved 12 cpu lie idle until then. With
    ``gang_cpu`` 5, a also has a 2-cpu pod of another job pending (so a still deserves 12) and
    its gang claims 10: 2 cpu stay idle after the gang starts."""
    extra = [] if gang_cpu == "6" else [podgroup("later", queue="a", phase="Pending"),
                                        pod("later-0", "later", cpu="2", memory=None)]
    return [queue("a", weight=3), queue("b"), node("n1", cpu="8", pods=pods[0]), node("n2", cpu="8", pods=pods[1]),
            podgroup("bl", queue="b", phase="Running"),
            _timed(pod("bl-0", "bl", cpu=held, memory=None, node_name="n1", phase="Running"), "200s", started=0.0),
            podgroup("gang", queue="a", min_member=2),
            *(pod(f"gang-{i}", "gang", cpu=gang_cpu, memory=None) for i in range(2)),
            *extra, *borrowers]


def _session(lend: bool | None, *borrowers: dict[str, Any], pods: tuple[str, str] = ("110", "110"),
             held: str = "4", gang_cpu: str = "6") -> Session:
    """A session on :func:`_cluster` at 10 s."""
    ssn = open_session(*_cluster(*borrowers, pods=pods, held=held, gang_cpu=gang_cpu), conf=_conf(lend), now=10.0)
    ssn.job_valid(ssn.jobs["ns/gang"])  # plans the reservations, as allocate's first question does
    return ssn


def _borrower(name: str, runtime: str, *, replicas: int = 1, cpu: str = "2") -> list[dict[str, Any]]:
    return [podgroup(name, queue="b"),
            *(_timed(pod(f"{name}-{i}", name, cpu=cpu, memory=None), runtime) for i in range(replicas))]


def _task(ssn: Session, job: str, index: int = 0) -> TaskInfo:
    return next(t for t in ssn.jobs[f"ns/{job}"].tasks.values() if t.name == f"{job}-{index}")


def test_pod_that_ends_before_the_reservation_borrows_the_reserved_queues_idle_share() -> None:
    ssn = _session(True, *_borrower("short", "50s"))
    assert ssn.memo.reservations.held["ns/gang"].start == 200.0
    assert ssn.allocatable(ssn.queues["b"], _task(ssn, "short"))


def test_pod_that_would_outlast_the_reservation_does_not_borrow_the_share_its_gang_claims() -> None:
    ssn = _session(True, *_borrower("long", "1000s"))
    assert not ssn.allocatable(ssn.queues["b"], _task(ssn, "long"))


def test_pod_that_would_outlast_the_reservation_borrows_only_what_stays_idle_after_it() -> None:
    # a deserves 12 cpu and its gang claims 10: one long 2-cpu pod of b may borrow the 2 left, a
    # second may not; short pods may still borrow all 12 until the gang starts.
    ssn = _session(True, *_borrower("long", "1000s", replicas=2), *_borrower("short", "50s", replicas=7),
                   gang_cpu="5")
    b = ssn.queues["b"]
    assert ssn.memo.reservations.held["ns/gang"].start == 200.0
    assert ssn.allocatable_count(b, _task(ssn, "long"), 2) == 1
    assert ssn.allocatable_count(b, _task(ssn, "short"), 7) == 6
    stmt = ssn.statement()
    stmt.allocate(_task(ssn, "long", 0), ssn.node_list[1])
    assert not ssn.allocatable(b, _task(ssn, "long", 1))
    assert ssn.allocatable_count(b, _task(ssn, "short"), 7) == 5
    stmt.discard()


def test_pod_without_a_runtime_never_borrows() -> None:
    docs = [podgroup("endless", queue="b"), pod("endless-0", "endless", cpu="2", memory=None)]
    ssn = _session(True, *docs, gang_cpu="5")
    assert not ssn.allocatable(ssn.queues["b"], _task(ssn, "endless"))


@pytest.mark.parametrize("lend", [False, None], ids=["lendShares false", "no reservation plugin"])
def test_without_lending_the_queue_at_its_share_is_refused(lend: bool | None) -> None:
    ssn = _session(lend, *_borrower("short", "50s"))
    assert not ssn.allocatable(ssn.queues["b"], _task(ssn, "short"))


def test_overused_queue_that_may_still_borrow_is_not_overused() -> None:
    # Three pod slots in all: a deserves the two its gang asks, b the one it holds, so b is at
    # its share on every dimension (upstream's Overused) and allocate would skip it without a loan.
    lent = _session(True, *_borrower("short", "50s"), pods=("2", "1"))
    kept = _session(False, *_borrower("short", "50s"), pods=("2", "1"))
    assert "ns/gang" in lent.memo.reservations.held
    assert kept.overused(kept.queues["b"])
    assert not lent.overused(lent.queues["b"])


def test_loans_stop_at_the_lenders_idle_share_and_count_agrees_with_each_pod_in_turn() -> None:
    # a's idle share is 12 cpu: six 2-cpu pods of b may borrow it, the seventh may not.
    ssn = _session(True, *_borrower("many", "50s", replicas=8))
    b = ssn.queues["b"]
    tasks = [_task(ssn, "many", i) for i in range(8)]
    assert ssn.allocatable_count(b, tasks[0], 8) == 6
    stmt = ssn.statement()
    admitted = 0
    for task in tasks:
        if not ssn.allocatable(b, task):
            break
        stmt.allocate(task, ssn.node_list[1 if admitted < 4 else 0])
        admitted += 1
    assert admitted == 6
    stmt.discard()
    assert ssn.allocatable(b, tasks[0])


@settings(max_examples=80, deadline=None)
@given(cpu=st.sampled_from(["500m", "1", "1500m", "3"]), k=st.integers(1, 24), lent=st.integers(0, 3),
       held=st.sampled_from(["2", "3", "4"]), runtime=st.sampled_from(["50s", "1000s"]),
       gang_cpu=st.sampled_from(["5", "6"]))
@example(cpu="1500m", k=12, lent=0, held="2", runtime="50s", gang_cpu="6")  # one within b's share, eight lent
@example(cpu="500m", k=8, lent=1, held="4", runtime="1000s", gang_cpu="5")  # 1 cpu left after the gang: two
def test_batch_count_equals_the_pod_by_pod_verdicts(cpu: str, k: int, lent: int, held: str, runtime: str,
                                                     gang_cpu: str) -> None:
    # b runs ``held`` of its deserved 4 cpu; ``lent`` 1-cpu pods of b are allocated first, then k
    # replicas of one template: some within b's share, the rest on a loan (of all of a's idle
    # share when they end before the gang starts, of what stays idle after it otherwise).
    ssn = _session(True, *_borrower("pre", "50s", replicas=lent, cpu="1") if lent else (),
                   *_borrower("many", runtime, replicas=k, cpu=cpu), held=held, gang_cpu=gang_cpu)
    b = ssn.queues["b"]
    stmt = ssn.statement()
    for i in range(lent):
        stmt.allocate(_task(ssn, "pre", i), ssn.node_list[1])
    tasks = [_task(ssn, "many", i) for i in range(k)]
    counted = ssn.allocatable_count(b, tasks[0], k)
    admitted = 0
    for task in tasks:
        if not ssn.allocatable(b, task):
            break
        stmt.allocate(task, ssn.node_list[1])
        admitted += 1
    assert counted == admitted


def test_a_lending_queue_does_not_borrow_from_itself() -> None:
    docs = [podgroup("extra", queue="a"), _timed(pod("extra-0", "extra", cpu="2", memory=None), "50s")]
    ssn = _session(True, *docs)
    # a's own small pod is within a's share: allowed by the share, not by a loan.
    a = ssn.queues["a"]
    assert ssn.allocatable(a, _task(ssn, "extra"))
    assert a.name in ssn.share_lender().lenders()  # type: ignore[union-attr]


def _why(*extra: dict[str, Any], gang_cpu: str = "6") -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = schedule(*_cluster(*extra, gang_cpu=gang_cpu), conf=_conf(True))["diagnoses"]
    return out


def test_job_why_says_a_pod_that_would_outlast_the_reservation_finds_the_share_left_after_it_lent() -> None:
    d = _why(*_borrower("long", "1000s"))["ns/long"]
    assert d["reason"] == "Queue.OverDeserved"
    assert ("these pods would run past the start of the gang reserved in queue(s) a, and the idle deserved share "
            "left for such pods once that gang has its share is already lent") in d["hint"]


def test_job_why_says_a_pod_without_a_runtime_cannot_borrow() -> None:
    d = _why(podgroup("endless", queue="b"), pod("endless-0", "endless", cpu="2", memory=None))["ns/endless"]
    assert d["reason"] == "Queue.OverDeserved"
    assert "lend their idle deserved share only to pods that declare a runtime" in d["hint"]


def test_job_why_says_the_lent_share_is_taken() -> None:
    # a lends 12 cpu: six 2-cpu pods of b borrow it, the seventh waits.
    docs = [doc for i in range(7) for doc in _borrower(f"s{i}", "50s")]
    out = _why(*docs)
    waiting = [k for k, d in out.items() if k.startswith("ns/s")]
    assert waiting == ["ns/s6"]
    assert out["ns/s6"]["reason"] == "Queue.OverDeserved"
    assert "the idle deserved share that queue(s) a lend is already lent" in out["ns/s6"]["hint"]


def _scenario() -> list[tuple[float, dict[str, Any]]]:
    """The same cluster run through the simulator: b's short and long pods arrive at 10 s."""
    qa = queue("a", weight=3)
    qb = queue("b")
    return [
        (0, qa), (0, qb),
        (0, node("n1", cpu="8", memory="64Gi")), (0, node("n2", cpu="8", memory="64Gi")),
        (0, vcjob("held", cpu="4", duration="200s", queue="b")),
        (1, vcjob("gang", replicas=2, cpu="6", queue="a")),
        (10, vcjob("short", cpu="2", duration="50s", queue="b")),
        (10, vcjob("long", cpu="2", duration="1000s", queue="b")),
    ]


def _started(result: Any, name: str) -> float:
    started = result.jobs[f"default/{name}"].started
    assert started is not None, name
    return float(started)


def test_simulated_loan_runs_the_short_pod_at_once_and_does_not_delay_the_gang() -> None:
    lent, _ = simulate(_scenario(), conf=_conf(True))
    kept, _ = simulate(_scenario(), conf=_conf(False))
    assert _started(lent, "short") <= 12
    assert _started(kept, "short") >= 200
    assert _started(lent, "gang") == _started(kept, "gang")
    assert 200 <= _started(lent, "gang") <= 205
    assert _started(lent, "long") >= _started(lent, "gang")


def test_lend_shares_false_decides_as_the_plugin_without_the_argument() -> None:
    off, _ = simulate(_scenario(), conf=_conf(False))
    conf = yaml.safe_load(_conf(False))
    conf["tiers"][1]["plugins"][-1]["arguments"] = {}
    default, _ = simulate(_scenario(), conf=yaml.safe_dump(conf))
    assert {k: j.started for k, j in off.jobs.items()} == {k: j.started for k, j in default.jobs.items()}
