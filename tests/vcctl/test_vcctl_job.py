"""vcctl job: upstream's verbs, flags, columns and messages, live (fake API server) and on a snapshot."""

from __future__ import annotations

import json

import yaml

from kube.fakeapi import FakeApiServer

HEADER = ("Name    Creation       Phase       JobType     Replicas    Min   Pending   Running   Succeeded   Failed    "
          "Unknown     RetryCount")


def test_job_list_prints_upstreams_columns_for_the_default_namespace(vc):
    code, out, err = vc("job", "list")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == HEADER
    assert lines[1].split() == ["infer", "2024-01-01", "Pending", "Batch", "1", "1", "1", "0", "0", "0", "0", "0"]
    assert lines[2].split() == ["train", "2024-01-01", "Running", "Batch", "2", "2", "0", "2", "0", "0", "0", "0"]
    assert len(lines) == 3  # etl is in another namespace


def test_job_list_all_namespaces_adds_the_namespace_column(vc):
    for flag in ("-A", "--all-namespaces"):
        code, out, _ = vc("job", "list", flag)
        assert code == 0
        lines = out.splitlines()
        assert lines[0].split()[:2] == ["Namespace", "Name"]
        assert [line.split()[:2] for line in lines[1:]] == [["batch", "etl"], ["default", "infer"],
                                                            ["default", "train"]]


def test_job_list_filters_by_queue_scheduler_namespace_and_label_selector(vc):
    names = lambda out: [line.split()[0] for line in out.splitlines()[1:]]  # noqa: E731
    assert names(vc("job", "list", "-q", "research")[1]) == ["infer"]
    assert names(vc("job", "list", "--scheduler", "volcano")[1]) == ["train"]
    assert names(vc("job", "list", "-n", "batch")[1]) == ["etl"]
    named = lambda *a: vc("job", "list", "-o", "name", *a)[1].replace("job.batch.volcano.sh/", "").split()  # noqa: E731
    assert named("-A", "-l", "team") == ["etl", "infer"]
    assert named("-A", "--selector", "team=ml") == ["infer"]
    assert named("-A", "-l", "team,team!=ml") == ["etl"]
    assert named("-A", "-l", "!team") == ["train"]
    assert names(vc("job", "list", "-l", "team notin (ml)")[1]) == ["train"]


def test_job_list_without_jobs_says_no_resources_found_on_stderr(vc):
    code, out, err = vc("job", "list", "-q", "nothing-here")
    assert (code, out, err) == (0, "", "No resources found\n")


def test_job_list_output_formats(vc):
    code, out, _ = vc("job", "list", "-o", "json")
    data = json.loads(out)
    assert out.count("\n") == 1 and data["kind"] == "List" and data["apiVersion"] == "v1"
    assert [j["metadata"]["name"] for j in data["items"]] == ["infer", "train"]
    assert all("managedFields" not in j["metadata"] for j in data["items"])
    assert yaml.safe_load(vc("job", "list", "-o", "yaml")[1]) == data
    assert vc("job", "list", "-o", "name")[1] == "job.batch.volcano.sh/infer\njob.batch.volcano.sh/train\n"
    wide = vc("job", "list", "-o", "wide")[1].splitlines()
    assert wide[0].split()[-3:] == ["Queue", "Scheduler", "Age"]
    assert wide[1].split()[-3:] == ["research", "other", "5m30s"]
    assert vc("job", "list", "--no-headers")[1].splitlines()[0].split()[0] == "infer"
    code, _, err = vc("job", "list", "-o", "table2")
    assert code == 2 and err.startswith("error: Invalid value for '--output' / '-o': got 'table2'")


def test_job_list_refuses_a_bad_selector_in_one_line(vc):
    code, out, err = vc("job", "list", "-l", "a in (")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "'--selector' / '-l'" in err


def test_job_view_prints_the_job_and_its_events(vc, api: FakeApiServer):
    api.store.create({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                      "metadata": {"name": "train.17a", "namespace": "default"},
                      "regarding": {"kind": "Job", "name": "train", "namespace": "default"},
                      "type": "Normal", "reason": "ExecuteAction", "note": "Start to execute action SyncJob",
                      "reportingController": "vc-controller-manager",
                      "eventTime": "2024-01-01T00:01:00Z"})
    code, out, _ = vc("job", "view", "-N", "train")
    assert code == 0
    assert out.startswith("Name:       \ttrain\nNamespace:  \tdefault\n")
    assert "  Min Available:     \t2\n" in out and "    Phase:\tRunning\n" in out
    assert "ExecuteAction" in out and "Start to execute action SyncJob" in out and "4m30s" in out
    assert vc("job", "view", "train")[1] == out  # positional name, as kubectl
    assert vc("job", "view", "infer")[1].endswith("Events: \t<none>\n")


def test_job_view_output_formats_print_the_one_object(vc):
    data = json.loads(vc("job", "view", "train", "-o", "json")[1])
    assert data["kind"] == "Job" and data["metadata"]["name"] == "train"
    assert vc("job", "view", "train", "-o", "name")[1] == "job.batch.volcano.sh/train\n"


def test_job_view_needs_a_name_and_an_existing_job(vc):
    code, out, err = vc("job", "view")
    assert code == 2 and out == ""
    assert err == "error: job name (specified by --name or -N) is mandatory to view a particular job\n"
    code, out, err = vc("job", "view", "-N", "missing")
    assert code == 1 and err.startswith("error: Job default/missing:") and err.count("\n") == 1


