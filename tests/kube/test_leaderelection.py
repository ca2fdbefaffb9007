"""Lease leader election: client-go's tryAcquireOrRenew, the Run loop's timing, and the runner."""

from __future__ import annotations

import itertools
import random
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from pyvolcano.kube.leaderelection import (
    CONTROLLER_MANAGER_LOCK_NAME,
    ElectionLoop,
    LeaderElectionConfig,
    LeaderElector,
    Outcome,
    Phase,
    default_identity,
    format_micro_time,
    run,
    scheduler_lock_name,
)
from pyvolcano.store import Conflict, InMemoryStore, StoreError

CFG = LeaderElectionConfig(resource_name="volcano")
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def elector(store: Any, identity: str, cfg: LeaderElectionConfig = CFG) -> LeaderElector:
    # Remote timestamps come from a wall clock far from the local one (one second later at each
    # write): they must not matter.
    ticks = itertools.count()
    return LeaderElector(store, cfg, identity, wall_clock=lambda: 1_700_000_000.0 + next(ticks))


def lease(store: InMemoryStore) -> dict[str, Any]:
    return store.get("Lease", "volcano-system", "volcano")


class FlakyStore:
    """A store whose calls fail with a StoreError while ``down`` is set."""

    def __init__(self, inner: InMemoryStore):
        self.inner = inner
        self.down = False

    def __getattr__(self, name: str) -> Callable[..., Any]:
        fn = getattr(self.inner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                raise StoreError("Lease", "volcano-system/volcano", "connection refused")
            return fn(*args, **kwargs)

        return call


class LockedStore:
    """InMemoryStore behind a lock, for tests with real threads."""

    def __init__(self) -> None:
        self.inner = InMemoryStore()
        self.lock = threading.Lock()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        fn = getattr(self.inner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            with self.lock:
                return fn(*args, **kwargs)

        return call


# ----------------------------------------------------------------------------- one step


def test_first_candidate_creates_the_lease_and_leads():
    store = InMemoryStore()
    a = elector(store, "a")
    st = a.try_acquire_or_renew(0.0)
    assert st.outcome is Outcome.ACQUIRED and st.leading and st.holder == "a"
    obj = lease(store)
    assert obj["apiVersion"] == "coordination.k8s.io/v1" and obj["kind"] == "Lease"
    spec = obj["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == spec["renewTime"] == "2023-11-14T22:13:20.000000Z"
    assert MICRO.match(spec["renewTime"])


def test_leader_renewal_moves_renew_time_and_keeps_acquire_time_and_transitions():
    store = InMemoryStore()
    wall = [100.0]
    a = LeaderElector(store, CFG, "a", wall_clock=lambda: wall[0])
    a.try_acquire_or_renew(0.0)
    wall[0] = 102.5
    st = a.try_acquire_or_renew(2.0)
    assert st.outcome is Outcome.RENEWED and st.leading
    spec = lease(store)["spec"]
    assert spec["acquireTime"] == "1970-01-01T00:01:40.000000Z"
    assert spec["renewTime"] == "1970-01-01T00:01:42.500000Z"
    assert spec["leaseTransitions"] == 0


def test_standby_takes_over_exactly_one_lease_duration_after_it_last_saw_a_renewal():
    store = InMemoryStore()
    a, b = elector(store, "a"), elector(store, "b")
    a.try_acquire_or_renew(0.0)
    assert b.try_acquire_or_renew(1.0).outcome is Outcome.HELD_BY_OTHER
    a.try_acquire_or_renew(2.0)  # the last renewal
    assert b.try_acquire_or_renew(3.0).outcome is Outcome.HELD_BY_OTHER  # observed the change at 3.0
    assert b.try_acquire_or_renew(17.999).outcome is Outcome.HELD_BY_OTHER
    st = b.try_acquire_or_renew(18.0)
    assert st.outcome is Outcome.ACQUIRED and st.leading and st.transitions == 1
    spec = lease(store)["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1


def test_expiry_uses_the_local_observation_not_the_remote_renew_time():
    store = InMemoryStore()
    store.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                  "metadata": {"name": "volcano", "namespace": "volcano-system"},
                  "spec": {"holderIdentity": "x", "leaseDurationSeconds": 15,
                           "renewTime": "2001-01-01T00:00:00.000000Z", "leaseTransitions": 4}})
    b = elector(store, "b")
    assert b.try_acquire_or_renew(100.0).outcome is Outcome.HELD_BY_OTHER
    assert b.try_acquire_or_renew(114.9).outcome is Outcome.HELD_BY_OTHER
    st = b.try_acquire_or_renew(115.0)
    assert st.outcome is Outcome.ACQUIRED and st.transitions == 5


def test_expiry_uses_the_duration_the_holder_wrote():
    store = InMemoryStore()
    short = LeaderElectionConfig(resource_name="volcano", lease_duration=5, renew_deadline=3, retry_period=1)
    elector(store, "a", short).try_acquire_or_renew(0.0)
    b = elector(store, "b")  # configured for 15 s, but the lease says 5
    b.try_acquire_or_renew(0.0)
    assert b.try_acquire_or_renew(4.9).outcome is Outcome.HELD_BY_OTHER
    assert b.try_acquire_or_renew(5.0).outcome is Outcome.ACQUIRED


def test_fast_path_conflict_falls_back_to_rereading_the_lease():
    store = InMemoryStore()
    a = elector(store, "a")
    a.try_acquire_or_renew(0.0)
    other = lease(store)
    other["metadata"]["labels"] = {"touched": "yes"}  # someone else writes: the version a saw is stale
    store.update(other)
    st = a.try_acquire_or_renew(2.0)
    assert st.outcome is Outcome.RENEWED and st.leading
    assert lease(store)["metadata"]["labels"] == {"touched": "yes"}


def test_of_two_standbys_racing_for_an_expired_lease_the_second_write_conflicts():
    store = InMemoryStore()
    elector(store, "a").try_acquire_or_renew(0.0)
    b, c = elector(store, "b"), elector(store, "c")
    b.try_acquire_or_renew(0.0)
    c.try_acquire_or_renew(0.0)
    # c reads the expired lease, then b writes first
    c_read = c.store.get("Lease", "volcano-system", "volcano")
    assert b.try_acquire_or_renew(15.0).outcome is Outcome.ACQUIRED
    c._lease = c_read
    with pytest.raises(Conflict):
        c._update(c.observed)
    st = c.try_acquire_or_renew(15.0)
    assert st.outcome is Outcome.HELD_BY_OTHER and st.holder == "b"


def test_stale_update_is_a_failed_step_not_leadership():
    store = InMemoryStore()
    elector(store, "a").try_acquire_or_renew(0.0)
    b = elector(store, "b")
    b.try_acquire_or_renew(0.0)

    real_get = store.get

    def get_then_race(*args: Any) -> dict[str, Any]:
        obj = real_get(*args)
        newer = real_get(*args)
        newer["spec"]["holderIdentity"] = "c"
        store.update(newer)  # c takes the lease between b's read and b's write
        return obj

    store.get = get_then_race  # type: ignore[method-assign]
    st = b.try_acquire_or_renew(15.0)
    assert st.outcome is Outcome.FAILED and not st.leading and "conflict" in st.reason
    assert lease(store)["spec"]["holderIdentity"] == "c"


def test_transitions_count_every_change_of_holder():
    store = InMemoryStore()
    a, b = elector(store, "a"), elector(store, "b")
    a.try_acquire_or_renew(0.0)
    b.try_acquire_or_renew(0.0)
    assert b.try_acquire_or_renew(15.0).transitions == 1
    a.try_acquire_or_renew(15.0)  # a sees b's takeover
    assert a.try_acquire_or_renew(29.9).outcome is Outcome.HELD_BY_OTHER
    st = a.try_acquire_or_renew(30.0)
    assert st.outcome is Outcome.ACQUIRED and st.transitions == 2
    assert lease(store)["spec"]["leaseTransitions"] == 2


def test_release_empties_the_holder_and_a_standby_takes_over_at_its_next_try():
    store = InMemoryStore()
    a, b = elector(store, "a"), elector(store, "b")
    a.try_acquire_or_renew(0.0)
    b.try_acquire_or_renew(0.0)
    assert a.release(1.0)
    spec = lease(store)["spec"]
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1 and spec["leaseTransitions"] == 0
    st = b.try_acquire_or_renew(1.5)
    assert st.outcome is Outcome.ACQUIRED and st.transitions == 1


def test_api_errors_are_failed_steps():
    store = FlakyStore(InMemoryStore())
    a = elector(store, "a")
    store.down = True
    st = a.try_acquire_or_renew(0.0)
    assert st.outcome is Outcome.FAILED and "connection refused" in st.reason and not st.leading


def test_healthz_check_fails_only_for_a_leader_that_stopped_renewing():
    store = InMemoryStore()
    a, b = elector(store, "a"), elector(store, "b")
    a.try_acquire_or_renew(0.0)
    b.try_acquire_or_renew(0.0)
    assert a.check(35.0, 20.0) is None
    assert a.check(35.1, 20.0) == "failed election to renew leadership on lease volcano"
    assert b.check(100.0, 20.0) is None  # a standby is healthy


# ----------------------------------------------------------------------------- the loop


def test_loop_acquire_retries_are_jittered_between_one_and_two_point_two_retry_periods():
    store = InMemoryStore()
    elector(store, "a").try_acquire_or_renew(0.0)
    loop = ElectionLoop(elector(store, "b"), random.Random(7))
    waits = [loop.step(1.0).next_at - 1.0 for _ in range(50)]
    assert all(2.0 <= w < 2.0 * 2.2 for w in waits)
    assert max(waits) - min(waits) > 1.0


def test_loop_leader_renews_every_retry_period():
    store = InMemoryStore()
    loop = ElectionLoop(elector(store, "a"))
    first = loop.step(0.0)
    assert first.started_leading and first.next_at == 2.0 and loop.phase is Phase.LEADING
    renew = loop.step(2.0)
    assert renew.state is not None and renew.state.outcome is Outcome.RENEWED and renew.next_at == 4.0


def test_loop_leader_that_cannot_renew_stops_exactly_at_the_renew_deadline():
    store = FlakyStore(InMemoryStore())
    loop = ElectionLoop(elector(store, "a"))
    loop.step(0.0)
    loop.step(2.0)  # renewed; the next round starts at 4.0
    store.down = True
    t = 4.0
    times = []
    while True:
        res = loop.step(t)
        times.append(t)
        if res.stopped_leading:
            break
        assert not res.started_leading
        t = res.next_at
    assert times == [4.0, 6.0, 8.0, 10.0, 12.0, 14.0]
    assert loop.phase is Phase.STOPPED
    assert loop.step(20.0).next_at == float("inf")


def test_loop_leader_recovers_when_a_renewal_succeeds_before_the_deadline():
    store = FlakyStore(InMemoryStore())
    loop = ElectionLoop(elector(store, "a"))
    loop.step(0.0)
    store.down = True
    assert not loop.step(2.0).stopped_leading
    assert not loop.step(4.0).stopped_leading
    store.down = False
    res = loop.step(6.0)
    assert res.state is not None and res.state.outcome is Outcome.RENEWED and not res.stopped_leading
    assert loop.round_deadline is None


def test_loop_leader_that_sees_another_holder_stops_at_once():
    store = InMemoryStore()
    loop = ElectionLoop(elector(store, "a"))
    loop.step(0.0)
    # a was paused for longer than the lease; b took over meanwhile
    b = elector(store, "b")
    b.try_acquire_or_renew(0.0)
    b.try_acquire_or_renew(15.0)
    res = loop.step(30.0)
    assert res.stopped_leading and res.new_leader == "b"
    assert loop.phase is Phase.STOPPED


def test_loop_reports_each_new_leader_once():
    store = InMemoryStore()
    elector(store, "a").try_acquire_or_renew(0.0)
    loop = ElectionLoop(elector(store, "b"), random.Random(1))
    assert loop.step(0.0).new_leader == "a"
    assert loop.step(5.0).new_leader is None
    assert loop.step(14.0).new_leader is None  # not yet expired: observed at 0, same record
    res = loop.step(15.0)
    assert res.started_leading and res.new_leader == "b"


def test_cancel_releases_only_with_release_on_cancel():
    store = InMemoryStore()
    loop = ElectionLoop(elector(store, "a"))
    loop.step(0.0)
    loop.cancel(1.0)
    assert lease(store)["spec"]["holderIdentity"] == "a"
    store2 = InMemoryStore()
    cfg = LeaderElectionConfig(resource_name="volcano", release_on_cancel=True)
    loop2 = ElectionLoop(elector(store2, "a", cfg))
    loop2.step(0.0)
    loop2.cancel(1.0)
    assert lease(store2)["spec"]["holderIdentity"] == ""


# ----------------------------------------------------------------------------- configuration


def test_config_defaults_are_upstreams():
    cfg = LeaderElectionConfig.from_flags(resource_name=scheduler_lock_name(["volcano"]))
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (15.0, 10.0, 2.0)
    assert cfg.resource_namespace == "volcano-system" and cfg.resource_name == "volcano" and cfg.leader_elect
    assert scheduler_lock_name(["a", "b"]) == "volcano"
    assert scheduler_lock_name(["kube-batch"]) == "kube-batch"
    assert CONTROLLER_MANAGER_LOCK_NAME == "vc-controller-manager"


def test_deprecated_lock_object_namespace_overrides_the_resource_namespace():
    cfg = LeaderElectionConfig.from_flags(resource_name="volcano", resource_namespace="a", lock_object_namespace="b")
    assert cfg.resource_namespace == "b"
    assert LeaderElectionConfig.from_flags(resource_name="v", resource_namespace="a").resource_namespace == "a"


@pytest.mark.parametrize(("flags", "message"), [
    ({"lease_duration": "10x"}, "--leader-elect-lease-duration: got '10x'"),
    ({"lease_duration": "10s"}, "LeaseDuration must be greater than RenewDeadline"),
    ({"retry_period": "9s"}, "--leader-elect-renew-deadline: must be greater than retryPeriod*JitterFactor"),
    ({"retry_period": "0s"}, "--leader-elect-retry-period: must be greater than zero"),
    ({"resource_lock": "endpoints"}, "only 'leases' is supported"),
])
def test_invalid_flags_are_rejected_naming_the_flag(flags: dict[str, str], message: str):
    with pytest.raises(ValueError, match=re.escape(message)):
        LeaderElectionConfig.from_flags(resource_name="volcano", **flags)  # type: ignore[arg-type]


def test_disabled_leader_election_skips_validation():
    assert LeaderElectionConfig(resource_name="", leader_elect=False, lease_duration=0).validate() == []


def test_identity_is_hostname_underscore_uuid_and_unique():
    a, b = default_identity(), default_identity()
    assert a != b
    assert re.match(r"^.+_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", a)


def test_micro_time_has_six_fraction_digits():
    assert format_micro_time(0) == "1970-01-01T00:00:00.000000Z"
    assert format_micro_time(1.0000015) == "1970-01-01T00:00:01.000002Z"


# ----------------------------------------------------------------------------- the threaded runner

FAST = LeaderElectionConfig(resource_name="volcano", lease_duration=1, renew_deadline=0.5, retry_period=0.1)


class Candidate:
    def __init__(self, store: Any, name: str, cfg: LeaderElectionConfig = FAST):
        self.stop = threading.Event()
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.lost: threading.Event | None = None
        self.started_at = 0.0
        self.thread = threading.Thread(target=run, daemon=True, kwargs={
            "store": store, "config": cfg, "stop_event": self.stop, "identity": name,
            "on_started_leading": self._started, "on_stopped_leading": self.stopped.set})

    def _started(self, lost: threading.Event) -> None:
        self.lost = lost
        self.started_at = time.monotonic()
        self.started.set()


def test_runner_standby_takes_over_within_one_lease_duration_after_the_leader_dies():
    store = LockedStore()
    a = Candidate(store, "a")
    a.thread.start()
    assert a.started.wait(2)
    b = Candidate(store, "b")
    b.thread.start()
    time.sleep(0.3)
    assert not b.started.is_set()
    died = time.monotonic()
    a.stop.set()  # a stops renewing without releasing
    a.thread.join(2)
    assert a.stopped.is_set() and a.lost is not None and a.lost.is_set()
    assert b.started.wait(3)
    # one lease duration after b last saw a renew, plus at most one jittered retry
    assert b.started_at - died <= 1.0 + 0.1 * 2.2 + 0.5  # (+ scheduling slack on a loaded machine)
    b.stop.set()
    b.thread.join(2)


def test_runner_leader_whose_store_fails_loses_leadership_within_the_renew_deadline():
    store = FlakyStore(LockedStore().inner)
    a = Candidate(store, "a")
    a.thread.start()
    assert a.started.wait(2)
    assert a.lost is not None
    broke = time.monotonic()
    store.down = True
    assert a.lost.wait(2)
    lost_after = time.monotonic() - broke
    assert lost_after <= 0.1 + 0.5 + 0.5  # one retry period, the renew deadline, slack
    a.thread.join(2)
    assert a.stopped.is_set()


def test_runner_with_release_on_cancel_hands_over_at_once():
    store = LockedStore()
    cfg = LeaderElectionConfig(resource_name="volcano", lease_duration=5, renew_deadline=2, retry_period=0.1,
                               release_on_cancel=True)
    a, b = Candidate(store, "a", cfg), Candidate(store, "b", cfg)
    a.thread.start()
    assert a.started.wait(2)
    b.thread.start()
    time.sleep(0.2)
    released = time.monotonic()
    a.stop.set()
    a.thread.join(2)
    assert b.started.wait(2)
    assert b.started_at - released < 1.0  # far less than the 5 s lease
    b.stop.set()
    b.thread.join(2)
