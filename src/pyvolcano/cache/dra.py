"""The scheduler cache's dynamic resource allocation state (kube-scheduler's DRA manager).

:class:`DraState` holds the DeviceClasses, ResourceSlices and ResourceClaims the scheduler
watches, and what upstream's ``SharedDRAManager`` derives from them:

* the devices in use: every device of every claim's allocation (a result with
  ``adminAccess`` does not count, as upstream's ``allocateddevices.go``), kept as counts so
  that a claim update moves only its own devices;
* the *assumed* claims (upstream's assume cache): a claim the scheduler allocated in a session
  is held here with its allocation from the moment the session reserves it until the API
  server's copy shows the allocation (or the write failed and the assumption is dropped); the
  claim's devices count as in use meanwhile, so no later session can give them again;
* the claims whose allocation is *in flight* (reserved, not yet written): another pod sharing
  such a claim waits, as upstream's ``ClaimHasPendingAllocation``;
* the slices reaching each node, split into node-local slices (``spec.nodeName``) indexed by
  node and the others (all nodes, a node selector), which every node looks at;
* one :class:`~pyvolcano.api.dra.cel.SelectorCache` and the selector verdicts per device,
  dropped whenever a slice or class changes;
* what makes the filter cheap on large clusters: each node's pools (kept until a slice
  changes or nodes are relabelled), a log of the nodes whose devices were taken or freed
  (``changes``; ``"*"`` for devices of slices shared by several nodes), and a place for the
  filter's verdicts per claim specification (``verdicts``), which it keeps in step with that
  log, so that pods with identical claims share them until a node's devices change.

Nothing here runs for a cluster without DRA objects, and pods without ``resourceClaims`` never
reach it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from pyvolcano.api.dra.allocator import DeviceID, MatchMemo, Pool, gather_pools
from pyvolcano.api.dra.cel import SelectorCache
from pyvolcano.api.dra.types import DeviceClass, ResourceClaim, ResourceSlice

__all__ = ["DraState"]


def _devices(claim: ResourceClaim | None) -> Iterator[DeviceID]:
    if claim is None or claim.allocation is None:
        return
    for r in claim.allocation.results:
        if not r.admin_access:
            yield (r.driver, r.pool, r.device)


@dataclass(slots=True)
class DraState:
    classes: dict[str, DeviceClass] = field(default_factory=dict)
    slices: dict[str, ResourceSlice] = field(default_factory=dict)
    claims: dict[str, ResourceClaim] = field(default_factory=dict)  # by "namespace/name"
    assumed: dict[str, ResourceClaim] = field(default_factory=dict)
    in_flight: set[str] = field(default_factory=set)  # claim uids
    node_slices: dict[str, dict[str, ResourceSlice]] = field(default_factory=dict)
    shared_slices: dict[str, ResourceSlice] = field(default_factory=dict)
    selectors: SelectorCache = field(default_factory=SelectorCache)
    memo: MatchMemo = field(default_factory=dict)
    pods_with_claims: set[str] = field(default_factory=set)  # uids of tracked pods with resourceClaims
    _in_use: dict[DeviceID, int] = field(default_factory=dict)
    generation: int = 0  # bumped by every change of a class, slice or claim
    slice_generation: int = 0  # bumped by every change of a class or slice
    changes: list[str] = field(default_factory=list)  # node names (or "*") whose devices changed
    _pool_nodes: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # node-local pools
    _pools: dict[str, tuple[int, list[Pool]]] = field(default_factory=dict)
    verdicts: dict[object, object] = field(default_factory=dict)

    # ------------------------------------------------------------------ reads
    def claim(self, key: str) -> ResourceClaim | None:
        """The claim as the scheduler sees it: the assumed copy while there is one."""
        got = self.assumed.get(key)
        return got if got is not None else self.claims.get(key)

    def in_use(self, device: DeviceID) -> bool:
        return self._in_use.get(device, 0) > 0

    def slices_for(self, node_name: str) -> list[ResourceSlice]:
        local = self.node_slices.get(node_name)
        if not self.shared_slices:
            return list(local.values()) if local else []
        return [*(local.values() if local else ()), *self.shared_slices.values()]

    def pools_for(self, node_name: str, labels: dict[str, str], node_generation: int) -> list[Pool]:
        """The node's pools (``gather_pools``), kept until a slice changes or nodes are relabelled
        (``node_generation``: the scheduler cache's)."""
        got = self._pools.get(node_name)
        if got is None or got[0] != node_generation:
            got = self._pools[node_name] = (node_generation,
                                            gather_pools(self.slices_for(node_name), node_name, labels))
        return got[1]

    def changed_since(self, position: int) -> list[str] | None:
        """The nodes whose devices changed since ``position`` of the log (None: start over)."""
        if position > len(self.changes):
            return None
        return self.changes[position:]

    @property
    def empty(self) -> bool:
        return not (self.slices or self.claims or self.classes)

    # ------------------------------------------------------------------ informer events
    def upsert_class(self, cls: DeviceClass) -> None:
        self.classes[cls.name] = cls
        self._changed(devices=True)

    def delete_class(self, name: str) -> None:
        if self.classes.pop(name, None) is not None:
            self._changed(devices=True)

    def upsert_slice(self, s: ResourceSlice) -> None:
        self._unindex(self.slices.get(s.name))
        self.slices[s.name] = s
        if s.node_name:
            self.node_slices.setdefault(s.node_name, {})[s.name] = s
            self._pool_nodes.setdefault((s.driver, s.pool), set()).add(s.node_name)
        else:
            self.shared_slices[s.name] = s
        self._changed(devices=True)

    def delete_slice(self, name: str) -> None:
        old = self.slices.pop(name, None)
        if old is not None:
            self._unindex(old)
            self._changed(devices=True)

    def _unindex(self, s: ResourceSlice | None) -> None:
        if s is None:
            return
        if s.node_name:
            on_node = self.node_slices.get(s.node_name)
            if on_node is not None:
                on_node.pop(s.name, None)
                if not on_node:
                    del self.node_slices[s.node_name]
        else:
            self.shared_slices.pop(s.name, None)

    def upsert_claim(self, claim: ResourceClaim) -> None:
        """An informer's copy: it replaces an assumed copy once it holds an allocation itself
        (the write landed) or the claim was re-created."""
        key = claim.key
        before = self.claim(key)
        self.claims[key] = claim
        if claim.allocation is not None:
            self.in_flight.discard(claim.uid)
        assumed = self.assumed.get(key)
        if assumed is not None and (claim.allocation is not None or claim.uid != assumed.uid):
            del self.assumed[key]
        self._move(before, self.claim(key))

    def drop_assumed(self, key: str) -> None:
        """A failed write: the claim is what the API server says again (re-read next)."""
        assumed = self.assumed.get(key)
        if assumed is not None:
            self.restore(key, assumed.uid)

    def delete_claim(self, key: str) -> None:
        before = self.claim(key)
        self.claims.pop(key, None)
        self.assumed.pop(key, None)
        self._move(before, None)

    # ------------------------------------------------------------------ the scheduler's own changes
    def assume(self, claim: ResourceClaim) -> None:
        """Reserve: the session allocated ``claim``; its write is pending (in flight)."""
        before = self.claim(claim.key)
        self.assumed[claim.key] = claim
        self.in_flight.add(claim.uid)
        self._move(before, claim)

    def restore(self, key: str, uid: str) -> None:
        """Unreserve, or a failed write: forget the assumed copy."""
        self.in_flight.discard(uid)
        before = self.claim(key)
        if self.assumed.pop(key, None) is not None:
            self._move(before, self.claim(key))

    def written(self, claim: ResourceClaim) -> None:
        """The allocation reached the API server: no longer in flight; the written copy is
        assumed until the informer delivers it."""
        self.in_flight.discard(claim.uid)
        before = self.claim(claim.key)
        known = self.claims.get(claim.key)
        if known is not None and known.allocation is not None and known.resource_version == claim.resource_version:
            self.assumed.pop(claim.key, None)
        else:
            self.assumed[claim.key] = claim
        self._move(before, self.claim(claim.key))

    # ------------------------------------------------------------------ bookkeeping
    def _move(self, before: ResourceClaim | None, after: ResourceClaim | None) -> None:
        if before is after:
            return
        old, new = list(_devices(before)), list(_devices(after))
        if old == new:
            if before is None or after is None or before.status != after.status:
                self.generation += 1
            return
        in_use = self._in_use
        for d in old:
            n = in_use.get(d, 0) - 1
            if n > 0:
                in_use[d] = n
            else:
                in_use.pop(d, None)
        for d in new:
            in_use[d] = in_use.get(d, 0) + 1
        self.generation += 1
        if len(self.changes) > 100_000:
            self.changes.clear()  # every reader's position is past the end now: it starts over
            self.verdicts.clear()
        for d in {*old, *new}:
            nodes = self._pool_nodes.get((d[0], d[1]))
            self.changes.extend(sorted(nodes) if nodes else ("*",))

    def _changed(self, *, devices: bool) -> None:
        self.generation += 1
        self.slice_generation += 1
        self._pools.clear()
        self.verdicts.clear()
        if devices:
            self.memo.clear()

    def allocated_count(self) -> int:
        """How many devices are in use (for tests and metrics)."""
        return sum(1 for n in self._in_use.values() if n > 0)
