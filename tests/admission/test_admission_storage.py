"""The API server's validation of the storage kinds (StorageClass, PersistentVolume,
PersistentVolumeClaim, CSINode, CSIDriver, CSIStorageCapacity): upstream's rules, field paths
and messages, and the defaults it writes."""

from __future__ import annotations

from typing import Any

import pytest

from builders import local_pv, pvc, storage_class
from pyvolcano.store import InMemoryStore, Invalid


def problems(store: InMemoryStore, obj: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(Invalid) as e:
        store.create(obj)
    return list(e.value.errors)


def obj(kind: str, name: str, api: str = "storage.k8s.io/v1", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name}, **fields}


def test_a_class_gets_the_api_servers_defaults(store: InMemoryStore) -> None:
    created = store.create(obj("StorageClass", "plain", provisioner="ebs.csi.aws.com"))
    assert (created["reclaimPolicy"], created["volumeBindingMode"]) == ("Delete", "Immediate")


def test_a_class_names_a_qualified_provisioner_and_known_policies(store: InMemoryStore) -> None:
    bad = storage_class("odd", provisioner="not a name", mode="Later", reclaimPolicy="Recycle",
                        allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": []}]}, {}])
    errors = problems(store, bad)
    assert errors[0][0] == "provisioner" and errors[0][1].startswith('Invalid value: "not a name": name part must')
    assert errors[1:] == [
        ("reclaimPolicy", 'Unsupported value: "Recycle": supported values: "Delete", "Retain"'),
        ("volumeBindingMode", 'Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"'),
        ("allowedTopologies[0].matchLabelExpressions[0].values", "Required value"),
        ("allowedTopologies[1].matchLabelExpressions", 'Duplicate value: ""'),
    ]


def test_a_pv_has_one_volume_source_storage_capacity_and_access_modes(store: InMemoryStore) -> None:
    pv = local_pv("pv", "n1", modes=("ReadWriteOncePod", "ReadWriteOnce"))
    pv["spec"]["capacity"] = {"storage": "0", "cpu": "1"}
    pv["spec"]["hostPath"] = {"path": "/x"}
    assert problems(store, pv) == [
        ("spec.accessModes", "Forbidden: may not use ReadWriteOncePod with other access modes"),
        ("spec.capacity", 'Unsupported value: {"cpu":"1","storage":"0"}: supported values: "storage"'),
        ("spec.capacity[storage]", 'Invalid value: "0": must be greater than zero'),
        ("spec.local", "Forbidden: may not specify more than 1 volume type"),
    ]


def test_a_local_pv_requires_node_affinity(store: InMemoryStore) -> None:
    pv = local_pv("pv", "n1")
    del pv["spec"]["nodeAffinity"]
    assert problems(store, pv) == [("spec.nodeAffinity", "Required value: Local volume requires node affinity")]
    without_source = local_pv("pv2", "n1")
    del without_source["spec"]["local"]
    assert problems(store, without_source) == [("spec", "Required value: must specify a volume type")]


def test_a_pv_gets_the_api_servers_defaults(store: InMemoryStore) -> None:
    spec = store.create(local_pv("pv", "n1"))["spec"]
    assert (spec["persistentVolumeReclaimPolicy"], spec["volumeMode"]) == ("Retain", "Filesystem")


def test_a_claim_asks_for_storage_with_access_modes(store: InMemoryStore) -> None:
    claim = pvc("data", cls="Bad_Class", modes=())
    claim["spec"]["resources"] = {"requests": {"cpu": "1"}}
    errors = problems(store, claim)
    assert errors[:2] == [("spec.accessModes", "Required value: at least 1 access mode is required"),
                          ("spec.resources[storage]", "Required value")]
    assert errors[2][0] == "spec.storageClassName" and "RFC 1123 subdomain" in errors[2][1]
    zero = pvc("zero", size="0")
    assert problems(store, zero) == [("spec.resources[storage]", 'Invalid value: "0": must be greater than zero')]


def test_csi_nodes_name_each_driver_once_with_a_node_id(store: InMemoryStore) -> None:
    node = obj("CSINode", "n1", spec={"drivers": [
        {"name": "ebs.csi.aws.com", "nodeID": "", "allocatable": {"count": -1}},
        {"name": "ebs.csi.aws.com", "nodeID": "i-1"}]})
    assert problems(store, node) == [
        ("spec.drivers[0].nodeID", "Required value"),
        ("spec.drivers[0].allocatable.count", "Invalid value: -1: must be greater than or equal to 0"),
        ("spec.drivers[1].name", 'Duplicate value: "ebs.csi.aws.com"'),
    ]


def test_a_csi_driver_gets_its_defaults_and_known_modes(store: InMemoryStore) -> None:
    spec = store.create(obj("CSIDriver", "ebs.csi.aws.com"))["spec"]
    assert (spec["attachRequired"], spec["storageCapacity"], spec["volumeLifecycleModes"]) == (
        True, False, ["Persistent"])
    bad = obj("CSIDriver", "x.csi.io", spec={"fsGroupPolicy": "Weird", "volumeLifecycleModes": ["Persistent", "Nope"]})
    assert problems(store, bad) == [
        ("spec.fsGroupPolicy", 'Unsupported value: "Weird": supported values: "File", "None", '
                               '"ReadWriteOnceWithFSType"'),
        ("spec.volumeLifecycleModes", 'Unsupported value: "Nope": supported values: "Persistent", "Ephemeral"'),
    ]


def test_a_storage_capacity_names_its_class_and_a_non_negative_capacity(store: InMemoryStore) -> None:
    cap = obj("CSIStorageCapacity", "cap", capacity="-1Gi")
    cap["metadata"]["namespace"] = "kube-system"
    errors = problems(store, cap)
    assert errors[0][0] == "storageClassName"
    assert errors[1] == ("capacity", 'Invalid value: "-1Gi": must be greater than or equal to 0')


def test_an_ephemeral_volumes_claim_template_is_checked_with_the_pod(store: InMemoryStore) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"containers": [{"name": "c", "image": "i"}],
                    "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                        "metadata": {"name": "x"}, "spec": {"accessModes": ["ReadWriteOnce"]}}}}]}}
    assert problems(store, pod) == [
        ("spec.volumes[0].ephemeral.volumeClaimTemplate.metadata.name", "Forbidden: cannot be set"),
        ("spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources[storage]", "Required value"),
    ]
