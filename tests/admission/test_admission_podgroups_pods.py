"""PodGroup and Pod admission, and the generic metadata rules every kind gets."""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.store import InMemoryStore, Invalid


def podgroup(name: str = "pg", ns: str = "ns", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def pod(name: str = "p", *, scheduler: str = "volcano", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "ns"}
    if annotations is not None:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "i"}]}}


def rejected(store: InMemoryStore, obj: dict[str, Any], field: str, message: str, *, update: bool = False) -> None:
    with pytest.raises(Invalid) as e:
        store.update(obj) if update else store.create(obj)
    kind, md = obj["kind"], obj["metadata"]
    assert str(e.value).startswith(f"{kind} {md['namespace']}/{md['name']}: "), str(e.value)
    assert any(f == field and message in m for f, m in e.value.errors), e.value.errors


# ----------------------------------------------------------------------------- PodGroup


def test_podgroup_queue_defaults_to_default(store: InMemoryStore) -> None:
    assert store.create(podgroup(minMember=1))["spec"]["queue"] == "default"


def test_podgroup_takes_the_namespace_queue_annotation(store: InMemoryStore) -> None:
    store.create({"kind": "Queue", "metadata": {"name": "team"}, "status": {"state": "Open"}})
    store.create({"kind": "Namespace", "metadata": {"name": "ns",
                                                    "annotations": {"scheduling.volcano.sh/queue-name": "team"}}})
    assert store.create(podgroup("a"))["spec"]["queue"] == "team"
    assert store.create(podgroup("b", queue="default"))["spec"]["queue"] == "team"
    store.create({"kind": "Queue", "metadata": {"name": "other"}})
    assert store.create(podgroup("c", queue="other"))["spec"]["queue"] == "other"


def test_podgroup_queue_must_exist_and_be_open(store: InMemoryStore) -> None:
    rejected(store, podgroup(queue="ghost"), "spec.queue",
             'unable to find queue: queues.scheduling.volcano.sh "ghost" not found')
    store.create({"kind": "Queue", "metadata": {"name": "shut"}, "status": {"state": "Closed"}})
    rejected(store, podgroup(queue="shut"), "spec.queue",
             "can only submit PodGroup to queue with state `Open`, queue `shut` status is `Closed`.")


@pytest.mark.parametrize(("spec", "field", "message"), [
    ({"minMember": -1}, "spec.minMember", "Invalid value: -1: must be greater than or equal to 0"),
    ({"minMember": "1"}, "spec.minMember", 'Invalid value: "1": expected an integer'),
    ({"minResources": {"cpu": "x"}}, "spec.minResources.cpu", "quantities must match the regular expression"),
    ({"queue": "Bad_Q"}, "spec.queue", "a lowercase RFC 1123 subdomain"),
    ({"networkTopology": {"highestTierAllowed": 1, "highestTierName": "r"}}, "spec.networkTopology",
     "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously."),
    ({"subGroupPolicy": [{"name": "g", "subGroupSize": 1,
                          "networkTopology": {"highestTierAllowed": 1, "highestTierName": "r"}}]},
     "spec.subGroupPolicy[0].networkTopology", "in subGroupPolicy 'g': must not specify 'highestTierAllowed'"),
    ({"subGroupPolicy": [{"name": "g", "subGroupSize": 0}]}, "spec.subGroupPolicy[0].subGroupSize",
     "must be greater than or equal to 1"),
    ({"subGroupPolicy": [{"name": "g", "minSubGroups": -1}]}, "spec.subGroupPolicy[0].minSubGroups",
     "must be greater than or equal to 0"),
])
def test_podgroup_rules(store: InMemoryStore, spec: dict[str, Any], field: str, message: str) -> None:
    rejected(store, podgroup(**spec), field, message)


def test_podgroup_updates_keep_schema_rules_but_not_the_queue_check(store: InMemoryStore) -> None:
    store.create({"kind": "Queue", "metadata": {"name": "q"}})
    pg = store.create(podgroup(queue="q", minMember=1))
    store.patch("Queue", None, "q", {"status": {"state": "Closed"}}, subresource="status")
    pg["spec"]["minMember"] = 2
    store.update(pg)
    pg = store.get("PodGroup", "ns", "pg")
    pg["spec"]["minMember"] = -1
    rejected(store, pg, "spec.minMember", "must be greater than or equal to 0", update=True)


