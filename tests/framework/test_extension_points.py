"""Tier combination rules (upstream framework/session_plugins.go)."""

from pyvolcano.framework.extension_points import (
    walk_and,
    walk_first_nonzero,
    walk_or,
    walk_starving,
    walk_victims,
    walk_vote,
)
from pyvolcano.framework.interfaces import Vote


def const(v):  # type: ignore[no-untyped-def]
    return lambda *a: v


def test_vote_reject_anywhere_wins() -> None:
    assert walk_vote([[("a", const(Vote.PERMIT))], [("b", const(Vote.REJECT))]]) is True
    assert walk_vote([[("a", const(Vote.PERMIT)), ("b", const(Vote.REJECT))]]) is False


def test_vote_permit_ends_walk_at_end_of_its_tier() -> None:
    calls = []

    def later(*a):  # type: ignore[no-untyped-def]
        calls.append(1)
        return Vote.REJECT

    assert walk_vote([[("a", const(Vote.PERMIT))], [("b", later)]]) is True
    assert calls == []


def test_vote_all_abstain_defaults_to_true() -> None:
    assert walk_vote([[("a", const(Vote.ABSTAIN))], [("b", const(Vote.ABSTAIN))]]) is True
    assert walk_vote([]) is True


def test_starving_first_tier_with_registrant_decides_and_none_is_false() -> None:
    assert walk_starving([[], [("a", const(True)), ("b", const(False))]]) is False
    assert walk_starving([[("a", const(True))], [("b", const(False))]]) is True
    assert walk_starving([[], []]) is False


def test_and_or_and_first_nonzero() -> None:
    assert walk_and([[("a", const(True))], [("b", const(False))]]) is False
    assert walk_and([]) is True
    assert walk_or([[("a", const(False))], [("b", const(True))]]) is True
    assert walk_first_nonzero([[("a", const(0)), ("b", const(-1))], [("c", const(1))]]) == -1


def test_victims_intersect_within_a_tier() -> None:
    a, b, c = object(), object(), object()
    tiers = [[("x", const(([a, b], Vote.PERMIT))), ("y", const(([b, c], Vote.PERMIT)))]]
    assert walk_victims(tiers, None, [a, b, c]) == [b]


def test_victims_empty_answer_is_not_a_veto_next_tier_decides() -> None:
    a, b = object(), object()
    tiers = [[("x", const(([], Vote.PERMIT)))], [("y", const(([a], Vote.PERMIT)))]]
    assert walk_victims(tiers, None, [a, b]) == [a]


def test_victims_empty_intersection_restarts_from_next_plugin() -> None:
    # Upstream issue #5963: an empty intersection reads as "unset" for the next plugin.
    a, b = object(), object()
    tiers = [[("x", const(([a], Vote.PERMIT))), ("y", const(([b], Vote.PERMIT))),
              ("z", const(([a, b], Vote.PERMIT)))]]
    assert walk_victims(tiers, None, [a, b]) == [a, b]


def test_victims_abstain_is_skipped() -> None:
    a = object()
    tiers = [[("x", const(([], Vote.ABSTAIN))), ("y", const(([a], Vote.PERMIT)))]]
    assert walk_victims(tiers, None, [a]) == [a]
