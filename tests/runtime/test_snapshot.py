"""Snapshots of a live cluster: what they keep, what they drop, and that schedule decides the same on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from builders import node, pod, podgroup, queue
from kube.fakeapi import FakeApiServer, not_served
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cli.app import run as pyvolcano
from pyvolcano.cli.snapshot import SnapshotError, take_snapshot
from pyvolcano.conf import default_configuration
from pyvolcano.kube.store import KubeStore
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry
from pyvolcano.runtime.snapshot import CONFIG_KEY, clean, dump_documents, load_snapshot, load_snapshot_and_config
from pyvolcano.store.memory import InMemoryStore

BINPACK = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: binpack
"""


def _cluster(config: str | None = BINPACK) -> FakeApiServer:
    api = FakeApiServer(InMemoryStore())
    s = api.store
    if config is not None:
        s.create({"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
                  "data": {CONFIG_KEY: config}})
    s.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
              "value": 1000})
    for q in (queue("q"), queue("default")):
        s.create(q)
    for i in range(3):
        s.create(node(f"n{i}", cpu="4", memory="8Gi"))
    s.create(podgroup("running", min_member=1, phase="Running"))
    s.create(pod("running-0", "running", cpu="2", node_name="n1", phase="Running"))
    s.create(podgroup("gang", min_member=2, phase="Inqueue"))
    for i in range(2):
        s.create(pod(f"gang-{i}", "gang", cpu="1"))
    s.create(podgroup("single", min_member=1, phase="Inqueue", priorityClassName="high"))
    s.create(pod("single-0", "single", cpu="1", priorityClassName="high"))
    s.create({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
              "spec": {"queue": "q", "tasks": []}})
    return api


def _decisions(cache: SchedulerCache, config) -> dict:
    result = schedule_objects(cache, config, default_registry(), sessions=2, seed=7)
    result["stats"].pop("session_seconds")
    return result


def test_snapshot_lists_the_scheduler_inputs_in_order_without_server_noise():
    api = _cluster()
    docs, notes = take_snapshot(KubeStore(api.client(), ()))
    assert notes == []
    assert [d["kind"] for d in docs] == ["ConfigMap", "PriorityClass", "Queue", "Queue", "Node", "Node", "Node",
                                         "PodGroup", "PodGroup", "PodGroup", "Pod", "Pod", "Pod", "Pod", "Job"]
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Queue"] == ["default", "q"]
    for d in docs:
        md = d["metadata"]
        assert "resourceVersion" not in md and "managedFields" not in md and "generation" not in md
        if d["kind"] == "Pod":
            assert md["uid"] and md["creationTimestamp"]
    assert docs[0]["data"][CONFIG_KEY] == BINPACK


def test_clean_drops_managed_fields_and_the_last_applied_annotation():
    obj = {"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "5", "managedFields": [{}],
                                       "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}}
    assert clean(obj) == {"kind": "Pod", "metadata": {"name": "p"}}
    assert obj["metadata"]["resourceVersion"] == "5"  # a copy


def test_schedule_on_the_snapshot_decides_as_on_the_source_objects(tmp_path: Path):
    api = _cluster()
    docs, _ = take_snapshot(KubeStore(api.client(), ()))
    path = tmp_path / "snapshot.yaml"
    path.write_text(dump_documents(docs))
    registry = default_registry()
    objs, config = load_snapshot_and_config([path], registry)
    assert config is not None
    on_snapshot = _decisions(SchedulerCache.from_objects(objs), config)
    source = tmp_path / "source.yaml"
    with api.lock:
        raw = [o for kind in ("PriorityClass", "Queue", "Node", "PodGroup", "Pod") for o in api.store.list(kind)]
    source.write_text(yaml.safe_dump_all(raw))
    on_source = _decisions(SchedulerCache.from_objects(load_snapshot([source])), config)
    assert on_snapshot == on_source
    # binpack fills n1 (2 of 4 cpu in use) first.
    assert sorted(on_snapshot["binds"]) == ["ns/gang-0", "ns/gang-1", "ns/single-0"]
    assert list(on_snapshot["binds"].values()).count("n1") == 2
    # The embedded configuration is what decided: upstream's default spreads the same pods.
    default = _decisions(SchedulerCache.from_objects(objs), default_configuration())
    assert default["binds"] != on_snapshot["binds"]


def test_pyvolcano_schedule_uses_the_snapshots_configuration_unless_config_is_given(tmp_path: Path, capsys):
    api = _cluster()
    docs, _ = take_snapshot(KubeStore(api.client(), ()))
    path = tmp_path / "snapshot.yaml"
    path.write_text(dump_documents(docs))
    assert pyvolcano(["schedule", str(path), "-o", "json", "--seed", "7"]) == 0
    embedded = json.loads(capsys.readouterr().out)
    conf = tmp_path / "default.conf"
    conf.write_text('actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n'
                    '- plugins:\n  - name: predicates\n  - name: nodeorder\n')
    assert pyvolcano(["schedule", str(path), "-o", "json", "--seed", "7", "--config", str(conf)]) == 0
    assert json.loads(capsys.readouterr().out)["binds"] != embedded["binds"]


def test_schedule_names_the_configmap_of_a_bad_embedded_configuration(tmp_path: Path, capsys):
    path = tmp_path / "snapshot.yaml"
    path.write_text(dump_documents(take_snapshot(KubeStore(_cluster("actions: fly").client(), ()))[0]))
    assert pyvolcano(["schedule", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: document 0 (ConfigMap volcano-system/volcano-scheduler-configmap): "
                          "data.volcano-scheduler.conf") and err.count("\n") == 1


def test_schedule_still_refuses_kinds_that_are_not_snapshot_kinds(tmp_path: Path, capsys):
    path = tmp_path / "x.yaml"
    path.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n")
    assert pyvolcano(["schedule", str(path)]) == 2
    assert "apiVersion/kind v1/Secret is not supported" in capsys.readouterr().err


def test_snapshot_without_a_configuration_or_jobs_says_so():
    api = _cluster(config=None)
    api.faults.append(lambda request: __import__("httpx2").Response(
        403, json={"kind": "Status", "code": 403, "reason": "Forbidden", "message": "jobs is forbidden"})
        if request.url.path.endswith("/jobs") else None)
    docs, notes = take_snapshot(KubeStore(api.client(), ()))
    assert docs[0]["kind"] == "PriorityClass" and "Job" not in {d["kind"] for d in docs}
    assert len(notes) == 2 and "no scheduler configuration" in notes[0] and notes[1].startswith("Jobs left out")


def test_snapshot_records_hypernodes_after_nodes_and_schedule_reads_them_into_the_tree(tmp_path: Path):
    api = _cluster()
    for name, nodes in (("rack-b", ("n1", "n2")), ("rack-a", ("n0",))):
        api.store.create({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
                          "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": n}}}
                                                          for n in nodes]},
                          "status": {"nodeCount": len(nodes)}})
    docs, notes = take_snapshot(KubeStore(api.client(), ()))
    assert notes == []
    kinds = [d["kind"] for d in docs]
    assert kinds.index("HyperNode") == kinds.index("PodGroup") - 2 == len(kinds) - kinds[::-1].index("Node")
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "HyperNode"] == ["rack-a", "rack-b"]
    path = tmp_path / "snap.yaml"
    path.write_text(dump_documents(docs))
    cache = SchedulerCache.from_objects(load_snapshot([path]))
    assert [cache.hypernode_tree.ancestor(n, 1) for n in ("n0", "n1", "n2")] == ["rack-a", "rack-b", "rack-b"]


