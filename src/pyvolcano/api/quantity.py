"""Kubernetes resource quantities with the exact apimachinery grammar.

Grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go)::

    quantity  ::= <signedNumber><suffix>
    suffix    ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | "" | k | M | G | T | P | E
                | e<signedNumber> | E<signedNumber>

Values are parsed exactly (``fractions.Fraction``) and converted to integers the way
Kubernetes does: ``Value()`` and ``MilliValue()`` round *up* (towards +inf) to the next
integer. ``1G`` is 10**9 and ``1Gi`` is 2**30; ``1K`` is invalid (only lower-case ``k``).

Kubernetes documents that no quantity may be larger than 2^63-1 in magnitude and caps larger
ones; we refuse them (:data:`MAX_QUANTITY`) so that a typo of thirty nines is an error, not a
node with a capacity no float can hold.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

__all__ = ["MAX_QUANTITY", "QuantityError", "format_quantity", "milli_value", "parse_quantity", "value"]

MAX_QUANTITY = 2**63 - 1
_MAX_DIGITS = 64  # a number part longer than this cannot be a quantity within MAX_QUANTITY

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

_QUANTITY_RE = re.compile(
    r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$",
    re.ASCII,  # Python's \d (and Fraction) would accept any Unicode digit: "٣" is not a quantity
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Fraction:
    """Parse a quantity exactly. Integers are accepted as plain numbers (YAML ``cpu: 2``)."""
    if type(text) is str:
        return _parse_text(text)
    if isinstance(text, bool):
        raise QuantityError(f"got {text!r}; expected a quantity such as '500m', '2', '4Gi'")
    if isinstance(text, int):
        return _bounded(Fraction(text), text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"got {text!r}; expected a finite quantity")
        return _bounded(Fraction(str(text)), text)
    if not isinstance(text, str):
        raise QuantityError(f"got {type(text).__name__}; expected a quantity string such as '500m' or '4Gi'")
    return _parse_text(str(text))


@functools.lru_cache(maxsize=8192)
def _parse_text(text: str) -> Fraction:
    # Quantities repeat endlessly across pods and sessions; parsing is pure, so memoise it.
    s = text.strip()
    m = _QUANTITY_RE.match(s)
    if m is None:
        raise QuantityError(f"got {_short(text)}; expected a quantity such as '500m', '2', '1.5', '1G', '4Gi', '1e3'")
    if len(m.group("num")) > _MAX_DIGITS:
        raise QuantityError(f"got {_short(text)}; expected a quantity of at most {_MAX_DIGITS} digits")
    num = Fraction(m.group("num"))
    suffix = m.group("suffix") or ""
    if suffix in _BINARY:
        return _bounded(num * (1024 ** _BINARY[suffix]), text)
    if suffix in _DECIMAL:
        return _bounded(num * (Fraction(10) ** _DECIMAL[suffix]), text)
    # exponent form e<N> / E<N>
    if len(suffix) > 6 or abs(exp := int(suffix[1:])) > 64:
        raise QuantityError(f"got {_short(text)}; exponent out of range")
    return _bounded(num * (Fraction(10) ** exp), text)


def _bounded(amount: Fraction, text: str | int | float) -> Fraction:
    if abs(amount) > MAX_QUANTITY:
        raise QuantityError(f"got {_short(text)}; expected a quantity of at most 2^63-1 (Kubernetes' limit)")
    return amount


def _short(text: str | int | float) -> str:
    if isinstance(text, int) and text.bit_length() > 256:
        return "an integer of more than 77 digits"  # repr of a very long int is slow or refused
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def value(text: str | int | float) -> int:
    """``Quantity.Value()``: the value rounded up to an integer."""
    if type(text) is str:
        return _value_text(text)
    return math.ceil(parse_quantity(text))


def milli_value(text: str | int | float) -> int:
    """``Quantity.MilliValue()``: value × 1000 rounded up to an integer."""
    if type(text) is str:
        return _milli_text(text)
    return math.ceil(parse_quantity(text) * 1000)


@functools.lru_cache(maxsize=8192)
def _value_text(text: str) -> int:
    return math.ceil(_parse_text(text))


@functools.lru_cache(maxsize=8192)
def _milli_text(text: str) -> int:
    return math.ceil(_parse_text(text) * 1000)


def format_quantity(amount: float, *, milli: bool = False, binary: bool = False) -> str:
    """Format an amount for people (``1500m``, ``4Gi``, ``2``). Not used for parsing round trips."""
    if milli:
        v = round(amount)
        if v % 1000 == 0:
            return str(v // 1000)
        return f"{v}m"
    v = round(amount)
    if binary:
        for suffix, power in (("Ei", 6), ("Pi", 5), ("Ti", 4), ("Gi", 3), ("Mi", 2), ("Ki", 1)):
            unit = 1024**power
            if v and v % unit == 0:
                return f"{v // unit}{suffix}"
    return str(v)
