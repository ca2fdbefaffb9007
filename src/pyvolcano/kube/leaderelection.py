"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

Upstream's vc-scheduler and vc-controller-manager run ``k8s.io/client-go/tools/leaderelection``
with a Lease lock; this module is that algorithm over the :class:`~pyvolcano.store.base.Store`
protocol, in three layers:

* :class:`LeaderElector` is ``tryAcquireOrRenew`` and ``release``: one step, given the time.
  It keeps client-go's *observed record*: the last Lease spec it read or wrote, and the local
  time at which it was observed. A lease is expired when ``observed time + leaseDurationSeconds``
  (the duration the holder wrote) has passed on the *local* clock; remote timestamps
  (``renewTime``) are only written, never compared, so clock skew between candidates does not
  matter. A standby refreshes its observed time only when the record it reads changes, so it
  takes over exactly one lease duration after it last saw the holder renew.
* :class:`ElectionLoop` is ``LeaderElector.Run`` as a state machine driven by the caller's
  clock: acquire every ``retry_period`` (jittered by client-go's factor 1.2) until the lease is
  ours; then renew in rounds (one attempt every ``retry_period``; a round that has not renewed
  within ``renew_deadline`` ends the leadership at once). Every timing rule is testable with a
  fake clock.
* :func:`run` drives an :class:`ElectionLoop` on a thread with the real clock, calls
  ``on_started_leading(lost)`` on its own thread (``lost`` is set the moment leadership ends,
  also when a Lease write hangs past the renew deadline) and ``on_stopped_leading()`` when it
  returns, always, as client-go's ``Run`` does.

Writes use optimistic concurrency: the fast-path renewal updates the Lease at the
``resourceVersion`` last seen; a :class:`~pyvolcano.store.base.Conflict` means someone else
wrote, so the slow path re-reads it. A failed step is a :class:`LeaderState` with outcome
``FAILED``, never an exception: the store must report API and transport failures as a
:class:`~pyvolcano.store.base.StoreError` or an ``OSError``. One deliberate difference from client-go (listed in
docs/differences.md): a leader that *reads* the Lease held by another identity stops leading
at that step instead of polling on until its renew deadline, so two leaders never overlap
after a pause of the old one.

Defaults and names are upstream's: lease 15 s, renew deadline 10 s, retry 2 s, lock
namespace ``volcano-system``, lock name the scheduler name (``volcano``; with several
``--scheduler-name`` flags ``volcano``) for the scheduler and ``vc-controller-manager`` for
the controller manager, identity ``<hostname>_<uuid>``.
"""

from __future__ import annotations

import datetime as _dt
import enum
import logging
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyvolcano.api.duration import DurationError, parse_duration_strict
from pyvolcano.store.base import Conflict, NotFound, Store, StoreError

__all__ = [
    "CONTROLLER_MANAGER_LOCK_NAME",
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_LOCK_NAMESPACE",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "JITTER_FACTOR",
    "ElectionLoop",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeaderState",
    "LeaseRecord",
    "LoopStep",
    "Outcome",
    "default_identity",
    "format_micro_time",
    "healthz_check",
    "run",
    "scheduler_lock_name",
]

logger = logging.getLogger(__name__)

DEFAULT_LEASE_DURATION: Final = 15.0
DEFAULT_RENEW_DEADLINE: Final = 10.0
DEFAULT_RETRY_PERIOD: Final = 2.0
DEFAULT_LOCK_NAMESPACE: Final = "volcano-system"
CONTROLLER_MANAGER_LOCK_NAME: Final = "vc-controller-manager"
JITTER_FACTOR: Final = 1.2
"""client-go's ``JitterFactor``: an acquire retry waits ``retry * (1 + U[0, 1.2))``."""

_DEFAULT_SCHEDULER_NAME: Final = "volcano"
_LEASE_API_VERSION: Final = "coordination.k8s.io/v1"


def scheduler_lock_name(scheduler_names: Sequence[str]) -> str:
    """vc-scheduler's lock name (upstream ``GenerateComponentName``): the only scheduler name,
    or ``volcano`` when there are several."""
    return scheduler_names[0] if len(scheduler_names) == 1 else _DEFAULT_SCHEDULER_NAME


def default_identity() -> str:
    """``<hostname>_<uuid>``: the hostname plus a uniquifier, so that two processes on one host
    never share an identity (upstream's ``hostname + "_" + uuid.NewUUID()``)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def format_micro_time(unix_seconds: float) -> str:
    """A ``metav1.MicroTime`` as JSON writes it: RFC 3339 in UTC with exactly six fraction digits."""
    t = _dt.datetime.fromtimestamp(0, _dt.UTC) + _dt.timedelta(microseconds=round(unix_seconds * 1_000_000))
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ----------------------------------------------------------------------------- configuration


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    """The ``--leader-elect*`` flags (``k8s.io/component-base`` ``LeaderElectionConfiguration``).

    Durations are seconds. ``resource_name`` is the Lease's name, ``resource_namespace`` its
    namespace. ``leader_elect`` defaults to true, as upstream's ``LeaderElectionDefault`` sets it.
    """

    resource_name: str
    resource_namespace: str = DEFAULT_LOCK_NAMESPACE
    leader_elect: bool = True
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD
    resource_lock: str = "leases"
    release_on_cancel: bool = False

    @classmethod
    def from_flags(
        cls,
        *,
        resource_name: str,
        leader_elect: bool = True,
        lease_duration: str = "15s",
        renew_deadline: str = "10s",
        retry_period: str = "2s",
        resource_lock: str = "leases",
        resource_namespace: str = DEFAULT_LOCK_NAMESPACE,
        lock_object_namespace: str = "",
        release_on_cancel: bool = False,
    ) -> LeaderElectionConfig:
        """Build from flag texts (Go durations). A non-empty deprecated ``--lock-object-namespace``
        overrides ``--leader-elect-resource-namespace``, as upstream does. ValueError (naming the
        flag) on a malformed duration or an invalid combination (:meth:`validate`)."""
        durations: dict[str, float] = {}
        for flag, text in (("--leader-elect-lease-duration", lease_duration),
                           ("--leader-elect-renew-deadline", renew_deadline),
                           ("--leader-elect-retry-period", retry_period)):
            try:
                durations[flag] = parse_duration_strict(text)
            except DurationError as e:
                raise ValueError(f"{flag}: {e}") from None
        cfg = cls(
            resource_name=resource_name,
            resource_namespace=lock_object_namespace or resource_namespace,
            leader_elect=leader_elect,
            lease_duration=durations["--leader-elect-lease-duration"],
            renew_deadline=durations["--leader-elect-renew-deadline"],
            retry_period=durations["--leader-elect-retry-period"],
            resource_lock=resource_lock,
            release_on_cancel=release_on_cancel,
        )
        errors = cfg.validate()
        if errors:
            raise ValueError(errors[0])
        return cfg

    def validate(self) -> list[str]:
        """Every rule of component-base's ``ValidateLeaderElectionConfiguration`` and client-go's
        ``NewLeaderElector``, as ``"<flag>: <problem>"`` lines (empty when valid)."""
        if not self.leader_elect:
            return []
        errs: list[str] = []
        if self.lease_duration <= 0:
            errs.append("--leader-elect-lease-duration: must be greater than zero")
        if self.renew_deadline <= 0:
            errs.append("--leader-elect-renew-deadline: must be greater than zero")
        if self.retry_period <= 0:
            errs.append("--leader-elect-retry-period: must be greater than zero")
        if self.lease_duration <= self.renew_deadline:
            errs.append("--leader-elect-lease-duration: LeaseDuration must be greater than RenewDeadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            errs.append("--leader-elect-renew-deadline: must be greater than retryPeriod*JitterFactor (1.2)")
        if self.lease_duration < 1:
            errs.append("--leader-elect-lease-duration: must be at least 1s (the Lease stores whole seconds)")
        if self.resource_lock != "leases":
            errs.append(f"--leader-elect-resource-lock: got {self.resource_lock!r}; only 'leases' is supported")
        if not self.resource_name:
            errs.append("--leader-elect-resource-name: must not be empty")
        if not self.resource_namespace:
            errs.append("--leader-elect-resource-namespace: must not be empty")
        return errs


# ----------------------------------------------------------------------------- the record


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """client-go's ``LeaderElectionRecord``: the part of a Lease's spec the election reads."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    leader_transitions: int = 0

    @classmethod
    def from_lease(cls, lease: dict[str, Any]) -> LeaseRecord:
        spec = lease.get("spec")
        if not isinstance(spec, dict):
            spec = {}
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=_int(spec.get("leaseDurationSeconds")),
            acquire_time=spec.get("acquireTime") or None,
            renew_time=spec.get("renewTime") or None,
            leader_transitions=_int(spec.get("leaseTransitions")),
        )

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.leader_transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time is not None:
            spec["renewTime"] = self.renew_time
        return spec


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


