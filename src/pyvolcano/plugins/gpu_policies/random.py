"""The ``random`` GPU placement plugin (see :mod:`pyvolcano.plugins.gpu_policies`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.plugins.gpu_policies import RandomPolicy

__all__ = ["ARGUMENTS", "new"]

ARGUMENTS = RandomPolicy.ARGUMENTS


def new(arguments: Mapping[str, Any]) -> RandomPolicy:
    return RandomPolicy(arguments)
