"""Typed access to plugin and action arguments (upstream ``pkg/scheduler/framework/arguments.go``).

Upstream ``framework.Arguments`` is a ``map[string]interface{}`` whose getters log a warning and
keep the default when a value has the wrong type, so a typo such as ``binpack.weight: abc`` is
silently ignored. Here the rules are:

* a missing key, or a key whose value is YAML ``null``, yields the caller's default;
* a value of the right YAML-native type is returned as is;
* users often quote scalars, so numeric and boolean *strings* are accepted leniently
  (``"1.2"``, ``"10"``, ``"true"``); boolean strings follow Go ``strconv.ParseBool``
  (``1 t T TRUE true True 0 f F FALSE false False``);
* an ``int`` is acceptable where a float is expected, and an integral float (``2.0``) where an
  integer is expected; a ``bool`` is **never** a number;
* anything else raises :class:`ArgumentError`, one line, naming the owner and the key:
  ``"plugin binpack: argument binpack.weight: got 'abc' (str); expected an integer"``.
* built with the owner's declared keys (``keys=ARGUMENTS``, :mod:`pyvolcano.framework.argument_keys`),
  a key the owner does not take, or takes but pyvolcano refuses, is an :class:`ArgumentError`
  at once: upstream would ignore it without a word.

Durations use Go's ``time.ParseDuration`` grammar (``"1m30s"``, ``"500ms"``, ``"-1.5h"``,
units ns/us/µs/ms/s/m/h, ``"0"`` without a unit); a bare number (or numeric string) means seconds.

The wrapped mapping is never modified; :attr:`Arguments.raw` is a read-only view of it.
"""

from __future__ import annotations

import math
import re
from collections.abc import KeysView, Mapping
from types import MappingProxyType
from typing import Any, Final, NoReturn

from pyvolcano.framework.argument_keys import ArgumentKeys

__all__ = ["ArgumentError", "Arguments"]

