"""Where and how the commands print.

* stdout carries results only: one JSON or YAML document (``-o json|yaml``) or tables
  (``-o table|wide``). Notes, warnings, progress and "wrote FILE" lines go to stderr.
* :func:`console` gives the rich console for a stream. On a terminal it has the terminal's width
  and colour; otherwise (a pipe, a file) it never truncates or wraps (a very wide virtual
  width) and prints no escape codes. ``NO_COLOR`` (any non-empty value) turns colour off
  everywhere; no console highlights numbers or paths on its own.
* A message is one line: :func:`one_line` escapes line breaks and other control characters
  that an input value may carry (``\\n``, ``\\x1b``), so an error never spans two lines.
* A library warning logged while nothing set logging up (the live components do) is printed
  as the commands print theirs, ``warning: <message>`` (:class:`UnconfiguredLogs`, the
  ``logging.lastResort`` the entry point installs).
* Wall-clock timings are not deterministic, so :func:`strip_timings` removes them from the
  data unless ``--timings`` is given: the same inputs and seed then print the same bytes.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any, TextIO

from rich.console import Console

__all__ = ["TIMING_KEYS", "UnconfiguredLogs", "console", "emit", "error", "note", "one_line", "render",
           "strip_timings", "warn"]

UNLIMITED_WIDTH = 100_000
TIMING_KEYS = frozenset({"wall_seconds", "session_seconds", "session_mean_s", "session_p50_s", "session_p99_s",
                         "session_max_s"})


def _no_color() -> bool:
    return os.environ.get("NO_COLOR", "") != ""


def console(*, stderr: bool = False) -> Console:
    stream: TextIO = sys.stderr if stderr else sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if tty:
        return Console(file=stream, highlight=False, no_color=_no_color())
    return Console(file=stream, highlight=False, no_color=True, color_system=None, force_terminal=False,
                   width=UNLIMITED_WIDTH, soft_wrap=True)


def render(data: Any, fmt: str) -> str:
    """``data`` as one JSON line (``json``) or one YAML document (``yaml``): what :func:`emit` prints."""
    if fmt == "yaml":
        import yaml

        return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False))
    return json.dumps(data) + "\n"


def emit(data: Any, fmt: str) -> None:
    """Print ``data`` as one JSON line (``json``) or one YAML document (``yaml``) on stdout."""
    sys.stdout.write(render(data, fmt))


def strip_timings(data: Any, keys: frozenset[str] = TIMING_KEYS) -> Any:
    """``data`` without the wall-clock ``keys`` (default :data:`TIMING_KEYS`), at any depth (a copy)."""
    if isinstance(data, dict):
        return {k: strip_timings(v, keys) for k, v in data.items() if k not in keys}
    if isinstance(data, list):
        return [strip_timings(v, keys) for v in data]
    return data


def one_line(text: str) -> str:
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def error(text: str) -> None:
    print(f"error: {one_line(text)}", file=sys.stderr)


def note(text: str) -> None:
    print(f"note: {one_line(text)}", file=sys.stderr)


def warn(text: str) -> None:
    print(f"warning: {one_line(text)}", file=sys.stderr)


class UnconfiguredLogs(logging.Handler):
    """Records of WARNING and above, when no handler is configured: ``warning: <message>``
    (``error: ...``) on the current stderr."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        print(f"{record.levelname.lower()}: {one_line(record.getMessage())}", file=sys.stderr)
