"""Building a large, long-lived state without the cyclic garbage collector walking it.

Loading a 50,000-pod snapshot allocates millions of containers (the parsed documents, the
typed objects, the cache's jobs, tasks and nodes) that all stay alive. CPython runs a full
collection whenever the long-lived objects have grown by a quarter, so building such a state
walks it several times over (about a second of a 50,000-pod ``pyvolcano schedule``) and finds
no garbage. :func:`bulk_build` turns the collector off for the block and, when the block
completes, moves everything alive into the permanent generation (``gc.freeze``), so that the
collections the session's own allocations trigger do not walk the snapshot either;
:func:`collector_paused` is the pause alone.

Invariants: reference counting still frees every object that is not part of a cycle, inside
the block and after it; the collector's on/off state after the block is what it was before,
also when the block raises. Frozen objects are never collected as cyclic garbage, so this is
for state that lives as long as the command that built it: a command wraps its whole run in
:func:`frozen_scope`, which makes them collectable again when it ends (a command run
in-process, as tests do, leaves nothing frozen behind).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["bulk_build", "collector_paused", "frozen_scope"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Collector off while the block builds many acyclic objects (nothing is frozen: for state
    that does not live as long as the command, such as a trace's documents)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def bulk_build() -> Iterator[None]:
    """Collector off while the block builds; what it built is frozen when it completes."""
    with collector_paused():
        yield
        gc.freeze()


@contextmanager
def frozen_scope() -> Iterator[None]:
    """What :func:`bulk_build` froze inside the block is collectable again after it."""
    try:
        yield
    finally:
        gc.unfreeze()