_INT_RE: Final = re.compile(r"[+-]?\d+", re.ASCII)
_FLOAT_RE: Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_TRUE_STRINGS: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE_STRINGS: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_DURATION_UNITS: Final[Mapping[str, float]] = MappingProxyType(
    {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
)
# Longer units first so that "ms" is not read as "m" followed by a stray "s".
_UNIT_PATTERN: Final = "ns|us|µs|μs|ms|s|m|h"
_DURATION_RE: Final = re.compile(rf"[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:{_UNIT_PATTERN}))+", re.ASCII)
_DURATION_PART_RE: Final = re.compile(rf"(\d+(?:\.\d*)?|\.\d+)({_UNIT_PATTERN})", re.ASCII)
_REPR_LIMIT: Final = 60


class ArgumentError(ValueError):
    """An argument value that cannot be read as the requested type.

    :meth:`bad` words it ``"<owner>: argument <key>: <problem>; expected <expected>"`` and keeps
    the parts, so that a configuration check can name the field (``argument``) without reading
    the message back; an error about no single argument has only the message.
    """

    def __init__(self, message: str, *, argument: str | None = None, problem: str | None = None,
                 expected: str | None = None):
        super().__init__(message)
        self.argument = argument
        self.problem = problem if problem is not None else message
        self.expected = expected

    @classmethod
    def bad(cls, owner: str, argument: str, problem: str, expected: str | None = None) -> ArgumentError:
        text = f"{owner}: argument {argument}: {problem}" + (f"; expected {expected}" if expected else "")
        return cls(text, argument=argument, problem=problem, expected=expected)


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > _REPR_LIMIT:
        text = text[: _REPR_LIMIT - 3] + "..."
    return f"{text} ({type(value).__name__})"


def _parse_go_duration(text: str) -> float | None:
    """Seconds for a Go duration string, or ``None`` if it is not one."""
    if text in ("0", "+0", "-0"):
        return 0.0
    if not _DURATION_RE.fullmatch(text):
        return None
    sign = -1.0 if text.startswith("-") else 1.0
    total = sum(float(number) * _DURATION_UNITS[unit] for number, unit in _DURATION_PART_RE.findall(text))
    return sign * total


class Arguments:
    """Read-only, typed view over one plugin's or action's ``arguments`` mapping.

    ``owner`` names whose arguments these are (``"plugin binpack"``, ``"action preempt"``) and
    prefixes every error message. Built with the owner's declared ``keys``
    (:mod:`pyvolcano.framework.argument_keys`), the view refuses an unknown or refused key at once
    (the first one, as an :class:`ArgumentError` naming it), and reading a key the table does not
    honour is a programming error (``LookupError``).
    """

    __slots__ = ("_keys", "_owner", "_raw", "_within")

    def __init__(self, raw: Mapping[str, Any] | None, *, owner: str | None = None,
                 keys: ArgumentKeys | None = None, within: str | None = None) -> None:
        """``within``: the path of a nested mapping these arguments were read from; its errors
        name the path in their text (``"<owner>: <within>: argument <key>: ..."``) and leave
        :attr:`ArgumentError.argument` unset, as no single argument of the owner is at fault."""
        self._raw: Mapping[str, Any] = MappingProxyType(dict(raw or {}))
        if owner is None:
            if keys is None:
                raise TypeError("Arguments needs an owner or a key table")
            owner = keys.owner
        self._owner = owner
        self._keys = keys
        self._within = within
        if keys is not None:
            for finding in keys.check(self._raw):
                if finding.is_error:
                    raise ArgumentError(f"{finding.problem}; expected {finding.expected}", argument=finding.key,
                                        problem=finding.problem, expected=finding.expected)

    def __repr__(self) -> str:
        return f"Arguments({dict(self._raw)!r}, owner={self._owner!r})"

    @property
    def raw(self) -> Mapping[str, Any]:
        """The arguments exactly as decoded (read-only)."""
        return self._raw

    @property
    def owner(self) -> str:
        return self._owner

    def keys(self) -> KeysView[str]:
        return self._raw.keys()

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def _get(self, key: str) -> Any:
        if self._keys is not None and not self._keys.honours(key):
            raise LookupError(f"{self._owner} reads {key!r}, which its ARGUMENTS table does not honour")
        return self._raw.get(key)

    def _fail(self, key: str, value: Any, expected: str) -> NoReturn:
        if self._within is not None:
            problem = f"{self._owner}: {self._within}: argument {key}: got {_describe(value)}"
            raise ArgumentError(f"{problem}; expected {expected}", problem=problem, expected=expected)
        raise ArgumentError.bad(self._owner, key, f"got {_describe(value)}", expected)

    def get_int(self, key: str, default: int) -> int:
        """An integer: a YAML int, an integral float (``2.0``) or an integer string (``"3"``)."""
        value = self._get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            self._fail(key, value, "an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and _INT_RE.fullmatch(value.strip()):
            return int(value.strip())
        self._fail(key, value, "an integer")

    def get_float(self, key: str, default: float) -> float:
        """A number: a YAML int or float (not NaN), or a decimal string (``"1.2"``, ``"1e3"``)."""
        value = self._get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            self._fail(key, value, "a number")
        if isinstance(value, int):
            return float(value)
        if isinstance(value, float) and not math.isnan(value):
            return value
        if isinstance(value, str) and _FLOAT_RE.fullmatch(value.strip()):
            return float(value.strip())
        self._fail(key, value, "a number")

    def get_bool(self, key: str, default: bool) -> bool:
        """A boolean: YAML ``true``/``false`` or a Go ``ParseBool`` string (``"true"``, ``"0"``...)."""
        value = self._get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            text = value.strip()
            if text in _TRUE_STRINGS:
                return True
            if text in _FALSE_STRINGS:
                return False
        self._fail(key, value, "true or false")

    def get_str(self, key: str, default: str) -> str:
        """A string; numbers and booleans are not converted (quote them in YAML)."""
        value = self._get(key)
        if value is None:
            return default
        if isinstance(value, str):
            return value
        self._fail(key, value, "a string")

    def get_duration_seconds(self, key: str, default: float | None) -> float | None:
        """A duration in seconds: a Go duration string (``"1m30s"``) or a number of seconds."""
        value = self._get(key)
        if value is None:
            return default
        expected = "a duration such as '1m30s', '500ms', '2h', or a number of seconds"
        if isinstance(value, bool):
            self._fail(key, value, expected)
        if isinstance(value, int):
            return float(value)
        if isinstance(value, float) and not math.isnan(value):
            return value
        if isinstance(value, str):
            text = value.strip()
            if _FLOAT_RE.fullmatch(text):
                return float(text)
            seconds = _parse_go_duration(text)
            if seconds is not None:
                return seconds
        self._fail(key, value, expected)

    def get_mapping(self, key: str) -> Mapping[str, Any] | None:
        """A nested mapping (read-only view), or ``None`` when absent or null."""
        value = self._get(key)
        if value is None:
            return None
        if isinstance(value, Mapping):
            return MappingProxyType(dict(value))
        self._fail(key, value, "a mapping")
