"""Shape validation of the manifest fields interpreted by the matching modules.

Follows ``pkg/apis/core/validation/validation.go`` (``validateAffinity``,
``ValidateNodeSelector``, ``ValidatePreferredSchedulingTerms``, ``validatePodAffinityTerm``,
``validateMatchLabelKeysAndMismatchLabelKeys``, ``ValidateTolerations``, ``validateNodeTaints``,
``validateTopologySpreadConstraints``) and
``k8s.io/apimachinery/pkg/apis/meta/v1/validation`` (``ValidateLabelSelector``).

Design: each ``validate_*`` raises the *first* problem found as a :class:`SelectorError`
whose message starts with the full field path (``path`` is the path of the value passed in,
e.g. ``spec.affinity``). Node-selector and label-selector requirements are checked by the
same compile functions the matchers use, so anything accepted here compiles.

Deliberate differences from the API server:

* ``Gt``/``Lt`` node-selector values must be integers (the API server accepts any single
  value, but kube-scheduler can never match a non-integer one).
* The "key appears in both matchLabelKeys and labelSelector" check is not made, because
  manifests dumped from a live cluster already carry the API server's merged requirements.
* Unknown fields are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeGuard

from pyvolcano.api.matching.errors import fail, show
from pyvolcano.api.matching.labels import compile_label_selector, label_value_problem, qualified_name_problem
from pyvolcano.api.matching.nodeaffinity import compile_node_selector_term
from pyvolcano.api.names import is_dns1123_label

__all__ = [
    "validate_label_selector",
    "validate_node_affinity",
    "validate_taints",
    "validate_tolerations",
    "validate_topology_spread_constraints",
]

TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _mapping(value: Any, path: str, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise fail(path, f"got {show(value)}; expected {what}")
    return value


def _list(value: Any, path: str, what: str) -> Sequence[Any]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise fail(path, f"got {show(value)}; expected a list of {what}")
    return value


def _int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _string(value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise fail(path, f"got {show(value)}; expected a string")
    return value


def _weight(value: Any, path: str) -> None:
    if not _int(value) or not 1 <= value <= 100:
        raise fail(path, f"got {show(value)}; expected an integer in the range 1-100")


def _label_key(value: Any, path: str) -> None:
    problem = qualified_name_problem(value)
    if problem is not None:
        raise fail(path, problem)


# ----------------------------------------------------------------------------- label selectors


def validate_label_selector(sel: Any, path: str) -> None:
    """A ``metav1.LabelSelector`` (``None`` is valid: it selects nothing)."""
    compile_label_selector(sel, path)


# ----------------------------------------------------------------------------- affinity


def _validate_node_selector(ns: Any, path: str) -> None:
    sel = _mapping(ns, path, "a node selector mapping with nodeSelectorTerms")
    tp = f"{path}.nodeSelectorTerms"
    terms = _list(sel.get("nodeSelectorTerms"), tp, "node selector terms")
    if not terms:
        raise fail(tp, "must have at least one node selector term")
    for i, t in enumerate(terms):
        compile_node_selector_term(t, f"{tp}[{i}]")


def _validate_node_affinity_part(na: Any, path: str) -> None:
    m = _mapping(na, path, "a nodeAffinity mapping")
    req = m.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None:
        _validate_node_selector(req, f"{path}.requiredDuringSchedulingIgnoredDuringExecution")
    pp = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, p in enumerate(_list(m.get("preferredDuringSchedulingIgnoredDuringExecution"), pp,
                                "preferred scheduling terms")):
        ip = f"{pp}[{i}]"
        pm = _mapping(p, ip, "a {weight, preference} mapping")
        _weight(pm.get("weight"), f"{ip}.weight")
        if pm.get("preference") is None:
            raise fail(f"{ip}.preference", "is required")
        compile_node_selector_term(pm.get("preference"), f"{ip}.preference")


def _validate_pod_affinity_term(term: Any, path: str) -> None:
    t = _mapping(term, path, "a pod affinity term mapping")
    label_selector = t.get("labelSelector")
    validate_label_selector(label_selector, f"{path}.labelSelector")
    validate_label_selector(t.get("namespaceSelector"), f"{path}.namespaceSelector")
    for i, ns in enumerate(_list(t.get("namespaces"), f"{path}.namespaces", "namespace names")):
        if not isinstance(ns, str) or not is_dns1123_label(ns):
            raise fail(f"{path}.namespaces[{i}]", f"got {show(ns)}; expected a namespace name (DNS label)")
    topology_key = t.get("topologyKey")
    if topology_key is None or topology_key == "":
        raise fail(f"{path}.topologyKey", "is required and must not be empty")
    _label_key(topology_key, f"{path}.topologyKey")
    keys: dict[str, set[str]] = {}
    for field in ("matchLabelKeys", "mismatchLabelKeys"):
        fp = f"{path}.{field}"
        values = _list(t.get(field), fp, "label keys")
        if values and label_selector is None:
            raise fail(fp, "must not be specified when labelSelector is not set")
        for i, k in enumerate(values):
            _label_key(k, f"{fp}[{i}]")
        keys[field] = set(values)
    both = keys["matchLabelKeys"] & keys["mismatchLabelKeys"]
    if both:
        raise fail(f"{path}.matchLabelKeys", f"{sorted(both)[0]!r} exists in both matchLabelKeys and "
                                             "mismatchLabelKeys")


def _validate_pod_affinity_part(pa: Any, path: str) -> None:
    m = _mapping(pa, path, "a pod (anti-)affinity mapping")
    rp = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, t in enumerate(_list(m.get("requiredDuringSchedulingIgnoredDuringExecution"), rp,
                                "pod affinity terms")):
        _validate_pod_affinity_term(t, f"{rp}[{i}]")
    pp = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, w in enumerate(_list(m.get("preferredDuringSchedulingIgnoredDuringExecution"), pp,
                                "weighted pod affinity terms")):
        ip = f"{pp}[{i}]"
        wm = _mapping(w, ip, "a {weight, podAffinityTerm} mapping")
        _weight(wm.get("weight"), f"{ip}.weight")
        if wm.get("podAffinityTerm") is None:
            raise fail(f"{ip}.podAffinityTerm", "is required")
        _validate_pod_affinity_term(wm.get("podAffinityTerm"), f"{ip}.podAffinityTerm")


def validate_node_affinity(affinity: Any, path: str) -> None:
    """The whole pod ``spec.affinity``: nodeAffinity, podAffinity and podAntiAffinity."""
    if affinity is None:
        return
    a = _mapping(affinity, path, "an affinity mapping (nodeAffinity / podAffinity / podAntiAffinity)")
    if a.get("nodeAffinity") is not None:
        _validate_node_affinity_part(a["nodeAffinity"], f"{path}.nodeAffinity")
    for kind in ("podAffinity", "podAntiAffinity"):
        if a.get(kind) is not None:
            _validate_pod_affinity_part(a[kind], f"{path}.{kind}")


# ----------------------------------------------------------------------------- taints / tolerations


def validate_tolerations(tols: Any, path: str) -> None:
    """Pod ``spec.tolerations``."""
    for i, tol in enumerate(_list(tols, path, "tolerations")):
        ip = f"{path}[{i}]"
        t = _mapping(tol, ip, "a toleration mapping")
        key = _string(t.get("key"), f"{ip}.key")
        if key:
            _label_key(key, f"{ip}.key")
        op = _string(t.get("operator"), f"{ip}.operator")
        if op not in ("", "Equal", "Exists"):
            raise fail(f"{ip}.operator", f"got {op!r}; expected one of Equal, Exists")
        if not key and op != "Exists":
            raise fail(f"{ip}.operator", "must be Exists when key is empty (which matches all keys)")
        value = _string(t.get("value"), f"{ip}.value")
        if op == "Exists" and value:
            raise fail(f"{ip}.value", "must be empty when operator is Exists")
        if op != "Exists":
            problem = label_value_problem(value)
            if problem is not None:
                raise fail(f"{ip}.value", problem)
        effect = _string(t.get("effect"), f"{ip}.effect")
        if effect and effect not in TAINT_EFFECTS:
            raise fail(f"{ip}.effect", f"got {effect!r}; expected one of {', '.join(TAINT_EFFECTS)} or empty")
        seconds = t.get("tolerationSeconds")
        if seconds is not None:
            if not _int(seconds):
                raise fail(f"{ip}.tolerationSeconds", f"got {show(seconds)}; expected an integer")
            if effect != "NoExecute":
                raise fail(f"{ip}.effect", "must be NoExecute when tolerationSeconds is set")


def validate_taints(taints: Any, path: str) -> None:
    """Node ``spec.taints``."""
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(_list(taints, path, "taints")):
        ip = f"{path}[{i}]"
        t = _mapping(taint, ip, "a taint mapping")
        key = t.get("key")
        if key is None or key == "":
            raise fail(f"{ip}.key", "is required")
        _label_key(key, f"{ip}.key")
        problem = label_value_problem(_string(t.get("value"), f"{ip}.value"))
        if problem is not None:
            raise fail(f"{ip}.value", problem)
        effect = t.get("effect")
        if effect is None or effect == "":
            raise fail(f"{ip}.effect", "is required")
        if effect not in TAINT_EFFECTS:
            raise fail(f"{ip}.effect", f"got {show(effect)}; expected one of {', '.join(TAINT_EFFECTS)}")
        if (key, effect) in seen:
            raise fail(ip, f"duplicate taint {key}:{effect} (key and effect must be unique)")
        seen.add((key, effect))


# ----------------------------------------------------------------------------- topology spread


def validate_topology_spread_constraints(c: Any, path: str) -> None:
    """Pod ``spec.topologySpreadConstraints``."""
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(_list(c, path, "topology spread constraints")):
        ip = f"{path}[{i}]"
        t = _mapping(item, ip, "a topology spread constraint mapping")
        max_skew = t.get("maxSkew")
        if not _int(max_skew) or max_skew <= 0:
            raise fail(f"{ip}.maxSkew", f"got {show(max_skew)}; expected an integer greater than zero")
        key = t.get("topologyKey")
        if key is None or key == "":
            raise fail(f"{ip}.topologyKey", "is required and must not be empty")
        _label_key(key, f"{ip}.topologyKey")
        when = t.get("whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise fail(f"{ip}.whenUnsatisfiable",
                       f"got {show(when)}; expected one of DoNotSchedule, ScheduleAnyway")
        min_domains = t.get("minDomains")
        if min_domains is not None:
            if not _int(min_domains) or min_domains <= 0:
                raise fail(f"{ip}.minDomains",
                           f"got {show(min_domains)}; expected an integer greater than zero")
            if when != "DoNotSchedule":
                raise fail(f"{ip}.minDomains", "can only be set when whenUnsatisfiable is DoNotSchedule")
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            v = t.get(policy)
            if v is not None and v not in ("Honor", "Ignore"):
                raise fail(f"{ip}.{policy}", f"got {show(v)}; expected one of Honor, Ignore")
        label_selector = t.get("labelSelector")
        validate_label_selector(label_selector, f"{ip}.labelSelector")
        mlk = _list(t.get("matchLabelKeys"), f"{ip}.matchLabelKeys", "label keys")
        if mlk and label_selector is None:
            raise fail(f"{ip}.matchLabelKeys", "must not be specified when labelSelector is not set")
        for j, k in enumerate(mlk):
            _label_key(k, f"{ip}.matchLabelKeys[{j}]")
        pair = (key, when)
        if pair in seen:
            raise fail(ip, f"duplicate constraint for topologyKey {key!r} and whenUnsatisfiable {when}")
        seen.add(pair)
