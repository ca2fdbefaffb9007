"""The pre-bind stage: plugin steps that run before a pod's bind, with rollback.

Upstream Volcano binds in stages (``pkg/scheduler/cache/cache.go`` ``executePreBinds``,
``pkg/scheduler/framework/interface.go`` ``BindContextHandler``, ``PreBinder``): a plugin that
must write something to the API server before a pod may be bound (the PV/PVC bindings of
kube-scheduler's VolumeBinding, DRA's claim allocations) puts what it decided for the task into
the task's *bind context* while the session runs, and registers a *pre-binder* whose
``PreBind`` writes it when the bind is carried out and whose ``PreBindRollBack`` undoes it when
a later step, or the bind itself, fails.

Here:

* a plugin registers a :class:`PreBinder` with :meth:`BindContexts.register` (from
  ``Session.add_pre_binder`` in ``on_session_open``) and, in its allocate event handler, sets
  the task's *extension* (any value its pre-binder understands) under the pre-binder's name
  with :meth:`BindContexts.set`; its deallocate handler drops it (:meth:`BindContexts.drop`),
  so that a discarded statement leaves no extension behind. Pre-binders are keyed by their own
  name, not the plugin's: one plugin may register several (upstream's ``predicates`` pre-binds
  both VolumeBinding and DynamicResources);
* the scheduling cycle (:mod:`pyvolcano.runtime.cycle`) turns the extensions of every task it
  binds into that bind request's :class:`PreBindStep` s, in the pre-binders' registration
  order, and calls each step's :meth:`PreBinder.assume` as it applies the bind to the cache
  (the cache's "assumed" state: the next session must not hand out again what this one gave);
* the decision writer (:mod:`pyvolcano.runtime.writer`) runs each step's
  :meth:`PreBinder.pre_bind` before the pod's bind. When one raises, the steps already done
  are rolled back in reverse order (:meth:`PreBinder.rollback`), the pod is not bound, a
  ``FailedScheduling`` Event names the plugin and the reason, and the objects every step names
  in :meth:`PreBinder.stale` are re-read by the writer's owner, which drops the cache's
  assumptions about them along with the pod's. A bind that fails after every step succeeded
  rolls them all back the same way.

Invariants: a task without an extension takes none of these paths (the cycle and the writer
look up one dictionary); a pre-binder's methods read only their extension, the target and the
store (they run after the session closed, on the writer's workers); the steps of one bind run
in registration order and are rolled back in reverse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pyvolcano.api.task import TaskInfo
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.store.base import Store

__all__ = ["BindContexts", "BindTarget", "ObjectKey", "PreBindError", "PreBindStep", "PreBinder"]

ObjectKey = tuple[str, str | None, str]
"""(kind, namespace or None, name) of an object a failed pre-bind leaves stale in the cache."""


@dataclass(frozen=True, slots=True)
class BindTarget:
    """The pod a bind request binds, and where."""

    namespace: str
    name: str
    uid: str
    node: str


class PreBindError(Exception):
    """A pre-bind step could not be carried out; the message says why, for the pod's Event."""


class PreBinder(Protocol):
    """A plugin's pre-bind step (upstream ``PreBinder``: ``PreBind`` and ``PreBindRollBack``)."""

    name: str

    def assume(self, cache: SchedulerCache, target: BindTarget, extension: Any) -> None:
        """Apply ``extension`` to the cache as the bind is applied (an "assumed" state)."""
        ...

    def pre_bind(self, store: Store, target: BindTarget, extension: Any) -> None:
        """Write ``extension`` to the store; raise :class:`PreBindError` (or a store error)."""
        ...

    def rollback(self, store: Store, target: BindTarget, extension: Any) -> None:
        """Undo what :meth:`pre_bind` wrote, as far as it can still be undone."""
        ...

    def stale(self, extension: Any) -> list[ObjectKey]:
        """The objects whose cached state :meth:`assume` changed, to re-read after a failure."""
        ...


@dataclass(frozen=True, slots=True)
class PreBindStep:
    binder: PreBinder
    extension: Any


@dataclass(slots=True)
class BindContexts:
    """A session's pre-binders and the tasks' bind-context extensions (task uid -> pre-binder name -> value)."""

    binders: dict[str, PreBinder] = field(default_factory=dict)
    extensions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def register(self, binder: PreBinder) -> None:
        self.binders[binder.name] = binder

    def set(self, task: TaskInfo, binder: str, extension: Any) -> None:
        self.extensions.setdefault(task.uid, {})[binder] = extension

    def drop(self, task: TaskInfo, binder: str) -> None:
        got = self.extensions.get(task.uid)
        if got is not None:
            got.pop(binder, None)
            if not got:
                del self.extensions[task.uid]

    def get(self, task: TaskInfo, binder: str) -> Any:
        got = self.extensions.get(task.uid)
        return None if got is None else got.get(binder)

    def steps(self, uid: str) -> tuple[PreBindStep, ...]:
        """The pre-bind steps of the task ``uid``, in the pre-binders' registration order."""
        got = self.extensions.get(uid)
        if not got:
            return ()
        return tuple(PreBindStep(binder, got[name]) for name, binder in self.binders.items() if name in got)
