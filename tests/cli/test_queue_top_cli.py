"""``pyvolcano queue top``: offline on a snapshot file, every output format and its errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CASE = str(ROOT / "tests" / "data" / "forecast" / "queue-top.yaml")
DATA_JOB = ROOT / "tests" / "data" / "forecast" / "job-big.yaml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyvolcano", "queue", "top", *args], capture_output=True, text=True,
                          check=False)


def test_queue_top_table_lists_jobs_in_scheduling_order_with_reason_and_estimate() -> None:
    proc = run("--cluster", CASE, "--default-runtime", "idle=2m", "--default-runtime", "1m", "-o", "table")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "NOW  2024-01-01T00:15:00Z"
    assert lines[2].split() == ["POS", "QUEUE", "#", "JOB", "PHASE", "REASON", "ESTIMATED", "START"]
    assert lines[3].split() == ["1", "idle", "1", "ns/other", "Inqueue", "-", "2024-01-01T00:15:00Z", "(now)"]
    assert lines[4].split() == ["2", "busy", "1", "ns/urgent", "Inqueue", "Preemption.NotAllowed",
                                "2024-01-01T00:17:00Z", "(in", "2m)"]
    assert lines[5].split() == ["3", "busy", "2", "ns/early", "Inqueue", "Queue.OverDeserved",
                                "2024-01-01T00:17:30Z", "(in", "2m30s)"]
    assert "ns/r         busy   1     duration      in 2m30s" in proc.stdout


def test_queue_top_json_and_yaml_carry_the_same_document() -> None:
    as_json = json.loads(run("--cluster", CASE, "busy", "-o", "json").stdout)
    as_yaml = yaml.safe_load(run("--cluster", CASE, "busy", "-o", "yaml").stdout)
    assert as_json == as_yaml
    assert [e["job"] for e in as_json["pending"]] == ["ns/urgent", "ns/early"]
    # Without a default runtime: urgent takes r-0's cpus when it ends; early waits on other and
    # urgent, which start before it and declare no runtime.
    assert as_json["pending"][0]["start_in_seconds"] == 150.0
    assert as_json["pending"][1]["start"] is None
    assert as_json["pending"][1]["unknown_pods"] == 2
    assert as_json["pending"][1]["message"] == "unknown: depends on runtimes of 2 pods starting before it without a " \
        "duration"


def test_queue_top_refuses_bad_input_with_one_line_and_exit_2() -> None:
    for args, text in [
        (["--cluster", CASE, "--default-runtime", "busy=soon"], "--default-runtime 'busy=soon': got 'soon'"),
        (["--cluster", CASE, "--kubeconfig", "kc"], "give --cluster FILE (a snapshot) or a live cluster"),
        (["--cluster", CASE, "nosuch"], "no Queue nosuch"),
        (["--cluster", CASE, "--now", "yesterday"], "--now: got 'yesterday'"),
        (["--cluster", CASE, "--horizon", "-1s"], "--horizon:"),
        (["--cluster", str(ROOT / "tests" / "data" / "missing.yaml")], "missing.yaml"),
    ]:
        proc = run(*args, "-o", "json")
        assert proc.returncode == 2, (args, proc.stderr)
        assert text in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_queue_top_and_dry_run_read_a_live_cluster_through_kubeconfig(monkeypatch: Any, capsys: Any) -> None:
    import pyvolcano.kube
    from kube.fakeapi import FakeApiServer
    from pyvolcano.cli.job_run import read_job_file, run_dry
    from pyvolcano.cli.queue import run_top
    from pyvolcano.kube.store import KubeStore
    from pyvolcano.store.memory import InMemoryStore

    api = FakeApiServer(InMemoryStore(clock=lambda: 800.0))
    for d in yaml.safe_load_all(Path(CASE).read_text()):
        api.store.create(d)
    seen: list[dict[str, Any]] = []

    def connect(**kwargs: Any) -> KubeStore:
        seen.append(kwargs)
        return KubeStore(api.client(), kwargs["kinds"]).start()

    monkeypatch.setattr(pyvolcano.kube, "connect", connect)
    common: dict[str, Any] = {"cluster": None, "kubeconfig": "kc", "context": "ctx", "config_path": None,
                              "default_runtime": ["1m"], "horizon": "720h", "now": "2024-01-01T00:15:00Z",
                              "seed": 0, "timeout": 5.0}
    assert run_top(None, output="json", **common) == 0
    top = json.loads(capsys.readouterr().out)
    assert [e["job"] for e in top["pending"]] == ["ns/other", "ns/urgent", "ns/early"]
    assert run_dry(str(DATA_JOB), dry_run=True, output="json", **common) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["admission"]["allowed"] and dry["placed_now"] is False
    assert read_job_file(str(DATA_JOB))[0]["kind"] == "Job"
    assert [s["context"] for s in seen] == ["ctx", "ctx"]
    assert [r for r in api.requests if r[0] != "GET"] == []
