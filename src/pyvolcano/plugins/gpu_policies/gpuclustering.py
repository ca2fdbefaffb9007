"""The ``gpuclustering`` GPU placement plugin (see :mod:`pyvolcano.plugins.gpu_policies`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.plugins.gpu_policies import GpuClustering

__all__ = ["ARGUMENTS", "new"]

ARGUMENTS = GpuClustering.ARGUMENTS


def new(arguments: Mapping[str, Any]) -> GpuClustering:
    return GpuClustering(arguments)
