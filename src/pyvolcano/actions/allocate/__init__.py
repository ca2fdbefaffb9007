"""allocate action (upstream pkg/scheduler/actions/allocate/), one module per part:

* :mod:`~pyvolcano.actions.allocate.allocate` — the action: queues, jobs, statements
  (``allocate.go`` ``Execute``);
* :mod:`~pyvolcano.actions.allocate.tasks` — the per-task placement both paths run
  (``allocateResourcesForTasks``, ``allocateResourcesForTask``, ``prioritizeNodes``);
* :mod:`~pyvolcano.actions.allocate.replica_batch` — the batched placement of identical
  replicas the per-task placement uses (the per-pod decisions, cheaper);
* :mod:`~pyvolcano.actions.allocate.topology` — the HyperNode path (``allocateForJob``,
  ``allocateForSubJob``, the nomination fast path);
* :mod:`~pyvolcano.actions.allocate.recorder` — the HyperNode decisions of one execution
  (``recorder.go``).

Imports go one way: ``allocate`` → ``topology`` → ``recorder``, ``tasks`` → ``replica_batch``;
no module calls back into one that imports it.
"""

from pyvolcano.actions.allocate.allocate import ARGUMENTS, NAME, Allocate, new

__all__ = ["ARGUMENTS", "NAME", "Allocate", "new"]
