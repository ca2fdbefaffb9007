"""The API server's validation of the ``resource.k8s.io/v1`` kinds (DeviceClass, ResourceSlice,
ResourceClaim, ResourceClaimTemplate): upstream's rules, field paths and messages."""

from __future__ import annotations

from typing import Any

import pytest

from builders import device_class, gpu_slice, resource_claim
from pyvolcano.store import InMemoryStore, Invalid


def problems(store: InMemoryStore, obj: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(Invalid) as e:
        store.create(obj)
    return list(e.value.errors)


def claim(*requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None,
          config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints is not None:
        devices["constraints"] = constraints
    if config is not None:
        devices["config"] = config
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"devices": devices}}


def exactly(name: str = "gpus", **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu", **fields}}


def test_valid_objects_are_stored_with_the_api_servers_defaults(store: InMemoryStore) -> None:
    store.create(device_class())
    store.create(gpu_slice("n1"))
    created = store.create(claim(exactly()))
    assert created["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}
    assert store.create(resource_claim("r"))["metadata"]["namespace"] == "ns"


def test_device_classes_and_slices_are_cluster_scoped(store: InMemoryStore) -> None:
    cls = device_class()
    cls["metadata"]["namespace"] = "team"
    assert "namespace" not in store.create(cls)["metadata"]
    assert store.get("DeviceClass", None, "gpu")["metadata"]["name"] == "gpu"


def test_a_selector_that_does_not_compile_is_refused_with_the_compilers_message(store: InMemoryStore) -> None:
    cls = device_class()
    cls["spec"]["selectors"] = [{"cel": {"expression": 'device.driver == '}}, {"cel": {"expression": "1 + 2"}}, {}]
    errors = problems(store, cls)
    assert errors[0][0] == "spec.selectors[0].cel.expression"
    assert errors[0][1].startswith('Invalid value: "device.driver == ": compilation failed: ')
    assert errors[1:] == [
        ("spec.selectors[1].cel.expression", 'Invalid value: "1 + 2": must evaluate to bool or the unknown type, '
                                             "not int"),
        ("spec.selectors[2].cel", "Required value"),
    ]


def test_a_request_sets_exactly_one_of_exactly_and_first_available(store: InMemoryStore) -> None:
    both = {**exactly("a"), "firstAvailable": [{"name": "x", "deviceClassName": "gpu"}]}
    assert problems(store, claim(both, {"name": "b"})) == [
        ("spec.devices.requests[0]", "Invalid value: null: exactly one of `exactly` or `firstAvailable` is "
                                     "required, but multiple fields are set"),
        ("spec.devices.requests[1]", "Required value: exactly one of `exactly` or `firstAvailable` is required"),
    ]


def test_request_names_are_unique_dns_labels(store: InMemoryStore) -> None:
    errors = problems(store, claim(exactly("gpus"), exactly("gpus"), exactly("Big_GPU")))
    assert errors[0][0] == "spec.devices.requests[2].name"
    assert errors[0][1].startswith('Invalid value: "Big_GPU": a lowercase RFC 1123 label')
    assert errors[1:] == [("spec.devices.requests[1]", 'Duplicate value: "gpus"')]  # after the items, as upstream


@pytest.mark.parametrize(("fields", "expected"), [
    ({"count": -1}, ("spec.devices.requests[0].exactly.count", "Invalid value: -1: must be greater than zero")),
    ({"allocationMode": "All", "count": 2},
     ("spec.devices.requests[0].exactly.count", "Invalid value: 2: must not be specified when allocationMode is "
                                                "'All'")),
    ({"allocationMode": "Some"},
     ("spec.devices.requests[0].exactly.allocationMode", 'Unsupported value: "Some": supported values: "All", '
                                                         '"ExactCount"')),
    ({"deviceClassName": ""}, ("spec.devices.requests[0].exactly.deviceClassName", "Required value")),
])
def test_count_and_allocation_mode_follow_upstreams_rules(store: InMemoryStore, fields: dict[str, Any],
                                                          expected: tuple[str, str]) -> None:
    assert problems(store, claim(exactly(**fields))) == [expected]


def test_an_exact_count_request_without_a_count_asks_for_one_device(store: InMemoryStore) -> None:
    created = store.create(claim(exactly(count=0)))
    assert created["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


def test_constraints_and_configuration_name_requests_that_exist(store: InMemoryStore) -> None:
    first = {"name": "nic", "firstAvailable": [{"name": "fast", "deviceClassName": "nic"},
                                               {"name": "slow", "deviceClassName": "nic"}]}
    ok = claim(exactly(), first, constraints=[{"requests": ["gpus", "nic/fast"], "matchAttribute": "x.com/numa"}])
    assert store.create(ok)["metadata"]["name"] == "c"
    bad = claim(exactly(), first, constraints=[{"requests": ["gpu", "nic/medium", "nic/fast/x"],
                                                "matchAttribute": "numa"},
                                               {"requests": ["gpus"]}],
                config=[{"requests": ["nope"], "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}])
    bad["metadata"]["name"] = "bad"
    ref = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
    assert problems(store, bad) == [
        ("spec.devices.constraints[0].requests[0]", f'Invalid value: "gpu": {ref}'),
        ("spec.devices.constraints[0].requests[1]", f'Invalid value: "nic/medium": {ref}'),
        ("spec.devices.constraints[0].requests[2]", f'Invalid value: "nic/fast/x": {ref}'),
        ("spec.devices.constraints[0].matchAttribute", 'Invalid value: "numa": a fully qualified name must be a domain '
                                                       "and a name separated by a slash"),
        ("spec.devices.constraints[1]", 'Required value: exactly one of "matchAttribute" or "distinctAttribute" is '
                                        "required, but multiple fields are set"),
        ("spec.devices.config[0].requests[0]", f'Invalid value: "nope": {ref}'),
    ]


def test_a_slice_names_exactly_one_node_selection(store: InMemoryStore) -> None:
    none = gpu_slice("n1")
    del none["spec"]["nodeName"]
    assert problems(store, none) == [("spec", "Required value: exactly one of `nodeName`, `nodeSelector`, "
                                              "`allNodes`, `perDeviceNodeSelection` is required")]
    two = gpu_slice("n1")
    two["spec"]["allNodes"] = True
    assert problems(store, two) == [("spec", 'Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
                                             "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but "
                                             "multiple fields are set")]


def test_a_slices_devices_have_unique_names_and_one_typed_value_per_attribute(store: InMemoryStore) -> None:
    s = gpu_slice("n1", 2)
    s["spec"]["pool"]["resourceSliceCount"] = 0
    s["spec"]["devices"][1]["name"] = "gpu-0"
    s["spec"]["devices"][0]["attributes"] = {"index": {"int": 1, "string": "1"}, "driverVersion": {"version": "1.2"},
                                             "bad-name": {"int": 3}}
    s["spec"]["devices"][1]["taints"] = [{"key": "k", "effect": "PreferNoSchedule"}]
    errors = problems(store, s)
    assert errors[:3] == [
        ("spec.pool.resourceSliceCount", "Invalid value: 0: must be greater than zero"),
        ("spec.devices[0].attributes[index]", 'Invalid value: {"IntValue":1,"BoolValue":null,"StringValue":"1",'
                                              '"VersionValue":null,"IntValues":null,"BoolValues":null,'
                                              '"StringValues":null,"VersionValues":null}: exactly one value must be '
                                              "specified"),
        ("spec.devices[0].attributes[driverVersion].version", 'Invalid value: "1.2": must be a string compatible with '
                                                              "semver.org spec 2.0.0"),
    ]
    assert errors[3][0] == "spec.devices[0].attributes" and "a valid C identifier" in errors[3][1]
    assert errors[4:] == [
        ("spec.devices[1].taints[0].effect", 'Unsupported value: "PreferNoSchedule": supported values: "NoExecute", '
                                             '"NoSchedule", "None"'),
        ("spec.devices[1]", 'Duplicate value: "gpu-0"'),
    ]


def test_a_template_carries_only_labels_and_annotations_and_a_valid_claim_spec(store: InMemoryStore) -> None:
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": "ns"},
                "spec": {"metadata": {"name": "x", "labels": {"a": "b"}},
                         "spec": {"devices": {"requests": [exactly(count=-2)]}}}}
    assert problems(store, template) == [
        ("spec.metadata.name", "Forbidden: cannot be set"),
        ("spec.spec.devices.requests[0].exactly.count", "Invalid value: -2: must be greater than zero"),
    ]


def test_a_claims_reservations_need_an_allocation(store: InMemoryStore) -> None:
    reserved = resource_claim("r", reservedFor=[{"resource": "pods", "name": "p", "uid": "u1"}])
    assert problems(store, reserved) == [
        ("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set")]
