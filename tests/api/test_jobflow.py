"""A JobFlow's graph: upstream's webhook verdicts (validate_jobflow_test.go's cases) and the layers
the views draw."""

from __future__ import annotations

from typing import Any

from pyvolcano.api.jobflow import dag_problem, flow_job_name, flow_steps, object_string, topological_order


def jobflow(*flows: tuple[str, list[str]]) -> dict[str, Any]:
    return {"spec": {"flows": [{"name": n, **({"dependsOn": {"targets": t}} if t else {})} for n, t in flows]}}


UPSTREAM_VALID = jobflow(("a", []), ("b", ["a"]), ("c", ["a", "b"]), ("d", ["b"]), ("e", ["c", "d"]))


def test_upstreams_valid_flow_is_a_dag_in_four_layers() -> None:
    steps = flow_steps(UPSTREAM_VALID)
    assert dag_problem(steps) is None
    assert topological_order(steps) == [["a"], ["b"], ["c", "d"], ["e"]]


def test_a_target_that_is_no_flow_is_not_defined() -> None:
    flow = jobflow(("b", ["a"]), ("c", ["a", "b"]), ("d", ["b"]), ("e", ["c", "d"]))
    assert dag_problem(flow_steps(flow)) == ("b", "jobflow Flow is not DAG: vertex is not defined: a")


def test_a_cycle_is_not_a_dag() -> None:
    flow = jobflow(("a", ["b"]), ("b", ["a"]), ("c", ["a", "b"]), ("d", ["b"]), ("e", ["c", "d"]))
    problem = dag_problem(flow_steps(flow))
    assert problem is not None and problem[1] == "jobflow Flow is not DAG"
    assert dag_problem(flow_steps(jobflow(("a", ["a"])))) == ("a", "jobflow Flow is not DAG")


def test_a_flow_named_twice_counts_once_with_its_last_definition() -> None:
    flow = jobflow(("a", []), ("a", ["b"]), ("b", []))
    steps = flow_steps(flow)
    assert [(s.name, s.targets) for s in steps] == [("a", ("b",)), ("b", ())]
    assert dag_problem(steps) is None


def test_a_target_named_twice_is_no_cycle() -> None:
    assert dag_problem(flow_steps(jobflow(("a", []), ("b", ["a", "a"])))) is None


def test_a_long_chain_is_checked_without_recursion_limits() -> None:
    n = 5000
    flow = jobflow(*((f"s{i}", [f"s{i - 1}"] if i else []) for i in range(n)))
    assert dag_problem(flow_steps(flow)) is None


def test_job_and_owner_names() -> None:
    assert flow_job_name("test", "a") == "test-a"
    assert object_string("default", "test") == "default.test"
