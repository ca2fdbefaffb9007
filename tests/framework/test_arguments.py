"""Specification tests for ``pyvolcano.framework.arguments`` (typed plugin/action arguments)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from pyvolcano.framework.arguments import ArgumentError, Arguments


def args(**values: Any) -> Arguments:
    return Arguments(values, owner="plugin binpack")


def error_of(call: Any) -> str:
    with pytest.raises(ArgumentError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    return message


# --------------------------------------------------------------------------- defaults


@pytest.mark.parametrize("raw", [{}, {"k": None}])
def test_missing_or_null_argument_returns_default(raw: dict[str, Any]) -> None:
    a = Arguments(raw, owner="plugin x")
    assert a.get_int("k", 7) == 7
    assert a.get_float("k", 1.2) == 1.2
    assert a.get_bool("k", True) is True
    assert a.get_str("k", "d") == "d"
    assert a.get_duration_seconds("k", 600.0) == 600.0
    assert a.get_duration_seconds("k", None) is None
    assert a.get_mapping("k") is None


def test_none_raw_is_empty() -> None:
    assert list(Arguments(None, owner="action allocate").keys()) == []


# --------------------------------------------------------------------------- int


def test_int_accepts_yaml_int_integer_string_and_integral_float() -> None:
    a = Arguments({"a": 3, "b": "-12", "c": " 4 ", "d": 2.0}, owner="plugin x")
    assert [a.get_int(k, 0) for k in "abcd"] == [3, -12, 4, 2]


def test_int_rejects_non_numeric_string_with_exact_message() -> None:
    message = error_of(lambda: args(**{"binpack.weight": "abc"}).get_int("binpack.weight", 1))
    assert message == "plugin binpack: argument binpack.weight: got 'abc' (str); expected an integer"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (True, "True (bool)"),
        (2.5, "2.5 (float)"),
        ("2.5", "'2.5' (str)"),
        ("1_000", "'1_000' (str)"),
        ([1], "[1] (list)"),
    ],
)
def test_int_rejects_bools_fractions_and_other_types(value: Any, shown: str) -> None:
    message = error_of(lambda: args(w=value).get_int("w", 1))
    assert message == f"plugin binpack: argument w: got {shown}; expected an integer"


# --------------------------------------------------------------------------- float


def test_float_accepts_int_float_and_numeric_strings() -> None:
    a = Arguments({"a": 2, "b": 1.5, "c": "1.2", "d": "1e3", "e": ".5", "f": "-3"}, owner="plugin x")
    assert [a.get_float(k, 0.0) for k in "abcdef"] == [2.0, 1.5, 1.2, 1000.0, 0.5, -3.0]
    assert isinstance(a.get_float("a", 0.0), float)


def test_float_accepts_pyyaml_exponent_without_dot_which_decodes_as_string() -> None:
    raw = yaml.safe_load("overcommit-factor: 1e3\n")
    assert raw == {"overcommit-factor": "1e3"}
    assert Arguments(raw, owner="plugin overcommit").get_float("overcommit-factor", 1.2) == 1000.0


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (False, "False (bool)"),
        ("abc", "'abc' (str)"),
        ("nan", "'nan' (str)"),
        (math.nan, "nan (float)"),
        ({}, "{} (dict)"),
    ],
)
def test_float_rejects_bools_nan_and_non_numbers(value: Any, shown: str) -> None:
    message = error_of(lambda: Arguments({"f": value}, owner="plugin overcommit").get_float("f", 1.2))
    assert message == f"plugin overcommit: argument f: got {shown}; expected a number"


# --------------------------------------------------------------------------- bool


@pytest.mark.parametrize("text", ["1", "t", "T", "TRUE", "true", "True"])
def test_bool_accepts_go_parsebool_true_strings(text: str) -> None:
    assert args(b=text).get_bool("b", False) is True


@pytest.mark.parametrize("text", ["0", "f", "F", "FALSE", "false", "False"])
def test_bool_accepts_go_parsebool_false_strings(text: str) -> None:
    assert args(b=text).get_bool("b", True) is False


def test_bool_accepts_yaml_bools() -> None:
    assert args(b=True).get_bool("b", False) is True
    assert args(b=False).get_bool("b", True) is False


@pytest.mark.parametrize(("value", "shown"), [("yes", "'yes' (str)"), (1, "1 (int)"), (0.0, "0.0 (float)")])
def test_bool_rejects_other_values(value: Any, shown: str) -> None:
    message = error_of(lambda: Arguments({"p": value}, owner="action preempt").get_bool("p", True))
    assert message == f"action preempt: argument p: got {shown}; expected true or false"


# --------------------------------------------------------------------------- str, mapping


def test_str_returns_strings_unchanged() -> None:
    assert args(r="nvidia.com/gpu, example.com/foo").get_str("r", "") == "nvidia.com/gpu, example.com/foo"


def test_str_rejects_numbers() -> None:
    assert (
        error_of(lambda: args(r=5).get_str("r", ""))
        == "plugin binpack: argument r: got 5 (int); expected a string"
    )


def test_mapping_returns_read_only_view() -> None:
    view = args(m={"a": 1}).get_mapping("m")
    assert view == {"a": 1}
    with pytest.raises(TypeError):
        view["a"] = 2  # type: ignore[index]


def test_mapping_rejects_non_mapping() -> None:
    assert (
        error_of(lambda: args(m=[1]).get_mapping("m"))
        == "plugin binpack: argument m: got [1] (list); expected a mapping"
    )


# --------------------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("2h", 7200.0),
        ("1.5h", 5400.0),
        ("1h2m3s", 3723.0),
        ("-1m", -60.0),
        ("+5s", 5.0),
        ("0", 0.0),
        ("300us", 300e-6),
        ("2µs", 2e-6),
        ("2μs", 2e-6),
        ("10ns", 10e-9),
        (".5s", 0.5),
        ("1.s", 1.0),
        (" 10m ", 600.0),
        ("45", 45.0),
        ("2.5", 2.5),
        (30, 30.0),
        (0.25, 0.25),
    ],
)
def test_duration_parses_go_durations_and_bare_seconds(value: Any, seconds: float) -> None:
    result = Arguments({"d": value}, owner="plugin tdm").get_duration_seconds("d", None)
    assert result == pytest.approx(seconds, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("value", ["", "1x", "m", "h1", "1h 30m", "1.5.3s", "--1s", "1h-30m", "1d", True])
def test_duration_rejects_malformed_values(value: Any) -> None:
    message = error_of(
        lambda: Arguments({"tdm.evict.period": value}, owner="plugin tdm").get_duration_seconds(
            "tdm.evict.period", 60.0
        )
    )
    assert message.startswith(
        f"plugin tdm: argument tdm.evict.period: got {value!r} ({type(value).__name__}); "
    )
    assert message.endswith("expected a duration such as '1m30s', '500ms', '2h', or a number of seconds")


# --------------------------------------------------------------------------- mapping protocol


def test_keys_contains_and_raw() -> None:
    source = {"a": 1, "b": None}
    a = Arguments(source, owner="plugin x")
    assert set(a.keys()) == {"a", "b"}
    assert "a" in a and "b" in a and "c" not in a
    assert a.raw == source
    with pytest.raises(TypeError):
        a.raw["a"] = 2  # type: ignore[index]
    source["a"] = 5
    assert a.get_int("a", 0) == 1  # a snapshot, not a live view of the caller's dict


# --------------------------------------------------------------------------- properties


@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_get_int_round_trips_native_string_and_yaml(value: int) -> None:
    text = yaml.safe_dump({"k": value, "s": str(value)})
    for raw in (
        {"k": value},
        {"k": str(value)},
        {"k": yaml.safe_load(text)["s"]},
        {"k": yaml.safe_load(text)["k"]},
    ):
        assert Arguments(raw, owner="plugin p").get_int("k", 0) == value


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_get_float_round_trips_native_repr_string_and_yaml(value: float) -> None:
    loaded = yaml.safe_load(yaml.safe_dump({"k": value}))["k"]
    for raw in ({"k": value}, {"k": repr(value)}, {"k": loaded}):
        assert Arguments(raw, owner="plugin p").get_float("k", 0.0) == value


@given(st.integers(min_value=-(2**53), max_value=2**53))
def test_get_float_accepts_every_int_exactly(value: int) -> None:
    assert Arguments({"k": value}, owner="plugin p").get_float("k", 0.0) == float(value)


@pytest.mark.parametrize(("getter", "text"), [("get_int", "\u0663"), ("get_float", "\u0661.5"),
                                              ("get_duration_seconds", "\u0665s")])
def test_unicode_digits_are_not_numbers(getter: str, text: str) -> None:
    # Python's int()/float() would read Arabic-Indic digits; Go's strconv does not.
    a = args(k=text)
    with pytest.raises(ArgumentError):
        getattr(a, getter)("k", 1)
