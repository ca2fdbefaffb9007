"""``merge_patch_between``: the smallest RFC 7386 merge patch from one object to another, the
body of a status update sent as a patch (kube/store.py), checked against ``json_merge_patch``."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pyvolcano.store import json_merge_patch, merge_patch_between

_KEYS = st.sampled_from(["phase", "pending", "running", "state", "conditions", "a", "b"])
_scalars = st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=3)
_no_null = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
                        max_leaves=10)
_with_null = st.recursive(_scalars | st.none(),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
                          max_leaves=10)
_objects = st.dictionaries(_KEYS, _no_null, max_size=5)


def _nulls_in_maps(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and any(_nulls_in_maps(v) for v in value.values()))


@given(old=_objects, new=_objects)
def test_the_patch_turns_the_old_object_into_the_new_one(old: dict[str, Any], new: dict[str, Any]) -> None:
    patch = merge_patch_between(old, new)
    assert patch is not None
    assert json_merge_patch(old, patch) == new
    assert merge_patch_between(new, new) == {}


@given(old=_objects, new=st.dictionaries(_KEYS, _with_null, max_size=5))
def test_a_null_in_a_map_the_patch_would_have_to_send_means_no_patch(old: dict[str, Any],
                                                                      new: dict[str, Any]) -> None:
    patch = merge_patch_between(old, new)
    if patch is None:
        assert any(_nulls_in_maps(v) for v in new.values())
    else:
        assert json_merge_patch(old, patch) == new


def test_only_what_changed_is_sent_and_a_removed_key_is_null() -> None:
    old = {"state": {"phase": "Pending", "lastTransitionTime": "t0"}, "pending": 1, "minAvailable": 1,
           "controlledResources": {"plugin-svc": "svc"}}
    new = {"state": {"phase": "Running", "lastTransitionTime": "t1"}, "running": 1, "minAvailable": 1,
           "controlledResources": {"plugin-svc": "svc"}}
    assert merge_patch_between(old, new) == {"state": {"phase": "Running", "lastTransitionTime": "t1"},
                                             "running": 1, "pending": None}


def test_json_types_are_told_apart() -> None:
    assert merge_patch_between({"a": 1}, {"a": True}) == {"a": True}
    assert merge_patch_between({"a": [1]}, {"a": [1.0]}) == {"a": [1.0]}
