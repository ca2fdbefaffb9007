"""Test helpers: the dashboard served in a thread (:func:`pyvolcano.dashboard.server.serving_in_thread`)
with a short debounce, and where the system's Chromium is (never a downloaded browser)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from pyvolcano.dashboard.security import TOKEN_HEADER
from pyvolcano.dashboard.server import serving_in_thread
from pyvolcano.dashboard.sources import Source

TOKEN = "the-test-action-token"
"""The action token the served dashboard hands its page (tests post with it as the page does)."""


@contextmanager
def serving(source: Source, *, allow_actions: bool = False) -> Iterator[str]:
    """The base URL of the dashboard serving ``source`` until the block ends."""
    with serving_in_thread(source, allow_actions=allow_actions, debounce=0.1, token=TOKEN) as url:
        yield url


def page_headers(url: str) -> dict[str, str]:
    """The headers an action posted by the dashboard's own page at ``url`` carries."""
    return {"Origin": url, TOKEN_HEADER: TOKEN}


def chromium_path() -> str | None:
    """The Chromium to drive: ``$PYVOLCANO_CHROMIUM``, else ``chromium`` on the PATH."""
    return os.environ.get("PYVOLCANO_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
