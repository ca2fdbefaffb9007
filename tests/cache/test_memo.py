"""SessionMemo, the one owner of what sessions keep: RowMemo's per-key arrays up to date with the
node table's change log, per-job records that live and die with the cache's jobs, the PodGroup
status handed back, kept values and the one switch."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.api.node import NodeTable
from pyvolcano.api.resource import Resource
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.memo import WATER_FILLING, RowMemo, SessionMemo
from pyvolcano.conf import default_configuration
from pyvolcano.runtime.cycle import SessionResult, run_once
from pyvolcano.runtime.registry import default_registry


def _table(n: int) -> NodeTable:
    table = NodeTable()
    for _ in range(n):
        table.add_row(Resource(1000.0))
    return table


def test_a_new_key_knows_no_row() -> None:
    memo = RowMemo(np.float64)
    values, known, stale = memo.refresh("k", _table(3))
    assert stale is None and not known.any() and len(values) == 3


def test_only_rows_changed_since_become_unknown() -> None:
    table, memo = _table(4), RowMemo(bool)
    values, known, _ = memo.refresh("k", table)
    values[:] = True
    known[:] = True
    table.bump(2)
    values2, known2, stale = memo.refresh("k", table)
    assert values2 is values and stale is not None and stale.tolist() == [2]
    assert known2.tolist() == [True, True, False, True]
    _v, _k, stale = memo.refresh("k", table)
    assert stale is not None and not len(stale)  # up to date now: nothing to evaluate again


def test_a_table_of_another_size_starts_the_entry_afresh() -> None:
    table, memo = _table(2), RowMemo(bool)
    _v, known, _ = memo.refresh("k", table)
    known[:] = True
    table.add_row(Resource(1000.0))
    values, known, stale = memo.refresh("k", table)
    assert stale is None and len(values) == 3 and not known.any()


def test_put_records_every_row_as_known_and_the_oldest_key_goes_first() -> None:
    table, memo = _table(2), RowMemo(bool, limit=2)
    memo.put("a", np.array([True, False]), table.change_position)
    values, known, stale = memo.refresh("a", table)
    assert values.tolist() == [True, False] and known.all() and stale is not None and not len(stale)
    memo.refresh("b", table)
    memo.refresh("c", table)
    assert len(memo) == 2
    assert memo.refresh("a", table)[2] is None  # "a" was dropped: it starts afresh


def _session(cache: SchedulerCache, now: float = 0.0) -> SessionResult:
    config = default_configuration()
    registry = default_registry()
    return run_once(cache, config, registry.plugin_factories(config.plugin_names()),
                    registry.action_factories(config.actions), now=now, rng=np.random.default_rng(0))


def test_the_memo_forgets_a_job_the_cache_forgets() -> None:
    # A pod no node fits: its job is diagnosed and keeps a record between sessions.
    cache = cache_of(node("n1", cpu="1"), queue("q"), podgroup("pg", min_member=1), pod("p", "pg", cpu="8"))
    _session(cache)
    job = cache.jobs["ns/pg"]
    assert cache.memo.diagnosis(job) is not None
    cache.delete_podgroup("ns", "pg")
    cache.delete_pod(next(iter(job.tasks)))
    assert "ns/pg" not in cache.jobs
    assert "ns/pg" not in cache.memo._records and "ns/pg" not in cache.memo._diagnosed


def test_a_job_created_again_under_its_old_name_starts_with_a_fresh_record() -> None:
    cache = cache_of(node("n1", cpu="1"), queue("q"), podgroup("pg", min_member=1), pod("p", "pg", cpu="8"))
    _session(cache)
    old = cache.jobs["ns/pg"]
    pg = old.podgroup
    assert pg is not None
    record = cache.memo.job(old)
    record.unschedulable_at = (1, 1, None)
    cache.delete_podgroup("ns", "pg")
    cache.delete_pod(next(iter(old.tasks)))
    cache.memo._records["ns/pg"] = record  # even a record the cache did not drop is not reused
    cache.add_podgroup(dataclasses.replace(pg))
    new = cache.jobs["ns/pg"]
    assert new is not old
    assert cache.memo.job(new).unschedulable_at is None


def test_a_new_podgroup_object_is_taken_as_the_status_already_written() -> None:
    cache = cache_of(node("n1"), queue("q"), podgroup("pg", min_member=1), pod("p", "pg"))
    _session(cache)
    assert [pg.phase for pg in _session(cache, now=1.0).changed_podgroups] == ["Running"]
    job = cache.jobs["ns/pg"]
    assert job.podgroup is not None
    # The informer brings the PodGroup back as the writer wrote it: nothing to write again.
    cache.add_podgroup(dataclasses.replace(job.podgroup))
    assert _session(cache, now=2.0).changed_podgroups == []
    # A PodGroup whose stored status differs from the one the session derives is written.
    cache.add_podgroup(dataclasses.replace(job.podgroup, phase="Inqueue"))
    assert [pg.phase for pg in _session(cache, now=3.0).changed_podgroups] == ["Running"]


def test_from_scratch_no_value_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = cache_of(node("n1"), queue("q"))
    memo = cache.memo
    memo.keep(WATER_FILLING, "key", [])
    assert memo.kept(WATER_FILLING, "key") == []
    assert memo.kept(WATER_FILLING, "other key") is None
    monkeypatch.setattr(SessionMemo, "incremental", False)
    assert memo.kept(WATER_FILLING, "key") is None
    sums = memo.job_sums("proportion/queue-sums", 1, lambda job: (job.allocated,))
    assert sums is not memo.job_sums("proportion/queue-sums", 1, lambda job: (job.allocated,))
