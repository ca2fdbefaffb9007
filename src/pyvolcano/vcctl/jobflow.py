"""``vcctl jobflow`` and ``vcctl jobtemplate``: create, list, get, delete, describe
(upstream ``pkg/cli/jobflow``, ``pkg/cli/jobtemplate``).

Both verbs sets are upstream's, flag for flag:

* ``create -f FILE``: every document of the file is created (a document without a namespace
  in ``default``), each answered ``Created JobFlow: ns/name``; a refused one is answered
  ``Failed to create JobFlow: <the API server's message>`` and the others are still created.
  Upstream exits 0 even then; here the failures go to stderr and the exit code is 1;
* ``list [-n NS] [--all-namespaces]``: ``Name``, ``Namespace``, ``Phase`` and ``Age`` for
  JobFlows, ``Name`` and ``Namespace`` for JobTemplates, each column as wide as its longest
  value plus four spaces; ``No resources found`` when there is none (JobTemplates have no
  ``--all-namespaces``, as upstream);
* ``get -N NAME [-n NS]``: the same table for one object;
* ``delete -N NAME [-n NS]`` or ``delete -f FILE``: ``Deleted JobFlow: ns/name``;
* ``describe [-N NAME] [-n NS] [-o yaml|json]``: the object (every one of the namespace without
  ``-N``, separated by a blank line) without ``managedFields``, as YAML (keys sorted, as
  ``sigs.k8s.io/yaml`` writes them) or indented JSON.

``-n`` defaults to ``default`` as upstream's (not to the kubeconfig context's namespace). The
reading verbs also take ``--cluster FILE`` (a snapshot). Upstream's ``Phase`` of a JobFlow is
empty until its controller has written a status.
"""

# No ``from __future__ import annotations``: the verbs' options are built per kind, inside
# ``_app``, and typer reads them from evaluated annotations.
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from pyvolcano.api.manifest import ManifestError, iter_documents
from pyvolcano.api.names import FLOW_API_VERSION
from pyvolcano.cli.options import UsageError
from pyvolcano.store.base import StoreError, clone
from pyvolcano.vcctl.common import Cluster, Context, Kubeconfig, Master, open_source, writer
from pyvolcano.vcctl.printing import age

__all__ = ["jobflow_app", "jobtemplate_app"]

_SPACING = 4


@dataclass(frozen=True)
class _Kind:
    kind: str          # JobFlow / JobTemplate
    noun: str          # upstream's lower-case noun in messages: "jobflow" / "job template"
    phase: bool        # list a Phase and an Age column
    all_namespaces: bool


JOBFLOW = _Kind("JobFlow", "jobflow", phase=True, all_namespaces=True)
JOBTEMPLATE = _Kind("JobTemplate", "job template", phase=False, all_namespaces=False)


def _columns(k: _Kind, objs: list[dict[str, Any]], now: float) -> list[list[str]]:
    rows = [["Name", "Namespace", *(["Phase", "Age"] if k.phase else [])]]
    for o in objs:
        md = o.get("metadata") or {}
        row = [str(md.get("name", "")), str(md.get("namespace", ""))]
        if k.phase:
            row += [str(((o.get("status") or {}).get("state") or {}).get("phase") or ""),
                    age(md.get("creationTimestamp"), now)]
        rows.append(row)
    return rows


def _print_rows(rows: list[list[str]]) -> None:
    """Upstream's ``%-Ns`` table: each column as wide as its longest cell plus four spaces."""
    widths = [max(len(r[i]) for r in rows) + _SPACING for i in range(len(rows[0]))]
    for r in rows:
        sys.stdout.write("".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) + "\n")


