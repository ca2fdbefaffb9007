"""Fault scenarios on a real control plane: restarts of kube-apiserver and etcd, ``kill -9`` of the
components, a watch that expires during a burst, a scheduler cut off for longer than its lease.

A :class:`ChaosCluster` is an :class:`~pyvolcano.kube.envtest.ControlPlane` with Volcano's bundle
applied and every component running as its own process, as deployed: ``admission``, two
``controller-manager`` and two ``scheduler`` replicas with leader election (upstream's lease
15 s, renew deadline 10 s, retry 2 s), and ``fake-nodes``. A supervisor thread restarts a
component that exits one second later, as a Deployment's kubelet would (without the kubelet's
growing crash-loop back-off). Every component reaches the API server through its own
:class:`Relay`, a TCP relay that can cut the component off without touching the others.

:func:`run_scenario` submits the workload (two-pod vcjobs of ``duration``, spread over the
scenario, each submission retried until the API server takes it, as a user's script would),
injects the fault, waits for every job to finish, and returns a :class:`Result`: the
invariants :func:`pyvolcano.kube.chaos.check` found broken, the recovery time (from the fault's
end to the first pod bound after it) and the work done while the fault lasted (pods bound and
jobs completed). A fault "ends" when what it broke is back: the restarted API server answers
``/readyz``, the relay is healed; a ``kill -9`` ends the moment it is sent, so its recovery
includes the restart or the standby's takeover. When the next fault of a scenario begins
before anything was bound after a fault, that fault's recovery is the next one's (noted as
``overlapped``). After the run the scenario's Jobs, PodGroups and Pods are deleted.

``tests/chaos`` asserts on the results; ``benchmarks/chaos_recovery.py`` prints them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyvolcano.kube.chaos import FINAL_JOB_PHASES, Observer, check, snapshot, vcjob
from pyvolcano.kube.envtest import ControlPlane, issue_cert
from pyvolcano.store.base import AlreadyExists, StoreError, Unavailable

__all__ = ["LEASE_SECONDS", "SCENARIOS", "ChaosCluster", "FaultResult", "Relay", "Result", "Scenario", "Workload",
           "run_scenario"]

logger = logging.getLogger(__name__)

LEASE_SECONDS = 15.0
"""The components' lease duration (upstream's default); recovery must come within two."""

NS = "volcano-system"


class Relay:
    """A TCP relay from a local port to the API server that can be cut for a while."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._cut_until = 0.0
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name=f"relay-{self.port}", daemon=True).start()

    def cut(self, seconds: float) -> None:
        """Reset every connection and refuse new ones for ``seconds``."""
        with self._lock:
            self._cut_until = time.monotonic() + seconds
            conns, self._conns = self._conns, set()
        for c in conns:
            # shutdown first: it sends the FIN and wakes the pump blocked in select at once,
            # where a bare close from this thread leaves the peer waiting for the pump's timeout.
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                c.close()

    def close(self) -> None:
        self._closed = True
        self.cut(0)
        with contextlib.suppress(OSError):
            self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if time.monotonic() < self._cut_until:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._conns |= {client, upstream}
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 1.0)
                if self._closed:
                    return
                for src in ready:
                    data = src.recv(65536)
                    if not data:
                        return
                    (b if src is a else a).sendall(data)
        except (OSError, ValueError):
            return
        finally:
            with self._lock:
                self._conns -= {a, b}
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.close()


@dataclass
class _Process:
    name: str
    args: list[str]
    kubeconfig: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    exited_at: float | None = None
    restarts: int = 0


