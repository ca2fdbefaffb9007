"""The decision recorder: bounded recordings of live sessions that replay to the same decisions."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx2
import pytest

from builders import node, pod, podgroup, queue
from kube.fakeapi import FakeApiServer
from pyvolcano.api.names import SCHEDULER_KINDS
from pyvolcano.cli.app import run as pyvolcano
from pyvolcano.kube.store import KubeStore
from pyvolcano.runtime.recorder import SessionRecorder, load_session, replay_session
from pyvolcano.runtime.scheduler import LiveScheduler
from pyvolcano.store.memory import InMemoryStore

PREEMPT_CONF = """actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def _cluster(api: FakeApiServer) -> None:
    s = api.store
    s.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"},
              "value": 10})
    s.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
              "value": 1000})
    s.create(queue("q"))
    for i in range(3):
        s.create(node(f"n{i}", cpu="4", memory="16Gi"))
    s.create({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "rack"},
              "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^n[01]$"}}}]}})
    # Low-priority work fills n0 and n1; a high-priority gang and some small jobs wait.
    s.create(podgroup("low", min_member=1, phase="Running", priorityClassName="low"))
    for i in range(4):
        s.create(pod(f"low-{i}", "low", cpu="2", node_name=f"n{i // 2}", phase="Running", priorityClassName="low"))
    s.create(podgroup("high", min_member=3, phase="Pending", priorityClassName="high"))
    for i in range(3):
        s.create(pod(f"high-{i}", "high", cpu="2", priorityClassName="high"))
    for j in range(3):
        s.create(podgroup(f"small-{j}", min_member=1, phase="Pending"))
        s.create(pod(f"small-{j}-0", f"small-{j}", cpu="1"))


def _slow_binds(request: httpx2.Request) -> httpx2.Response | None:
    if request.url.path.endswith("/binding"):
        time.sleep(0.2)  # binds still in flight when the next session starts
    return None


def _run(tmp_path: Path, sessions: int, keep: int) -> tuple[SessionRecorder, list]:
    api = FakeApiServer(InMemoryStore())
    _cluster(api)
    api.faults.append(_slow_binds)
    conf = tmp_path / "scheduler.conf"
    conf.write_text(PREEMPT_CONF)
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    assert store.wait_for_sync(5)
    recorder = SessionRecorder(tmp_path / "record", keep=keep)
    now = iter(float(1000 + i) for i in range(100))
    sched = LiveScheduler(store, conf_path=conf, seed=3, bind_workers=2, recorder=recorder, clock=lambda: next(now))
    reports = []
    try:
        for _ in range(sessions):
            reports.append(sched.run_once())
            time.sleep(0.05)
    finally:
        sched.close(wait=True)
        store.stop()
    return recorder, reports


def test_every_recorded_session_replays_to_the_same_decisions(tmp_path: Path):
    recorder, reports = _run(tmp_path, sessions=5, keep=5)
    dirs = recorder.sessions()
    assert [d.name for d in dirs] == [f"session-{i:08d}" for i in range(1, 6)]
    recorded = [json.loads((d / "result.json").read_text()) for d in dirs]
    # The scenario decides something worth replaying: binds, evictions, and binds still in flight.
    assert any(r["binds"] for r in recorded) and any(r["evictions"] for r in recorded)
    assert sum(len(r.result.binds) for r in reports) == sum(len(r["binds"]) for r in recorded)
    for d, rec in zip(dirs, recorded, strict=True):
        assert replay_session(load_session(d)) == rec, d.name
    meta = json.loads((dirs[0] / "session.json").read_text())
    assert meta["now"] == 1000.0 and meta["default_configuration"] is False and meta["incomplete"] == 0
    recorded_docs = [json.loads(line) for line in (dirs[0] / "cluster.yaml").read_text().splitlines()
                     if line != "---"]
    assert [d["metadata"]["name"] for d in recorded_docs if d["kind"] == "HyperNode"] == ["rack"]


def test_recording_keeps_only_the_last_n_sessions(tmp_path: Path):
    recorder, _ = _run(tmp_path, sessions=4, keep=2)
    assert [d.name for d in recorder.sessions()] == ["session-00000003", "session-00000004"]
    assert not [p for p in recorder.directory.iterdir() if p.name.startswith(".")]
    # A new recorder in the same directory goes on numbering after the newest session.
    assert SessionRecorder(recorder.directory, keep=2)._next == 5


