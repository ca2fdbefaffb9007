"""``pyvolcano scheduler``, ``controller-manager`` and ``fake-nodes``: the live components.

Flags and defaults are upstream's (``cmd/scheduler/app/options``,
``cmd/controller-manager/app/options``); durations are Go durations (``1s``, ``15s``). The
arguments are read as upstream's pflag reads them, and every other upstream flag is accepted,
honoured, ignored with one warning, or refused (:mod:`pyvolcano.cli.go_flags`), so that
upstream's chart runs these commands unchanged.
Each command connects with the usual client options, waits until its informers have synced,
optionally takes a Lease (``--leader-elect``), serves ``/healthz`` and ``/metrics`` when
enabled, and runs until SIGTERM or SIGINT. This module only reads and checks the flags; the
process runtime is :mod:`pyvolcano.runtime.component` (one runner for the scheduler and the
controller manager).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from pyvolcano.api.duration import DurationError, parse_duration_strict
from pyvolcano.cli.go_flags import CONTROLLER_MANAGER, SCHEDULER, go_command, klog_severity
from pyvolcano.cli.options import report_dir

if TYPE_CHECKING:
    from pyvolcano.runtime.component import ClientSettings, Component, ComponentError, Endpoints, LeaderElection

__all__ = ["register"]

logger = logging.getLogger("pyvolcano")


class UsageError(ValueError):
    pass


# Options the scheduler and the controller-manager share (upstream's component-base flags).
LeaderElect = Annotated[bool, typer.Option("--leader-elect/--no-leader-elect",
                                           help="Run leader election on a Lease (upstream's default)")]
LeaseDuration = Annotated[str, typer.Option(metavar="DURATION", help="Lease duration")]
RenewDeadline = Annotated[str, typer.Option(metavar="DURATION", help="Renew deadline")]
RetryPeriod = Annotated[str, typer.Option(metavar="DURATION", help="Retry period")]
LeaseNamespace = Annotated[str, typer.Option(metavar="NAMESPACE", help="Lease namespace")]
LockObjectNamespace = Annotated[str, typer.Option(metavar="NAMESPACE",
                                                  help="Deprecated: --leader-elect-resource-namespace")]
EnableHealthz = Annotated[bool, typer.Option("--enable-healthz/--no-enable-healthz", help="Serve /healthz")]
HealthzAddress = Annotated[str, typer.Option(metavar="ADDRESS", help="Address for /healthz")]
EnableMetrics = Annotated[bool, typer.Option("--enable-metrics/--no-enable-metrics", help="Serve /metrics")]
ApiQps = Annotated[float, typer.Option(metavar="QPS", help="QPS towards the API server")]
ApiBurst = Annotated[int, typer.Option(metavar="N", help="Burst towards the API server")]
MetricsAddress = Annotated[str, typer.Option(metavar="ADDRESS", help="Address for /metrics")]
Verbosity = Annotated[int, typer.Option("--v", "-v", metavar="LEVEL", help="Log verbosity (klog levels)")]
StderrThreshold = Annotated[str, typer.Option(
    "--stderrthreshold", metavar="SEVERITY", help="Log records at or above this severity go to stderr "
                                                  "(INFO, WARNING, ERROR, FATAL)")]


def _duration(flag: str, text: str) -> float:
    try:
        value = parse_duration_strict(text)
    except DurationError as e:
        raise UsageError(f"{flag}: {e}") from None
    if not value > 0 or value == float("inf"):
        raise UsageError(f"{flag}: got {text!r}; expected a positive duration such as 1s")
    return value


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {' '.join(str(message).split())}", err=True)
    return typer.Exit(code)


def _settings(
    kubeconfig: str | None, master: str | None, qps: float, burst: int, leader_elect: bool, lease_name: str,
    lease_namespace: str, lock_object_namespace: str, durations: tuple[str, str, str], enable_metrics: bool,
    listen_address: str, enable_healthz: bool, healthz_address: str,
) -> tuple[ClientSettings, LeaderElection, Endpoints]:
    """The flags every leader-elected component shares, as the runtime's settings."""
    from pyvolcano.runtime.component import ClientSettings, Endpoints, LeaderElection

    return (ClientSettings(kubeconfig, master, qps, burst),
            LeaderElection(leader_elect, lease_name, lease_namespace, lock_object_namespace, *durations),
            Endpoints(enable_metrics, listen_address, enable_healthz, healthz_address))


