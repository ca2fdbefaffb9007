"""The PodGroup controller: plain pods with the Volcano scheduler get a PodGroup."""

from __future__ import annotations

from typing import Any

import pytest
from ctrl_harness import Harness


def plain_pod(name: str, *, scheduler: str = "volcano", annotations: dict[str, str] | None = None,
              owner: dict[str, Any] | None = None, cpu: str = "500m") -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "default"}
    if annotations:
        md["annotations"] = annotations
    if owner:
        md["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}]}}


def test_plain_pod_gets_a_podgroup() -> None:
    h = Harness()
    pod = h.create(plain_pod("p1"))
    uid = pod["metadata"]["uid"]
    pg = h.get("PodGroup", "default", f"podgroup-{uid}")
    assert pg["spec"] == {
        "minMember": 1,
        "minResources": {"count/pods": "1", "cpu": "500m", "memory": "256Mi", "pods": "1", "requests.cpu": "500m",
                         "requests.memory": "256Mi"},
        "queue": "default",  # defaulted by admission
    }
    assert pg["status"] == {"phase": "Pending"}
    assert pg["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "p1", "uid": uid,
                                                  "controller": True, "blockOwnerDeletion": True}]
    assert h.get("Pod", "default", "p1")["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": f"podgroup-{uid}"}
    # Deleting the pod collects its PodGroup.
    h.store.delete("Pod", "default", "p1")
    h.settle()
    assert h.store.list("PodGroup") == []


def test_queue_name_annotation_and_copied_annotations() -> None:
    h = Harness()
    h.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q1"},
              "spec": {"weight": 1}})
    pod = h.create(plain_pod("p1", annotations={"scheduling.volcano.sh/queue-name": "q1",
                                                "volcano.sh/preemptable": "true"}))
    pg = h.get("PodGroup", "default", f"podgroup-{pod['metadata']['uid']}")
    assert pg["spec"]["queue"] == "q1"
    assert pg["metadata"]["annotations"] == {"volcano.sh/preemptable": "true"}


def test_group_min_member_from_owner() -> None:
    h = Harness()
    rs = h.create({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": "rs", "namespace": "default",
                                "annotations": {"scheduling.volcano.sh/group-min-member": "3",
                                                "volcano.sh/team": "a", "other": "x"}},
                   "spec": {"replicas": 3}})
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": rs["metadata"]["uid"],
             "controller": True}
    for i in range(3):
        h.create(plain_pod(f"rs-{i}", owner=owner))
    pgs = h.store.list("PodGroup")
    assert [p["metadata"]["name"] for p in pgs] == [f"podgroup-{rs['metadata']['uid']}"]
    pg = pgs[0]
    assert pg["spec"]["minMember"] == 3
    assert pg["spec"]["minResources"]["cpu"] == "1500m"
    assert pg["metadata"]["annotations"] == {"volcano.sh/team": "a"}  # only volcano.sh/* is inherited
    assert pg["metadata"]["ownerReferences"] == [owner]
    for i in range(3):
        ann = h.get("Pod", "default", f"rs-{i}")["metadata"]["annotations"]
        assert ann["scheduling.k8s.io/group-name"] == pg["metadata"]["name"]


