"""Kubernetes validation the API server applies before any webhook sees an object: names
(``k8s.io/apimachinery/pkg/util/validation``), object metadata (``ValidateObjectMeta``), resource
quantities and the basics of a pod template (``k8s.io/kubernetes/pkg/apis/core/validation``).

Every helper appends ``(field, message)`` pairs to a :class:`~pyvolcano.admission._common.Problems`
and never raises on malformed input. Message texts are apimachinery's.

The pod checks are the basics, not the whole of ``ValidatePodTemplate``: containers (names,
images, ports, env names, volume mounts, resources), volumes, restart and DNS policy, node
selector, affinity, tolerations, topology spread, grace and deadline seconds. Not checked:
probes, security contexts, the extended-resource limit rules, per-volume-source fields.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Final

from pyvolcano.admission._common import Problems, ShapeChecker, quote, sub
from pyvolcano.api import matching
from pyvolcano.api.defaults import aggregate_container_resources
from pyvolcano.api.names import (
    DNS1035_LABEL_FMT,
    DNS1123_LABEL_FMT,
    DNS1123_LABEL_MAX_LENGTH,
    DNS1123_SUBDOMAIN_FMT,
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    LABEL_VALUE_FMT,
    QUALIFIED_NAME_FMT,
    QUALIFIED_NAME_MAX_LENGTH,
    dns1035_label_matches,
    dns1123_label_matches,
    dns1123_subdomain_matches,
    label_value_matches,
    qualified_name_part_matches,
)
from pyvolcano.api.quantity import QuantityError, parse_quantity

__all__ = [
    "dns1035_label_errors",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "go_list",
    "label_value_errors",
    "parse_quantity_or_none",
    "qualified_name_errors",
    "validate_labels",
    "validate_object_meta",
    "validate_pod_spec",
    "validate_pod_template",
    "validate_resource_list",
]

_DNS1123_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    f"'{DNS1123_LABEL_FMT}')"
)
_DNS1123_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{DNS1123_SUBDOMAIN_FMT}')"
)
_DNS1035_LABEL_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    f"validation is '{DNS1035_LABEL_FMT}')"
)
_QUALIFIED_NAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    f"'{QUALIFIED_NAME_FMT}')"
)
_LABEL_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    f"for validation is '{LABEL_VALUE_FMT}')"
)
_QUANTITY_MSG: Final = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def go_list(items: list[str]) -> str:
    """Go's ``%v`` of a ``[]string``: ``[a b c]``."""
    return "[" + " ".join(items) + "]"


# ----------------------------------------------------------------------------- names


