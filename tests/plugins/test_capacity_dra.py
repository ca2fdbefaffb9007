"""The capacity plugin's DRA quota: ``deviceclass/<class>`` in a queue's capability limits devices."""

from __future__ import annotations

from builders import device_class, gpu_slice, hostnode, pod, podgroup, queue, resource_claim, schedule, with_claims
from sim_builders import simulate

CAPACITY_CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: capacity
  - name: predicates
"""


def _cluster() -> list[dict]:
    return [hostnode("n1"), hostnode("n2"), device_class(), gpu_slice("n1", 4), gpu_slice("n2", 4)]


def test_queue_capability_on_a_device_class_limits_the_devices_its_pods_hold() -> None:
    docs = [queue("q", capability={"cpu": "100", "deviceclass/gpu": "3"}), *_cluster()]
    for i in range(3):
        docs += [resource_claim(f"c{i}", count=2), podgroup(f"g{i}", phase="Pending"),
                 with_claims(pod(f"p{i}", f"g{i}"), f"c{i}")]
    out = schedule(*docs, conf=CAPACITY_CONF, sessions=2)
    # 2 + 2 would exceed 3 devices: only one pod runs, the others wait with the queue's limit named
    assert len(out["binds"]) == 1
    waiting = [d for d in out["diagnoses"].values()]
    assert len(waiting) == 2
    assert waiting[0]["reason"] == "Queue.OverCapability"
    assert "deviceclass/gpu capability of 3" in waiting[0]["hint"]


def test_a_shared_claim_counts_once_for_its_queue() -> None:
    docs = [queue("q", capability={"cpu": "100", "deviceclass/gpu": "2"}), *_cluster(),
            resource_claim("shared", count=2)]
    for i in range(2):
        p = with_claims(pod(f"p{i}", f"g{i}"), "shared")
        p["metadata"]["annotations"]["pyvolcano.io/duration"] = "1h"
        p["spec"]["containers"][0]["image"] = "busybox"
        docs += [podgroup(f"g{i}", phase="Pending"), p]
    _res, sim = simulate([(0.0, d) for d in docs], conf=CAPACITY_CONF, until=60.0)
    pods = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in sim.store.list("Pod")}
    # the second pod waits for the first one's allocation to be written (upstream's in-flight rule),
    # then shares the claim on its node: the queue holds 2 devices, not 4
    assert pods["p0"] and pods["p0"] == pods["p1"]
    [claim] = sim.store.list("ResourceClaim")
    assert len(claim["status"]["reservedFor"]) == 2


def test_without_device_class_keys_there_is_no_device_limit() -> None:
    docs = [queue("q", capability={"cpu": "100"}), *_cluster()]
    for i in range(3):
        docs += [resource_claim(f"c{i}", count=2), podgroup(f"g{i}", phase="Pending"),
                 with_claims(pod(f"p{i}", f"g{i}"), f"c{i}")]
    out = schedule(*docs, conf=CAPACITY_CONF, sessions=2)
    assert len(out["binds"]) == 3