def test_snapshot_of_a_cluster_without_the_hypernode_crd_leaves_them_out_with_a_note(tmp_path: Path, monkeypatch,
                                                                                      capsys):
    api = _cluster()
    api.faults.append(not_served("topology.volcano.sh"))
    docs, notes = take_snapshot(KubeStore(api.client(), ()))
    assert "HyperNode" not in {d["kind"] for d in docs} and len(docs) == 15
    assert notes == ["HyperNodes left out: the cluster does not serve topology.volcano.sh/v1alpha1 hypernodes "
                     "(no HyperNode CRD)"]
    monkeypatch.setattr("pyvolcano.kube.connect", lambda **kw: KubeStore(api.client(), ()))
    assert pyvolcano(["snapshot", "-o", str(tmp_path / "snap.yaml")]) == 0
    assert "note: HyperNodes left out" in capsys.readouterr().err


def test_snapshot_checks_a_given_scheduler_conf_and_kinds(tmp_path: Path, capsys):
    bad = tmp_path / "bad.conf"
    bad.write_text("actions: fly\n")
    with pytest.raises(SnapshotError):
        take_snapshot(KubeStore(_cluster().client(), ()), scheduler_conf=bad)
    docs, _ = take_snapshot(KubeStore(_cluster().client(), ()), kinds=("Node", "Queue", "PriorityClass"))
    assert {d["kind"] for d in docs} == {"Node", "Queue", "PriorityClass"}
    assert pyvolcano(["snapshot", "--kinds", "Node,Widget"]) == 2
    assert "--kinds" in capsys.readouterr().err


def test_snapshot_command_writes_the_file(tmp_path: Path, monkeypatch, capsys):
    api = _cluster()
    monkeypatch.setattr("pyvolcano.kube.connect", lambda **kw: KubeStore(api.client(), ()))
    out = tmp_path / "snap.yaml"
    assert pyvolcano(["snapshot", "-o", str(out)]) == 0
    assert capsys.readouterr().err == f"note: wrote {out} (15 objects)\n"
    assert pyvolcano(["snapshot"]) == 0
    assert capsys.readouterr().out == out.read_text()
    # vcctl reads the same file offline.
    from pyvolcano.vcctl.app import run as vcctl

    assert vcctl(["job", "list", "-n", "ns", "-o", "name", "--cluster", str(out)]) == 0
    assert capsys.readouterr().out == "job.batch.volcano.sh/j\n"


def test_json_documents_are_yaml_that_reads_back_the_same():
    from pyvolcano.api.manifest import iter_documents
    from pyvolcano.runtime.snapshot import dump_json_documents

    docs = [{"kind": "Pod", "metadata": {"name": "p", "annotations": {"note": "é \\n\t: - [x] 'y' \"z\"", "n": "1e3",
                                                                       "yes": "true"}}},
            {"kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": 4, "big": 2**70}}}]
    text = dump_json_documents(docs)
    assert text.count("\n") == 4
    assert [d for _i, d in iter_documents(text, "x")] == docs
