"""Tier combinators: one function per upstream combination rule (framework/session_plugins.go).

Each dispatcher on :class:`~pyvolcano.framework.session.Session` binds a callback table to one
of these. ``entries`` is the callback table flattened in tier order: a list of tiers, each a
list of ``(plugin_name, fn)`` for plugins that registered the callback **and** have the
gating flag enabled.

* :func:`walk_first_nonzero` — orderings: the first non-zero comparison decides.
* :func:`walk_and` — Allocatable, Preemptive, JobReady: every callback must agree.
* :func:`walk_or` — Overused: any callback suffices.
* :func:`walk_vote` — JobPipelined, JobEnqueueable: a reject ends the walk with False; a tier
  that contains a permit ends the walk with True; a tier of abstentions passes the decision
  to the next tier; no decision at all is True.
* :func:`walk_starving` — JobStarving: the first tier with any registrant decides (all of
  its callbacks must say True); no registrant is False.
* :func:`walk_victims` — Preemptable/Reclaimable: intersection within a tier; an empty
  answer ends the tier undecided and the next tier starts from scratch (upstream quirk, see
  volcano PR #3312); a tier ending with victims returns them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pyvolcano.framework.interfaces import Vote

T = TypeVar("T")
Tiers = Sequence[Sequence[tuple[str, Callable[..., Any]]]]

__all__ = ["walk_and", "walk_first_nonzero", "walk_or", "walk_starving", "walk_victims", "walk_vote"]


def walk_first_nonzero(tiers: Tiers, *args: Any) -> int:
    for tier in tiers:
        for _name, fn in tier:
            r = fn(*args)
            if r != 0:
                return int(r)
    return 0


def walk_and(tiers: Tiers, *args: Any) -> bool:
    for tier in tiers:
        for _name, fn in tier:
            if not fn(*args):
                return False
    return True


def walk_or(tiers: Tiers, *args: Any) -> bool:
    for tier in tiers:
        for _name, fn in tier:
            if fn(*args):
                return True
    return False


def walk_vote(tiers: Tiers, *args: Any) -> bool:
    for tier in tiers:
        permitted = False
        for _name, fn in tier:
            v = fn(*args)
            if v < 0:
                return False
            if v > 0:
                permitted = True
        if permitted:
            return True
    return True


def walk_starving(tiers: Tiers, *args: Any) -> bool:
    for tier in tiers:
        found = False
        for _name, fn in tier:
            found = True
            if not fn(*args):
                return False
        if found:
            return True
    return False


def walk_victims(tiers: Tiers, preemptor: Any, candidates: list[T]) -> list[T]:
    victims: list[T] | None = None
    for tier in tiers:
        for _name, fn in tier:
            chosen, vote = fn(preemptor, candidates)
            if vote == Vote.ABSTAIN:
                continue
            if not chosen:
                victims = None
                break
            if victims is None:
                victims = list(chosen)
            else:
                keep = {id(c) for c in chosen}
                victims = [v for v in victims if id(v) in keep]
                # Upstream quirk (issue #5963): an empty intersection reads as "unset" for
                # the next plugin of the tier, which restarts from its own candidates.
                if not victims:
                    victims = None
        if victims:
            return victims
    return victims or []
