"""Admission of ``nodeinfo.volcano.sh/v1alpha1`` Numatopologies (CREATE and UPDATE; no webhook).

Upstream has no webhook for this kind: the API server applies the CRD's schema (string maps,
CPU ids and ``numa``/``socket``/``core`` integers >= 0). pyvolcano also refuses what the
scheduler could not read (:func:`pyvolcano.api.numatopology.read_spec`: unknown policy names
or values, CPU lists that do not parse, allocatable CPUs missing from ``cpuDetail``), since such
an object would be skipped by the scheduler's cache with only a log line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.admission._common import Problems
from pyvolcano.api.numatopology import read_spec

__all__ = ["validate_numatopology"]


def validate_numatopology(obj: Mapping[str, Any], p: Problems) -> None:
    _spec, problems = read_spec(obj.get("spec"))
    for path, message in problems:
        p.add(path, message)
