"""The device figures of a DRA diagnosis: each claim of a waiting pod, where it stands, and the
devices each of its requests matches (what ``job why`` and the dashboard's job page show)."""

from __future__ import annotations

from typing import Any

from builders import device_class, gpu_slice, hostnode, pod, podgroup, queue, resource_claim, schedule, with_claims
from pyvolcano.cli.job import render_why

NODES = (hostnode("n1"), hostnode("n2"), device_class(), gpu_slice("n1", 2), gpu_slice("n2", 1, model="H100"))


def devices(*docs: dict[str, Any]) -> list[dict[str, Any]]:
    out = schedule(queue("q"), *NODES, podgroup("g"), *docs)
    return list(out["diagnoses"]["ns/g"]["devices"])


def test_a_claim_no_node_can_hold_shows_how_many_devices_match_and_are_free() -> None:
    [claim] = devices(resource_claim("four", count=4), with_claims(pod("p", "g"), "four"))
    assert claim == {"claim": "ns/four", "status": "not allocated", "requests": [
        {"request": "gpus", "class": "gpu", "wants": "4", "matching": 3, "free": 3, "best_node": "n1",
         "free_on_best_node": 2, "note": ""}]}


def test_devices_other_claims_hold_are_matching_but_not_free() -> None:
    allocation = {"devices": {"results": [{"request": "gpus", "driver": "gpu.example.com", "pool": "n1",
                                           "device": "gpu-0"}]}}
    held = resource_claim("held", allocation=allocation, reservedFor=[{"resource": "pods", "name": "o", "uid": "u"}])
    a100s = resource_claim("a100s", count=2, selectors=('device.attributes["gpu.example.com"].model == "A100"',))
    [claim] = devices(held, a100s, with_claims(pod("p", "g"), "a100s"))
    [request] = claim["requests"]
    assert (request["matching"], request["free"], request["best_node"], request["free_on_best_node"]) == (
        2, 1, "n1", 1)


def test_first_available_alternatives_are_shown_one_by_one() -> None:
    alternatives = resource_claim("either")
    alternatives["spec"]["devices"]["requests"] = [{"name": "gpu", "firstAvailable": [
        {"name": "h100", "deviceClassName": "gpu", "count": 2,
         "selectors": [{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "H100"'}}]},
        {"name": "any", "deviceClassName": "gpu", "count": 4}]}]
    [claim] = devices(alternatives, with_claims(pod("p", "g"), "either"))
    assert [(r["request"], r["wants"], r["matching"]) for r in claim["requests"]] == [
        ("gpu/h100", "2", 1), ("gpu/any", "4", 3)]


def test_a_missing_class_or_claim_is_named() -> None:
    no_class = resource_claim("odd", device_class="tpu")
    p = with_claims(pod("p", "g"), "odd", "missing")
    claims = devices(no_class, p)
    assert claims[1] == {"claim": "ns/missing", "status": "does not exist yet", "requests": []}
    template = pod("t", "g")
    template["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "two"}]
    [pending] = devices(template)
    assert pending == {"claim": "gpus (from template two)", "status": "not created yet", "requests": []}


def test_job_why_prints_a_claim_and_request_table() -> None:
    out = schedule(queue("q"), *NODES, podgroup("g"), resource_claim("four", count=4),
                   with_claims(pod("p", "g"), "four"))
    text = render_why({"job": "ns/g", "phase": "Inqueue", "queue": "q", "diagnosis": out["diagnoses"]["ns/g"]})
    assert "  ns/four                     not allocated\n" in text
    assert "    gpus                      wants 4 of class gpu: 3 match, 3 free, 2 on n1\n" in text
