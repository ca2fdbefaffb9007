"""The simulated kubelet keeps the status it wants to report until the store takes it."""

from __future__ import annotations

from typing import Any

from pyvolcano.runtime.event_loop import EventLoop
from pyvolcano.runtime.kubelet import Kubelets
from pyvolcano.store.base import StoreError
from pyvolcano.store.memory import InMemoryStore


class OutageStore(InMemoryStore):
    """Refuses every write while ``down``, as an API server without etcd does."""

    down = False

    def patch(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if self.down:
            raise StoreError("Pod", "?", "503 ServiceUnavailable")
        return super().patch(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        if self.down:
            raise StoreError("Pod", "?", "503 ServiceUnavailable")
        return super().delete(*args, **kwargs)


def _setup(duration: str = "10s") -> tuple[OutageStore, EventLoop, Kubelets]:
    store, loop = OutageStore(), EventLoop()
    kubelets = Kubelets(store, loop)
    store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns",
                                                                  "annotations": {"pyvolcano.io/duration": duration}},
                  "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}, "status": {"phase": "Pending"}})
    return store, loop, kubelets


def _run(store: OutageStore, loop: EventLoop, kubelets: Kubelets, until: float, seen: list[int]) -> None:
    while True:
        for ev in store.watch(seen[0]):
            seen[0] = ev.revision
            kubelets.on_event(ev)
        loop.fire_due()
        nxt = loop.next_time()
        if nxt is None or nxt > until:
            loop.advance_to(until)
            return
        loop.advance_to(nxt)


def _phase(store: InMemoryStore) -> str:
    return str(store.get("Pod", "ns", "p")["status"]["phase"])


def test_a_refused_final_status_is_sent_again_with_back_off_until_accepted() -> None:
    store, loop, kubelets = _setup()
    seen = [0]
    _run(store, loop, kubelets, 5.0, seen)
    assert _phase(store) == "Running"
    store.down = True
    _run(store, loop, kubelets, 20.0, seen)
    assert _phase(store) == "Running"
    # refused at 10 s, then tried at 10.5, 11.5, 13.5 and 17.5 s (0.5 s doubling)
    assert kubelets.write_retries == 5
    assert kubelets.unwritten() == 1
    store.down = False
    _run(store, loop, kubelets, 60.0, seen)
    assert _phase(store) == "Succeeded"
    assert kubelets.unwritten() == 0


def test_the_back_off_stops_doubling_at_thirty_seconds() -> None:
    store, loop, kubelets = _setup("1s")
    seen = [0]
    _run(store, loop, kubelets, 0.5, seen)
    store.down = True
    _run(store, loop, kubelets, 600.0, seen)
    # 1 + 0.5 + 1 + 2 + ... + 16 = 32.5 s of doubling, then one try every 30 s
    assert kubelets.write_retries == 6 + int((600.0 - 32.5) // 30.0) + 1
    store.down = False
    _run(store, loop, kubelets, 700.0, seen)
    assert _phase(store) == "Succeeded"


def test_a_pod_deleted_meanwhile_is_not_written_again() -> None:
    store, loop, kubelets = _setup("1s")
    seen = [0]
    _run(store, loop, kubelets, 0.5, seen)
    store.down = True
    _run(store, loop, kubelets, 3.0, seen)
    retries = kubelets.write_retries
    store.down = False
    store.delete("Pod", "ns", "p", grace_period_seconds=0)
    _run(store, loop, kubelets, 100.0, seen)
    assert kubelets.unwritten() == 0
    assert kubelets.write_retries == retries


def test_a_pod_whose_running_status_is_still_refused_exits_on_time_and_the_final_status_wins() -> None:
    store, loop, kubelets = _setup("2s")
    store.down = True  # the API server goes away before the kubelet reports Running
    seen = [0]
    _run(store, loop, kubelets, 20.0, seen)
    assert _phase(store) == "Pending"
    assert kubelets.finished_pods == 1  # the run ended at 2 s all the same
    store.down = False
    _run(store, loop, kubelets, 60.0, seen)
    pod = store.get("Pod", "ns", "p")
    assert pod["status"]["phase"] == "Succeeded"
    assert pod["status"]["startTime"]  # the Running status it never got to write is folded in
    assert kubelets.unwritten() == 0