# ----------------------------------------------------------------------------- Pod


@pytest.mark.parametrize("value", ["1", "3", "50%", "1%", "99%"])
@pytest.mark.parametrize("key", ["volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable"])
def test_valid_disruption_budgets(store: InMemoryStore, key: str, value: str) -> None:
    store.create(pod(annotations={key: value}))


@pytest.mark.parametrize(("value", "message"), [
    ("0", 'invalid value <"0"> for {key}, it must be a positive integer'),
    ("-2", 'invalid value <"-2"> for {key}, it must be a positive integer'),
    ("100%", 'invalid value <"100%"> for {key}, it must be a valid percentage which between 1% ~ 99%'),
    ("0%", 'invalid value <"0%"> for {key}, it must be a valid percentage which between 1% ~ 99%'),
    ("half", 'invalid value strconv.Atoi: parsing "half": invalid syntax for {key}'),
])
@pytest.mark.parametrize("key", ["volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable"])
def test_invalid_disruption_budgets(store: InMemoryStore, key: str, value: str, message: str) -> None:
    rejected(store, pod(annotations={key: value}), f"metadata.annotations[{key}]", message.format(key=key))


def test_only_one_disruption_budget(store: InMemoryStore) -> None:
    rejected(store, pod(annotations={"volcano.sh/jdb-min-available": "1", "volcano.sh/jdb-max-unavailable": "1"}),
             "metadata.annotations", "not allow configure multiple annotations <[volcano.sh/jdb-min-available "
                                     "volcano.sh/jdb-max-unavailable]> at same time")


def test_pods_of_other_schedulers_are_not_checked(store: InMemoryStore) -> None:
    store.create(pod(scheduler="default-scheduler", annotations={"volcano.sh/jdb-min-available": "0"}))
    s = InMemoryStore(admission=VolcanoAdmission(scheduler_names=("vc1", "vc2")))
    with pytest.raises(Invalid):
        s.create(pod(scheduler="vc2", annotations={"volcano.sh/jdb-min-available": "0"}))


def test_pod_updates_are_not_checked(store: InMemoryStore) -> None:
    p = store.create(pod())
    p["metadata"]["annotations"] = {"volcano.sh/jdb-min-available": "0"}
    store.update(p)


# ----------------------------------------------------------------------------- generic metadata


@pytest.mark.parametrize(("obj", "field", "message"), [
    ({"kind": "Pod", "metadata": {"name": "Bad_Name", "namespace": "ns"}}, "metadata.name",
     'Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain'),
    ({"kind": "ConfigMap", "metadata": {"name": "x" * 254, "namespace": "ns"}}, "metadata.name",
     "must be no more than 253 characters"),
    ({"kind": "Service", "metadata": {"name": "1svc", "namespace": "ns"}}, "metadata.name",
     'Invalid value: "1svc": a DNS-1035 label'),
    ({"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "Bad.NS"}}, "metadata.namespace",
     "a lowercase RFC 1123 label"),
    ({"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns", "labels": {"a/b/c": "x"}}},
     "metadata.labels", "a qualified name must consist of alphanumeric characters"),
    ({"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns", "annotations": {"_x": "y"}}},
     "metadata.annotations", "name part must consist of alphanumeric characters"),
])
def test_generic_metadata(store: InMemoryStore, obj: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(Invalid) as e:
        store.create(obj)
    assert any(f == field and message in m for f, m in e.value.errors), e.value.errors


def test_generated_names_are_admitted_after_generation(store: InMemoryStore) -> None:
    out = store.create({"kind": "ConfigMap", "metadata": {"generateName": "job-ssh-", "namespace": "ns"}})
    assert out["metadata"]["name"].startswith("job-ssh-")
    with pytest.raises(Invalid, match=r"metadata\.name"):
        store.create({"kind": "ConfigMap", "metadata": {"generateName": "Bad-", "namespace": "ns"}})
