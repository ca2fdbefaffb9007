"""The simulated GPU driver: one ResourceSlice per GPU node, as a DRA driver publishes it."""

from __future__ import annotations

import yaml

from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.runtime.dra_driver import GpuDriver, gpu_slice
from pyvolcano.store.memory import InMemoryStore

NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n1", "labels": {"nvidia.com/gpu.product": "H100", "nvidia.com/gpu.memory": "81559"}},
        "status": {"capacity": {"cpu": "8", "nvidia.com/gpu": "2"}}}


def test_gpu_node_gets_a_slice_with_one_device_per_gpu_and_its_model() -> None:
    s = gpu_slice(NODE)
    assert s is not None
    [typed] = load_manifest_text(yaml.safe_dump(s)).resource_slices
    assert (typed.driver, typed.node_name, typed.pool) == ("gpu.nvidia.com", "n1", "n1")
    assert [d.name for d in typed.devices] == ["gpu-0", "gpu-1"]
    assert typed.devices[1].attributes["productName"].value == "H100"
    assert typed.devices[1].attributes["index"].value == 1
    assert typed.devices[0].capacity["memory"] == 81559 * 2**20


def test_node_without_gpus_gets_none() -> None:
    assert gpu_slice({"metadata": {"name": "c"}, "status": {"capacity": {"cpu": "8"}}}) is None


def test_gated_driver_publishes_once_the_cluster_has_a_device_class() -> None:
    store = InMemoryStore()
    driver = GpuDriver(store=store, gated=True)
    store.create(NODE)
    for ev in store.watch(0):
        driver.on_event(ev)
    driver.run(0.0)
    assert store.list("ResourceSlice") == []
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": {}})
    for ev in store.watch(1):
        driver.on_event(ev)
    driver.run(0.0)
    assert [s["metadata"]["name"] for s in store.list("ResourceSlice")] == ["n1-gpu.nvidia.com"]
