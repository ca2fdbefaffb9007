"""The ``fgd`` GPU placement plugin (see :mod:`pyvolcano.plugins.gpu_policies`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.plugins.gpu_policies import Fgd

__all__ = ["ARGUMENTS", "new"]

ARGUMENTS = Fgd.ARGUMENTS


def new(arguments: Mapping[str, Any]) -> Fgd:
    return Fgd(arguments)
