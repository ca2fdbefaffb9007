"""proportion: the quota a queue would have if it asked more (read by the reservation plugin)."""

from __future__ import annotations

import yaml

from builders import node, open_session, pod, podgroup, queue
from pyvolcano.api.resource import Resource

_CONF = yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [{"name": "proportion"}]}]})


def test_quota_if_asked_water_fills_again_with_the_larger_request_and_leaves_the_session_alone() -> None:
    docs = [queue("q"), queue("other"), node("n1", cpu="8"), node("n2", cpu="8"),
            podgroup("o", queue="other"), *(pod(f"o-{i}", "o", cpu="4") for i in range(3)),
            podgroup("gang", min_member=2, phase="Pending", minResources={"cpu": "8"})]
    ssn = open_session(*docs, conf=_CONF)
    assert ssn.queue_quotas()["q"].allocate_limit.get("cpu") == 0.0  # nothing asked, nothing deserved
    assert ssn.queue_quotas()["other"].allocate_limit.get("cpu") == 12000.0
    extra = Resource()
    extra.set("cpu", 10000.0)
    # 16 cpu between two equal weights, other asking 12: 8 each.
    quota = ssn.queue_quota_if_asked("q", extra)
    assert quota is not None
    assert quota.allocate_limit.get("cpu") == 8000.0
    assert ssn.queue_quotas()["q"].allocate_limit.get("cpu") == 0.0
    assert ssn.queue_quotas()["other"].allocate_limit.get("cpu") == 12000.0


def test_quota_if_asked_is_none_without_a_quota_plugin() -> None:
    conf = yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]}]})
    ssn = open_session(queue("q"), node("n1"), podgroup("g", min_member=1), pod("g-0", "g"), conf=conf)
    assert ssn.queue_quota_if_asked("q", Resource()) is None
