"""vcctl pod list: which pods (job label, queue label or annotation), and kubectl's STATUS column."""

from __future__ import annotations

from pyvolcano.vcctl.pod import pod_row
from vcctl.cluster import NOW, pod


def _names(out: str) -> list[str]:
    return [line.split()[0] for line in out.splitlines()[1:]]


def test_pod_list_shows_the_pods_of_volcano_jobs(vc):
    code, out, err = vc("pod", "list")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["Name", "Ready", "Status", "Restart", "Age"]
    assert _names(out) == ["infer-worker-0", "train-worker-0", "train-worker-1"]
    assert lines[2].split() == ["train-worker-0", "1/1", "Running", "0", "5m30s"]
    # Upstream's widths: the widest value plus 8.
    assert lines[0].index("Ready") == len("infer-worker-0") + 8


def test_pod_list_by_job_queue_and_namespace(vc):
    assert _names(vc("pod", "list", "-j", "train")[1]) == ["train-worker-0", "train-worker-1"]
    assert _names(vc("pod", "list", "-q", "research")[1]) == ["infer-worker-0", "plain-0"]
    assert _names(vc("pod", "list", "-n", "batch")[1]) == ["etl-worker-0"]
    lines = vc("pod", "list", "-A")[1].splitlines()
    assert lines[0].split()[0] == "Namespace" and lines[1].split()[:2] == ["batch", "etl-worker-0"]
    code, _, err = vc("pod", "list", "-j", "train", "-q", "research")
    assert code == 2 and err == "error: the input vcjob train does not match the queue research\n"
    assert _names(vc("pod", "list", "-l", "volcano.sh/job-name=infer")[1]) == ["infer-worker-0"]


def test_pod_list_output_formats(vc, snapshot):
    assert vc("pod", "list", "-j", "train", "-o", "name")[1] == "pod/train-worker-0\npod/train-worker-1\n"
    wide = vc("pod", "list", "-j", "train", "-o", "wide")[1].splitlines()
    assert wide[0].split()[-4:] == ["IP", "Node", "Nominated", "Node"]
    assert wide[2].split()[-2:] == ["n2", "<none>"]
    assert vc("pod", "list", "--no-headers", "-j", "train")[1].splitlines()[0].startswith("train-worker-0 ")
    assert vc("pod", "list", "-A", "--cluster", str(snapshot))[1] == vc("pod", "list", "-A")[1]
    assert vc("pod", "list", "-j", "nothing")[2] == "No resources found\n"


def test_pod_status_follows_kubectl_print_pod():
    row = lambda p: pod_row(p, NOW)  # noqa: E731
    assert row(pod("a", phase="Pending", node=""))["status"] == "Pending"
    gated = pod("a", phase="Pending", node="", conditions=[{"type": "PodScheduled", "status": "False",
                                                            "reason": "SchedulingGated"}])
    assert row(gated)["status"] == "SchedulingGated"
    waiting = pod("a", containerStatuses=[{"name": "c", "ready": False, "restartCount": 3,
                                           "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                                           "lastState": {"terminated": {"finishedAt": "2024-01-01T00:05:00Z"}}}])
    r = row(waiting)
    assert (r["status"], r["ready"], r["restarts"]) == ("CrashLoopBackOff", "0/1", "3 (30s ago)")
    failed = pod("a", phase="Failed", containerStatuses=[{"name": "c", "state": {"terminated": {"exitCode": 2}}}])
    assert row(failed)["status"] == "ExitCode:2"
    terminating = pod("a")
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:05:00Z"
    assert row(terminating)["status"] == "Terminating"
    init = pod("a", phase="Pending", initContainerStatuses=[{"name": "i", "state": {"running": {}}}])
    init["spec"]["initContainers"] = [{"name": "i", "image": "x"}]
    assert row(init)["status"] == "Init:0/1"
    assert row(pod("a", phase="Succeeded", reason="Evicted"))["status"] == "Evicted"