def test_a_recorded_session_is_also_a_schedule_input(tmp_path: Path, capsys):
    recorder, _ = _run(tmp_path, sessions=1, keep=1)
    session = recorder.sessions()[0]
    assert pyvolcano(["schedule", str(session / "cluster.yaml"), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["binds"]


def test_replay_command_prints_the_decisions_and_checks_them(tmp_path: Path, capsys):
    recorder, _ = _run(tmp_path, sessions=2, keep=2)
    session = recorder.sessions()[0]
    assert pyvolcano(["replay", str(session), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["identical"] is True and data["session"] == session.name
    assert data["binds"] == json.loads((session / "result.json").read_text())["binds"]
    assert err.endswith("same decisions as recorded\n")
    tampered = json.loads((session / "result.json").read_text())
    tampered["binds"] = [["ns/nothing", "n9"]]
    (session / "result.json").write_text(json.dumps(tampered))
    assert pyvolcano(["replay", str(session), "-o", "json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["identical"] is False
    assert err.startswith(f"error: {session}: the replay decided differently: binds:") and err.count("\n") == 1


@pytest.mark.parametrize("damage", ["missing", "format", "yaml"])
def test_replay_refuses_what_is_not_a_recorded_session(tmp_path: Path, capsys, damage: str):
    recorder, _ = _run(tmp_path, sessions=1, keep=1)
    session = recorder.sessions()[0]
    if damage == "missing":
        target = tmp_path / "nothing"
    elif damage == "format":
        (session / "session.json").write_text('{"format": 99}')
        target = session
    else:
        (session / "cluster.yaml").write_text("a: [\n")
        target = session
    assert pyvolcano(["replay", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_scheduler_record_flags_are_checked_before_connecting(tmp_path: Path, capsys):
    assert pyvolcano(["scheduler", "--record-sessions", "0"]) == 2
    assert "--record-sessions" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert pyvolcano(["scheduler", "--record", str(blocker)]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_sessions_with_volume_bindings_in_flight_replay_to_the_same_decisions(tmp_path: Path):
    from builders import claims, hostnode, local_pv, pvc, storage_class

    api = FakeApiServer(InMemoryStore())
    s = api.store
    s.create(queue("q"))
    for n in ("n0", "n1"):
        s.create(hostnode(n))
    s.create(storage_class("local"))
    for n, k in (("n0", 0), ("n0", 1), ("n1", 0)):
        s.create(local_pv(f"pv-{n}-{k}", n, size=f"{5 + k}Gi"))
    for j in range(4):
        s.create(pvc(f"data-{j}"))
        s.create(podgroup(f"j{j}", min_member=1, phase="Pending"))
        s.create(pod(f"j{j}-0", f"j{j}", volumes=claims(f"data-{j}")))
    api.faults.append(_slow_binds)
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    assert store.wait_for_sync(5)
    recorder = SessionRecorder(tmp_path / "record", keep=5)
    now = iter(float(1000 + i) for i in range(100))
    sched = LiveScheduler(store, seed=3, bind_workers=2, recorder=recorder, clock=lambda: next(now))
    try:
        for _ in range(3):
            sched.run_once()
            time.sleep(0.05)
    finally:
        sched.close(wait=True)
        store.stop()
    dirs = recorder.sessions()
    recorded = [json.loads((d / "result.json").read_text()) for d in dirs]
    # Three PVs for four claims: three pods placed, each on the node of a PV of its own.
    assert sum(len(r["binds"]) for r in recorded) == 3
    for d, rec in zip(dirs, recorded, strict=True):
        assert replay_session(load_session(d)) == rec, d.name
    kinds = {json.loads(line)["kind"] for line in (dirs[-1] / "cluster.yaml").read_text().splitlines()
             if line != "---"}
    assert {"StorageClass", "PersistentVolume", "PersistentVolumeClaim"} <= kinds
    claimed = {pv["metadata"]["name"]: pv["spec"]["claimRef"]["name"] for pv in s.list("PersistentVolume")}
    assert len(set(claimed.values())) == 3
