"""``pyvolcano job run --dry-run -f JOB.yaml``: what submitting a job would do (nothing is submitted).

On a snapshot (``--cluster``) or a live cluster (``--kubeconfig``, read-only); the answers are
those of :mod:`pyvolcano.forecast.dryrun`. Exit status: 0 when admission accepts the job, 1 when
it refuses it (as ``kubectl create --dry-run=server`` fails), 2 for a usage or input mistake.
Registered on the ``job`` sub-app by :mod:`pyvolcano.cli.job`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pyvolcano.api.names import JOB_API_VERSION, SCHEDULING_API_VERSION
from pyvolcano.cli.queue import (
    ClusterOption,
    ConfigOption,
    ContextOption,
    DefaultRuntimeOption,
    HorizonOption,
    KubeconfigOption,
    NowOption,
    OutputOption,
    SeedOption,
    TimeoutOption,
)

__all__ = ["read_job_file", "render_dry_run", "run"]

JOB_KINDS = {(JOB_API_VERSION, "Job"), (SCHEDULING_API_VERSION, "PodGroup"), ("v1", "Pod")}


def run(
    filename: Annotated[str, typer.Option("--filename", "-f", metavar="FILE", help="The job: a Volcano Job (or a "
                                          "PodGroup with its Pods), YAML; - reads stdin")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would happen; submit nothing (required: "
                                          "`vcctl job run` submits)")] = False,
    cluster: ClusterOption = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    config: ConfigOption = None,
    default_runtime: DefaultRuntimeOption = None,
    horizon: HorizonOption = "720h",
    now: NowOption = None,
    output: OutputOption = None,
    seed: SeedOption = 0,
    timeout: TimeoutOption = 30.0,
) -> None:
    """Dry run: admission, whether the job would be placed now, why not, when, and what it would evict."""
    assert output is not None
    raise typer.Exit(run_dry(filename, dry_run=dry_run, cluster=cluster, kubeconfig=kubeconfig, context=context,
                             config_path=config, default_runtime=default_runtime, horizon=horizon, now=now,
                             output=output, seed=seed, timeout=timeout))


def read_job_file(path: str) -> list[dict[str, Any]]:
    """The job file's documents (Job, PodGroup, Pod); raises ManifestError naming file and document."""
    from pyvolcano.api.inputs import read_inputs
    from pyvolcano.api.manifest import ManifestError, iter_documents

    docs: list[dict[str, Any]] = []
    for source, text in read_inputs([path]):
        if isinstance(text, ManifestError):
            raise text
        for i, doc in iter_documents(text, source):
            if doc is None:
                continue
            if not isinstance(doc, dict):
                raise ManifestError(f"{source}: document {i}: expected a mapping")
            if (doc.get("apiVersion"), doc.get("kind")) not in JOB_KINDS:
                raise ManifestError(f"{source}: document {i}: apiVersion/kind {doc.get('apiVersion')}/"
                                    f"{doc.get('kind')} is not a job; expected batch.volcano.sh/v1alpha1 Job, "
                                    "scheduling.volcano.sh/v1beta1 PodGroup or v1 Pod")
            docs.append(doc)
    return docs


def run_dry(filename: str, *, dry_run: bool, cluster: str | None, kubeconfig: str | None, context: str | None,
            config_path: Path | None, default_runtime: list[str] | None, horizon: str, now: str | None, output: str,
            seed: int, timeout: float) -> int:
    from pyvolcano.api.manifest import ManifestError
    from pyvolcano.cli.output import console, emit, error
    from pyvolcano.cli.queue import StateError, _horizon, load_state, runtime_policy
    from pyvolcano.conf import ConfigError
    from pyvolcano.forecast.dryrun import DryRunError, dry_run_document, job_of
    from pyvolcano.framework.arguments import ArgumentError
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.simulator.state import LiveReadError

    registry = default_registry()
    try:
        if not dry_run:
            raise StateError("pyvolcano job run only answers --dry-run; submit with `vcctl job run -f FILE`")
        policy = runtime_policy(default_runtime)
        ahead = _horizon(horizon)
        docs = read_job_file(filename)
        job_of(docs, filename)
        state, config = load_state(cluster=cluster, kubeconfig=kubeconfig, context=context, config_path=config_path,
                                   registry=registry, timeout=timeout, now=now, user_agent="pyvolcano-job-run")
    except (StateError, DryRunError, ManifestError, ConfigError, ArgumentError, ValueError) as e:
        error(str(e))
        return 2
    except LiveReadError as e:
        error(str(e))
        return 1
    doc = dry_run_document(state, docs, filename, config, registry, policy=policy, seed=seed, horizon=ahead)
    if output in ("json", "yaml"):
        emit(doc, output)
    else:
        console().print(render_dry_run(doc), end="", markup=False)
    return 0 if doc["admission"]["allowed"] else 1


def render_dry_run(doc: dict[str, Any]) -> str:
    from pyvolcano.cli.queue import start_text

    lines = [f"JOB        {doc['job']}  ({doc['kind']}, dry run at {doc['now']})"]
    adm = doc["admission"]
    if not adm["allowed"]:
        lines += [f"ADMISSION  refused: {err}" for err in adm["errors"]]
        return "\n".join(lines) + "\n"
    lines += ["ADMISSION  allowed", f"PLACED     {'yes, now' if doc['placed_now'] else 'no'}",
              f"START      {start_text(doc)}"]
    diag = doc["diagnosis"]
    if diag is not None:
        lines += [f"REASON     {diag['reason']}", f"MESSAGE    {diag['message']}", f"HINT       {diag['hint']}"]
    if doc["evictions"]:
        lines += [f"EVICTS     {v['pod']}  ({v['action']})" for v in doc["evictions"]]
    else:
        lines.append("EVICTS     nothing")
    if doc.get("upcoming"):
        from pyvolcano.forecast.eta import format_seconds

        lines += [f"BEFORE IT  {u['job']} from {u['created_by']} (created in {format_seconds(u['created_in_seconds'])})"
                  for u in doc["upcoming"]]
    return "\n".join(lines) + "\n"
