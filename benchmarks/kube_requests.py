"""The API server's CPU per request kind: what each write of the pipeline costs kube-apiserver + etcd.

    KUBEBUILDER_ASSETS=DIR [VOLCANO_BIN=DIR] python benchmarks/kube_requests.py [--requests 400]
        [--watchers 3] [--crds pyvolcano --crds volcano]

A fresh kube-apiserver + etcd per CRD set (pyvolcano's, from ``pyvolcano install``, and upstream
Volcano's from ``VOLCANO_CRDS`` or ``$VOLCANO_BIN/crds`` when set). ``--watchers`` informers
watch Pods, Jobs and PodGroups (the pipeline has three pod watchers: scheduler,
controller-manager, fake kubelets), so each write also pays its watch fan-out. Each kind of
request is sent ``--requests`` times from 8 threads, on distinct objects, and the figure is the
CPU time kube-apiserver and etcd spent (``/proc``, user + system) divided by the count, with
the request and response body sizes. The variants show what a request's shape costs: a JSON
merge patch against a PUT of the whole object, ``fieldValidation=Ignore`` against the server's
default, the response in protobuf (``Accept: application/vnd.kubernetes.protobuf``; core kinds
only) against JSON. Not a test: it prints figures only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pyvolcano.kube import connect
from pyvolcano.kube.envtest import ControlPlane, assets_dir

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The e2e benchmark's objects and helpers, one definition.
from kube_e2e import (
    _apply_bundle,
    _apply_volcano_crds,
    _batch_job,
    _cpu_seconds,
    _pod,
    _podgroup,
    _vcjob,
    volcano_dirs,
)

NS = "bench"


class Bench:
    def __init__(self, cp: ControlPlane, n: int) -> None:
        self.cp, self.n = cp, n
        self.c = connect(kubeconfig=str(cp.kubeconfig), kinds=(), qps=50_000, burst=50_000)
        self.client = self.c.client
        self.pids = [p.pid for p in cp._procs]
        self.rows: list[tuple[str, float, int, int]] = []

    def cpu(self) -> float:
        return sum(_cpu_seconds(p) for p in self.pids)

    def measure(self, label: str, calls: list[Callable[[], tuple[int, int]]]) -> None:
        """Run the calls on 8 threads; record the API server's CPU per call and the mean sizes."""
        time.sleep(1.0)  # let the previous batch's watch fan-out and compaction finish
        c0 = self.cpu()
        with ThreadPoolExecutor(8) as pool:
            sizes = list(pool.map(lambda f: f(), calls))
        time.sleep(1.0)
        used = self.cpu() - c0 - 2.0 * self._idle
        out = sum(s[0] for s in sizes) // len(sizes)
        back = sum(s[1] for s in sizes) // len(sizes)
        self.rows.append((label, used / len(calls), out, back))
        print(f"  {label:<58} {1e3 * used / len(calls):7.2f} ms   {out:6d} B out {back:7d} B back", flush=True)

    def idle(self) -> None:
        c0 = self.cpu()
        time.sleep(3.0)
        self._idle = (self.cpu() - c0) / 3.0
        print(f"  idle: {1e3 * self._idle:.1f} ms CPU per second (subtracted)", flush=True)

    def raw(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
            accept: str = "application/json", params: dict[str, Any] | None = None) -> tuple[int, int]:
        from pyvolcano.kube.client import _encode

        content = None if body is None else _encode(body)
        headers = {"Accept": accept}
        if content is not None:
            headers["Content-Type"] = content_type
        resp = self.client.transport.request(method, path, content=content, params=params, headers=headers)
        if resp.status >= 400:
            raise SystemExit(f"{method} {path}: {resp.status} {resp.content[:300]!r}")
        return len(content or b""), len(resp.content or b"")


def _status_condition(i: int) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                       "message": f"1/1 tasks in gang unschedulable: {i}",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}


