"""The console scripts: vcctl and the kubectl plugin kubectl-vc, usage errors, version."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_both_console_scripts_are_declared():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["vcctl"] == "pyvolcano.vcctl.app:main"
    assert scripts["kubectl-vc"] == "pyvolcano.vcctl.app:kubectl_plugin_main"


def test_version_prints_upstreams_lines(vc):
    code, out, _ = vc("version")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "API Version: v1alpha1" and lines[1].startswith("Version: ")


def test_usage_mistakes_are_one_line_and_exit_2(vc):
    code, out, err = vc("job", "list", "--bogus")
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: No such option: --bogus")
    code, _, err = vc("job", "list", "-q", "a", "-q", "b")
    assert code == 2 and "given 2 times" in err
    code, _, err = vc("job", "list", "--cluster", "x.yaml", "--kubeconfig", "k")
    assert code == 2 and "cannot be combined" in err


def test_an_unreadable_kubeconfig_is_a_usage_error(tmp_path, capsys):
    from pyvolcano.vcctl.app import run

    assert run(["queue", "list", "--kubeconfig", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: kubeconfig:") and err.count("\n") == 1


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")
def test_kubectl_finds_the_plugin_on_path(tmp_path):
    shim = tmp_path / "kubectl-vc"
    shim.write_text(f"#!{sys.executable}\nfrom pyvolcano.vcctl.app import kubectl_plugin_main\n"
                    "kubectl_plugin_main()\n")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(["kubectl", "vc", "version"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("API Version: v1alpha1\n")
    bad = subprocess.run(["kubectl", "vc", "job", "view"], capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and "mandatory" in bad.stderr


VIEWS = [("job", "list"), ("job", "list", "-A"), ("job", "view", "train"), ("queue", "list"),
         ("queue", "get", "research"), ("pod", "list", "-A"), ("pod", "list", "-q", "research")]


def _names(fmt: str, out: str) -> list[str]:
    import json

    import yaml

    doc = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    return [o["metadata"]["name"] for o in doc.get("items", [doc])]


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: " ".join(v))
@pytest.mark.parametrize("fmt", ["table", "wide", "name", "json", "yaml"])
def test_every_view_and_format_reads_the_same_live_and_from_a_snapshot(vc, snapshot, view, fmt):
    args = [*view] if fmt == "table" else [*view, "-o", fmt]
    code, live, err = vc(*args)
    assert code == 0 and err == "" and live
    code, offline, err = vc(*args, "--cluster", str(snapshot))
    assert code == 0 and err == ""
    if fmt in ("json", "yaml"):
        assert _names(fmt, offline) == _names(fmt, live)
    elif view[:2] == ("job", "view") and fmt != "name":  # the live object has a uid and a resourceVersion
        assert offline.split("Metadata:")[0] == live.split("Metadata:")[0]
        assert offline.split("Spec:")[1] == live.split("Spec:")[1]
    else:
        assert offline == live
