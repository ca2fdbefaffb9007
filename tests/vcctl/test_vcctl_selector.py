"""kubectl's label selector grammar."""

from __future__ import annotations

import pytest

from pyvolcano.vcctl.selector import SelectorError, parse_selector


@pytest.mark.parametrize(("text", "labels", "matches"), [
    ("app", {"app": "x"}, True),
    ("app", {}, False),
    ("!app", {}, True),
    ("app=x", {"app": "x"}, True),
    ("app==x", {"app": "y"}, False),
    ("app!=x", {}, True),
    ("app!=x", {"app": "x"}, False),
    ("tier in (a, b)", {"tier": "b"}, True),
    ("tier notin (a,b)", {"tier": "c"}, True),
    ("tier notin (a,b)", {}, True),
    ("app=x,tier in (a,b)", {"app": "x", "tier": "c"}, False),
    ("volcano.sh/job-name=train", {"volcano.sh/job-name": "train"}, True),
    ("", {}, True),
])
def test_selector_matches_as_apimachinery(text, labels, matches):
    assert parse_selector(text).matches(labels) is matches


@pytest.mark.parametrize("text", ["a in (", "a in ()", "=x", "a=b=c", "a in (b c)", "a,,b"])
def test_selector_refuses_bad_syntax(text):
    with pytest.raises(SelectorError):
        parse_selector(text)
