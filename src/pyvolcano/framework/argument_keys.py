"""The argument keys a plugin or action takes, each honoured, ignored or refused.

Upstream reads its plugin and action arguments from a plain map and never looks at a key it
does not know, so a typo (``binpack.wieght``) or a key pyvolcano does not implement
(``predicate.VolumeBindingEnable``) would be silently without effect. Here every plugin and
action module declares the keys it takes, next to where it reads them, as a module-level
``ARGUMENTS`` table (:class:`ArgumentKeys`); the registry finds it beside the module's ``new``.
A key is one of:

* **honoured** (:func:`honoured`): pyvolcano does what upstream does with it. A key that only
  tunes how fast upstream decides (a worker count, a cache switch) is honoured when the
  decisions are the same either way; its ``note`` says so for the documentation;
* **ignored** (:func:`ignored`): accepted with a warning: it has no effect here, and ignoring it
  changes no placement (the reason says why);
* **refused** (:func:`refused`): an error: pyvolcano cannot do what it asks; ``remedy`` says what
  to do. ``accepts`` names the values that ask for nothing pyvolcano lacks (a feature switch set
  to false), which are then taken silently.

A key ending in ``.`` with ``prefix=True`` stands for every key that starts with it
(``binpack.resources.<name>``); the longest matching prefix wins, an exact key before any prefix.
:meth:`ArgumentKeys.check` sorts the keys of one ``arguments`` mapping into findings;
:class:`~pyvolcano.framework.arguments.Arguments` raises the first error of them when it is built
with a table, and reading a key the table does not honour is a programming error. An unknown key
is an error that suggests the closest declared key (``difflib``).

Invariants: a table never changes after it is built; checking has no side effects.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "ArgumentKey",
    "ArgumentKeys",
    "KeyFinding",
    "KeyStatus",
    "honoured",
    "ignored",
    "is_empty",
    "is_false",
    "refused",
]

_GO_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class KeyStatus(enum.Enum):
    HONOURED = "honoured"
    IGNORED = "ignored"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class ArgumentKey:
    """One declared key (or key prefix) and what pyvolcano does with it."""

    name: str
    status: KeyStatus = KeyStatus.HONOURED
    prefix: bool = False
    reason: str = ""
    remedy: str = ""
    accepts: Callable[[Any], bool] | None = None
    note: str = ""

    @property
    def shown(self) -> str:
        """The key as documentation and messages show it: ``binpack.resources.<name>``."""
        return f"{self.name}<name>" if self.prefix else self.name

    def takes(self, value: Any) -> bool:
        """Whether ``value`` asks for nothing pyvolcano lacks (always so for an honoured key)."""
        return self.status is KeyStatus.HONOURED or (self.accepts is not None and self.accepts(value))


def honoured(name: str, *, prefix: bool = False, note: str = "") -> ArgumentKey:
    return ArgumentKey(name, KeyStatus.HONOURED, prefix=prefix, note=note)


def ignored(name: str, reason: str, *, prefix: bool = False, accepts: Callable[[Any], bool] | None = None
            ) -> ArgumentKey:
    return ArgumentKey(name, KeyStatus.IGNORED, prefix=prefix, reason=reason, accepts=accepts)


def refused(name: str, reason: str, remedy: str = "the key removed", *, prefix: bool = False,
            accepts: Callable[[Any], bool] | None = None) -> ArgumentKey:
    return ArgumentKey(name, KeyStatus.REFUSED, prefix=prefix, reason=reason, remedy=remedy, accepts=accepts)


def is_false(value: Any) -> bool:
    """YAML ``false`` or a Go ``strconv.ParseBool`` false string: a feature switched off."""
    return value is False or (isinstance(value, str) and value.strip() in _GO_FALSE)


def is_empty(value: Any) -> bool:
    """``null`` or an empty list, mapping or string: nothing asked for."""
    return value is None or (isinstance(value, list | dict | str) and not value)


@dataclass(frozen=True, slots=True)
class KeyFinding:
    """What one key of an ``arguments`` mapping is: its declaration (``None``: unknown) and, for
    an error or a warning, the message parts (``problem`` names the owner and the key)."""

    key: str
    declared: ArgumentKey | None
    problem: str = ""
    expected: str = ""

    @property
    def is_error(self) -> bool:
        return self.declared is None or self.declared.status is KeyStatus.REFUSED

    @property
    def is_warning(self) -> bool:
        return self.declared is not None and self.declared.status is KeyStatus.IGNORED


class ArgumentKeys:
    """The declared keys of one plugin or action (``owner``: ``"plugin binpack"``)."""

    __slots__ = ("_exact", "_prefixes", "keys", "owner")

    def __init__(self, owner: str, keys: Iterable[ArgumentKey] = ()) -> None:
        self.owner = owner
        self.keys: tuple[ArgumentKey, ...] = tuple(keys)
        self._exact = {k.name: k for k in self.keys if not k.prefix}
        # Longest first, so that the most specific prefix wins.
        self._prefixes = sorted((k for k in self.keys if k.prefix), key=lambda k: -len(k.name))
        if len(self._exact) + len(self._prefixes) != len(self.keys):
            raise ValueError(f"{owner}: a key is declared twice")

    def __repr__(self) -> str:
        return f"ArgumentKeys({self.owner!r}, {[k.shown for k in self.keys]!r})"

    def lookup(self, key: str) -> ArgumentKey | None:
        """The declaration of ``key``: the exact key, else the longest prefix it starts with."""
        found = self._exact.get(key)
        if found is not None:
            return found
        for entry in self._prefixes:
            if key.startswith(entry.name) and len(key) > len(entry.name):
                return entry
        return None

    def honours(self, key: str) -> bool:
        entry = self.lookup(key)
        return entry is not None and entry.status is KeyStatus.HONOURED

    def shown(self) -> str:
        return ", ".join(k.shown for k in self.keys)

    def closest(self, key: str) -> str | None:
        """The declared key most like ``key`` (a prefix completed with ``key``'s tail), or None."""
        candidates: dict[str, str] = {k.name: k.name for k in self._exact.values()}
        for entry in self._prefixes:
            # "binpack.resource.nvidia.com/gpu" against "binpack.resources.": keep the part after
            # as many dots as the prefix has, and offer "binpack.resources.nvidia.com/gpu".
            parts = key.split(".", entry.name.count("."))
            completed = entry.name + parts[-1] if len(parts) == entry.name.count(".") + 1 and parts[-1] else ""
            candidates[completed or entry.name] = completed or entry.shown
        close = difflib.get_close_matches(key, list(candidates), n=1)
        return candidates[close[0]] if close else None

    def check(self, arguments: Mapping[str, Any] | None) -> list[KeyFinding]:
        """One finding per key of ``arguments`` that is unknown, refused or ignored, in order."""
        out: list[KeyFinding] = []
        for key, value in (arguments or {}).items():
            entry = self.lookup(key)
            if entry is None:
                out.append(self._unknown(key))
            elif entry.status is KeyStatus.REFUSED and not entry.takes(value):
                out.append(KeyFinding(
                    key, entry, f"{self.owner}: {key} is not implemented in pyvolcano yet ({entry.reason})",
                    entry.remedy))
            elif entry.status is KeyStatus.IGNORED and not entry.takes(value):
                out.append(KeyFinding(key, entry, f"{self.owner}: {key} is accepted without effect ({entry.reason})"))
        return out

    def _unknown(self, key: str) -> KeyFinding:
        if not self.keys:
            return KeyFinding(key, None, f"{self.owner} takes no arguments", "no 'arguments' for it")
        close = self.closest(key)
        hint = f" (did you mean {close!r}?)" if close else ""
        return KeyFinding(key, None, f"{self.owner} has no argument {key}", f"one of {self.shown()}{hint}")
