"""The ``gpupacking`` GPU placement plugin (see :mod:`pyvolcano.plugins.gpu_policies`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.plugins.gpu_policies import GpuPacking

__all__ = ["ARGUMENTS", "new"]

ARGUMENTS = GpuPacking.ARGUMENTS


def new(arguments: Mapping[str, Any]) -> GpuPacking:
    return GpuPacking(arguments)