class Outcome(enum.Enum):
    ACQUIRED = "acquired"  # we hold the lease now and did not before this step
    RENEWED = "renewed"  # we held it and renewed it
    HELD_BY_OTHER = "held-by-other"  # another identity holds an unexpired lease
    FAILED = "failed"  # the API refused or failed (conflict, error): nothing changed


@dataclass(frozen=True, slots=True)
class LeaderState:
    """The result of one :meth:`LeaderElector.try_acquire_or_renew` step."""

    outcome: Outcome
    leading: bool  # this candidate is the observed holder after the step
    holder: str  # the observed holder ('' when nobody holds the lease)
    transitions: int
    reason: str = ""  # for FAILED: what went wrong

    @property
    def succeeded(self) -> bool:
        return self.outcome in (Outcome.ACQUIRED, Outcome.RENEWED)


# ----------------------------------------------------------------------------- one step


class LeaderElector:
    """``tryAcquireOrRenew`` / ``release`` on one Lease for one identity.

    ``wall_clock`` gives Unix seconds for the timestamps written into the Lease; the ``now``
    passed to each step is the local (monotonic) time every expiry rule uses. Not thread-safe:
    one elector is driven by one loop.
    """

    def __init__(self, store: Store, config: LeaderElectionConfig, identity: str, *,
                 wall_clock: Callable[[], float] = time.time):
        if not identity:
            raise ValueError("leader election: the lock identity is empty")
        self.store = store
        self.config = config
        self.identity = identity
        self._wall_clock = wall_clock
        self._lease: dict[str, Any] | None = None  # the Lease object last read or written
        self.observed: LeaseRecord = LeaseRecord()
        self.observed_time: float | None = None
        self._observed_raw: LeaseRecord | None = None

    # -- observed state

    def is_leader(self) -> bool:
        return bool(self.observed.holder_identity) and self.observed.holder_identity == self.identity

    def is_lease_valid(self, now: float) -> bool:
        """Whether the observed lease is unexpired on the local clock (``observedTime + duration > now``)."""
        if self.observed_time is None:
            return False
        return self.observed_time + self.observed.lease_duration_seconds > now

    def check(self, now: float, max_tolerable_expired_lease: float) -> str | None:
        """client-go's ``HealthzAdaptor`` check: None when healthy; an error text when this
        candidate is the leader but has not renewed for ``lease duration + tolerance``."""
        if not self.is_leader() or self.observed_time is None:
            return None
        if now - self.observed_time > self.config.lease_duration + max_tolerable_expired_lease:
            return f"failed election to renew leadership on lease {self.config.resource_name}"
        return None

    def _set_observed(self, record: LeaseRecord, now: float) -> None:
        self.observed = record
        self.observed_time = now

    def _state(self, outcome: Outcome, reason: str = "") -> LeaderState:
        return LeaderState(outcome, self.is_leader(), self.observed.holder_identity,
                           self.observed.leader_transitions, reason)

    # -- lease I/O

    def _new_lease(self, record: LeaseRecord) -> dict[str, Any]:
        return {"apiVersion": _LEASE_API_VERSION, "kind": "Lease",
                "metadata": {"name": self.config.resource_name, "namespace": self.config.resource_namespace},
                "spec": record.to_spec()}

    def _update(self, record: LeaseRecord) -> None:
        if self._lease is None:
            raise StoreError("Lease", self._key(), "lease not initialized, call get or create first")
        lease = dict(self._lease)
        lease["spec"] = record.to_spec()
        self._lease = self.store.update(lease)

    def _key(self) -> str:
        return f"{self.config.resource_namespace}/{self.config.resource_name}"

    # -- the algorithm

    def try_acquire_or_renew(self, now: float) -> LeaderState:
        """One attempt to take or keep the lease at local time ``now``."""
        was_leader = self.is_leader()
        stamp = format_micro_time(self._wall_clock())
        record = LeaseRecord(self.identity, int(self.config.lease_duration), stamp, stamp, 0)

        # 1. fast path: the leader updates optimistically at the version it saw last
        if was_leader and self.is_lease_valid(now):
            fast = LeaseRecord(self.identity, record.lease_duration_seconds, self.observed.acquire_time, stamp,
                               self.observed.leader_transitions)
            try:
                self._update(fast)
            except (StoreError, OSError) as e:
                logger.info("failed to update lease %s optimistically: %s; falling back to slow path", self._key(), e)
            else:
                self._set_observed(fast, now)
                return self._state(Outcome.RENEWED)

        # 2. read the lease, or create it
        try:
            lease = self.store.get("Lease", self.config.resource_namespace, self.config.resource_name)
        except NotFound:
            try:
                self._lease = self.store.create(self._new_lease(record))
            except (StoreError, OSError) as e:
                return self._state(Outcome.FAILED, f"error initially creating lease {self._key()}: {e}")
            self._set_observed(record, now)
            return self._state(Outcome.ACQUIRED)
        except (StoreError, OSError) as e:
            return self._state(Outcome.FAILED, f"error retrieving lease {self._key()}: {e}")
        self._lease = lease
        current = LeaseRecord.from_lease(lease)

        # 3. a changed record restarts the expiry clock
        if current != self._observed_raw:
            self._set_observed(current, now)
            self._observed_raw = current
        if current.holder_identity and self.is_lease_valid(now) and not self.is_leader():
            return self._state(Outcome.HELD_BY_OTHER)

        # 4. take it over (or keep it), counting a transition when the holder changes
        if self.is_leader():
            record = LeaseRecord(self.identity, record.lease_duration_seconds, current.acquire_time, stamp,
                                 current.leader_transitions)
        else:
            record = LeaseRecord(self.identity, record.lease_duration_seconds, stamp, stamp,
                                 current.leader_transitions + 1)
        try:
            self._update(record)
        except (StoreError, OSError) as e:
            kind = "conflict" if isinstance(e, Conflict) else "error"
            return self._state(Outcome.FAILED, f"failed to update lease {self._key()} ({kind}): {e}")
        self._set_observed(record, now)
        return self._state(Outcome.RENEWED if was_leader else Outcome.ACQUIRED)

    def release(self, now: float) -> bool:
        """Give the lease up (``ReleaseOnCancel``): empty holder, a one-second duration, so a
        standby takes over at its next retry. True when released or not held."""
        if not self.is_leader():
            return True
        stamp = format_micro_time(self._wall_clock())
        record = LeaseRecord("", 1, stamp, stamp, self.observed.leader_transitions)
        try:
            self._update(record)
        except (StoreError, OSError) as e:
            logger.error("failed to release lease %s: %s", self._key(), e)
            return False
        self._set_observed(record, now)
        return True