def run(crds: str, n: int, watchers: int, env: dict[str, str]) -> None:
    print(f"\nCRDs: {crds}; {n} requests per kind; {watchers} watchers on Pods, Jobs, PodGroups", flush=True)
    with ControlPlane(extra_args=("--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000")) as cp:
        if crds == "volcano":
            d = volcano_dirs()
            assert not isinstance(d, str)
            _apply_volcano_crds(cp.kubeconfig, d[1])
        else:
            _apply_bundle(cp.kubeconfig, env)
        b = Bench(cp, n)
        b.c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        b.c.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                    "spec": {"weight": 1}})
        b.c.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"}})
        informers = [connect(kubeconfig=str(cp.kubeconfig), kinds=("Pod", "Job", "PodGroup"), qps=5000, burst=5000)
                     for _ in range(watchers)]
        for inf in informers:
            inf.wait_for_sync(60)
        time.sleep(2)
        b.idle()
        pods = "/api/v1/namespaces/bench/pods"
        vcjobs = "/apis/batch.volcano.sh/v1alpha1/namespaces/bench/jobs"
        pgs = "/apis/scheduling.volcano.sh/v1beta1/namespaces/bench/podgroups"
        bjobs = "/apis/batch/v1/namespaces/bench/jobs"
        pb = "application/vnd.kubernetes.protobuf"
        ign = {"fieldValidation": "Ignore"}

        def each(label: str, make: Callable[[int], Callable[[], tuple[int, int]]]) -> None:
            b.measure(label, [make(i) for i in range(n)])

        each("POST pods", lambda i: lambda: b.raw("POST", pods, _pod(f"a-{i}", f"a-{i}", "volcano")))
        each("POST pods ?fieldValidation=Ignore",
             lambda i: lambda: b.raw("POST", pods, _pod(f"b-{i}", f"b-{i}", "volcano"), params=ign))
        each("POST pods, response in protobuf",
             lambda i: lambda: b.raw("POST", pods, _pod(f"c-{i}", f"c-{i}", "volcano"), accept=pb))
        each("PATCH pods/status (merge patch: a condition)",
             lambda i: lambda: b.raw("PATCH", f"{pods}/a-{i}/status", _status_condition(i),
                                     content_type="application/merge-patch+json"))
        each("PATCH pods/status (strategic merge patch: a condition)",
             lambda i: lambda: b.raw("PATCH", f"{pods}/b-{i}/status", _status_condition(i),
                                     content_type="application/strategic-merge-patch+json"))
        each("PATCH pods/status, response in protobuf",
             lambda i: lambda: b.raw("PATCH", f"{pods}/c-{i}/status", _status_condition(i),
                                     content_type="application/merge-patch+json", accept=pb))
        each("POST pods/binding",
             lambda i: lambda: b.raw("POST", f"{pods}/a-{i}/binding", {
                 "apiVersion": "v1", "kind": "Binding", "metadata": {"name": f"a-{i}", "namespace": NS},
                 "target": {"apiVersion": "v1", "kind": "Node", "name": "n0"}}))
        each("POST events", lambda i: lambda: b.raw("POST", "/api/v1/namespaces/bench/events", {
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": f"a-{i}.e", "namespace": NS},
            "involvedObject": {"kind": "Pod", "namespace": NS, "name": f"a-{i}", "apiVersion": "v1"},
            "reason": "Scheduled", "message": f"Successfully assigned bench/a-{i} to n0", "type": "Normal",
            "source": {"component": "volcano"}, "count": 1, "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:00:00Z"}))
        each("POST jobs (vcjob, one task of 1)", lambda i: lambda: b.raw("POST", vcjobs, _vcjob(f"j-{i}", 1)))
        each("POST jobs (vcjob) ?fieldValidation=Ignore",
             lambda i: lambda: b.raw("POST", vcjobs, _vcjob(f"k-{i}", 1), params=ign))
        job_status = {"state": {"phase": "Pending", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                      "minAvailable": 1, "pending": 1, "taskStatusCount": {"t": {"phase": {"Pending": 1}}},
                      "conditions": [{"status": "Pending", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        each("PATCH jobs/status (vcjob, merge patch)",
             lambda i: lambda: b.raw("PATCH", f"{vcjobs}/j-{i}/status", {"status": job_status},
                                     content_type="application/merge-patch+json"))
        # A PUT sends the object read before (the reads are made before the measured batch).
        jobs_k = [b.client.request("GET", f"{vcjobs}/k-{i}") for i in range(n)]
        each("PUT jobs/status (vcjob, whole object)",
             lambda i: lambda: b.raw("PUT", f"{vcjobs}/k-{i}/status", {**jobs_k[i], "status": job_status}))
        each("POST podgroups", lambda i: lambda: b.raw("POST", pgs, _podgroup(f"p-{i}", 1)))
        each("POST podgroups ?fieldValidation=Ignore",
             lambda i: lambda: b.raw("POST", pgs, _podgroup(f"q-{i}", 1), params=ign))
        pg_status = {"phase": "Inqueue", "conditions": [{"type": "Scheduled", "status": "True",
                                                          "reason": "tasks in gang are ready to be scheduled",
                                                          "transitionID": "x", "message": "",
                                                          "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        each("PATCH podgroups (merge patch: the status)",
             lambda i: lambda: b.raw("PATCH", f"{pgs}/p-{i}", {"status": pg_status},
                                     content_type="application/merge-patch+json"))
        pgs_q = [b.client.request("GET", f"{pgs}/q-{i}") for i in range(n)]
        each("PUT podgroups (whole object)",
             lambda i: lambda: b.raw("PUT", f"{pgs}/q-{i}", {**pgs_q[i], "status": pg_status}))
        batch_status = {"active": 1, "ready": 0, "startTime": "2026-01-01T00:00:00Z"}
        each("POST jobs (batch/v1)", lambda i: lambda: b.raw("POST", bjobs, _batch_job(f"b-{i}", 1)))
        each("PATCH jobs/status (batch/v1, merge patch)",
             lambda i: lambda: b.raw("PATCH", f"{bjobs}/b-{i}/status", {"status": batch_status},
                                     content_type="application/merge-patch+json"))
        for inf in informers:
            inf.stop()
        b.c.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--watchers", type=int, default=3)
    ap.add_argument("--crds", choices=("pyvolcano", "volcano"), action="append")
    a = ap.parse_args()
    if assets_dir() is None:
        sys.exit("KUBEBUILDER_ASSETS must name a directory with etcd and kube-apiserver")
    sets = a.crds or ["pyvolcano"] + ([] if isinstance(volcano_dirs(), str) else ["volcano"])
    print("command:", " ".join([sys.executable, *sys.argv]))
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    env = dict(os.environ)
    for crds in sets:
        run(crds, a.requests, a.watchers, env)
    subprocess.run(["uptime"], check=False)


if __name__ == "__main__":
    main()
