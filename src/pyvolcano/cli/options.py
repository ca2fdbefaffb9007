"""Command-line conventions shared by every ``pyvolcano`` command.

* :class:`Group` is the class of the root Typer app (``typer.Typer(cls=Group)``); a sub-app
  added to it is made a Group too, so every command follows these rules. When it is built it
  tidies the help of its commands (flags show no ``<bool>`` type, arguments show an
  upper-case name such as ``CLUSTER`` or ``[FILE]...`` instead of ``{cluster}`` and
  ``<list[Path]>``), and before a command parses its arguments it refuses a single-valued
  option given twice (``--workload a.yaml --workload b.yaml``) instead of keeping the last.
* The option callbacks (:func:`output_format`, :func:`seed`, :func:`schedule_period`,
  :func:`until`, :func:`report_dir`) validate a value where it enters and raise
  :class:`typer.BadParameter`, which the single entry point (:func:`pyvolcano.cli.app.run`)
  prints as one ``error:`` line, exit 2.
* Help shows the names of things, not Python types: the flags and arguments are retouched
  here because Typer's rich help prints ``<bool>`` for a flag and ignores an argument's
  metavar in its type column.
"""

from __future__ import annotations

import collections
import math
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperArgument, TyperGroup

__all__ = ["OUTPUT_FORMATS", "SEED_LIMIT", "Group", "UsageError", "output_format", "report_dir", "schedule_period",
           "seed", "until"]

OUTPUT_FORMATS = ("json", "yaml", "table", "wide")
SEED_LIMIT = 2**64


class UsageError(typer.TyperException):
    """A command line that cannot run; printed as one ``error:`` line, exit code 2."""

    exit_code = 2


class _Argument(TyperArgument):
    """A positional argument shown by its metavar: ``CLUSTER``, ``[FILE]...``."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        if not self.required:
            name = f"[{name.removesuffix('...')}]" + ("..." if name.endswith("...") else "")
        if self.nargs != 1 and not name.endswith("..."):
            name += "..."
        return name


def _tidy(command: Any) -> None:
    for param in command.params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        elif type(param) is TyperArgument:
            param.__class__ = _Argument
            if param.metavar is None:
                param.metavar = str(param.name).upper() + ("..." if param.nargs != 1 else "")


def _adopt(group: TyperGroup) -> None:
    """Tidy ``group`` and every command under it; a plain sub-group becomes a :class:`Group`."""
    _tidy(group)
    for command in group.commands.values():
        if isinstance(command, TyperGroup):
            if type(command) is TyperGroup:
                command.__class__ = Group
            _adopt(command)
        else:
            _tidy(command)


def _single_valued(param: Any) -> bool:
    return (getattr(param, "param_type_name", "") == "option" and not param.multiple
            and not getattr(param, "is_flag", False) and not getattr(param, "count", False))


class Group(TyperGroup):
    """A Typer group applying the conventions above to the commands under it."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        _adopt(self)

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and not isinstance(command, TyperGroup):
            go_translate = getattr(command, "go_translate", None)  # pyvolcano.cli.go_flags.GoFlagsCommand
            if go_translate is not None:
                rest = go_translate(rest)
            sub = type(ctx)(command, parent=ctx, info_name=name, **(command.context_settings or {}))
            help_option = command.get_help_option(sub)
            if help_option is not None:
                help_option.metavar = ""
            _, _, order = command.make_parser(sub).parse_args(args=list(rest))
            if "--help" not in rest:
                for param, times in collections.Counter(p for p in order if _single_valued(p)).items():
                    if times > 1:
                        flag = max(param.opts, key=len)
                        raise typer.BadParameter(f"given {times} times; it takes one value", ctx=sub,
                                                 param_hint=f"'{flag}'")
        return name, command, rest


# ---------------------------------------------------------------------------- option callbacks


def output_format(allowed: tuple[str, ...] = OUTPUT_FORMATS) -> Callable[[str | None], str]:
    """A ``--output`` callback: one of ``allowed``; unset means table on a terminal, else json."""

    def check(value: str | None) -> str:
        fmt = value if value is not None else ("table" if sys.stdout.isatty() else "json")
        if fmt not in allowed:
            raise typer.BadParameter(f"got {fmt!r}; expected {', '.join(allowed[:-1])} or {allowed[-1]}")
        return fmt

    return check


def seed(value: int) -> int:
    """A ``--seed`` callback: an unsigned 64-bit integer, as numpy's generators take."""
    if not 0 <= value < SEED_LIMIT:
        raise typer.BadParameter(f"got {value}; expected an integer from 0 to 2**64-1")
    return value


def schedule_period(value: float) -> float:
    """A ``--schedule-period`` callback: finite seconds, at least a millisecond."""
    if not (math.isfinite(value) and value >= 0.001):
        raise typer.BadParameter(f"got {value}; expected a finite number of seconds of at least 0.001")
    return value


def until(value: str | None) -> str | None:
    """An ``--until`` callback: a positive finite duration such as ``24h``; unset means no limit."""
    from pyvolcano.api.duration import DurationError, parse_duration_strict

    if value is None:
        return None
    try:
        seconds = parse_duration_strict(value)
    except DurationError as e:
        raise typer.BadParameter(str(e)) from None
    if not (math.isfinite(seconds) and seconds > 0):
        raise typer.BadParameter(f"got {value!r}; expected a positive duration such as 24h")
    return value


def report_dir(value: Path | None) -> Path | None:
    """A ``--report`` callback: a directory that exists or can be created, and can be written.

    Checked before the run so that a bad destination costs nothing: an existing file, or a
    place without write permission, is refused. Nothing is created here (a probe file is
    made and removed in the nearest existing directory)."""
    if value is None:
        return None
    if value.exists() and not value.is_dir():
        raise typer.BadParameter(f"{value} exists and is not a directory")
    probe = value
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise typer.BadParameter(f"{probe} is not a directory, so {value} cannot be created")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as e:
        raise typer.BadParameter(f"cannot write in {probe}: {e.strerror or e}") from None
    return value
