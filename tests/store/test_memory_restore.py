"""InMemoryStore.restore: loading an object a cluster already admitted."""

from __future__ import annotations

import pytest

from builders import pod
from pyvolcano.admission import VolcanoAdmission
from pyvolcano.store.base import StoreError
from pyvolcano.store.memory import InMemoryStore


def test_restore_skips_admission_that_create_applies_and_keeps_status() -> None:
    store = InMemoryStore(clock=lambda: 5.0, admission=VolcanoAdmission())
    running = pod("p-0", "g", node_name="n1", phase="Running")  # no image: the API server would refuse it
    with pytest.raises(StoreError, match="image: Required value"):
        store.create(running)
    restored = store.restore(running)
    assert restored["status"]["phase"] == "Running" and restored["spec"]["nodeName"] == "n1"
    with pytest.raises(StoreError, match="image: Required value"):
        store.create(pod("p-1", "g"))  # admission is back for what follows
