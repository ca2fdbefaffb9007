"""Reservations: the nodes and the start time held for a blocked gang (the ``reservation`` plugin).

A :class:`Reservation` says that gang ``job`` starts at the latest at ``start`` on ``claims``
(per node, the resources its pods take there), as planned from the running pods' expected
ends. The plugin (``plugins/reservation.py``) makes them and keeps them in the one
:class:`ReservationBook` of the scheduler cache's memo (``cache/memo.SessionMemo.reservations``),
so that they outlive a session; the diagnosis (``job why``), ``queue top``, the metrics and the
dashboard read them from there.

A :class:`LoanTerm` says how a pod would hold a loan of the reserved queues' idle share
(``reservation.lendShares``).

Invariants: a Reservation never changes once made (a new plan makes new ones);
``ReservationBook.generation`` moves exactly when the held set changes, so what was derived
from one plan (feasibility verdicts) can be keyed on it.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HELD_REASON", "LoanTerm", "Reservation", "ReservationBook"]

HELD_REASON = "node(s) reserved for a waiting gang"
"""The predicate failure of a pod kept off a reserved node (it would delay the reservation)."""


class LoanTerm(enum.Enum):
    """How a pod would hold a loan of idle share (``ShareLender.loan_term``)."""

    IN_TIME = "in-time"
    """Expected to end before the lenders need their share: it may borrow all of the idle share."""
    PAST = "past"
    """Expected to end after that: it may borrow only what stays idle once the lenders take back
    what they keep back."""
    NONE = "none"
    """No expected end: it never borrows."""


@dataclass(frozen=True, slots=True)
class Reservation:
    """One gang's reservation."""

    job: str
    """The gang's job key (``namespace/name``)."""
    queue: str
    rank: int
    """0 for the first blocked gang in scheduling order, 1 for the next, ..."""
    start: float
    """Absolute time by which the reserved resources are free for it (the latest it starts)."""
    runtime: float | None
    """How long the gang runs once started (None: unknown)."""
    claims: tuple[tuple[str, tuple[tuple[str, float], ...]], ...]
    """Per reserved node, in node order: (node name, ((resource, amount), ...))."""
    planned_at: float

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.claims)

    @property
    def end(self) -> float | None:
        return None if self.runtime is None else self.start + self.runtime

    def to_dict(self, now: float) -> dict[str, Any]:
        return {"job": self.job, "queue": self.queue, "rank": self.rank, "nodes": list(self.nodes),
                "start_in_seconds": round(max(self.start - now, 0.0), 6),
                "runtime_seconds": self.runtime,
                "claims": {n: dict(res) for n, res in self.claims}}


@dataclass(slots=True)
class ReservationBook:
    """The reservations held between sessions, by job key, and what they were planned from."""

    held: dict[str, Reservation] = field(default_factory=dict)
    generation: int = 0
    inputs: Hashable | None = None
    """The planner's inputs the held set was computed from (None: never planned)."""
    stalled: dict[str, Hashable] = field(default_factory=dict)
    """Gangs whose reservation was due and that still did not start, with the cluster state they
    failed on: they get none until that state moves."""

    def replace(self, held: Mapping[str, Reservation], inputs: Hashable) -> None:
        """Hold ``held`` from now on (planned from ``inputs``); the generation moves when the
        held set differs from the one before."""
        if dict(held) != self.held:
            self.held = dict(held)
            self.generation += 1
        self.inputs = inputs

    def clear(self) -> None:
        if self.held:
            self.generation += 1
        self.held = {}
        self.inputs = None
        self.stalled = {}

    def by_node(self) -> dict[str, list[Reservation]]:
        """Node name → the reservations that claim part of it, in rank order."""
        out: dict[str, list[Reservation]] = {}
        for r in sorted(self.held.values(), key=lambda r: r.rank):
            for n in r.nodes:
                out.setdefault(n, []).append(r)
        return out
