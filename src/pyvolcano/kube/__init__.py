"""Kubernetes mode: the store protocol over a real kube-apiserver.

:func:`connect` builds a :class:`~pyvolcano.kube.store.KubeStore` from the usual client
options (kubeconfig, ``--master``, QPS and burst); see docs/kubernetes.md.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

__all__ = ["connect"]


def connect(*, kubeconfig: str | None = None, master: str | None = None, context: str | None = None,
            qps: float = 2000.0, burst: int = 2000, kinds: Collection[str] = (), namespace: str | None = None,
            start: bool = True, user_agent: str = "pyvolcano") -> Any:
    """A KubeStore watching ``kinds`` (informers started unless ``start`` is False)."""
    from pyvolcano.kube.client import KubeClient, load_config
    from pyvolcano.kube.ratelimit import rate_limiter_for
    from pyvolcano.kube.store import KubeStore

    limiter = rate_limiter_for(qps, burst)
    client = KubeClient(load_config(kubeconfig, master, context), limiter=limiter, user_agent=user_agent)
    store = KubeStore(client, kinds, namespace=namespace)
    if start:
        store.start()
    return store
