"""``pyvolcano dashboard``: serve the web UI (:mod:`pyvolcano.dashboard`) for a snapshot, a
simulation run or a live cluster.

One source at a time: ``--cluster FILE`` (a snapshot), ``--report DIR`` (what ``simulate
--report DIR`` wrote), else the live cluster of ``--kubeconfig`` / ``--context`` (by default
the current kubectl context), read through the informer store the scheduler uses. The server
listens on ``--listen-address`` (127.0.0.1: this machine only) and ``--port`` and answers only
the Host names it is served as (the listen address, the loopback names and ``--accept-hosts``,
as kubectl proxy's option); listening elsewhere without ``--accept-hosts`` prints a warning
naming the risk. Read-only unless ``--allow-actions``. Starlette and uvicorn are imported here,
inside the command, so no other command loads them. Bad input exits 2 with one line, before anything listens.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pyvolcano.cli.queue import (
    ConfigOption,
    ContextOption,
    DefaultRuntimeOption,
    KubeconfigOption,
    SeedOption,
    StateError,
    runtime_policy,
)

if TYPE_CHECKING:
    from pyvolcano.dashboard.sources import Source

__all__ = ["dashboard", "run_dashboard", "serve"]


def dashboard(
    cluster: Annotated[str | None, typer.Option("--cluster", help="A snapshot: YAML file or directory (as "
                                                "`schedule` reads)")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="A simulation run: the directory `simulate "
                                                "--report DIR` wrote")] = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    config: ConfigOption = None,
    listen_address: Annotated[str, typer.Option("--listen-address", help="The address to listen on "
                                                "(127.0.0.1: this machine only)")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="The port to listen on (0: any free one)")]
    = 8080,
    allow_actions: Annotated[bool, typer.Option("--allow-actions", help="Let the UI suspend, resume and delete "
                                                "jobs and open and close queues, with the kubeconfig's "
                                                "credentials (RBAC decides)")] = False,
    accept_hosts: Annotated[list[str] | None, typer.Option("--accept-hosts", help="More Host names to answer "
                                                           "besides the listen address and localhost, 127.0.0.1, "
                                                           "[::1]: comma-separated names, IPs or *.example.com "
                                                           "wildcards (kubectl proxy's ^name$ forms accepted); "
                                                           "repeatable")] = None,
    default_runtime: DefaultRuntimeOption = None,
    seed: SeedOption = 0,
    timeout: Annotated[float, typer.Option("--request-timeout", help="Seconds to wait for the live cluster's "
                                           "first listing")] = 30.0,
) -> None:
    """Serve a web dashboard: queues, jobs and why they wait, the GPU map, a simulation's timeline."""
    raise typer.Exit(run_dashboard(cluster=cluster, report=report, kubeconfig=kubeconfig, context=context,
                                   config_path=config, listen_address=listen_address, port=port,
                                   allow_actions=allow_actions, accept_hosts=accept_hosts,
                                   default_runtime=default_runtime, seed=seed, timeout=timeout))


def run_dashboard(*, cluster: str | None, report: Path | None, kubeconfig: str | None, context: str | None,
                  config_path: Path | None, listen_address: str, port: int, allow_actions: bool,
                  default_runtime: list[str] | None, seed: int, timeout: float,
                  accept_hosts: list[str] | None = None) -> int:
    from pyvolcano.cli.output import error
    from pyvolcano.dashboard.security import parse_accept_hosts
    from pyvolcano.dashboard.sources import LIVE_KINDS, LiveSource, SnapshotSource, SourceError
    from pyvolcano.runtime.registry import default_registry

    try:
        extra_hosts = parse_accept_hosts(accept_hosts or ())
    except ValueError as e:
        error(str(e))
        return 2

    registry = default_registry()
    given = [flag for flag, v in (("--cluster", cluster), ("--report", report)) if v is not None]
    if kubeconfig is not None or context is not None:
        given.append("--kubeconfig/--context")
    if len(given) > 1:
        error(f"give one source: {' or '.join(given)}, not several")
        return 2
    source: Source
    try:
        policy = runtime_policy(default_runtime)
        if cluster is not None:
            source = SnapshotSource(cluster, registry, config_path=config_path, policy=policy, seed=seed)
        elif report is not None:
            from pyvolcano.dashboard.run_views import ReportSource

            source = ReportSource(report)
        else:
            from pyvolcano.kube import connect
            from pyvolcano.simulator.state import live_source

            try:
                store = connect(kubeconfig=kubeconfig, context=context, kinds=LIVE_KINDS,
                                user_agent="pyvolcano-dashboard")
            except ValueError as e:
                raise SourceError(str(e)) from None
            source = LiveSource(store, registry, name=live_source(kubeconfig, context), config_path=config_path,
                                policy=policy, seed=seed, clock=time.time, sync_timeout=timeout)
            if not store.wait_for_sync(timeout):
                source.close()
                error(f"{source.name}: the objects were not listed within {timeout:g}s")
                return 1
    except (SourceError, StateError) as e:
        error(str(e))
        return 2
    return serve(source, listen_address=listen_address, port=port, allow_actions=allow_actions,
                 accept_hosts=extra_hosts)


def serve(source: Source, *, listen_address: str, port: int, allow_actions: bool,
          accept_hosts: list[str] | None = None) -> int:
    """Listen on ``listen_address:port`` and serve ``source`` until interrupted (then close it),
    answering the Host names :func:`pyvolcano.dashboard.security.served_hosts` gives."""
    import socket

    import uvicorn

    from pyvolcano.cli.output import error, warn
    from pyvolcano.dashboard.security import exposure_warning, served_hosts
    from pyvolcano.dashboard.server import create_app

    hosts = served_hosts(listen_address, accept_hosts or ())
    if (text := exposure_warning(listen_address, accept_hosts=accept_hosts or (), allow_actions=allow_actions)):
        warn(text)
    app = create_app(source, allow_actions=allow_actions, hosts=hosts)
    family = socket.AF_INET6 if ":" in listen_address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((listen_address, port))
    except OSError as e:
        sock.close()
        source.close()
        error(f"--listen-address/--port {listen_address}:{port}: {e.strerror or e}")
        return 2
    host, bound = sock.getsockname()[:2]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    print(f"dashboard on http://{shown}:{bound}/ ({'actions allowed' if allow_actions else 'read-only'})",
          file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    try:
        server.run(sockets=[sock])
    finally:
        source.close()
    return 0
