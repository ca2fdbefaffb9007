"""``bus.volcano.sh/v1alpha1`` Commands, as upstream's vcctl creates them.

A Command names its target with a controller reference (``target``), is owned by it
(``ownerReferences``, so it goes when the target goes) and is named ``<target>-<action>-``
plus a suffix the API server generates (``pkg/cli/util.CreateJobCommand``,
``pkg/cli/queue/util.go``). Job Commands live in the Job's namespace; queue Commands in
``default``, as upstream's ``createQueueCommand`` puts them.
"""

from __future__ import annotations

from typing import Any

from pyvolcano.api.names import BUS_API_VERSION

__all__ = ["command_for", "controller_ref"]


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
