"""Ages as apimachinery's HumanDuration prints them, and tables that are never cut."""

from __future__ import annotations

import pytest

from pyvolcano.vcctl.printing import human_duration, print_table


@pytest.mark.parametrize(("seconds", "text"), [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (125, "2m5s"), (600, "10m"),
    (3 * 3600 - 1, "179m"), (3 * 3600, "3h"), (3 * 3600 + 600, "3h10m"), (8 * 3600, "8h"), (47 * 3600, "47h"),
    (48 * 3600, "2d"), (50 * 3600, "2d2h"), (8 * 86400, "8d"), (2 * 365 * 86400 + 86400, "2y1d"),
    (9 * 365 * 86400, "9y"),
])
def test_human_duration_matches_apimachinery(seconds, text):
    assert human_duration(seconds) == text


def test_a_value_wider_than_its_column_still_gets_a_space(capsys):
    print_table([("Name", 6), ("State", 8)], [["a-very-long-name", "Open"]])
    assert capsys.readouterr().out == "Name  State\na-very-long-name Open\n"
