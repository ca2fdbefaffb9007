"""``pyvolcano scheduler``, ``controller-manager`` and ``fake-nodes``: the live components.

Flags and defaults are upstream's (``cmd/scheduler/app/options``,
``cmd/controller-manager/app/options``); durations are Go durations (``1s``, ``15s``).
Each command connects with the usual client options, waits until its informers have synced,
optionally takes a Lease (``--leader-elect``), serves ``/healthz`` and ``/metrics`` when
enabled, and runs until SIGTERM or SIGINT.
"""

from __future__ import annotations

import logging
import random
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from pyvolcano.api.duration import DurationError, parse_duration_strict

__all__ = ["register"]

logger = logging.getLogger("pyvolcano")


class UsageError(ValueError):
    pass


def _duration(flag: str, text: str) -> float:
    try:
        value = parse_duration_strict(text)
    except DurationError as e:
        raise UsageError(f"{flag}: {e}") from None
    if not value > 0 or value == float("inf"):
        raise UsageError(f"{flag}: got {text!r}; expected a positive duration such as 1s")
    return value


def _setup_logging(verbosity: int) -> None:
    level = logging.DEBUG if verbosity >= 4 else logging.INFO if verbosity >= 0 else logging.WARNING
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname).1s %(name)s] %(message)s")
    # One line per HTTP request only at klog's request-tracing verbosity (--v=6).
    for name in ("httpx2", "httpcore2", "httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.DEBUG if verbosity >= 6 else logging.WARNING)


def _stop_event() -> threading.Event:
    stop = threading.Event()

    def handler(signum: int, _frame: Any) -> None:
        logger.info("signal %d: stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {' '.join(str(message).split())}", err=True)
    return typer.Exit(2)


def _connect(kubeconfig: str | None, master: str | None, qps: float, burst: int, kinds: Sequence[str],
             user_agent: str) -> Any:
    from pyvolcano.kube import connect

    try:
        return connect(kubeconfig=kubeconfig, master=master, qps=qps, burst=burst, kinds=kinds, start=False,
                       user_agent=user_agent)
    except ValueError as e:
        raise _fail(str(e)) from None


def _sync(store: Any, what: str, timeout: float = 60.0) -> None:
    store.start()
    if not store.wait_for_sync(timeout):
        logger.error("%s: informers did not sync within %.0fs", what, timeout)
        raise typer.Exit(1)
    logger.info("%s: informers synced (%s)", what, ", ".join(store.kinds))


def _serve(enable_healthz: bool, healthz_address: str, enable_metrics: bool, listen_address: str,
           registry: Any, healthy: Callable[[], bool]) -> list[Any]:
    servers: list[Any] = []
    if not (enable_healthz or enable_metrics):
        return servers
    from pyvolcano.kube import httpserve  # type: ignore[attr-defined,unused-ignore]

    if enable_metrics and enable_healthz and listen_address == healthz_address:
        servers.append(httpserve.serve(listen_address, registry=registry, healthz=healthy))
        return servers
    if enable_metrics:
        servers.append(httpserve.serve(listen_address, registry=registry))
    if enable_healthz:
        servers.append(httpserve.serve(healthz_address, healthz=healthy))
    return servers


def _run_with_leader_election(*, enabled: bool, store_factory: Callable[[], Any], lock_store: Any,
                              lock_namespace: str, lock_name: str, lease: tuple[float, float, float],
                              run: Callable[[Any, threading.Event], None], stop: threading.Event) -> int:
    """Run ``run(store, stop)``; with leader election only while holding the Lease. Losing it
    ends the process, as upstream's ``OnStoppedLeading`` (``klog.Fatalf("leaderelection lost")``)."""
    if not enabled:
        store = store_factory()
        run(store, stop)
        return 0
    from pyvolcano.kube.leaderelection import LeaderElector  # type: ignore[attr-defined,unused-ignore]

    lost = threading.Event()
    started = threading.Event()
    holder: dict[str, Any] = {}

    def on_started() -> None:
        started.set()

    def on_stopped() -> None:
        if started.is_set():
            logger.error("leaderelection lost")
            lost.set()
            stop.set()

    elector = LeaderElector(lock_store, namespace=lock_namespace, name=lock_name, lease_duration=lease[0],
                            renew_deadline=lease[1], retry_period=lease[2])
    t = threading.Thread(target=elector.run, kwargs={"stop": stop, "on_started_leading": on_started,
                                                      "on_stopped_leading": on_stopped}, daemon=True)
    t.start()
    while not started.wait(0.2):
        if stop.is_set():
            return 0
    logger.info("became leader of %s/%s as %s", lock_namespace, lock_name, elector.identity)
    holder["store"] = store_factory()
    run(holder["store"], stop)
    return 1 if lost.is_set() else 0


GO_BOOL_FLAGS = ("--leader-elect", "--enable-metrics", "--enable-healthz", "--enable-queue-allocated-pods-check",
                 "--enable-root-queue-protection")


def normalize_go_bools(argv: list[str]) -> list[str]:
    """Accept Go's ``--flag=true`` / ``--flag=false`` for the boolean flags above."""
    out = []
    for a in argv:
        name, eq, value = a.partition("=")
        if eq and name in GO_BOOL_FLAGS and value.lower() in ("true", "false", "1", "0"):
            out.append(name if value.lower() in ("true", "1") else "--no-" + name[2:])
        else:
            out.append(a)
    return out


def _print_version_and_exit(requested: bool) -> None:
    if not requested:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("pyvolcano")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        v = "unknown"
    typer.echo(f"pyvolcano {v} (Volcano-compatible)")
    raise typer.Exit(0)


def register(app: typer.Typer) -> None:
    app.command("scheduler")(scheduler)
    app.command("controller-manager")(controller_manager)
    app.command("fake-nodes")(fake_nodes)


# ---------------------------------------------------------------------------- scheduler
def scheduler(
    kubeconfig: Annotated[str | None, typer.Option(help="Path to kubeconfig file")] = None,
    master: Annotated[str | None, typer.Option(help="The address of the Kubernetes API server")] = None,
    scheduler_conf: Annotated[Path | None, typer.Option("--scheduler-conf", help="volcano-scheduler.conf "
                                                        "(re-read when it changes)")] = None,
    schedule_period: Annotated[str, typer.Option(help="The period between each scheduling cycle")] = "1s",
    scheduler_name: Annotated[list[str] | None, typer.Option("--scheduler-name", help="Handle pods with this "
                                                             "schedulerName (repeatable)")] = None,
    default_queue: Annotated[str, typer.Option(help="The default queue name of the job")] = "default",
    leader_elect: Annotated[bool, typer.Option("--leader-elect/--no-leader-elect",
                                               help="Run leader election on a Lease (upstream's default)")] = True,
    leader_elect_lease_duration: Annotated[str, typer.Option(help="Lease duration")] = "15s",
    leader_elect_renew_deadline: Annotated[str, typer.Option(help="Renew deadline")] = "10s",
    leader_elect_retry_period: Annotated[str, typer.Option(help="Retry period")] = "2s",
    leader_elect_resource_name: Annotated[str, typer.Option(help="Lease name")] = "volcano",
    leader_elect_resource_namespace: Annotated[str, typer.Option(help="Lease namespace")] = "volcano-system",
    lock_object_namespace: Annotated[str, typer.Option(help="Deprecated: --leader-elect-resource-namespace")] = "",
    enable_metrics: Annotated[bool, typer.Option("--enable-metrics/--no-enable-metrics",
                                                 help="Serve /metrics")] = False,
    listen_address: Annotated[str, typer.Option(help="Address for /metrics")] = ":8080",
    enable_healthz: Annotated[bool, typer.Option("--enable-healthz/--no-enable-healthz",
                                                 help="Serve /healthz")] = False,
    healthz_address: Annotated[str, typer.Option(help="Address for /healthz")] = ":11251",
    kube_api_qps: Annotated[float, typer.Option(help="QPS towards the API server")] = 2000.0,
    kube_api_burst: Annotated[int, typer.Option(help="Burst towards the API server")] = 2000,
    percentage_nodes_to_find: Annotated[int, typer.Option(help="Percentage of nodes to find and score")] = 0,
    minimum_feasible_nodes: Annotated[int, typer.Option(help="Minimum feasible nodes to find")] = 100,
    minimum_percentage_nodes_to_find: Annotated[int, typer.Option(help="Minimum percentage of nodes")] = 5,
    node_selector: Annotated[list[str] | None, typer.Option("--node-selector", help="Only nodes with one of "
                                                            "these labels, key:value (repeatable)")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for tie-breaking between equal nodes")] = None,
    v: Annotated[int, typer.Option("--v", "-v", help="Log verbosity (klog levels)")] = 0,
    version: Annotated[bool, typer.Option("--version", help="Show version and quit")] = False,
) -> None:
    """vc-scheduler: a scheduling session every period on a real cluster."""
    _print_version_and_exit(version)
    from pyvolcano.cache.cache import SchedulerOptions
    from pyvolcano.conf import ConfigError
    from pyvolcano.framework.arguments import ArgumentError
    from pyvolcano.runtime.scheduler import SCHEDULER_KINDS, LiveScheduler

    _setup_logging(v)
    try:
        period = _duration("--schedule-period", schedule_period)
        lease = tuple(_duration(f, x) for f, x in (("--leader-elect-lease-duration", leader_elect_lease_duration),
                                                   ("--leader-elect-renew-deadline", leader_elect_renew_deadline),
                                                   ("--leader-elect-retry-period", leader_elect_retry_period)))
        for sel in node_selector or ():
            if ":" not in sel:
                raise UsageError(f"--node-selector: got {sel!r}; expected key:value")
    except UsageError as e:
        raise _fail(str(e)) from None
    names = tuple(scheduler_name or ("volcano",))
    options = SchedulerOptions(scheduler_names=names, default_queue=default_queue,
                               min_nodes_to_find=minimum_feasible_nodes,
                               min_percentage_of_nodes_to_find=minimum_percentage_nodes_to_find,
                               percentage_of_nodes_to_find=percentage_nodes_to_find)
    stop = _stop_event()
    metrics, registry = _scheduler_metrics(enable_metrics)
    state: dict[str, Any] = {}

    def make_store() -> Any:
        store = _connect(kubeconfig, master, kube_api_qps, kube_api_burst, SCHEDULER_KINDS, "vc-scheduler")
        _sync(store, "scheduler")
        return store

    def run(store: Any, stop_: threading.Event) -> None:
        import socket

        from pyvolcano.kube.events import EventRecorder
        from pyvolcano.runtime.clock import wall_seconds

        events = EventRecorder(store, controller=names[0] if len(names) == 1 else "volcano",
                               instance=socket.gethostname(), clock=wall_seconds)
        try:
            sched = LiveScheduler(store, conf_path=scheduler_conf, options=options, period=period, seed=seed,
                                  metrics=metrics, node_selector=node_selector or (), events=events)
        except (ConfigError, ArgumentError, OSError) as e:
            raise _fail(f"{scheduler_conf}: {e}") from None
        state["sched"] = sched
        try:
            sched.run(stop_)
        finally:
            sched.close(wait=False)
            events.close()
            store.stop()

    lock_store = None
    if leader_elect:
        lock_store = _connect(kubeconfig, master, kube_api_qps, kube_api_burst, (), "vc-scheduler-leader-election")
    servers = _serve(enable_healthz, healthz_address, enable_metrics, listen_address, registry,
                     lambda: not stop.is_set())
    try:
        code = _run_with_leader_election(
            enabled=leader_elect, store_factory=make_store, lock_store=lock_store,
            lock_namespace=lock_object_namespace or leader_elect_resource_namespace,
            lock_name=leader_elect_resource_name, lease=lease, run=run, stop=stop)  # type: ignore[arg-type]
    finally:
        for s in servers:
            s.shutdown()
    raise typer.Exit(code)


def _scheduler_metrics(enabled: bool) -> tuple[Any, Any]:
    if not enabled:
        return None, None
    try:
        from pyvolcano.metrics import SchedulerMetrics  # type: ignore[attr-defined,unused-ignore]
    except ImportError:  # pragma: no cover - shipped with the package
        return None, None
    m = SchedulerMetrics()
    return m, m.registry


# ---------------------------------------------------------------------------- controller manager
def controller_manager(
    kubeconfig: Annotated[str | None, typer.Option(help="Path to kubeconfig file")] = None,
    master: Annotated[str | None, typer.Option(help="The address of the Kubernetes API server")] = None,
    controllers: Annotated[str, typer.Option(help="Controllers to run: '*' or a comma list such as "
                                             "job-controller,queue-controller; -name disables one")] = "*",
    worker_threads: Annotated[int, typer.Option(help="Workers of the job controller (accepted; work is "
                                                "serialised per object)")] = 3,
    scheduler_name: Annotated[list[str] | None, typer.Option("--scheduler-name", help="Pods with this "
                                                             "schedulerName get a PodGroup (repeatable)")] = None,
    leader_elect: Annotated[bool, typer.Option("--leader-elect/--no-leader-elect",
                                               help="Run leader election on a Lease (upstream's default)")] = True,
    leader_elect_lease_duration: Annotated[str, typer.Option(help="Lease duration")] = "15s",
    leader_elect_renew_deadline: Annotated[str, typer.Option(help="Renew deadline")] = "10s",
    leader_elect_retry_period: Annotated[str, typer.Option(help="Retry period")] = "2s",
    leader_elect_resource_name: Annotated[str, typer.Option(help="Lease name")] = "vc-controller-manager",
    leader_elect_resource_namespace: Annotated[str, typer.Option(help="Lease namespace")] = "volcano-system",
    lock_object_namespace: Annotated[str, typer.Option(help="Deprecated: --leader-elect-resource-namespace")] = "",
    enable_healthz: Annotated[bool, typer.Option("--enable-healthz/--no-enable-healthz",
                                                 help="Serve /healthz")] = False,
    healthz_address: Annotated[str, typer.Option(help="Address for /healthz")] = ":11251",
    enable_metrics: Annotated[bool, typer.Option("--enable-metrics/--no-enable-metrics",
                                                 help="Serve /metrics")] = False,
    listen_address: Annotated[str, typer.Option(help="Address for /metrics")] = ":8081",
    kube_api_qps: Annotated[float, typer.Option(help="QPS towards the API server")] = 50.0,
    kube_api_burst: Annotated[int, typer.Option(help="Burst towards the API server")] = 100,
    seed: Annotated[int, typer.Option(help="Seed for the controllers' random choices")] = 0,
    v: Annotated[int, typer.Option("--v", "-v", help="Log verbosity (klog levels)")] = 0,
    version: Annotated[bool, typer.Option("--version", help="Show version and quit")] = False,
) -> None:
    """vc-controller-manager: the job, queue, podgroup and gc controllers on a real cluster."""
    _print_version_and_exit(version)
    from pyvolcano.runtime.controller_manager import (
        CONTROLLER_KINDS,
        CONTROLLERS,
        LiveControllerManager,
        build_controllers,
    )

    _setup_logging(v)
    try:
        enabled = _parse_controllers(controllers, CONTROLLERS)
        lease = tuple(_duration(f, x) for f, x in (("--leader-elect-lease-duration", leader_elect_lease_duration),
                                                   ("--leader-elect-renew-deadline", leader_elect_renew_deadline),
                                                   ("--leader-elect-retry-period", leader_elect_retry_period)))
        if worker_threads < 1:
            raise UsageError(f"--worker-threads: got {worker_threads}; expected at least 1")
    except UsageError as e:
        raise _fail(str(e)) from None
    stop = _stop_event()

    def make_store() -> Any:
        store = _connect(kubeconfig, master, kube_api_qps, kube_api_burst, CONTROLLER_KINDS, "vc-controller-manager")
        _sync(store, "controller-manager")
        return store

    def run(store: Any, stop_: threading.Event) -> None:
        ctrls = build_controllers(store, random.Random(seed), enabled,
                                  scheduler_names=tuple(scheduler_name or ("volcano",)))
        try:
            LiveControllerManager(store, ctrls).run(stop_)
        finally:
            store.stop()

    lock_store = None
    if leader_elect:
        lock_store = _connect(kubeconfig, master, kube_api_qps, kube_api_burst, (), "vc-controller-manager-le")
    servers = _serve(enable_healthz, healthz_address, enable_metrics, listen_address, None, lambda: not stop.is_set())
    try:
        code = _run_with_leader_election(
            enabled=leader_elect, store_factory=make_store, lock_store=lock_store,
            lock_namespace=lock_object_namespace or leader_elect_resource_namespace,
            lock_name=leader_elect_resource_name, lease=lease, run=run, stop=stop)  # type: ignore[arg-type]
    finally:
        for s in servers:
            s.shutdown()
    raise typer.Exit(code)


def _parse_controllers(text: str, known: Sequence[str]) -> list[str]:
    """Upstream's ``--controllers``: ``*`` = all, ``name`` enables, ``-name`` disables."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise UsageError("--controllers: expected '*' or controller names")
    enabled: list[str] = []
    star = "*" in items
    for item in items:
        name = item.lstrip("-")
        if item != "*" and name not in known:
            raise UsageError(f"--controllers: unknown controller {name!r}; expected some of {', '.join(known)}")
    for name in known:
        if f"-{name}" in items:
            continue
        if star or name in items:
            enabled.append(name)
    return enabled


# ---------------------------------------------------------------------------- fake nodes
def fake_nodes(
    kubeconfig: Annotated[str | None, typer.Option(help="Path to kubeconfig file")] = None,
    master: Annotated[str | None, typer.Option(help="The address of the Kubernetes API server")] = None,
    nodes: Annotated[Path | None, typer.Option("--nodes", help="Node manifests (YAML) to register")] = None,
    count: Annotated[int, typer.Option(help="Register this many identical nodes (without --nodes)")] = 0,
    cpu: Annotated[str, typer.Option(help="CPU of each --count node")] = "32",
    memory: Annotated[str, typer.Option(help="Memory of each --count node")] = "256Gi",
    gpus: Annotated[int, typer.Option(help="nvidia.com/gpu of each --count node")] = 0,
    max_pods: Annotated[int, typer.Option("--max-pods", help="Pods per --count node")] = 110,
    prefix: Annotated[str, typer.Option(help="Name prefix of --count nodes")] = "fake-node-",
    speed: Annotated[float, typer.Option(help="Divide every pod duration and grace period by this")] = 1.0,
    default_duration: Annotated[str | None, typer.Option(help="Runtime of pods without a pyvolcano.io/duration "
                                                         "annotation, e.g. 30s (default: until deleted)")] = None,
    kube_api_qps: Annotated[float, typer.Option(help="QPS towards the API server")] = 500.0,
    kube_api_burst: Annotated[int, typer.Option(help="Burst towards the API server")] = 1000,
    v: Annotated[int, typer.Option("--v", "-v", help="Log verbosity")] = 0,
) -> None:
    """Simulated kubelets: keep nodes Ready and run the pods bound to them (like KWOK)."""
    from pyvolcano.runtime.fake_nodes import FakeNodes, make_nodes

    _setup_logging(v)
    try:
        if not speed > 0 or speed == float("inf"):
            raise UsageError(f"--speed: got {speed}; expected a positive number")
        if default_duration is not None:
            _duration("--default-duration", default_duration)
        if nodes is not None and count:
            raise UsageError("--nodes and --count: give one of them")
        if nodes is not None:
            manifests = _node_manifests(nodes)
        elif count:
            manifests = make_nodes(count, cpu=cpu, memory=memory, gpus=gpus, pods=max_pods, prefix=prefix)
        else:
            raise UsageError("expected --nodes FILE or --count N")
    except (UsageError, ValueError) as e:
        raise _fail(str(e)) from None
    stop = _stop_event()
    store = _connect(kubeconfig, master, kube_api_qps, kube_api_burst, ("Pod",), "pyvolcano-fake-nodes")
    _sync(store, "fake-nodes")
    fake = FakeNodes(store, manifests, speed=speed, default_duration=default_duration)
    fake.register()
    logger.info("fake-nodes: %d nodes registered", len(manifests))
    try:
        fake.run(stop)
    finally:
        store.stop()


def _node_manifests(path: Path) -> list[dict[str, Any]]:
    from pyvolcano.api.manifest import ManifestError, load_manifest_file

    try:
        objs = load_manifest_file(path, allow_other=True)
    except ManifestError as e:
        raise UsageError(str(e)) from None
    if not objs.nodes:
        raise UsageError(f"{path}: no Node documents")
    import yaml

    docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if isinstance(d, dict)]
    return [d for d in docs if d.get("kind") == "Node"]
