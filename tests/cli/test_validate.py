"""``pyvolcano validate``: one line per object, exit 0 when all are valid, 2 otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyvolcano.cli.validate import run_validate

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: team}}
spec:
  queue: {queue}
  minAvailable: {min_available}
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "1"}}}}}}]
          restartPolicy: OnFailure
"""

QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {{name: {name}}}
spec: {{weight: {weight}}}
"""


def job(name: str = "j", queue: str = "default", min_available: int = 1) -> str:
    return JOB.format(name=name, queue=queue, min_available=min_available)


def queue(name: str, weight: int = 1) -> str:
    return QUEUE.format(name=name, weight=weight)


def write(tmp_path: Path, name: str, *docs: str) -> Path:
    path = tmp_path / name
    path.write_text("\n---\n".join(docs), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, list[str]]:
    code = run_validate(list(paths))
    return code, capsys.readouterr().out.splitlines()


def test_valid_objects_print_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "a.yaml", queue("q"), job("j", "q"),
                 "\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n")
    code, lines = run(capsys, path)
    assert code == 0
    assert lines == ["OK Queue q", "OK Job team/j", "OK Pod default/p"]


def test_one_error_line_per_bad_object_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "b.yaml", job("good"), job("bad", min_available=5), queue("w", weight=-3))
    code, lines = run(capsys, path)
    assert code == 2
    assert lines == [
        "OK Job team/good",
        f"{path}: document 1: Job team/bad: spec.minAvailable: job 'minAvailable' should not be greater than "
        "total replicas in tasks",
        f"{path}: document 2: Queue w: spec.weight: Invalid value: -3: queue weight must be between 1 and 65535, "
        "inclusive",
    ]


def test_objects_may_refer_to_earlier_ones_across_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queues = write(tmp_path, "queues.yaml", queue("q"))
    jobs = write(tmp_path, "jobs.yaml", job("j", "q"))
    assert run(capsys, queues, jobs)[0] == 0
    code, lines = run(capsys, jobs, queues)
    assert code == 2
    assert lines[0] == (f"{jobs}: document 0: Job team/j: spec.queue: unable to find job queue: "
                        'queues.scheduling.volcano.sh "q" not found')
    assert lines[1] == "OK Queue q"


def test_builtin_queues_exist_and_may_be_redefined_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "c.yaml", job("a", "default"), queue("default", weight=3), queue("default"),
                 job("r", "root"))
    code, lines = run(capsys, path)
    assert code == 2
    assert lines[:2] == ["OK Job team/a", "OK Queue default"]
    assert lines[2] == f"{path}: document 2: Queue default: already exists"
    assert lines[3] == f"{path}: document 3: Job team/r: spec.queue: can not submit job to root queue"


def test_duplicate_objects_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "d.yaml", job("j"), job("j"))
    code, lines = run(capsys, path)
    assert code == 2
    assert lines[1] == f"{path}: document 1: Job team/j: already exists"


def test_unreadable_and_malformed_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.yaml"
    broken = tmp_path / "broken.yaml"
    broken.write_text(queue("ok") + "---\nkind: [unclosed\n", encoding="utf-8")
    scalar = write(tmp_path, "scalar.yaml", "just text\n", "apiVersion: v1\nmetadata: {name: x}\n")
    code, lines = run(capsys, missing, broken, scalar)
    assert code == 2
    assert lines[0].startswith(f"{missing}: cannot read: ")
    assert lines[1] == "OK Queue ok"
    assert lines[2].startswith(f"{broken}: not valid YAML at line ")
    assert lines[3] == f"{scalar}: document 0: got str; expected a Kubernetes object mapping"
    assert lines[4] == f"{scalar}: document 1: kind: Required value"


def test_list_documents_stand_for_their_items(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "list.yaml"
    q = "apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue"
    path.write_text(f"apiVersion: v1\nkind: List\nitems:\n- {{{q}, metadata: {{name: a}}}}\n"
                    f"- {{{q}, metadata: {{name: B}}}}\n", encoding="utf-8")
    code, lines = run(capsys, path)
    assert code == 2
    assert lines[0] == "OK Queue a"
    assert lines[1].startswith(f"{path}: document 0 items[1]: Queue B: metadata.name: Invalid value")


def test_empty_input_is_an_error_as_kubectl_says_no_objects_passed(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    empty = write(tmp_path, "empty.yaml", "---\n# nothing\n")
    assert run_validate([empty]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: {empty}: no objects passed to validate\n"


def test_upstream_invalid_job_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extra = "    - {name: worker, replicas: 1, template: {spec: {containers: [{name: c, image: i}]}}}\n"
    dup = job("test-job-webhook-disallow").replace("  tasks:\n", "  tasks:\n" + extra)
    path = write(tmp_path, "invalid.yaml", dup)
    code, lines = run(capsys, path)
    assert code == 2
    assert lines == [f"{path}: document 0: Job team/test-job-webhook-disallow: spec.tasks[1].name: "
                     "duplicated task name 'worker'"]


# --------------------------------------------------------------------------- kinds by apiVersion + kind

@pytest.mark.parametrize(("doc", "fragment"), [
    ("apiVersion: batch.volcano.sh/v1alpha1\nkind: Jobb\nmetadata: {name: j}\n",
     'Jobb default/j: no matches for kind "Jobb" in version "batch.volcano.sh/v1alpha1"; did you mean "Job"?'),
    ("apiVersion: batch.volcano.sh/v1alpha1\nkind: job\nmetadata: {name: j}\n",
     'no matches for kind "job" in version "batch.volcano.sh/v1alpha1"; did you mean "Job"? '
     '(kinds are case-sensitive)'),
    ("apiVersion: batch.volcano.sh/v1alpha1\nkind: Queue\nmetadata: {name: q}\n",
     'no matches for kind "Queue" in version "batch.volcano.sh/v1alpha1"'),
    ("apiVersion: v2\nkind: Node\nmetadata: {name: n}\n",
     'no matches for kind "Node" in version "v2"; did you mean "v1"?'),
    ("apiVersion: scheduling.volcano.sh/v1alpha1\nkind: Queue\nmetadata: {name: q}\n",
     'did you mean "scheduling.volcano.sh/v1beta1"?'),
    ("kind: Queue\nmetadata: {name: q}\n", "apiVersion: Required value"),
    ("apiVersion: v1\nkind: {}\nmetadata: {name: q}\n", "kind: Invalid value: {}: expected a string"),
    ("apiVersion: [v1]\nkind: Pod\nmetadata: {name: q}\n", 'apiVersion: Invalid value: ["v1"]: expected a string'),
])
def test_unknown_kinds_and_versions_of_known_groups_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               doc: str, fragment: str) -> None:
    code, lines = run(capsys, write(tmp_path, "k.yaml", doc))
    assert code == 2
    assert len(lines) == 1 and fragment in lines[0], lines


@pytest.mark.parametrize(("doc", "line"), [
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n",
     "NOT CHECKED ConfigMap default/c (v1): pyvolcano does not model v1 ConfigMap"),
    ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1}\n",
     "NOT CHECKED Deployment default/d (apps/v1): pyvolcano does not model the kinds of API group 'apps'"),
    ("apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {generateName: wf-}\n",
     "NOT CHECKED Workflow default/wf-* (argoproj.io/v1alpha1): pyvolcano does not model the kinds of API group "
     "'argoproj.io'"),
    ("apiVersion: bogus.io/v1\nkind: Job\nmetadata: {name: j}\nspec: {minAvailble: 1}\n",
     "NOT CHECKED Job default/j (bogus.io/v1): pyvolcano does not model the kinds of API group 'bogus.io'"),
    ("apiVersion: scheduling.k8s.io/v1beta1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: 1\n",
     "NOT CHECKED PriorityClass p (scheduling.k8s.io/v1beta1): scheduling.k8s.io/v1beta1 is no longer served "
     "(removed in Kubernetes 1.22); use scheduling.k8s.io/v1"),
])
def test_kinds_pyvolcano_does_not_model_are_reported_not_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                doc: str, line: str) -> None:
    assert run(capsys, write(tmp_path, "k.yaml", doc)) == (0, [line])


def test_batch_v1_job_is_a_kubernetes_job_not_a_volcano_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    k8s_job = ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: team}\n"
               "spec: {template: {spec: {containers: [{name: c, image: i}], restartPolicy: Never}}}\n")
    # Not stored as a Volcano Job: a Volcano Job of the same name is still created.
    code, lines = run(capsys, write(tmp_path, "k.yaml", k8s_job, job("j")))
    assert code == 0
    assert lines == ["NOT CHECKED Job team/j (batch/v1): pyvolcano does not model the kinds of API group 'batch'",
                     "OK Job team/j"]


# --------------------------------------------------------------------------- strict field validation

def test_unknown_fields_are_errors_with_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = job("j").replace("  minAvailable:", "  minAvailble:").replace("restartPolicy:", "schedulerNmae: x\n"
                                                                                          "          restartPolicy:")
    code, lines = run(capsys, write(tmp_path, "j.yaml", bad))
    assert code == 2
    assert lines == [f"{tmp_path / 'j.yaml'}: document 0: Job team/j: "
                     'spec.minAvailble: unknown field "minAvailble"; did you mean "minAvailable"?; '
                     'spec.tasks[0].template.spec.schedulerNmae: unknown field "schedulerNmae"; '
                     'did you mean "schedulerName"?']


@pytest.mark.parametrize(("doc", "fragment"), [
    ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec: {wieght: 2}\n",
     'spec.wieght: unknown field "wieght"; did you mean "weight"?'),
    ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g}\nspec: {minmember: 2}\n",
     'spec.minmember: unknown field "minmember"; did you mean "minMember"? (field names are case-sensitive)'),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, lables: {a: b}}\nspec: {containers: [{name: c, image: i}]}\n",
     'metadata.lables: unknown field "lables"; did you mean "labels"?'),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, resource: {}}]}\n",
     'spec.containers[0].resource: unknown field "resource"; did you mean "resources"?'),
    ("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec: {taints: [{key: a, effect: NoSchedule, efect: x}]}\n",
     'spec.taints[0].efect: unknown field "efect"; did you mean "effect"?'),
    ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: 1\nglobaldefault: true\n",
     'globaldefault: unknown field "globaldefault"; did you mean "globalDefault"?'),
    ("apiVersion: bus.volcano.sh/v1alpha1\nkind: Command\nmetadata: {name: c}\naction: AbortJob\nspec: {}\n",
     'spec: unknown field "spec"'),
])
def test_every_checked_kind_rejects_unknown_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   doc: str, fragment: str) -> None:
    code, lines = run(capsys, write(tmp_path, "f.yaml", doc))
    assert code == 2
    assert len(lines) == 1 and fragment in lines[0], lines


def test_free_form_maps_are_not_field_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {anything: x}, annotations: {b.io/c: d}}\n"
           "spec:\n  nodeSelector: {whatever: x}\n  containers: [{name: c, image: i, resources: {limits: "
           "{example.com/foo: 1}}}]\nstatus: {phase: Pending, podIP: 10.0.0.1}\n")
    assert run(capsys, write(tmp_path, "p.yaml", pod)) == (0, ["OK Pod default/p"])


# --------------------------------------------------------------------------- pods and priority classes

POD = "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec: {{{spec}}}\n"
CONTAINER = "containers: [{name: c, image: i, resources: {requests: {cpu: '%s'}}}]"


@pytest.mark.parametrize(("spec", "fragment"), [
    (CONTAINER % "1x", "spec.containers[0].resources.requests.cpu: Invalid value: \"1x\": quantities must match"),
    (CONTAINER % "NaN", "spec.containers[0].resources.requests.cpu: Invalid value: \"NaN\""),
    (CONTAINER % "\u0663", "spec.containers[0].resources.requests.cpu: Invalid value"),
    ("containers: []", "spec.containers: Required value"),
    ("nodeName: n", "spec.containers: Required value"),
    (CONTAINER % "1" + ", priority: 9223372036854775808", "spec.priority: Invalid value: 9223372036854775808: "
                                                          "expected a 32-bit integer"),
])
def test_pods_are_validated_as_the_api_server_validates_them(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             spec: str, fragment: str) -> None:
    code, lines = run(capsys, write(tmp_path, "p.yaml", POD.format(name="p", spec=spec)))
    assert code == 2
    assert len(lines) == 1 and fragment in lines[0], lines


def test_pod_naming_a_missing_priority_class_is_forbidden(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pc = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n"
    spec = (CONTAINER % "1") + ", priorityClassName: %s"
    path = write(tmp_path, "p.yaml", POD.format(name="a", spec=spec % "no-such-pc"), pc,
                 POD.format(name="b", spec=spec % "high"), POD.format(name="c", spec=spec % "system-node-critical"))
    code, lines = run(capsys, path)
    assert code == 2
    assert lines == [f"{path}: document 0: Pod default/a: no PriorityClass with name no-such-pc was found",
                     "OK PriorityClass high", "OK Pod default/b", "OK Pod default/c"]


def test_job_naming_a_missing_priority_class_is_admitted_with_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = job("j").replace("  queue:", "  priorityClassName: no-such-pc\n  queue:")
    pc = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: later}\nvalue: 10\n"
    later = job("k").replace("  queue:", "  priorityClassName: later\n  queue:")
    path = write(tmp_path, "j.yaml", bad, later, pc)
    code = run_validate([path])
    out, err = capsys.readouterr()
    assert code == 0  # upstream's job webhook does not look at the class; the pods are refused later
    assert out.splitlines() == ["OK Job team/j", "OK Job team/k", "OK PriorityClass later"]
    assert err.splitlines() == [  # warnings go to stderr, results to stdout
        f"warning: {path}: document 0: Job team/j: spec.priorityClassName: no PriorityClass with name "
        "no-such-pc was found; the API server's Priority admission will refuse to create the job's pods"]


@pytest.mark.parametrize(("doc", "fragment"), [
    ("metadata: {name: p}\nvalue: 100000000000000000000\n", "value: Invalid value: 100000000000000000000: expected a "
                                                            "32-bit integer"),
    ("metadata: {name: p}\nvalue: 1000000001\n", "value: Forbidden: maximum allowed value of a user defined priority "
                                                 "is 1000000000"),
    ("metadata: {name: system-mine}\nvalue: 1\n", "metadata.name: Forbidden: priority class names with 'system-' "
                                                  "prefix are reserved"),
    ("metadata: {name: p}\nvalue: 1\npreemptionPolicy: Sometimes\n", "preemptionPolicy: Unsupported value"),
])
def test_priority_classes_are_validated(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: str,
                                        fragment: str) -> None:
    code, lines = run(capsys, write(tmp_path, "pc.yaml", "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                                    + doc))
    assert code == 2
    assert len(lines) == 1 and fragment in lines[0], lines


def test_only_one_priority_class_may_be_the_global_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pc = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: %s}\nvalue: 1\nglobalDefault: true\n"
    path = write(tmp_path, "pc.yaml", pc % "a", pc % "b")
    code, lines = run(capsys, path)
    assert code == 2
    assert lines == ["OK PriorityClass a", f"{path}: document 1: PriorityClass b: PriorityClass a is already marked "
                                           "as default. Only one default can exist"]


def test_queue_weight_beyond_int32_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = run(capsys, write(tmp_path, "q.yaml", queue("q", 2**70)))
    assert code == 2
    assert "spec.weight: Invalid value: 1180591620717411303424: expected a 32-bit integer" in lines[0]


def test_a_queue_named_by_a_list_is_an_error_not_a_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: [root]}\n"
    code, lines = run(capsys, write(tmp_path, "q.yaml", doc))
    assert code == 2 and len(lines) == 1 and "metadata.name" in lines[0]


def _configmap(key: str, text: str) -> str:
    import yaml

    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
                           "data": {key: text}})


def test_a_scheduler_configuration_in_a_configmap_is_checked_with_its_plugins(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]
                                                                             ) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(_configmap("volcano-scheduler.conf", "actions: allocate\ntiers:\n- plugins:\n  - name: tdm\n"
                               "    arguments: {tdm.revocable-zone.rz1: '10:00-21:00'}\n"))
    assert run_validate([good]) == 0
    assert "OK ConfigMap volcano-system/volcano-scheduler-configmap (volcano-scheduler.conf)" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text(_configmap("volcano-scheduler.conf", "actions: allocate\ntiers:\n- plugins:\n  - name: usage\n"
                              "metrics: {type: prometheus}\n"))
    assert run_validate([bad]) == 2
    assert "data.volcano-scheduler.conf: metrics.address: metrics address is empty" in capsys.readouterr().out


def test_an_admission_configuration_in_a_configmap_is_checked(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(_configmap("volcano-admission.conf", "resourceGroups:\n- resourceGroup: x\n"
                              "  object: {key: label, value: [a]}\n"))
    assert run_validate([bad]) == 2
    assert "resourceGroups[0].object.key" in capsys.readouterr().out


def test_storage_objects_are_checked_as_the_api_server_checks_them(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "s.yaml",
                 "\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: local}\n"
                 "provisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n",
                 "\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: team}\n"
                 "spec: {accessModes: [ReadWriteOne], resources: {requests: {storage: 1Gi}}}\n",
                 "\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: odd}\n"
                 "provisioner: x\nvolumeBindingMode: Later\n")
    code, lines = run(capsys, path)
    assert code == 2
    assert lines == [
        "OK StorageClass local",
        f"{path}: document 1: PersistentVolumeClaim team/data: spec.accessModes: Unsupported value: "
        '"ReadWriteOne": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
        f"{path}: document 2: StorageClass odd: volumeBindingMode: Unsupported value: \"Later\": supported values: "
        '"Immediate", "WaitForFirstConsumer"',
    ]


def test_a_queue_affinity_is_admitted_with_a_warning_that_only_nodegroup_honours_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    affine = queue("q").replace("spec: {weight: 1}", "spec:\n  weight: 1\n  affinity:\n    nodeGroupAffinity:\n"
                                "      requiredDuringSchedulingIgnoredDuringExecution: [group-a]")
    path = write(tmp_path, "q.yaml", affine)
    assert run_validate([path]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["OK Queue q"]
    assert err.splitlines() == [f"warning: {path}: document 0: Queue q: spec.affinity (node-group affinity) is "
                                "honoured only by the nodegroup plugin"]


def test_a_jobs_fields_only_a_plugin_acts_on_are_warned_about_at_their_path_in_the_job(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    numa = job("j").replace("      replicas: 2\n", "      replicas: 2\n      topologyPolicy: single-numa-node\n")
    numa = numa.replace("metadata: {name: j, namespace: team}",
                        "metadata: {name: j, namespace: team, annotations: {volcano.sh/cooldown-time: 10m}}")
    inline = "          volumes: [{name: s, csi: {driver: inline.csi.io}}]\n"
    numa = numa.replace("        spec:\n", "        spec:\n" + inline)
    path = write(tmp_path, "j.yaml", numa)
    assert run_validate([path]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"warning: {path}: document 0: Job team/j: metadata.annotations[volcano.sh/cooldown-time] (a cooldown before "
        "preemption) is honoured only by the cdp plugin",
        f"warning: {path}: document 0: Job team/j: spec.tasks[0].topologyPolicy (a NUMA topology policy) is honoured "
        "only by the numa-aware plugin",
        f"warning: {path}: document 0: Job team/j: spec.tasks[0].template.spec.volumes[].csi (an inline CSI "
        "volume) is not acted on by pyvolcano yet; it is not counted against the node's CSI attach limit",
    ]


DRA = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: two, namespace: team}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {deviceClassName: gpu, count: 2}
    - name: nic
      exactly: {deviceClassName: nic, capacity: {requests: {bandwidth: 10G}}}
    constraints: [{requests: [gpus, nic], matchAttribute: gpu.example.com/numa}]
"""


