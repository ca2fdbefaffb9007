"""The optional store capabilities are declared protocols: which store has which, and what a
caller does with a store that lacks one."""

from __future__ import annotations

import functools
from typing import Any

from kube.fakeapi import FakeApiServer
from pyvolcano.kube.store import KubeStore
from pyvolcano.store.base import (
    Compactable,
    ConcurrentCalls,
    NotFound,
    Peekable,
    ServerBacked,
    Synced,
    Waitable,
    call_all,
    calls_concurrently,
    can_peek,
)
from pyvolcano.store.memory import InMemoryStore

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}


class GetOnly:
    """A store with the required methods only (the reads a test needs)."""

    def __init__(self) -> None:
        self.objects = {"n1": NODE}

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        if name not in self.objects:
            raise NotFound(kind, name)
        return dict(self.objects[name])


def test_the_in_memory_store_peeks_and_compacts_but_has_no_informers() -> None:
    store = InMemoryStore()
    assert isinstance(store, Peekable) and isinstance(store, Compactable)
    assert not isinstance(store, Synced) and not isinstance(store, Waitable)
    assert not isinstance(store, ConcurrentCalls) and not isinstance(store, ServerBacked)
    assert can_peek(store) and not calls_concurrently(store)


def test_the_kubernetes_store_has_every_capability() -> None:
    store = KubeStore(FakeApiServer().client(), ("Node",))
    try:
        for capability in (Peekable, Compactable, Waitable, ConcurrentCalls, Synced, ServerBacked):
            assert isinstance(store, capability), capability.__name__
        assert can_peek(store) and calls_concurrently(store)
    finally:
        store.stop()


def test_a_store_without_a_capability_takes_the_plain_path() -> None:
    from pyvolcano.controllers._common import peek

    store = GetOnly()
    assert not can_peek(store) and not calls_concurrently(store)
    assert peek(store, "Node", None, "n1") == NODE
    results = call_all(store, [functools.partial(store.get, "Node", None, n) for n in ("n1", "n2")])
    assert results[0] == NODE and isinstance(results[1], NotFound)
