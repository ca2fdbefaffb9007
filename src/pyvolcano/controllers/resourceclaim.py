"""kube-controller-manager's ResourceClaim controller (``pkg/controller/resourceclaim``).

Volcano leaves claims to Kubernetes: on a real cluster kube-controller-manager runs this
controller. The simulator (and a test API server without kube-controller-manager) runs this
one, which does what upstream's does for pods and their claims:

* **claims from templates**: for each pod claim with ``resourceClaimTemplateName`` that has no
  entry in ``status.resourceClaimStatuses``, a ResourceClaim is created from the template
  (its ``spec.spec``, labels and annotations), named ``<pod>-<claim>-<5 characters>``,
  controlled by the pod and annotated ``resource.kubernetes.io/pod-claim-name``; the pod's
  status then names it. A claim the pod already owns for that name is adopted instead, so a
  restart creates no second claim. Pods that are done get no claims;
* **releasing claims**: a ``reservedFor`` entry of a pod that is gone, replaced (another uid) or
  done is removed; a claim left reserved for nobody loses its allocation (the scheduler
  allocated it: "deallocation") and then the finalizer ``resource.kubernetes.io/delete-protection``;
* **deleting generated claims**: a claim generated for a pod that is done, replaced or seen
  deleted, and reserved for nobody, is deleted (upstream leaves the deleted pod's case to the
  garbage collector, which follows the owner reference; here the controller deletes it itself).

A pod is *done* when its phase is Succeeded or Failed, or it is being deleted without a node
(upstream ``isPodDone``). Writes that fail are retried on the next run.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from pyvolcano.api.dra.types import FINALIZER
from pyvolcano.controllers.entropy import Entropy
from pyvolcano.store.base import AlreadyExists, NotFound, Store, StoreError, WatchEvent, clone

__all__ = ["POD_CLAIM_NAME_ANNOTATION", "ResourceClaimController"]

logger = logging.getLogger(__name__)

POD_CLAIM_NAME_ANNOTATION: Final = "resource.kubernetes.io/pod-claim-name"
_RETRY_SECONDS: Final = 1.0


def _key(obj: dict[str, Any]) -> str:
    md = obj.get("metadata") or {}
    return f"{md.get('namespace') or 'default'}/{md.get('name')}"


def _pod_done(pod: dict[str, Any]) -> bool:
    md, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed") or (bool(md.get("deletionTimestamp")) and not spec.get("nodeName"))


def _owning_pod(claim: dict[str, Any]) -> tuple[str, str] | None:
    for o in (claim.get("metadata") or {}).get("ownerReferences") or []:
        if o.get("controller") is True and o.get("apiVersion") == "v1" and o.get("kind") == "Pod":
            return str(o.get("name")), str(o.get("uid"))
    return None


class ResourceClaimController:
    name = "resource-claim-controller"

    def __init__(self, *, store: Store, entropy: Entropy):
        self.store = store
        self.entropy = entropy
        self.pods: dict[str, dict[str, Any]] = {}
        self.claims: dict[str, dict[str, Any]] = {}
        self.templates: dict[str, dict[str, Any]] = {}
        self._dirty_pods: set[str] = set()
        self._dirty_claims: set[str] = set()
        # pod key -> claim keys that name the pod (reservedFor or owner)
        self._by_pod: dict[str, set[str]] = {}
        self._deleted_pods: set[str] = set()  # uids of pods seen deleted

    # ------------------------------------------------------------------ events
    def on_event(self, ev: WatchEvent) -> None:
        kind, obj = ev.kind, ev.object
        if kind == "Pod":
            key = _key(obj)
            if ev.type == "DELETED":
                self.pods.pop(key, None)
                self._deleted_pods.add(str((obj.get("metadata") or {}).get("uid") or ""))
            else:
                self.pods[key] = obj
                if (obj.get("spec") or {}).get("resourceClaims"):
                    self._dirty_pods.add(key)
            self._dirty_claims |= self._by_pod.get(key, set())
        elif kind == "ResourceClaim":
            key = _key(obj)
            if ev.type == "DELETED":
                self.claims.pop(key, None)
            else:
                self.claims[key] = obj
                self._dirty_claims.add(key)
                self._index(key, obj)
        elif kind == "ResourceClaimTemplate":
            key = _key(obj)
            if ev.type == "DELETED":
                self.templates.pop(key, None)
            else:
                self.templates[key] = obj
                ns = key.split("/", 1)[0]
                self._dirty_pods |= {k for k in self.pods if k.startswith(ns + "/")
                                     and (self.pods[k].get("spec") or {}).get("resourceClaims")}

    def _index(self, key: str, claim: dict[str, Any]) -> None:
        ns = key.split("/", 1)[0]
        names = {str(r.get("name")) for r in (claim.get("status") or {}).get("reservedFor") or []
                 if r.get("resource", "pods") == "pods"}
        owner = _owning_pod(claim)
        if owner is not None:
            names.add(owner[0])
        for name in names:
            self._by_pod.setdefault(f"{ns}/{name}", set()).add(key)

    # ------------------------------------------------------------------ work
    def run(self, now: float) -> float | None:
        retry = False
        pods, self._dirty_pods = self._dirty_pods, set()
        for key in sorted(pods):
            pod = self.pods.get(key)
            if pod is not None and not self._sync_pod(pod):
                self._dirty_pods.add(key)
                retry = True
        claims, self._dirty_claims = self._dirty_claims, set()
        for key in sorted(claims):
            claim = self.claims.get(key)
            if claim is not None and not self._sync_claim(key, claim):
                self._dirty_claims.add(key)
                retry = True
        return now + _RETRY_SECONDS if retry else None

    def _sync_pod(self, pod: dict[str, Any]) -> bool:
        """Create the pod's missing claims from their templates; False to retry."""
        if _pod_done(pod):
            return True
        md = pod.get("metadata") or {}
        ns, name, uid = md.get("namespace") or "default", str(md.get("name")), str(md.get("uid") or "")
        statuses = {s.get("name"): s for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
        added: list[dict[str, str]] = []
        for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
            template_name = pc.get("resourceClaimTemplateName")
            if not template_name or pc.get("name") in statuses:
                continue
            claim_name = self._existing(ns, uid, str(pc["name"])) or self._create(pod, ns, str(pc["name"]),
                                                                                 str(template_name))
            if claim_name is None:
                continue  # the template is not there (yet)
            added.append({"name": str(pc["name"]), "resourceClaimName": claim_name})
        if not added:
            return True
        entries = [*statuses.values(), *added]
        try:
            self.store.patch("Pod", ns, name, {"status": {"resourceClaimStatuses": entries}}, subresource="status")
        except NotFound:
            return True
        except StoreError as e:
            logger.warning("resource claim controller: pod %s/%s status not written: %s", ns, name, e)
            return False
        return True

    def _existing(self, ns: str, pod_uid: str, pod_claim: str) -> str | None:
        for key, claim in self.claims.items():
            if not key.startswith(ns + "/"):
                continue
            owner = _owning_pod(claim)
            anns = (claim.get("metadata") or {}).get("annotations") or {}
            if owner is not None and owner[1] == pod_uid and anns.get(POD_CLAIM_NAME_ANNOTATION) == pod_claim:
                return key.split("/", 1)[1]
        return None

    def _create(self, pod: dict[str, Any], ns: str, pod_claim: str, template_name: str) -> str | None:
        template = self.templates.get(f"{ns}/{template_name}")
        if template is None:
            try:
                template = self.store.get("ResourceClaimTemplate", ns, template_name)
            except StoreError:
                return None
        md = pod.get("metadata") or {}
        tmd = (template.get("spec") or {}).get("metadata") or {}
        prefix = f"{md.get('name')}-{pod_claim}"[:57]
        for _ in range(5):
            claim_name = f"{prefix}-{self.entropy.name_suffix(5)}"
            claim = {
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {
                    "name": claim_name, "namespace": ns,
                    "labels": dict(tmd.get("labels") or {}),
                    "annotations": {**(tmd.get("annotations") or {}), POD_CLAIM_NAME_ANNOTATION: pod_claim},
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": md.get("name"),
                                         "uid": md.get("uid"), "controller": True, "blockOwnerDeletion": True}],
                },
                "spec": clone((template.get("spec") or {}).get("spec") or {}),
            }
            try:
                created = self.store.create(claim)
            except AlreadyExists:
                continue
            except StoreError as e:
                logger.warning("resource claim controller: claim for pod %s/%s not created: %s", ns, md.get("name"), e)
                return None
            self.claims[_key(created)] = created
            self._index(_key(created), created)
            return claim_name
        return None

    def _valid(self, ns: str, ref: dict[str, Any]) -> bool:
        if ref.get("resource", "pods") != "pods" or ref.get("apiGroup"):
            return True  # not a pod: kept as it is
        pod = self.pods.get(f"{ns}/{ref.get('name')}")
        return pod is not None and (pod.get("metadata") or {}).get("uid") == ref.get("uid") and not _pod_done(pod)

    def _sync_claim(self, key: str, claim: dict[str, Any]) -> bool:
        """Release and delete as the module doc says; False to retry."""
        ns, name = key.split("/", 1)
        md, status = claim.get("metadata") or {}, claim.get("status") or {}
        reserved = status.get("reservedFor") or []
        valid = [r for r in reserved if self._valid(ns, r)]
        finalizers = list(md.get("finalizers") or [])
        try:
            if len(valid) != len(reserved) or (not valid and status.get("allocation") and md.get("deletionTimestamp")):
                obj = clone(claim)
                obj.setdefault("status", {})["reservedFor"] = valid
                if not valid and FINALIZER in finalizers:
                    obj["status"].pop("allocation", None)
                claim = self.store.update_status(obj)
                self.claims[key] = claim
                md, status = claim.get("metadata") or {}, claim.get("status") or {}
                finalizers = list(md.get("finalizers") or [])
            if FINALIZER in finalizers and not status.get("allocation") and not valid:
                obj = clone(claim)
                obj["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
                claim = self.store.update(obj)
                self.claims[key] = claim
            if not valid:
                owner = _owning_pod(claim)
                if owner is not None:
                    pod = self.pods.get(f"{ns}/{owner[0]}")
                    gone = owner[1] in self._deleted_pods if pod is None else (
                        (pod.get("metadata") or {}).get("uid") != owner[1] or _pod_done(pod))
                    if gone:
                        self.store.delete("ResourceClaim", ns, name)
        except NotFound:
            return True
        except StoreError as e:
            logger.warning("resource claim controller: claim %s not synced: %s", key, e)
            return False
        return True
