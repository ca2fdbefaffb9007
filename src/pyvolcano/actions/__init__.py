"""Built-in scheduler actions, by upstream name (module exposes ``new(arguments) -> Action``)."""

from __future__ import annotations

BUILTIN_ACTIONS: dict[str, str] = {
    "enqueue": "pyvolcano.actions.enqueue",
    "allocate": "pyvolcano.actions.allocate",
    "backfill": "pyvolcano.actions.backfill",
    "preempt": "pyvolcano.actions.preempt",
    "reclaim": "pyvolcano.actions.reclaim",
    "shuffle": "pyvolcano.actions.shuffle",
    "gangpreempt": "pyvolcano.actions.gangpreempt",
    "gangreclaim": "pyvolcano.actions.gangreclaim",
}

__all__ = ["BUILTIN_ACTIONS"]
