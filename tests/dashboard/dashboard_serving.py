"""Test helpers: the dashboard served in a thread (:func:`pyvolcano.dashboard.server.serving_in_thread`)
with a short debounce, and where the system's Chromium is (never a downloaded browser)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from pyvolcano.dashboard.server import serving_in_thread
from pyvolcano.dashboard.sources import Source


@contextmanager
def serving(source: Source, *, allow_actions: bool = False) -> Iterator[str]:
    """The base URL of the dashboard serving ``source`` until the block ends."""
    with serving_in_thread(source, allow_actions=allow_actions, debounce=0.1) as url:
        yield url


def chromium_path() -> str | None:
    """The Chromium to drive: ``$PYVOLCANO_CHROMIUM``, else ``chromium`` on the PATH."""
    return os.environ.get("PYVOLCANO_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
