"""The reservation plugin: blocked gangs get nodes and a start time; backfill cannot delay them."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.plugins.reservation import ReservationPlugin
from sim_builders import node, simulate, vcjob


def _conf(reservation: bool, *, topology_aware: bool = False, **arguments: Any) -> str:
    plugins: list[dict[str, Any]] = [{"name": "predicates"}, {"name": "proportion"}, {"name": "nodeorder"}]
    if topology_aware:
        plugins.append({"name": "network-topology-aware"})
    if reservation:
        plugins.append({"name": "reservation", "arguments": arguments})
    return yaml.safe_dump({"actions": "allocate, backfill",
                           "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]}, {"plugins": plugins}]})


def _scenario(*, long_b: str | None = "200s") -> list[tuple[float, dict[str, Any]]]:
    """Two 8-cpu nodes, each half taken (until 100 s and 200 s); a gang of two whole nodes at 1 s;
    at 110 s a small pod that would run 1000 s and one that ends in 30 s."""
    return [
        (0, node("n1", cpu="8", memory="64Gi")), (0, node("n2", cpu="8", memory="64Gi")),
        (0, vcjob("long-a", cpu="5", duration="100s")),
        (0, vcjob("long-b", cpu="5", duration=long_b)),
        (1, vcjob("gang", replicas=2, cpu="8")),
        (110, vcjob("small-long", cpu="2", duration="1000s")),
        (110, vcjob("small-short", cpu="2", duration="30s")),
    ]


def _started(result: Any, name: str) -> float:
    started = result.jobs[f"default/{name}"].started
    assert started is not None, name
    return float(started)


def test_blocked_gang_gets_reservation_on_the_nodes_that_free_first() -> None:
    seen: list[tuple[float, float, tuple[str, ...]]] = []
    result, sim = None, None

    def watch(t: float, _res: Any) -> None:
        for r in sim.cache.memo.reservations.held.values():  # type: ignore[union-attr]
            seen.append((t, r.start, r.nodes))

    from pyvolcano.conf import load_scheduler_conf
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.simulator.runtime import Simulation
    from pyvolcano.simulator.workload import Submission

    sim = Simulation(config=load_scheduler_conf(_conf(True)), registry=default_registry())
    sim.submit([Submission(at, i, "test", o) for i, (at, o) in enumerate(_scenario())])
    sim.on_session = watch
    result = sim.run()
    assert seen, "the gang never got a reservation"
    _t, start, nodes = seen[0]
    assert nodes == ("n1", "n2")
    assert 195 <= start <= 205  # long-b ends 200 s after it started
    assert all(r[2] == ("n1", "n2") for r in seen)
    assert 195 <= _started(result, "gang") <= 210


def test_small_job_that_would_delay_the_reservation_is_held_off() -> None:
    result, _ = simulate(_scenario(), conf=_conf(True))
    assert _started(result, "small-long") >= _started(result, "gang")
    assert _started(result, "gang") <= 210


def test_small_job_that_ends_before_the_reservation_backfills() -> None:
    result, _ = simulate(_scenario(), conf=_conf(True))
    assert 110 <= _started(result, "small-short") <= 115


def test_without_the_plugin_the_small_job_delays_the_gang() -> None:
    result, _ = simulate(_scenario(), conf=_conf(False))
    assert _started(result, "small-long") <= 115
    assert _started(result, "gang") >= 1100


def test_reservation_is_replanned_when_a_pod_ends_before_its_expected_end() -> None:
    # long-b declares no runtime: the plan assumes the default runtime (1000 s); it really runs 200 s.
    from pyvolcano.conf import load_scheduler_conf
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.simulator.runtime import Simulation
    from pyvolcano.simulator.workload import Submission

    sim = Simulation(config=load_scheduler_conf(_conf(True, **{"reservation.defaultRuntime": "1000s"})),
                     registry=default_registry(), default_duration=200.0)
    sim.submit([Submission(at, i, "test", o) for i, (at, o) in enumerate(_scenario(long_b=None))])
    starts: list[float] = []
    sim.on_session = lambda t, _r: starts.extend(r.start for r in sim.cache.memo.reservations.held.values())
    result = sim.run()
    assert starts[0] >= 995            # planned from the declared default
    assert 195 <= _started(result, "gang") <= 210   # replanned once long-b ended at 200 s
    assert _started(result, "small-short") <= 115


def test_reservation_survives_sessions_in_the_memo() -> None:
    from pyvolcano.conf import load_scheduler_conf
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.simulator.runtime import Simulation
    from pyvolcano.simulator.workload import Submission

    sim = Simulation(config=load_scheduler_conf(_conf(True)), registry=default_registry())
    sim.submit([Submission(at, i, "test", o) for i, (at, o) in enumerate(_scenario())])
    generations: list[int] = []
    sim.on_session = lambda t, _r: generations.append(sim.cache.memo.reservations.generation)
    sim.run()
    # Held across many sessions, replanned only when its inputs moved.
    assert len(generations) > max(generations) >= 1


@pytest.mark.parametrize(("key", "value"), [("reservation.maxReservations", -1), ("reservation.minMembers", 0),
                                            ("reservation.defaultRuntime", "soon")])
def test_bad_argument_is_refused_with_its_key(key: str, value: Any) -> None:
    with pytest.raises(ArgumentError, match=re.escape(key)):
        ReservationPlugin({key: value})


def test_unknown_argument_is_refused() -> None:
    with pytest.raises(ArgumentError, match=r"reservation\.maxReservation"):
        ReservationPlugin({"reservation.maxReservation": 2})


def test_job_why_names_the_reservation_and_the_pod_it_holds_off() -> None:
    from pyvolcano.conf import load_scheduler_conf
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.simulator.runtime import Simulation
    from pyvolcano.simulator.workload import Submission

    sim = Simulation(config=load_scheduler_conf(_conf(True)), registry=default_registry())
    sim.submit([Submission(at, i, "test", o) for i, (at, o) in enumerate(_scenario())])
    reasons: dict[str, set[str]] = {}
    hints: dict[str, str] = {}

    def watch(_t: float, result: Any) -> None:
        for key, diag in result.diagnoses.items():
            reasons.setdefault(key.partition("/")[2].split("-uid-")[0], set()).add(str(diag.reason))
            hints[str(diag.reason)] = diag.hint

    sim.on_session = watch
    sim.run()
    assert "Reservation.Held" in reasons["gang"]
    assert "Reservation.Backfill" in reasons["small-long"]
    assert "n1, n2 are held for it" in hints["Reservation.Held"]
    assert "reserved for gang default/gang" in hints["Reservation.Backfill"]


def test_gang_whose_pods_were_recreated_keeps_its_place_for_the_reservation() -> None:
    # "old" was created first; its pods were evicted (reclaimed) and created again later than
    # "new"'s. The reservation goes by the job's place in the scheduling order, not its pods' age.
    from builders import node as plain_node
    from builders import open_session, pod, podgroup, queue
    from pyvolcano.store.base import to_rfc3339

    def created(doc: dict[str, Any], at: float) -> dict[str, Any]:
        doc["metadata"]["creationTimestamp"] = to_rfc3339(at)
        return doc

    running = pod("r-0", "r", cpu="4", node_name="n1", phase="Running")
    running["status"]["startTime"] = to_rfc3339(500.0)
    running["metadata"]["annotations"]["pyvolcano.io/duration"] = "100s"
    docs = [queue("q"), plain_node("n1", cpu="4"), plain_node("n2", cpu="4"),
            created(podgroup("r", phase="Running"), 400.0), running,
            created(podgroup("old", min_member=2), 10.0), created(podgroup("new", min_member=2), 100.0)]
    docs += [created(pod(f"old-{i}", "old", cpu="4"), 550.0) for i in range(2)]
    docs += [created(pod(f"new-{i}", "new", cpu="4"), 100.0) for i in range(2)]
    ssn = open_session(*docs, conf=_conf(True), now=560.0)
    ssn.job_valid(ssn.jobs["ns/new"])
    assert list(ssn.memo.reservations.held) == ["ns/old"]
    assert ssn.memo.reservations.held["ns/old"].start == 600.0


def test_reservation_starts_when_its_queue_has_room_for_the_gang_not_when_nodes_free() -> None:
    # n2 and n3 are free now, but queue q (deserved 8 cpu of 16, the other queue asking as much)
    # already runs 4 cpu until 600 s: proportion refuses the gang's 8 cpu before then, so a
    # reservation starting now would hold n2 and n3 for a gang that cannot take them.
    from builders import node as plain_node
    from builders import open_session, pod, podgroup, queue
    from pyvolcano.store.base import to_rfc3339

    def running(name: str, group: str, node_name: str, started: float, runtime: str) -> dict[str, Any]:
        doc = pod(name, group, cpu="4", node_name=node_name, phase="Running")
        doc["status"]["startTime"] = to_rfc3339(started)
        doc["metadata"]["annotations"]["pyvolcano.io/duration"] = runtime
        return doc

    docs = [queue("q"), queue("other"), *(plain_node(f"n{i}", cpu="4") for i in range(1, 5)),
            podgroup("r", phase="Running"), running("r-0", "r", "n1", 500.0, "100s"),
            podgroup("o", queue="other", phase="Running"), running("o-0", "o", "n4", 500.0, "1000s"),
            podgroup("o2", queue="other"), pod("o2-0", "o2", cpu="4"),
            podgroup("gang", min_member=2), pod("gang-0", "gang", cpu="4"), pod("gang-1", "gang", cpu="4")]
    ssn = open_session(*docs, conf=_conf(True), now=560.0)
    ssn.job_valid(ssn.jobs["ns/gang"])
    held = ssn.memo.reservations.held["ns/gang"]
    assert held.start == 600.0


def test_pending_gang_is_reserved_within_the_share_its_queue_will_have_once_admitted() -> None:
    # The gang's PodGroup is Pending and has no pods: proportion leaves it out of queue q's
    # request, so q, with nothing else to run, deserves nothing. Once admitted, q asks 8 cpu
    # against other's 12 of 16 and deserves 8, which holds the gang: it is reserved on n4, free
    # now, and n1, free at 600 s.
    from builders import node as plain_node
    from builders import open_session, pod, podgroup, queue
    from pyvolcano.store.base import to_rfc3339

    def running(name: str, node_name: str, runtime: str) -> dict[str, Any]:
        doc = pod(name, "o", cpu="4", node_name=node_name, phase="Running")
        doc["status"]["startTime"] = to_rfc3339(500.0)
        doc["metadata"]["annotations"]["pyvolcano.io/duration"] = runtime
        return doc

    docs = [queue("q"), queue("other"), *(plain_node(f"n{i}", cpu="4") for i in range(1, 5)),
            podgroup("o", queue="other", min_member=3, phase="Running"),
            running("o-0", "n1", "100s"), running("o-1", "n2", "200s"), running("o-2", "n3", "300s"),
            podgroup("gang", min_member=2, phase="Pending", minResources={"cpu": "8"})]
    ssn = open_session(*docs, conf=_conf(True), now=560.0)
    assert ssn.queue_quotas()["q"].allocate_limit.get("cpu") == 0.0
    ssn.job_enqueueable(ssn.jobs["ns/gang"])
    held = ssn.memo.reservations.held["ns/gang"]
    assert held.start == 600.0
    assert held.nodes == ("n1", "n4")


def _racks_scenario(gang_topology: dict[str, Any] | None, ends: dict[str, str]) -> list[tuple[float, dict[str, Any]]]:
    """Racks s0 (s0-n1, s0-n2) and s1 (s1-n1, s1-n2) of 8-cpu nodes, each node half taken by a
    pod pinned to it that ends after ``ends[node]``; a gang of two whole nodes at 10 s."""
    from topology_builders import two_racks

    objs: list[tuple[float, dict[str, Any]]] = [(0, d) for d in two_racks()]
    for name in ("s0-n1", "s0-n2", "s1-n1", "s1-n2"):
        objs.append((0, node(name, cpu="8", memory="64Gi", labels={"kubernetes.io/hostname": name})))
    for name, duration in ends.items():
        objs.append((0, vcjob(f"busy-{name}", cpu="5", duration=duration,
                              node_selector={"kubernetes.io/hostname": name})))
    gang = vcjob("gang", replicas=2, cpu="8")
    if gang_topology is not None:
        gang["spec"]["networkTopology"] = gang_topology
    objs.append((10, gang))
    return objs


def _first_reservation(objs: list[tuple[float, dict[str, Any]]]) -> tuple[float, tuple[str, ...], Any]:
    from pyvolcano.conf import load_scheduler_conf
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.simulator.runtime import Simulation
    from pyvolcano.simulator.workload import Submission

    sim = Simulation(config=load_scheduler_conf(_conf(True, topology_aware=True)), registry=default_registry())
    sim.submit([Submission(at, i, "test", yaml.safe_load(yaml.safe_dump(o))) for i, (at, o) in enumerate(objs)])
    seen: list[tuple[float, tuple[str, ...]]] = []
    sim.on_session = lambda t, _r: seen.extend((r.start, r.nodes) for r in sim.cache.memo.reservations.held.values())
    result = sim.run()
    assert seen, "the gang never got a reservation"
    return seen[0][0], seen[0][1], result


_SAME_TIME = {"s0-n1": "100s", "s1-n1": "100s", "s1-n2": "100s", "s0-n2": "400s"}


def test_gang_without_topology_is_reserved_first_fit_in_node_order() -> None:
    start, nodes, _ = _first_reservation(_racks_scenario(None, _SAME_TIME))
    assert nodes == ("s0-n1", "s1-n1")
    assert 95 <= start <= 105


def test_soft_topology_gang_is_reserved_inside_one_rack_when_one_holds_it_as_early() -> None:
    from topology_builders import topology

    start, nodes, result = _first_reservation(_racks_scenario(topology("soft"), _SAME_TIME))
    assert nodes == ("s1-n1", "s1-n2")
    assert 95 <= start <= 105
    assert 95 <= _started(result, "gang") <= 110


def test_soft_topology_gang_is_not_delayed_to_keep_it_in_one_rack() -> None:
    from topology_builders import topology

    ends = {"s0-n1": "100s", "s1-n1": "100s", "s0-n2": "200s", "s1-n2": "400s"}
    start, nodes, _ = _first_reservation(_racks_scenario(topology("soft"), ends))
    assert nodes == ("s0-n1", "s1-n1")  # no rack holds it at 100 s: spread, not later
    assert 95 <= start <= 105


def test_rack_bound_gang_is_reserved_where_a_rack_holds_it() -> None:
    from topology_builders import topology

    ends = {"s0-n1": "100s", "s1-n1": "100s", "s0-n2": "200s", "s1-n2": "400s"}
    start, nodes, result = _first_reservation(_racks_scenario(topology("hard", 1), ends))
    assert nodes == ("s0-n1", "s0-n2")
    assert 195 <= start <= 205
    assert 195 <= _started(result, "gang") <= 210
