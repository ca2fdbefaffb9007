"""tdm: revocable-zone windows in the scheduler's local time, the predicate and score, the
victims shuffle evicts when a window closes (at most N per job), the evict period kept in the
session memo, and the preemptable vote (upstream tdm/tdm_test.go)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pytest

from builders import cache_of, node, open_session, plugin_conf, pod, podgroup, queue
from pyvolcano.conf import ConfigError
from pyvolcano.conf.loader import load_scheduler_conf
from pyvolcano.framework.session import open_session as open_ssn
from pyvolcano.plugins.tdm import local_time, window, zone_open
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.registry import default_registry

NOON = dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(("raw", "seconds"), [
    ("00:00_01:00", None), ("00:00-01:00", 3600), ("0:00-23:59", 23 * 3600 + 59 * 60), ("0:00", None),
    ("1:00-0:00", 23 * 3600), ("1:0-0:0", None), ("   1:00-0:00    ", 23 * 3600), ("23:59-23:59", 24 * 3600),
    ("63:59-23:59", None),
])
def test_windows_parse_as_upstreams_parse_revocable_zone(raw: str, seconds: int | None) -> None:
    w = window(raw, NOON)
    if seconds is None:
        assert isinstance(w, str)
    else:
        assert not isinstance(w, str)
        assert (w[1] - w[0]).total_seconds() == seconds


def test_a_zone_is_open_inside_its_window_in_the_schedulers_time_zone() -> None:
    zones = {"rz": "10:00-21:00"}
    assert zone_open(zones, "rz", NOON) is None
    assert zone_open(zones, "rz", NOON.replace(hour=22)) == "current time beyond revocable zone rz:10:00-21:00"
    # 12:00 UTC is 20:00 at +08:00 (open) and 04:00 at -08:00 (closed).
    assert zone_open(zones, "rz", local_time(12 * 3600, "+08:00")) is None
    assert zone_open(zones, "rz", local_time(12 * 3600, "-08:00")) is not None
    assert zone_open(zones, "other", NOON) == "revocable zone other not support"


def test_a_window_across_midnight_is_closed_just_after_midnight() -> None:
    # Upstream reads the window from today's start: at 00:30 it ran from 23:00 *today*.
    assert zone_open({"rz": "23:00-01:00"}, "rz", NOON.replace(hour=0, minute=30)) is not None
    assert zone_open({"rz": "23:00-01:00"}, "rz", NOON.replace(hour=23, minute=30)) is None


CONF = plugin_conf("tdm", {"tdm.revocable-zone.rz1": "10:00-21:00"})


def _nodes() -> list[dict[str, Any]]:
    return [queue("q"), node("rev", labels={"volcano.sh/revocable-zone": "rz1"}), node("plain")]


def _feasible(docs: list[dict[str, Any]], now: float) -> set[str]:
    session = open_session(*docs, conf=CONF, now=now)
    [task] = [t for j in session.jobs.values() for t in j.tasks.values()]
    ok, _ = session.predicate_failures(task, session.all_node_indices())
    return {session.node_list[i].name for i in session.all_node_indices()[ok]}


def test_a_revocable_task_may_use_a_revocable_node_only_while_its_zone_is_open() -> None:
    docs = [*_nodes(), podgroup("pg"), pod("a", "pg")]
    docs[-1]["metadata"]["annotations"]["volcano.sh/revocable-zone"] = "*"
    assert _feasible(docs, now=12 * 3600) == {"rev", "plain"}
    assert _feasible(docs, now=22 * 3600) == {"plain"}


def test_a_task_without_a_zone_never_uses_a_revocable_node() -> None:
    docs = [*_nodes(), podgroup("pg"), pod("a", "pg")]
    assert _feasible(docs, now=12 * 3600) == {"plain"}


def test_the_feasibility_memo_does_not_outlive_a_window() -> None:
    docs = [*_nodes(), podgroup("pg"), pod("a", "pg")]
    docs[-1]["metadata"]["annotations"]["volcano.sh/revocable-zone"] = "*"
    cache = cache_of(*docs)
    config = load_scheduler_conf(CONF)
    factories = default_registry().plugin_factories(config.plugin_names())
    verdicts = []
    for now in (12 * 3600, 22 * 3600):
        ssn = open_ssn(cache, config, factories, now=now, rng=np.random.default_rng(0))
        [task] = ssn.jobs["ns/pg"].tasks.values()
        verdicts.append(sorted(ssn.node_list[i].name for i in ssn.feasible_nodes(task, ssn.predicate_cache_key(task))))
        ssn.close()
    assert verdicts == [["plain", "rev"], ["plain"]]


def _running(name: str, group: str, node_name: str, preemptable: str = "true") -> dict[str, Any]:
    p = pod(name, group, node_name=node_name, phase="Running")
    p["metadata"]["annotations"]["volcano.sh/preemptable"] = preemptable
    return p


SHUFFLE = load_scheduler_conf("""
actions: shuffle
tiers:
- plugins:
  - name: tdm
    arguments:
      tdm.revocable-zone.rz1: "10:00-21:00"
      tdm.evict.period: 5m