def dns1123_label_errors(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append("must be no more than 63 characters")
    if not dns1123_label_matches(value):
        errs.append(_DNS1123_LABEL_MSG)
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append("must be no more than 253 characters")
    if not dns1123_subdomain_matches(value):
        errs.append(_DNS1123_SUBDOMAIN_MSG)
    return errs


def dns1035_label_errors(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append("must be no more than 63 characters")
    if not dns1035_label_matches(value):
        errs.append(_DNS1035_LABEL_MSG)
    return errs


def qualified_name_errors(value: str) -> list[str]:
    """``IsQualifiedName``: ``[prefix/]name`` with a DNS-subdomain prefix and a ≤63-char name."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        errs: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs = ["prefix part must be non-empty"]
        else:
            errs = [f"prefix part {e}" for e in dns1123_subdomain_errors(prefix)]
    else:
        return ["a qualified name " + _QUALIFIED_NAME_MSG + " with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part must be no more than 63 characters")
    if name and not qualified_name_part_matches(name):
        errs.append("name part " + _QUALIFIED_NAME_MSG)
    return errs


def label_value_errors(value: str) -> list[str]:
    errs = []
    if len(value) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("must be no more than 63 characters")
    if not label_value_matches(value):
        errs.append(_LABEL_VALUE_MSG)
    return errs


_NAME_RULES: Final[dict[str, Callable[[str], list[str]]]] = {
    "Service": dns1035_label_errors,
    "Namespace": dns1123_label_errors,
}


def validate_labels(labels: Any, path: str, p: Problems) -> None:
    if labels is None:
        return
    if not isinstance(labels, Mapping):
        p.add(path, f"Invalid value: {quote(labels)}: expected a mapping of strings")
        return
    for k, v in labels.items():
        if not isinstance(k, str) or not isinstance(v, str):
            p.add(f"{path}[{k}]", f"Invalid value: {quote(v)}: expected a string")
            continue
        for e in qualified_name_errors(k):
            p.add(path, f"Invalid value: {quote(k)}: {e}")
        for e in label_value_errors(v):
            p.add(f"{path}[{k}]", f"Invalid value: {quote(v)}: {e}")


def _validate_annotations(annotations: Any, path: str, p: Problems) -> None:
    if annotations is None:
        return
    if not isinstance(annotations, Mapping):
        p.add(path, f"Invalid value: {quote(annotations)}: expected a mapping of strings")
        return
    for k, v in annotations.items():
        if not isinstance(k, str) or not isinstance(v, str):
            p.add(f"{path}[{k}]", f"Invalid value: {quote(v)}: expected a string")
            continue
        for e in qualified_name_errors(k.lower()):
            p.add(path, f"Invalid value: {quote(k)}: {e}")


def validate_object_meta(obj: Mapping[str, Any], p: Problems) -> None:
    """``ValidateObjectMeta``: the name (rule per kind), namespace, labels, annotations."""
    md = obj.get("metadata")
    if not isinstance(md, Mapping):
        p.add("metadata", "Required value")
        return
    kind = obj.get("kind")
    name = md.get("name")
    if not isinstance(name, str) or not name:
        p.add("metadata.name", "Required value: name or generateName is required")
    else:
        rule = _NAME_RULES.get(kind if isinstance(kind, str) else "", dns1123_subdomain_errors)
        for e in rule(name):
            p.add("metadata.name", f"Invalid value: {quote(name)}: {e}")
    ns = md.get("namespace")
    if isinstance(ns, str) and ns:
        for e in dns1123_label_errors(ns):
            p.add("metadata.namespace", f"Invalid value: {quote(ns)}: {e}")
    validate_labels(md.get("labels"), "metadata.labels", p)
    _validate_annotations(md.get("annotations"), "metadata.annotations", p)


# ----------------------------------------------------------------------------- quantities


def parse_quantity_or_none(value: Any) -> Fraction | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


_STANDARD_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})


def validate_resource_list(rl: Any, path: str, p: Problems, *, container: bool = False) -> dict[str, Fraction]:
    """Each value a non-negative quantity (``ValidateResourceQuantityValue``); for containers the
    name must be standard (cpu, memory, ephemeral-storage, hugepages-*) or fully qualified."""
    out: dict[str, Fraction] = {}
    if rl is None:
        return out
    if not isinstance(rl, Mapping):
        p.add(path, f"Invalid value: {quote(rl)}: expected a mapping of resource name to quantity")
        return out
    for name, raw in rl.items():
        fp = f"{path}.{name}"
        if container and isinstance(name, str) and "/" not in name and name not in _STANDARD_CONTAINER_RESOURCES \
                and not name.startswith("hugepages-"):
            p.add(fp, f"Invalid value: {quote(name)}: must be a standard resource type or fully qualified")
            continue
        if isinstance(name, str) and "/" in name:
            errs = qualified_name_errors(name)
            if errs:
                p.add(fp, f"Invalid value: {quote(name)}: {errs[0]}")
                continue
        shown = quote(str(raw)) if isinstance(raw, str | int | float) and not isinstance(raw, bool) else quote(raw)
        q = parse_quantity_or_none(raw)
        if q is None:
            p.add(fp, f"Invalid value: {shown}: {_QUANTITY_MSG}")
            continue
        if q < 0:
            p.add(fp, f"Invalid value: {shown}: must be greater than or equal to 0")
            continue
        out[str(name)] = q
    return out


# ----------------------------------------------------------------------------- pod template

_RESTART_POLICIES: Final = ("Always", "Never", "OnFailure")
_DNS_POLICIES: Final = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")


def _unsupported(value: Any, allowed: tuple[str, ...]) -> str:
    return f"Unsupported value: {quote(value)}: supported values: " + ", ".join(quote(a) for a in allowed)


def validate_pod_template(template: Any, path: str, p: Problems) -> None:
    """``ValidatePodTemplateSpec`` basics for ``template`` found at ``path``."""
    if template is None:
        template = {}
    if not isinstance(template, Mapping):
        p.add(path, f"Invalid value: {quote(template)}: expected a pod template mapping")
        return
    md = template.get("metadata")
    if md is not None:
        if not isinstance(md, Mapping):
            p.add(f"{path}.metadata", f"Invalid value: {quote(md)}: expected a mapping")
        else:
            validate_labels(md.get("labels"), f"{path}.metadata.labels", p)
            _validate_annotations(md.get("annotations"), f"{path}.metadata.annotations", p)
    spec = template.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        p.add(f"{path}.spec", f"Invalid value: {quote(spec)}: expected a pod spec mapping")
        return
    _validate_pod_spec(spec, f"{path}.spec", p)


def validate_pod_spec(spec: Any, path: str, p: Problems) -> None:
    """``ValidatePodSpec`` basics for a Pod's own ``spec`` (``ValidatePodCreate``)."""
    if not isinstance(spec, Mapping):
        p.add(path, "Required value" if spec is None else f"Invalid value: {quote(spec)}: expected a pod spec mapping")
        return
    _validate_pod_spec(spec, path, p)


def _validate_pod_spec(spec: Mapping[str, Any], path: str, p: Problems) -> None:
    s = ShapeChecker(p)
    s.integer(spec, "priority", f"{path}.priority")  # an int32: larger values do not decode
    if spec.get("overhead") is not None:
        validate_resource_list(spec.get("overhead"), f"{path}.overhead", p)
    pp = spec.get("preemptionPolicy")
    if pp is not None and pp not in ("Never", "PreemptLowerPriority"):
        p.add(f"{path}.preemptionPolicy", _unsupported(pp, ("Never", "PreemptLowerPriority")))
    volume_names: set[str] = set()
    for i, vol in enumerate(s.mappings(spec, "volumes", f"{path}.volumes")):
        vp = f"{path}.volumes[{i}].name"
        name = vol.get("name")
        if not isinstance(name, str) or not name:
            p.add(vp, "Required value")
            continue
        for e in dns1123_label_errors(name):
            p.add(vp, f"Invalid value: {quote(name)}: {e}")
        if name in volume_names:
            p.add(vp, f"Duplicate value: {quote(name)}")
        volume_names.add(name)

    raw_containers = spec.get("containers")
    containers = s.mappings(spec, "containers", f"{path}.containers")
    if raw_containers is None or (isinstance(raw_containers, list) and not raw_containers):
        p.add(f"{path}.containers", "Required value")
    claim_names = _validate_pod_resource_claims(s, spec, f"{path}.resourceClaims", p)
    seen: set[str] = set()
    init_items = s.mappings(spec, "initContainers", f"{path}.initContainers")
    for group, items in (("initContainers", init_items), ("containers", containers)):
        for i, c in enumerate(items):
            _validate_container(c, f"{path}.{group}[{i}]", volume_names, seen, p, claim_names)
    _validate_pod_resources(s, spec, containers, init_items, f"{path}.resources", p)

    rp = spec.get("restartPolicy")
    if rp not in (None, "") and rp not in _RESTART_POLICIES:
        p.add(f"{path}.restartPolicy", _unsupported(rp, _RESTART_POLICIES))
    dp = spec.get("dnsPolicy")
    if dp not in (None, "") and dp not in _DNS_POLICIES:
        p.add(f"{path}.dnsPolicy", _unsupported(dp, _DNS_POLICIES))
    for key in ("terminationGracePeriodSeconds", "activeDeadlineSeconds"):
        v = s.integer(spec, key, f"{path}.{key}", int32=False)
        if v is None:
            continue
        if key == "terminationGracePeriodSeconds" and v < 0:
            p.add(f"{path}.{key}", f"Invalid value: {v}: must be greater than or equal to 0")
        if key == "activeDeadlineSeconds" and v <= 0:
            p.add(f"{path}.{key}", f"Invalid value: {v}: must be between 1 and 2147483647, inclusive")
    for key in ("schedulerName", "priorityClassName", "serviceAccountName"):
        v2 = s.string(spec, key, f"{path}.{key}")
        if v2:
            for e in dns1123_subdomain_errors(v2):
                p.add(f"{path}.{key}", f"Invalid value: {quote(v2)}: {e}")
    s.boolean(spec, "hostNetwork", f"{path}.hostNetwork")
    ns = s.mapping(spec, "nodeSelector", f"{path}.nodeSelector")
    if ns is not None:
        validate_labels(ns, f"{path}.nodeSelector", p)
    for key, fn in (("affinity", matching.validate_node_affinity),
                    ("tolerations", matching.validate_tolerations),
                    ("topologySpreadConstraints", matching.validate_topology_spread_constraints)):
        if spec.get(key) is None:
            continue
        try:
            fn(spec[key], f"{path}.{key}")
        except matching.SelectorError as e:
            text = str(e)
            where, _, msg = text.partition(": ")
            p.add(where if msg else f"{path}.{key}", msg or text)


def _validate_pod_resource_claims(s: ShapeChecker, spec: Mapping[str, Any], path: str, p: Problems) -> set[str]:
    """``validatePodResourceClaims``: unique DNS-label names, one source each; the names."""
    names: set[str] = set()
    for i, claim in enumerate(s.mappings(spec, "resourceClaims", path)):
        cp = f"{path}[{i}]"
        name = s.string(claim, "name", f"{cp}.name")
        if name is not None or claim.get("name") is None:
            for e in dns1123_label_errors(name or ""):
                p.add(f"{cp}.name", f"Invalid value: {quote(name or '')}: {e}")
            if name and name in names:
                p.add(f"{cp}.name", f"Duplicate value: {quote(name)}")
            if name:
                names.add(name)
        direct = s.string(claim, "resourceClaimName", f"{cp}.resourceClaimName")
        template = s.string(claim, "resourceClaimTemplateName", f"{cp}.resourceClaimTemplateName")
        # Upstream prints the Go struct as the value.
        shown = json.dumps({"Name": name, "ResourceClaimName": direct, "ResourceClaimTemplateName": template},
                           separators=(",", ":"))
        if direct and template:
            p.add(cp, f"Invalid value: {shown}: at most one of `resourceClaimName` or `resourceClaimTemplateName` may "
                      "be specified")
        elif not direct and not template:
            p.add(cp, f"Invalid value: {shown}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")
        for key, value in (("resourceClaimName", direct), ("resourceClaimTemplateName", template)):
            for e in dns1123_subdomain_errors(value) if value else ():
                p.add(f"{cp}.{key}", f"Invalid value: {quote(value)}: {e}")
    return names


def _pod_level_supported(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _validate_pod_resources(s: ShapeChecker, spec: Mapping[str, Any], containers: list[dict[str, Any]],
                            init: list[dict[str, Any]], path: str, p: Problems) -> None:
    """``validatePodResources`` (``PodLevelResources``): cpu, memory and hugepages only, no
    claims, requests within limits, and within them the containers' requests and limits."""
    res = s.mapping(spec, "resources", path)
    if res is None:
        return
    if res.get("claims") is not None:
        p.add(f"{path}.claims", "Forbidden: claims may not be set for Resources at pod-level")
    lists: dict[str, dict[str, Fraction]] = {}
    for which in ("limits", "requests"):
        rl = s.mapping(res, which, f"{path}.{which}")
        for name in rl or {}:
            if not _pod_level_supported(str(name)):
                p.add(f"{path}.{which}[{name}]", f'Unsupported value: {quote(name)}: supported values: "cpu", '
                                                 '"hugepages-", "memory"')
        lists[which] = validate_resource_list({k: v for k, v in (rl or {}).items()
                                               if _pod_level_supported(str(k))}, f"{path}.{which}", p)
    limits, requests = lists["limits"], lists["requests"]
    for name, req in requests.items():
        if name in limits and req > limits[name]:
            p.add(f"{path}.requests", f"Invalid value: {quote(str(sub(res, 'requests')[name]))}: must be "
                                      f"less than or equal to {name} limit of {sub(res, 'limits')[name]}")
    container_requests = aggregate_container_resources(
        (sub(sub(c, "resources"), "requests") for c in containers),
        ((sub(sub(c, "resources"), "requests"), c.get("restartPolicy") == "Always") for c in init))
    for name, amount in requests.items():
        total = container_requests.get(name)
        if total is not None and total > amount:
            p.add(f"{path}.requests[{name}]", f"Invalid value: {quote(str(sub(res, 'requests')[name]))}: must be "
                                              f"greater than or equal to aggregate container requests of {total}")
    for name, amount in limits.items():
        for group, items in (("initContainers", init), ("containers", containers)):
            for i, c in enumerate(items):
                raw = sub(sub(c, "resources"), "limits").get(name)
                lim = parse_quantity_or_none(raw) if raw is not None else None
                if lim is not None and lim > amount:
                    # Upstream's path: under spec.resources, keyed by the resource, then "limits".
                    p.add(f"{path}.{group}[{i}][{name}].limits",
                          f"Invalid value: {quote(str(raw))}: must be less than or equal to pod limits of "
                          f"{sub(res, 'limits')[name]}")


def _validate_container(c: Mapping[str, Any], cp: str, volume_names: set[str], seen: set[str],
                        p: Problems, claim_names: set[str] | None = None) -> None:
    s = ShapeChecker(p)
    name = c.get("name")
    if not isinstance(name, str) or not name:
        p.add(f"{cp}.name", "Required value")
    else:
        for e in dns1123_label_errors(name):
            p.add(f"{cp}.name", f"Invalid value: {quote(name)}: {e}")
        if name in seen:
            p.add(f"{cp}.name", f"Duplicate value: {quote(name)}")
        seen.add(name)
    image = c.get("image")
    if not isinstance(image, str) or not image:
        p.add(f"{cp}.image", "Required value")
    for j, port in enumerate(s.mappings(c, "ports", f"{cp}.ports")):
        pp = f"{cp}.ports[{j}]"
        cport = port.get("containerPort")
        if cport is None:
            p.add(f"{pp}.containerPort", "Required value")
        elif isinstance(cport, bool) or not isinstance(cport, int) or not 1 <= cport <= 65535:
            p.add(f"{pp}.containerPort", f"Invalid value: {quote(cport)}: must be between 1 and 65535, inclusive")
        hport = port.get("hostPort")
        if hport is not None and (isinstance(hport, bool) or not isinstance(hport, int) or not 0 <= hport <= 65535):
            p.add(f"{pp}.hostPort", f"Invalid value: {quote(hport)}: must be between 1 and 65535, inclusive")
        proto = port.get("protocol")
        if proto not in (None, "") and proto not in _PROTOCOLS:
            p.add(f"{pp}.protocol", _unsupported(proto, _PROTOCOLS))
    for j, env in enumerate(s.mappings(c, "env", f"{cp}.env")):
        ename = env.get("name")
        if not isinstance(ename, str) or not ename:
            p.add(f"{cp}.env[{j}].name", "Required value")
        elif "=" in ename or any(not 32 <= ord(ch) <= 126 for ch in ename):
            p.add(f"{cp}.env[{j}].name", f"Invalid value: {quote(ename)}: a valid environment variable name must "
                                         "consist only of printable ASCII characters other than '='")
    mount_paths: set[str] = set()
    for j, vm in enumerate(s.mappings(c, "volumeMounts", f"{cp}.volumeMounts")):
        vp = f"{cp}.volumeMounts[{j}]"
        vname = vm.get("name")
        if not isinstance(vname, str) or not vname:
            p.add(f"{vp}.name", "Required value")
        elif vname not in volume_names:
            p.add(f"{vp}.name", f"Not found: {quote(vname)}")
        mpath = vm.get("mountPath")
        if not isinstance(mpath, str) or not mpath:
            p.add(f"{vp}.mountPath", "Required value")
        elif mpath in mount_paths:
            p.add(f"{vp}.mountPath", f"Invalid value: {quote(mpath)}: must be unique")
        else:
            mount_paths.add(mpath)
    res = s.mapping(c, "resources", f"{cp}.resources")
    if res is not None:
        limits = validate_resource_list(res.get("limits"), f"{cp}.resources.limits", p, container=True)
        requests = validate_resource_list(res.get("requests"), f"{cp}.resources.requests", p, container=True)
        raw_limits = sub(res, "limits")
        for rname, req in requests.items():
            lim = limits.get(rname)
            if lim is not None and req > lim:
                shown = quote(str(sub(res, "requests")[rname]))
                p.add(f"{cp}.resources.requests.{rname}",
                      f"Invalid value: {shown}: must be less than or equal to {rname} limit of {raw_limits[rname]}")
        used: set[str] = set()
        for j, claim in enumerate(s.mappings(res, "claims", f"{cp}.resources.claims")):
            jp = f"{cp}.resources.claims[{j}]"
            cname = claim.get("name")
            if not isinstance(cname, str) or not cname:
                p.add(f"{jp}.name", "Required value")
                continue
            if cname in used:
                p.add(f"{jp}.name", f"Duplicate value: {quote(cname)}")
            used.add(cname)
            known = claim_names or set()
            if cname not in known:
                which = ": " + ", ".join(sorted(known)) if known else " which is empty"
                p.add(jp, f"Not found: {quote(cname)}: must be one of the names in pod.spec.resourceClaims{which}")
