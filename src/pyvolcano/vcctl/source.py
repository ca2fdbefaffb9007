"""Where vcctl's objects come from: a live API server, or a snapshot file read offline.

Both sources answer :meth:`Source.list` and :meth:`Source.get` with plain object dicts, as
the API server returns them (``apiVersion``, ``kind`` set). A label selector is sent to the
server when there is one and always applied here as well, so both sources select the same
objects. Only a :class:`LiveSource` can write: a snapshot is a record, not a cluster, and the
verbs that change things refuse ``--cluster``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pyvolcano.api.manifest import ManifestError, iter_documents
from pyvolcano.kube.resources import RESOURCES, resource_for
from pyvolcano.store.base import NotFound, ServerBacked, Store, object_key
from pyvolcano.vcctl.selector import Selector

__all__ = ["LiveSource", "SnapshotSource", "Source", "load_snapshot_objects"]


class Source(Protocol):
    @property
    def default_namespace(self) -> str: ...

    @property
    def now(self) -> Callable[[], float]: ...

    def list(self, kind: str, namespace: str | None = None, selector: Selector | None = None) -> list[dict[str, Any]]:
        ...

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]: ...


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _sort_key(obj: dict[str, Any]) -> tuple[str, str]:
    md = obj.get("metadata") or {}
    return (str(md.get("namespace") or ""), str(md.get("name") or ""))


@dataclass
class LiveSource:
    """A store over the API server (a KubeStore without informers: every read is a request)."""

    store: Store
    default_namespace: str = "default"
    now: Callable[[], float] = time.time

    def list(self, kind: str, namespace: str | None = None, selector: Selector | None = None) -> list[dict[str, Any]]:
        res = resource_for(kind)
        ns = namespace if res.namespaced else None
        if isinstance(self.store, ServerBacked):
            text = selector.text if selector and selector.text else None
            items = self.store.list_on_server(kind, ns, label_selector=text)
        else:
            items = self.store.list(kind, ns)
        out = [o for o in items if selector is None or selector.matches(_labels(o))]
        return sorted(out, key=_sort_key)

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        return self.store.get(kind, namespace, name)


@dataclass
class SnapshotSource:
    """The objects of a snapshot file; reads only."""

    path: str
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    default_namespace: str = "default"
    now: Callable[[], float] = time.time

    def list(self, kind: str, namespace: str | None = None, selector: Selector | None = None) -> list[dict[str, Any]]:
        namespaced = RESOURCES[kind].namespaced if kind in RESOURCES else True
        out = []
        for obj in self.objects.get(kind, ()):
            md = obj.get("metadata") or {}
            if namespaced and namespace is not None and (md.get("namespace") or "default") != namespace:
                continue
            if selector is not None and not selector.matches(_labels(obj)):
                continue
            out.append(obj)
        return sorted(out, key=_sort_key)

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        namespaced = RESOURCES[kind].namespaced if kind in RESOURCES else True
        for obj in self.objects.get(kind, ()):
            md = obj.get("metadata") or {}
            if md.get("name") == name and (not namespaced or (md.get("namespace") or "default") == namespace):
                return obj
        raise NotFound(kind, object_key(kind, namespace, name), f"not found in {self.path}")


def _expand(docs: Iterable[tuple[int, Any]], source: str) -> Iterable[tuple[str, dict[str, Any]]]:
    for i, doc in docs:
        if doc is None:
            continue
        where = f"{source}: document {i}"
        if not isinstance(doc, dict):
            raise ManifestError(f"{where}: expected a Kubernetes object mapping")
        if doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List") and "items" in doc):
            for j, item in enumerate(doc.get("items") or ()):
                if not isinstance(item, dict) or not isinstance(item.get("kind"), str):
                    raise ManifestError(f"{where}: items[{j}]: expected an object with a kind")
                yield f"{where}: items[{j}]", item
            continue
        yield where, doc


def load_snapshot_objects(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """The objects of ``path`` by kind; :class:`ManifestError` (one line) for a bad file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ManifestError(f"{source}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ManifestError(f"{source}: not UTF-8 text") from None
    out: dict[str, list[dict[str, Any]]] = {}
    for where, doc in _expand(iter_documents(text, source), source):
        kind = doc.get("kind")
        md = doc.get("metadata")
        if not isinstance(kind, str) or not kind:
            raise ManifestError(f"{where}: kind: expected a string such as Job or Queue")
        if not isinstance(md, dict) or not isinstance(md.get("name"), str):
            raise ManifestError(f"{where} ({kind}): metadata.name: expected a string")
        out.setdefault(kind, []).append(doc)
    return out
