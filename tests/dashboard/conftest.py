"""Fixtures of the dashboard tests: one headless Chromium per module for the browser tests,
skipped with the reason where no browser or no Playwright is installed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from dashboard_serving import chromium_path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium: install Debian's chromium (.ci/run does as root) or set PYVOLCANO_CHROMIUM")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page that fails the test on a script error or an alert (a confirmation is accepted)."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    confirmations: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))

    def on_dialog(dialog: Any) -> None:  # confirmations are accepted; any other dialog is a failure
        if dialog.type == "confirm":
            confirmations.append(dialog.message)
            dialog.accept()
        else:
            errors.append(f"{dialog.type}: {dialog.message}")
            dialog.dismiss()

    pg.on("dialog", on_dialog)
    pg.confirmations = confirmations
    yield pg
    context.close()
    assert not errors, errors
