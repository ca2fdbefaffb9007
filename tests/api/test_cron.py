"""Cron schedules as robfig/cron's ParseStandard reads them (upstream's CronJob webhook and
controller), computed with croniter."""

from __future__ import annotations

import datetime as dt

import pytest

from pyvolcano.api.cron import ScheduleError, load_location, parse_standard

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp()  # a Thursday


def times(expr: str, n: int = 3, start: float = START) -> list[str]:
    schedule, out, t = parse_standard(expr), [], start
    for _ in range(n):
        nxt = schedule.next(t)
        assert nxt is not None
        out.append(dt.datetime.fromtimestamp(nxt, dt.UTC).strftime("%m-%d %H:%M:%S"))
        t = nxt
    return out


@pytest.mark.parametrize(("expr", "expected"), [
    ("*/5 * * * *", ["01-01 00:05:00", "01-01 00:10:00", "01-01 00:15:00"]),
    ("5/15 * * * *", ["01-01 00:05:00", "01-01 00:20:00", "01-01 00:35:00"]),
    ("0 9 * * MON-FRI", ["01-01 09:00:00", "01-02 09:00:00", "01-05 09:00:00"]),
    ("0 0 1 jan,Feb *", ["02-01 00:00:00", "01-01 00:00:00", "02-01 00:00:00"]),
    ("@hourly", ["01-01 01:00:00", "01-01 02:00:00", "01-01 03:00:00"]),
    ("@daily", ["01-02 00:00:00", "01-03 00:00:00", "01-04 00:00:00"]),
    ("@midnight", ["01-02 00:00:00", "01-03 00:00:00", "01-04 00:00:00"]),
    ("@weekly", ["01-04 00:00:00", "01-11 00:00:00", "01-18 00:00:00"]),
    ("@monthly", ["02-01 00:00:00", "03-01 00:00:00", "04-01 00:00:00"]),
    ("@every 90s", ["01-01 00:01:30", "01-01 00:03:00", "01-01 00:04:30"]),
    ("1,,2 * * * *", ["01-01 00:01:00", "01-01 00:02:00", "01-01 01:01:00"]),
])
def test_standard_fields_and_descriptors_run_at_robfigs_times(expr: str, expected: list[str]) -> None:
    assert times(expr) == expected


def test_yearly_and_annually_are_new_year() -> None:
    assert times("@yearly", 2) == times("@annually", 2) == ["01-01 00:00:00", "01-01 00:00:00"]


def test_next_time_is_strictly_after_and_on_a_whole_second() -> None:
    schedule = parse_standard("*/5 * * * *")
    assert schedule.next(START + 300) == START + 600
    assert schedule.next(START + 299.5) == START + 300


@pytest.mark.parametrize(("expr", "expected"), [
    ("0 0 1 * 1", ["01-01 00:00:00", "01-05 00:00:00", "01-12 00:00:00"]),  # the 1st or a Monday
    ("0 0 */1 * 1", ["01-05 00:00:00", "01-12 00:00:00", "01-19 00:00:00"]),  # */1 keeps the star: Mondays
    ("0 0 ? * 1", ["01-05 00:00:00", "01-12 00:00:00", "01-19 00:00:00"]),
    ("0 0 */2 * 1", ["01-01 00:00:00", "01-03 00:00:00", "01-05 00:00:00"]),  # a step clears it: odd days or Monday
])
def test_day_of_month_and_week_match_either_unless_one_is_a_star(expr: str, expected: list[str]) -> None:
    assert times(expr, start=START - 1) == expected


@pytest.mark.parametrize(("expr", "message"), [
    ("", "empty spec string"),
    ("error schedule", "expected exactly 5 fields, found 2: [error schedule]"),
    ("* * * * * *", "expected exactly 5 fields, found 6"),
    ("0 0 * * 7", "end of range (7) above maximum (6): 7"),
    ("0 0 * * 5-1", "beginning of range (5) beyond end of range (1): 5-1"),
    ("0 24 * * *", "end of range (24) above maximum (23): 24"),
    ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("1/2/3 * * * *", "too many slashes: 1/2/3"),
    ("0 0 L * *", 'failed to parse int from L'),
    ("0 0 1W * *", "failed to parse int from 1W"),
    ("0 0 * * 1#2", "failed to parse int from 1#2"),
    ("H * * * *", "failed to parse int from H"),
    ("0 jan * * *", "failed to parse int from jan"),
    ("@reboot", "unrecognized descriptor: @reboot"),
    ("@every soon", "failed to parse duration @every soon"),
    ("TZ=Mars/Olympus 0 9 * * *", "provided bad location Mars/Olympus"),
])
def test_what_robfig_refuses_is_refused_even_where_croniter_would_accept_it(expr: str, message: str) -> None:
    with pytest.raises(ScheduleError, match=None) as e:
        parse_standard(expr)
    assert message in str(e.value)


def test_every_counts_whole_seconds_from_the_whole_second_before() -> None:
    assert parse_standard("@every 1500ms").every == 1
    assert parse_standard("@every 500ms").every == 1
    assert parse_standard("@every 2m30.9s").every == 150
    assert parse_standard("@every 1m").next(START + 0.7) == START + 60


def test_a_time_zone_prefix_or_zone_runs_the_schedule_in_that_zone() -> None:
    # 09:00 in Shanghai (UTC+8) is 01:00 UTC.
    assert times("TZ=Asia/Shanghai 0 9 * * *", 1) == ["01-01 01:00:00"]
    assert times("CRON_TZ=Asia/Shanghai 0 9 * * *", 1) == ["01-01 01:00:00"]
    shanghai = load_location("Asia/Shanghai")
    assert parse_standard("0 9 * * *", zone=shanghai).next(START) == START + 3600


def test_an_impossible_date_has_no_next_time() -> None:
    assert parse_standard("0 0 31 2 *").next(START) is None


def test_time_zone_names_load_as_go_loads_them() -> None:
    assert load_location("") is dt.UTC and load_location("UTC") is dt.UTC
    assert load_location("Local") is dt.UTC  # the controller's zone: UTC here
    assert str(load_location("Asia/./Shanghai")) == "Asia/Shanghai"
    for bad in ("../etc/passwd", "/etc/localtime", "Amerrica/New_York"):
        with pytest.raises(ScheduleError):
            load_location(bad)


def test_on_a_spring_forward_day_a_time_in_the_gap_runs_after_it() -> None:
    """The one known difference from robfig (which skips that day): croniter's calendar walk."""
    before = dt.datetime(2026, 3, 8, 0, 0, tzinfo=dt.UTC).timestamp()
    nxt = parse_standard("TZ=America/New_York 30 2 * * *").next(before)
    assert nxt is not None
    assert dt.datetime.fromtimestamp(nxt, load_location("America/New_York")).strftime("%m-%d %H:%M") == "03-08 03:00"
