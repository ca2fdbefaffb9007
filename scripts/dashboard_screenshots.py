"""Make the dashboard screenshots of docs/dashboard.md: ``docs/img/dashboard-*.png``.

    python scripts/dashboard_screenshots.py [--report DIR] [--out docs/img]

Queues, Jobs, Nodes and Timeline show the built-in scenario (``pyvolcano simulate --report``,
run here unless ``--report`` names one already written) at a busy instant of the run; the job
page shows ``team/too-big`` of ``examples/cluster.yaml`` with its ``job why`` diagnosis. The
browser is the system's Chromium (``$PYVOLCANO_CHROMIUM`` or ``chromium`` on the PATH), driven
by Playwright (the ``dev`` extra).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pyvolcano.dashboard.run_views import ReportSource
from pyvolcano.dashboard.server import serving_in_thread
from pyvolcano.dashboard.sources import SnapshotSource
from pyvolcano.runtime.registry import default_registry

ROOT = Path(__file__).resolve().parents[1]
BUSY_FRACTION = 0.25  # of the run: the queues compete, jobs wait


def _render(page: Any, url: str, view: str) -> None:
    page.goto(f"{url}/#/{view}")
    page.wait_for_selector(f'body[data-view="{view.split("/")[0]}"]', state="attached")


def _slide(page: Any, t: float) -> None:
    before = page.evaluate("() => document.body.dataset.rendered")
    page.evaluate("(t) => { const s = document.getElementById('time'); s.value = String(t); "
                  "s.dispatchEvent(new Event('change')); }", t)
    page.wait_for_selector(f'body:not([data-rendered="{before}"])', state="attached")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", type=Path, help="a report directory of the built-in scenario")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args()
    chromium = os.environ.get("PYVOLCANO_CHROMIUM") or shutil.which("chromium")
    if chromium is None:
        print("error: no Chromium: install Debian's chromium or set PYVOLCANO_CHROMIUM", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        report = args.report
        if report is None:
            report = Path(tmp) / "report"  # the header shows the directory's name: "report"
            subprocess.run([sys.executable, "-m", "pyvolcano", "simulate", "--report", str(report), "-o", "json"],
                           check=True, stdout=subprocess.DEVNULL)
        args.out.mkdir(parents=True, exist_ok=True)
        run = ReportSource(report)
        os.chdir(ROOT)  # the header names the snapshot as given: a path inside the repository
        snapshot = SnapshotSource("examples/cluster.yaml", default_registry())
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 820})
            with serving_in_thread(run) as url:
                _render(page, url, "timeline")
                _slide(page, round(run.end * BUSY_FRACTION))
                for view in ("timeline", "queues", "jobs", "nodes"):
                    _render(page, url, view)
                    page.screenshot(path=str(args.out / f"dashboard-{view}.png"))
            with serving_in_thread(snapshot) as url:
                _render(page, url, "job/team/too-big")
                page.screenshot(path=str(args.out / "dashboard-job.png"), full_page=True)
            browser.close()
    for view in ("queues", "jobs", "job", "nodes", "timeline"):
        print(args.out / f"dashboard-{view}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
