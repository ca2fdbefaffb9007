"""The ``dotprod`` GPU placement plugin (see :mod:`pyvolcano.plugins.gpu_policies`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.plugins.gpu_policies import DotProd

__all__ = ["ARGUMENTS", "new"]

ARGUMENTS = DotProd.ARGUMENTS


def new(arguments: Mapping[str, Any]) -> DotProd:
    return DotProd(arguments)