class ChaosCluster:
    """The control plane, the bundle and the components; :meth:`close` stops them all."""

    def __init__(self, workdir: Path, *, nodes: int = 4, node_cpu: int = 3, max_pods: int = 110,
                 lease: float = LEASE_SECONDS, restart_delay: float = 1.0):
        self.workdir = workdir
        self.cp = ControlPlane()
        self.cp.start()
        self.lease = lease
        self.restart_delay = restart_delay
        self.procs: dict[str, _Process] = {}
        self.relays: dict[str, Relay] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._kubectl = os.environ.get("KUBECTL", "kubectl")
        port = int(self.cp.url.rsplit(":", 1)[1])
        self._api = ("127.0.0.1", port)
        try:
            self._apply_bundle()
            self._start_components(nodes, node_cpu, max_pods)
            threading.Thread(target=self._supervise, name="supervisor", daemon=True).start()
            self.store = self._admin_store()
            self._wait(lambda: len(self.store.list("Node")) == nodes, 60, f"{nodes} fake nodes")
            self._wait(self._queue_ready, 60, "the default queue, known to admission")
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ set-up
    def kubectl(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self._kubectl, "--kubeconfig", str(self.cp.kubeconfig), *args], input=input,
                              capture_output=True, text=True, timeout=120)

    def _apply_bundle(self) -> None:
        import yaml

        bundle = subprocess.run([sys.executable, "-m", "pyvolcano", "install", "--fake-nodes"], check=True,
                                capture_output=True, text=True).stdout
        docs = [d for d in yaml.safe_load_all(bundle) if d and d.get("kind") != "Deployment"]
        r = self.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
        if r.returncode != 0:
            raise RuntimeError(f"kubectl apply: {r.stderr}")
        self.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")

    def _kubeconfig(self, sa: str, name: str) -> Path:
        """The ServiceAccount's kubeconfig, through a relay of the component's own."""
        relay = self.relays[name] = Relay(self._api)
        path = self.cp.service_account_kubeconfig(NS, sa, self.workdir / f"{name}.kubeconfig")
        text = path.read_text().replace(self.cp.url, f"https://127.0.0.1:{relay.port}")
        path.write_text(text)
        return path

    def _start_components(self, nodes: int, node_cpu: int, max_pods: int) -> None:
        cert, key = issue_cert(self.cp.ca, "volcano-admission", hosts=("127.0.0.1",), server=True)
        certs = self.workdir / "certs"
        certs.mkdir(exist_ok=True)
        (certs / "tls.crt").write_bytes(cert)
        (certs / "tls.key").write_bytes(key)
        (certs / "ca.crt").write_bytes(self.cp.ca.ca_cert)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        lease = [f"--leader-elect-lease-duration={self.lease:g}s",
                 f"--leader-elect-renew-deadline={self.lease * 2 / 3:g}s",
                 f"--leader-elect-retry-period={self.lease * 2 / 15:g}s"]
        self._add("admission", "volcano-admission", [
            "admission", "--tls-cert-file", str(certs / "tls.crt"), "--tls-private-key-file",
            str(certs / "tls.key"), "--ca-cert-file", str(certs / "ca.crt"), "--listen-address", "127.0.0.1",
            "--port", str(port), "--webhook-url", f"https://127.0.0.1:{port}"])
        self._wait(lambda: self._has_webhooks(), 60, "the admission webhooks")
        for i in (1, 2):
            self._add(f"controller-manager-{i}", "volcano-controllers", ["controller-manager", *lease])
            self._add(f"scheduler-{i}", "volcano-scheduler", ["scheduler", *lease])
        self._add("fake-nodes", "volcano-fake-nodes", [
            "fake-nodes", "--count", str(nodes), "--cpu", str(node_cpu), "--memory", f"{max(8, node_cpu * 2)}Gi",
            "--max-pods", str(max_pods), "--speed", "1"])

    def _add(self, name: str, sa: str, args: list[str]) -> None:
        p = _Process(name, args, self._kubeconfig(sa, name), self.workdir / f"{name}.log")
        self.procs[name] = p
        self._launch(p)

    def _launch(self, p: _Process) -> None:
        with open(p.log, "ab") as log:
            p.proc = subprocess.Popen([sys.executable, "-m", "pyvolcano", *p.args, "--kubeconfig", str(p.kubeconfig)],
                                      stdout=log, stderr=log)
        p.exited_at = None

    def _has_webhooks(self) -> bool:
        r = self.kubectl("get", "validatingwebhookconfigurations", "-o", "name")
        return r.returncode == 0 and bool(r.stdout.strip())

    def _queue_ready(self) -> bool:
        import yaml

        probe = yaml.safe_dump(vcjob("probe", namespace="default"))
        return self.kubectl("apply", "--dry-run=server", "-f", "-", input=probe).returncode == 0

    def _admin_store(self) -> Any:
        from pyvolcano.kube import connect

        return connect(kubeconfig=str(self.cp.kubeconfig), kinds=(), start=False, qps=200, burst=400,
                       user_agent="chaos")

    def observer(self) -> Observer:
        """An :class:`Observer` on an informer of its own, reconnecting within half a second."""
        from pyvolcano.kube import connect

        store = connect(kubeconfig=str(self.cp.kubeconfig), kinds=("Pod", "Job"), start=False, user_agent="observer",
                        qps=200, burst=400)
        for r in store.reflectors:
            r.backoff = (0.1, 0.5)
        store.start()
        if not store.wait_for_sync(60):
            raise RuntimeError("the observer's informers did not sync")
        return Observer(store).start()

    @staticmethod
    def _wait(cond: Callable[[], Any], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")
            time.sleep(0.25)

    # ------------------------------------------------------------------ the supervisor
    def _supervise(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                for p in self.procs.values():
                    if p.proc is None or p.proc.poll() is None:
                        continue
                    now = time.monotonic()
                    if p.exited_at is None:
                        p.exited_at = now
                    elif now - p.exited_at >= self.restart_delay:
                        p.restarts += 1
                        self._launch(p)

    def kill(self, *names: str) -> None:
        """``kill -9`` the named components (the supervisor restarts them)."""
        with self._lock:
            for name in names:
                proc = self.procs[name].proc
                if proc is not None and proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait(10)

    def leader(self, component: str) -> str:
        """The replica (``scheduler-1``...) that most recently logged becoming leader."""
        best, at = "", -1.0
        for name, p in self.procs.items():
            if not name.startswith(component + "-") or not p.log.exists():
                continue
            for line in p.log.read_text(errors="replace").splitlines():
                if "became leader" in line:
                    stamp = _log_time(line)
                    if stamp >= at:
                        best, at = name, stamp
        return best

    def restarts(self) -> dict[str, int]:
        return {name: p.restarts for name, p in self.procs.items()}

    def log_count(self, text: str) -> int:
        return sum(p.log.read_text(errors="replace").count(text) for p in self.procs.values() if p.log.exists())

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            for p in self.procs.values():
                if p.proc is not None and p.proc.poll() is None:
                    p.proc.send_signal(signal.SIGTERM)
            for p in self.procs.values():
                if p.proc is not None:
                    try:
                        p.proc.wait(15)
                    except subprocess.TimeoutExpired:
                        p.proc.kill()
        for r in self.relays.values():
            r.close()
        self.cp.stop()


def _log_time(line: str) -> float:
    import datetime as dt

    try:
        return dt.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    except ValueError:
        return -1.0


# ---------------------------------------------------------------------- the workload
@dataclass(frozen=True)
class Workload:
    """``jobs`` two-pod vcjobs of ``duration`` seconds, submitted evenly over ``spread`` seconds."""

    jobs: int = 60
    duration: float = 5.0
    spread: float = 20.0
    cpu: str = "1"


class _Submitter:
    """Creates the jobs on schedule; a refused create is tried again every half second."""

    def __init__(self, store: Any, namespace: str, names: list[str], workload: Workload, start: float):
        self.store = store
        self.namespace = namespace
        self.pending = list(names)
        self.workload = workload
        self.start = start
        self.retries = 0
        self._thread = threading.Thread(target=self._run, name="submitter", daemon=True)

    def run(self) -> _Submitter:
        self._thread.start()
        return self

    def _run(self) -> None:
        total = len(self.pending)
        for i, name in enumerate(list(self.pending)):
            due = self.start + (self.workload.spread * i / max(1, total))
            time.sleep(max(0.0, due - time.monotonic()))
            job = vcjob(name, namespace=self.namespace, duration=f"{self.workload.duration:g}s",
                        cpu=self.workload.cpu)
            while True:
                try:
                    self.store.create(job)
                    break
                except AlreadyExists:
                    break  # a create whose reply was lost
                except StoreError as e:
                    if not isinstance(e, Unavailable) and "webhook" not in str(e):
                        logger.warning("job %s refused: %s", name, e)
                    self.retries += 1
                    time.sleep(0.5)
            self.pending.remove(name)

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()


@dataclass
class FaultResult:
    """One fault of a scenario: when it came, how long it lasted, what got done meanwhile."""

    name: str
    at: float                          # seconds after the first submission
    seconds: float = 0.0
    recovery: float | None = None      # fault end -> first pod bound after it (None: see notes)
    binds_during: int = 0
    completed_during: int = 0
    notes: dict[str, Any] = field(default_factory=dict)


@dataclass
class Result:
    scenario: str
    jobs: int
    seconds: float = 0.0               # from the first submission to the last job finished
    faults: list[FaultResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    restarts: dict[str, int] = field(default_factory=dict)
    submit_retries: int = 0



Fault = Callable[[ChaosCluster], dict[str, Any] | None]


def _apiserver_restart(down: float) -> Fault:
    def fault(c: ChaosCluster) -> None:
        c.cp.kill("kube-apiserver")
        time.sleep(down)
        c.cp.restart("kube-apiserver")
    return fault


def _etcd_restart(down: float) -> Fault:
    def fault(c: ChaosCluster) -> None:
        c.cp.kill("etcd")
        time.sleep(down)
        c.cp.restart("etcd")
    return fault


def _both_restart(down: float) -> Fault:
    def fault(c: ChaosCluster) -> None:
        c.cp.kill("kube-apiserver")
        c.cp.kill("etcd")
        time.sleep(down)
        c.cp.restart("etcd", wait=False)
        c.cp.restart("kube-apiserver")
    return fault


def _kill(*components: str) -> Fault:
    def fault(c: ChaosCluster) -> dict[str, Any]:
        names = [(c.leader(x) or f"{x}-1") if x in ("scheduler", "controller-manager") else x for x in components]
        c.kill(*names)
        return {"killed": names}
    return fault


def _watch_expiry(c: ChaosCluster) -> dict[str, Any]:
    # A restarted API server's watch cache starts at etcd's current revision: every informer
    # resuming from an older resourceVersion is answered 410 Gone and relists.
    before = c.log_count("expired; relisting")
    c.cp.kill("kube-apiserver")
    c.cp.restart("kube-apiserver")
    time.sleep(3.0)
    return {"relists": c.log_count("expired; relisting") - before}


def _cut_off_scheduler(seconds: float) -> Fault:
    def fault(c: ChaosCluster) -> None:
        for name, relay in c.relays.items():
            if name.startswith("scheduler-"):
                relay.cut(seconds)
        time.sleep(seconds)
    return fault


@dataclass(frozen=True)
class Scenario:
    """Faults at given times (seconds after the first submission) while the workload runs;
    ``waves``: submission times of equal shares of the jobs (empty: spread evenly)."""

    name: str
    faults: tuple[tuple[str, float, Fault], ...]
    waves: tuple[float, ...] = ()


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("apiserver-restart", (("kube-apiserver down 10 s", 8.0, _apiserver_restart(10.0)),)),
    Scenario("etcd-restart", (("etcd down 10 s", 8.0, _etcd_restart(10.0)),)),
    Scenario("apiserver-and-etcd-restart", (("both down 10 s", 8.0, _both_restart(10.0)),)),
    Scenario("kill-scheduler", (("kill -9 scheduler leader", 8.0, _kill("scheduler")),)),
    Scenario("kill-controller-manager", (("kill -9 controller-manager leader", 8.0, _kill("controller-manager")),)),
    Scenario("kill-admission", (("kill -9 admission", 8.0, _kill("admission")),)),
    Scenario("kill-fake-nodes", (("kill -9 fake-nodes", 8.0, _kill("fake-nodes")),)),
    Scenario("kill-all", (("kill -9 all components", 8.0,
                           _kill("scheduler", "controller-manager", "admission", "fake-nodes")),)),
    Scenario("watch-expiry-during-burst", (("410 during a burst", 1.0, _watch_expiry),), waves=(0.0,)),
    Scenario("scheduler-cut-off", (("scheduler cut off 20 s", 8.0, _cut_off_scheduler(LEASE_SECONDS + 5.0)),)),
    # The run of the issue that found the lost kubelet writes: three waves, kube-apiserver down
    # for 15 s after the first, etcd down for 10 s after the second.
    Scenario("waves-apiserver-then-etcd", (("kube-apiserver down 15 s", 15.0, _apiserver_restart(15.0)),
                                           ("etcd down 10 s", 45.0, _etcd_restart(10.0))),
             waves=(0.0, 35.0, 70.0)),
)}


def run_scenario(cluster: ChaosCluster, scenario: Scenario, workload: Workload, *, namespace: str,
                 timeout: float = 300.0) -> Result:
    """Run ``workload`` in ``namespace`` with ``scenario``'s faults; the :class:`Result`."""
    store = cluster.store
    with contextlib.suppress(AlreadyExists):
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    observer = cluster.observer()
    names = [f"{namespace}-{i:04d}" for i in range(workload.jobs)]
    restarts_before = cluster.restarts()
    start = time.monotonic()
    if scenario.waves:
        share = -(-len(names) // len(scenario.waves))
        submitters = [_Submitter(store, namespace, names[k * share:(k + 1) * share],
                                 Workload(workload.jobs, workload.duration, 0.0, workload.cpu), start + at).run()
                      for k, at in enumerate(scenario.waves)]
    else:
        submitters = [_Submitter(store, namespace, names, workload, start).run()]
    result = Result(scenario.name, workload.jobs)
    windows: list[tuple[float, float]] = []
    for name, at, fault in scenario.faults:
        time.sleep(max(0.0, start + at - time.monotonic()))
        fault_start = time.monotonic()
        notes = fault(cluster) or {}
        windows.append((fault_start, time.monotonic()))
        result.faults.append(FaultResult(name, fault_start - start, windows[-1][1] - fault_start, notes=notes))
    try:
        _wait_finished(store, namespace, submitters, len(names), start + timeout)
        result.seconds = time.monotonic() - start
        result.problems = _settled_problems(store, observer, namespace, deadline=time.monotonic() + 30)
    except TimeoutError as e:
        result.seconds = time.monotonic() - start
        result.problems = [str(e), *_problems(store, observer, namespace)]
    finally:
        observer.stop()
        getattr(observer.store, "stop", lambda: None)()
    for i, (f, (t0, t1)) in enumerate(zip(result.faults, windows, strict=True)):
        f.recovery = observer.recovery(t1)
        if f.recovery is not None and i + 1 < len(windows) and windows[i + 1][0] < t1 + f.recovery:
            # The next fault came before anything was bound: this one's recovery is that one's.
            f.notes["overlapped"] = result.faults[i + 1].name
            f.recovery = None
        f.binds_during = observer.binds_between(t0, t1)
        f.completed_during = sum(1 for t in observer.completed_at.values() if t0 <= t < t1)
    after = cluster.restarts()
    result.restarts = {k: v - restarts_before.get(k, 0) for k, v in after.items() if v != restarts_before.get(k, 0)}
    result.submit_retries = sum(s.retries for s in submitters)
    _clean_up(store, namespace)
    return result


def _clean_up(store: Any, namespace: str) -> None:
    """Delete the scenario's Jobs, PodGroups and Pods (nothing garbage-collects by owner on a
    bare control plane), so that the next scenario's restarts do not relist them."""
    for kind in ("Job", "PodGroup", "Pod"):
        try:
            objs = store.list(kind, namespace)
        except StoreError as e:
            logger.warning("clean-up of %s: %s", namespace, e)
            return
        for obj in objs:
            with contextlib.suppress(StoreError):
                store.delete(kind, namespace, obj["metadata"]["name"], grace_period_seconds=0)


def _wait_finished(store: Any, namespace: str, submitters: list[_Submitter], jobs: int, deadline: float) -> None:
    while True:
        try:
            listed = store.list("Job", namespace)
            done = sum(1 for j in listed if ((j.get("status") or {}).get("state") or {}).get("phase")
                       in FINAL_JOB_PHASES)
        except StoreError:
            done = -1
        unsubmitted = sum(len(s.pending) for s in submitters)
        if done == jobs and not unsubmitted:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{done} of {jobs} jobs finished before the deadline ({unsubmitted} not submitted)")
        time.sleep(0.5)


def _problems(store: Any, observer: Observer, namespace: str) -> list[str]:
    try:
        snap = snapshot(store, namespace)
    except StoreError as e:
        return [f"cannot read the cluster: {e}"]
    return check(snap, max_live_pods=observer.max_live_pods, double_binds=observer.double_binds)


def _settled_problems(store: Any, observer: Observer, namespace: str, *, deadline: float) -> list[str]:
    """The invariants once status has had until ``deadline`` to catch up with the pods."""
    while True:
        problems = _problems(store, observer, namespace)
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(0.5)
