"""``bus.volcano.sh/v1alpha1`` Commands, as upstream's vcctl creates them.

A Command names its target with a controller reference (``target``), is owned by it
(``ownerReferences``, so it goes when the target goes) and is named ``<target>-<action>-``
plus a suffix the API server generates (``pkg/cli/util.CreateJobCommand``,
``pkg/cli/queue/util.go``). Job Commands live in the Job's namespace; queue Commands in
``default``, as upstream's ``createQueueCommand`` puts them. The job and queue controllers act
on them; vcctl and the dashboard's actions create them through the functions here.
"""

from __future__ import annotations

from typing import Any

from pyvolcano.api.names import BUS_API_VERSION
from pyvolcano.store.base import Store

__all__ = ["JOB_ACTIONS", "QUEUE_ACTIONS", "command_for", "controller_ref", "delete_job", "operate_job",
           "operate_queue"]

JOB_ACTIONS = {"suspend": "AbortJob", "resume": "ResumeJob"}
"""vcctl's job verbs and the Command action each creates."""
QUEUE_ACTIONS = {"open": "OpenQueue", "close": "CloseQueue"}
"""vcctl's ``queue operate --action`` values and the Command action each creates."""


def controller_ref(obj: dict[str, Any]) -> dict[str, Any]:
    """``metav1.NewControllerRef(obj, kind)``."""
    md = obj.get("metadata") or {}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": md.get("name"),
            "uid": md.get("uid", ""), "controller": True, "blockOwnerDeletion": True}


def command_for(target: dict[str, Any], action: str, namespace: str) -> dict[str, Any]:
    ref = controller_ref(target)
    return {
        "apiVersion": BUS_API_VERSION,
        "kind": "Command",
        "metadata": {"generateName": f"{ref['name']}-{action.lower()}-", "namespace": namespace,
                     "ownerReferences": [ref]},
        "target": ref,
        "action": action,
    }


def operate_job(store: Store, namespace: str, name: str, verb: str) -> dict[str, Any]:
    """``vcctl job suspend|resume``: a Command for the Job ``namespace/name``; returns it as created.
    The store's errors (NotFound, Forbidden, ...) are the API server's answer."""
    target = store.get("Job", namespace, name)
    ns = str((target.get("metadata") or {}).get("namespace") or namespace)
    return store.create(command_for(target, JOB_ACTIONS[verb], ns))


def delete_job(store: Store, namespace: str, name: str) -> None:
    """``vcctl job delete``."""
    store.delete("Job", namespace, name)


def operate_queue(store: Store, name: str, verb: str) -> dict[str, Any]:
    """``vcctl queue operate --action open|close``: a Command for the Queue, in ``default``."""
    target = store.get("Queue", None, name)
    return store.create(command_for(target, QUEUE_ACTIONS[verb], "default"))
