"""Options every vcctl verb shares, and how a verb gets its :class:`~.source.Source`.

Upstream gives each verb ``--master/-s`` and ``--kubeconfig/-k``; kubectl's ``--server``,
``--context`` and ``--cluster FILE`` (a snapshot, read offline) are added. A verb opens its
source through :func:`open_source`, which uses the :class:`Env` the entry point put on the
click context: tests hand in a store of their own, the console scripts connect for real.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from pyvolcano.api.manifest import ManifestError
from pyvolcano.cli.options import UsageError
from pyvolcano.store.base import Store
from pyvolcano.vcctl.selector import Selector, SelectorError, parse_selector
from pyvolcano.vcctl.source import LiveSource, SnapshotSource, Source, load_snapshot_objects

__all__ = ["AllNamespaces", "Cluster", "Context", "Env", "Kubeconfig", "Master", "NoHeaders", "Output",
           "SelectorText", "connect_kube", "open_source", "selector_of", "writer"]

OUTPUT_FORMATS = ("json", "yaml", "wide", "name")


def _output(value: str | None) -> str:
    if value is None or value == "table":
        return "table"
    if value not in OUTPUT_FORMATS:
        raise typer.BadParameter(f"got {value!r}; expected json, yaml, wide or name")
    return value


Kubeconfig = Annotated[str | None, typer.Option("--kubeconfig", "-k", metavar="FILE",
                                                help="(optional) absolute path to the kubeconfig file")]
Master = Annotated[str | None, typer.Option("--master", "-s", "--server", metavar="URL",
                                            help="the address of apiserver")]
Context = Annotated[str | None, typer.Option("--context", metavar="NAME", help="the kubeconfig context to use")]
Cluster = Annotated[Path | None, typer.Option("--cluster", metavar="FILE",
                                              help="read a snapshot file (pyvolcano snapshot) instead of a cluster")]
Output = Annotated[str, typer.Option("--output", "-o", metavar="FORMAT", callback=_output, show_default=False,
                                     help="json, yaml, wide or name (default: a table)")]
NoHeaders = Annotated[bool, typer.Option("--no-headers", help="do not print the header line of tables")]
AllNamespaces = Annotated[bool, typer.Option("--all-namespaces", "-A", help="list across all namespaces")]
SelectorText = Annotated[str | None, typer.Option("--selector", "-l", metavar="SELECTOR",
                                                  help="label selector, e.g. app=x,tier!=db")]


def connect_kube(kubeconfig: str | None, master: str | None, context: str | None) -> tuple[Store, str]:
    """A store over the API server (no informers) and the context's namespace (``default``)."""
    from pyvolcano.kube.client import KubeClient, load_config
    from pyvolcano.kube.store import KubeStore

    config = load_config(kubeconfig, master, context)
    client = KubeClient(config, user_agent="vcctl")
    return KubeStore(client, ()), str(getattr(config, "namespace", None) or "default")


@dataclass
class Env:
    """What the entry point gives every verb: how to connect, and the wall clock for ages."""

    connect: Callable[[str | None, str | None, str | None], tuple[Store, str]] = connect_kube
    now: Callable[[], float] = time.time


def _env(ctx: typer.Context) -> Env:
    obj: Any = ctx.find_root().obj
    return obj if isinstance(obj, Env) else Env()


def open_source(ctx: typer.Context, kubeconfig: str | None, master: str | None, context: str | None,
                cluster: Path | None, *, verb: str = "") -> Source:
    """The live cluster, or the snapshot ``cluster``; ``verb`` names a writing verb, which refuses one."""
    env = _env(ctx)
    if cluster is not None:
        if verb:
            raise UsageError(f"--cluster {cluster}: a snapshot is read-only; '{verb}' needs a live cluster")
        if kubeconfig or master or context:
            raise UsageError("--cluster reads a snapshot file; it cannot be combined with --kubeconfig, --master "
                             "or --context")
        try:
            return SnapshotSource(str(cluster), load_snapshot_objects(cluster), now=env.now)
        except ManifestError as e:
            raise UsageError(str(e)) from None
    try:
        store, namespace = env.connect(kubeconfig, master, context)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return LiveSource(store, namespace, now=env.now)


def writer(src: Source) -> Store:
    """The store a writing verb writes to (its source was opened with ``verb``, so it is live)."""
    assert isinstance(src, LiveSource)
    return src.store


def selector_of(text: str | None) -> Selector | None:
    if text is None:
        return None
    try:
        return parse_selector(text)
    except SelectorError as e:
        raise typer.BadParameter(str(e), param_hint="'--selector' / '-l'") from None
