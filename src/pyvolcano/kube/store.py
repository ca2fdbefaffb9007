"""KubeStore: the store protocol over a real kube-apiserver, with informer caches.

Reads come from a local cache that one reflector per watched kind keeps up to date
(client-go's informer/lister pattern); writes go to the API server. Consumers (scheduler
cache, controllers, fake kubelets) see exactly what they see on the in-memory store: plain
dicts, and :meth:`watch` returning the events after a revision.

Design and invariants:

* **Local revisions.** Every change to the local cache appends one :class:`WatchEvent` with
  the next local revision (an int), whatever the API server's resourceVersions are. A
  consumer that read up to revision *r* gets each later change exactly once, in order.
* **Reflector.** List (in chunks), remember the list's resourceVersion, watch from it with
  bookmarks; a bookmark only moves the resume point. When the watch ends it resumes from the
  last version seen; on ``410 Gone`` it relists and *diffs*: objects missing from the new list
  are reported DELETED, so deletions made while disconnected are not lost. Transport errors
  reconnect with capped exponential back-off. :meth:`wait_for_sync` returns once every kind
  has been listed; runtimes open no session before that.
* **Optional kinds.** A 404 for the collection of an optional kind (a CRD the cluster does
  not serve, :mod:`pyvolcano.kube.resources`) counts as an empty list: the kind is synced
  with no objects (any it had are DELETED), this is logged once at info, and the reflector
  lists again every ``backoff[1]`` seconds, so a CRD installed later is picked up.
* **Read your writes.** A successful write puts the object the API server returned into the
  cache at once (and emits its event); the watch event for the same resourceVersion is then
  dropped. An object is only ever replaced by a newer resourceVersion (compared as integers,
  which etcd-backed servers use), and a deleted key keeps a tombstone until the watch has
  passed the deletion, so a late event cannot resurrect it.
* **Status.** Kinds with a status subresource (:mod:`pyvolcano.kube.resources`) write status
  through ``/status``; for PodGroup, whose CRD has none, a status write patches the object
  and a main-resource update keeps the cached status, as the in-memory store does.
"""

from __future__ import annotations

import builtins
import logging
import random
import threading
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pyvolcano.kube.client import ApiError, Expired, KubeClient
from pyvolcano.kube.resources import Resource, resource_for
from pyvolcano.store.base import (
    Conflict,
    Forbidden,
    NotFound,
    StoreError,
    WatchEvent,
    call_each,
    clone,
    merge_patch_between,
    object_key,
)

__all__ = ["KubeStore", "Reflector"]

logger = logging.getLogger(__name__)


_worker = threading.local()  # .depth: 1 while a thread runs a map_concurrently call, 2 for a nested one
POOL_WORKERS = 16
NESTED_POOL_WORKERS = 64  # a job's pods: upstream starts a goroutine for each of them


def _rv(obj: Mapping[str, Any]) -> int | None:
    text = (obj.get("metadata") or {}).get("resourceVersion")
    if not isinstance(text, str | int):
        return None
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _key_of(kind: str, obj: Mapping[str, Any]) -> str:
    md = obj.get("metadata") or {}
    return object_key(kind, md.get("namespace"), str(md.get("name", "")))


