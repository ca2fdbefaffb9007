"""Sub-jobs: how a PodGroup's ``subGroupPolicy`` groups a job's pods (upstream api/sub_job_info.go,
JobInfo.getOrCreateSubJob), their ids, sizes and gang predicates."""

from __future__ import annotations

from typing import Any

from builders import node, pod, podgroup, queue
from pyvolcano.api.sub_job import JobTopology, long_sub_job_ident
from pyvolcano.framework.session import Session
from topology_builders import open_topology_session, sub_group, topology

SPEC = "volcano.sh/task-spec"
INSTANCE = "volcano.sh/task-instance"


def session(pg: dict[str, Any], *pods: dict[str, Any]) -> Session:
    return open_topology_session(queue("q"), node("n1", cpu="16", memory="32Gi"), pg, *pods)


def topo(ssn: Session) -> JobTopology:
    t = ssn.jobs["ns/pg"].topology
    assert t is not None
    return t


def groups(t: JobTopology) -> dict[str, list[str]]:
    return {uid: sorted(task.name for task in sj.tasks.values()) for uid, sj in t.sub_jobs.items()}


def test_pods_with_the_same_match_label_values_share_a_sub_job() -> None:
    pg = podgroup("pg", min_member=3, subGroupPolicy=[sub_group("task", SPEC)])
    t = topo(session(pg, pod("a", "pg", labels={SPEC: "master"}), pod("b", "pg", labels={SPEC: "worker"}),
                     pod("c", "pg", labels={SPEC: "worker"})))
    assert groups(t) == {"ns/pg": [], "ns/pg/task-master": ["a"], "ns/pg/task-worker": ["b", "c"]}
    assert t.sub_jobs["ns/pg/task-worker"].gid == "ns/pg/task"


def test_sub_job_id_joins_the_values_of_every_match_label_key_in_key_order() -> None:
    pg = podgroup("pg", subGroupPolicy=[sub_group("p", INSTANCE, SPEC)])
    t = topo(session(pg, pod("a", "pg", labels={SPEC: "w", INSTANCE: "3"})))
    assert list(groups(t)) == ["ns/pg", "ns/pg/p-3-w"]


def test_pod_missing_a_key_or_with_an_empty_value_falls_to_the_default_sub_job() -> None:
    pg = podgroup("pg", subGroupPolicy=[sub_group("p", SPEC, INSTANCE)])
    t = topo(session(pg, pod("a", "pg", labels={SPEC: "w"}), pod("b", "pg", labels={SPEC: "w", INSTANCE: ""})))
    assert groups(t) == {"ns/pg": ["a", "b"]}


def test_first_matching_policy_wins() -> None:
    pg = podgroup("pg", subGroupPolicy=[sub_group("first", SPEC), sub_group("second", SPEC)])
    t = topo(session(pg, pod("a", "pg", labels={SPEC: "w"})))
    assert groups(t) == {"ns/pg": [], "ns/pg/first-w": ["a"]}


def test_label_selector_must_match_before_the_keys_are_read() -> None:
    pg = podgroup("pg", subGroupPolicy=[sub_group("gpu", SPEC, selector={"matchLabels": {"gpu": "yes"}}),
                                        sub_group("any", SPEC)])
    t = topo(session(pg, pod("a", "pg", labels={SPEC: "w", "gpu": "yes"}), pod("b", "pg", labels={SPEC: "w"})))
    assert groups(t) == {"ns/pg": [], "ns/pg/gpu-w": ["a"], "ns/pg/any-w": ["b"]}


def test_policy_without_match_label_keys_takes_no_pod() -> None:
    pg = podgroup("pg", subGroupPolicy=[sub_group("none")])
    t = topo(session(pg, pod("a", "pg", labels={SPEC: "w"})))
    assert groups(t) == {"ns/pg": ["a"]}


def test_sub_job_size_is_sub_group_size_and_default_sub_job_size_is_one_with_policies() -> None:
    pg = podgroup("pg", min_member=4, subGroupPolicy=[sub_group("p", SPEC, size=3)])
    t = topo(session(pg, pod("a", "pg", labels={SPEC: "w"}), pod("b", "pg")))
    assert t.sub_jobs["ns/pg/p-w"].min_available == 3
    assert t.default_sub_job.min_available == 1


