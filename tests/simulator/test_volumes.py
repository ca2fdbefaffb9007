"""Simulations with storage: vcjob claims bound where their volumes are, provisioned after the class's delay."""

from __future__ import annotations

from typing import Any

from builders import hostnode, local_pv, storage_class
from sim_builders import simulate, vcjob, volume_claim


def _pods(sim: Any, job: str) -> list[dict[str, Any]]:
    return [p for p in sim.store.list("Pod", "default") if p["metadata"]["name"].startswith(job)]


def test_vcjob_volume_claim_lands_on_the_node_of_the_matching_local_pv_and_binds_it() -> None:
    res, sim = simulate([(0, hostnode("n1")), (0, hostnode("n2")), (0, storage_class("local")),
                         (0, local_pv("pv-n2", "n2")),
                         (0, vcjob("j", volumes=[volume_claim("local")]))])
    assert res.jobs["default/j"].phase == "Completed"
    [pod] = _pods(sim, "j-")
    assert pod["spec"]["nodeName"] == "n2"
    pv = sim.store.get("PersistentVolume", None, "pv-n2")
    assert pv["spec"]["claimRef"]["name"].startswith("j-pvc-")
    claim = sim.store.get("PersistentVolumeClaim", "default", pv["spec"]["claimRef"]["name"])
    assert claim["spec"]["volumeName"] == "pv-n2" and claim["status"]["phase"] == "Bound"


def test_provisioned_claim_starts_the_pod_after_the_class_delay_on_the_selected_node() -> None:
    dyn = storage_class("dyn", provisioner="rancher.io/local-path")
    dyn["metadata"]["annotations"] = {"pyvolcano.io/provisioning-delay": "30s"}
    res, sim = simulate([(0, hostnode("n1")), (0, dyn), (0, vcjob("j", volumes=[volume_claim("dyn")]))])
    rec = res.jobs["default/j"]
    assert rec.phase == "Completed" and rec.started == 31.0
    [pv] = sim.store.list("PersistentVolume")
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["n1"]
    # Delete is the class's default reclaim policy: the PV goes with the claim's job.
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete"


def test_job_without_a_fitting_volume_waits_with_a_volume_diagnosis() -> None:
    res, _sim = simulate([(0, hostnode("n1")), (0, storage_class("local")), (0, local_pv("small", "n1", size="1Gi")),
                          (0, vcjob("j", volumes=[volume_claim("local", size="5Gi")]))], until=120)
    rec = res.jobs["default/j"]
    assert rec.started is None
    assert rec.why is not None and rec.why.reason == "Volume.NoMatchingPV"
    assert "small (on n1: too small (1Gi))" in rec.why.hint


def test_two_jobs_share_out_the_pvs_of_one_node_one_each() -> None:
    res, sim = simulate([(0, hostnode("n1")), (0, hostnode("n2")), (0, storage_class("local")),
                         (0, local_pv("a", "n1")), (0, local_pv("b", "n1")),
                         (0, vcjob("j1", volumes=[volume_claim("local")])),
                         (0, vcjob("j2", volumes=[volume_claim("local")]))])
    assert res.jobs["default/j1"].phase == res.jobs["default/j2"].phase == "Completed"
    assert {p["spec"]["nodeName"] for p in _pods(sim, "j")} == {"n1"}
    bound = sorted(pv["spec"]["claimRef"]["name"][:2] for pv in sim.store.list("PersistentVolume"))
    assert bound == ["j1", "j2"]


def test_a_misspelled_field_of_a_pv_in_a_cluster_file_is_an_error_naming_the_document(tmp_path: Any) -> None:
    import pytest

    from pyvolcano.api.manifest import ManifestError
    from pyvolcano.simulator.workload import load_workload

    path = tmp_path / "cluster.yaml"
    path.write_text("apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\n"
                    "spec: {capacity: {storage: 1Gi}, storageClasName: local}\n")
    with pytest.raises(ManifestError, match=r"document 0 \(PersistentVolume pv\): spec.storageClasName"):
        load_workload(path, cluster=True)


def test_vcjob_volume_claim_name_mounts_an_existing_claim_in_every_pod_on_its_pv_node() -> None:
    from builders import pvc

    shared = pvc("shared", ns="default", modes=("ReadWriteMany",))
    res, sim = simulate([(0, hostnode("n1")), (0, hostnode("n2")), (0, storage_class("local")),
                         (0, local_pv("pv", "n2", modes=("ReadWriteMany",))), (0, shared),
                         (0, vcjob("j", replicas=2, volumes=[{"mountPath": "/data", "volumeClaimName": "shared"}]))])
    assert res.jobs["default/j"].phase == "Completed"
    assert [p["spec"]["nodeName"] for p in _pods(sim, "j-")] == ["n2", "n2"]
    assert sim.store.get("PersistentVolumeClaim", "default", "shared")["spec"]["volumeName"] == "pv"


def test_the_volumes_example_places_provisions_and_explains() -> None:
    import json
    from pathlib import Path

    from typer.testing import CliRunner

    from pyvolcano.cli.app import app

    ex = Path(__file__).resolve().parents[2] / "examples" / "volumes"
    result = CliRunner().invoke(app, ["simulate", "--cluster", str(ex / "cluster.yaml"), "--workload",
                                      str(ex / "jobs.yaml"), "-o", "json"])
    assert result.exit_code == 0, result.output
    jobs = json.loads(result.stdout)["jobs"]
    assert (jobs["default/local-job"]["phase"], jobs["default/local-job"]["started"]) == ("Completed", 1.0)
    assert (jobs["default/dyn-job"]["phase"], jobs["default/dyn-job"]["started"]) == ("Completed", 31.0)
    assert jobs["default/no-room"]["started"] is None
    assert jobs["default/no-room"]["why"]["reason"] == "Volume.NoMatchingPV"


def test_a_generic_ephemeral_volume_gets_its_claim_and_the_pod_starts_once_it_is_provisioned() -> None:
    dyn = storage_class("dyn", provisioner="rancher.io/local-path")
    dyn["metadata"]["annotations"] = {"pyvolcano.io/provisioning-delay": "20s"}
    job = vcjob("j", replicas=2)
    job["spec"]["tasks"][0]["template"]["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {
        "volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "dyn",
                                         "resources": {"requests": {"storage": "1Gi"}}}}}}]
    res, sim = simulate([(0, hostnode("n1")), (0, dyn), (0, job)])
    rec = res.jobs["default/j"]
    assert rec.phase == "Completed" and rec.started == 21.0
    claims = sorted(c["metadata"]["name"] for c in sim.store.list("PersistentVolumeClaim", "default"))
    # The pods finished but were not deleted: their claims stay, as the garbage collector would leave them.
    assert claims == ["j-t-0-scratch", "j-t-1-scratch"]