""")


def _shuffle_at(cache: Any, now: float) -> list[str]:
    factories = default_registry().plugin_factories(SHUFFLE.plugin_names())
    actions = default_registry().action_factories(SHUFFLE.actions)
    return run_once(cache, SHUFFLE, factories, actions, now=now, rng=np.random.default_rng(0)).evictions


def test_victims_are_taken_once_per_evict_period() -> None:
    pg = podgroup("pg", phase="Running")
    pg["metadata"]["annotations"] = {"volcano.sh/jdb-max-unavailable": "3"}
    docs = [*_nodes(), pg, *(_running(f"p{i}", "pg", "rev") for i in range(6)), _running("keep", "pg", "rev", "false")]
    cache = cache_of(*docs)
    assert _shuffle_at(cache, 12 * 3600) == []  # open
    first = _shuffle_at(cache, 22 * 3600)  # closed: 3 of the 6 preemptable pods
    assert len(first) == 3 and "ns/keep" not in first
    assert _shuffle_at(cache, 22 * 3600 + 60) == []  # within tdm.evict.period (5m) of the last round
    assert cache.memo.plugin_state["tdm"]["last_evict_at"] == 22 * 3600


def test_a_preemptable_preemptor_rejects_and_victims_come_from_plain_nodes_only() -> None:
    docs = [*_nodes(), podgroup("pg", phase="Running"), _running("on-rev", "pg", "rev"),
            _running("on-plain", "pg", "plain"), podgroup("hi"), pod("want", "hi")]
    session = open_session(*docs, conf=plugin_conf("tdm", {"tdm.revocable-zone.rz1": "0:00-0:00"}))
    tasks = {t.name: t for j in session.jobs.values() for t in j.tasks.values()}
    candidates = [tasks["on-rev"], tasks["on-plain"]]
    assert session.preemptable(tasks["want"], candidates) == []  # pods are preemptable by default: reject
    tasks["want"].preemptable = False
    assert [t.name for t in session.preemptable(tasks["want"], candidates)] == ["on-plain"]


def test_non_preemptable_jobs_come_first_and_only_they_starve() -> None:
    keep = podgroup("keep")
    spare = podgroup("spare")
    spare["metadata"]["annotations"] = {"volcano.sh/preemptable": "true"}
    session = open_session(*_nodes(), keep, spare, pod("a", "keep"), pod("b", "spare"),
                           conf=plugin_conf("tdm", {}))
    k, s = session.jobs["ns/keep"], session.jobs["ns/spare"]
    assert session.job_order_fn(k, s) and not session.job_order_fn(s, k)
    assert session.job_starving(k) and not session.job_starving(s)


@pytest.mark.parametrize(("arguments", "field"), [
    ({"tdm.revocable-zone.rz1": 10}, "tdm.revocable-zone.rz1"),
    ({"tdm.evict.period": "soon"}, "tdm.evict.period"),
])
def test_bad_arguments_are_refused_with_their_field(arguments: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_configuration(default_registry(), text=plugin_conf("tdm", arguments), source="conf")
    assert f"arguments.{field}" in str(e.value)


def test_a_window_that_does_not_parse_is_accepted_and_means_closed() -> None:
    load_configuration(default_registry(), text=plugin_conf("tdm", {"tdm.revocable-zone.rz1": "00:00_01:00"}))


def test_in_a_simulation_work_lent_a_revocable_node_is_evicted_when_its_window_closes() -> None:
    from sim_builders import simulate, vcjob

    text = """
actions: "enqueue, allocate, shuffle"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: tdm
    arguments:
      tdm.revocable-zone.rz1: "0:00-0:05"
      tdm.evict.period: 1m
"""
    job = vcjob("spare", cpu="2", replicas=2, min_available=1, duration="1h",
                node_selector={"volcano.sh/revocable-zone": "rz1"})
    job["spec"]["tasks"][0]["template"]["metadata"]["annotations"]["volcano.sh/revocable-zone"] = "*"
    rev = node("rev", cpu="8", labels={"volcano.sh/revocable-zone": "rz1"})
    res, _sim = simulate([(0, rev), (0, job)], conf=text, until=600)
    evictions = [(t, e) for t, e in res.timeline if e.startswith("evict")]
    # The virtual clock starts at 2024-01-01T00:00:00 UTC: rz1 is open until 00:05:00 and
    # closed from 00:05:01; one pod per round (no budget), a round per evict period.
    assert [t for t, _e in evictions] == [301.0, 361.0]
    assert all("(shuffle)" in e for _t, e in evictions)


def test_a_mistyped_key_is_refused_and_zone_keys_are_a_prefix() -> None:
    from pyvolcano.conf.loader import ConfigError
    from pyvolcano.runtime.configuration import load_configuration
    from pyvolcano.runtime.registry import default_registry as registry

    text = ("actions: allocate\ntiers:\n- plugins:\n  - name: tdm\n"
            "    arguments: {{tdm.revocable-zone.rz1: '0:00-23:59', {key}: 1m}}\n")
    load_configuration(registry(), text=text.format(key="tdm.evict.period"), source="sched.conf")
    with pytest.raises(ConfigError) as info:
        load_configuration(registry(), text=text.format(key="tdm.evict.peroid"), source="sched.conf")
    assert "did you mean 'tdm.evict.period'?" in str(info.value)
