"""An in-memory :class:`~pyvolcano.store.base.Store` with Kubernetes API-server semantics.

What it reproduces (``k8s.io/apiserver/pkg/registry/generic/registry/store.go``,
``pkg/registry/core/pod``, ``pkg/controller/garbagecollector``):

* one global revision; each committed write bumps it, stamps ``metadata.resourceVersion`` and
  appends exactly one watch event; writes that change nothing are no-ops (no revision, no event);
* create sets ``uid`` (``uid-<revision>``), ``resourceVersion``, ``creationTimestamp`` and
  ``generation`` and resolves ``generateName``; ``generation`` goes up when anything outside
  ``metadata`` and ``status`` changes;
* optimistic concurrency: a write whose ``metadata.resourceVersion`` is set and stale (or whose
  ``uid`` names an earlier incarnation) is a :class:`~pyvolcano.store.base.Conflict`;
* status subresources (:data:`~pyvolcano.store.base.STATUS_SUBRESOURCE_KINDS`): a main-resource
  write keeps the stored ``.status``; :meth:`InMemoryStore.update_status` changes only ``.status``;
* ``pods/binding``; graceful pod deletion (``deletionTimestamp = now + grace``; the pod stays until
  a delete with grace 0); finalizers (an object being deleted stays until its finalizers are
  gone); owner references with Background, Foreground and Orphan propagation, the garbage
  collector's work being done synchronously inside the call that triggered it.

Stored dicts are never mutated in place (every write builds a new dict), so watch history can
share them, and a write copies only the parts it changes (a status write shares the stored
spec; a binding copies the spec's top level); everything handed out is a deep copy.

Deliberate simplifications: status given on create is kept (so Nodes and Pods can be loaded with
their status); every dependent blocks a foreground deletion (as if ``blockOwnerDeletion`` were
always true); dependents whose owner never existed are not collected.
"""

from __future__ import annotations

import bisect
import builtins
import hashlib
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

from pyvolcano.store.base import (
    CLUSTER_SCOPED_KINDS,
    STATUS_SUBRESOURCE_KINDS,
    Admission,
    AlreadyExists,
    Conflict,
    Invalid,
    NotFound,
    StoreError,
    WatchEvent,
    clone,
    json_merge_patch,
    object_key,
    to_rfc3339,
)

__all__ = ["InMemoryStore"]

_Key = tuple[str, str, str]  # (kind, namespace or "", name)

_NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"  # apiserver's generateName alphabet (no vowels)
_FOREGROUND: Final = "foregroundDeletion"
_PROPAGATIONS: Final = ("Background", "Foreground", "Orphan")
_TERMINAL_POD_PHASES: Final = ("Succeeded", "Failed")
_DEFAULT_POD_GRACE: Final = 30


