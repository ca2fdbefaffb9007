"""Admission of ``topology.volcano.sh/v1alpha1`` HyperNodes (CREATE and UPDATE; no mutation).

Upstream splits these checks between the HyperNode CRD's schema (its ``x-kubernetes-validations``
and bounds, enforced by the API server before any webhook) and the ``validatehypernode.volcano.sh``
webhook (``pkg/webhooks/admission/hypernodes/validate``). Both are applied here, in that order,
with upstream's wording:

* ``spec.tier`` is an integer ≥ 0; ``spec.members`` has at least one member
  (``member must have at least one member``);
* every member's ``type`` is ``Node`` or ``HyperNode`` (``unknown member type X``);
* every member's ``selector`` has exactly one of ``exactMatch``, ``regexMatch`` and
  ``labelMatch`` (the CRD's two messages);
* ``exactMatch.name`` is non-empty (``member exactMatch name is required``) and a qualified name
  (``member exactMatch validate failed [...]``);
* ``regexMatch.pattern`` is non-empty (``member regexMatch pattern is required``) and compiles
  (``member regexMatch pattern is invalid: ...``). Upstream compiles with Go's RE2 and pyvolcano
  with Python's ``re``: the few patterns one accepts and the other refuses (backreferences and
  look-arounds, which RE2 refuses; ``\\z``, which Python refuses) and the wording of a syntax
  error differ;
* ``labelMatch`` is a valid label selector.

Field paths carry the member's index (``spec.members[1].selector``) where upstream's webhook writes
``spec.members.selector`` for every member.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from pyvolcano.admission._common import Problems, ShapeChecker, quote, sub
from pyvolcano.admission.k8s import go_list, qualified_name_errors
from pyvolcano.api import matching
from pyvolcano.api.hypernode import MEMBER_TYPES

__all__ = ["check_shape", "validate_hypernode"]

_SELECTORS: Final = ("exactMatch", "regexMatch", "labelMatch")
_NO_SELECTOR: Final = "Either ExactMatch or RegexMatch or LabelMatch must be specified"
_TWO_SELECTORS: Final = "Only one of ExactMatch, RegexMatch, or LabelMatch can be specified"


def check_shape(hn: Mapping[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    spec = hn.get("spec")
    if spec is not None and not isinstance(spec, dict):
        p.add("spec", f"Invalid value: {quote(spec)}: expected a mapping")
        return
    spec = spec or {}
    s.integer(spec, "tier", "spec.tier")
    s.string(spec, "tierName", "spec.tierName")
    for i, m in enumerate(s.mappings(spec, "members", "spec.members")):
        mp = f"spec.members[{i}]"
        s.string(m, "type", f"{mp}.type")
        sel = s.mapping(m, "selector", f"{mp}.selector")
        if sel is None:
            continue
        exact = s.mapping(sel, "exactMatch", f"{mp}.selector.exactMatch")
        if exact is not None:
            s.string(exact, "name", f"{mp}.selector.exactMatch.name")
        regex = s.mapping(sel, "regexMatch", f"{mp}.selector.regexMatch")
        if regex is not None:
            s.string(regex, "pattern", f"{mp}.selector.regexMatch.pattern")
        s.mapping(sel, "labelMatch", f"{mp}.selector.labelMatch")
    status = s.mapping(hn, "status", "status")
    if status is not None:
        s.integer(status, "nodeCount", "status.nodeCount", int32=False)


def validate_hypernode(hn: Mapping[str, Any], p: Problems) -> None:
    """The CRD's rules, then the webhook's, on a HyperNode that passed :func:`check_shape`."""
    spec = sub(hn, "spec")
    tier = spec.get("tier")
    if tier is not None and tier < 0:
        p.add("spec.tier", f"Invalid value: {tier}: must be greater than or equal to 0")
    node_count = sub(hn, "status").get("nodeCount")
    if node_count is not None and node_count < 0:
        p.add("status.nodeCount", f"Invalid value: {node_count}: must be greater than or equal to 0")
    members = spec.get("members") or []
    if not members:
        p.add("spec.members", "Required value: member must have at least one member")
    for i, member in enumerate(members):
        mp = f"spec.members[{i}]"
        mtype = member.get("type") or ""
        if mtype not in MEMBER_TYPES:
            p.add(f"{mp}.type", f"Invalid value: {quote(mtype)}: unknown member type {mtype}")
        _validate_selector(sub(member, "selector"), f"{mp}.selector", p)


def _validate_selector(sel: Mapping[str, Any], path: str, p: Problems) -> None:
    given = [k for k in _SELECTORS if sel.get(k) is not None]
    if not given:
        p.add(path, f'Invalid value: "object": {_NO_SELECTOR}')
        return
    if len(given) > 1:
        p.add(path, f'Invalid value: "object": {_TWO_SELECTORS}')
        return
    if "exactMatch" in given:
        name = sel["exactMatch"].get("name") or ""
        if not name:
            p.add(f"{path}.exactMatch.name", 'Invalid value: "": member exactMatch name is required')
        elif errs := qualified_name_errors(name):
            p.add(f"{path}.exactMatch.name",
                  f"Invalid value: {quote(name)}: member exactMatch validate failed {go_list(errs)}")
    elif "regexMatch" in given:
        pattern = sel["regexMatch"].get("pattern") or ""
        if not pattern:
            p.add(f"{path}.regexMatch.pattern", 'Invalid value: "": member regexMatch pattern is required')
        else:
            try:
                re.compile(pattern)
            except re.error as e:
                p.add(f"{path}.regexMatch.pattern", f"Invalid value: {quote(pattern)}: member regexMatch pattern is "
                                                    f"invalid: error parsing regexp: {e.msg}: `{pattern}`")
    else:
        try:
            matching.compile_label_selector(sel["labelMatch"], f"{path}.labelMatch")
        except matching.SelectorError as e:
            p.add(f"{path}.labelMatch", f"Invalid value: {quote(sel['labelMatch'])}: {e}")
