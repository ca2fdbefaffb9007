"""The CRD's default and bounds of a ``networkTopology`` (``NetworkTopologySpec``).

A Job's ``spec.networkTopology`` and its tasks' ``partitionPolicy.networkTopology``, and a
PodGroup's ``spec.networkTopology`` and its ``subGroupPolicy[].networkTopology``, share one
schema: ``mode`` is ``hard`` or ``soft`` and defaults to ``hard`` (``+kubebuilder:default=hard``,
which the API server writes into a stored object), ``highestTierAllowed`` is an integer ≥ 0.
The Job's webhook rules (mutual exclusion of the tier and the tier name) stay in
:mod:`.jobs` and :mod:`.podgroups`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pyvolcano.admission._common import Problems, quote

__all__ = ["DEFAULT_MODE", "default_mode", "validate_bounds"]

DEFAULT_MODE: Final = "hard"
_MODES: Final = ("hard", "soft")


def default_mode(nt: Any) -> None:
    """Write the default ``mode`` into a ``networkTopology`` mapping that has none."""
    if isinstance(nt, dict) and not nt.get("mode"):
        nt["mode"] = DEFAULT_MODE


def validate_bounds(nt: Any, path: str, p: Problems) -> None:
    """The schema's enum for ``mode`` and minimum for ``highestTierAllowed``."""
    if not isinstance(nt, Mapping):
        return
    mode = nt.get("mode")
    if mode not in (None, "") and mode not in _MODES:
        p.add(f"{path}.mode", f'Unsupported value: {quote(mode)}: supported values: "hard", "soft"')
    tier = nt.get("highestTierAllowed")
    if tier is not None and tier < 0:
        p.add(f"{path}.highestTierAllowed", f"Invalid value: {tier}: must be greater than or equal to 0")
