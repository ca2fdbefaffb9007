"""Protocols and small value types shared by the framework, actions and plugins."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pyvolcano.api.task import TaskInfo
    from pyvolcano.framework.session import Session

__all__ = ["Action", "EventHandler", "Plugin", "PluginFactory", "Vote"]


class Vote(enum.IntEnum):
    """A plugin's answer to a voting extension point (upstream util.Permit/Abstain/Reject)."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


class Plugin(Protocol):
    name: str

    def on_session_open(self, ssn: Session) -> None: ...

    def on_session_close(self, ssn: Session) -> None: ...


PluginFactory = Callable[[Mapping[str, Any]], Plugin]


class Action(Protocol):
    name: str

    def execute(self, ssn: Session) -> None: ...


@dataclass(slots=True)
class Event:
    task: TaskInfo
    err: str | None = None


@dataclass(slots=True)
class EventHandler:
    allocate: Callable[[Event], None] | None = None
    deallocate: Callable[[Event], None] | None = None
