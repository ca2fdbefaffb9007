"""``pyvolcano simulate``: jobs that never started say why (their last session's diagnosis)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "simulate" / "cluster.yaml"
WORKLOAD = ROOT / "tests" / "data" / "diagnosis" / "never-starts.yaml"


def simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyvolcano", "simulate", "--cluster", str(CLUSTER), "--workload",
                           str(WORKLOAD), "--until", "10m", *args], capture_output=True, text=True, check=False)


def test_a_job_that_never_started_says_why_in_json_table_and_report(tmp_path: Path) -> None:
    proc = simulate("-o", "json", "--report", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    why = out["jobs"]["default/huge"]["why"]
    assert why["stage"] == "queue-capability"
    assert why["reason"] == "Queue.OverCapability"
    assert figure_shortfall(why, "nvidia.com/gpu") == 4.0
    assert out["jobs"]["default/small"]["why"] is None
    assert out["summary"]["never_started_reasons"] == {"Queue.OverCapability": 1}
    listed = next(u for u in out["unfinished"] if u["job"] == "default/huge")
    assert listed["pending_reason"] == "Queue.OverCapability"
    assert listed["pending_hint"] == why["hint"]
    rows = {r["key"]: r for r in csv.DictReader((tmp_path / "jobs.csv").open())}
    assert rows["default/huge"]["pending_reason"] == "Queue.OverCapability"
    assert rows["default/small"]["pending_reason"] == ""
    html = (tmp_path / "report.html").read_text()
    assert "Why jobs never started" in html and "Queue.OverCapability" in html
    table = simulate("-o", "table").stdout
    line = next(x for x in table.splitlines() if x.strip().startswith("default/huge") and "Queue." in x)
    assert "minResources ask 12 nvidia.com/gpu" in line


def figure_shortfall(why: dict[str, object], name: str) -> float:
    resources = why["resources"]
    assert isinstance(resources, list)
    return float(next(r for r in resources if r["name"] == name)["shortfall"])
