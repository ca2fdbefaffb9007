"""The API server's Priority admission plugin and PriorityClass validation.

``plugin/pkg/admission/priority/admission.go`` (on by default in every cluster), for a Pod on
CREATE:

* with ``spec.priorityClassName``: the class must exist, else the pod is refused (Forbidden)
  with ``no PriorityClass with name <name> was found``. The two system classes
  (``system-cluster-critical`` 2000000000, ``system-node-critical`` 2000001000) always exist.
* without one: the global-default class (the lowest-valued one if several claim it) gives its
  name, value and preemption policy; with none, priority 0 and ``PreemptLowerPriority``.
* a ``spec.priority`` or ``spec.preemptionPolicy`` already in the pod that differs from the
  computed one is refused; otherwise both are written into the pod.

On UPDATE the stored priority and preemption policy are kept when the new object omits them.

A Volcano Job is not a Pod: upstream's job webhook does not look at ``priorityClassName``, so a
Job naming a missing class is admitted, and the job controller (which copies the name onto
every pod) fails to create its pods, retries, and terminates the job at its retry limit.

PriorityClass objects (``pkg/apis/scheduling/validation.ValidatePriorityClass`` and the
plugin's CREATE/UPDATE check): a name starting ``system-`` must be one of the system classes,
a user-defined value is at most :data:`HIGHEST_USER_DEFINABLE_PRIORITY`, the value is an int32,
``preemptionPolicy`` is ``Never`` or ``PreemptLowerPriority``, and only one class may be the
global default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pyvolcano.admission._common import INT32_MAX, Problems, quote, sub
from pyvolcano.store.base import Forbidden, NotFound, Store, object_key

__all__ = [
    "DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS",
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "SYSTEM_PRIORITY_CLASSES",
    "admit_pod_priority",
    "find_priority_class",
    "validate_priority_class",
]

HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS: Final = 0
SYSTEM_PRIORITY_CLASS_PREFIX: Final = "system-"
SYSTEM_PRIORITY_CLASSES: Final[Mapping[str, int]] = {
    "system-node-critical": 2 * HIGHEST_USER_DEFINABLE_PRIORITY + 1000,
    "system-cluster-critical": 2 * HIGHEST_USER_DEFINABLE_PRIORITY,
}
PREEMPTION_POLICIES: Final = ("Never", "PreemptLowerPriority")


def find_priority_class(store: Store, name: str) -> Mapping[str, Any] | None:
    """The PriorityClass ``name`` from the store, or a system class; None if there is none."""
    try:
        return store.get("PriorityClass", None, name)
    except NotFound:
        pass
    if name in SYSTEM_PRIORITY_CLASSES:
        return {"metadata": {"name": name}, "value": SYSTEM_PRIORITY_CLASSES[name],
                "preemptionPolicy": "PreemptLowerPriority"}
    return None


def _default_class(store: Store) -> Mapping[str, Any] | None:
    defaults = [pc for pc in store.list("PriorityClass") if pc.get("globalDefault") is True]
    if not defaults:
        return None
    return min(defaults, key=lambda pc: _value(pc))


def _value(pc: Mapping[str, Any]) -> int:
    v = pc.get("value")
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def admit_pod_priority(op: str, pod: dict[str, Any], old: Mapping[str, Any] | None, store: Store) -> None:
    """Resolve the pod's priority in place; raise :class:`Forbidden` as the plugin refuses."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    if op == "UPDATE":
        old_spec = sub(old or {}, "spec")
        for key in ("priority", "preemptionPolicy"):
            if spec.get(key) is None and old_spec.get(key) is not None:
                spec[key] = old_spec[key]
        return
    if op != "CREATE":
        return
    md = pod.get("metadata") if isinstance(pod.get("metadata"), Mapping) else {}
    key = object_key("Pod", md.get("namespace"), str(md.get("name") or "?"))  # type: ignore[union-attr]
    name = spec.get("priorityClassName")
    policy: Any
    if not name:
        pc = _default_class(store)
        if pc is None:
            priority, policy = DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS, "PreemptLowerPriority"
        else:
            priority, policy = _value(pc), pc.get("preemptionPolicy")
            spec["priorityClassName"] = pc["metadata"]["name"]
    else:
        found = find_priority_class(store, str(name))
        if found is None:
            raise Forbidden("Pod", key, f"no PriorityClass with name {name} was found")
        priority, policy = _value(found), found.get("preemptionPolicy")
    given = spec.get("priority")
    if given is not None and given != priority:
        raise Forbidden("Pod", key, f"the integer value of priority ({given}) must not be provided in pod spec; "
                                    f"priority admission controller computed {priority} from the given "
                                    "PriorityClass name")
    spec["priority"] = priority
    if isinstance(policy, str) and policy:
        given_policy = spec.get("preemptionPolicy")
        if given_policy and given_policy != policy:
            raise Forbidden("Pod", key, f"the string value of PreemptionPolicy ({given_policy}) must not be "
                                        f"provided in pod spec; priority admission controller computed {policy} "
                                        "from the given PriorityClass name")
        spec["preemptionPolicy"] = policy


def validate_priority_class(op: str, pc: Mapping[str, Any], store: Store, p: Problems) -> None:
    """``ValidatePriorityClass`` and the plugin's single-default rule (CREATE and UPDATE)."""
    name = sub(pc, "metadata").get("name")
    name = name if isinstance(name, str) else ""
    value = pc.get("value", 0)
    if isinstance(value, bool) or not isinstance(value, int):
        p.add("value", f"Invalid value: {quote(value)}: expected an integer")
        return
    if not -INT32_MAX - 1 <= value <= INT32_MAX:
        p.add("value", f"Invalid value: {value}: expected a 32-bit integer")
        return
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        known = SYSTEM_PRIORITY_CLASSES.get(name)
        if known is None:
            p.add("metadata.name", f"Forbidden: priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix "
                                   f"are reserved for system use only. error: {name} is not a known system "
                                   "priority class")
        elif value != known:
            p.add("metadata.name", f"Forbidden: priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix "
                                   f"are reserved for system use only. error: value of {name} PriorityClass must "
                                   f"be {known}")
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        p.add("value", f"Forbidden: maximum allowed value of a user defined priority is "
                       f"{HIGHEST_USER_DEFINABLE_PRIORITY}")
    policy = pc.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        p.add("preemptionPolicy", f"Unsupported value: {quote(policy)}: supported values: "
                                  + ", ".join(quote(x) for x in PREEMPTION_POLICIES))
    gd = pc.get("globalDefault")
    if gd is not None and not isinstance(gd, bool):
        p.add("globalDefault", f"Invalid value: {quote(gd)}: expected true or false")
    if gd is True and not p:
        current = _default_class(store)
        if current is not None and (op == "CREATE" or current["metadata"]["name"] != name):
            raise Forbidden("PriorityClass", name or "?", f"PriorityClass {current['metadata']['name']} is already "
                                                          "marked as default. Only one default can exist")
