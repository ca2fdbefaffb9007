"""Per-group sums of per-job resource contributions, refreshed only for jobs that changed.

Several plugins open every session by summing something over all jobs: proportion sums
each queue's allocated, requested, inqueue and elastic resources; overcommit sums what
admitted PodGroups reserve. Recomputing those sums makes every session O(jobs) in
``Resource`` arithmetic, although between two sessions only a handful of jobs change.

:class:`JobSums` keeps, per job, the contribution it last made and the *state key* it was
computed from (by default :func:`job_state_key`: the job's mutation counter, which a new
PodGroup, a phase change through ``JobInfo.set_phase`` and every task change move). At
refresh only jobs whose key differs, new jobs and departed jobs are touched: their old
contribution is subtracted from its group and the new one added.

With the cache's change feed (``changes``, :class:`~pyvolcano.api.job.JobChanges`) and the
default key, a refresh does not even walk the jobs: it visits only the uids reported since
the previous refresh (every move of a job's version, and every job that joined or left the
mapping), in uid order; the first refresh, any refresh with nothing seen yet, and one after
the subscription overflowed walk them all. Either way the result is the one the walk over every job gives.

Invariants, after :meth:`JobSums.refresh`:

* ``sums[g][i]`` equals Σ ``contribution(job)[i]`` over the jobs of group ``g`` (exactly
  for the integral amounts Kubernetes quantities produce; the summation order differs from
  a fresh recompute, which upstream's map iteration does not fix either);
* a scalar dimension is present in ``sums[g][i]`` exactly when some contribution in the
  group has it, so dimension-presence checks behave as on a fresh sum;
* a group with no jobs is absent.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping

from pyvolcano.api.job import ChangedJobs, JobChanges, JobInfo
from pyvolcano.api.resource import Resource

__all__ = ["JobSums", "job_state_key"]

Contribution = tuple[Resource, ...]


def job_state_key(job: JobInfo) -> Hashable:
    """Everything a job's resource aggregates can depend on: its tasks, its PodGroup and the
    PodGroup's phase all move ``JobInfo.version``."""
    return job.version


class _Group:
    __slots__ = ("dims", "jobs", "sums")

    def __init__(self, width: int):
        self.sums: list[Resource] = [Resource() for _ in range(width)]
        # Per slot, how many contributions carry each scalar dimension.
        self.dims: list[dict[str, int]] = [{} for _ in range(width)]
        self.jobs = 0


class JobSums:
    """Σ of ``width`` resource vectors per group, maintained by deltas across sessions."""

    def __init__(
        self,
        width: int,
        contribution: Callable[[JobInfo], Contribution],
        group: Callable[[JobInfo], str] = lambda job: job.queue,
        key: Callable[[JobInfo], Hashable] = job_state_key,
        changes: JobChanges | None = None,
    ):
        self.width = width
        self._contribution = contribution
        self._group = group
        self._key = key
        # uid -> (the JobInfo, its key, its group, its contribution). Holding the JobInfo makes
        # the identity check exact: a job deleted and created again under the same uid between
        # two refreshes is a new object whose counter starts over.
        self._seen: dict[str, tuple[JobInfo, Hashable, str, Contribution]] = {}
        self._groups: dict[str, _Group] = {}
        # uids reported by the change feed since the last refresh (None: walk every job).
        self._changed: ChangedJobs | None = (changes.subscribe() if changes is not None and key is job_state_key
                                             else None)

    def refresh(self, jobs: Mapping[str, JobInfo]) -> dict[str, list[Resource]]:
        """Bring the sums up to date with ``jobs``; returns group → sums (do not mutate)."""
        seen = self._seen
        changed = self._changed
        visit = changed.take() if changed is not None else None
        if visit is not None and seen:
            for uid in visit:
                if uid not in jobs and uid in seen:
                    _job, _key, group, contrib = seen.pop(uid)
                    self._remove(group, contrib)
            items: Iterable[tuple[str, JobInfo]] = [(uid, jobs[uid]) for uid in visit if uid in jobs]
        else:
            for uid in [u for u in seen if u not in jobs]:
                _job, _key, group, contrib = seen.pop(uid)
                self._remove(group, contrib)
            items = jobs.items()
        key_of, group_of, contribution = self._key, self._group, self._contribution
        by_version = key_of is job_state_key
        for uid, job in items:
            key = job.version if by_version else key_of(job)
            old = seen.get(uid)
            if old is not None:
                if old[0] is job and old[1] == key:
                    continue
                self._remove(old[2], old[3])
            group = group_of(job)
            contrib = contribution(job)
            seen[uid] = (job, key, group, contrib)
            self._add(group, contrib)
        return {name: g.sums for name, g in self._groups.items()}

    def _add(self, group: str, contrib: Contribution) -> None:
        g = self._groups.get(group)
        if g is None:
            g = self._groups[group] = _Group(self.width)
        g.jobs += 1
        for i, r in enumerate(contrib):
            g.sums[i].add(r)
            dims = g.dims[i]
            for n in r.scalars:
                dims[n] = dims.get(n, 0) + 1

    def _remove(self, group: str, contrib: Contribution) -> None:
        g = self._groups[group]
        g.jobs -= 1
        if g.jobs == 0:
            del self._groups[group]
            return
        for i, r in enumerate(contrib):
            total = g.sums[i]
            total.sub(r)
            dims = g.dims[i]
            for n in r.scalars:
                left = dims[n] - 1
                if left:
                    dims[n] = left
                else:
                    del dims[n]
                    del total.scalars[n]
