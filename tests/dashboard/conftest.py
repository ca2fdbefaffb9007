"""Fixtures of the dashboard tests: one simulation run for the session, and one headless
Chromium per module for the browser tests, skipped with the reason where no browser or no
Playwright is installed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dashboard_serving import chromium_path
from typer.testing import CliRunner

from pyvolcano.cli.app import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulate"


@pytest.fixture(scope="session")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """``simulate --report DIR -o json`` of examples/simulate (five jobs on 4 CPU and 2 GPU
    nodes): the report directory and the printed document."""
    out = tmp_path_factory.mktemp("run") / "report"
    result = CliRunner().invoke(app, ["simulate", "--cluster", str(EXAMPLES / "cluster.yaml"), "--workload",
                                      str(EXAMPLES / "jobs.yaml"), "--report", str(out), "-o", "json"])
    assert result.exit_code == 0, result.output
    return out, json.loads(result.stdout)


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