@pytest.mark.parametrize("value", ["many", "\u0663", "1_0"])  # strconv.Atoi reads neither
def test_bad_group_min_member_falls_back_to_one(value: str) -> None:
    h = Harness()
    rs = h.create({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": "rs", "namespace": "default",
                                "annotations": {"scheduling.volcano.sh/group-min-member": value}}, "spec": {}})
    h.create(plain_pod("p", owner={"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                   "uid": rs["metadata"]["uid"], "controller": True}))
    assert h.store.list("PodGroup")[0]["spec"]["minMember"] == 1


def test_other_schedulers_and_grouped_pods_are_ignored() -> None:
    h = Harness()
    h.create(plain_pod("p1", scheduler="default-scheduler"))
    h.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
              "metadata": {"name": "mine", "namespace": "default"}, "spec": {"minMember": 1}})
    h.create(plain_pod("p2", annotations={"scheduling.k8s.io/group-name": "mine"}))
    assert [p["metadata"]["name"] for p in h.store.list("PodGroup")] == ["mine"]


def test_network_topology_from_pod_annotations() -> None:
    h = Harness()
    pod = h.create(plain_pod("p1", annotations={"volcano.sh/network-topology-mode": "Soft",
                                                "volcano.sh/network-topology-highest-tier": "2"}))
    pg = h.get("PodGroup", "default", f"podgroup-{pod['metadata']['uid']}")
    assert pg["spec"]["networkTopology"] == {"mode": "soft", "highestTierAllowed": 2}


MODE, TIER = "volcano.sh/network-topology-mode", "volcano.sh/network-topology-highest-tier"


# upstream's TestBuildPodGroupFromPodWithNetworkTopology, and what strconv.Atoi refuses
@pytest.mark.parametrize(("annotations", "topology"), [
    ({MODE: "hard", TIER: "2"}, {"mode": "hard", "highestTierAllowed": 2}),
    ({MODE: "soft"}, {"mode": "soft"}),
    ({TIER: "1"}, {"mode": "hard", "highestTierAllowed": 1}),
    ({}, None),
    ({MODE: "invalid", TIER: "3"}, {"mode": "hard", "highestTierAllowed": 3}),
    ({MODE: "SOFT", TIER: "+2"}, {"mode": "soft", "highestTierAllowed": 2}),
    ({TIER: "one"}, {"mode": "hard"}),
    ({TIER: " 2"}, {"mode": "hard"}),
    ({TIER: "2_0"}, {"mode": "hard"}),
    ({TIER: "\u0662"}, {"mode": "hard"}),  # an Arabic-Indic two: not an ASCII digit
    ({TIER: "9223372036854775808"}, {"mode": "hard"}),
    ({MODE: ""}, {"mode": "hard"}),
])
def test_network_topology_annotations_as_upstream_parses_them(annotations: dict[str, str],
                                                               topology: dict[str, Any] | None) -> None:
    h = Harness()
    pod = h.create(plain_pod("p1", annotations=annotations or None))
    pg = h.get("PodGroup", "default", f"podgroup-{pod['metadata']['uid']}")
    assert pg["spec"].get("networkTopology") == topology


def test_an_invalid_topology_annotation_is_logged_with_the_pod_and_the_podgroup_still_made(caplog) -> None:
    h = Harness()
    with caplog.at_level("WARNING", logger="pyvolcano.controllers.podgroup"):
        pod = h.create(plain_pod("p1", annotations={MODE: "strict", TIER: "x"}))
    assert h.get("PodGroup", "default", f"podgroup-{pod['metadata']['uid']}")["spec"]["networkTopology"] == {
        "mode": "hard"}
    messages = [r.getMessage() for r in caplog.records]
    assert "Invalid network topology mode 'strict' in pod default/p1, using default 'hard' mode" in messages
    assert any(m.startswith("Invalid network topology highest tier x in pod default/p1") for m in messages)


def test_topology_annotations_of_the_owner_are_not_a_topology_constraint() -> None:
    # upstream reads the constraint from the pod's own annotations; an owner's volcano.sh/
    # annotations are only inherited as PodGroup annotations
    h = Harness()
    rs = h.create({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
        "name": "rs", "namespace": "default", "annotations": {MODE: "soft"}}, "spec": {}})
    h.create(plain_pod("p1", owner={"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                    "uid": rs["metadata"]["uid"], "controller": True}))
    pg = h.get("PodGroup", "default", f"podgroup-{rs['metadata']['uid']}")
    assert "networkTopology" not in pg["spec"] and pg["metadata"]["annotations"][MODE] == "soft"


# --------------------------------------------------------------------------- ReplicaSets and StatefulSets


def replica_set(name: str, replicas: int, *, min_member: str | None = None, kind: str = "ReplicaSet",
                revision: str = "") -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "default"}
    if min_member is not None:
        md["annotations"] = {"scheduling.volcano.sh/group-min-member": min_member}
    out: dict[str, Any] = {"apiVersion": "apps/v1", "kind": kind, "metadata": md,
                           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}}}
    if revision:
        out["status"] = {"updateRevision": revision}
    return out


def owned_pod(name: str, owner: dict[str, Any], **labels: str) -> dict[str, Any]:
    pod = plain_pod(name, owner={"apiVersion": "apps/v1", "kind": owner["kind"], "name": owner["metadata"]["name"],
                                 "uid": owner["metadata"]["uid"], "controller": True})
    pod["metadata"]["labels"] = {"app": owner["metadata"]["name"], **labels}
    return pod