def test_job_run_from_flags_creates_upstreams_job(vc, api: FakeApiServer):
    code, out, _ = vc("job", "run", "-N", "demo", "-r", "3", "-m", "2", "-i", "nginx", "-R", "cpu=500m")
    assert (code, out) == (0, "run job demo successfully\n")
    job = api.store.get("Job", "default", "demo")
    assert job["spec"]["minAvailable"] == 2 and job["spec"]["schedulerName"] == "volcano"
    task = job["spec"]["tasks"][0]
    assert task["replicas"] == 3
    container = task["template"]["spec"]["containers"][0]
    assert container["image"] == "nginx" and container["imagePullPolicy"] == "IfNotPresent"
    assert container["resources"] == {"requests": {"cpu": "500m"}, "limits": {"cpu": "1000m", "memory": "100Mi"}}
    assert task["template"]["spec"]["restartPolicy"] == "Never"
    assert task["template"]["metadata"]["labels"] == {"job.volcano.sh": "demo"}


def test_job_run_from_a_file_and_its_mistakes(vc, api: FakeApiServer, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                    "metadata": {"name": "from-file", "namespace": "batch"},
                                    "spec": {"tasks": [{"replicas": 1, "template": {}}]}}))
    assert vc("job", "run", "-f", str(path)) == (0, "run job from-file successfully\n", "")
    assert api.store.get("Job", "batch", "from-file")["spec"]["tasks"][0]["replicas"] == 1
    assert vc("job", "run")[2] == "error: job name cannot be left blank\n"
    code, _, err = vc("job", "run", "-f", str(tmp_path / "job.json"))
    assert code == 2 and err.endswith("only support yaml file\n")
    code, _, err = vc("job", "run", "-N", "x", "-R", "cpu")
    assert code == 2 and err == "error: --requests: invalid argument syntax cpu, expected <resource>=<value>\n"
    code, _, err = vc("job", "run", "-N", "x", "-L", "cpu=lots")
    assert code == 2 and err.startswith("error: --limits: cpu: got 'lots'")


def test_job_suspend_and_resume_create_commands_owned_by_the_job(vc, api: FakeApiServer):
    assert vc("job", "suspend", "-N", "train") == (0, "", "")
    assert vc("job", "resume", "train", "-n", "default") == (0, "", "")
    commands = api.store.list("Command", "default")
    assert sorted(c["action"] for c in commands) == ["AbortJob", "ResumeJob"]
    uid = api.store.get("Job", "default", "train")["metadata"]["uid"]
    for c in commands:
        assert c["metadata"]["name"].startswith(f"train-{c['action'].lower()}-")
        ref = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train", "uid": uid,
               "controller": True, "blockOwnerDeletion": True}
        assert c["target"] == ref and c["metadata"]["ownerReferences"] == [ref]
    assert vc("job", "suspend")[2] == "error: job name is mandatory to suspend a particular job\n"
    assert vc("job", "resume", "-N", "missing")[0] == 1


def test_job_delete_deletes_and_says_so(vc, api: FakeApiServer):
    assert vc("job", "delete", "-N", "infer") == (0, "delete job infer successfully\n", "")
    assert [j["metadata"]["name"] for j in api.store.list("Job", "default")] == ["train"]
    assert vc("job", "delete")[2] == "error: job name is mandatory to delete a particular job\n"


def test_job_views_read_a_snapshot_file_offline(vc, snapshot):
    live = vc("job", "list", "-A", "-o", "wide")[1]
    assert vc("job", "list", "-A", "-o", "wide", "--cluster", str(snapshot))[1] == live
    assert vc("job", "view", "etl", "-n", "batch", "--cluster", str(snapshot))[1].startswith("Name:       \tetl\n")
    assert vc("job", "list", "-o", "name", "--cluster", str(snapshot))[1] == vc("job", "list", "-o", "name")[1]


def test_writing_job_verbs_refuse_a_snapshot(vc, snapshot):
    for verb in (["run", "-N", "x"], ["suspend", "-N", "train"], ["resume", "-N", "train"], ["delete", "-N", "x"]):
        code, out, err = vc("job", *verb, "--cluster", str(snapshot))
        assert code == 2 and out == ""
        assert err == f"error: --cluster {snapshot}: a snapshot is read-only; 'job {verb[0]}' needs a live cluster\n"


def test_a_bad_snapshot_file_is_one_line_naming_the_document(vc, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Job\nmetadata: {name: a}\n---\n- 1\n")
    code, _, err = vc("job", "list", "--cluster", str(bad))
    assert code == 2 and err == f"error: {bad}: document 1: expected a Kubernetes object mapping\n"
    code, _, err = vc("job", "list", "--cluster", str(tmp_path / "none.yaml"))
    assert code == 2 and "cannot read" in err


def test_a_kubectl_list_is_a_snapshot_too(vc, tmp_path):
    # `kubectl get vcjob -A -o yaml` prints a v1 List; its items are read as documents.
    from vcctl.cluster import objects

    path = tmp_path / "list.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "metadata": {},
                                    "items": [o for o in objects() if o["kind"] == "Job"]}))
    assert vc("job", "list", "-A", "--cluster", str(path))[1] == vc("job", "list", "-A")[1]
