"""Where the dashboard's data comes from: a snapshot file, a live cluster, or a simulation run.

Every source answers :meth:`Source.views` with a :class:`Views` — the five view models of one
state — and counts its changes in :meth:`Source.revision`; :meth:`Source.wait` blocks until the
revision moves (the server's event stream waits on it). The view models of a cluster state are
:class:`StateViews` over an :class:`~pyvolcano.dashboard.analysis.Analysis`; a simulation run's
are :class:`~pyvolcano.dashboard.run_views.RunViews` at a time ``t`` of the run.

* :class:`SnapshotSource` — the objects of ``--cluster FILE`` (as ``schedule`` reads them), read
  once; revision 0 for ever.
* :class:`LiveSource` — the cluster through a :class:`~pyvolcano.kube.store.KubeStore`, the
  informer store the scheduler uses: its local revision is the source's revision, and the
  analysis of a revision is built on first request (:func:`pyvolcano.simulator.state.state_from_store`)
  and kept until the next one, so a burst of changes costs one analysis per request, not per
  event. Events (for the job page) are listed from the API server when a revision is analysed;
  when they cannot be read the page shows none and the notes say why. ``now`` comes from the
  clock the source is given (the command passes the wall clock).
* :class:`~pyvolcano.dashboard.run_views.ReportSource` — ``simulate --report DIR``'s run data.

Bad input raises :class:`SourceError` with one line naming the file and what was expected.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from pyvolcano.api.inputs import read_inputs
from pyvolcano.api.manifest import ManifestError, iter_documents
from pyvolcano.api.names import SCHEDULER_KINDS
from pyvolcano.conf import ConfigError
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.dashboard.analysis import Analysis
from pyvolcano.dashboard.job_detail import job_detail
from pyvolcano.dashboard.jobs import jobs_view
from pyvolcano.dashboard.nodes import nodes_view
from pyvolcano.dashboard.queues import queues_view
from pyvolcano.dashboard.workflows import workflows_view
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.registry import Registry
from pyvolcano.simulator.restore import RuntimePolicy
from pyvolcano.store.base import Store, StoreError, Synced, Waitable

__all__ = ["LIVE_KINDS", "LiveSource", "SnapshotSource", "Source", "SourceError", "StateViews", "Views",
           "snapshot_events"]

LIVE_KINDS = (*SCHEDULER_KINDS, "Job", "JobTemplate", "JobFlow", "CronJob")
"""What the live source's informers watch: the scheduler's own inputs, and the Volcano Jobs and
workflow kinds the forecasts and the Workflows view read (a cluster without their CRDs has none)."""


class SourceError(Exception):
    """The source cannot be read: a user mistake (exit status 2)."""


class Views(Protocol):
    """The view models of one state (docs/dashboard.md)."""

    def queues(self) -> dict[str, Any]: ...

    def jobs(self) -> dict[str, Any]: ...

    def job(self, key: str) -> dict[str, Any] | None: ...

    def nodes(self) -> dict[str, Any]: ...

    def workflows(self) -> dict[str, Any]: ...


class Source(Protocol):
    kind: str
    """``snapshot``, ``live`` or ``report``."""
    name: str
    """What the header shows: the file, the cluster or the run."""

    def views(self, t: float | None = None) -> Views: ...

    def revision(self) -> int: ...

    def wait(self, since: int, timeout: float) -> int: ...

    def meta(self) -> dict[str, Any]: ...

    def writer(self) -> Store | None:
        """The store actions write to (the live cluster's), None for a read-only source."""
        ...

    def close(self) -> None: ...


class StateViews:
    """The view models of a cluster state (an :class:`Analysis`)."""

    def __init__(self, analysis: Analysis):
        self.analysis = analysis

    def queues(self) -> dict[str, Any]:
        return queues_view(self.analysis)

    def jobs(self) -> dict[str, Any]:
        return jobs_view(self.analysis)

    def job(self, key: str) -> dict[str, Any] | None:
        return job_detail(self.analysis, key)

    def nodes(self) -> dict[str, Any]:
        return nodes_view(self.analysis)

    def workflows(self) -> dict[str, Any]:
        return workflows_view(self.analysis)


def snapshot_events(path: str | Path) -> list[dict[str, Any]]:
    """The Events among a snapshot's documents (either API version)."""
    out: list[dict[str, Any]] = []
    for _source, text in read_inputs([path]):
        if isinstance(text, ManifestError):
            raise text
        out += [d for _i, d in iter_documents(text, str(path)) if isinstance(d, dict) and d.get("kind") == "Event"]
    return out


def _config(registry: Registry, config_path: Path | None) -> SchedulerConfiguration:
    try:
        return load_configuration(registry, config_path)
    except (ConfigError, ArgumentError) as e:
        raise SourceError(str(e)) from None


class Unchanging:
    """What a source that never changes answers: revision 0, and a wait that only waits."""

    def revision(self) -> int:
        return 0

    def wait(self, since: int, timeout: float) -> int:
        time.sleep(timeout)
        return 0


class SnapshotSource(Unchanging):
    kind = "snapshot"

    def __init__(self, path: str | Path, registry: Registry, *, config_path: Path | None = None,
                 policy: RuntimePolicy | None = None, seed: int = 0):
        from pyvolcano.simulator.state import state_from_snapshot

        self.name = str(path)
        if str(path) != "-" and not Path(path).exists():
            raise SourceError(f"--cluster {path}: no such file or directory")
        config = _config(registry, config_path)
        try:
            state = state_from_snapshot([path], registry)
            events = snapshot_events(path)
        except (ManifestError, ConfigError, ArgumentError, ValueError) as e:
            raise SourceError(str(e)) from None
        if config_path is None and state.config is not None:
            config = state.config
        self.analysis = Analysis(state, config, registry, policy or RuntimePolicy(), seed, events)
        self._views = StateViews(self.analysis)

    def views(self, t: float | None = None) -> Views:
        return self._views

    def meta(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "notes": list(self.analysis.state.notes)}

    def writer(self) -> Store | None:
        return None

    def close(self) -> None:
        pass


class LiveSource:
    kind = "live"

    def __init__(self, store: Store, registry: Registry, *, name: str, config_path: Path | None = None,
                 policy: RuntimePolicy | None = None, seed: int = 0, clock: Callable[[], float] = time.time,
                 sync_timeout: float = 30.0):
        self.store = store
        self.registry = registry
        self.name = name
        self.config_path = config_path
        self.config = _config(registry, config_path)
        self.policy = policy or RuntimePolicy()
        self.seed = seed
        self.clock = clock
        self.sync_timeout = sync_timeout
        self.notes: list[str] = []
        self._lock = threading.Lock()
        self._built: tuple[int, StateViews] | None = None

    def revision(self) -> int:
        return int(self.store.revision)

    def wait(self, since: int, timeout: float) -> int:
        if isinstance(self.store, Waitable):
            self.store.wait(since, timeout)
        else:
            time.sleep(timeout)
        return self.revision()

    def views(self, t: float | None = None) -> Views:
        from pyvolcano.simulator.state import LiveReadError, state_from_store

        with self._lock:
            if isinstance(self.store, Synced):
                # The revision is read once every informer has listed: an informer still listing
                # would move it and make the state built now look stale at the next request.
                self.store.wait_for_sync(self.sync_timeout)
            rev = self.revision()
            if self._built is not None and self._built[0] == rev:
                return self._built[1]
            try:
                state = state_from_store(self.store, self.sync_timeout, self.name, float(math.floor(self.clock())),
                                         None if self.config_path is not None else self.registry)
            except (ManifestError, LiveReadError) as e:
                raise SourceError(str(e)) from None
            config = state.config if self.config_path is None and state.config is not None else self.config
            notes = list(state.notes)
            try:
                events = self.store.list("Event")
            except StoreError as e:
                events = []
                notes.append(f"Events not read ({e})")
            self.notes = notes
            views = StateViews(Analysis(state, config, self.registry, self.policy, self.seed, events))
            self._built = (rev, views)
            return views

    def meta(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "notes": self.notes}

    def writer(self) -> Store | None:
        return self.store

    def close(self) -> None:
        if isinstance(self.store, Synced):
            self.store.stop()
