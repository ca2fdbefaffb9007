"""The single exception type raised for malformed selectors, terms, tolerations, taints and
topology spread constraints.

Invariant: the message always starts with the dotted/indexed field path of the offending
value (``spec.affinity.nodeAffinity...matchExpressions[0].operator: got 'Foo'; expected one of
...``) so that callers such as the manifest loader can surface it verbatim.
"""

from __future__ import annotations

__all__ = ["SelectorError", "fail", "show"]


class SelectorError(ValueError):
    """A malformed selector / affinity term / toleration / taint / spread constraint."""


def show(value: object) -> str:
    """Short repr of a user value for error messages."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return text


def fail(path: str, message: str) -> SelectorError:
    """Build (not raise) a :class:`SelectorError` for ``path``."""
    return SelectorError(f"{path}: {message}")
