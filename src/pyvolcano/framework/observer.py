"""An optional observer of a session's phases, for metrics (upstream's calls into ``pkg/scheduler/metrics``).

The core reads no clock: an observer brings its own ``timer`` (monotonic seconds, e.g.
``time.perf_counter``) and the framework only calls it around each plugin's
``OnSessionOpen`` / ``OnSessionClose``, around opening the session and around each action,
then reports the elapsed seconds; a committed statement that evicts reports its victims.
``session_closing`` hands the session over once, after the last action and before close
undoes what was not committed, so an observer can read the state upstream's plugins export
at that point (queue shares, unschedulable gangs).

Without an observer (``None``, the default everywhere) nothing is timed and nothing is called.
An observer must not change the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ON_SESSION_CLOSE", "ON_SESSION_OPEN", "SessionObserver"]

ON_SESSION_OPEN: Final = "OnSessionOpen"
ON_SESSION_CLOSE: Final = "OnSessionClose"


class SessionObserver(Protocol):
    def timer(self) -> float:
        """Monotonic seconds; only differences are used."""
        ...

    def session_opened(self, seconds: float) -> None:
        """Opening the session took ``seconds`` (state set-up plus every plugin's OnSessionOpen)."""
        ...

    def plugin_done(self, plugin: str, on_session: str, seconds: float) -> None:
        """``plugin``'s ``on_session`` hook (:data:`ON_SESSION_OPEN` / :data:`ON_SESSION_CLOSE`) took ``seconds``."""
        ...

    def action_done(self, action: str, seconds: float) -> None:
        """Action ``action`` took ``seconds``."""
        ...

    def evictions_committed(self, reason: str, victims: int) -> None:
        """A statement committed ``victims`` evictions; ``reason`` is the evicting action's name."""
        ...

    def session_closing(self, ssn: Session) -> None:
        """All actions have run; the session is about to close."""
        ...
