"""The vcjob controller (``pkg/controllers/job``): Jobs → PodGroup + pods, policies, job plugins.

Modules: :mod:`.controller` (watch events → requests, queues, delayed actions),
:mod:`.policies` (requests and lifecycle-policy resolution), :mod:`.states` (the phase state
machine), :mod:`.actions` (SyncJob / KillJob / KillTarget), :mod:`.podgroup` (the job's
PodGroup and ``minResources``), :mod:`.pods` (pod construction and counting), :mod:`.cache`
(jobs and their pods), :mod:`.plugins` (env, svc, ssh, pytorch, mpi, tensorflow).
"""

from __future__ import annotations

from pyvolcano.controllers.job.controller import JobController

__all__ = ["JobController"]
