"""The webhook configurations written at start: names, rules, scope, client config, CA bundle."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from pyvolcano.store import InMemoryStore
from pyvolcano.webhooks import SERVICES, ClientTarget, enabled_services, register, webhook_configuration

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
IN_CLUSTER = ClientTarget(namespace="volcano-system", service_name="volcano-admission-service")
DEFAULT = "/jobs/mutate,/jobs/validate,/podgroups/mutate,/pods/validate,/pods/mutate,/queues/mutate,/queues/validate"


def only_webhook(cfg: dict[str, Any]) -> dict[str, Any]:
    assert len(cfg["webhooks"]) == 1
    webhook: dict[str, Any] = cfg["webhooks"][0]
    return webhook


def test_each_path_gets_upstreams_configuration_name_kind_and_webhook_name() -> None:
    got = {s.path: (webhook_configuration(s, IN_CLUSTER, CA, ["volcano"])) for s in SERVICES.values()}
    names = {p: (c["kind"], c["metadata"]["name"], only_webhook(c)["name"]) for p, c in got.items()}
    assert names["/jobs/mutate"] == ("MutatingWebhookConfiguration", "volcano-admission-service-jobs-mutate",
                                     "mutatejob.volcano.sh")
    assert names["/queues/validate"] == ("ValidatingWebhookConfiguration", "volcano-admission-service-queues-validate",
                                         "validatequeue.volcano.sh")
    assert names["/pods/mutate"] == ("MutatingWebhookConfiguration", "volcano-admission-service-pods-mutate",
                                     "mutatepod.volcano.sh")
    assert all(c["apiVersion"] == "admissionregistration.k8s.io/v1" for c in got.values())


@pytest.mark.parametrize(("path", "group", "version", "resource", "operations"), [
    ("/jobs/mutate", "batch.volcano.sh", "v1alpha1", "jobs", ["CREATE"]),
    ("/jobs/validate", "batch.volcano.sh", "v1alpha1", "jobs", ["CREATE", "UPDATE"]),
    ("/queues/mutate", "scheduling.volcano.sh", "v1beta1", "queues", ["CREATE"]),
    ("/queues/validate", "scheduling.volcano.sh", "v1beta1", "queues", ["CREATE", "UPDATE", "DELETE"]),
    ("/podgroups/mutate", "scheduling.volcano.sh", "v1beta1", "podgroups", ["CREATE"]),
    ("/podgroups/validate", "scheduling.volcano.sh", "v1beta1", "podgroups", ["CREATE"]),
    ("/pods/mutate", "", "v1", "pods", ["CREATE"]),
    ("/pods/validate", "", "v1", "pods", ["CREATE"]),
])
def test_rules_match_upstreams_resources_and_operations(path: str, group: str, version: str, resource: str,
                                                        operations: list[str]) -> None:
    webhook = only_webhook(webhook_configuration(SERVICES[path], IN_CLUSTER, CA, ["volcano"]))
    assert webhook["rules"] == [{"apiGroups": [group], "apiVersions": [version], "operations": operations,
                                 "resources": [resource], "scope": "*"}]
    assert webhook["failurePolicy"] == "Fail"
    assert webhook["sideEffects"] == "None"
    assert webhook["admissionReviewVersions"] == ["v1"]
    assert webhook["timeoutSeconds"] == 10
    assert ("reinvocationPolicy" in webhook) == SERVICES[path].mutating


def test_pod_webhooks_only_match_pods_of_our_schedulers() -> None:
    for path in ("/pods/mutate", "/pods/validate"):
        webhook = only_webhook(webhook_configuration(SERVICES[path], IN_CLUSTER, CA, ["volcano", "o'dd"]))
        assert webhook["matchConditions"] == [{
            "name": "volcano-scheduled-pods",
            "expression": "object.spec.schedulerName in ['volcano', 'o\\'dd']",
        }]
    assert "matchConditions" not in only_webhook(webhook_configuration(SERVICES["/jobs/mutate"], IN_CLUSTER, CA,
                                                                       ["volcano"]))


def test_namespace_selector_leaves_out_kube_system_and_the_webhooks_own_namespace() -> None:
    webhook = only_webhook(webhook_configuration(SERVICES["/pods/validate"], IN_CLUSTER, CA, ["volcano"]))
    assert webhook["namespaceSelector"] == {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["volcano-system", "kube-system"]}]}
    by_url = ClientTarget(url="https://10.0.0.1:8443")
    webhook = only_webhook(webhook_configuration(SERVICES["/pods/validate"], by_url, CA, ["volcano"]))
    assert webhook["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system"]


def test_client_config_is_a_service_path_or_a_url_with_the_ca_bundle() -> None:
    webhook = only_webhook(webhook_configuration(SERVICES["/jobs/validate"], IN_CLUSTER, CA, ["volcano"]))
    assert webhook["clientConfig"] == {
        "service": {"namespace": "volcano-system", "name": "volcano-admission-service", "path": "/jobs/validate",
                    "port": 443},
        "caBundle": base64.b64encode(CA).decode(),
    }
    by_url = ClientTarget(url="https://127.0.0.1:8443/")
    webhook = only_webhook(webhook_configuration(SERVICES["/jobs/validate"], by_url, CA, ["volcano"]))
    assert webhook["clientConfig"]["url"] == "https://127.0.0.1:8443/jobs/validate"
    assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == CA


@pytest.mark.parametrize(("kwargs", "message"), [
    ({}, "failed to start webhooks as both 'url' and 'namespace/name' of webhook are empty"),
    ({"namespace": "volcano-system"}, "--webhook-namespace and --webhook-service-name must be given together"),
    ({"url": "http://x:8443"}, "expected an https:// URL"),
])
def test_client_target_needs_a_url_or_a_service(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ClientTarget(**kwargs)


def test_register_creates_then_leaves_unchanged_then_updates_a_changed_configuration() -> None:
    store = InMemoryStore()
    services = enabled_services(DEFAULT)
    first = register(store, services, IN_CLUSTER, CA, ["volcano"])
    assert [r.action for r in first] == ["created"] * 7
    assert len(store.list("MutatingWebhookConfiguration")) == 4
    assert len(store.list("ValidatingWebhookConfiguration")) == 3
    assert [r.action for r in register(store, services, IN_CLUSTER, CA, ["volcano"])] == ["unchanged"] * 7
    stale = store.get("ValidatingWebhookConfiguration", None, "volcano-admission-service-jobs-validate")
    stale["webhooks"][0]["clientConfig"].pop("caBundle")
    store.update(stale)
    again = register(store, services, IN_CLUSTER, CA, ["volcano"])
    assert [r.action for r in again if r.name.endswith("jobs-validate")] == ["updated"]
    fixed = store.get("ValidatingWebhookConfiguration", None, "volcano-admission-service-jobs-validate")
    assert base64.b64decode(fixed["webhooks"][0]["clientConfig"]["caBundle"]) == CA


def test_enabled_admission_rejects_unknown_and_duplicated_paths() -> None:
    assert [s.path for s in enabled_services(" /pods/validate, ,/jobs/mutate ")] == ["/pods/validate", "/jobs/mutate"]
    with pytest.raises(ValueError, match="enabled admission /jobtemplates/validate not found on the admission"):
        enabled_services("/jobs/mutate,/jobtemplates/validate")
    with pytest.raises(ValueError, match="duplicated admission service for /jobs/mutate"):
        enabled_services("/jobs/mutate,/jobs/mutate")