def test_dra_objects_are_checked_and_unacted_fields_warned_about(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "dra.yaml", DRA)
    assert run_validate([path]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["OK DeviceClass gpu", "OK ResourceClaim team/two"]
    assert err.splitlines() == [
        f"warning: {path}: document 1: ResourceClaim team/two: spec.devices.requests[].exactly.capacity (a "
        "consumable-capacity request) is not acted on by pyvolcano yet; devices are allocated whole, as if it were "
        "absent"]


def test_a_dra_object_with_an_unknown_field_or_an_older_version_is_named(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    typo = DRA.replace("deviceClassName: gpu, count: 2", "deviceClass: gpu, count: 2")
    beta = "apiVersion: resource.k8s.io/v1beta2\nkind: DeviceClass\nmetadata: {name: old}\n"
    path = write(tmp_path, "dra.yaml", typo, beta)
    code, lines = run(capsys, path)
    assert code == 2
    assert lines[1] == (f'{path}: document 1: ResourceClaim team/two: spec.devices.requests[0].exactly.deviceClass: '
                        'unknown field "deviceClass"; did you mean "deviceClassName"?')
    assert lines[2] == ("NOT CHECKED DeviceClass old (resource.k8s.io/v1beta2): pyvolcano checks dynamic resource "
                        "allocation's objects in resource.k8s.io/v1, the version Kubernetes serves by default since "
                        "1.34")
