"""A pod's claims (``k8s.io/dynamic-resource-allocation/resourceclaim``).

:func:`claim_name` resolves one of a pod's ``spec.resourceClaims`` to its ResourceClaim's name:
the ``resourceClaimName`` it gives, or, for a ``resourceClaimTemplateName``, the claim the
ResourceClaim controller generated and wrote into the pod's ``status.resourceClaimStatuses``.
"""

from __future__ import annotations

from pyvolcano.api.dra.types import PodResourceClaim
from pyvolcano.api.objects import Pod

__all__ = ["ClaimNameError", "claim_name"]


class ClaimNameError(Exception):
    """``resourceclaim.Name`` failed: the pod's claim cannot be resolved (yet)."""


def claim_name(pod: Pod, pod_claim: PodResourceClaim) -> tuple[str, bool]:
    """``resourceclaim.Name``: (claim name, must check owner); ``""`` when no claim was generated
    for a template (the pod claim is skipped). Raises :class:`ClaimNameError`."""
    if pod_claim.resource_claim_name:
        return pod_claim.resource_claim_name, False
    if pod_claim.name in pod.resource_claim_statuses:
        return pod.resource_claim_statuses[pod_claim.name], True
    raise ClaimNameError(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