def healthz_check(elector: LeaderElector, max_tolerable_expired_lease: float = 20.0, *,
                  clock: Callable[[], float] = time.monotonic) -> Callable[[], str | None]:
    """client-go's ``NewLeaderHealthzAdaptor(timeout)`` as a ``/healthz`` check named
    ``leaderElection``: failing while this candidate leads but has not renewed for the lease
    duration plus ``max_tolerable_expired_lease`` (kube-scheduler uses 20 s); a standby is healthy."""
    def check() -> str | None:
        return elector.check(clock(), max_tolerable_expired_lease)
    return check


# ----------------------------------------------------------------------------- the loop


class Phase(enum.Enum):
    ACQUIRING = "acquiring"
    LEADING = "leading"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class LoopStep:
    """What one :meth:`ElectionLoop.step` did and when the loop wants to run next."""

    next_at: float  # local time of the next step (``inf`` once stopped)
    started_leading: bool = False
    stopped_leading: bool = False
    state: LeaderState | None = None  # the elector step taken, if any
    new_leader: str | None = None  # the observed holder, when it changed at this step


class ElectionLoop:
    """client-go's ``LeaderElector.Run`` (acquire, then renew) as a clock-driven state machine.

    Call :meth:`step` at (or after) ``next_at``. While acquiring, a failed attempt waits
    ``retry_period * (1 + U[0, JITTER_FACTOR))``. While leading, renewals come in rounds: a
    round starts at a step, tries at once and then every ``retry_period``; the first success
    ends the round and the next one starts ``retry_period`` later; when ``renew_deadline``
    has passed since the round began without a success, or when the Lease is seen held by
    someone else, leadership ends at that step. After leadership ends the loop is stopped.
    """

    def __init__(self, elector: LeaderElector, rng: random.Random | None = None):
        self.elector = elector
        self.config = elector.config
        self.rng = rng or random.Random()
        self.phase = Phase.ACQUIRING
        self.round_deadline: float | None = None
        self._last_holder = ""

    def _jittered_retry(self) -> float:
        return self.config.retry_period * (1.0 + self.rng.random() * JITTER_FACTOR)

    def _new_leader(self, state: LeaderState) -> str | None:
        if state.holder and state.holder != self._last_holder:
            self._last_holder = state.holder
            return state.holder
        return None

    def step(self, now: float) -> LoopStep:
        cfg = self.config
        if self.phase is Phase.STOPPED:
            return LoopStep(float("inf"))
        if self.phase is Phase.ACQUIRING:
            state = self.elector.try_acquire_or_renew(now)
            new_leader = self._new_leader(state)
            if state.succeeded:
                self.phase = Phase.LEADING
                logger.info("successfully acquired lease %s", self.elector._key())
                return LoopStep(now + cfg.retry_period, started_leading=True, state=state, new_leader=new_leader)
            return LoopStep(now + self._jittered_retry(), state=state, new_leader=new_leader)
        # leading: a renew round
        if self.round_deadline is None:
            self.round_deadline = now + cfg.renew_deadline
        if now >= self.round_deadline:
            return self._stop(now, None, f"did not renew within {cfg.renew_deadline:g}s")
        state = self.elector.try_acquire_or_renew(now)
        new_leader = self._new_leader(state)
        if state.succeeded:
            self.round_deadline = None
            return LoopStep(now + cfg.retry_period, state=state, new_leader=new_leader)
        if state.outcome is Outcome.HELD_BY_OTHER:
            return self._stop(now, state, f"the lease is held by {state.holder}", new_leader)
        if now >= self.round_deadline:
            return self._stop(now, state, f"did not renew within {cfg.renew_deadline:g}s", new_leader)
        return LoopStep(min(now + cfg.retry_period, self.round_deadline), state=state, new_leader=new_leader)

    def _stop(self, now: float, state: LeaderState | None, why: str, new_leader: str | None = None) -> LoopStep:
        logger.info("failed to renew lease %s: %s", self.elector._key(), why)
        self.phase = Phase.STOPPED
        self.round_deadline = None
        return LoopStep(float("inf"), stopped_leading=True, state=state, new_leader=new_leader)

    def cancel(self, now: float) -> None:
        """Stop the loop (the caller's context was cancelled); release the lease when configured."""
        if self.phase is Phase.LEADING and self.config.release_on_cancel:
            self.elector.release(now)
        self.phase = Phase.STOPPED
        self.round_deadline = None


