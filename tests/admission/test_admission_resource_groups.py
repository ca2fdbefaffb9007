"""/pods/mutate resource groups (--admission-conf): which pods a group takes, what they get,
the file's errors, and the webhook server reading the file again when it changes
(upstream pods/mutate/mutate_pod_test.go, webhooks/config)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.admission.resource_groups import AdmissionConfError, apply_resource_groups, load_admission_conf
from pyvolcano.cli.admission import AdmissionOptions, run_admission
from pyvolcano.store import InMemoryStore
from pyvolcano.webhooks import WebhookServer
from waiting import free_port, wait_for
from webhooks.jsonpatch_apply import apply_patch
from webhooks.webhook_client import Certs, Client, decoded_patch, make_certs, queue_obj, review

# Upstream's shipped example (installer/helm/chart/volcano/templates/admission.yaml), less "fixed".
CONF = """
resourceGroups:
- resourceGroup: management
  object:
    key: namespace
    value:
    - mng-ns-1
  schedulerName: default-scheduler
  tolerations:
  - effect: NoSchedule
    key: taint
    operator: Exists
  labels:
    volcano.sh/nodetype: management
- resourceGroup: cpu
  object:
    key: annotation
    value:
    - "volcano.sh/resource-group: cpu"
  schedulerName: volcano
  labels:
    volcano.sh/nodetype: cpu
- resourceGroup: gpu
  schedulerName: volcano
  labels:
    volcano.sh/nodetype: gpu
  affinity: >-
    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]}}}
