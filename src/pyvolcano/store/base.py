"""The object-store contract: errors, watch events, the :class:`Store` and :class:`Admission`
protocols, and small helpers every implementation shares.

Objects are plain JSON-shaped dicts exactly as written in a manifest (``apiVersion``, ``kind``,
``metadata``, ``spec``, ``status``). A kind is identified by ``kind`` alone. Namespaced objects
are keyed ``"<namespace>/<name>"``, cluster-scoped ones (:data:`CLUSTER_SCOPED_KINDS`) ``"<name>"``.

Time is virtual seconds (a float) read from a ``clock`` callable. Timestamps written into
objects are RFC 3339 strings of :data:`EPOCH` plus those seconds (:func:`to_rfc3339`,
:func:`from_rfc3339`).

Capabilities beyond :class:`Store` are declared as their own protocols, each one method (or
two) that some stores have: :class:`Peekable` (read without a copy), :class:`Compactable`
(forget watched history), :class:`Waitable` (block until the next event),
:class:`ConcurrentCalls` (run independent writes in parallel), :class:`Synced` (informers that
list before they are read, and stop), :class:`ServerBacked` (lists filtered by the API server).
Callers test them with ``isinstance``; the hot paths use :func:`can_peek` and
:func:`calls_concurrently`, which decide once per store class (a capability is a method of the
class, never of one instance).

Semantics follow the Kubernetes API server (``k8s.io/apiserver/pkg/registry/generic/registry``):
a global revision counter; every successful write bumps it and stamps the object's
``metadata.resourceVersion``; a write that changes nothing is a no-op and bumps nothing; a write
carrying a stale ``resourceVersion`` is a :class:`Conflict`.
"""

from __future__ import annotations

import builtins
import datetime as _dt
import functools
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeGuard, runtime_checkable

__all__ = [
    "CLUSTER_SCOPED_KINDS",
    "EPOCH",
    "STATUS_SUBRESOURCE_KINDS",
    "Admission",
    "AlreadyExists",
    "Compactable",
    "ConcurrentCalls",
    "Conflict",
    "Forbidden",
    "Invalid",
    "NotFound",
    "Peekable",
    "ServerBacked",
    "Store",
    "StoreError",
    "Synced",
    "Unavailable",
    "Waitable",
    "WatchEvent",
    "call_all",
    "call_each",
    "calls_concurrently",
    "can_peek",
    "clone",
    "from_rfc3339",
    "is_namespaced",
    "json_merge_patch",
    "merge_patch_between",
    "object_key",
    "to_rfc3339",
]

EPOCH: Final = _dt.datetime(2024, 1, 1, tzinfo=_dt.UTC)
"""Virtual time 0.0 as wall-clock time in every timestamp the store writes."""

CLUSTER_SCOPED_KINDS: Final = frozenset({"Node", "Queue", "PriorityClass", "Namespace", "HyperNode", "Numatopology",
                                         "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
                                         "PersistentVolume", "StorageClass", "CSINode", "CSIDriver",
                                         "DeviceClass", "ResourceSlice", "RuntimeClass"})
"""Kinds without a namespace; every other kind is namespaced."""

STATUS_SUBRESOURCE_KINDS: Final = frozenset({"Pod", "Node", "PodGroup", "Queue", "Job", "PersistentVolume",
                                             "PersistentVolumeClaim", "ResourceClaim", "CronJob", "JobFlow",
                                             "JobTemplate"})
"""Kinds whose ``.status`` is owned by the status subresource: :meth:`Store.update` and
:meth:`Store.patch` without ``subresource="status"`` keep the stored status."""


# ----------------------------------------------------------------------------- errors


class StoreError(Exception):
    """Base of every store error. ``kind`` and ``key`` name the object; ``str()`` starts with them."""

    def __init__(self, kind: str, key: str, message: str):
        self.kind = kind
        self.key = key
        self.message = message
        super().__init__(f"{kind} {key}: {message}")


class NotFound(StoreError):
    def __init__(self, kind: str, key: str, message: str = "not found"):
        super().__init__(kind, key, message)


class AlreadyExists(StoreError):
    def __init__(self, kind: str, key: str, message: str = "already exists"):
        super().__init__(kind, key, message)


class Conflict(StoreError):
    """An optimistic-concurrency failure (stale ``resourceVersion``) or a conflicting binding."""

    def __init__(self, kind: str, key: str,
                 message: str = "the object has been modified; please apply your changes to the latest "
                                "version and try again"):
        super().__init__(kind, key, message)


class Invalid(StoreError):
    """An admission rejection.

    ``field`` is the path of the first offending field (``"spec.tasks[1].name"``) and ``message``
    what is wrong with it; ``errors`` holds every ``(field, message)`` found, first one included.
    ``str()`` is ``"Job ns/x: spec.tasks[1].name: duplicated task name 'worker'"``, with any
    further errors appended after ``"; "``.
    """

    def __init__(self, kind: str, key: str, field: str, message: str,
                 errors: list[tuple[str, str]] | None = None):
        self.field = field
        self.errors: list[tuple[str, str]] = list(errors) if errors else [(field, message)]
        text = "; ".join(f"{f}: {m}" if f else m for f, m in self.errors)
        super().__init__(kind, key, text)
        self.message = message