def test_a_replica_set_scaled_to_zero_loses_its_podgroup() -> None:
    h = Harness()
    rs = h.create(replica_set("web", 2))
    h.create(owned_pod("web-a", rs))
    h.create(owned_pod("web-b", rs))
    pg_name = f"podgroup-{rs['metadata']['uid']}"
    assert [p["metadata"]["name"] for p in h.store.list("PodGroup")] == [pg_name]
    h.store.update({**h.get("ReplicaSet", "default", "web"), "spec": {**rs["spec"], "replicas": 0}})
    h.settle()
    assert h.store.list("PodGroup") == []


def test_a_replica_sets_new_min_member_reaches_its_podgroup_with_the_next_pod() -> None:
    h = Harness()
    rs = h.create(replica_set("web", 2, min_member="2"))
    h.create(owned_pod("web-a", rs))
    pg_name = f"podgroup-{rs['metadata']['uid']}"
    assert h.get("PodGroup", "default", pg_name)["spec"]["minMember"] == 2
    # The workload is scaled and its min member raised; a new pod comes with the update.
    current = h.get("ReplicaSet", "default", "web")
    current["metadata"]["annotations"]["scheduling.volcano.sh/group-min-member"] = "3"
    current["spec"]["replicas"] = 3
    h.store.update(current)
    pod = owned_pod("web-0", rs)
    h.store.create(pod)
    h.settle()
    pg = h.get("PodGroup", "default", pg_name)
    assert pg["spec"]["minMember"] == 3
    assert pg["spec"]["minResources"]["cpu"] == "1500m"
    assert pg["status"] == {"phase": "Pending"}  # the status is kept
    assert h.get("Pod", "default", "web-0")["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == pg_name


def test_a_replica_set_update_leaves_a_podgroup_whose_pods_are_annotated_alone() -> None:
    h = Harness()
    rs = h.create(replica_set("web", 1, min_member="1"))
    h.create(owned_pod("web-a", rs))
    before = h.get("PodGroup", "default", f"podgroup-{rs['metadata']['uid']}")
    current = h.get("ReplicaSet", "default", "web")
    current["metadata"]["annotations"]["scheduling.volcano.sh/group-min-member"] = "5"
    h.store.update(current)
    h.settle()
    assert h.get("PodGroup", "default", f"podgroup-{rs['metadata']['uid']}") == before


def test_a_stateful_set_acts_on_the_pods_of_its_update_revision() -> None:
    h = Harness()
    sts = h.create(replica_set("db", 2, kind="StatefulSet", revision="db-v2", min_member="2"))
    old = owned_pod("db-0", sts, **{"controller-revision-hash": "db-v1"})
    old["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "elsewhere"}
    h.store.create(old)
    new = owned_pod("db-1", sts, **{"controller-revision-hash": "db-v2"})
    h.store.create(new)
    h.settle()
    pg = h.get("PodGroup", "default", f"podgroup-{sts['metadata']['uid']}")
    assert pg["spec"]["minMember"] == 2
    current = h.get("StatefulSet", "default", "db")
    h.store.update({**current, "spec": {**current["spec"], "replicas": 0}})
    h.settle()
    assert [p["metadata"]["name"] for p in h.store.list("PodGroup")] == []


def test_without_inherit_owner_annotations_every_pod_is_a_gang_of_one() -> None:
    h = Harness()
    h.podgroups.inherit_owner_annotations = False
    rs = h.create(replica_set("web", 3, min_member="3"))
    h.create(owned_pod("web-a", rs))
    pg = h.get("PodGroup", "default", f"podgroup-{rs['metadata']['uid']}")
    assert pg["spec"]["minMember"] == 1 and "annotations" not in pg["metadata"]


def test_the_controller_manager_option_reaches_the_podgroup_controller() -> None:
    from pyvolcano.runtime.controller_manager import CONTROLLER_KINDS, build_controllers
    from pyvolcano.store.memory import InMemoryStore

    (ctrl,) = build_controllers(InMemoryStore(), ["pg-controller"], inherit_owner_annotations=False)
    assert ctrl.inherit_owner_annotations is False
    assert {"ReplicaSet", "StatefulSet"} <= set(CONTROLLER_KINDS)
