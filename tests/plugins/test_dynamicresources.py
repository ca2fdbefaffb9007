"""DynamicResources in the predicates plugin: pods with ResourceClaims go only where their devices are."""

from __future__ import annotations

from typing import Any

from builders import device_class, gpu_slice, hostnode, pod, podgroup, queue, resource_claim, schedule, with_claims

GPU_NODES = (hostnode("n1"), hostnode("n2"), hostnode("cpu"), device_class(), gpu_slice("n1", 2), gpu_slice("n2", 2))


def _diagnosis(out: dict[str, Any], job: str) -> dict[str, Any]:
    return out["diagnoses"][job]


def test_pod_with_claim_lands_only_on_a_node_with_devices() -> None:
    out = schedule(queue("q"), hostnode("cpu"), hostnode("n1"), device_class(), gpu_slice("n1", 1),
                   resource_claim("c"), podgroup("g"), with_claims(pod("p", "g"), "c"))
    assert out["binds"] == {"ns/p": "n1"}


def test_no_device_is_given_twice_and_what_cannot_fit_waits_with_a_reason() -> None:
    docs = [queue("q"), *GPU_NODES]
    for i in range(5):
        docs += [resource_claim(f"c{i}", count=2), podgroup(f"g{i}"), with_claims(pod(f"p{i}", f"g{i}"), f"c{i}")]
    out = schedule(*docs)
    assert sorted(out["binds"].values()) == ["n1", "n2"]
    waiting = [f"ns/g{i}" for i in range(5) if f"ns/p{i}" not in out["binds"]]
    assert len(waiting) == 3
    assert _diagnosis(out, waiting[0])["reason"] == "NodeFit.NoDevices"


def test_gang_of_claims_is_placed_together_on_distinct_devices() -> None:
    docs = [queue("q"), *GPU_NODES, podgroup("g", min_member=4)]
    for i in range(4):
        docs += [resource_claim(f"c{i}"), with_claims(pod(f"p{i}", "g"), f"c{i}")]
    out = schedule(*docs)
    assert sorted(out["binds"].values()) == ["n1", "n1", "n2", "n2"]


def test_selector_chooses_the_model() -> None:
    out = schedule(queue("q"), hostnode("n1"), hostnode("n2"), device_class(), gpu_slice("n1", 2, model="A100"),
                   gpu_slice("n2", 2, model="H100"),
                   resource_claim("c", selectors=('device.attributes["gpu.example.com"].model == "H100"',)),
                   podgroup("g"), with_claims(pod("p", "g"), "c"))
    assert out["binds"] == {"ns/p": "n2"}


def test_allocated_claim_is_shared_on_its_node() -> None:
    allocation = {"devices": {"results": [{"request": "gpus", "driver": "gpu.example.com", "pool": "n2",
                                           "device": "gpu-0"}]},
                  "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                      {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}
    out = schedule(queue("q"), *GPU_NODES,
                   resource_claim("shared", allocation=allocation,
                                  reservedFor=[{"resource": "pods", "name": "other", "uid": "u-other"}]),
                   podgroup("g"), with_claims(pod("p", "g"), "shared"))
    assert out["binds"] == {"ns/p": "n2"}


def test_missing_claim_waits_with_claim_not_ready() -> None:
    out = schedule(queue("q"), *GPU_NODES, podgroup("g"), with_claims(pod("p", "g"), "nope"))
    assert out["binds"] == {}
    d = _diagnosis(out, "ns/g")
    assert d["reason"] == "NodeFit.ClaimNotReady"
    assert 'resourceclaim.resource.k8s.io "nope" not found' in d["hint"]


def test_claim_whose_template_claim_is_not_created_yet_waits() -> None:
    p = pod("p", "g")
    p["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "t"}]
    out = schedule(queue("q"), *GPU_NODES, podgroup("g"), p)
    assert "ResourceClaim not created yet" in _diagnosis(out, "ns/g")["hint"]


def test_selector_error_stops_the_pod_with_claim_invalid() -> None:
    out = schedule(queue("q"), *GPU_NODES, resource_claim("c", selectors=('device.attributes["x"].y == 1',)),
                   podgroup("g"), with_claims(pod("p", "g"), "c"))
    assert out["binds"] == {}
    assert _diagnosis(out, "ns/g")["reason"] == "NodeFit.ClaimInvalid"


def test_dra_can_be_switched_off_as_the_feature_gate() -> None:
    conf = ("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n    arguments:\n"
            "      predicate.DynamicResourceAllocationEnable: false\n")
    out = schedule(queue("q"), hostnode("cpu"), podgroup("g"), with_claims(pod("p", "g"), "nope"), conf=conf)
    assert out["binds"] == {"ns/p": "cpu"}
