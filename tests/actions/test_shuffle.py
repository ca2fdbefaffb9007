"""Specification tests for the shuffle action (upstream actions/shuffle/shuffle.go).

No built-in plugin registers ``VictimTasks`` yet, so a test-only plugin does, as upstream's
shuffle_test.go does with its fake plugin: every running task of low priority is a victim.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from builders import dump, node, pod, podgroup, queue
from pyvolcano.actions import BUILTIN_ACTIONS
from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.api.task import TaskInfo
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework.session import Session
from pyvolcano.plugins import BUILTIN_PLUGINS
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import Registry

LOW, HIGH = 1, 10


class LowPriorityVictims:
    """Test-only plugin: offers every candidate task with priority ``LOW`` as a victim."""

    name = "low-priority-victims"

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.offered: list[str] = []

    def on_session_open(self, ssn: Session) -> None:
        def victims(candidates: list[TaskInfo]) -> list[TaskInfo]:
            self.offered.extend(t.key for t in candidates)
            return [t for t in candidates if t.priority == LOW]

        ssn.add_victim_tasks_fn(self.name, victims)

    def on_session_close(self, ssn: Session) -> None:
        return None


def run(*docs: dict[str, Any], enabled_victim: bool = True) -> tuple[dict[str, Any], LowPriorityVictims]:
    plugin = LowPriorityVictims()

    def factory(arguments: Mapping[str, Any]) -> LowPriorityVictims:
        return plugin

    registry = Registry(BUILTIN_PLUGINS, BUILTIN_ACTIONS, extra_plugins={plugin.name: factory})
    conf = load_scheduler_conf(
        'actions: "shuffle"\n'
        "tiers:\n"
        "- plugins:\n"
        f"  - name: {plugin.name}\n"
        f"    enabledVictim: {str(enabled_victim).lower()}\n"
    )
    cache = SchedulerCache.from_objects(load_manifest_text(dump(*docs), "test.yaml"))
    return schedule_objects(cache, conf, registry, sessions=1, seed=0), plugin


def cluster() -> list[dict[str, Any]]:
    def running(name: str, group: str, node_name: str, priority: int) -> dict[str, Any]:
        return pod(name, group, ns="test", node_name=node_name, phase="Running", cpu="1", memory="2G",
                   priority=priority)

    return [
        queue("default"),
        node("node1", cpu="4", memory="8Gi"), node("node2", cpu="4", memory="8Gi"),
        podgroup("pg1", ns="test", queue="default", min_member=0, phase="Running"),
        podgroup("pg2", ns="test", queue="default", min_member=0, phase="Running"),
        podgroup("pg3", ns="test", queue="default", min_member=0, phase="Running"),
        running("pod1-1", "pg1", "node1", LOW), running("pod1-2", "pg1", "node1", HIGH),
        running("pod1-3", "pg1", "node1", HIGH), running("pod2-1", "pg2", "node1", LOW),
        running("pod2-2", "pg2", "node2", HIGH), running("pod3-1", "pg3", "node2", LOW),
        running("pod3-2", "pg3", "node2", HIGH),
    ]


def test_shuffle_evicts_every_victim_the_plugins_select() -> None:
    out, _plugin = run(*cluster())
    assert sorted(out["evictions"]) == ["test/pod1-1", "test/pod2-1", "test/pod3-1"]
    assert out["binds"] == {}


def test_shuffle_offers_only_running_tasks() -> None:
    bound = pod("pod9-1", "pg3", ns="test", node_name="node2", phase="Pending", cpu="1", memory="2G",
                priority=LOW)
    waiting = pod("pod9-2", "pg3", ns="test", phase="Pending", cpu="1", memory="2G", priority=LOW)
    out, plugin = run(*cluster(), bound, waiting)
    assert "test/pod9-1" not in plugin.offered
    assert "test/pod9-2" not in plugin.offered
    assert sorted(out["evictions"]) == ["test/pod1-1", "test/pod2-1", "test/pod3-1"]


def test_shuffle_evicts_nothing_when_victim_selection_is_disabled() -> None:
    out, _plugin = run(*cluster(), enabled_victim=False)
    assert out["evictions"] == []
