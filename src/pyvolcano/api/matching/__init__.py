"""Kubernetes matching semantics on plain manifest-shaped data.

This package is a pure-Python reimplementation of the pieces of kube-scheduler that Volcano's
``predicates`` and ``nodeorder`` plugins rely on, decoupled from pyvolcano's object model:
every function takes Kubernetes-shaped dicts/lists exactly as they appear in a pod or node
manifest (``affinity`` is the pod's ``spec.affinity``, ``tolerations`` its
``spec.tolerations``, ``taints`` the node's ``spec.taints``) plus plain mappings.

Modules (all names are re-exported here):

* :mod:`.labels` — label selectors and selector requirements
  (``apimachinery/pkg/labels``, ``apimachinery/pkg/apis/meta/v1/helpers.go``).
* :mod:`.nodeaffinity` — nodeSelector, required/preferred node affinity
  (``component-helpers/scheduling/corev1/nodeaffinity``, ``plugins/nodeaffinity``).
* :mod:`.taints` — taints/tolerations, NodeUnschedulable (``plugins/tainttoleration``,
  ``plugins/nodeunschedulable``, ``component-helpers/scheduling/corev1/helpers.go``).
* :mod:`.ports` — host ports (``plugins/nodeports``).
* :mod:`.normalize` — ``helper.DefaultNormalizeScore`` and Go numeric helpers.
* :mod:`.validation` — ``validate_*`` shape checks raising :class:`SelectorError` with the
  field path.

Invariants: no I/O, no global mutable state, no randomness; inputs are never mutated;
compiled forms (:class:`LabelSelector`, :class:`RequiredNodeAffinity`, ...) are immutable and
safe to share. Inter-pod affinity lives in :mod:`pyvolcano.api.interpod` and pod topology
spread in :mod:`pyvolcano.api.topology_spread`.
"""

from __future__ import annotations

from pyvolcano.api.matching.errors import SelectorError
from pyvolcano.api.matching.labels import (
    EVERYTHING,
    NOTHING,
    LabelSelector,
    Requirement,
    compile_label_selector,
    label_selector_matches,
    parse_go_int64,
)
from pyvolcano.api.matching.nodeaffinity import (
    ERR_REASON_NODE_AFFINITY,
    NodeSelectorTerm,
    PreferredNodeAffinity,
    RequiredNodeAffinity,
    compile_node_selector_term,
    node_selector_matches,
    pod_matches_node_selector_and_affinity,
    preferred_node_affinity_score,
    required_node_affinity_matches,
)
from pyvolcano.api.matching.normalize import default_normalize, go_div, go_round
from pyvolcano.api.matching.ports import (
    BIND_ALL_HOST_IP,
    ERR_REASON_NODE_PORTS,
    host_ports_conflict,
    pod_host_ports,
)
from pyvolcano.api.matching.taints import (
    ERR_REASON_UNSCHEDULABLE,
    TAINT_NODE_UNSCHEDULABLE,
    count_intolerable_prefer_no_schedule,
    find_untolerated_taint,
    node_unschedulable_tolerated,
    toleration_tolerates_taint,
    tolerations_tolerate_taint,
    untolerated_taint_reason,
)
from pyvolcano.api.matching.validation import (
    validate_label_selector,
    validate_node_affinity,
    validate_taints,
    validate_tolerations,
    validate_topology_spread_constraints,
)

__all__ = [
    "BIND_ALL_HOST_IP",
    "ERR_REASON_NODE_AFFINITY",
    "ERR_REASON_NODE_PORTS",
    "ERR_REASON_UNSCHEDULABLE",
    "EVERYTHING",
    "NOTHING",
    "TAINT_NODE_UNSCHEDULABLE",
    "LabelSelector",
    "NodeSelectorTerm",
    "PreferredNodeAffinity",
    "RequiredNodeAffinity",
    "Requirement",
    "SelectorError",
    "compile_label_selector",
    "compile_node_selector_term",
    "count_intolerable_prefer_no_schedule",
    "default_normalize",
    "find_untolerated_taint",
    "go_div",
    "go_round",
    "host_ports_conflict",
    "label_selector_matches",
    "node_selector_matches",
    "node_unschedulable_tolerated",
    "parse_go_int64",
    "pod_host_ports",
    "pod_matches_node_selector_and_affinity",
    "preferred_node_affinity_score",
    "required_node_affinity_matches",
    "toleration_tolerates_taint",
    "tolerations_tolerate_taint",
    "untolerated_taint_reason",
    "validate_label_selector",
    "validate_node_affinity",
    "validate_taints",
    "validate_tolerations",
    "validate_topology_spread_constraints",
]
