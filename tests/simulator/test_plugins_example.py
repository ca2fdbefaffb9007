"""examples/plugins/ in `pyvolcano simulate` (docs/plugins.md): a namespace quota serialises two
jobs, a queue keeps to its node groups, a disruption budget holds a preemptor off."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_plugins_example_runs_as_the_docs_say() -> None:
    proc = subprocess.run([sys.executable, "-m", "pyvolcano", "simulate", "--cluster",
                           str(EXAMPLES / "plugins" / "cluster.yaml"), "--workload",
                           str(EXAMPLES / "plugins" / "jobs.yaml"), "--config", str(EXAMPLES / "plugins.conf"),
                           "-o", "json"], capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    jobs = json.loads(proc.stdout)["jobs"]
    assert {k: v["phase"] for k, v in jobs.items()} == dict.fromkeys(
        ("default/urgent", "default/web", "team/train-a", "team/train-b"), "Completed")
    assert (jobs["team/train-a"]["started"], jobs["team/train-a"]["finished"]) == (1.0, 61.0)
    assert jobs["team/train-b"]["started"] == 62.0  # the quota held it Pending until train-a ended
    assert (jobs["default/web"]["finished"], jobs["default/urgent"]["started"]) == (301.0, 301.0)
