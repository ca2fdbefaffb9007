"""Go ``time.ParseDuration`` strings ("1h30m", "500ms", "2s") as float seconds.

As in Go, digits are ASCII only and a duration is at most :data:`MAX_DURATION_SECONDS` (an
int64 of nanoseconds, about 292 years) in magnitude; anything longer is an error, not a time
that later overflows a date or an integer.
"""

from __future__ import annotations

import re

__all__ = ["MAX_DURATION_SECONDS", "DurationError", "parse_duration", "parse_duration_strict"]

MAX_DURATION_SECONDS = (2**63 - 1) / 1e9

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")


class DurationError(ValueError):
    pass


def parse_duration(text: str) -> float | None:
    """Parse a Go duration; returns None for an unparsable string (callers decide severity)."""
    try:
        return parse_duration_strict(text)
    except DurationError:
        return None


def parse_duration_strict(text: str) -> float:
    s = text.strip()
    if not s:
        raise DurationError(f"got {text!r}; expected a duration such as 90s, 10m, 1h30m")
    sign = 1.0
    if s[0] in "+-":
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    pos = 0
    total = 0.0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise DurationError(f"got {text!r}; expected a duration such as 90s, 10m, 1h30m")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if total > MAX_DURATION_SECONDS:
        raise DurationError(f"got {_short(text)}; expected a duration of at most 2562047h (Go's longest)")
    return sign * total


def _short(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."