class Forbidden(StoreError):
    """An operation admission refuses outright, e.g. deleting the ``root`` queue."""


class Unavailable(StoreError):
    """The server could not take the request now: the connection failed or timed out, or it
    answered 429 or a 5xx (an etcd outage or leader change comes back as a 500 or 504). The same
    request may succeed later, so a writer keeps it and retries instead of giving it up."""


# ----------------------------------------------------------------------------- events / protocols


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str  # "ADDED" | "MODIFIED" | "DELETED"
    kind: str
    object: dict[str, Any]
    revision: int


@runtime_checkable
class Store(Protocol):
    """What every controller and the scheduler cache program against."""

    @property
    def revision(self) -> int: ...

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]: ...

    def list(self, kind: str, namespace: str | None = None, *,
             label_selector: Mapping[str, str] | None = None) -> list[dict[str, Any]]: ...

    def create(self, obj: dict[str, Any]) -> dict[str, Any]: ...

    def update(self, obj: dict[str, Any]) -> dict[str, Any]: ...

    def update_status(self, obj: dict[str, Any]) -> dict[str, Any]: ...

    def patch(self, kind: str, namespace: str | None, name: str, patch: dict[str, Any], *,
              subresource: str | None = None) -> dict[str, Any]: ...

    def delete(self, kind: str, namespace: str | None, name: str, *, grace_period_seconds: float | None = None,
               propagation: str = "Background") -> dict[str, Any] | None: ...

    def bind(self, namespace: str, pod_name: str, node_name: str, *,
             annotations: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def watch(self, since_revision: int, kinds: Collection[str] | None = None, *,
              copy: bool = True) -> builtins.list[WatchEvent]:
        """Events after ``since_revision``; with ``copy=False`` their objects are the store's own,
        shared and read-only for the caller (an informer's cache objects)."""
        ...


@runtime_checkable
class Peekable(Protocol):
    """Reads the stored object itself, without a copy (read-only for the caller); NotFound as get."""

    def peek(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]: ...


@runtime_checkable
class Compactable(Protocol):
    """Forgets watch history up to ``revision`` (every consumer has read it); returns how many
    events were dropped."""

    def compact(self, revision: int) -> int: ...


@runtime_checkable
class Waitable(Protocol):
    """Blocks until there is an event after ``since_revision`` (True) or ``timeout`` passes (False)."""

    def wait(self, since_revision: int, timeout: float) -> bool: ...


@runtime_checkable
class ConcurrentCalls(Protocol):
    """Runs independent store calls concurrently: each call's result or StoreError, in order."""

    def map_concurrently(self, calls: builtins.list[Callable[[], Any]]) -> builtins.list[Any]: ...


@runtime_checkable
class Synced(Protocol):
    """A store fed by informers: read it once they have listed, stop them when done."""

    def wait_for_sync(self, timeout: float | None = None) -> bool: ...

    def stop(self) -> None: ...


@runtime_checkable
class ServerBacked(Protocol):
    """A store in front of an API server, which can list objects the server filters by a label
    selector (any selector syntax the server accepts), in one request."""

    def list_on_server(self, kind: str, namespace: str | None = None, *,
                       label_selector: str | None = None) -> builtins.list[dict[str, Any]]: ...


_CLASS_HAS: dict[tuple[type, type], bool] = {}


def _class_has(cls: type, capability: type) -> bool:
    found = _CLASS_HAS.get((cls, capability))
    if found is None:
        found = _CLASS_HAS[(cls, capability)] = issubclass(cls, capability)
    return found


def can_peek(store: object) -> TypeGuard[Peekable]:
    """Whether ``store`` is :class:`Peekable` (decided once per class: the hot-path check)."""
    return _class_has(type(store), Peekable)


def calls_concurrently(store: object) -> TypeGuard[ConcurrentCalls]:
    """Whether ``store`` is :class:`ConcurrentCalls` (decided once per class)."""
    return _class_has(type(store), ConcurrentCalls)


class Admission(Protocol):
    """Mutating + validating admission, called by the store before it commits a write.

    ``op`` is ``"CREATE"``, ``"UPDATE"`` or ``"DELETE"``; ``obj`` the incoming object (for
    DELETE the stored one), ``old`` the stored object (None on CREATE). Returns the object to
    store (defaults applied) or raises :class:`Invalid` / :class:`Forbidden`. Status-subresource
    writes and bindings are not admitted (webhooks do not match subresources).
    """

    def admit(self, op: str, obj: dict[str, Any], old: dict[str, Any] | None, store: Store) -> dict[str, Any]: ...


# ----------------------------------------------------------------------------- helpers


def call_all(store: Any, calls: builtins.list[Callable[[], Any]]) -> builtins.list[Any]:
    """Run independent store calls and return each one's result or its :class:`StoreError`, in order.

    A remote store may run them concurrently (:class:`ConcurrentCalls`; upstream's job controller
    creates a job's pods in parallel goroutines); otherwise they run one after the other, and
    an exception that is not a StoreError propagates at once, as a plain loop would."""
    if len(calls) > 1 and calls_concurrently(store):
        return store.map_concurrently(calls)
    return call_each(calls)


def call_each(calls: builtins.list[Callable[[], Any]]) -> builtins.list[Any]:
    """The calls one after the other: each one's result or its :class:`StoreError`, in order
    (any other exception propagates at once)."""
    out: builtins.list[Any] = []
    for call in calls:
        try:
            out.append(call())
        except StoreError as e:
            out.append(e)
    return out


def is_namespaced(kind: str) -> bool:
    return kind not in CLUSTER_SCOPED_KINDS


def object_key(kind: str, namespace: str | None, name: str) -> str:
    """``"ns/name"`` for namespaced kinds, ``"name"`` for cluster-scoped ones."""
    if kind in CLUSTER_SCOPED_KINDS:
        return name
    return f"{namespace or 'default'}/{name}"


_SCALAR_TYPES: Final = frozenset({str, int, float, bool, type(None)})


def clone(value: Any) -> Any:
    """Deep copy of a JSON-shaped value (mappings, lists, scalars); tuples become lists.

    Hot path of every read, so scalars are copied inline rather than through a call."""
    t = type(value)
    if t is dict:
        return {k: (v if type(v) in _SCALAR_TYPES else clone(v)) for k, v in value.items()}
    if t is list:
        return [v if type(v) in _SCALAR_TYPES else clone(v) for v in value]
    if t in _SCALAR_TYPES:
        return value
    if isinstance(value, Mapping):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clone(v) for v in value]
    return value


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: returns a new value, ``target`` is not modified.

    A mapping in the patch is merged key by key, ``None`` (JSON null) removes a key, and any
    other value (lists included) replaces the target's value wholesale.
    """
    if not isinstance(patch, Mapping):
        return clone(patch)
    result: dict[str, Any] = dict(target) if isinstance(target, Mapping) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = json_merge_patch(result.get(k), v)
    return result


def _has_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, Mapping):
        return any(_has_null(v) for v in value.values())
    return False  # a list is a value: its nulls are kept, as written


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON: ``1``, ``1.0`` and ``True`` are three values."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_json(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def merge_patch_between(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any] | None:
    """The smallest RFC 7386 merge patch that turns ``old`` into ``new``
    (``json_merge_patch(old, patch) == new``), or None when there is none: a merge patch cannot
    set a map's key to null (null removes the key)."""
    out: dict[str, Any] = {}
    for k, v in new.items():
        if k not in old:
            if _has_null(v):
                return None
            out[k] = v
            continue
        o = old[k]
        if isinstance(v, Mapping) and isinstance(o, Mapping):
            sub = merge_patch_between(o, v)
            if sub is None:
                return None
            if sub:
                out[k] = sub
        elif not _same_json(o, v):
            if _has_null(v):
                return None
            out[k] = v
    for k in old:
        if k not in new:
            out[k] = None
    return out


