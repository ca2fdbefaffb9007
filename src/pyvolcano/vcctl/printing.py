"""vcctl's output: upstream's fixed-width tables, and kubectl's ``-o json|yaml|name``.

* Tables keep upstream's columns, headers and minimum widths (Go ``%-Ns``: padded, never
  cut); a value longer than its column still gets one space before the next one, so no
  table is ever truncated, on a terminal or not. Trailing blanks are dropped.
  ``--no-headers`` leaves the header line out; ``-o wide`` adds columns at the end.
* ``-o json`` is one JSON line and ``-o yaml`` one YAML document (the project's
  conventions); several objects are a ``v1 List`` as kubectl prints them.
  ``metadata.managedFields`` is left out, as kubectl does by default.
* ``-o name`` prints ``<resource>.<group>/<name>`` per object (``job.batch.volcano.sh/x``).
* Ages follow apimachinery's ``HumanDuration``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from pyvolcano.cli.output import emit
from pyvolcano.kube.resources import resource_for
from pyvolcano.store.base import clone, from_rfc3339

__all__ = ["Column", "age", "creation_date", "epoch_seconds", "human_duration", "print_objects", "print_table",
           "resource_name"]

Column = tuple[str, int]  # header, minimum width (Go's %-Ns)


def print_table(columns: Sequence[Column], rows: Sequence[Sequence[Any]], *, headers: bool = True) -> None:
    widths = [w for _h, w in columns]
    lines = [[h for h, _w in columns]] if headers else []
    lines.extend([str(v) for v in row] for row in rows)
    for cells in lines:
        out = []
        for i, cell in enumerate(cells):
            pad = widths[i] if i < len(widths) else 0
            text = cell.ljust(pad)
            if i + 1 < len(cells) and len(cell) >= pad:
                text += " "
            out.append(text)
        sys.stdout.write("".join(out).rstrip() + "\n")


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    out = clone(obj)
    md = out.get("metadata")
    if isinstance(md, dict):
        md.pop("managedFields", None)
    return out


def resource_name(obj: dict[str, Any]) -> str:
    kind = str(obj.get("kind", ""))
    res = resource_for(kind)
    singular = kind.lower()
    prefix = f"{singular}.{res.group}" if res.group else singular
    return f"{prefix}/{(obj.get('metadata') or {}).get('name', '')}"


def print_objects(objs: Sequence[dict[str, Any]], fmt: str, *, single: bool = False) -> None:
    """``objs`` as ``json``, ``yaml`` or ``name``; ``single`` prints one object, not a List."""
    if fmt == "name":
        for o in objs:
            sys.stdout.write(resource_name(o) + "\n")
        return
    if single and len(objs) == 1:
        emit(_clean(objs[0]), fmt)
        return
    emit({"apiVersion": "v1", "kind": "List", "items": [_clean(o) for o in objs],
          "metadata": {"resourceVersion": ""}}, fmt)


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``: ``45s``, ``5m3s``, ``3h10m``, ``6d2h``, ``2y30d``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        return f"{hours // 24 // 365}y{(hours // 24) % 365}d"
    return f"{hours // 24 // 365}y"


def epoch_seconds(text: Any) -> float | None:
    """Unix seconds of an RFC 3339 timestamp (the store's virtual seconds are relative to its EPOCH)."""
    from pyvolcano.store.base import EPOCH

    if not isinstance(text, str) or not text:
        return None
    try:
        return from_rfc3339(text) + EPOCH.timestamp()
    except ValueError:
        return None


def age(timestamp: Any, now: float) -> str:
    """``<unknown>`` for no timestamp, else the human duration since it."""
    at = epoch_seconds(timestamp)
    if at is None:
        return "<unknown>"
    return human_duration(now - at)


def creation_date(obj: dict[str, Any]) -> str:
    """Go's ``CreationTimestamp.Format("2006-01-02")`` (``0001-01-01`` when unset)."""
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    return ts[:10] if isinstance(ts, str) and len(ts) >= 10 else "0001-01-01"
