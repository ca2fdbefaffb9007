"""Test helpers for code that runs in other threads or processes: poll until a condition
holds, and a free local TCP port."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

__all__ = ["free_port", "wait_for"]


def wait_for(cond: Callable[[], Any], timeout: float = 5.0, what: str = "the condition", *,
             interval: float = 0.01) -> Any:
    """The first truthy value of ``cond()``, polled every ``interval`` seconds; AssertionError
    naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
