"""Kubernetes resource quantities with the exact apimachinery grammar.

Grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go)::

    quantity  ::= <signedNumber><suffix>
    suffix    ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | "" | k | M | G | T | P | E
                | e<signedNumber> | E<signedNumber>

Values are parsed exactly (``fractions.Fraction``) and converted to integers the way
Kubernetes does: ``Value()`` and ``MilliValue()`` round *up* (towards +inf) to the next
integer. ``1G`` is 10**9 and ``1Gi`` is 2**30; ``1K`` is invalid (only lower-case ``k``).
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

__all__ = ["QuantityError", "format_quantity", "milli_value", "parse_quantity", "value"]

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
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"got {text!r}; expected a finite quantity")
        return Fraction(str(text))
    if not isinstance(text, str):
        raise QuantityError(f"got {type(text).__name__}; expected a quantity string such as '500m' or '4Gi'")
    return _parse_text(str(text))


@functools.lru_cache(maxsize=8192)
def _parse_text(text: str) -> Fraction:
    # Quantities repeat endlessly across pods and sessions; parsing is pure, so memoise it.
    s = text.strip()
    m = _QUANTITY_RE.match(s)
    if m is None:
        raise QuantityError(f"got {text!r}; expected a quantity such as '500m', '2', '1.5', '1G', '4Gi', '1e3'")
    num = Fraction(m.group("num"))
    suffix = m.group("suffix") or ""
    if suffix in _BINARY:
        return num * (1024 ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return num * (Fraction(10) ** _DECIMAL[suffix])
    # exponent form e<N> / E<N>
    exp = int(suffix[1:])
    if abs(exp) > 64:
        raise QuantityError(f"got {text!r}; exponent out of range")
    return num * (Fraction(10) ** exp)


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