def _num(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


class InMemoryStore:
    """The reference store. ``clock`` returns virtual seconds; ``admission`` (optional) is called
    on every create, main-resource update/patch and delete."""

    def __init__(self, clock: Callable[[], float] | None = None, admission: Admission | None = None):
        self._clock: Callable[[], float] = clock if clock is not None else (lambda: 0.0)
        self._admission = admission
        self._rev = 0
        self._objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self._events: list[WatchEvent] = []
        self._event_revs: list[int] = []
        self._uids: dict[str, _Key] = {}
        self._dependents: dict[str, set[_Key]] = {}
        self._propagation: dict[_Key, str] = {}
        self._sorted_keys: dict[str, builtins.list[tuple[str, str]]] = {}  # per kind; dropped on add/remove

    # ------------------------------------------------------------------------- reads

    @property
    def revision(self) -> int:
        return self._rev

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        return clone(self._stored(self._key(kind, namespace, name)))

    def peek(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        """The stored object itself, without a copy: read-only for hot read paths.

        Callers must not mutate the result (writes go through update/patch). NotFound as get."""
        return self._stored(self._key(kind, namespace, name))

    def list(self, kind: str, namespace: str | None = None, *,
             label_selector: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        bucket = self._objects.get(kind)
        if not bucket:
            return []
        keys = self._sorted_keys.get(kind)
        if keys is None:
            keys = self._sorted_keys[kind] = sorted(bucket)
        if namespace is not None and kind not in CLUSTER_SCOPED_KINDS:
            keys = [k for k in keys if k[0] == namespace]
        out = []
        for k in keys:
            obj = bucket[k]
            if label_selector:
                labels = (obj.get("metadata") or {}).get("labels") or {}
                if any(labels.get(lk) != lv for lk, lv in label_selector.items()):
                    continue
            out.append(clone(obj))
        return out

    def watch(self, since_revision: int, kinds: Collection[str] | None = None, *,
              copy: bool = True) -> builtins.list[WatchEvent]:
        """Events after ``since_revision``. ``copy=False`` hands out the recorded events
        themselves, as an informer shares its cached objects: for consumers that never mutate
        an event's object (stored dicts are never mutated in place, so this is safe)."""
        start = bisect.bisect_right(self._event_revs, since_revision)
        if not copy:
            if kinds is None:
                return self._events[start:]
            return [e for e in self._events[start:] if e.kind in kinds]
        wanted = None if kinds is None else set(kinds)
        return [WatchEvent(e.type, e.kind, clone(e.object), e.revision) for e in self._events[start:]
                if wanted is None or e.kind in wanted]

    def compact(self, revision: int, *, keep: int = 10_000) -> int:
        """Forget watch history up to ``revision`` (as etcd compaction does), always keeping the
        last ``keep`` events. A watch from a compacted revision then starts at the oldest event
        kept. Returns how many events were dropped."""
        cut = bisect.bisect_right(self._event_revs, revision)
        cut = min(cut, max(len(self._events) - keep, 0))
        if cut > 0:
            del self._events[:cut]
            del self._event_revs[:cut]
        return max(cut, 0)

    # ------------------------------------------------------------------------- writes

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self._create(obj, admit=True, uid=None)

    def _create(self, obj: dict[str, Any], *, admit: bool, uid: str | None) -> dict[str, Any]:
        """:meth:`create`, through admission if ``admit``, with ``uid`` when given and not taken."""
        kind = obj.get("kind") if isinstance(obj, Mapping) else None
        if not isinstance(kind, str) or not kind:
            raise Invalid("object", "?", "kind", "Required value: every object needs a kind")
        new = clone(obj)
        md = new.get("metadata")
        if md is None:
            md = new["metadata"] = {}
        if not isinstance(md, dict):
            raise Invalid(kind, "?", "metadata", "Invalid value: expected a mapping")
        if kind in CLUSTER_SCOPED_KINDS:
            md.pop("namespace", None)
            ns = ""
        else:
            ns_value = md.get("namespace") or "default"
            if not isinstance(ns_value, str):
                raise Invalid(kind, "?", "metadata.namespace", "Invalid value: expected a string")
            ns = md["namespace"] = ns_value
        name = md.get("name")
        if not name:
            prefix = md.get("generateName")
            if not prefix:
                raise Invalid(kind, object_key(kind, ns, "?"), "metadata.name",
                              "Required value: name or generateName is required")
            if not isinstance(prefix, str):
                raise Invalid(kind, object_key(kind, ns, "?"), "metadata.generateName",
                              "Invalid value: expected a string")
            name = md["name"] = self._generate_name(kind, ns, prefix)
        if not isinstance(name, str):
            raise Invalid(kind, object_key(kind, ns, str(name)), "metadata.name", "Invalid value: expected a string")
        key: _Key = (kind, ns, name)
        if (ns, name) in self._objects.get(kind, {}):
            raise AlreadyExists(kind, object_key(kind, ns, name))
        for server_field in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                             "deletionGracePeriodSeconds", "generation"):
            md.pop(server_field, None)
        if kind == "Pod":
            status = new.get("status")
            if not isinstance(status, dict):
                status = new["status"] = {}
            status.setdefault("phase", "Pending")
        if admit and self._admission is not None:
            new = self._admission.admit("CREATE", new, None, self)
            md = new["metadata"]
            md["name"], md["namespace"] = name, ns  # admission may not rename or move the object
            if not ns:
                md.pop("namespace", None)
        rev = self._rev + 1
        if uid is None or uid in self._uids:
            uid = f"uid-{rev}"
            while uid in self._uids:  # a restored object may hold the generated name
                uid += "x"
        md["uid"] = uid
        md["creationTimestamp"] = to_rfc3339(self._clock())
        md["generation"] = 1
        self._commit(key, new, "ADDED")
        return clone(new)

    def restore(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create ``obj`` as an object that already exists on a cluster (a snapshot's): without
        admission, which admitted it there already, and with its ``metadata.uid`` kept (owner
        references and the names controllers derive from uids, such as a vcjob's PodGroup
        ``<job>-<uid>``, stay valid; a uid restored twice is replaced); otherwise as :meth:`create`."""
        md = obj.get("metadata") if isinstance(obj, Mapping) else None
        uid = md.get("uid") if isinstance(md, Mapping) else None
        return self._create(obj, admit=False, uid=uid if isinstance(uid, str) and uid else None)

    def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        key, cur = self._current_for_write(obj)
        new = clone(obj)
        if key[0] in STATUS_SUBRESOURCE_KINDS:
            self._copy_status(cur, new)
        return self._update(key, cur, new, admit=True)

    def update_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        key, cur = self._current_for_write(obj)
        return self._update(key, cur, self._with_status(cur, obj), admit=False)

    def patch(self, kind: str, namespace: str | None, name: str, patch: dict[str, Any], *,
              subresource: str | None = None) -> dict[str, Any]:
        if subresource not in (None, "status"):
            raise ValueError(f"patch: unsupported subresource {subresource!r}; expected None or 'status'")
        if not isinstance(patch, Mapping):
            raise TypeError("patch: a JSON merge patch must be a mapping")
        key = self._key(kind, namespace, name)
        cur = self._stored(key)
        pmd = patch.get("metadata")
        if isinstance(pmd, Mapping):
            self._check_preconditions(key, cur, pmd)
        merged = json_merge_patch(cur, patch)
        if subresource == "status":
            return self._update(key, cur, self._with_status(cur, merged), admit=False)
        if not isinstance(merged.get("metadata"), dict):
            merged["metadata"] = {}
        if kind in STATUS_SUBRESOURCE_KINDS:
            self._copy_status(cur, merged)
        return self._update(key, cur, clone(merged), admit=True)

    def bind(self, namespace: str, pod_name: str, node_name: str, *,
             annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
        key = self._key("Pod", namespace, pod_name)
        cur = self._stored(key)
        md = cur["metadata"]
        where = object_key("Pod", namespace, pod_name)
        if md.get("deletionTimestamp") is not None:
            raise Conflict("Pod", where, f"pod {pod_name} is being deleted, cannot be assigned to a host")
        spec = _sub(cur, "spec")
        bound = spec.get("nodeName")
        if bound:
            raise Conflict("Pod", where, f"pod {pod_name} is already assigned to node {bound!r}")
        # Only what the binding writes is copied; the rest is shared with the stored object.
        new = dict(cur)
        new["metadata"] = dict(md)
        new["spec"] = {**spec, "nodeName": node_name}
        if annotations:
            ann = md.get("annotations")
            new["metadata"]["annotations"] = {**(ann if isinstance(ann, dict) else {}), **annotations}
        status = new["status"] = dict(_sub(cur, "status"))
        conditions = [c for c in status.get("conditions") or [] if not (isinstance(c, Mapping)
                                                                        and c.get("type") == "PodScheduled")]
        conditions.append({"type": "PodScheduled", "status": "True",
                           "lastTransitionTime": to_rfc3339(self._clock())})
        status["conditions"] = conditions
        return self._update(key, cur, new, admit=False)

    def delete(self, kind: str, namespace: str | None, name: str, *, grace_period_seconds: float | None = None,
               propagation: str = "Background") -> dict[str, Any] | None:
        if propagation not in _PROPAGATIONS:
            raise ValueError(f"delete: propagation {propagation!r}; expected one of {', '.join(_PROPAGATIONS)}")
        key = self._key(kind, namespace, name)
        cur = self._stored(key)
        if self._admission is not None:
            gone = clone(cur)  # the object and the old object of a deletion are the same
            self._admission.admit("DELETE", gone, gone, self)
        return self._delete(key, grace_period_seconds, propagation)

    # ------------------------------------------------------------------------- internals: lookup

    def _key(self, kind: str, namespace: str | None, name: str) -> _Key:
        if kind in CLUSTER_SCOPED_KINDS:
            return (kind, "", name)
        return (kind, namespace or "default", name)

    def _stored(self, key: _Key) -> dict[str, Any]:
        obj = self._objects.get(key[0], {}).get((key[1], key[2]))
        if obj is None:
            raise NotFound(key[0], object_key(key[0], key[1], key[2]))
        return obj

    def _exists(self, key: _Key) -> bool:
        return (key[1], key[2]) in self._objects.get(key[0], {})

    def _current_for_write(self, obj: Mapping[str, Any]) -> tuple[_Key, dict[str, Any]]:
        kind = obj.get("kind") if isinstance(obj, Mapping) else None
        md = obj.get("metadata") if isinstance(obj, Mapping) else None
        if not isinstance(kind, str) or not isinstance(md, Mapping) or not isinstance(md.get("name"), str):
            raise Invalid(str(kind or "object"), "?", "metadata.name", "Required value: kind and metadata.name")
        key = self._key(kind, md.get("namespace"), md["name"])
        cur = self._stored(key)
        self._check_preconditions(key, cur, md)
        return key, cur

    def _check_preconditions(self, key: _Key, cur: Mapping[str, Any], md: Mapping[str, Any]) -> None:
        where = object_key(*key)
        cmd = cur["metadata"]
        rv = md.get("resourceVersion")
        if rv not in (None, "") and str(rv) != cmd["resourceVersion"]:
            raise Conflict(key[0], where)
        uid = md.get("uid")
        if uid not in (None, "") and uid != cmd["uid"]:
            raise Conflict(key[0], where, f"precondition failed: uid {uid} does not match the stored object's "
                                          f"uid {cmd['uid']}")

    def _generate_name(self, kind: str, ns: str, prefix: str) -> str:
        bucket = self._objects.get(kind, {})
        attempt = 0
        while True:
            seed = f"{self._rev + 1}" if attempt == 0 else f"{self._rev + 1}/{attempt}"
            digest = hashlib.sha256(seed.encode()).digest()
            name = prefix + "".join(_NAME_ALPHABET[b % len(_NAME_ALPHABET)] for b in digest[:5])
            if (ns, name) not in bucket:
                return name
            attempt += 1

    @staticmethod
    def _with_status(cur: Mapping[str, Any], src: Mapping[str, Any]) -> dict[str, Any]:
        """A status write's new object: ``src``'s status copied, ``cur``'s other fields shared
        (stored dicts are never mutated in place) except its metadata, which the write stamps."""
        new = dict(cur)
        new["metadata"] = dict(cur["metadata"])
        InMemoryStore._copy_status(src, new)
        return new

    @staticmethod
    def _copy_status(src: Mapping[str, Any], dst: dict[str, Any]) -> None:
        if "status" in src and src["status"] is not None:
            dst["status"] = clone(src["status"])
        else:
            dst.pop("status", None)

    # ------------------------------------------------------------------------- internals: commit

    def _commit(self, key: _Key, obj: dict[str, Any], event_type: str) -> None:
        self._rev += 1
        obj["metadata"]["resourceVersion"] = str(self._rev)
        bucket = self._objects.setdefault(key[0], {})
        old = bucket.get((key[1], key[2]))
        if old is not None:
            self._unindex(key, old)
        else:
            self._sorted_keys.pop(key[0], None)
        bucket[(key[1], key[2])] = obj
        self._index(key, obj)
        self._record(event_type, key[0], obj)

    def _record(self, event_type: str, kind: str, obj: dict[str, Any]) -> None:
        self._events.append(WatchEvent(event_type, kind, obj, self._rev))
        self._event_revs.append(self._rev)

    def _index(self, key: _Key, obj: Mapping[str, Any]) -> None:
        md = obj["metadata"]
        self._uids[md["uid"]] = key
        for uid in _owner_uids(md):
            self._dependents.setdefault(uid, set()).add(key)

    def _unindex(self, key: _Key, obj: Mapping[str, Any]) -> None:
        md = obj["metadata"]
        if self._uids.get(md["uid"]) == key:
            del self._uids[md["uid"]]
        for uid in _owner_uids(md):
            deps = self._dependents.get(uid)
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self._dependents[uid]

    def _update(self, key: _Key, cur: dict[str, Any], new: dict[str, Any], *, admit: bool) -> dict[str, Any]:
        md = new.get("metadata")
        if not isinstance(md, dict):
            md = new["metadata"] = {}
        cmd = cur["metadata"]
        # identity and server-owned fields are not writable through an update
        new["kind"] = key[0]
        md["name"] = key[2]
        if key[1]:
            md["namespace"] = key[1]
        else:
            md.pop("namespace", None)
        for server_field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                             "generation", "resourceVersion"):
            if server_field in cmd:
                md[server_field] = cmd[server_field]
            else:
                md.pop(server_field, None)
        if admit and self._admission is not None:
            new = self._admission.admit("UPDATE", new, clone(cur), self)
            md = new["metadata"]
            for server_field in ("uid", "resourceVersion", "generation"):
                md[server_field] = cmd[server_field]
        if new == cur:
            return clone(cur)
        if _spec_part(new) != _spec_part(cur):
            md["generation"] = int(cmd.get("generation") or 0) + 1
        self._commit(key, new, "MODIFIED")
        if md.get("deletionTimestamp") is not None:
            done = self._finish_if_released(key)
            if done is not None:
                return clone(done)
        return clone(new)

    # ------------------------------------------------------------------------- internals: deletion

    def _delete(self, key: _Key, grace: float | None, propagation: str) -> dict[str, Any]:
        cur = self._stored(key)
        md = cur["metadata"]
        uid = md["uid"]
        if key[0] == "Pod":
            grace_s = self._pod_grace(cur, grace)
        else:
            grace_s = 0.0
        finalizers = [f for f in md.get("finalizers") or []]
        if md.get("deletionTimestamp") is not None:
            # already being deleted: only a shorter grace period changes anything
            old_grace = md.get("deletionGracePeriodSeconds")
            if grace is None or old_grace is None or grace_s >= float(old_grace):
                return clone(cur)
            if grace_s == 0 and not finalizers:
                return self._remove(key)
            new = clone(cur)
            new["metadata"]["deletionTimestamp"] = to_rfc3339(self._clock() + grace_s)
            new["metadata"]["deletionGracePeriodSeconds"] = _num(grace_s)
            self._commit(key, new, "MODIFIED")
            return clone(new)
        self._propagation[key] = propagation
        if propagation == "Orphan":
            self._orphan_dependents(uid)
        dependents = sorted(self._dependents.get(uid, ()))
        if propagation == "Foreground" and dependents and _FOREGROUND not in finalizers:
            finalizers.append(_FOREGROUND)
        if grace_s == 0 and not finalizers:
            return self._remove(key)
        new = dict(cur)
        nmd = new["metadata"] = dict(md)
        nmd["deletionTimestamp"] = to_rfc3339(self._clock() + grace_s)
        nmd["deletionGracePeriodSeconds"] = _num(grace_s)
        if finalizers:
            nmd["finalizers"] = finalizers
        self._commit(key, new, "MODIFIED")
        if propagation == "Foreground":
            for dep in dependents:
                self._cascade(dep, "Foreground")
        if self._exists(key) and self._stored(key)["metadata"]["uid"] == uid:
            return clone(self._stored(key))
        return self._tombstone(uid)

    def _pod_grace(self, pod: Mapping[str, Any], requested: float | None) -> float:
        spec = _sub(pod, "spec")
        status = _sub(pod, "status")
        if not spec.get("nodeName") or status.get("phase") in _TERMINAL_POD_PHASES:
            return 0.0  # never scheduled or already finished: nothing to wait for
        if requested is None:
            period = spec.get("terminationGracePeriodSeconds")
            requested = _DEFAULT_POD_GRACE if not isinstance(period, int | float) or isinstance(period, bool) \
                else period
        return max(0.0, float(requested))

    def _remove(self, key: _Key) -> dict[str, Any]:
        bucket = self._objects[key[0]]
        obj = bucket.pop((key[1], key[2]))
        self._sorted_keys.pop(key[0], None)
        self._unindex(key, obj)
        self._rev += 1
        final = dict(obj)
        final["metadata"] = dict(obj["metadata"])
        final["metadata"]["resourceVersion"] = str(self._rev)
        self._record("DELETED", key[0], final)
        policy = self._propagation.pop(key, "Background")
        md = obj["metadata"]
        # garbage collection: dependents of a vanished owner go next (Orphan stripped them already)
        for dep in sorted(self._dependents.pop(md["uid"], ())):
            self._cascade(dep, "Foreground" if policy == "Foreground" else "Background")
        # a foreground-deleting owner waiting on this object may now go
        for owner_uid in _owner_uids(md):
            self._release_foreground_owner(owner_uid)
        return clone(final)

    def _cascade(self, key: _Key, propagation: str) -> None:
        if not self._exists(key):
            return
        cur = self._stored(key)
        if self._admission is not None:
            try:
                gone = clone(cur)
                self._admission.admit("DELETE", gone, gone, self)
            except StoreError:
                return  # the garbage collector would retry forever; the dependent stays
        self._delete(key, None, propagation)

    def _orphan_dependents(self, owner_uid: str) -> None:
        for dep in sorted(self._dependents.get(owner_uid, ())):
            cur = self._stored(dep)
            new = clone(cur)
            refs = [r for r in new["metadata"].get("ownerReferences") or []
                    if not (isinstance(r, Mapping) and r.get("uid") == owner_uid)]
            if refs:
                new["metadata"]["ownerReferences"] = refs
            else:
                new["metadata"].pop("ownerReferences", None)
            self._commit(dep, new, "MODIFIED")

    def _release_foreground_owner(self, owner_uid: str) -> None:
        key = self._uids.get(owner_uid)
        if key is None or self._dependents.get(owner_uid):
            return
        owner = self._stored(key)
        md = owner["metadata"]
        if md.get("deletionTimestamp") is None or _FOREGROUND not in (md.get("finalizers") or []):
            return
        new = clone(owner)
        rest = [f for f in md["finalizers"] if f != _FOREGROUND]
        if rest:
            new["metadata"]["finalizers"] = rest
        else:
            new["metadata"].pop("finalizers", None)
        if not rest and not new["metadata"].get("deletionGracePeriodSeconds"):
            self._objects[key[0]][(key[1], key[2])] = new  # finalizer removal and deletion: one event
            self._remove(key)
            return
        self._commit(key, new, "MODIFIED")

    def _finish_if_released(self, key: _Key) -> dict[str, Any] | None:
        """After an update of an object being deleted: remove it once no finalizer holds it
        and its grace period is over (the apiserver's ``ShouldDeleteDuringUpdate``)."""
        obj = self._stored(key)
        md = obj["metadata"]
        if md.get("finalizers") or md.get("deletionGracePeriodSeconds"):
            return None
        return self._remove(key)

    def _tombstone(self, uid: str) -> dict[str, Any]:
        for ev in reversed(self._events):
            if ev.type == "DELETED" and ev.object["metadata"].get("uid") == uid:
                return clone(ev.object)
        raise AssertionError(f"no deletion recorded for uid {uid}")  # pragma: no cover


def _sub(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _owner_uids(md: Mapping[str, Any]) -> list[str]:
    refs = md.get("ownerReferences")
    if not isinstance(refs, list):
        return []
    return [r["uid"] for r in refs if isinstance(r, Mapping) and isinstance(r.get("uid"), str) and r["uid"]]


def _spec_part(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}
