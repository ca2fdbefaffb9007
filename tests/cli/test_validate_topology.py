"""``pyvolcano validate`` on network-topology objects: HyperNodes, and the Jobs of upstream's
network-topology user guide."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyvolcano.cli.validate import run_validate

DATA = Path(__file__).parents[1] / "data"

HYPERNODE = """apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: s0}
spec:
  tier: 1
  members:"""


def run(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, list[str]]:
    code = run_validate(list(paths))
    return code, capsys.readouterr().out.splitlines()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hn.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_user_guide_jobs_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, DATA / "network_topology_user_guide.yaml") == (0, [
        "OK Job default/network-topology-job",
        "OK Job default/network-topology-partitioned-job",
    ])


def test_conformance_hypernodes_and_podgroups_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    # The exit code is 2: the conversion's Pods have no image, which the API server requires.
    case = DATA / "conformance_topology" / "allocate-subgroup-min-subgroups-not-satisfied"
    code, lines = run(capsys, case / "cluster.yaml")
    assert code == 2 and all("Pod c1/" in line for line in lines if not line.startswith("OK "))
    assert [line for line in lines if "HyperNode" in line or "PodGroup" in line] == [
        "OK HyperNode s0", "OK HyperNode s1", "OK HyperNode s2", "OK PodGroup c1/pg1",
    ]


def test_a_valid_hypernode_is_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, HYPERNODE + "\n  - {type: Node, selector: {regexMatch: {pattern: '^gpu-[0-9]+$'}}}\n")
    assert run(capsys, path) == (0, ["OK HyperNode s0"])


@pytest.mark.parametrize(("members", "error"), [
    ("\n  - {type: Node, selector: {regexMatch: {pattern: 'a(b'}}}\n",
     'spec.members[0].selector.regexMatch.pattern: Invalid value: "a(b": member regexMatch pattern is invalid: '
     "error parsing regexp: missing ), unterminated subpattern: `a(b`"),
    ("\n  - {type: Node, selector: {}}\n",
     'spec.members[0].selector: Invalid value: "object": Either ExactMatch or RegexMatch or LabelMatch must be '
     "specified"),
    ("\n  - {type: Node, selector: {exactMatch: {name: a}, regexMatch: {pattern: b}}}\n",
     'spec.members[0].selector: Invalid value: "object": Only one of ExactMatch, RegexMatch, or LabelMatch can be '
     "specified"),
    ("\n  - {type: Switch, selector: {exactMatch: {name: a}}}\n",
     'spec.members[0].type: Invalid value: "Switch": unknown member type Switch'),
    (" []\n", "spec.members: Required value: member must have at least one member"),
    ("\n  - {type: Node, selector: {exactMatch: {nmae: a}}}\n",
     'spec.members[0].selector.exactMatch.nmae: unknown field "nmae"; did you mean "name"?'),
])
def test_a_bad_hypernode_is_one_error_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      members: str, error: str) -> None:
    path = write(tmp_path, HYPERNODE + members)
    assert run(capsys, path) == (2, [f"{path}: document 0: HyperNode s0: {error}"])
