"""Property: whatever a user's file holds, the CLI answers 0 or 2 in bounded time, never a traceback.

Valid manifests and configurations from ``examples/`` are mutated the way the issue's fuzzer did
(a key deleted, a value turned into a mapping, a list, a huge integer, NaN, a string with a line
break or non-ASCII digits, a document duplicated, the text truncated) and given to ``schedule``,
``validate`` and ``simulate --until 10m`` in-process. An exit of 2 must come with one line that
names the file (``validate`` reports per object on stdout).
"""

from __future__ import annotations

import copy
import os
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pyvolcano.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
SECONDS = 60  # per command; the slowest valid one takes about a second
EXAMPLES = int(os.environ.get("PYVOLCANO_ROBUSTNESS_EXAMPLES", "20"))
"""Mutations per command; the default keeps the suite fast, a larger number hunts further."""

REPLACEMENTS: list[Any] = [
    {}, [], None, "", 10**30, 2**63, -(2**31) - 1, float("nan"), float("inf"), True, "a\nb", "٣", "1x",
    "2024-02-30", {"a": {"b": {"c": [1, [2, [3]]]}}}, [[[[]]]], "x" * 300,
]


def _docs(path: Path) -> list[Any]:
    return list(yaml.safe_load_all(path.read_text(encoding="utf-8")))


SNAPSHOT = _docs(EX / "cluster.yaml")
SIM_CLUSTER = _docs(EX / "simulate" / "cluster.yaml")
SIM_JOBS = _docs(EX / "simulate" / "jobs.yaml")
CONFIGS = {p.name: yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(EX.glob("*.conf"))}


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (mapping keys and list indices), 12 steps at most."""
    if len(prefix) >= 12:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


@st.composite
def mutated_text(draw: st.DrawFn, docs: list[Any]) -> str:
    docs = copy.deepcopy(docs)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["replace", "delete", "duplicate", "deep"]))
        i = draw(st.integers(0, len(docs) - 1))
        paths = list(_paths(docs[i]))
        if op == "duplicate" or not paths:
            docs.insert(i, copy.deepcopy(docs[i]))
            continue
        path = draw(st.sampled_from(paths))
        parent = docs[i]
        for step in path[:-1]:
            parent = parent[step]
        if op == "delete":
            del parent[path[-1]]
        elif op == "deep":
            nested: Any = "x"
            for _ in range(draw(st.integers(50, 400))):
                nested = {"a": nested}
            parent[path[-1]] = nested
        else:
            parent[path[-1]] = copy.deepcopy(draw(st.sampled_from(REPLACEMENTS)))
    text = yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True)
    if draw(st.booleans()) and draw(st.integers(0, 9)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return text


def _check(args: list[str], named: Path) -> None:
    with time_limit(SECONDS):
        result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 2), (result.exit_code, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    if result.exit_code == 0:
        return
    if args[0] == "validate":
        bad = [line for line in result.stdout.splitlines() if not line.startswith("OK ")]
        assert bad and all(line.startswith(f"{named}: ") for line in bad), result.stdout
        assert not result.stderr
        return
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {named}"), result.stderr


PROPERTY = settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@PROPERTY
@given(text=mutated_text(SNAPSHOT))
def test_schedule_on_a_mutated_snapshot_exits_0_or_2_naming_it(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.yaml"
        path.write_text(text, encoding="utf-8")
        _check(["schedule", str(path), "--sessions", "2", "-o", "json"], path)


@PROPERTY
@given(text=mutated_text(SNAPSHOT + SIM_JOBS))
def test_validate_on_mutated_manifests_exits_0_or_2_naming_them(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "objects.yaml"
        path.write_text(text, encoding="utf-8")
        _check(["validate", str(path)], path)


@PROPERTY
@given(cluster=st.booleans(), data=st.data())
def test_simulate_on_a_mutated_cluster_or_workload_exits_0_or_2_naming_it(cluster: bool, data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        c, w = Path(tmp) / "cluster.yaml", Path(tmp) / "jobs.yaml"
        c.write_text(data.draw(mutated_text(SIM_CLUSTER)) if cluster else yaml.safe_dump_all(SIM_CLUSTER),
                     encoding="utf-8")
        w.write_text(yaml.safe_dump_all(SIM_JOBS) if cluster else data.draw(mutated_text(SIM_JOBS)), encoding="utf-8")
        _check(["simulate", "--cluster", str(c), "--workload", str(w), "--until", "10m", "-o", "json"],
               c if cluster else w)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(max_examples=max(EXAMPLES // 3, 1), suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_schedule_with_a_mutated_configuration_exits_0_or_2_naming_it(name: str, data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_text(data.draw(mutated_text([CONFIGS[name]])), encoding="utf-8")
        _check(["schedule", str(EX / "cluster.yaml"), "--config", str(path), "-o", "json"], path)
