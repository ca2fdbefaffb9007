"""The object store every controller and the scheduler cache use (Kubernetes API semantics).

:class:`InMemoryStore` is the reference implementation; anything satisfying :class:`Store`
(a SQLite store, a real-cluster adapter) can replace it without changes above this package.
"""

from pyvolcano.store.base import (
    CLUSTER_SCOPED_KINDS,
    EPOCH,
    STATUS_SUBRESOURCE_KINDS,
    Admission,
    AlreadyExists,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    Store,
    StoreError,
    WatchEvent,
    clone,
    from_rfc3339,
    is_namespaced,
    json_merge_patch,
    merge_patch_between,
    object_key,
    to_rfc3339,
)
from pyvolcano.store.memory import InMemoryStore

__all__ = [
    "CLUSTER_SCOPED_KINDS",
    "EPOCH",
    "STATUS_SUBRESOURCE_KINDS",
    "Admission",
    "AlreadyExists",
    "Conflict",
    "Forbidden",
    "InMemoryStore",
    "Invalid",
    "NotFound",
    "Store",
    "StoreError",
    "WatchEvent",
    "clone",
    "from_rfc3339",
    "is_namespaced",
    "json_merge_patch",
    "merge_patch_between",
    "object_key",
    "to_rfc3339",
]
