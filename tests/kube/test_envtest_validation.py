"""``pyvolcano validate`` against a real kube-apiserver: the same objects refused, at the same
fields, with the same messages.

Each object of the corpus below (dynamic resource allocation's kinds, the storage kinds, a
RuntimeClass, a Pod with claims and pod-level resources) is sent to the API server with
``kubectl create --dry-run=server``, and validated by pyvolcano's admission; both must refuse it
with the same ``(field, message)`` problems. The objects of ``examples/dra`` and
``examples/volumes`` of those kinds must be accepted by both. Differences documented in
docs/differences.md (label-selector message texts, a few pod checks) are kept out of the
corpus.

Needs ``KUBEBUILDER_ASSETS`` (etcd, kube-apiserver) and ``kubectl`` (on PATH or in the assets
directory); skipped with the reason otherwise.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir
from pyvolcano.store import InMemoryStore, StoreError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _kubectl() -> str | None:
    assets = assets_dir()
    found = shutil.which("kubectl")
    if found is None and assets is not None and (assets / "kubectl").is_file():
        found = str(assets / "kubectl")
    return found


KUBECTL = _kubectl()

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is neither on PATH nor in the assets directory"),
]

CORPUS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: broken-class}
spec:
  selectors:
  - cel: {expression: 'device.driver == '}
  - cel: {expression: '1 + 1'}
  - {}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: broken-claim, namespace: team}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {deviceClassName: gpu, count: -1}
    - name: gpus
      exactly: {deviceClassName: gpu, allocationMode: All, count: 2}
      firstAvailable: [{name: a, deviceClassName: gpu}]
    - name: Bad_Name
    - name: nic
      firstAvailable: [{name: x, deviceClassName: nic}, {name: x, deviceClassName: nic, allocationMode: Some}]
    constraints:
    - requests: [gpus, nope, gpus/x, nic/x]
      matchAttribute: numa
    - requests: [gpus]
    config:
    - requests: [q]
      opaque: {driver: gpu.example.com}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: broken-slice}
spec:
  driver: gpu.example.com
  pool: {name: n1, resourceSliceCount: 0, generation: -1}
  nodeName: n1
  allNodes: true
  devices:
  - name: gpu-0
    attributes:
      index: {int: 1, string: "x"}
      version: {version: "1.2"}
      bad-name: {int: 1}
  - name: gpu-0
    taints: [{key: k, effect: PreferNoSchedule}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: nowhere}
spec:
  driver: gpu.example.com
  pool: {name: n1, resourceSliceCount: 1}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: broken-template, namespace: team}
spec:
  metadata: {name: x, labels: {a: b}}
  spec:
    devices:
      requests:
      - name: r
        exactly: {deviceClassName: gpu, count: -3}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: broken-class}
provisioner: "bad provisioner"
reclaimPolicy: Recycle
volumeBindingMode: Later
allowedTopologies:
- matchLabelExpressions: [{key: zone, values: []}]
- {}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: broken-pv}
spec:
  capacity: {storage: "0", cpu: "1"}
  accessModes: [ReadWriteOncePod, ReadWriteOnce]
  local: {path: /mnt}
  hostPath: {path: /x}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-without-affinity}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  local: {path: /mnt}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: csi-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  nodeAffinity: {}
  csi: {driver: "", volumeHandle: h}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: broken-claim, namespace: team}
spec:
  resources: {requests: {cpu: "1"}}
  storageClassName: Bad_Class
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: empty-claim, namespace: team}
spec:
  accessModes: [ReadWriteOnce, ReadWriteOncePod]
  resources: {requests: {storage: "0"}}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: broken-node}
spec:
  drivers:
  - {name: ebs.csi.aws.com, nodeID: "", allocatable: {count: -1}}
  - {name: ebs.csi.aws.com, nodeID: i-1}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: "x_y"}
spec: {fsGroupPolicy: Weird, volumeLifecycleModes: [Persistent, Nope]}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: cap, namespace: team}
capacity: -1Gi
maximumVolumeSize: 1Gi
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: broken-runtime}
handler: Run_SC
overhead: {podFixed: {cpu: 250m, foo: "1"}}
---
apiVersion: v1
kind: Pod
metadata: {name: claims-and-pod-level, namespace: team}
spec:
  resources:
    requests: {cpu: "1"}
    limits: {cpu: 500m}
  resourceClaims:
  - {name: gpus}
  - {name: gpus, resourceClaimName: a, resourceClaimTemplateName: b}
  containers:
  - name: c
    image: i
    resources:
      requests: {cpu: "2"}
      limits: {cpu: "3"}
      claims: [{name: nope}]
"""

