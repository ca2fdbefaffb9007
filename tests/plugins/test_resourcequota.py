"""resourcequota: PodGroups stay Pending while a ResourceQuota of their namespace cannot hold
their minResources; what one session admits counts against the next vote of that session."""

from __future__ import annotations

from builders import open_session, podgroup, queue, resource_quota, schedule
from pyvolcano.plugins.resourcequota import ResourceQuotaPlugin, format_amount

CONF = """
actions: "enqueue"
tiers:
- plugins:
  - name: resourcequota
"""


def pending(name: str, cpu: str, memory: str = "1Gi", ns: str = "ns") -> dict[str, object]:
    return podgroup(name, ns=ns, phase="Pending", min_member=1, minResources={"cpu": cpu, "memory": memory})


def phases(*docs: dict[str, object]) -> dict[str, str]:
    return schedule(queue("q"), *docs, conf=CONF)["podgroups"]


def test_podgroups_are_admitted_until_the_quota_is_full() -> None:
    out = phases(resource_quota("rq", {"cpu": "3"}), pending("a", "2"), pending("b", "1"), pending("c", "1"))
    assert out == {"ns/a": "Inqueue", "ns/b": "Inqueue", "ns/c": "Pending"}


def test_used_in_the_quota_status_counts() -> None:
    out = phases(resource_quota("rq", {"cpu": "3"}, {"cpu": "2"}), pending("a", "2"), pending("b", "1"))
    assert out == {"ns/a": "Pending", "ns/b": "Inqueue"}


def test_every_quota_of_the_namespace_must_hold_the_podgroup() -> None:
    out = phases(resource_quota("cpu", {"cpu": "8"}), resource_quota("mem", {"memory": "1Gi"}),
                 pending("a", "1", "2Gi"))
    assert out == {"ns/a": "Pending"}


def test_quotas_of_other_namespaces_do_not_apply() -> None:
    assert phases(resource_quota("rq", {"cpu": "1"}, ns="other"), pending("a", "4")) == {"ns/a": "Inqueue"}


def test_next_session_starts_from_the_quota_status_again() -> None:
    # The pending usage of a session is forgotten at its close; the quota controller's
    # status.used would take over on a real cluster.
    docs = [queue("q"), resource_quota("rq", {"cpu": "1"}), pending("a", "1"), pending("b", "1")]
    assert schedule(*docs, conf=CONF, sessions=2)["podgroups"] == {"ns/a": "Inqueue", "ns/b": "Inqueue"}


def test_a_rejection_names_the_quota_and_the_figures() -> None:
    ssn = open_session(queue("q"), resource_quota("rq", {"cpu": "1500m"}, {"cpu": "500m"}), pending("a", "2"),
                       conf=CONF)
    plugin = next(p for _o, p in ssn.plugins if isinstance(p, ResourceQuotaPlugin))
    job = ssn.jobs["ns/a"]
    assert not ssn.job_enqueueable(job)
    rejection = plugin.rejection("ns/a")
    assert rejection is not None and rejection.quota == "ns/rq" and rejection.exceeded == ("cpu",)
    assert [format_amount(v) for v in (rejection.requested[0], rejection.used[0], rejection.hard[0])] == \
        ["2", "500m", "1500m"]
    assert ssn.podgroup_events["ns/a"] == [
        "Normal Unschedulable resource quota insufficient, requested: map[cpu:2], used: map[cpu:500m], "
        "limited: map[cpu:1500m]"]
