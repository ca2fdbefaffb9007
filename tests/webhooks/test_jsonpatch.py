from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from jsonpatch_apply import apply_patch

from pyvolcano.webhooks.jsonpatch import diff

_keys = st.sampled_from(["a", "b", "c", "x/y", "m~n", ""])
_scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.5, 1.0]) | st.text(max_size=3)
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=4),
                     max_leaves=12)


@given(st.dictionaries(_keys, _json, max_size=4), st.dictionaries(_keys, _json, max_size=4))
def test_applying_the_diff_to_the_first_document_gives_the_second(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert apply_patch(a, diff(a, b)) == b


@given(_json)
def test_a_document_has_an_empty_diff_with_itself(a: Any) -> None:
    assert diff(a, a) == []


def test_diff_adds_new_members_and_escapes_pointer_tokens() -> None:
    before = {"metadata": {"annotations": {"volcano.sh/hierarchy": "a"}}, "spec": {}}
    after = {"metadata": {"annotations": {"volcano.sh/hierarchy": "root/a"}}, "spec": {"weight": 1}}
    assert diff(before, after) == [
        {"op": "replace", "path": "/metadata/annotations/volcano.sh~1hierarchy", "value": "root/a"},
        {"op": "add", "path": "/spec/weight", "value": 1},
    ]


def test_diff_tells_booleans_from_numbers() -> None:
    assert diff({"x": True}, {"x": 1}) == [{"op": "replace", "path": "/x", "value": 1}]
    assert diff({"x": 1}, {"x": 1.0}) == []
