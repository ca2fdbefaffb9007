"""cdp: pods are not preempted or reclaimed within their cooldown after being scheduled; the
clock is the session's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.api.objects import Pod
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.plugins.cdp import CooldownProtection, cooldown_of, protected_until
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.registry import default_registry

CONF = """
actions: "preempt, reclaim"
tiers:
- plugins:
  - name: gang
    enablePreemptable: false
    enableReclaimable: false
    enableJobReady: false
  - name: cdp
"""
START = "2025-01-01T00:00:00Z"
T0 = 366 * 86400.0  # START on the store's clock (seconds after 2024-01-01)


def started(name: str, *, cooldown: str | None = "10m", where: str = "annotations", since: str = START,
            group: str = "elastic") -> dict[str, Any]:
    d = pod(name, group, node_name="n1", phase="Running")
    if cooldown is not None:
        d["metadata"][where] = {**d["metadata"].get(where, {}), "volcano.sh/cooldown-time": cooldown}
    d["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": since}]
    return d


def decide(*victims: dict[str, Any], now: float, other_queue: bool = False) -> list[str]:
    """The evictions one preempt + reclaim session makes at ``now`` for a 1-cpu preemptor."""
    docs = [queue("q"), queue("other"), node("n1", cpu="2", memory="4Gi"),
            podgroup("elastic", queue="other" if other_queue else "q", phase="Running"), *victims,
            podgroup("urgent"), pod("urgent-0", "urgent", cpu="1", memory="1Gi")]
    config = load_scheduler_conf(CONF)
    registry = default_registry()
    res = run_once(cache_of(*docs), config, registry.plugin_factories(config.plugin_names()),
                   registry.action_factories(config.actions), now=now, rng=np.random.default_rng(0))
    return sorted(res.evictions)


def test_a_pod_inside_its_cooldown_is_not_a_victim() -> None:
    both = [started("a"), started("b")]
    assert decide(*both, now=T0 + 60) == []
    assert decide(*both, now=T0 + 601) == ["ns/b"]


def test_the_cooldown_ends_exactly_at_its_duration() -> None:
    # Upstream: protected while lastTransitionTime + cooldown is after now.
    assert decide(started("a"), started("b"), now=T0 + 600) == ["ns/b"]


def test_reclaim_is_held_back_too() -> None:
    both = [started("a"), started("b")]
    assert decide(*both, now=T0 + 60, other_queue=True) == []
    assert decide(*both, now=T0 + 3600, other_queue=True) == ["ns/b"]


def test_unprotected_pods_are_taken_before_none() -> None:
    victims = [started("a", cooldown="1h"), started("b", cooldown=None)]
    assert decide(*victims, now=T0 + 60) == ["ns/b"]


def parsed(d: dict[str, Any]) -> Pod:
    return next(iter(cache_of(queue("q"), node("n1"), podgroup("elastic"), d).pods.values()))


def test_the_label_wins_over_the_annotation() -> None:
    d = started("a", cooldown="1h", where="labels")
    d["metadata"]["annotations"]["volcano.sh/cooldown-time"] = "1s"
    assert cooldown_of(parsed(d)) == 3600.0


@pytest.mark.parametrize("text", ["600abcde", "ten minutes", " 10m", ""])
def test_a_cooldown_that_is_not_a_go_duration_protects_nothing(text: str) -> None:
    assert protected_until(parsed(started("a", cooldown=text))) is None


def test_only_running_pods_with_a_scheduled_condition_are_protected() -> None:
    pending = started("a")
    pending["status"]["phase"] = "Pending"
    no_condition = started("b")
    no_condition["status"]["conditions"] = []
    not_true = started("c")
    not_true["status"]["conditions"][0]["status"] = "False"
    for d in (pending, no_condition, not_true):
        assert protected_until(parsed(d)) is None
    assert protected_until(parsed(started("d"))) == T0 + 600


def test_a_malformed_argument_is_refused_with_its_name() -> None:
    with pytest.raises(ArgumentError, match="enableGangEviction"):
        CooldownProtection({"enableGangEviction": 3})
