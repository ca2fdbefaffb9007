from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyvolcano.api.quantity import QuantityError, milli_value, parse_quantity, value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500m", Fraction(1, 2)),
        ("1.5Gi", Fraction(1610612736)),
        ("1e3", Fraction(1000)),
        ("100n", Fraction(1, 10**7)),
        ("10u", Fraction(1, 10**5)),
        ("2E", Fraction(2 * 10**18)),
        ("1G", Fraction(10**9)),
        ("1Gi", Fraction(2**30)),
        ("1k", Fraction(1000)),
        (".5", Fraction(1, 2)),
        ("+3", Fraction(3)),
        (4, Fraction(4)),
    ],
)
def test_parse_quantity_follows_apimachinery_grammar(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["1K", "abc", "1.2.3", "", "1Gb", "--1", "1 Gi", True, None])
def test_parse_quantity_rejects_malformed(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)  # type: ignore[arg-type]


def test_decimal_and_binary_suffixes_differ() -> None:
    assert value("1G") == 1_000_000_000
    assert value("1Gi") == 1_073_741_824


def test_milli_value_rounds_up_like_kubernetes() -> None:
    assert milli_value("0.0001") == 1
    assert milli_value("1") == 1000
    assert value("1.1") == 2


@given(st.integers(min_value=0, max_value=10**12))
def test_integer_milli_round_trip(n: int) -> None:
    assert milli_value(f"{n}m") == n
    assert value(str(n)) == n


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=10**6))
def test_parse_is_monotonic(a: int, b: int) -> None:
    assert (parse_quantity(f"{a}Mi") <= parse_quantity(f"{b}Mi")) == (a <= b)


@pytest.mark.parametrize("text", ["\u0663", "\u0661\u0660Gi", "1e\u0663", "\uff11", "1x", "NaN", "nan", "inf", "1_000"])
def test_parse_quantity_rejects_what_apimachinery_rejects(text: str) -> None:
    # Arabic-Indic and full-width digits are Unicode decimals that Python's int() would accept.
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize("text", ["9" * 30, "8Ei", "1e64", 10**19, "9" * 5000, "1e" + "9" * 5000, 1e300])
def test_quantities_beyond_kubernetes_limit_are_refused(text: object) -> None:
    with pytest.raises(QuantityError) as e:
        parse_quantity(text)  # type: ignore[arg-type]
    assert len(str(e.value)) < 200


def test_largest_quantity_is_accepted() -> None:
    assert parse_quantity(str(2**63 - 1)) == 2**63 - 1
    assert parse_quantity("7Ei") == 7 * 2**60


@pytest.mark.parametrize("text", ["٣", "١٠Gi", "３"])
def test_non_ascii_digits_are_not_quantities(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)
