"""Whole simulations come out the same with gangs placed as a batch and one pod at a time.

The batch forms of allocate (template runs, the statement's batch allocation and bulk status
changes, the queue-quota count, JobReady asked at the gang's count; actions/allocate/tasks.py) are
switched off together and the Philly slice and the preemption scenario must give the same
jobs, phases, times, timeline and session count.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from tests.simulator.test_incremental import _outcome, _philly_slice, _preemption

from pyvolcano.cache.cache import SchedulerOptions
from pyvolcano.simulator import runtime

FORMS = ("batch_templates", "batch_statement", "batch_quota", "batch_ready")


@pytest.mark.parametrize("scenario", [_philly_slice, _preemption], ids=["philly-150", "preemption"])
def test_batch_forms_change_no_decision_of_a_simulation(scenario: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    batched = _outcome(scenario())
    per_pod = functools.partial(SchedulerOptions, **dict.fromkeys(FORMS, False))
    monkeypatch.setattr(runtime, "SchedulerOptions", per_pod)
    assert _outcome(scenario()) == batched
