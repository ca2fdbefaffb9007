"""Fixtures for admission tests: a store with Volcano admission and the built-in queues."""

from __future__ import annotations

import pytest

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.store import InMemoryStore


@pytest.fixture
def store() -> InMemoryStore:
    s = InMemoryStore(clock=lambda: 0.0, admission=VolcanoAdmission())
    for name, reclaimable in (("root", False), ("default", True)):
        s.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                  "spec": {"reclaimable": reclaimable, "weight": 1}, "status": {"state": "Open"}})
    return s
