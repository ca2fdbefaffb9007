"""Specification tests for ``pyvolcano.api.plugin_fields``: the object fields that change
placement upstream only through one plugin, or that pyvolcano does not act on yet."""

from __future__ import annotations

from builders import pod, podgroup, queue, resource_claim
from pyvolcano.api.manifest import parse_object
from pyvolcano.api.plugin_fields import PLUGIN_FIELDS, fields_of, message, placement_notes
from pyvolcano.plugins import UPSTREAM_PLUGINS

AFFINE = queue("q", affinity={"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["a"]}})
INLINE_CSI = {"name": "scratch", "csi": {"driver": "inline.csi.example.com"}}
CAPACITY_CLAIM = resource_claim("shared-nic")
CAPACITY_CLAIM["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {"requests": {"bandwidth": "10G"}}


def test_every_field_names_an_upstream_plugin_or_none() -> None:
    assert all(f.plugin is None or f.plugin in UPSTREAM_PLUGINS for f in PLUGIN_FIELDS)
    assert len({(f.kind, f.path) for f in PLUGIN_FIELDS}) == len(PLUGIN_FIELDS)


def test_a_field_is_found_alike_in_a_manifest_and_in_the_object_read_from_it() -> None:
    zoned = pod("p", "pg", labels={"volcano.sh/revocable-zone": "rz"}, volumes=[INLINE_CSI])
    for kind, doc in (("Queue", AFFINE), ("Pod", zoned), ("Queue", queue("plain")), ("Pod", pod("p", "pg")),
                      ("ResourceClaim", CAPACITY_CLAIM), ("ResourceClaim", resource_claim("plain"))):
        assert list(fields_of(kind, doc)) == list(fields_of(kind, parse_object(doc))), doc
    assert [f.path for f in fields_of("Pod", zoned)] == ["metadata.labels[volcano.sh/revocable-zone]",
                                                          "spec.volumes[].csi"]


def test_a_plugin_the_configuration_enables_acts_on_its_fields() -> None:
    assert [f.plugin for f in fields_of("Queue", AFFINE)] == ["nodegroup"]
    assert list(fields_of("Queue", AFFINE, enabled=("gang", "nodegroup"))) == []


def test_a_field_nothing_acts_on_is_noted_whatever_the_configuration() -> None:
    inline = pod("p", "pg", volumes=[INLINE_CSI])
    (f,) = fields_of("Pod", inline, enabled=[p for p in UPSTREAM_PLUGINS])
    assert message(f, with_configuration=True) == ("spec.volumes[].csi (an inline CSI volume) is not acted on by "
                                                  "pyvolcano yet; it is not counted against the node's CSI attach "
                                                  "limit")


def test_pod_level_resources_are_no_longer_a_field_pyvolcano_ignores() -> None:
    assert list(fields_of("Pod", pod("p", "pg", resources={"requests": {"cpu": "2"}}))) == []


def test_a_path_field_is_found_in_any_item_of_a_list() -> None:
    in_second = resource_claim("c", count=1)
    in_second["spec"]["devices"]["requests"].append(
        {"name": "nic", "firstAvailable": [{"name": "a", "deviceClassName": "nic"},
                                           {"name": "b", "deviceClassName": "nic",
                                            "capacity": {"requests": {"bandwidth": "1G"}}}]})
    assert [f.path for f in fields_of("ResourceClaim", in_second)] == [
        "spec.devices.requests[].firstAvailable[].capacity"]
    in_second["spec"]["devices"]["requests"][1]["firstAvailable"][1]["capacity"] = {}
    assert list(fields_of("ResourceClaim", in_second)) == []


def test_job_why_notes_the_claims_of_the_jobs_pods() -> None:
    notes = placement_notes(None, None, [], enabled=("gang",), claims=[parse_object(CAPACITY_CLAIM)])
    assert notes == ["ResourceClaim ns/shared-nic: spec.devices.requests[].exactly.capacity (a consumable-capacity "
                     "request) is not acted on by pyvolcano yet; devices are allocated whole, as if it were absent"]


def test_placement_notes_name_the_queue_the_podgroup_and_the_pods_once_per_field() -> None:
    pg = podgroup("pg")
    pg["metadata"]["annotations"] = {"volcano.sh/task-topology-affinity": "ps,worker"}
    pods = [parse_object(pod(f"p-{i}", "pg", labels={"volcano.sh/cooldown-time": "5m"})) for i in range(3)]
    notes = placement_notes(parse_object(AFFINE), parse_object(pg), pods, enabled=("gang",))
    assert [n.split(":")[0] for n in notes] == ["Queue q", "PodGroup ns/pg", "Pod ns/p-0 and 2 more pods"]
