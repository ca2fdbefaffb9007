"""Volume binding in the predicates plugin: pods with WaitForFirstConsumer claims land where their volumes are."""

from __future__ import annotations

from typing import Any

from builders import claims, hostnode, local_pv, pod, podgroup, pvc, queue, schedule, storage_class


def _diag_reasons(out: dict[str, Any], job: str) -> str:
    return str(out["diagnoses"].get(job))


def test_pod_with_wffc_claim_lands_on_the_node_of_its_only_matching_pv() -> None:
    out = schedule(queue("q"), hostnode("n1"), hostnode("n2"), hostnode("n3"), storage_class("local"),
                   local_pv("pv-n2", "n2"), pvc("data"), podgroup("g"),
                   pod("p", "g", volumes=claims("data")))
    assert out["binds"] == {"ns/p": "n2"}


def test_smallest_matching_pv_is_chosen_and_not_offered_to_another_pod_in_the_session() -> None:
    out = schedule(queue("q"), hostnode("n1"), hostnode("n2"), storage_class("local"),
                   local_pv("big", "n1", size="100Gi"), local_pv("small", "n2", size="6Gi"),
                   pvc("a", size="5Gi"), pvc("b", size="5Gi"), podgroup("g", min_member=2),
                   pod("pa", "g", volumes=claims("a")), pod("pb", "g", volumes=claims("b")))
    # both fit only because the second claim does not get the PV the first took
    assert sorted(out["binds"].values()) == ["n1", "n2"]


def test_gang_waits_when_two_claims_compete_for_one_pv() -> None:
    out = schedule(queue("q"), hostnode("n1"), hostnode("n2"), storage_class("local"), local_pv("only", "n1"),
                   pvc("a"), pvc("b"), podgroup("g", min_member=2),
                   pod("pa", "g", volumes=claims("a")), pod("pb", "g", volumes=claims("b")))
    assert out["binds"] == {}
    assert "didn't find available persistent volumes to bind" in _diag_reasons(out, "ns/g")


def test_unbound_immediate_claim_keeps_the_pod_waiting_on_every_node() -> None:
    out = schedule(queue("q"), hostnode("n1"), storage_class("fast", mode="Immediate", provisioner="csi.example"),
                   pvc("data", cls="fast"), podgroup("g"), pod("p", "g", volumes=claims("data")))
    assert out["binds"] == {}
    assert "pod has unbound immediate PersistentVolumeClaims" in _diag_reasons(out, "ns/g")


def test_missing_claim_is_reported_by_name() -> None:
    out = schedule(queue("q"), hostnode("n1"), storage_class("local"), pvc("other"), podgroup("g"),
                   pod("p", "g", volumes=claims("data")))
    assert out["binds"] == {}
    assert out["diagnoses"]["ns/g"]["message"] == ('0/1 nodes are unavailable: 1 persistentvolumeclaim "data" not '
                                                   'found.')


def test_bound_claim_follows_its_pv_node_affinity() -> None:
    out = schedule(queue("q"), hostnode("n1"), hostnode("n2"), storage_class("local"),
                   local_pv("pv", "n2", claim="ns/data"), pvc("data", volume="pv", bound=True), podgroup("g"),
                   pod("p", "g", volumes=claims("data")))
    assert out["binds"] == {"ns/p": "n2"}