KINDS = {"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "StorageClass", "PersistentVolume",
         "PersistentVolumeClaim", "CSINode", "CSIDriver", "CSIStorageCapacity", "RuntimeClass"}
_PROBLEM = re.compile(r"^\* (\S+): (.*)$")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with ControlPlane() as cp:
        for ns in ("team", "default"):
            subprocess.run([str(KUBECTL), "--kubeconfig", str(cp.kubeconfig), "create", "namespace", ns],
                           capture_output=True, text=True, timeout=60)
        yield cp


def _server(cp: ControlPlane, doc: dict[str, Any]) -> list[tuple[str, str]]:
    """The problems the API server reports for ``doc`` (``[]``: it would create it)."""
    r = subprocess.run([str(KUBECTL), "--kubeconfig", str(cp.kubeconfig), "create", "--dry-run=server", "-o", "name",
                        "-f", "-"], input=yaml.safe_dump(doc), capture_output=True, text=True, timeout=60)
    if r.returncode == 0:
        return []
    lines = r.stderr.strip().splitlines()
    head = lines[0]
    if " is invalid: " in head and head.split(" is invalid: ", 1)[1].strip():
        path, _, msg = head.split(" is invalid: ", 1)[1].partition(": ")
        return [(path, msg)]
    found = []
    for line in lines[1:]:
        m = _PROBLEM.match(line)
        if m:
            found.append((m.group(1), m.group(2)))
        elif found:  # a message that went on over several lines (a CEL error's excerpt)
            found[-1] = (found[-1][0], f"{found[-1][1]}\n{line}")
    assert found, r.stderr
    return found


def _ours(doc: dict[str, Any]) -> list[tuple[str, str]]:
    from pyvolcano.admission import VolcanoAdmission

    store = InMemoryStore(clock=lambda: 0.0, admission=VolcanoAdmission())
    try:
        store.create(doc)
    except StoreError as e:
        return list(getattr(e, "errors", None) or [("", str(e))])
    return []


def _normalized(problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    # The API server writes a struct's value with Go's field names; a CEL excerpt keeps its lines.
    return sorted((path, re.sub(r"\s+", " ", msg.replace("\\n", "\n"))) for path, msg in problems)


@pytest.mark.parametrize("doc", [d for d in yaml.safe_load_all(CORPUS) if d],
                         ids=lambda d: f"{d['kind']}-{d['metadata']['name']}")
def test_an_invalid_object_is_refused_at_the_same_fields_with_the_same_messages(api: ControlPlane,
                                                                                doc: dict[str, Any]) -> None:
    server = _server(api, doc)
    assert server, "the API server accepted it"
    assert _normalized(_ours(doc)) == _normalized(server)


def _example_docs() -> list[dict[str, Any]]:
    out = []
    for path in sorted([*EXAMPLES.glob("dra/*.yaml"), *EXAMPLES.glob("volumes/*.yaml")]):
        out += [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") in KINDS]
    return out


@pytest.mark.parametrize("doc", _example_docs(), ids=lambda d: f"{d['kind']}-{d['metadata']['name']}")
def test_the_examples_objects_are_accepted_by_both(api: ControlPlane, doc: dict[str, Any]) -> None:
    assert _server(api, doc) == []
    assert _ours(doc) == []
