"""allocate: gang semantics, queue order, pipelining, fit errors."""

from builders import node, pod, podgroup, queue, schedule

ALLOC = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def test_allocate_binds_every_task_of_a_fitting_gang() -> None:
    out = schedule(queue("q"), node("n1"), podgroup("pg", min_member=2),
                   pod("p-0", "pg"), pod("p-1", "pg"), conf=ALLOC)
    assert out["binds"] == {"ns/p-0": "n1", "ns/p-1": "n1"}


def test_gang_discards_statement_when_min_available_unmet() -> None:
    out = schedule(queue("q"), node("n1", cpu="2"), podgroup("pg", min_member=3),
                   pod("p-0", "pg"), pod("p-1", "pg"), pod("p-2", "pg"), conf=ALLOC)
    assert out["binds"] == {}
    assert out["podgroups"]["ns/pg"] == "Inqueue"


def test_partial_gang_beyond_min_member_is_bound() -> None:
    out = schedule(queue("q"), node("n1", cpu="2"), podgroup("pg", min_member=1),
                   pod("p-0", "pg"), pod("p-1", "pg"), pod("p-2", "pg"), conf=ALLOC)
    assert sorted(out["binds"]) == ["ns/p-0", "ns/p-1"]


def test_unschedulable_condition_explains_why() -> None:
    from builders import cache_of
    from pyvolcano.conf import load_scheduler_conf
    from pyvolcano.runtime.cycle import schedule_objects
    from pyvolcano.runtime.registry import default_registry

    cache = cache_of(queue("q"), node("n1", cpu="1"), node("n2", cpu="1", labels={"x": "y"}),
                     podgroup("pg", min_member=1), pod("p-0", "pg", cpu="2"))
    schedule_objects(cache, load_scheduler_conf(ALLOC), default_registry(), sessions=1, seed=0)
    pg = next(iter(cache.podgroups()))
    cond = next(c for c in pg.conditions if c.type == "Unschedulable")
    # The reason carries the pending diagnosis' code (docs/differences.md); upstream's text stays.
    assert cond.reason == "NodeFit.InsufficientResource"
    assert cond.message.startswith("1/1 tasks in gang unschedulable: pod group is not ready")
    assert "0/2 nodes are unavailable: 2 Insufficient cpu." in cond.message


def test_pending_podgroup_waits_for_enqueue_then_runs_in_next_session() -> None:
    out = schedule(queue("q"), node("n1"), podgroup("pg", min_member=1, phase="Pending"),
                   pod("p-0", "pg"), conf=ALLOC, sessions=2)
    assert out["binds"] == {"ns/p-0": "n1"}
    assert out["podgroups"]["ns/pg"] == "Running"


def test_proportion_caps_each_queue_at_its_deserved_share() -> None:
    # 1 CPU split between two equal-weight queues: each deserves 500m, so neither 1-CPU pod fits.
    out = schedule(queue("a"), queue("b"), node("n1", cpu="1"),
                   podgroup("a", queue="a"), podgroup("b", queue="b"),
                   pod("a-0", "a"), pod("b-0", "b"), conf=ALLOC)
    assert out["binds"] == {}


def test_queue_with_higher_priority_is_served_first() -> None:
    conf = ALLOC.replace("  - name: proportion\n", "  - name: capacity\n")
    out = schedule(queue("low", priority=1), queue("high", priority=10), node("n1", cpu="1"),
                   podgroup("a", queue="low"), podgroup("b", queue="high"),
                   pod("a-0", "a"), pod("b-0", "b"), conf=conf)
    assert out["binds"] == {"ns/b-0": "n1"}


def test_same_seed_gives_identical_decisions() -> None:
    docs = [queue("q"), *[node(f"n{i}") for i in range(20)], podgroup("pg", min_member=5),
            *[pod(f"p-{i}", "pg") for i in range(10)]]
    assert schedule(*docs, conf=ALLOC, seed=7)["binds"] == schedule(*docs, conf=ALLOC, seed=7)["binds"]