# ----------------------------------------------------------------------------- the runner


def run(
    store: Store,
    config: LeaderElectionConfig,
    stop_event: threading.Event,
    on_started_leading: Callable[[threading.Event], None],
    on_stopped_leading: Callable[[], None],
    *,
    identity: str | None = None,
    elector: LeaderElector | None = None,
    on_new_leader: Callable[[str], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
    rng: random.Random | None = None,
) -> None:
    """Campaign until ``stop_event`` is set or leadership is lost (client-go ``RunOrDie``).

    Blocks the calling thread. On winning, ``on_started_leading(lost)`` runs on a new daemon
    thread; ``lost`` is set as soon as leadership ends: a renew round past its deadline
    (checked by a watchdog timer even while a Lease write hangs), the Lease seen held by
    another identity, or ``stop_event``. ``on_stopped_leading()`` is called when ``run``
    returns, whether or not this candidate ever led, as client-go does. Pass ``elector`` (built
    on the same store and config) to share it with a :func:`healthz_check`.
    """
    errors = config.validate()
    if errors:
        raise ValueError(errors[0])
    if elector is None:
        elector = LeaderElector(store, config, identity or default_identity(), wall_clock=wall_clock)
    loop = ElectionLoop(elector, rng)
    lost = threading.Event()
    watchdog: threading.Timer | None = None
    try:
        while not stop_event.is_set() and loop.phase is not Phase.STOPPED:
            if loop.phase is Phase.LEADING:
                if loop.round_deadline is None:
                    loop.round_deadline = clock() + config.renew_deadline
                if watchdog is None:
                    watchdog = threading.Timer(max(loop.round_deadline - clock(), 0.0), lost.set)
                    watchdog.daemon = True
                    watchdog.start()
            res = loop.step(clock())
            if res.new_leader is not None and on_new_leader is not None:
                on_new_leader(res.new_leader)
            if res.started_leading:
                threading.Thread(target=on_started_leading, args=(lost,), daemon=True,
                                 name="leader-elected").start()
            if res.stopped_leading or lost.is_set():
                break
            if loop.phase is Phase.LEADING and loop.round_deadline is None and watchdog is not None:
                watchdog.cancel()  # the round renewed in time
                watchdog = None
            stop_event.wait(max(res.next_at - clock(), 0.0))
    finally:
        if watchdog is not None:
            watchdog.cancel()
        lost.set()
        if loop.phase is Phase.LEADING:
            loop.cancel(clock())
        on_stopped_leading()
