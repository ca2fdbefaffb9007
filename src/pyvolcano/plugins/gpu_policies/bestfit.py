"""The ``bestfit`` GPU placement plugin (see :mod:`pyvolcano.plugins.gpu_policies`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.plugins.gpu_policies import BestFit

__all__ = ["ARGUMENTS", "new"]

ARGUMENTS = BestFit.ARGUMENTS


def new(arguments: Mapping[str, Any]) -> BestFit:
    return BestFit(arguments)
