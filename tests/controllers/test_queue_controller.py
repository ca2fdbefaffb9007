"""The queue controller: built-in queues, Open/Closing/Closed via Commands, hierarchy, counts."""

from __future__ import annotations

from typing import Any

import pytest
from ctrl_harness import Harness, task, vcjob

from pyvolcano.controllers.queue import QueueController
from pyvolcano.store.base import Invalid
from pyvolcano.store.memory import InMemoryStore


def queue(name: str, parent: str | None = None, weight: int = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": weight}
    if parent:
        spec["parent"] = parent
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def state(h: Harness, name: str) -> str:
    return str((h.get("Queue", None, name).get("status") or {}).get("state") or "")


def test_root_and_default_created_at_start() -> None:
    store = InMemoryStore()
    QueueController(store=store)
    root, default = store.get("Queue", None, "root"), store.get("Queue", None, "default")
    assert root["spec"] == {"reclaimable": False, "weight": 1}
    assert default["spec"] == {"reclaimable": True, "weight": 1}
    QueueController(store=store)  # idempotent
    assert len(store.list("Queue")) == 2


def test_new_queue_opens_and_gets_root_parent() -> None:
    h = Harness()
    h.create(queue("q1"))
    q = h.get("Queue", None, "q1")
    assert q["status"]["state"] == "Open"
    assert q["spec"]["parent"] == "root"
    assert state(h, "root") == "Open"
    assert "parent" not in h.get("Queue", None, "root")["spec"]


def test_close_and_open_without_podgroups() -> None:
    h = Harness()
    h.create(queue("q1"))
    h.command("CloseQueue", "Queue", "q1")
    assert h.store.list("Command") == []
    assert state(h, "q1") == "Closed"
    h.command("OpenQueue", "Queue", "q1")
    assert state(h, "q1") == "Open"
    assert h.get("Queue", None, "q1")["metadata"]["annotations"] == {"volcano.sh/closed-by-parent": "false"}


def test_close_with_podgroups_is_closing_until_they_go() -> None:
    h = Harness()
    h.create(queue("q1"))
    h.create(vcjob("j", task("worker", 1), queue="q1"))
    h.command("CloseQueue", "Queue", "q1")
    assert state(h, "q1") == "Closing"
    # New work is refused by admission while the queue is not Open.
    with pytest.raises(Invalid, match="q1"):
        h.store.create(vcjob("j2", task("worker", 1), queue="q1"))
    h.store.delete("Job", "default", "j")
    h.settle()
    assert h.store.list("PodGroup") == []
    assert state(h, "q1") == "Closed"


def test_reopen_closing_queue() -> None:
    h = Harness()
    h.create(queue("q1"))
    h.create(vcjob("j", task("worker", 1), queue="q1"))
    h.command("CloseQueue", "Queue", "q1")
    assert state(h, "q1") == "Closing"
    h.command("OpenQueue", "Queue", "q1")
    assert state(h, "q1") == "Open"


def test_root_cannot_be_closed() -> None:
    h = Harness()
    h.command("CloseQueue", "Queue", "root")
    assert state(h, "root") == "Open"


def test_closing_parent_closes_children_and_opening_reopens_them() -> None:
    h = Harness()
    h.create(queue("parent"))
    h.create(queue("child", parent="parent"))
    h.create(queue("other", parent="parent"))
    h.command("CloseQueue", "Queue", "other")
    assert state(h, "other") == "Closed"
    h.command("CloseQueue", "Queue", "parent")
    assert state(h, "parent") == "Closed"
    assert state(h, "child") == "Closed"
    assert h.get("Queue", None, "child")["metadata"]["annotations"]["volcano.sh/closed-by-parent"] == "true"
    # "other" was closed by hand, not by its parent.
    assert "annotations" not in h.get("Queue", None, "other")["metadata"]
    h.command("OpenQueue", "Queue", "parent")
    assert state(h, "parent") == "Open"
    assert state(h, "child") == "Open"
    assert state(h, "other") == "Closed"


def test_child_cannot_open_under_closed_parent() -> None:
    h = Harness()
    h.create(queue("parent"))
    h.create(queue("child", parent="parent"))
    h.command("CloseQueue", "Queue", "parent")
    h.command("OpenQueue", "Queue", "child")
    h.advance(300)
    assert state(h, "child") == "Closed"


def test_status_counts_podgroups_per_phase() -> None:
    h = Harness()
    h.create(vcjob("a", task("worker", 1)))
    h.create(vcjob("b", task("worker", 1)))
    st = h.get("Queue", None, "default")["status"]
    assert (st["state"], st.get("pending")) == ("Open", None)  # PodGroups have no phase yet
    h.set_pg_phase("a", "Pending")
    h.set_pg_phase("b", "Inqueue")
    st = h.get("Queue", None, "default")["status"]
    assert (st["pending"], st["inqueue"]) == (1, 1)
    h.set_pg_phase("b", "Running")
    st = h.get("Queue", None, "default")["status"]
    assert (st["pending"], st.get("inqueue"), st["running"]) == (1, None, 1)
    # Counts are merged into the status; what the scheduler writes there is kept.
    h.store.patch("Queue", None, "default", {"status": {"allocated": {"cpu": "1"}}}, subresource="status")
    h.set_pg_phase("a", "Unknown")
    st = h.get("Queue", None, "default")["status"]
    assert st["allocated"] == {"cpu": "1"}
    assert (st.get("pending"), st["unknown"], st["running"]) == (None, 1, 1)
