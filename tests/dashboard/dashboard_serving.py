"""Test helpers: the dashboard served on a free local port in a thread, and the system's
Chromium driven by Playwright (never a downloaded browser)."""

from __future__ import annotations

import os
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from pyvolcano.dashboard.server import create_app
from pyvolcano.dashboard.sources import Source
from waiting import wait_for


@contextmanager
def serving(source: Source, *, allow_actions: bool = False, debounce: float = 0.1) -> Iterator[str]:
    """The base URL of the dashboard serving ``source`` until the block ends."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(source, allow_actions=allow_actions, debounce=debounce),
                            log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_for(lambda: server.started, 10, "the dashboard to listen")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def chromium_path() -> str | None:
    """The Chromium to drive: ``$PYVOLCANO_CHROMIUM``, else ``chromium`` on the PATH."""
    return os.environ.get("PYVOLCANO_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