def test_job_without_policies_is_one_default_sub_job_of_min_member() -> None:
    pg = podgroup("pg", min_member=2, networkTopology=topology("hard", 1))
    t = topo(session(pg, pod("a", "pg"), pod("b", "pg")))
    assert groups(t) == {"ns/pg": ["a", "b"]}
    assert t.default_sub_job.min_available == 2
    assert t.default_sub_job.network_topology is not None


def test_match_index_is_the_first_value_read_as_an_integer_else_zero() -> None:
    pg = podgroup("pg", subGroupPolicy=[sub_group("p", SPEC)])
    t = topo(session(pg, pod("a", "pg", labels={SPEC: "12"}), pod("b", "pg", labels={SPEC: "w1"})))
    assert t.sub_jobs["ns/pg/p-12"].match_index == 12
    assert t.sub_jobs["ns/pg/p-w1"].match_index == 0


def test_ids_longer_than_128_characters_are_hashed_and_encoded_like_apimachinery() -> None:
    value = "v" * 129
    pg = podgroup("pg", subGroupPolicy=[sub_group("p", SPEC)])
    t = topo(session(pg, pod("a", "pg", labels={SPEC: value})))
    (uid,) = [u for u in t.sub_jobs if u != "ns/pg"]
    ident = long_sub_job_ident(value)
    assert uid == f"ns/pg/p-{ident}"
    # FNV-32a of the join in decimal, each digit mapped onto "bcdfghjklmnpqrstvwxz2456789".
    assert long_sub_job_ident("a" * 129) != long_sub_job_ident("b" * 129)
    assert set(ident) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_long_ident_is_the_encoded_decimal_fnv32a_hash() -> None:
    # FNV-32a("a") = 3826002220; each digit d becomes alphabet[ord(d) % 27] ('3' -> '7', '0' -> '4').
    assert long_sub_job_ident("a") == "7d6b446664"


def test_only_long_joins_are_hashed() -> None:
    value = "v" * 128
    pg = podgroup("pg", subGroupPolicy=[sub_group("p", SPEC)])
    t = topo(session(pg, pod("a", "pg", labels={SPEC: value})))
    assert f"ns/pg/p-{value}" in t.sub_jobs


def test_job_is_valid_only_with_min_sub_groups_sub_jobs_per_policy() -> None:
    pg = podgroup("pg", min_member=1, subGroupPolicy=[sub_group("p", SPEC, min_groups=2)])
    one = topo(session(pg, pod("a", "pg", labels={SPEC: "x"})))
    two = topo(session(pg, pod("a", "pg", labels={SPEC: "x"}), pod("b", "pg", labels={SPEC: "y"})))
    assert not one.check_valid()
    assert two.check_valid()


def test_job_is_ready_only_with_min_sub_groups_ready_sub_jobs() -> None:
    pg = podgroup("pg", min_member=1, subGroupPolicy=[sub_group("p", SPEC, min_groups=2)])
    t = topo(session(pg, pod("a", "pg", labels={SPEC: "x"}, node_name="n1", phase="Running"),
                     pod("b", "pg", labels={SPEC: "y"})))
    assert t.sub_jobs["ns/pg/p-x"].is_ready()
    assert not t.sub_jobs["ns/pg/p-y"].is_ready()
    assert not t.check_ready()


def test_sub_job_min_resources_sum_every_pending_task() -> None:
    pg = podgroup("pg", subGroupPolicy=[sub_group("p", SPEC, size=1)])
    t = topo(session(pg, pod("a", "pg", cpu="2", labels={SPEC: "w"}), pod("b", "pg", cpu="3", labels={SPEC: "w"}),
                     pod("c", "pg", cpu="5", labels={SPEC: "w"}, node_name="n1", phase="Running")))
    assert t.sub_jobs["ns/pg/p-w"].min_resources().milli_cpu == 5000
