"""Numbers in text read the way Go's ``strconv`` reads them: ASCII only.

Python's ``int()`` and ``float()`` accept any Unicode decimal digit (``int("٣") == 3``),
underscores (``"1_000"``) and surrounding whitespace; Go's ``strconv.Atoi`` /
``ParseFloat`` and the Kubernetes decoders accept none of these. Every number pyvolcano reads
from text (annotations, trace columns, flags) goes through these helpers, so ``cpu: "٣"`` or a
trace cell of Arabic-Indic digits is an error instead of a silently accepted 3.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["parse_float", "parse_int"]

_INT_RE: Final = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT_RE: Final = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)",
                              re.ASCII | re.IGNORECASE)


def parse_int(text: str) -> int:
    """``strconv.Atoi``: an optional sign and ASCII digits, nothing else; ValueError otherwise."""
    if not isinstance(text, str) or not _INT_RE.fullmatch(text):
        raise ValueError(f"invalid integer {text!r}")
    return int(text)


def parse_float(text: str) -> float:
    """``strconv.ParseFloat`` for decimal text: ASCII digits, optional fraction and exponent (and
    ``inf`` / ``nan``, which callers reject as they see fit); ValueError otherwise."""
    if not isinstance(text, str) or not _FLOAT_RE.fullmatch(text):
        raise ValueError(f"invalid number {text!r}")
    return float(text)
