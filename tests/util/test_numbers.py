import pytest

from pyvolcano.util.numbers import parse_float, parse_int


@pytest.mark.parametrize(("text", "expected"), [("0", 0), ("-12", -12), ("+7", 7), ("0012", 12)])
def test_parse_int_reads_go_atoi_integers(text: str, expected: int) -> None:
    assert parse_int(text) == expected


@pytest.mark.parametrize("text", ["\u0663", "1_000", " 1", "1 ", "", "1.0", "0x10", "\uff11"])
def test_parse_int_rejects_unicode_digits_underscores_and_spaces(text: str) -> None:
    with pytest.raises(ValueError):
        parse_int(text)


@pytest.mark.parametrize(("text", "expected"), [("1", 1.0), ("-1.5", -1.5), (".5", 0.5), ("1e3", 1000.0)])
def test_parse_float_reads_decimal_text(text: str, expected: float) -> None:
    assert parse_float(text) == expected


@pytest.mark.parametrize("text", ["\u0663.5", "1_0.5", "١e3", "", "1.5x"])
def test_parse_float_rejects_unicode_digits(text: str) -> None:
    with pytest.raises(ValueError):
        parse_float(text)