def _documents(path: str, k: _Kind) -> list[dict[str, Any]]:
    """The file's objects of kind ``k`` (namespace ``default`` when unset); UsageError otherwise."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    out = []
    try:
        for i, doc in iter_documents(text, path):
            if doc is None:
                continue
            if not isinstance(doc, dict) or doc.get("kind") != k.kind:
                got = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
                raise UsageError(f"{path}: document {i}: kind: got {got!r}; expected {k.kind}")
            md = doc.setdefault("metadata", {})
            if not isinstance(md, dict) or not isinstance(md.get("name"), str) or not md["name"]:
                raise UsageError(f"{path}: document {i} ({k.kind}): metadata.name: expected the {k.noun}'s name")
            md["namespace"] = md.get("namespace") or "default"
            doc.setdefault("apiVersion", FLOW_API_VERSION)
            out.append(doc)
    except ManifestError as e:
        raise UsageError(str(e)) from None
    if not out:
        raise UsageError(f"{path}: no {k.kind} in the file")
    return out


def _describe(obj: dict[str, Any], fmt: str, k: _Kind) -> None:
    out = clone(obj)
    out.setdefault("apiVersion", FLOW_API_VERSION)
    out.setdefault("kind", k.kind)
    (out.get("metadata") or {}).pop("managedFields", None)
    if fmt == "json":
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(out, sort_keys=True))


def _app(k: _Kind) -> typer.Typer:
    app = typer.Typer(help=f"vcctl command line operation {k.noun.replace(' ', '')}", no_args_is_help=True)
    file_help = f"the path to the YAML file containing the {k.noun}"
    Name = Annotated[str, typer.Option("--name", "-N", metavar="NAME", help=f"the name of {k.noun}")]
    Namespace = Annotated[str, typer.Option("--namespace", "-n", metavar="NS", help=f"the namespace of {k.noun}")]
    File = Annotated[str, typer.Option("--file", "-f", metavar="FILE", help=file_help)]

    @app.command("create", help=f"create a {k.noun}")
    def create(ctx: typer.Context, file: File = "", kubeconfig: Kubeconfig = None, master: Master = None,
               context: Context = None, cluster: Cluster = None) -> int:
        if not file:
            raise UsageError(f"--file: the path to the YAML file containing the {k.noun} is required")
        docs = _documents(file, k)
        store = writer(open_source(ctx, kubeconfig, master, context, cluster, verb=f"{k.noun.replace(' ', '')} create"))
        failed = 0
        for doc in docs:
            md = doc["metadata"]
            try:
                store.create(doc)
            except StoreError as e:
                failed += 1
                print(f"Failed to create {k.kind}: {e}", file=sys.stderr)
                continue
            print(f"Created {k.kind}: {md['namespace']}/{md['name']}")
        return 1 if failed else 0

    def _list(ctx: typer.Context, namespace: str, all_namespaces: bool, kubeconfig: str | None, master: str | None,
              context: str | None, cluster: Path | None) -> None:
        src = open_source(ctx, kubeconfig, master, context, cluster)
        objs = src.list(k.kind, None if all_namespaces else namespace)
        if not objs:
            print("No resources found", file=sys.stderr)
            return
        _print_rows(_columns(k, objs, src.now()))

    if k.all_namespaces:
        @app.command("list", help=f"list {k.noun}s")
        def list_all(ctx: typer.Context, namespace: Namespace = "default",
                     all_namespaces: Annotated[bool, typer.Option("--all-namespaces",
                                                                  help=f"list {k.noun}s in all namespaces")] = False,
                     kubeconfig: Kubeconfig = None, master: Master = None, context: Context = None,
                     cluster: Cluster = None) -> None:
            _list(ctx, namespace, all_namespaces, kubeconfig, master, context, cluster)
    else:
        @app.command("list", help=f"list {k.noun}s")
        def list_ns(ctx: typer.Context, namespace: Namespace = "default", kubeconfig: Kubeconfig = None,
                    master: Master = None, context: Context = None, cluster: Cluster = None) -> None:
            _list(ctx, namespace, False, kubeconfig, master, context, cluster)

    @app.command("get", help=f"get a {k.noun}")
    def get(ctx: typer.Context, name: Name = "", namespace: Namespace = "default", kubeconfig: Kubeconfig = None,
            master: Master = None, context: Context = None, cluster: Cluster = None) -> None:
        if not name:
            raise UsageError(f"name is mandatory to get the particular {k.noun} details")
        src = open_source(ctx, kubeconfig, master, context, cluster)
        _print_rows(_columns(k, [src.get(k.kind, namespace, name)], src.now()))

    @app.command("delete", help=f"delete a {k.noun}")
    def delete(ctx: typer.Context, name: Name = "", namespace: Namespace = "default", file: File = "",
               kubeconfig: Kubeconfig = None, master: Master = None, context: Context = None,
               cluster: Cluster = None) -> int:
        if not file and not name:
            raise UsageError(f"{k.noun} name must be specified")
        targets = [(d["metadata"]["namespace"], d["metadata"]["name"]) for d in _documents(file, k)] if file \
            else [(namespace, name)]
        store = writer(open_source(ctx, kubeconfig, master, context, cluster,
                                   verb=f"{k.noun.replace(' ', '')} delete"))
        failed = 0
        for ns, obj_name in targets:
            try:
                store.delete(k.kind, ns, obj_name)
            except StoreError as e:
                if not file:
                    raise
                failed += 1
                print(f"Failed to delete {k.kind}: {e}", file=sys.stderr)
                continue
            print(f"Deleted {k.kind}: {ns}/{obj_name}")
        return 1 if failed else 0

    @app.command("describe", help=f"describe a {k.noun}")
    def describe(ctx: typer.Context, name: Name = "", namespace: Namespace = "default",
                 fmt: Annotated[str, typer.Option("--format", "-o", metavar="FORMAT",
                                                  help="the format of output")] = "yaml",
                 kubeconfig: Kubeconfig = None, master: Master = None, context: Context = None,
                 cluster: Cluster = None) -> None:
        if fmt not in ("yaml", "json"):
            raise UsageError(f"Unsupported format: {fmt}; expected yaml or json")
        src = open_source(ctx, kubeconfig, master, context, cluster)
        objs = [src.get(k.kind, namespace, name)] if name else src.list(k.kind, namespace)
        for i, obj in enumerate(objs):
            if i:
                sys.stdout.write("\n\n")
            _describe(obj, fmt, k)

    return app


jobflow_app = _app(JOBFLOW)
jobtemplate_app = _app(JOBTEMPLATE)
