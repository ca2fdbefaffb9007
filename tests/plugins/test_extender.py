"""extender: every verb against a real local HTTP extender — upstream's request bodies and
answers, what a failed call means with and without ``ignorable``, ``managedResources``, the
timeout and the 10 MiB limit (upstream extender/extender.go)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from builders import cache_of, node, pod, podgroup, queue
from extender_server import ExtenderServer
from pyvolcano.conf import ConfigError, load_scheduler_conf
from pyvolcano.plugins.extender.client import MAX_BODY, ExtenderClient, ExtenderError
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry


@pytest.fixture
def ext() -> Iterator[ExtenderServer]:
    with ExtenderServer() as server:
        yield server


def conf(ext: ExtenderServer, actions: str = "allocate", *, ignorable: bool = False, others: str = "",
         **verbs: str) -> str:
    arguments = {"extender.urlPrefix": ext.url, "extender.httpTimeout": "500ms", "extender.ignorable": ignorable}
    arguments.update({f"extender.{v}Verb": v for v in verbs})
    plugin = yaml.safe_dump([{"name": "extender", "arguments": arguments}])
    return f"actions: \"{actions}\"\ntiers:\n- plugins:\n{others}" + "".join(f"  {line}\n" for line in
                                                                        plugin.splitlines())


def run(text: str, *docs: dict[str, Any]) -> dict[str, Any]:
    return schedule_objects(cache_of(*docs), load_scheduler_conf(text), default_registry(), sessions=1, seed=0)


CLUSTER = [queue("q"), node("n1"), node("n2")]


def test_predicate_refusals_carry_the_extenders_message_and_code(ext: ExtenderServer) -> None:
    ext.answers["predicate"] = lambda b: ({"status": "no GPU driver", "code": 3} if b["node"]["Name"] == "n1"
                                          else {"status": "", "code": 0})
    out = run(conf(ext, predicate="x"), *CLUSTER, podgroup("pg"), pod("a", "pg"))
    assert out["binds"] == {"ns/a": "n2"}
    body = next(b for v, b in ext.calls if v == "predicate")
    assert set(body) == {"task", "node"}
    assert body["task"]["Name"] == "a" and body["task"]["Resreq"]["MilliCPU"] == 1000.0
    assert body["task"]["Status"] == 1  # TaskStatus Pending


def test_a_message_without_a_code_is_an_error(ext: ExtenderServer) -> None:
    ext.answers["predicate"] = lambda _b: {"status": "busy"}
    out = run(conf(ext, predicate="x"), *CLUSTER, podgroup("pg"), pod("a", "pg"))
    assert out["binds"] == {} and out["diagnoses"]["ns/pg"]["node_failures"] == {"busy": 2}


def test_prioritize_scores_decide_the_node(ext: ExtenderServer) -> None:
    ext.answers["prioritize"] = lambda b: {"nodeScore": {n["Name"]: (90 if n["Name"] == "n2" else 10)
                                                         for n in b["nodes"]}}
    assert run(conf(ext, prioritize="x"), *CLUSTER, podgroup("pg"), pod("a", "pg"))["binds"] == {"ns/a": "n2"}


def _victim_cluster() -> list[dict[str, Any]]:
    low = podgroup("low", phase="Running")
    low["spec"]["priorityClassName"] = "low"
    high = podgroup("high", phase="Inqueue")
    high["spec"]["priorityClassName"] = "high"
    pcs = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
           for n, v in (("low", 1), ("high", 100))]
    return [*pcs, queue("q"), node("n1", cpu="2"), low, high,
            pod("v1", "low", node_name="n1", phase="Running"), pod("v2", "low", node_name="n1", phase="Running"),
            pod("p", "high", cpu="1")]


def test_preemptable_victims_are_those_the_extender_names(ext: ExtenderServer) -> None:
    ext.answers["preemptable"] = lambda b: {"status": 1,
                                            "victims": [t for t in b["evictees"] if t["Name"] == "v2"]}
    text = conf(ext, "preempt", others="  - name: gang\n    enablePreemptable: false\n", preemptable="x")
    out = run(text, *_victim_cluster())
    assert out["evictions"] == ["ns/v2"]
    body = next(b for v, b in ext.calls if v == "preemptable")
    assert body["evictor"]["Name"] == "p" and sorted(t["Name"] for t in body["evictees"]) == ["v1", "v2"]


def test_a_failed_preemptable_call_rejects_unless_ignorable(ext: ExtenderServer) -> None:
    ext.answers["preemptable"] = lambda _b: 500
    text = conf(ext, "preempt", others="  - name: gang\n    enablePreemptable: false\n", preemptable="x")
    assert run(text, *_victim_cluster())["evictions"] == []


def test_job_enqueueable_vote_keeps_a_podgroup_pending(ext: ExtenderServer) -> None:
    ext.answers["jobEnqueueable"] = lambda b: {"status": -1 if b["job"]["Name"] == "no" else 1}
    groups = [podgroup(n, phase="Pending", minResources={"cpu": "1"}) for n in ("no", "yes")]
    out = run(conf(ext, "enqueue", jobEnqueueable="x", jobEnqueued="x"), *CLUSTER, *groups)
    assert out["podgroups"] == {"ns/no": "Pending", "ns/yes": "Inqueue"}
    assert [b["job"]["Name"] for v, b in ext.calls if v == "jobEnqueued"] == ["yes"]


def test_job_ready_false_holds_the_gang(ext: ExtenderServer) -> None:
    ext.answers["jobReady"] = lambda _b: {"status": False}
    out = run(conf(ext, jobReady="x"), *CLUSTER, podgroup("pg"), pod("a", "pg"))
    assert out["binds"] == {}


def test_an_overused_queue_gets_nothing_allocated(ext: ExtenderServer) -> None:
    ext.answers["queueOverused"] = lambda b: {"overused": b["queue"]["Name"] == "q"}
    out = run(conf(ext, queueOverused="x"), *CLUSTER, podgroup("pg"), pod("a", "pg"))
    assert out["binds"] == {}


def test_an_allocate_event_error_undoes_the_allocation(ext: ExtenderServer) -> None:
    ext.answers["allocateFunc"] = lambda _b: {"errorMessage": "quota"}
    out = run(conf(ext, allocateFunc="x", deallocateFunc="x"), *CLUSTER, podgroup("pg"), pod("a", "pg"))
    assert out["binds"] == {}
    assert "allocateFunc" in ext.verbs()


def test_session_open_and_close_are_told(ext: ExtenderServer) -> None:
    run(conf(ext, onSessionOpen="x", onSessionClose="x"), *CLUSTER, podgroup("pg"), pod("a", "pg"))
    opened = next(b for v, b in ext.calls if v == "onSessionOpen")
    assert sorted(opened["Nodes"]) == ["n1", "n2"] and "ns/pg" in opened["Jobs"]
    assert ext.verbs()[-1] == "onSessionClose"


def test_a_failed_session_open_leaves_the_plugin_out_unless_ignorable(ext: ExtenderServer) -> None:
    ext.answers["onSessionOpen"] = lambda _b: 503
    ext.answers["predicate"] = lambda _b: {"status": "never", "code": 3}
    docs = [*CLUSTER, podgroup("pg"), pod("a", "pg")]
    assert "ns/a" in run(conf(ext, onSessionOpen="x", predicate="x"), *docs)["binds"]
    assert "predicate" not in ext.verbs()
    assert run(conf(ext, ignorable=True, onSessionOpen="x", predicate="x"), *docs)["binds"] == {}


def test_pods_without_a_managed_resource_are_not_sent(ext: ExtenderServer) -> None:
    ext.answers["predicate"] = lambda _b: {"status": "no", "code": 3}
    text = conf(ext, predicate="x").replace(
        "extender.ignorable: false", "extender.ignorable: false\n      extender.managedResources: [nvidia.com/gpu]")
    assert "ns/a" in run(text, *CLUSTER, podgroup("pg"), pod("a", "pg"))["binds"]
    assert ext.verbs() == []


def test_an_extender_that_does_not_answer_costs_one_timeout_per_session(ext: ExtenderServer) -> None:
    ext.delay = 2.0
    nodes = [node(f"n{i}") for i in range(8)]
    out = run(conf(ext, ignorable=True, predicate="x"), queue("q"), *nodes, podgroup("pg"), pod("a", "pg"))
    assert len(out["binds"]) == 1  # ignorable: the failed calls pass
    # The first calls time out (16 in parallel at most); the breaker answers the rest at once.
    assert ext.verbs().count("predicate") <= 8


def test_the_answer_may_not_exceed_ten_mebibytes(ext: ExtenderServer) -> None:
    ext.answers["big"] = lambda _b: b'{"padding":"' + b"a" * (MAX_BODY + 1) + b'"}'
    with pytest.raises(ExtenderError, match="http: request body too large"):
        ExtenderClient(ext.url, 5.0).send("big", {})


def test_a_verb_without_a_url_is_a_configuration_error() -> None:
    text = ("actions: allocate\ntiers:\n- plugins:\n  - name: extender\n    arguments:\n"
            "      extender.predicateVerb: p\n")
    with pytest.raises(ConfigError, match=r"extender\.urlPrefix"):
        load_configuration(default_registry(), text=text, source="conf")
