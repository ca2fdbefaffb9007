"""Reading the resource.k8s.io/v1 kinds: every field read is checked and named when wrong."""

from __future__ import annotations

import pytest

from pyvolcano.api.manifest import ManifestError, load_manifest_text


def test_claim_pod_and_slice_read_into_typed_values() -> None:
    objs = load_manifest_text("""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - {name: r, firstAvailable: [{name: a, deviceClassName: gpu, count: 2}, {name: b, deviceClassName: gpu}]}
status:
  reservedFor: [{resource: pods, name: p, uid: u1}]
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec:
  containers: [{name: c}]
  resourceClaims: [{name: gpus, resourceClaimTemplateName: t}]
status:
  resourceClaimStatuses: [{name: gpus, resourceClaimName: p-gpus-abcde}]
""")
    claim = objs.resource_claims[0]
    assert [s.count for s in claim.requests[0].first_available] == [2, 1]
    assert claim.reserved_for_uid("u1")
    pod = objs.pods[0]
    assert pod.resource_claims[0].resource_claim_template_name == "t"
    assert pod.resource_claim_statuses == {"gpus": "p-gpus-abcde"}


@pytest.mark.parametrize(("doc", "message"), [
    ("""apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c}
spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu, count: -2}}]}}""",
     r"document 0 \(ResourceClaim default/c\): spec.devices.requests\[0\].exactly.count: got -2"),
    ("""apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c}
spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu}, firstAvailable: []}]}}""",
     r"spec.devices.requests\[0\]: expected exactly one of exactly, firstAvailable"),
    ("""apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec: {driver: d, nodeName: n, pool: {name: p}, devices: [{name: g, attributes: {v: {version: "1.2"}}}]}""",
     r"spec.devices\[0\].attributes.v.version: got '1.2'; expected a semantic version"),
    ("""apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec: {driver: d, pool: {name: p}}""",
     "expected exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection"),
    ("""apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c}], resourceClaims: [{name: g}]}""",
     r"spec.resourceClaims\[0\]: expected exactly one of resourceClaimName, resourceClaimTemplateName"),
])
def test_bad_field_is_named(doc: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        load_manifest_text(doc, "cluster.yaml")