@functools.lru_cache(maxsize=4096)  # the writes of one virtual instant stamp the same time
def to_rfc3339(seconds: float) -> str:
    """RFC 3339 UTC text of ``EPOCH + seconds``; fractional seconds only when present (µs precision)."""
    micros = round(seconds * 1_000_000)
    t = EPOCH + _dt.timedelta(microseconds=micros)
    text = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        text += f".{t.microsecond:06d}".rstrip("0")
    return text + "Z"


_RFC3339_RE: Final = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$", re.ASCII
)


def from_rfc3339(text: str) -> float:
    """Virtual seconds of an RFC 3339 timestamp (inverse of :func:`to_rfc3339`); ValueError if malformed."""
    if not isinstance(text, str):
        raise ValueError(f"got {text!r}; expected an RFC 3339 timestamp such as 2024-01-01T00:00:00Z")
    m = _RFC3339_RE.match(text.strip())
    if m is None:
        raise ValueError(f"got {text!r}; expected an RFC 3339 timestamp such as 2024-01-01T00:00:00Z")
    year, month, day, hour, minute, sec = (int(m.group(i)) for i in range(1, 7))
    frac = m.group(7)
    tz_text = m.group(8)
    if tz_text in ("Z", "z"):
        tz = _dt.UTC
    else:
        sign = 1 if tz_text[0] == "+" else -1
        tz = _dt.timezone(sign * _dt.timedelta(hours=int(tz_text[1:3]), minutes=int(tz_text[4:6])))
    t = _dt.datetime(year, month, day, hour, minute, sec, tzinfo=tz)
    delta = t - EPOCH
    whole = delta.days * 86400 + delta.seconds
    micros = round(float(frac) * 1_000_000) if frac else 0
    return whole + micros / 1_000_000
