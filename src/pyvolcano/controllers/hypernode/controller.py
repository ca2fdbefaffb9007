"""The HyperNode controller (``pkg/controllers/hypernode``, ``hyperNode-controller``).

It does two things:

* **Status.** Every HyperNode's ``status.nodeCount`` is the number of Nodes under it
  (:mod:`.members`: members resolved through their selectors, a HyperNode member counting its
  own Nodes). It is written through the status subresource only when it differs, and
  recomputed for a HyperNode when it changes and for all of them when a HyperNode is added,
  deleted or has its spec changed, or a Node is added, deleted or relabelled.
* **Auto-discovery.** The discovery ConfigMap (:mod:`.discovery`) says which sources run. With
  the ``label`` source enabled, a discovery runs when the configuration is (re)loaded, when a
  Node carrying one of its tier labels is added or deleted, when a Node's tier labels change,
  and when a HyperNode is deleted; its result is reconciled against the HyperNodes labelled
  ``volcano.sh/network-topology-source: label``: missing ones are created, the others get the
  discovered spec and labels (written only when they differ), and those no longer discovered
  are deleted. HyperNodes without that label are never written by discovery. Disabling the
  source or deleting the ConfigMap stops discovery and leaves its HyperNodes as they are, as
  upstream's discovery manager does.

The controller keeps its informer view (HyperNodes, Node labels) from the watch events it is
given. Generated names draw their random suffix from the runtime's
:class:`~pyvolcano.controllers.entropy.Entropy`. A failed write or an unreadable configuration
is retried with the work queue's back-off.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from pyvolcano.api.names import NETWORK_TOPOLOGY_SOURCE_KEY
from pyvolcano.controllers._common import WorkQueue, labels_of, meta, name_of, namespace_of, spec, status
from pyvolcano.controllers.entropy import Entropy
from pyvolcano.controllers.hypernode.discovery import (
    DEFAULT_NAMESPACE,
    LABEL_SOURCE,
    DiscoveryError,
    configmap_name,
    discover_from_labels,
    enabled_config,
    label_tiers,
    parse_discovery_config,
    topology_label_keys,
)
from pyvolcano.controllers.hypernode.members import NodeSets
from pyvolcano.store.base import AlreadyExists, NotFound, Store, StoreError, Unavailable, WatchEvent, clone

__all__ = ["HyperNodeController"]

logger = logging.getLogger(__name__)

_CONFIG: Final = "config"
_DISCOVER: Final = LABEL_SOURCE


class HyperNodeController:
    """Keeps HyperNodes' node counts and the label-discovered HyperNodes (see the module docstring).

    Args:
        store: the object store.
        entropy: where generated names' suffixes come from.
        config_namespace / config_name: where the discovery ConfigMap lives.
    """

    name = "hyperNode-controller"

    def __init__(self, *, store: Store, entropy: Entropy, config_namespace: str = DEFAULT_NAMESPACE,
                 config_name: str = configmap_name()):
        self.store = store
        self.entropy = entropy
        self.config_namespace = config_namespace
        self.config_name = config_name
        self.hypernodes: dict[str, dict[str, Any]] = {}
        self.node_labels: dict[str, dict[str, str]] = {}
        self.tiers: dict[str, tuple[str, ...]] | None = None  # the label source's tiers; None while it is off
        self._tier_keys: frozenset[str] = frozenset()
        self._recount_all = False
        self.status_queue: WorkQueue[str] = WorkQueue(dedup=True)
        self.discovery_queue: WorkQueue[str] = WorkQueue(dedup=True)
        self.discovery_queue.add(_CONFIG)  # upstream loads the configuration when the controller starts

    # ------------------------------------------------------------------ events
    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "HyperNode":
            self._on_hypernode(ev)
        elif ev.kind == "Node":
            self._on_node(ev)
        elif ev.kind == "ConfigMap" and (namespace_of(ev.object), name_of(ev.object)) == (
                self.config_namespace, self.config_name):
            self.discovery_queue.add(_CONFIG)

    def _on_hypernode(self, ev: WatchEvent) -> None:
        name = name_of(ev.object)
        old = self.hypernodes.get(name)
        if ev.type == "DELETED":
            self.hypernodes.pop(name, None)
            self._recount_all = True
            if self.tiers is not None:
                self.discovery_queue.add(_DISCOVER)
            return
        self.hypernodes[name] = ev.object
        if old is None or spec(old) != spec(ev.object):
            self._recount_all = True
        else:
            self.status_queue.add(name)

    def _on_node(self, ev: WatchEvent) -> None:
        name = name_of(ev.object)
        labels = labels_of(ev.object)
        old = self.node_labels.get(name)
        if ev.type == "DELETED":
            self.node_labels.pop(name, None)
            tiers_changed = bool(self._tier_labels(labels))
        elif old is not None and old == labels:
            return
        else:
            self.node_labels[name] = dict(labels)
            tiers_changed = self._tier_labels(labels) != self._tier_labels(old or {})
        self._recount_all = True
        if tiers_changed and self.tiers is not None:
            self.discovery_queue.add(_DISCOVER)

    def _tier_labels(self, labels: Mapping[str, str]) -> dict[str, str]:
        return {k: v for k, v in labels.items() if k in self._tier_keys}

    # ------------------------------------------------------------------ work
    def run(self, now: float) -> float | None:
        for item in self.discovery_queue.drain(now):
            try:
                if item == _CONFIG:
                    self._load_config()
                else:
                    self._discover()
            except (DiscoveryError, StoreError) as e:
                logger.error("hypernode discovery (%s): %s", item, e)
                if isinstance(e, Unavailable):
                    self.discovery_queue.add_unavailable(item, now)
                else:
                    self.discovery_queue.add_rate_limited(item, now)
                continue
            self.discovery_queue.forget(item)
        if self._recount_all:
            self._recount_all = False
            for name in sorted(self.hypernodes):
                self.status_queue.add(name)
        sets: NodeSets | None = None
        for name in self.status_queue.drain(now):
            if sets is None:
                sets = NodeSets(self.node_labels, self.hypernodes)
            try:
                self._sync_status(name, sets)
            except StoreError as e:
                logger.error("failed to update the status of HyperNode %s: %s", name, e)
                if isinstance(e, Unavailable):
                    self.status_queue.add_unavailable(name, now)
                else:
                    self.status_queue.add_rate_limited(name, now)
                continue
            self.status_queue.forget(name)
        wakeups = [t for t in (self.discovery_queue.next_wakeup(), self.status_queue.next_wakeup()) if t is not None]
        return min(wakeups, default=None)

    def _sync_status(self, name: str, sets: NodeSets) -> None:
        """``syncHyperNodeStatus``: write ``status.nodeCount`` when it differs."""
        hn = self.hypernodes.get(name)
        if hn is None:
            return
        count = sets.node_count(name)
        if status(hn).get("nodeCount", 0) == count:
            return
        try:
            self.store.update_status({**hn, "status": {**status(hn), "nodeCount": count}})
        except NotFound:
            return

    def _load_config(self) -> None:
        try:
            configmap: dict[str, Any] | None = self.store.get("ConfigMap", self.config_namespace, self.config_name)
        except NotFound:
            configmap = None
        configs = parse_discovery_config(configmap)
        for c in configs:
            if c.enabled and c.source != LABEL_SOURCE:
                logger.warning("network topology discovery source %r is not supported; only %r is",
                               c.source, LABEL_SOURCE)
        label = enabled_config(configs, LABEL_SOURCE)
        if label is None:
            if self.tiers is not None:
                logger.info("stopping network topology discovery: source %s", LABEL_SOURCE)
            self.tiers = None
            self._tier_keys = frozenset()
            return
        self.tiers = label_tiers(label.config)
        self._tier_keys = topology_label_keys(self.tiers)
        self.discovery_queue.add(_DISCOVER)

    def _discover(self) -> None:
        if self.tiers is None:
            return
        discovered = discover_from_labels(self.tiers, self.node_labels, self.hypernodes, self.entropy.name_suffix)
        self._reconcile(discovered)

    def _reconcile(self, discovered: dict[str, dict[str, Any]]) -> None:
        """``reconcileTopology`` for the ``label`` source; raises the first failed write's error."""
        existing = {n: hn for n, hn in self.hypernodes.items()
                    if labels_of(hn).get(NETWORK_TOPOLOGY_SOURCE_KEY) == LABEL_SOURCE}
        failed: StoreError | None = None
        for name in sorted(discovered):
            want = discovered[name]
            try:
                cur = existing.pop(name, None)
                if cur is None:
                    logger.info("creating HyperNode %s (source %s)", name, LABEL_SOURCE)
                    self.store.create(want)
                else:
                    self._update(cur, want)
            except AlreadyExists:
                continue
            except StoreError as e:
                logger.error("failed to write HyperNode %s: %s", name, e)
                failed = failed or e
        for name in sorted(existing):
            logger.info("deleting HyperNode %s (source %s)", name, LABEL_SOURCE)
            try:
                self.store.delete("HyperNode", None, name)
            except NotFound:
                continue
            except StoreError as e:
                logger.error("failed to delete HyperNode %s: %s", name, e)
                failed = failed or e
        if failed is not None:
            raise failed

    def _update(self, cur: dict[str, Any], want: dict[str, Any]) -> None:
        """``UpdateHyperNode``: the discovered spec, the discovered labels added to the current ones."""
        labels = {**labels_of(cur), **labels_of(want)}
        if spec(cur) == spec(want) and labels == labels_of(cur):
            return
        obj = clone(cur)
        obj["metadata"] = {**meta(obj), "labels": labels}
        obj["spec"] = clone(spec(want))
        logger.info("updating HyperNode %s (source %s)", name_of(cur), LABEL_SOURCE)
        self.store.update(obj)
