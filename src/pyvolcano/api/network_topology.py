"""A PodGroup's network-topology constraint and sub-group policies, as typed values.

Upstream's ``NetworkTopologySpec`` and ``SubGroupPolicySpec``
(``scheduling.volcano.sh/v1beta1``): ``spec.networkTopology`` asks that a job's pods sit inside
one HyperNode of at most a given tier (``hard``) or prefers it (``soft``); each
``spec.subGroupPolicy[]`` entry splits the pods by the values of its ``matchLabelKeys`` into
sub-groups of ``subGroupSize`` pods, of which at least ``minSubGroups`` must be placed, each with
its own optional constraint.

Values carry exactly what the manifest says, with the CRD's defaults (``mode: hard``,
``subGroupSize: 1``, ``minSubGroups: 0``); the scheduler's translation of ``soft`` and of a tier
name happens where the HyperNode tree is known, not here. They are immutable, so a PodGroup
object can share them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["NETWORK_TOPOLOGY_MODES", "NetworkTopology", "SubGroupPolicy"]

NETWORK_TOPOLOGY_MODES: Final = ("hard", "soft")
"""The CRD's enum for ``networkTopology.mode``; ``hard`` is its default."""


@dataclass(frozen=True, slots=True)
class NetworkTopology:
    """``networkTopology``: ``highest_tier_allowed`` and ``highest_tier_name`` exclude each other."""

    mode: str = "hard"
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""


@dataclass(frozen=True, slots=True)
class SubGroupPolicy:
    """One ``subGroupPolicy[]`` entry. ``label_selector`` is a ``metav1.LabelSelector`` as written."""

    name: str
    sub_group_size: int = 1
    min_sub_groups: int = 0
    match_label_keys: tuple[str, ...] = ()
    label_selector: dict[str, Any] | None = field(default=None, compare=False)
    network_topology: NetworkTopology | None = None