def test_provisioner_class_is_provisioned_on_an_allowed_topology() -> None:
    topo = [{"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]}]
    out = schedule(queue("q"), hostnode("n1", labels={"zone": "a"}), hostnode("n2", labels={"zone": "b"}),
                   storage_class("dyn", provisioner="csi.example", allowedTopologies=topo),
                   pvc("data", cls="dyn"), podgroup("g"), pod("p", "g", volumes=claims("data")))
    assert out["binds"] == {"ns/p": "n2"}


def test_no_provisioner_class_without_pv_does_not_fit() -> None:
    out = schedule(queue("q"), hostnode("n1"), storage_class("local"), pvc("data"), podgroup("g"),
                   pod("p", "g", volumes=claims("data")))
    assert out["binds"] == {}


def test_volume_binding_disabled_binds_anywhere() -> None:
    conf = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
    arguments: {predicate.VolumeBindingEnable: false}
"""
    out = schedule(queue("q"), hostnode("n1"), storage_class("local"), pvc("data"), podgroup("g"),
                   pod("p", "g", volumes=claims("data")), conf=conf)
    assert out["binds"] == {"ns/p": "n1"}


def test_diagnosis_names_the_claim_and_where_each_pv_is_pinned() -> None:
    out = schedule(queue("q"), hostnode("n1"), hostnode("n2"), storage_class("local"), local_pv("only", "n1"),
                   local_pv("tiny", "n2", size="1Gi"), pvc("a"), pvc("b"), podgroup("g", min_member=2),
                   pod("pa", "g", volumes=claims("a")), pod("pb", "g", volumes=claims("b")))
    d = out["diagnoses"]["ns/g"]
    assert d["reason"] == "Volume.NoMatchingPV"
    assert "ns/b wants 5Gi ReadWriteOnce of class local" in d["hint"]
    assert "want 2 volumes of the class and 1 available PV(s)" in d["hint"]
    [fig] = d["volumes"]
    assert fig["claim"] == "ns/b" and fig["binding_mode"] == "WaitForFirstConsumer"
    assert fig["pvs"] == [{"name": "only", "nodes": "n1", "state": "available"},
                          {"name": "tiny", "nodes": "n2", "state": "too small (1Gi)"}]


def test_diagnosis_of_unbound_immediate_claim() -> None:
    out = schedule(queue("q"), hostnode("n1"), storage_class("fast", mode="Immediate", provisioner="csi.example"),
                   pvc("data", cls="fast"), podgroup("g"), pod("p", "g", volumes=claims("data")))
    d = out["diagnoses"]["ns/g"]
    assert d["reason"] == "Volume.UnboundImmediate"
    assert "ns/data (class fast)" in d["hint"]


def test_diagnosis_of_bound_claim_pinned_to_a_node_that_fails_otherwise() -> None:
    taint = [{"key": "maintenance", "value": "x", "effect": "NoSchedule"}]
    out = schedule(queue("q"), hostnode("n1"), hostnode("n2", taints=taint), hostnode("n3"), storage_class("local"),
                   local_pv("pv", "n2", claim="ns/data"), pvc("data", volume="pv", bound=True), podgroup("g"),
                   pod("p", "g", volumes=claims("data")))
    d = out["diagnoses"]["ns/g"]
    assert out["binds"] == {}
    assert d["reason"] == "Volume.NodeConflict"
    assert d["hint"].startswith("ns/data is bound to pv, pinned to n2")


def test_claim_missing_in_a_cluster_without_any_claim_still_keeps_the_pod_waiting() -> None:
    out = schedule(queue("q"), hostnode("n1"), podgroup("g"), pod("p", "g", volumes=claims("data")))
    assert out["binds"] == {}
    assert out["diagnoses"]["ns/g"]["reason"] == "Volume.ClaimUnavailable"


def _random_cluster(seed: int) -> list[dict[str, Any]]:
    import random

    rng = random.Random(seed)
    docs: list[dict[str, Any]] = [queue("q"), storage_class("local"),
                                  storage_class("dyn", provisioner="csi.example", allowedTopologies=[
                                      {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}])]
    for n in range(8):
        docs.append(hostnode(f"n{n}", cpu="8", labels={"zone": "ab"[n % 2]}))
        for k in range(rng.randrange(0, 4)):
            docs.append(local_pv(f"pv-{n}-{k}", f"n{n}", size=f"{rng.randrange(1, 20)}Gi",
                                 modes=rng.choice([("ReadWriteOnce",), ("ReadWriteMany",)])))
    for g in range(6):
        size = rng.randrange(1, 4)
        docs.append(podgroup(f"g{g}", min_member=size))
        for p in range(size):
            cls = rng.choice(["local", "local", "dyn"])
            docs.append(pvc(f"c{g}-{p}", cls=cls, size=f"{rng.randrange(1, 15)}Gi"))
            docs.append(pod(f"p{g}-{p}", f"g{g}", cpu=str(rng.randrange(1, 4)), volumes=claims(f"c{g}-{p}")))
    return docs


def test_the_one_claim_fast_path_decides_as_the_per_node_search() -> None:
    from pyvolcano.plugins.predicates.volumebinding import VolumeBinding

    for seed in range(12):
        docs = _random_cluster(seed)
        fast = schedule(*docs, sessions=2)
        VolumeBinding.fast = False
        try:
            slow = schedule(*docs, sessions=2)
        finally:
            VolumeBinding.fast = True
        assert fast["binds"] == slow["binds"], seed
        assert fast["diagnoses"] == slow["diagnoses"], seed


def _csi_pv(name: str, *, handle: str, claim: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    ns, cname = claim.split("/")
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "csi",
                     "csi": {"driver": "csi.example", "volumeHandle": handle},
                     "claimRef": {"namespace": ns, "name": cname}}}


def _csi_node(name: str, count: int) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [{"name": "csi.example", "nodeID": name, "allocatable": {"count": count}}]}}


def test_csi_attach_limit_of_a_node_sends_the_pod_to_another() -> None:
    out = schedule(queue("q"), hostnode("n1"), hostnode("n2", cpu="2"), storage_class("csi", provisioner="csi.example"),
                   _csi_node("n1", 1), _csi_pv("pv-a", handle="vol-a", claim="ns/a"),
                   _csi_pv("pv-b", handle="vol-b", claim="ns/b"), pvc("a", cls="csi", volume="pv-a", bound=True),
                   pvc("b", cls="csi", volume="pv-b", bound=True), podgroup("old", phase="Running"),
                   pod("old-0", "old", node_name="n1", phase="Running", volumes=claims("a")),
                   podgroup("g"), pod("p", "g", volumes=claims("b")))
    # n1 is emptier (nodeorder prefers it) but its one attach slot is taken
    assert out["binds"] == {"ns/p": "n2"}


def test_attach_limit_reached_everywhere_is_diagnosed() -> None:
    out = schedule(queue("q"), hostnode("n1"), storage_class("csi", provisioner="csi.example"), _csi_node("n1", 1),
                   _csi_pv("pv-a", handle="vol-a", claim="ns/a"), _csi_pv("pv-b", handle="vol-b", claim="ns/b"),
                   pvc("a", cls="csi", volume="pv-a", bound=True), pvc("b", cls="csi", volume="pv-b", bound=True),
                   podgroup("old", phase="Running"),
                   pod("old-0", "old", node_name="n1", phase="Running", volumes=claims("a")),
                   podgroup("g"), pod("p", "g", volumes=claims("b")))
    assert out["binds"] == {}
    assert out["diagnoses"]["ns/g"]["reason"] == "Volume.AttachLimit"


def test_ignored_provisioners_do_not_count_against_attach_limits() -> None:
    from builders import cache_of
    from pyvolcano.cache.volumes import VolumeState
    from pyvolcano.plugins.predicates.nodevolumelimits import csi_volumes

    cache = cache_of(storage_class("lp", provisioner="rancher.io/local-path"), pvc("d", cls="lp"),
                     podgroup("g"), pod("p", "g", volumes=claims("d")))
    v: VolumeState = cache.volumes
    [p] = cache.pods.values()
    assert csi_volumes(p, v, frozenset()) == {("rancher.io/local-path", "pvc/ns/d")}
    assert csi_volumes(p, v, frozenset({"rancher.io/local-path"})) == set()


def test_bound_pv_zone_keeps_the_pod_in_that_zone() -> None:
    zone = "topology.kubernetes.io/zone"
    pv = _csi_pv("pv", handle="h", claim="ns/d", labels={zone: "b__c"})
    out = schedule(queue("q"), hostnode("n1", labels={zone: "a"}), hostnode("n2", cpu="2", labels={zone: "c"}),
                   storage_class("csi", provisioner="csi.example"), pv, pvc("d", cls="csi", volume="pv", bound=True),
                   podgroup("g"), pod("p", "g", volumes=claims("d")))
    assert out["binds"] == {"ns/p": "n2"}


def test_published_storage_capacity_limits_where_a_claim_is_provisioned() -> None:
    driver = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "csi.example"},
              "spec": {"storageCapacity": True}}

    def capacity(node: str, size: str) -> dict[str, Any]:
        return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                "metadata": {"name": f"cap-{node}", "namespace": "kube-system"}, "storageClassName": "dyn",
                "capacity": size, "nodeTopology": {"matchLabels": {"kubernetes.io/hostname": node}}}

    base = [queue("q"), hostnode("n1"), hostnode("n2", cpu="2"), storage_class("dyn", provisioner="csi.example"),
            driver, capacity("n1", "10Gi"), capacity("n2", "100Gi"), podgroup("g")]
    out = schedule(*base, pvc("d", cls="dyn", size="50Gi"), pod("p", "g", volumes=claims("d")))
    assert out["binds"] == {"ns/p": "n2"}
    out = schedule(*base, pvc("d", cls="dyn", size="500Gi"), pod("p", "g", volumes=claims("d")))
    assert out["binds"] == {}
    assert out["diagnoses"]["ns/g"]["reason"] == "Volume.NotEnoughStorage"