"""


def pod(ns: str = "default", annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": ns, "annotations": annotations or {}},
            "spec": {"schedulerName": "default-scheduler", "containers": [{"name": "c", "image": "x"}], **spec}}


GROUPS = load_admission_conf(CONF, "admission.conf")


def test_a_pod_of_a_listed_namespace_gets_the_groups_selector_tolerations_and_scheduler() -> None:
    p = pod("mng-ns-1", nodeSelector={"zone": "a"}, tolerations=[{"key": "own", "operator": "Exists"}])
    assert apply_resource_groups(GROUPS, p) == "management"
    assert p["spec"]["nodeSelector"] == {"zone": "a", "volcano.sh/nodetype": "management"}
    assert p["spec"]["tolerations"] == [{"key": "own", "operator": "Exists"},
                                        {"effect": "NoSchedule", "key": "taint", "operator": "Exists"}]
    assert p["spec"]["schedulerName"] == "default-scheduler"


def test_an_annotated_pod_joins_the_group_whose_annotation_it_carries() -> None:
    p = pod(annotations={"volcano.sh/resource-group": "cpu"})
    assert apply_resource_groups(GROUPS, p) == "cpu"
    assert p["spec"]["schedulerName"] == "volcano" and p["spec"]["nodeSelector"] == {"volcano.sh/nodetype": "cpu"}


def test_a_group_without_object_takes_pods_annotated_with_its_name_and_sets_affinity() -> None:
    p = pod(annotations={"volcano.sh/resource-group": "gpu"})
    assert apply_resource_groups(GROUPS, p) == "gpu"
    terms = p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == "gpu"
    # A pod with its own affinity keeps it.
    own = pod(annotations={"volcano.sh/resource-group": "gpu"}, affinity={"podAffinity": {}})
    apply_resource_groups(GROUPS, own)
    assert own["spec"]["affinity"] == {"podAffinity": {}}


def test_only_the_first_matching_group_applies_and_others_pods_are_left_alone() -> None:
    p = pod("mng-ns-1", annotations={"volcano.sh/resource-group": "cpu"})
    assert apply_resource_groups(GROUPS, p) == "management"
    untouched = pod()
    assert apply_resource_groups(GROUPS, untouched) is None and untouched == pod()


@pytest.mark.parametrize(("text", "field"), [
    ("resourceGroups:\n- resourceGroup: x\n  object: {key: label, value: [a]}\n", "resourceGroups[0].object.key"),
    ("resourceGroups:\n- resourceGroup: x\n  object: {key: annotation, value: [nocolon]}\n",
     "resourceGroups[0].object.value[0]"),
    ("resourceGroups:\n- resourceGroup: x\n  tolerations: [{operator: Sometimes}]\n", "resourceGroups[0].tolerations"),
    ("resourceGroups:\n- resourceGroup: x\n  labels: [a]\n", "resourceGroups[0].labels"),
    ("resourceGroups: 3\n", "resourceGroups"),
])
def test_a_configuration_that_cannot_work_names_the_field(text: str, field: str) -> None:
    with pytest.raises(AdmissionConfError) as e:
        load_admission_conf(text, "admission.conf")
    assert f"admission.conf: {field}" in str(e.value)


def test_upstreams_shipped_file_of_comments_mutates_nothing() -> None:
    groups = load_admission_conf("#resourceGroups:\n#- resourceGroup: management\n", "admission.conf")
    assert groups.groups == ()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def test_the_webhook_mutates_pods_and_follows_the_file_when_it_changes(certs: Certs, tmp_path: Path) -> None:
    conf = tmp_path / "volcano-admission.conf"
    conf.write_text(CONF)
    store = InMemoryStore(admission=VolcanoAdmission())
    store.create(queue_obj("root", reclaimable=False))
    store.create(queue_obj("default"))
    opts = AdmissionOptions(
        tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key), ca_cert_file=str(certs.ca),
        listen_address="127.0.0.1", port=free_port(), webhook_url="https://127.0.0.1", admission_conf=str(conf))
    stop = threading.Event()
    ready: list[WebhookServer] = []
    rc: list[int] = []
    thread = threading.Thread(target=lambda: rc.append(run_admission(opts, store=store, stop=stop,
                                                                     on_ready=ready.append)))
    thread.start()
    try:
        server = wait_for(lambda: ready and ready[0], 10, "the server")
        client = Client(server.port, certs.ca)
        subject = pod("mng-ns-1")
        patched = apply_patch(subject, decoded_patch(client.post("/pods/mutate", review("Pod", "CREATE", subject))))
        assert patched["spec"]["nodeSelector"] == {"volcano.sh/nodetype": "management"}
        conf.write_text(CONF.replace("volcano.sh/nodetype: management", "volcano.sh/nodetype: ops"))

        def reloaded() -> bool:
            r = client.post("/pods/mutate", review("Pod", "CREATE", subject))
            return apply_patch(subject, decoded_patch(r))["spec"]["nodeSelector"] == {"volcano.sh/nodetype": "ops"}

        wait_for(reloaded, 10, "the changed file to be read")
        conf.write_text("resourceGroups: [[")  # a broken file keeps the groups in force
        r = client.post("/pods/mutate", review("Pod", "CREATE", subject))
        assert apply_patch(subject, decoded_patch(r))["spec"]["nodeSelector"] == {"volcano.sh/nodetype": "ops"}
    finally:
        stop.set()
        thread.join(10)
    assert rc == [0]


def test_an_unreadable_admission_conf_is_an_error_at_start(certs: Certs, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    opts = AdmissionOptions(tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key),
                            ca_cert_file=str(certs.ca), webhook_url="https://x",
                            admission_conf=str(tmp_path / "missing.conf"))
    assert run_admission(opts, store=InMemoryStore()) == 2
    assert "--admission-conf:" in capsys.readouterr().err


def test_with_resource_groups_the_pod_mutating_webhook_sees_every_pod() -> None:
    from pyvolcano.webhooks.registration import ClientTarget, webhook_configuration
    from pyvolcano.webhooks.router import SERVICES

    target = ClientTarget(url="https://x")
    scoped = webhook_configuration(SERVICES["/pods/mutate"], target, b"ca", ["volcano"])
    everyone = webhook_configuration(SERVICES["/pods/mutate"], target, b"ca", ["volcano"], mutate_all_pods=True)
    validate = webhook_configuration(SERVICES["/pods/validate"], target, b"ca", ["volcano"], mutate_all_pods=True)
    assert "matchConditions" in scoped["webhooks"][0] and "matchConditions" not in everyone["webhooks"][0]
    assert "matchConditions" in validate["webhooks"][0]
