"""vcctl queue: create, delete, operate (Commands and weight updates), list and get with PodGroup counts."""

from __future__ import annotations

import json

import yaml

from kube.fakeapi import FakeApiServer

HEADER = "Name                     Weight  State   Parent  Inqueue Pending Running Unknown Completed"


def test_queue_list_counts_podgroups_by_phase_as_upstream(vc):
    code, out, err = vc("queue", "list")
    assert code == 0 and err == ""
    assert out.splitlines() == [
        HEADER,
        "closed                   1       Closed          0       0       0       0       0",
        "default                  1       Open            0       0       1       0       1",
        "research                 3       Open    root    1       1       0       0       0",
    ]


def test_queue_list_output_formats(vc):
    data = json.loads(vc("queue", "list", "-o", "json")[1])
    assert data["kind"] == "List" and [q["metadata"]["name"] for q in data["items"]] == ["closed", "default",
                                                                                         "research"]
    assert vc("queue", "list", "-o", "name")[1].splitlines()[0] == "queue.scheduling.volcano.sh/closed"
    wide = vc("queue", "list", "-o", "wide")[1].splitlines()
    assert wide[0].split()[-5:] == ["Priority", "Reclaimable", "Capability", "Deserved", "Age"]
    assert wide[1].split()[-3:] == ["<none>", "<none>", "5m30s"]
    assert vc("queue", "list", "--no-headers")[1].splitlines()[0].startswith("closed ")
    assert vc("queue", "list", "-l", "nothing")[2] == "No resources found\n"


def test_queue_get_shows_one_queue_with_its_counts(vc):
    code, out, _ = vc("queue", "get", "-n", "research")
    assert code == 0 and out.splitlines() == [HEADER, "research                 3       Open    root    1       1    "
                                                      "   0       0       0"]
    assert vc("queue", "get", "research")[1] == out
    assert json.loads(vc("queue", "get", "research", "-o", "json")[1])["spec"]["weight"] == 3
    assert vc("queue", "get")[2] == "error: name is mandatory to get the particular queue details\n"
    code, _, err = vc("queue", "get", "nope")
    assert code == 1 and err.startswith("error: Queue nope:")


def test_queue_create_and_delete(vc, api: FakeApiServer):
    assert vc("queue", "create", "-n", "gpu", "-w", "4", "-S", "Closed") == (0, "", "")
    q = api.store.get("Queue", None, "gpu")
    assert q["spec"]["weight"] == 4
    assert vc("queue", "create") == (0, "", "")  # upstream's default name
    assert api.store.get("Queue", None, "test")["spec"]["weight"] == 1
    assert vc("queue", "delete", "gpu") == (0, "", "")
    assert [x["metadata"]["name"] for x in api.store.list("Queue")] == ["closed", "default", "research", "test"]
    assert vc("queue", "delete")[2] == "error: queue name must be specified\n"


def test_queue_operate_open_and_close_create_queue_commands_in_default(vc, api: FakeApiServer):
    assert vc("queue", "operate", "-n", "closed", "-a", "open")[0] == 0
    assert vc("queue", "operate", "research", "--action", "close")[0] == 0
    commands = sorted(api.store.list("Command", "default"), key=lambda c: c["action"])
    assert [c["action"] for c in commands] == ["CloseQueue", "OpenQueue"]
    assert commands[0]["metadata"]["name"].startswith("research-closequeue-")
    assert commands[0]["target"]["kind"] == "Queue" and commands[0]["target"]["name"] == "research"
    assert commands[0]["target"]["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert commands[0]["metadata"]["ownerReferences"] == [commands[0]["target"]]


def test_queue_operate_update_patches_the_weight_and_checks_its_flags(vc, api: FakeApiServer):
    assert vc("queue", "operate", "-n", "default", "-a", "update", "-w", "7")[0] == 0
    assert api.store.get("Queue", None, "default")["spec"]["weight"] == 7
    assert vc("queue", "operate", "-n", "default", "-a", "update")[2] == (
        "error: when update queue default, weight must be specified, the value must be greater than 0\n")
    assert vc("queue", "operate", "-n", "default")[2] == "error: action can not be null\n"
    assert vc("queue", "operate", "-n", "default", "-a", "drain")[2] == (
        "error: action drain invalid, valid actions are open, close and update\n")
    assert vc("queue", "operate", "-a", "open")[2] == "error: queue name must be specified\n"


def test_queue_views_read_a_snapshot_and_writes_refuse_it(vc, snapshot):
    assert vc("queue", "list", "--cluster", str(snapshot))[1] == vc("queue", "list")[1]
    offline = yaml.safe_load(vc("queue", "get", "research", "--cluster", str(snapshot), "-o", "yaml")[1])
    assert offline["spec"] == {"weight": 3, "parent": "root"} and "uid" not in offline["metadata"]
    for verb in (["create", "-n", "x"], ["delete", "-n", "x"], ["operate", "-n", "x", "-a", "open"]):
        code, _, err = vc("queue", *verb, "--cluster", str(snapshot))
        assert code == 2 and "a snapshot is read-only" in err