class KubeStore:
    """The :class:`~pyvolcano.store.base.Store` protocol against a kube-apiserver."""

    def __init__(self, client: KubeClient, kinds: Collection[str], *, namespace: str | None = None,
                 label_selectors: Mapping[str, str] | None = None, clock: Callable[[], float] | None = None):
        self.client = client
        self.kinds = tuple(kinds)
        self.namespace = namespace
        self.clock = clock or time.time
        self._lock = threading.Condition()
        self._objects: dict[str, dict[str, dict[str, Any]]] = {k: {} for k in self.kinds}
        self._tombstones: dict[str, dict[str, int]] = {k: {} for k in self.kinds}
        self._events: list[WatchEvent] = []
        self._first = 1  # revision of self._events[0]
        self._revision = 0
        self._stop = threading.Event()
        self._pools: list[ThreadPoolExecutor] = []  # [calls, nested calls]
        self._pool_lock = threading.Lock()
        self._status_put_only: set[str] = set()  # kinds whose status patch RBAC refused
        self.reflectors = [Reflector(self, resource_for(k), namespace=namespace,
                                     label_selector=(label_selectors or {}).get(k)) for k in self.kinds]

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> KubeStore:
        for r in self.reflectors:
            r.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for pool in self._pools:
            pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            self._lock.notify_all()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for r in self.reflectors:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not r.synced.wait(left):
                return False
        return True

    def wait(self, since_revision: int, timeout: float) -> bool:
        """Block until there is an event after ``since_revision`` (True) or ``timeout`` passes."""
        with self._lock:
            return self._lock.wait_for(lambda: self._revision > since_revision or self._stop.is_set(), timeout) \
                and self._revision > since_revision

    # ------------------------------------------------------------------ the local cache
    def apply(self, kind: str, typ: str, obj: dict[str, Any]) -> bool:
        """Fold one observed object into the cache; True when it changed something."""
        key = _key_of(kind, obj)
        rv = _rv(obj)
        with self._lock:
            bucket = self._objects[kind]
            tombs = self._tombstones[kind]
            cur = bucket.get(key)
            cur_rv = None if cur is None else _rv(cur)
            if typ == "DELETED":
                tomb = tombs.get(key)
                if cur is None or (cur_rv is not None and rv is not None and rv < cur_rv):
                    if tomb is not None and rv is not None and rv >= tomb:
                        del tombs[key]
                    return False
                del bucket[key]
                if rv is not None:
                    tombs[key] = rv
                self._emit("DELETED", kind, obj)
                return True
            if cur is not None and cur_rv is not None and rv is not None and rv <= cur_rv:
                return False
            if cur is None:
                tomb = tombs.get(key)
                if tomb is not None and rv is not None:
                    if rv <= tomb:
                        return False
                    del tombs[key]
            bucket[key] = obj
            self._emit("ADDED" if cur is None else "MODIFIED", kind, obj)
            return True

    def replace(self, kind: str, items: list[dict[str, Any]], list_rv: int | None) -> None:
        """A relist: diff ``items`` against the cache (missing ones are DELETED)."""
        with self._lock:
            listed = {_key_of(kind, o): o for o in items}
            for key, cur in list(self._objects[kind].items()):
                if key in listed:
                    continue
                cur_rv = _rv(cur)
                if list_rv is not None and cur_rv is not None and cur_rv > list_rv:
                    continue  # written after the list was taken
                self.apply(kind, "DELETED", {**cur, "metadata": {**(cur.get("metadata") or {}),
                                                                 "resourceVersion": str(list_rv or cur_rv or 0)}})
            for o in items:
                self.apply(kind, "ADDED", o)
            if list_rv is not None:
                tombs = self._tombstones[kind]
                for key in [k for k, v in tombs.items() if v <= list_rv]:
                    del tombs[key]

    def _emit(self, typ: str, kind: str, obj: dict[str, Any]) -> None:
        self._revision += 1
        self._events.append(WatchEvent(typ, kind, obj, self._revision))
        self._lock.notify_all()

    # ------------------------------------------------------------------ Store protocol: reads
    @property
    def revision(self) -> int:
        return self._revision

    def watch(self, since_revision: int, kinds: Collection[str] | None = None, *,
              copy: bool = True) -> builtins.list[WatchEvent]:
        """Events after ``since_revision``. ``copy=False`` hands out the cached objects themselves,
        for consumers that only read them (the cache never mutates a stored object in place)."""
        with self._lock:
            start = max(0, since_revision + 1 - self._first)
            events = self._events[start:]
        wanted = None if kinds is None else set(kinds)
        if not copy:
            return events if wanted is None else [e for e in events if e.kind in wanted]
        return [WatchEvent(e.type, e.kind, clone(e.object), e.revision) for e in events
                if wanted is None or e.kind in wanted]

    def compact(self, revision: int) -> int:
        """Forget events up to ``revision`` (every consumer has read them)."""
        with self._lock:
            cut = min(max(0, revision + 1 - self._first), len(self._events))
            if cut:
                del self._events[:cut]
                self._first += cut
            return cut

    def peek(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        key = object_key(kind, namespace, name)
        bucket = self._objects.get(kind)
        if bucket is None:
            return self._get_remote(kind, namespace, name)
        with self._lock:
            obj = bucket.get(key)
        if obj is None:
            raise NotFound(kind, key)
        return obj

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        return clone(self.peek(kind, namespace, name))

    def _get_remote(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        res = resource_for(kind)
        obj: dict[str, Any] = self.client.request("GET", res.object_path(namespace, name),
                                                  what=(kind, object_key(kind, namespace, name)))
        obj.setdefault("apiVersion", res.api_version)
        obj.setdefault("kind", kind)
        return obj

    def list_on_server(self, kind: str, namespace: str | None = None, *,
                       label_selector: str | None = None) -> builtins.list[dict[str, Any]]:
        """One list request to the API server, filtered there by ``label_selector`` (informers
        or not): :class:`~pyvolcano.store.base.ServerBacked`."""
        res = resource_for(kind)
        items, _ = self.client.list(res, namespace if res.namespaced else None, label_selector=label_selector)
        return items

    def list(self, kind: str, namespace: str | None = None, *,
             label_selector: Mapping[str, str] | None = None) -> builtins.list[dict[str, Any]]:
        bucket = self._objects.get(kind)
        if bucket is None:
            res = resource_for(kind)
            sel = ",".join(f"{k}={v}" for k, v in (label_selector or {}).items()) or None
            items, _ = self.client.list(res, namespace if res.namespaced else None, label_selector=sel)
            return sorted(items, key=lambda o: _key_of(kind, o))
        with self._lock:
            pairs = sorted(bucket.items())
        out = []
        for _key, obj in pairs:
            md = obj.get("metadata") or {}
            if namespace is not None and resource_for(kind).namespaced and md.get("namespace") != namespace:
                continue
            if label_selector:
                labels = md.get("labels") or {}
                if any(labels.get(k) != v for k, v in label_selector.items()):
                    continue
            out.append(clone(obj))
        return out

    def map_concurrently(self, calls: builtins.list[Callable[[], Any]]) -> builtins.list[Any]:
        """Run independent calls on a pool of 16 workers (:func:`pyvolcano.store.base.call_all`):
        each call's result or StoreError, in order; any other exception is raised.

        Called from one of that pool's workers (a job synced concurrently creating its pods), the
        calls go to a second pool of their own (64 workers), in submission order, so that a job's pods are
        created together, as upstream's job controller creates them in parallel goroutines (one
        after the other, the gangs of every job synced at once grew together, and each session
        saw them all incomplete). Waiting on the first pool from inside it could deadlock; the
        second pool's workers never wait on a pool, and calls made from them run inline."""
        depth = getattr(_worker, "depth", 0)
        if depth >= 2:
            return call_each(calls)
        with self._pool_lock:
            while len(self._pools) <= depth:
                workers = POOL_WORKERS if not self._pools else NESTED_POOL_WORKERS
                self._pools.append(ThreadPoolExecutor(max_workers=workers,
                                                      thread_name_prefix=f"kube-write-{len(self._pools)}"))
            pool = self._pools[depth]

        def run(call: Callable[[], Any]) -> Any:
            _worker.depth = depth + 1
            try:
                return call()
            except StoreError as e:
                return e
            finally:
                _worker.depth = depth

        return list(pool.map(run, calls))

    # ------------------------------------------------------------------ Store protocol: writes
    def _write(self, method: str, path: str, body: Any, kind: str, key: str,
               content_type: str = "application/json") -> dict[str, Any]:
        """Send a write; the object the API server returns goes to the cache (for a watched kind)
        and a copy of its own to the caller, both decoded from the reply (cheaper than a clone)."""
        if kind not in self._objects:
            out = self.client.request(method, path, body=body, content_type=content_type, what=(kind, key))
            if isinstance(out, dict) and out.get("kind") not in (None, "Status"):
                out.setdefault("apiVersion", resource_for(kind).api_version)
                return out
            return {}
        cached, mine = self.client.request_twice(method, path, body=body, content_type=content_type,
                                                 what=(kind, key))
        if not isinstance(cached, dict) or cached.get("kind") in (None, "Status"):
            return {}
        api_version = resource_for(kind).api_version
        cached.setdefault("apiVersion", api_version)
        mine.setdefault("apiVersion", api_version)
        self.apply(kind, "ADDED", cached)
        return mine

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        kind = str(obj.get("kind"))
        res = resource_for(kind)
        md = obj.get("metadata") or {}
        ns = md.get("namespace") or "default" if res.namespaced else None
        body = {**obj, "apiVersion": obj.get("apiVersion") or res.api_version}
        return self._write("POST", res.collection_path(ns), body, kind, _key_of(kind, obj))

    def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        kind = str(obj.get("kind"))
        res = resource_for(kind)
        md = obj.get("metadata") or {}
        body = dict(obj)
        if not res.status_subresource and kind == "PodGroup":
            # No status subresource: keep the status we know rather than what the caller read.
            with self._lock:
                cur = self._objects.get(kind, {}).get(_key_of(kind, obj))
            if cur is not None and "status" in cur:
                body["status"] = cur["status"]
        return self._write("PUT", res.object_path(md.get("namespace"), str(md.get("name"))), body, kind,
                           _key_of(kind, obj))

    def update_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A status update (upstream's ``UpdateStatus``). For a watched kind with a status
        subresource whose cached object is the version ``obj`` was read at, it is sent as a
        merge patch of the status that changed, with that resourceVersion as its
        precondition: the same object results and a stale version is the same ``409``, for a
        body of the changed fields instead of the whole object (the API server decodes,
        converts and validates less). Otherwise the whole object is PUT, and so is every later
        status of a kind whose patch RBAC refused (a role with upstream's ``update`` only)."""
        kind = str(obj.get("kind"))
        res = resource_for(kind)
        md = obj.get("metadata") or {}
        sub = "status" if res.status_subresource else None
        path = res.object_path(md.get("namespace"), str(md.get("name")), sub)
        patch = self._status_patch(kind, obj) if sub and kind not in self._status_put_only else None
        if patch is not None:
            try:
                return self._write("PATCH", path, patch, kind, _key_of(kind, obj), "application/merge-patch+json")
            except Forbidden:
                # RBAC that grants upstream's verb only (update): PUT, for this kind from now on
                logger.info("%s status: patch forbidden, updating whole objects instead", kind)
                self._status_put_only.add(kind)
        return self._write("PUT", path, obj, kind, _key_of(kind, obj))

    def _status_patch(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        new = obj.get("status")
        if not rv or not isinstance(new, dict):
            return None
        with self._lock:
            cur = self._objects.get(kind, {}).get(_key_of(kind, obj))
        if cur is None or (cur.get("metadata") or {}).get("resourceVersion") != rv:
            return None
        old = cur.get("status")
        diff = merge_patch_between(old if isinstance(old, dict) else {}, new)
        if diff is None:
            return None
        return {"metadata": {"resourceVersion": rv}, "status": diff}

    def patch(self, kind: str, namespace: str | None, name: str, patch: dict[str, Any], *,
              subresource: str | None = None) -> dict[str, Any]:
        res = resource_for(kind)
        if subresource == "status" and not res.status_subresource:
            subresource = None
        return self._write("PATCH", res.object_path(namespace, name, subresource), patch, kind,
                           object_key(kind, namespace, name), "application/merge-patch+json")

    def delete(self, kind: str, namespace: str | None, name: str, *, grace_period_seconds: float | None = None,
               propagation: str = "Background") -> dict[str, Any] | None:
        res = resource_for(kind)
        opts: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation}
        if grace_period_seconds is not None:
            opts["gracePeriodSeconds"] = int(grace_period_seconds)
        key = object_key(kind, namespace, name)
        out = self.client.request("DELETE", res.object_path(namespace, name), body=opts, what=(kind, key))
        if not isinstance(out, dict) or out.get("kind") == "Status":
            return None
        md = out.get("metadata") or {}
        if kind in self._objects:
            if md.get("deletionTimestamp") and (md.get("finalizers") or (kind == "Pod" and _graceful(out))):
                self.apply(kind, "MODIFIED", out)
            else:
                self.apply(kind, "DELETED", out)
        return clone(out)

    def bind(self, namespace: str, pod_name: str, node_name: str, *,
             annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
        """POST ``pods/binding``. The reply is a ``Status``; a 409 (already bound) is a Conflict."""
        res = resource_for("Pod")
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "Binding",
                                "metadata": {"name": pod_name, "namespace": namespace},
                                "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
        if annotations:
            body["metadata"]["annotations"] = dict(annotations)
        out = self.client.request("POST", res.object_path(namespace, pod_name, "binding"), body=body,
                                  what=("Pod", f"{namespace}/{pod_name}"))
        return out if isinstance(out, dict) else {}


def _graceful(pod: Mapping[str, Any]) -> bool:
    # The API server deletes a pod at once when it is unbound or finished; otherwise it marks it.
    return bool((pod.get("spec") or {}).get("nodeName")) and \
        (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


class Reflector:
    """List-then-watch one kind into a :class:`KubeStore` (client-go's reflector)."""

    def __init__(self, store: KubeStore, res: Resource, *, namespace: str | None = None,
                 label_selector: str | None = None, watch_timeout: int = 300,
                 backoff: tuple[float, float] = (0.8, 30.0), rng: random.Random | None = None):
        self.store = store
        self.res = res
        self.namespace = namespace if res.namespaced else None
        self.label_selector = label_selector
        self.watch_timeout = watch_timeout
        self.backoff = backoff
        self.rng = rng or random.Random()
        self.synced = threading.Event()
        self.resource_version = ""
        self.relists = 0
        self.served = True  # False while the API server answers 404 for an optional kind
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name=f"reflector-{self.res.kind}", daemon=True)
        self._thread.start()

    def list_and_replace(self) -> None:
        try:
            items, rv = self.store.client.list(self.res, self.namespace, label_selector=self.label_selector)
        except NotFound:
            if not self.res.optional:
                raise
            if self.served:
                logger.info("%s: the API server does not serve %s %s (CRD not installed); treating it as none",
                            self.res.kind, self.res.api_version, self.res.plural)
            self.served = False
            self.store.replace(self.res.kind, [], None)
            self.resource_version = ""
            self.synced.set()
            return
        if not self.served:
            logger.info("%s: the API server serves %s %s now", self.res.kind, self.res.api_version, self.res.plural)
            self.served = True
        self.store.replace(self.res.kind, items, int(rv) if rv.isdigit() else None)
        self.resource_version = rv
        self.relists += 1
        self.synced.set()

    def watch_once(self) -> None:
        """One watch from the current resourceVersion until the server closes it."""
        for item in self.store.client.watch(self.res, self.resource_version, timeout_seconds=self.watch_timeout,
                                            namespace=self.namespace, label_selector=self.label_selector):
            if self.store.stopped:
                return
            rv = (item.object.get("metadata") or {}).get("resourceVersion")
            if item.type != "BOOKMARK":
                self.store.apply(self.res.kind, item.type, item.object)
            if rv:
                self.resource_version = str(rv)

    def run(self) -> None:
        delay = self.backoff[0]
        need_list = True
        while not self.store.stopped:
            try:
                if need_list:
                    self.list_and_replace()
                    need_list = False
                if not self.served:  # nothing to watch: look again later
                    need_list = True
                    self.store._stop.wait(self.backoff[1])
                    continue
                self.watch_once()
                delay = self.backoff[0]
            except Expired:
                logger.info("%s: watch from resourceVersion %s expired; relisting", self.res.kind,
                            self.resource_version)
                need_list = True
            except (ApiError, StoreError) as e:
                if self.store.stopped:  # the watch ended because the store was stopped
                    return
                if isinstance(e, Conflict | NotFound):
                    need_list = True
                logger.warning("%s: list/watch failed: %s; retrying in %.1fs", self.res.kind, e, delay)
                self.store._stop.wait(delay * (1 + self.rng.random() * 0.2))
                delay = min(delay * 2, self.backoff[1])
            except Exception:  # a bug must not silently kill the informer
                logger.exception("%s: reflector error; relisting", self.res.kind)
                need_list = True
                self.store._stop.wait(delay)
                delay = min(delay * 2, self.backoff[1])
