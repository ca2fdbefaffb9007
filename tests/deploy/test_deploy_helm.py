"""The Helm chart under deploy/helm/pyvolcano: generated from the bundle builder, and rendering
to the same objects as ``pyvolcano install`` (but the Namespace, which Helm creates)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from helm_render import render, render_chart

from pyvolcano import __version__
from pyvolcano.deploy.bundle import build_bundle
from pyvolcano.deploy.helm import chart_files

CHART = Path(__file__).parents[2] / "deploy" / "helm" / "pyvolcano"


def _key(d: dict[str, Any]) -> tuple[str, str, str]:
    return (d["kind"], d["metadata"].get("namespace") or "", d["metadata"]["name"])


def _sorted(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(docs, key=_key)


def test_committed_chart_is_the_generated_one() -> None:
    files = chart_files()
    on_disk = {str(p.relative_to(CHART)): p.read_text(encoding="utf-8") for p in CHART.rglob("*") if p.is_file()}
    assert sorted(on_disk) == sorted(files), "regenerate: python -m pyvolcano.deploy.helm deploy/helm/pyvolcano"
    for rel, text in files.items():
        assert on_disk[rel] == text, f"{rel} is stale: python -m pyvolcano.deploy.helm deploy/helm/pyvolcano"


def test_chart_with_default_values_renders_the_bundle_without_its_namespace() -> None:
    rendered = render_chart(CHART, "volcano-system")
    bundle = [d for d in build_bundle(queues=True) if d["kind"] != "Namespace"]
    assert _sorted(rendered) == _sorted(bundle)


def test_chart_in_another_namespace_with_another_image_and_fake_nodes_renders_that_bundle() -> None:
    rendered = render_chart(CHART, "batch", {"image": "registry.example/pv:1", "fakeNodes.enabled": True})
    bundle = [d for d in build_bundle("batch", "registry.example/pv:1", fake_nodes=True, queues=True)
              if d["kind"] != "Namespace"]
    assert _sorted(rendered) == _sorted(bundle)


def test_chart_metadata_carries_the_package_version_and_default_image() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    assert (chart["apiVersion"], chart["name"], chart["version"], chart["appVersion"]) == (
        "v2", "pyvolcano", __version__, __version__)
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    assert values == {"image": f"pyvolcano:{__version__}", "fakeNodes": {"enabled": False}}


def test_crds_are_in_the_charts_crds_directory_so_helm_installs_them_before_the_queues() -> None:
    crds = [d for p in (CHART / "crds").glob("*.yaml") for d in yaml.safe_load_all(p.read_text()) if d]
    assert {d["kind"] for d in crds} == {"CustomResourceDefinition"}
    assert "{{" not in "".join(p.read_text() for p in (CHART / "crds").glob("*.yaml"))


def test_minimal_renderer_trims_like_go_templates_and_refuses_what_it_does_not_know() -> None:
    values = {"on": True, "off": False, "x": "v"}
    assert render("a: {{ .Values.x }}\n{{- if .Values.off }}\nb: 1\n{{- end }}\nc: 2\n", values, "ns") == \
        "a: v\nc: 2\n"
    assert render("{{- if .Values.on }}\nb: {{ .Release.Namespace }}\n{{- end }}\n", values, "ns") == "\nb: ns\n"
    with pytest.raises(ValueError, match="unsupported"):
        render("{{ include \"x\" . }}", values, "ns")
