"""JobFilter: the jobs a per-session pass can act on, kept between sessions by the change feed.

Several passes walk every job of the session only to leave most of them alone after a cheap
look: enqueue acts only on PodGroups still Pending, allocate only on jobs with a pending pod
it could place (or a Pending PodGroup it admits when enqueue is not configured). A
:class:`JobFilter` keeps the uids of the cache's jobs for which ``wanted(job)`` held when it
last looked, and at :meth:`JobFilter.select` re-evaluates only the jobs the cache's change
feed (:class:`~pyvolcano.api.job.JobChanges`) reported since; the pass then walks the wanted
jobs of the session, in uid order, instead of every job.

Invariants:

* ``wanted`` reads only what moves the job's mutation counter (its tasks and their statuses,
  its PodGroup and the PodGroup's phase), so the answer for a job not reported since it was
  evaluated is still the answer it gave. It is evaluated on the cache's jobs (not the
  session's view), so a job outside the view keeps its answer until it is reported.
* The pass must leave a job for which ``wanted`` is False exactly as it was (its body is a
  no-op for it). Then walking the selected jobs in uid order does what walking every job of
  the session (also in uid order) does.
* The first selection, a selection after the subscription overflowed, and every selection
  with ``enabled`` False walk every job (``enabled`` False returns every job of the session:
  the from-scratch form the equivalence tests compare with).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyvolcano.api.job import JobChanges, JobInfo

__all__ = ["JobFilter"]


class JobFilter:
    """The cache's jobs for which ``wanted`` holds, refreshed from the change feed."""

    __slots__ = ("_changed", "_jobs", "_members", "_order", "_primed", "_wanted")

    def __init__(self, wanted: Callable[[JobInfo], bool], jobs: Mapping[str, JobInfo], changes: JobChanges):
        self._wanted = wanted
        # The cache's jobs (every job, with or without a PodGroup): wanted is evaluated there.
        self._jobs = jobs
        self._changed = changes.subscribe()
        self._members: set[str] = set()
        self._order: list[str] | None = []
        self._primed = False

    def select(self, jobs: Mapping[str, JobInfo], *, enabled: bool = True) -> list[JobInfo]:
        """The jobs of ``jobs`` (a session's view) for which ``wanted`` holds, in uid order;
        with ``enabled`` False every job of ``jobs``, in its order."""
        reported = self._changed.take()
        if not enabled:
            self._primed = False
            return list(jobs.values())
        members = self._members
        wanted = self._wanted
        if reported is None or not self._primed:
            members.clear()
            members.update(uid for uid, job in self._jobs.items() if wanted(job))
            self._order = None
            self._primed = True
        elif reported:
            cache_jobs = self._jobs
            for uid in reported:
                job = cache_jobs.get(uid)
                if job is not None and wanted(job):
                    if uid not in members:
                        members.add(uid)
                        self._order = None
                elif uid in members:
                    members.discard(uid)
                    self._order = None
        order = self._order
        if order is None:
            order = self._order = sorted(members)
        out = []
        for uid in order:
            job = jobs.get(uid)
            if job is not None:
                out.append(job)
        return out

    def __len__(self) -> int:
        return len(self._members)
