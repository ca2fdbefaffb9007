"""Cron schedules as Volcano's CronJob reads them: ``robfig/cron/v3``'s ``ParseStandard``.

Upstream's CronJob webhook and controller (``pkg/webhooks/admission/cronjobs``,
``pkg/controllers/cronjob``) parse ``spec.schedule`` with ``cron.ParseStandard``: five fields
(minute, hour, day of month, month, day of week), an optional ``TZ=<zone>`` or
``CRON_TZ=<zone>`` prefix, and the descriptors ``@yearly`` (``@annually``), ``@monthly``,
``@weekly``, ``@daily`` (``@midnight``), ``@hourly`` and ``@every <Go duration>``.

The calendar arithmetic (the next matching minute in a time zone, across month lengths and
daylight-saving changes) is ``croniter``'s. robfig's grammar is stricter than croniter's in a
few places, so :func:`parse_standard` first applies robfig's rules field by field (what
``getRange`` accepts: ``*`` or ``?``, a number or a month/weekday name, ``a-b``, ``/step``, lists;
bounds 0-59, 0-23, 1-31, 1-12, 0-6) with robfig's error texts, and hands croniter the field as
robfig understood it, with numbers for names. What croniter alone would accept is refused: a
sixth (seconds) or seventh (year) field, ``7`` for Sunday, a range that wraps (``5-1``), and
the ``L``, ``W``, ``#`` and ``H`` extensions.

Day of month and day of week combine as in robfig (and Vixie cron): when either field is a bare
``*``/``?`` (robfig's star bit, which a step above 1 clears) a day must match both, otherwise
either. ``@every D`` is robfig's ``ConstantDelaySchedule``: ``D`` rounded down to whole seconds
(at least one), counted from the whole second of the previous time.

One difference remains, in croniter's calendar walk: on the day a daylight-saving change skips
an hour, a time in the skipped hour (``30 2 * * *`` in ``America/New_York``) runs at the first
minute after the gap, where robfig skips that day. Times are Unix seconds; a schedule without
a zone runs in UTC (upstream: the
controller process's local zone, UTC in its images). :meth:`CronSchedule.next` returns None where
robfig's ``Next`` returns the zero time (no match within five years, as for ``0 0 31 2 *``).
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import re
import zoneinfo
from dataclasses import dataclass
from typing import Final

from croniter import CroniterBadCronError, CroniterBadDateError, CroniterError, croniter

from pyvolcano.api.duration import DurationError, parse_duration_strict

__all__ = ["CronSchedule", "ScheduleError", "load_location", "parse_standard"]

_UTC: Final = _dt.UTC
_SEARCH_YEARS: Final = 5  # robfig's Next gives up after five years


class ScheduleError(ValueError):
    """A schedule ``cron.ParseStandard`` refuses, or a time zone ``time.LoadLocation`` cannot load."""


@dataclass(frozen=True, slots=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int] | None = None


_MONTHS: Final = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
_DAYS: Final = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_FIELDS: Final = (_Bounds(0, 59), _Bounds(0, 23), _Bounds(1, 31), _Bounds(1, 12, _MONTHS), _Bounds(0, 6, _DAYS))
_DESCRIPTORS: Final = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
_EVERY: Final = "@every "
_ATOI: Final = re.compile(r"[+-]?[0-9]+")  # strconv.Atoi


def load_location(name: str) -> _dt.tzinfo:
    """``time.LoadLocation``: ``""`` and ``UTC`` are UTC; ``Local`` is the process's zone, which
    is UTC here (see the module docstring); any other name comes from the IANA database."""
    if name in ("", "UTC", "Local"):
        return _UTC
    if ".." in name or name.startswith(("/", "\\")):
        raise ScheduleError(f"invalid location name: {name}")
    # Go opens the file <zoneinfo dir>/<name>, so "Asia/./Shanghai" and "Asia//Shanghai" load.
    key = "/".join(part for part in name.split("/") if part not in ("", "."))
    try:
        return zoneinfo.ZoneInfo(key)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleError(f"unknown time zone {name}") from None


@dataclass(frozen=True, slots=True)
class CronSchedule:
    """A parsed schedule: either five cron fields (``fields``, in croniter's syntax) or a
    constant delay (``every``, whole seconds), in the time zone ``zone``."""

    text: str
    zone: _dt.tzinfo
    fields: str = ""
    every: int = 0

    def next(self, after: float) -> float | None:
        """The first scheduled time strictly after ``after`` (Unix seconds; the answer is a whole
        second), or None when there is none within five years."""
        if self.every:
            return math.floor(after) + self.every
        return _next(self.fields, self.zone, after)


# A controller asks for the same times again and again (every sync of a CronJob recomputes
# its last and next runs) and croniter parses its expression on every query (about half a
# millisecond): both are pure, so they are remembered.
@functools.lru_cache(maxsize=4096)
def _next(fields: str, zone: _dt.tzinfo, after: float) -> float | None:
    start = _dt.datetime.fromtimestamp(after, tz=_UTC).astimezone(zone)
    try:
        it = croniter(fields, start, max_years_between_matches=_SEARCH_YEARS)
        found = it.get_next(_dt.datetime)
    except (CroniterBadDateError, CroniterError, OverflowError):
        return None
    if found.year > start.year + _SEARCH_YEARS:
        return None
    return float(round(found.timestamp()))


@functools.lru_cache(maxsize=1024)
def parse_standard(spec: str, *, zone: _dt.tzinfo = _UTC) -> CronSchedule:
    """``cron.ParseStandard(spec)``; ``zone`` is the zone of a schedule without a ``TZ=`` prefix.
    Raises :class:`ScheduleError` with robfig's message."""
    if not spec:
        raise ScheduleError("empty spec string")
    text = spec
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        if space < 0:  # robfig slices up to index -1 and panics; refuse it instead
            raise ScheduleError(f"provided bad location {spec[spec.find('=') + 1:]}: missing schedule")
        name = spec[spec.find("=") + 1:space]
        try:
            zone = load_location(name)
        except ScheduleError as e:
            raise ScheduleError(f"provided bad location {name}: {e}") from None
        spec = spec[space:].strip()
    if spec.startswith("@"):
        return _descriptor(text, spec, zone)
    fields = spec.split()
    if len(fields) != len(_FIELDS):
        raise ScheduleError(f"expected exactly {len(_FIELDS)} fields, found {len(fields)}: [{' '.join(fields)}]")
    parsed = [_field(f, b) for f, b in zip(fields, _FIELDS, strict=True)]
    expr = " ".join(parsed)
    try:
        croniter(expr)  # the normalised form is always croniter's; a refusal here is a bug
    except CroniterBadCronError as e:
        raise ScheduleError(f"{spec}: {e}") from None
    return CronSchedule(text, zone, fields=expr)


def _descriptor(text: str, spec: str, zone: _dt.tzinfo) -> CronSchedule:
    if spec in _DESCRIPTORS:
        return CronSchedule(text, zone, fields=_DESCRIPTORS[spec])
    if spec.startswith(_EVERY):
        raw = spec[len(_EVERY):]
        try:
            if raw != raw.strip():
                raise DurationError(f"time: invalid duration {raw!r}")
            seconds = parse_duration_strict(raw)
        except DurationError as e:
            raise ScheduleError(f"failed to parse duration {spec}: {e}") from None
        # cron.Every: below a second is one second; otherwise whole seconds, rounded down.
        return CronSchedule(text, zone, every=max(1, math.floor(seconds)))
    raise ScheduleError(f"unrecognized descriptor: {spec}")


def _field(field: str, b: _Bounds) -> str:
    """robfig's ``getField``: the field as croniter reads it, ``*`` when robfig's star bit is set."""
    parts = [p for p in field.split(",") if p]
    out: list[str] = []
    star = False
    for part in parts:
        text, is_star = _range(part, b)
        star = star or is_star
        out.append(text)
    return "*" if star else ",".join(out)


def _range(expr: str, b: _Bounds) -> tuple[str, bool]:
    """robfig's ``getRange``: ``(croniter text, star bit)`` of one list item."""
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    single = len(low_high) == 1
    star = low_high[0] in ("*", "?")
    if star:
        start, end = b.low, b.high
    else:
        start = _int_or_name(low_high[0], b.names)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _int_or_name(low_high[1], b.names)
        else:
            raise ScheduleError(f"too many hyphens: {expr}")
    step = 1
    if len(range_and_step) == 2:
        step = _atoi(range_and_step[1])
        if single:
            end = b.high
        if step > 1:
            star = False
    elif len(range_and_step) > 2:
        raise ScheduleError(f"too many slashes: {expr}")
    if start < b.low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({b.low}): {expr}")
    if end > b.high:
        raise ScheduleError(f"end of range ({end}) above maximum ({b.high}): {expr}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expr}")
    return (f"{start}-{end}/{step}" if step > 1 else f"{start}-{end}" if start != end else str(start)), star


def _int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _atoi(expr)


def _atoi(expr: str) -> int:
    if _ATOI.fullmatch(expr) is None:
        raise ScheduleError(f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": invalid syntax')
    n = int(expr)
    if n < 0:
        raise ScheduleError(f"negative number ({n}) not allowed: {expr}")
    return n
