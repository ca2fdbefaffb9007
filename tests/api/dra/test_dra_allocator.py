"""The structured allocator: upstream's search over a node's devices, one claim at a time."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pyvolcano.api.dra.allocator import AllocationError, Allocator, DeviceID, gather_pools
from pyvolcano.api.dra.cel import SelectorCache
from pyvolcano.api.manifest import ClusterObjects, load_manifest_text

CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
  config: [{opaque: {driver: gpu.example.com, parameters: {sharing: none}}}]
"""

SLICE = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpus}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {model: {string: A100}, numa: {int: 0}}}
  - {name: gpu-1, attributes: {model: {string: A100}, numa: {int: 1}}}
  - {name: gpu-2, attributes: {model: {string: H100}, numa: {int: 1}}}
  - {name: gpu-3, attributes: {model: {string: H100}, numa: {int: 0}},
     taints: [{key: maintenance, effect: NoSchedule}]}
"""


def claim(spec: str, name: str = "c") -> str:
    body = "\n".join("  " + line for line in spec.strip().splitlines())
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}, namespace: ns}}
spec:
{body}
"""


def objects(*docs: str) -> ClusterObjects:
    return load_manifest_text("\n---\n".join(docs))


def allocate(claims: str, *, in_use: Callable[[DeviceID], bool] = lambda d: False, slices: str = SLICE,
             node: str = "n1") -> list[list[str]] | None:
    objs = objects(CLASS, slices, claims)
    allocator = Allocator(objs.resource_claims, {c.name: c for c in objs.device_classes}, in_use, SelectorCache())
    found = allocator.allocate(gather_pools(objs.resource_slices, node, {}))
    if found is None:
        return None
    return [[r.device for r in a.results] for a in found]


def test_exact_count_takes_the_first_free_untainted_devices() -> None:
    assert allocate(claim("devices: {requests: [{name: r, exactly: {deviceClassName: gpu, count: 2}}]}")) == [
        ["gpu-0", "gpu-1"]]


def test_devices_in_use_are_never_given_again() -> None:
    taken = {("gpu.example.com", "n1", "gpu-0"), ("gpu.example.com", "n1", "gpu-1")}
    got = allocate(claim("devices: {requests: [{name: r, exactly: {deviceClassName: gpu, count: 2}}]}"),
                   in_use=lambda d: d in taken)
    assert got is None


def test_two_claims_of_one_pod_get_different_devices() -> None:
    one = claim("devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}", "a")
    two = claim("devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}", "b")
    assert allocate(one + "\n---\n" + two) == [["gpu-0"], ["gpu-1"]]


def test_match_attribute_backtracks_to_devices_that_agree() -> None:
    got = allocate(claim("""
devices:
  requests: [{name: r, exactly: {deviceClassName: gpu, count: 2}}]
  constraints: [{matchAttribute: gpu.example.com/numa}]
"""))
    assert got == [["gpu-1", "gpu-2"]]


def test_all_mode_takes_every_matching_device_and_needs_one() -> None:
    got = allocate(claim("""
devices:
  requests:
  - name: r
    exactly:
      deviceClassName: gpu
      allocationMode: All
      selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].model == "A100"'}}]
"""))
    assert got == [["gpu-0", "gpu-1"]]
    assert allocate(claim("""
devices:
  requests:
  - {name: r, exactly: {deviceClassName: gpu, allocationMode: All,
     selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].model == "B200"'}}]}}
""")) is None


def test_first_available_falls_back_to_the_next_sub_request() -> None:
    got = allocate(claim("""
devices:
  requests:
  - name: r
    firstAvailable:
    - name: b200
      deviceClassName: gpu
      selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].model == "B200"'}}]
    - name: h100
      deviceClassName: gpu
      selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].model == "H100"'}}]
"""))
    assert got == [["gpu-2"]]


def test_a_tolerated_taint_allows_the_device() -> None:
    spec = """
devices:
  requests:
  - name: r
    exactly:
      deviceClassName: gpu
      selectors:
      - cel: {expression: 'device.attributes["gpu.example.com"].numa == 0'}
      - cel: {expression: 'device.attributes["gpu.example.com"].model == "H100"'}
      %s
"""
    assert allocate(claim(spec % "")) is None
    assert allocate(claim(spec % "tolerations: [{key: maintenance, operator: Exists, effect: NoSchedule}]")) == [
        ["gpu-3"]]


def test_admin_access_may_use_a_device_in_use() -> None:
    spec = "devices: {requests: [{name: r, exactly: {deviceClassName: gpu, adminAccess: %s}}]}"
    assert allocate(claim(spec % "false"), in_use=lambda d: True) is None
    assert allocate(claim(spec % "true"), in_use=lambda d: True) == [["gpu-0"]]


def test_result_carries_class_config_and_the_node_selector_of_a_node_local_slice() -> None:
    objs = objects(CLASS, SLICE, claim("devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}"))
    found = Allocator(objs.resource_claims, {"gpu": objs.device_classes[0]}, lambda d: False,
                      SelectorCache()).allocate(gather_pools(objs.resource_slices, "n1", {}))
    assert found is not None
    result = found[0].to_dict()
    assert result["devices"]["config"] == [
        {"source": "FromClass", "opaque": {"driver": "gpu.example.com", "parameters": {"sharing": "none"}}}]
    assert result["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}


def test_other_nodes_see_no_node_local_devices() -> None:
    assert allocate(claim("devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}"), node="n2") is None


def test_incomplete_pool_is_not_used() -> None:
    incomplete = SLICE.replace("resourceSliceCount: 1", "resourceSliceCount: 2")
    assert allocate(claim("devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}"),
                    slices=incomplete) is None


def test_selector_failing_on_a_device_stops_the_pod_with_the_claim_named() -> None:
    bad = claim("""
devices:
  requests:
  - name: r
    exactly: {deviceClassName: gpu, selectors: [{cel: {expression: 'device.attributes["x.com"].model == "A"'}}]}
""")
    with pytest.raises(AllocationError, match=r"claim ns/c: selector #0 on device gpu.example.com/n1/gpu-0: CEL"):
        allocate(bad)