def _run(component: Component) -> NoReturn:
    """Run a component and exit with its code (a start failure: its message, then its code)."""
    from pyvolcano.runtime.component import ComponentError, run_component

    try:
        code = run_component(component)
    except ComponentError as e:
        raise _start_failure(e) from None
    raise typer.Exit(code)


def _start_failure(e: ComponentError) -> typer.Exit:
    """A component that could not start: its message (unless logged already) and exit code."""
    return _fail(e.message, e.code) if e.message else typer.Exit(e.code)


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


def print_version_and_exit(requested: bool) -> None:
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
    scheduler_slices = {"node-selector": True, "ignored-provisioners": True}
    app.command("scheduler", cls=go_command(SCHEDULER, scheduler_slices))(scheduler)
    app.command("controller-manager", cls=go_command(CONTROLLER_MANAGER, {"controllers": False}))(
        controller_manager)
    app.command("fake-nodes")(fake_nodes)


# ---------------------------------------------------------------------------- scheduler
def scheduler(
    kubeconfig: Annotated[str | None, typer.Option(metavar="FILE", help="Path to kubeconfig file")] = None,
    master: Annotated[str | None, typer.Option(metavar="URL", help="The address of the Kubernetes API server")] = None,
    scheduler_conf: Annotated[
        Path | None,
        typer.Option("--scheduler-conf", metavar="FILE", help="volcano-scheduler.conf (re-read when it changes)"),
    ] = None,
    schedule_period: Annotated[
        str, typer.Option(metavar="DURATION", help="The period between each scheduling cycle")
    ] = "1s",
    scheduler_name: Annotated[
        list[str] | None,
        typer.Option("--scheduler-name", metavar="NAME", help="Handle pods with this schedulerName (repeatable)"),
    ] = None,
    default_queue: Annotated[str, typer.Option(metavar="QUEUE", help="The default queue name of the job")] = "default",
    leader_elect: LeaderElect = True,
    leader_elect_lease_duration: LeaseDuration = "15s",
    leader_elect_renew_deadline: RenewDeadline = "10s",
    leader_elect_retry_period: RetryPeriod = "2s",
    leader_elect_resource_name: Annotated[str, typer.Option(metavar="NAME", help="Lease name")] = "volcano",
    leader_elect_resource_namespace: LeaseNamespace = "volcano-system",
    lock_object_namespace: LockObjectNamespace = "",
    enable_metrics: EnableMetrics = False,
    listen_address: MetricsAddress = ":8080",
    enable_healthz: EnableHealthz = False,
    healthz_address: HealthzAddress = ":11251",
    kube_api_qps: ApiQps = 2000.0,
    kube_api_burst: ApiBurst = 2000,
    percentage_nodes_to_find: Annotated[
        int, typer.Option(metavar="PERCENT", help="Percentage of nodes to find and score")
    ] = 0,
    minimum_feasible_nodes: Annotated[int, typer.Option(metavar="N", help="Minimum feasible nodes to find")] = 100,
    minimum_percentage_nodes_to_find: Annotated[
        int, typer.Option(metavar="PERCENT", help="Minimum percentage of nodes")
    ] = 5,
    node_selector: Annotated[
        list[str] | None,
        typer.Option(
            "--node-selector", metavar="KEY:VALUE", help="Only nodes with one of these labels, key:value (repeatable)"
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option(metavar="N", help="Seed for tie-breaking between equal nodes")] = None,
    skip_unchanged_unschedulable: Annotated[bool, typer.Option(
        "--skip-unchanged-unschedulable",
        help="pyvolcano extension: do not retry a job allocate could not place until resources are released, "
             "a node or queue changes, or the job changes (off: upstream retries every session)")] = False,
    ignored_provisioners: Annotated[list[str] | None, typer.Option(
        "--ignored-provisioners", metavar="NAME[,NAME]",
        help="Provisioners whose claims are not counted against the nodes' CSI attach limits (host-path "
             "provisioners such as rancher.io/local-path; repeatable or comma-separated)")] = None,
    record: Annotated[Path | None, typer.Option(
        "--record", metavar="DIR", callback=report_dir,
        help="Keep the inputs and decisions of the last sessions here (see pyvolcano replay)")] = None,
    record_sessions: Annotated[int, typer.Option(
        "--record-sessions", metavar="N", min=1, help="How many sessions --record keeps")] = 10,
    disable_default_scheduler_config: Annotated[bool, typer.Option(
        "--disable-default-scheduler-config",
        help="Refuse to start without --scheduler-conf instead of using upstream's default configuration")] = False,
    v: Verbosity = 0,
    stderrthreshold: StderrThreshold = "INFO",
    version: Annotated[bool, typer.Option("--version", help="Show version and quit")] = False,
) -> None:
    """vc-scheduler: a scheduling session every period on a real cluster."""
    print_version_and_exit(version)
    from pyvolcano.api.names import SCHEDULER_KINDS
    from pyvolcano.cache.cache import SchedulerOptions
    from pyvolcano.runtime.clock import local_time_zone
    from pyvolcano.runtime.component import Component, scheduler_work, setup_logging

    setup_logging(v, klog_severity(stderrthreshold))
    try:
        if disable_default_scheduler_config and scheduler_conf is None:
            raise UsageError("no --scheduler-conf path provided and default configuration fallback is disabled "
                             "(--disable-default-scheduler-config)")
        period = _duration("--schedule-period", schedule_period)
        for sel in node_selector or ():
            if ":" not in sel:
                raise UsageError(f"--node-selector: got {sel!r}; expected key:value")
    except UsageError as e:
        raise _fail(str(e)) from None
    names = tuple(scheduler_name or ("volcano",))
    recorder = None
    if record is not None:
        from pyvolcano.runtime.recorder import SessionRecorder

        try:
            recorder = SessionRecorder(record, keep=record_sessions)
        except OSError as e:
            raise _fail(f"--record {record}: {e.strerror or e}") from None
    options = SchedulerOptions(
        scheduler_names=names,
        default_queue=default_queue,
        min_nodes_to_find=minimum_feasible_nodes,
        min_percentage_of_nodes_to_find=minimum_percentage_nodes_to_find,
        percentage_of_nodes_to_find=percentage_nodes_to_find,
        skip_unchanged_unschedulable=skip_unchanged_unschedulable,
        time_zone=local_time_zone(),
        ignored_provisioners=tuple(p for v in ignored_provisioners or () for p in v.split(",") if p),
    )
    metrics, registry = _scheduler_metrics(enable_metrics)
    work = scheduler_work(scheduler_names=names, conf_path=scheduler_conf, options=options, period=period, seed=seed,
                          metrics=metrics, node_selector=node_selector or (), recorder=recorder)
    client, election, endpoints = _settings(
        kubeconfig, master, kube_api_qps, kube_api_burst, leader_elect, leader_elect_resource_name,
        leader_elect_resource_namespace, lock_object_namespace,
        (leader_elect_lease_duration, leader_elect_renew_deadline, leader_elect_retry_period),
        enable_metrics, listen_address, enable_healthz, healthz_address)
    _run(Component("scheduler", "vc-scheduler", "vc-scheduler-leader-election", SCHEDULER_KINDS, client, election,
                   endpoints, registry, work))


def _scheduler_metrics(enabled: bool) -> tuple[Any, Any]:
    if not enabled:
        return None, None
    from pyvolcano.metrics.scheduler import SchedulerMetrics

    m = SchedulerMetrics()
    return m, m.registry


# ---------------------------------------------------------------------------- controller manager
def controller_manager(
    kubeconfig: Annotated[str | None, typer.Option(metavar="FILE", help="Path to kubeconfig file")] = None,
    master: Annotated[str | None, typer.Option(metavar="URL", help="The address of the Kubernetes API server")] = None,
    controllers: Annotated[
        str,
        typer.Option(
            metavar="LIST",
            help="Controllers to run: '*' or a comma list such as job-controller,queue-controller; -name disables one",
        ),
    ] = "*",
    scheduler_name: Annotated[
        list[str] | None,
        typer.Option(
            "--scheduler-name", metavar="NAME", help="Pods with this schedulerName get a PodGroup (repeatable)"
        ),
    ] = None,
    leader_elect: LeaderElect = True,
    leader_elect_lease_duration: LeaseDuration = "15s",
    leader_elect_renew_deadline: RenewDeadline = "10s",
    leader_elect_retry_period: RetryPeriod = "2s",
    leader_elect_resource_name: Annotated[
        str, typer.Option(metavar="NAME", help="Lease name")
    ] = "vc-controller-manager",
    leader_elect_resource_namespace: LeaseNamespace = "volcano-system",
    lock_object_namespace: LockObjectNamespace = "",
    enable_healthz: EnableHealthz = False,
    healthz_address: HealthzAddress = ":11251",
    enable_metrics: EnableMetrics = False,
    listen_address: MetricsAddress = ":8081",
    kube_api_qps: ApiQps = 50.0,
    kube_api_burst: ApiBurst = 100,
    job_sync_batch_period: Annotated[
        str, typer.Option(metavar="DURATION",
                          help="Sync a job once for its pods' Pending/Running changes within this period "
                               "(as Kubernetes' job controller batches them); 0s syncs on every change, as "
                               "upstream does")
    ] = "1s",
    inherit_owner_annotations: Annotated[bool, typer.Option(
        "--inherit-owner-annotations/--no-inherit-owner-annotations",
        help="PodGroups of plain pods take their owners' volcano.sh/* annotations and "
             "scheduling.volcano.sh/group-min-member (upstream's default: true)")] = True,
    seed: Annotated[int | None, typer.Option(metavar="N", hidden=True,
                                             help="No longer used: keys and names come from the OS")] = None,
    v: Verbosity = 0,
    stderrthreshold: StderrThreshold = "INFO",
    version: Annotated[bool, typer.Option("--version", help="Show version and quit")] = False,
) -> None:
    """vc-controller-manager: the job, queue, podgroup, gc, hypernode, jobflow, jobtemplate and cronjob controllers
    on a real cluster."""
    print_version_and_exit(version)
    from pyvolcano.runtime.component import Component, controller_manager_work, setup_logging
    from pyvolcano.runtime.controller_manager import CONTROLLER_KINDS, CONTROLLERS, UPSTREAM_CONTROLLERS

    setup_logging(v, klog_severity(stderrthreshold))
    if seed is not None:
        logger.warning(
            "--seed is ignored: the controller-manager's SSH keys and generated names come from the operating "
            "system's randomness")
    try:
        enabled = _parse_controllers(controllers, CONTROLLERS, UPSTREAM_CONTROLLERS)
        batch_period = 0.0 if job_sync_batch_period.strip() in ("0", "0s") else \
            _duration("--job-sync-batch-period", job_sync_batch_period)
    except UsageError as e:
        raise _fail(str(e)) from None
    metrics = None
    if enable_metrics:
        from pyvolcano.metrics.controllers import ControllerMetrics

        metrics = ControllerMetrics()
    work = controller_manager_work(controllers=enabled, scheduler_names=tuple(scheduler_name or ("volcano",)),
                                   metrics=metrics, inherit_owner_annotations=inherit_owner_annotations,
                                   job_sync_batch_period=batch_period)
    client, election, endpoints = _settings(
        kubeconfig, master, kube_api_qps, kube_api_burst, leader_elect, leader_elect_resource_name,
        leader_elect_resource_namespace, lock_object_namespace,
        (leader_elect_lease_duration, leader_elect_renew_deadline, leader_elect_retry_period),
        enable_metrics, listen_address, enable_healthz, healthz_address)
    _run(Component("controller-manager", "vc-controller-manager", "vc-controller-manager-le", CONTROLLER_KINDS, client,
                   election, endpoints, None if metrics is None else metrics.registry, work))


def _parse_controllers(text: str, known: Sequence[str], upstream: Sequence[str] = ()) -> list[str]:
    """Upstream's ``--controllers`` (``isControllerEnabled``): ``*`` = all, ``name`` or ``+name``
    enables, ``-name`` disables, the first mention of a name deciding; a name with both signs is
    an error (``checkControllers``). An upstream controller pyvolcano lacks may be disabled
    silently; enabling it is a warning."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise UsageError("--controllers: expected '*' or controller names")
    seen: set[str] = set()
    for item in items:
        if item == "*":
            continue
        name = item[1:] if item[:1] in "+-" else item
        if name in seen:
            raise UsageError(f"--controllers: controllers option {item} cannot have both '-' and '+' prefixes")
        seen.add(name)
        if name not in known and name not in upstream:
            raise UsageError(f"--controllers: unknown controller {name!r}; expected some of {', '.join(known)}")
        if name not in known and item[:1] != "-":
            logger.warning("--controllers: upstream's %s is not implemented in pyvolcano; it does not run", name)

    def enabled(name: str) -> bool:
        for item in items:
            if item in (name, f"+{name}"):
                return True
            if item == f"-{name}":
                return False
        return "*" in items

    return [name for name in known if enabled(name)]


# ---------------------------------------------------------------------------- fake nodes
def fake_nodes(
    kubeconfig: Annotated[str | None, typer.Option(metavar="FILE", help="Path to kubeconfig file")] = None,
    master: Annotated[str | None, typer.Option(metavar="URL", help="The address of the Kubernetes API server")] = None,
    nodes: Annotated[
        Path | None, typer.Option("--nodes", metavar="FILE", help="Node manifests (YAML) to register")
    ] = None,
    count: Annotated[int, typer.Option(metavar="N", help="Register this many identical nodes (without --nodes)")] = 0,
    cpu: Annotated[str, typer.Option(metavar="QUANTITY", help="CPU of each --count node")] = "32",
    memory: Annotated[str, typer.Option(metavar="QUANTITY", help="Memory of each --count node")] = "256Gi",
    gpus: Annotated[int, typer.Option(metavar="N", help="nvidia.com/gpu of each --count node")] = 0,
    max_pods: Annotated[int, typer.Option("--max-pods", metavar="N", help="Pods per --count node")] = 110,
    prefix: Annotated[str, typer.Option(metavar="TEXT", help="Name prefix of --count nodes")] = "fake-node-",
    speed: Annotated[
        float, typer.Option(metavar="FACTOR", help="Divide every pod duration and grace period by this")
    ] = 1.0,
    default_duration: Annotated[
        str | None,
        typer.Option(
            metavar="DURATION",
            help="Runtime of pods without a pyvolcano.io/duration annotation, e.g. 30s (default: until deleted)",
        ),
    ] = None,
    numa_nodes: Annotated[int, typer.Option(
        metavar="N", help="NUMA nodes of each node without a pyvolcano.io/numa-nodes annotation; 1 or more "
        "writes a Numatopology per node (simulated resource exporter)")] = 0,
    topology_manager_policy: Annotated[str, typer.Option(
        metavar="POLICY", help="The nodes' topology manager policy: none, best-effort, restricted, single-numa-node"
    )] = "best-effort",
    cpu_manager_policy: Annotated[str, typer.Option(metavar="POLICY", help="The nodes' CPU manager policy")] = "static",
    reserved_cpus: Annotated[int, typer.Option(metavar="N", help="CPUs each node's CPU manager reserves")] = 0,
    dra: Annotated[
        bool, typer.Option("--dra", help="Publish each GPU node's GPUs as a ResourceSlice (driver gpu.nvidia.com)")
    ] = False,
    kube_api_qps: ApiQps = 500.0,
    kube_api_burst: ApiBurst = 1000,
    v: Annotated[int, typer.Option("--v", "-v", metavar="LEVEL", help="Log verbosity")] = 0,
) -> None:
    """Simulated kubelets: keep nodes Ready and run the pods bound to them (like KWOK)."""
    from pyvolcano.runtime.component import (
        ClientSettings,
        ComponentError,
        connect,
        setup_logging,
        stop_on_signals,
        sync,
    )
    from pyvolcano.runtime.fake_nodes import FakeNodes, make_nodes
    from pyvolcano.runtime.numa_exporter import NumaLayout, layout_error

    setup_logging(v)
    layout = NumaLayout(numa_nodes, topology_manager_policy, cpu_manager_policy, reserved_cpus)
    try:
        problem = layout_error(layout)
        if problem is not None:
            raise UsageError(f"--{problem.split(':')[0].replace(' ', '-')}:{problem.split(':', 1)[1]}")
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
    stop = stop_on_signals()
    try:
        store = connect(ClientSettings(kubeconfig, master, kube_api_qps, kube_api_burst), ("Pod",),
                        "pyvolcano-fake-nodes")
        sync(store, "fake-nodes")
    except ComponentError as e:
        raise _start_failure(e) from None
    fake = FakeNodes(store, manifests, speed=speed, default_duration=default_duration, numa_layout=layout, dra=dra)
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
