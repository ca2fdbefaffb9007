"""The process runtime of the live components (vc-scheduler, vc-controller-manager, fake kubelets).

:func:`run_component` is the one run skeleton of a leader-elected component: stop on SIGTERM
or SIGINT; with leader election, a Lease client and a campaign; ``/metrics`` and ``/healthz``
servers when enabled; then, only while leading (upstream starts its scheduler and controllers
in ``OnStartedLeading``), a store connected for the component's kinds, its informers synced,
and the component's :data:`Work` run until stopped; the store and the servers stop on the way
out. Losing the lease ends the process at once with exit code 1, as upstream's
``OnStoppedLeading`` does (``klog.Fatalf("leaderelection lost")``).

:func:`scheduler_work` and :func:`controller_manager_work` are the two components' work. What
keeps a component from starting raises :class:`ComponentError` with the exit code (2: a bad
value or address; 1: informers did not sync); the command line prints its message and exits
with its code. Nothing here parses command-line flags.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyvolcano.cache.cache import SchedulerOptions
    from pyvolcano.runtime.recorder import SessionRecorder

__all__ = [
    "ClientSettings",
    "Component",
    "ComponentError",
    "Endpoints",
    "LeaderElection",
    "Work",
    "connect",
    "controller_manager_work",
    "run_component",
    "scheduler_work",
    "setup_logging",
    "stop_on_signals",
    "sync",
]

logger = logging.getLogger("pyvolcano")

# A component's work: run on a synced store until the event is set.
Work = Callable[[Any, threading.Event], None]


class ComponentError(Exception):
    """A component cannot start. ``message`` is empty when the cause was logged already."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """How to reach the API server."""

    kubeconfig: str | None
    master: str | None
    qps: float
    burst: int


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """Upstream's leader election settings; durations are Go durations."""

    enabled: bool
    resource_name: str
    resource_namespace: str
    lock_object_namespace: str
    lease_duration: str
    renew_deadline: str
    retry_period: str


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Which HTTP endpoints to serve, and where."""

    enable_metrics: bool
    listen_address: str
    enable_healthz: bool
    healthz_address: str


@dataclass(frozen=True, slots=True)
class Component:
    """One leader-elected component, as :func:`run_component` runs it."""

    name: str                       # in log lines: "scheduler: informers synced"
    user_agent: str
    lease_user_agent: str           # of the Lease client
    kinds: Sequence[str]
    client: ClientSettings
    election: LeaderElection
    endpoints: Endpoints
    metrics_registry: Any           # served on /metrics; None without metrics
    work: Work


def setup_logging(verbosity: int, stderr_threshold: int = logging.INFO) -> None:
    """klog-like verbosity: 4 and above debug, 0 and above info, below 0 warnings; records below
    ``stderr_threshold`` (klog's ``--stderrthreshold``, upstream's default INFO) are not written."""
    level = logging.DEBUG if verbosity >= 4 else logging.INFO if verbosity >= 0 else logging.WARNING
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname).1s %(name)s] %(message)s")
    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler and handler.stream is sys.stderr:
            # klog's V-levels are INFO records, which are DEBUG here at --v=4 and above.
            handler.setLevel(logging.NOTSET if stderr_threshold <= logging.INFO else stderr_threshold)
    # One line per HTTP request only at klog's request-tracing verbosity (--v=6).
    for name in ("httpx2", "httpcore2", "httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.DEBUG if verbosity >= 6 else logging.WARNING)


def stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT."""
    stop = threading.Event()

    def handler(signum: int, _frame: Any) -> None:
        logger.info("signal %d: stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop


def connect(client: ClientSettings, kinds: Sequence[str], user_agent: str) -> Any:
    """A store watching ``kinds``, informers not started yet."""
    from pyvolcano.kube import connect as kube_connect

    try:
        return kube_connect(kubeconfig=client.kubeconfig, master=client.master, qps=client.qps, burst=client.burst,
                            kinds=kinds, start=False, user_agent=user_agent)
    except ValueError as e:
        raise ComponentError(str(e)) from None


def sync(store: Any, what: str, timeout: float = 60.0) -> None:
    """Start the store's informers and wait until they have synced (exit code 1 otherwise)."""
    store.start()
    if not store.wait_for_sync(timeout):
        logger.error("%s: informers did not sync within %.0fs", what, timeout)
        raise ComponentError("", code=1)
    logger.info("%s: informers synced (%s)", what, ", ".join(store.kinds))


def _serve(endpoints: Endpoints, registry: Any) -> list[Any]:
    """Start ``/metrics`` on the listen address and ``/healthz`` on the healthz address (one
    server when both addresses are the same). A bad or busy address is a usage error."""
    from pyvolcano.kube.httpserve import HTTPEndpoints

    wanted: dict[str, dict[str, Any]] = {}
    if endpoints.enable_metrics:
        wanted.setdefault(endpoints.listen_address, {"flag": "--listen-address"})["registry"] = registry
    if endpoints.enable_healthz:
        wanted.setdefault(endpoints.healthz_address, {"flag": "--healthz-address"})["healthz"] = {}
    servers: list[Any] = []
    try:
        for address, kw in wanted.items():
            servers.append(HTTPEndpoints(address, **kw).start())
    except (ValueError, OSError) as e:
        for srv in servers:
            srv.stop()
        raise ComponentError(str(e)) from None
    return servers


def _election_config(election: LeaderElection) -> Any:
    if not election.enabled:
        return None
    from pyvolcano.kube.leaderelection import LeaderElectionConfig

    try:
        return LeaderElectionConfig.from_flags(
            resource_name=election.resource_name, resource_namespace=election.resource_namespace,
            lock_object_namespace=election.lock_object_namespace, lease_duration=election.lease_duration,
            renew_deadline=election.renew_deadline, retry_period=election.retry_period)
    except ValueError as e:
        raise ComponentError(str(e)) from None


def _run_with_leader_election(
    *,
    config: Any,
    store_factory: Callable[[], Any],
    lock_store: Any,
    run: Work,
    stop: threading.Event,
) -> int:
    """Run ``run(store, stop)``; with leader election only while holding the Lease."""
    if config is None:
        run(store_factory(), stop)
        return 0
    from pyvolcano.kube.leaderelection import run as campaign

    led = threading.Event()

    def on_started(lost: threading.Event) -> None:
        led.set()
        logger.info("became leader of %s/%s", config.resource_namespace, config.resource_name)
        work_stop = threading.Event()

        def follow() -> None:
            while not (lost.wait(0.2) or stop.is_set()):
                pass
            work_stop.set()

        threading.Thread(target=follow, name="leader-watch", daemon=True).start()
        run(store_factory(), work_stop)

    def on_stopped() -> None:
        if led.is_set() and not stop.is_set():
            logger.error("leaderelection lost")
            logging.shutdown()
            os._exit(1)

    campaign(lock_store, config, stop, on_started, on_stopped)
    return 0


def run_component(component: Component) -> int:
    """Run ``component`` until SIGTERM or SIGINT (see the module docstring); the exit code."""
    c = component
    stop = stop_on_signals()

    def make_store() -> Any:
        store = connect(c.client, c.kinds, c.user_agent)
        sync(store, c.name)
        return store

    def run(store: Any, work_stop: threading.Event) -> None:
        try:
            c.work(store, work_stop)
        finally:
            store.stop()

    election = _election_config(c.election)
    lock_store = None if election is None else connect(c.client, (), c.lease_user_agent)
    servers = _serve(c.endpoints, c.metrics_registry)
    try:
        return _run_with_leader_election(config=election, store_factory=make_store, lock_store=lock_store, run=run,
                                         stop=stop)
    finally:
        for srv in servers:
            srv.stop()


def scheduler_work(*, scheduler_names: tuple[str, ...], conf_path: Path | None, options: SchedulerOptions,
                   period: float, seed: int | None, metrics: Any, node_selector: Sequence[str],
                   recorder: SessionRecorder | None) -> Work:
    """vc-scheduler's work: a :class:`~pyvolcano.runtime.scheduler.LiveScheduler` session every
    period, its events recorded under the scheduler's name."""

    def work(store: Any, stop: threading.Event) -> None:
        import socket

        from pyvolcano.conf import ConfigError
        from pyvolcano.framework.arguments import ArgumentError
        from pyvolcano.kube.events import EventRecorder
        from pyvolcano.runtime.clock import wall_seconds
        from pyvolcano.runtime.scheduler import LiveScheduler

        events = EventRecorder(
            store,
            controller=scheduler_names[0] if len(scheduler_names) == 1 else "volcano",
            instance=socket.gethostname(),
            clock=wall_seconds,
        )
        try:
            sched = LiveScheduler(
                store,
                conf_path=conf_path,
                options=options,
                period=period,
                seed=seed,
                metrics=metrics,
                node_selector=node_selector,
                events=events,
                recorder=recorder,
            )
        except (ConfigError, ArgumentError, OSError) as e:
            raise ComponentError(f"{conf_path}: {e}") from None
        try:
            sched.run(stop)
        finally:
            sched.close(wait=False)
            events.close()

    return work


def controller_manager_work(*, controllers: Sequence[str], scheduler_names: tuple[str, ...],
                            metrics: Any, inherit_owner_annotations: bool = True,
                            job_sync_batch_period: float = 0.0) -> Work:
    """vc-controller-manager's work: the enabled controllers on one store (their SSH keys and
    generated names from the operating system's randomness, see :func:`build_controllers`)."""

    def work(store: Any, stop: threading.Event) -> None:
        from pyvolcano.runtime.controller_manager import LiveControllerManager, build_controllers

        ctrls = build_controllers(store, list(controllers), scheduler_names=scheduler_names,
                                  inherit_owner_annotations=inherit_owner_annotations,
                                  job_sync_batch_period=job_sync_batch_period)
        LiveControllerManager(store, ctrls, metrics=metrics).run(stop)

    return work
