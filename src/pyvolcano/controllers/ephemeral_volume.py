"""kube-controller-manager's ephemeral volume controller (``pkg/controller/volume/ephemeral``).

A pod's *generic ephemeral volume* (``spec.volumes[].ephemeral.volumeClaimTemplate``) is backed by
a PersistentVolumeClaim named ``<pod>-<volume>`` that this controller creates from the template
(its ``spec``, labels and annotations), owned by the pod as controller; the scheduler waits for
the claim, then binds it as any claim (volume binding, docs/volumes.md). On a real cluster
kube-controller-manager runs this controller; the simulator (and a test API server without
kube-controller-manager) runs this one, which does what upstream's does:

* for each ephemeral volume of a pod that is not being deleted, the claim is created when it
  does not exist; an existing claim of that name not controlled by the pod is left alone and
  logged (upstream: ``PVC "<name>" was not created for the pod``; the scheduler keeps the pod
  waiting with the same reason);
* a deleted claim whose pod still exists is created again;
* the claims a deleted pod controlled are deleted (upstream leaves this to the garbage
  collector, which follows the owner reference; the simulator has none).

Writes that fail are retried on the next run, a second later (a claim admission refuses is not:
the pod's validation checks the template). It follows the controllers'
protocol (:meth:`on_event` records, :meth:`run` writes and returns its next wake-up).
"""

from __future__ import annotations

import logging
from typing import Any, Final

from pyvolcano.store.base import AlreadyExists, Invalid, NotFound, Store, StoreError, WatchEvent, clone

__all__ = ["EphemeralVolumeController", "ephemeral_claim_name"]

logger = logging.getLogger(__name__)

_RETRY_SECONDS: Final = 1.0


def ephemeral_claim_name(pod_name: str, volume_name: str) -> str:
    """``ephemeral.VolumeClaimName``: ``<pod>-<volume>``."""
    return f"{pod_name}-{volume_name}"


def _key(obj: dict[str, Any]) -> str:
    md = obj.get("metadata") or {}
    return f"{md.get('namespace') or 'default'}/{md.get('name')}"


def _ephemeral_volumes(pod: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for v in (pod.get("spec") or {}).get("volumes") or []:
        eph = v.get("ephemeral") if isinstance(v, dict) else None
        template = eph.get("volumeClaimTemplate") if isinstance(eph, dict) else None
        if isinstance(template, dict) and isinstance(v.get("name"), str):
            out.append((v["name"], template))
    return out


def _controlled_by(claim: dict[str, Any], uid: str) -> bool:
    return any(o.get("controller") is True and o.get("uid") == uid
               for o in (claim.get("metadata") or {}).get("ownerReferences") or [])


class EphemeralVolumeController:
    name = "ephemeral-volume-controller"
    watches: Final = frozenset({"Pod", "PersistentVolumeClaim"})

    def __init__(self, *, store: Store):
        self.store = store
        self.pods: dict[str, dict[str, Any]] = {}  # pods with ephemeral volumes, by key
        self._dirty: set[str] = set()
        self._gone: dict[str, str] = {}  # key -> uid of pods deleted, whose claims go

    def on_event(self, ev: WatchEvent) -> None:
        obj = ev.object
        key = _key(obj)
        if ev.kind == "Pod":
            if ev.type == "DELETED":
                if self.pods.pop(key, None) is not None:
                    self._gone[key] = str((obj.get("metadata") or {}).get("uid") or "")
                    self._dirty.add(key)
            elif _ephemeral_volumes(obj):
                self.pods[key] = obj
                self._dirty.add(key)
        elif ev.kind == "PersistentVolumeClaim" and ev.type == "DELETED":
            for o in (obj.get("metadata") or {}).get("ownerReferences") or []:
                if o.get("kind") == "Pod" and o.get("controller") is True:
                    owner = f"{(obj.get('metadata') or {}).get('namespace') or 'default'}/{o.get('name')}"
                    if owner in self.pods:
                        self._dirty.add(owner)

    def run(self, now: float) -> float | None:
        retry = False
        dirty, self._dirty = self._dirty, set()
        for key in sorted(dirty):
            uid = self._gone.pop(key, None)
            ok = self._delete_claims(key, uid) if uid is not None else self._sync(self.pods.get(key))
            if not ok:
                self._dirty.add(key)
                if uid is not None:
                    self._gone[key] = uid
                retry = True
        return now + _RETRY_SECONDS if retry else None

    def _sync(self, pod: dict[str, Any] | None) -> bool:
        """Create the pod's missing claims; False to retry."""
        if pod is None:
            return True
        md = pod.get("metadata") or {}
        if md.get("deletionTimestamp"):
            return True
        ns, name, uid = md.get("namespace") or "default", str(md.get("name")), str(md.get("uid") or "")
        ok = True
        for volume, template in _ephemeral_volumes(pod):
            claim_name = ephemeral_claim_name(name, volume)
            try:
                existing = self.store.get("PersistentVolumeClaim", ns, claim_name)
            except NotFound:
                existing = None
            if existing is not None:
                if not _controlled_by(existing, uid):
                    logger.info("ephemeral volume controller: PVC %s/%s was not created for the pod %s/%s", ns,
                                claim_name, ns, name)
                continue
            tmd = template.get("metadata") or {}
            claim = {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim_name, "namespace": ns,
                    "labels": dict(tmd.get("labels") or {}), "annotations": dict(tmd.get("annotations") or {}),
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid,
                                         "controller": True, "blockOwnerDeletion": True}],
                },
                "spec": clone(template.get("spec") or {}),
            }
            try:
                self.store.create(claim)
            except AlreadyExists:
                ok = False  # created meanwhile: look at it again
            except Invalid as e:
                # Pod validation checks the template, so only a template the API server would have
                # refused with the pod gets here: retrying cannot help.
                logger.warning("ephemeral volume controller: claim %s/%s for pod %s refused: %s", ns, claim_name,
                               name, e)
            except StoreError as e:
                logger.warning("ephemeral volume controller: claim %s/%s for pod %s not created: %s", ns, claim_name,
                               name, e)
                ok = False
        return ok

    def _delete_claims(self, key: str, uid: str) -> bool:
        ns = key.split("/", 1)[0]
        ok = True
        for claim in self.store.list("PersistentVolumeClaim", ns):
            if uid and _controlled_by(claim, uid):
                try:
                    self.store.delete("PersistentVolumeClaim", ns, str(claim["metadata"]["name"]))
                except NotFound:
                    pass
                except StoreError as e:
                    logger.warning("ephemeral volume controller: claim of deleted pod %s not deleted: %s", key, e)
                    ok = False
        return ok
