"""``pyvolcano snapshot``: a live cluster's scheduler inputs, as the YAML ``schedule`` reads.

The objects are listed straight from the API server (no informers): ConfigMap (the
scheduler configuration: ``--scheduler-conf FILE`` if given, else the
``volcano-system/volcano-scheduler-configmap`` ConfigMap when it can be read), then
PriorityClasses, Queues, Nodes, Numatopologies, HyperNodes, PodGroups, Pods, Jobs, JobTemplates,
JobFlows and CronJobs (:mod:`pyvolcano.runtime.snapshot`). ``--kinds`` keeps some of them:
``--kinds Node,HyperNode,Queue,PriorityClass`` writes the CLUSTER file of ``simulate --cluster``.
Jobs that cannot be listed (no CRD, no permission), HyperNodes, Numatopologies and workflow kinds
on a cluster without their CRDs and a
configuration that cannot be read are left out with a note on stderr (a ConfigMap whose
configuration does not load is recorded as it is, with a note; a bad ``--scheduler-conf`` is
an error); a scheduler input
that cannot be listed is an error (exit 1). stdout carries the YAML unless ``-o FILE``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from pyvolcano.cli.output import error, note

__all__ = ["SNAPSHOT_CHOICES", "SnapshotError", "snapshot", "take_snapshot", "write_text_atomically"]

SNAPSHOT_CHOICES = ("ConfigMap", "PriorityClass", "Queue", "Node", "Numatopology", "HyperNode", "StorageClass",
                    "CSIDriver", "CSINode", "PersistentVolume", "PersistentVolumeClaim", "CSIStorageCapacity",
                    "PodDisruptionBudget", "ResourceQuota", "PodGroup", "Pod", "Job", "JobTemplate", "JobFlow",
                    "CronJob")


class SnapshotError(ValueError):
    """A snapshot that cannot be taken as asked (a bad --scheduler-conf or --kinds)."""


def _config_text(store: Any, path: Path | None, notes: list[str]) -> str | None:
    from pyvolcano.conf import ConfigError
    from pyvolcano.runtime.configuration import load_configuration
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.runtime.snapshot import CONFIG_KEY, CONFIG_MAP, CONFIG_NAMESPACE, read_config_text
    from pyvolcano.store.base import StoreError

    registry = default_registry()
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise SnapshotError(f"--scheduler-conf {path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
        source = str(path)
    else:
        value = read_config_text(store)
        if isinstance(value, StoreError):
            notes.append(f"no scheduler configuration in the snapshot ({value}); schedule will use upstream's default")
            return None
        if value is None:
            notes.append(f"ConfigMap {CONFIG_NAMESPACE}/{CONFIG_MAP} has no {CONFIG_KEY} key; schedule will use "
                         "upstream's default")
            return None
        text, source = value, f"ConfigMap {CONFIG_NAMESPACE}/{CONFIG_MAP}"
    try:
        load_configuration(registry, text=text, source=source)
    except ConfigError as e:
        if path is not None:
            raise SnapshotError(str(e)) from None
        notes.append(f"the cluster's scheduler configuration does not load ({e}); it is recorded as it is")
    return text


def take_snapshot(store: Any, *, scheduler_conf: Path | None = None,
                  kinds: Sequence[str] = SNAPSHOT_CHOICES) -> tuple[list[dict[str, Any]], list[str]]:
    """The snapshot documents of the cluster behind ``store``, and the notes to print."""
    from pyvolcano.api.names import SCHEDULER_KINDS
    from pyvolcano.kube.resources import RESOURCES
    from pyvolcano.runtime.snapshot import SNAPSHOT_KINDS, snapshot_documents
    from pyvolcano.store.base import NotFound, StoreError

    notes: list[str] = []
    config = _config_text(store, scheduler_conf, notes) if "ConfigMap" in kinds else None
    listed: dict[str, list[dict[str, Any]]] = {}
    for kind in SNAPSHOT_KINDS:
        if kind not in kinds:
            continue
        try:
            listed[kind] = store.list(kind)
        except NotFound as e:
            res = RESOURCES[kind]
            if not res.optional and kind != "Job":
                raise
            notes.append(f"{kind}s left out: the cluster does not serve {res.api_version} {res.plural} (no {kind} "
                         "CRD)" if res.optional else f"Jobs left out: {e}")
            listed[kind] = []
        except StoreError as e:
            if kind in SCHEDULER_KINDS:
                raise
            notes.append(f"{kind}s left out: {e}")
            listed[kind] = []
    return snapshot_documents(lambda kind: listed.get(kind, []), config, kinds), notes


def write_text_atomically(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file in the same directory (no half-written file)."""
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _kinds(text: str | None) -> tuple[str, ...]:
    if text is None:
        return SNAPSHOT_CHOICES
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [x for x in items if x not in SNAPSHOT_CHOICES]
    if bad or not items:
        raise typer.BadParameter(f"got {text!r}; expected a comma list of {', '.join(SNAPSHOT_CHOICES)}",
                                 param_hint="'--kinds'")
    return items


def snapshot(
    kubeconfig: Annotated[str | None, typer.Option(metavar="FILE", help="Path to kubeconfig file")] = None,
    master: Annotated[str | None, typer.Option(metavar="URL", help="The address of the Kubernetes API server")] = None,
    context: Annotated[str | None, typer.Option(metavar="NAME", help="The kubeconfig context to use")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE",
                                                help="Write the snapshot here (default: stdout)")] = None,
    scheduler_conf: Annotated[Path | None, typer.Option(
        "--scheduler-conf", metavar="FILE",
        help="The scheduler configuration to record (default: the volcano-scheduler-configmap ConfigMap)")] = None,
    kinds: Annotated[str | None, typer.Option(
        "--kinds", metavar="LIST", help="Comma list of ConfigMap, PriorityClass, Queue, Node, Numatopology, HyperNode, "
        "PodGroup, Pod, Job, JobTemplate, JobFlow, CronJob (default: all)")] = None,
) -> None:
    """Write the live cluster's scheduler inputs as YAML that schedule reads."""
    from pyvolcano.kube import connect
    from pyvolcano.runtime.snapshot import dump_documents
    from pyvolcano.store.base import StoreError

    wanted = _kinds(kinds)
    if output is not None and output.is_dir():
        raise typer.BadParameter(f"{output} is a directory", param_hint="'--output' / '-o'")
    try:
        store = connect(kubeconfig=kubeconfig, master=master, context=context, kinds=(), start=False,
                        user_agent="pyvolcano-snapshot")
    except ValueError as e:
        error(str(e))
        raise typer.Exit(2) from None
    try:
        docs, notes = take_snapshot(store, scheduler_conf=scheduler_conf, kinds=wanted)
    except SnapshotError as e:
        error(str(e))
        raise typer.Exit(2) from None
    except StoreError as e:
        error(str(e))
        raise typer.Exit(1) from None
    for text in notes:
        note(text)
    yaml_text = dump_documents(docs)
    if output is None:
        sys.stdout.write(yaml_text)
        return
    try:
        write_text_atomically(output, yaml_text)
    except OSError as e:
        error(f"{output}: cannot write: {e.strerror or e}")
        raise typer.Exit(2) from None
    note(f"wrote {output} ({len(docs)} objects)")
