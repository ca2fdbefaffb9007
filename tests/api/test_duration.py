"""Go duration strings: ASCII digits only and at most an int64 of nanoseconds, as in Go."""

import pytest

from pyvolcano.api.duration import MAX_DURATION_SECONDS, DurationError, parse_duration_strict


def test_go_durations_parse_to_seconds() -> None:
    assert parse_duration_strict("1h30m") == 5400
    assert parse_duration_strict("2562047h") <= MAX_DURATION_SECONDS


@pytest.mark.parametrize("text", ["9999999999h", "2562048h", "1" + "0" * 400 + "s"])
def test_durations_longer_than_go_allows_are_refused(text: str) -> None:
    with pytest.raises(DurationError, match="at most 2562047h"):
        parse_duration_strict(text)


@pytest.mark.parametrize("text", ["٣s", "１m", "1h٣m"])
def test_non_ascii_digits_are_refused(text: str) -> None:
    with pytest.raises(DurationError, match="expected a duration such as"):
        parse_duration_strict(text)
