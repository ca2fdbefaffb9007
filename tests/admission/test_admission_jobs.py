"""Job admission: upstream's mutating and validating webhook rules, each with its message."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.store import InMemoryStore, Invalid


def container(name: str = "c", cpu: str = "1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "resources": {"requests": {"cpu": cpu}}, **extra}


def task(name: str | None = "worker", replicas: Any = 2, **extra: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"replicas": replicas,
                         "template": {"spec": {"containers": [container()], "restartPolicy": "OnFailure"}}}
    if name is not None:
        t["name"] = name
    t.update(extra)
    return t


def job(name: str = "j", tasks: Any = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"tasks": [task()] if tasks is None else tasks, **spec}}


def queue(name: str, state: str = "Open", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": spec, "status": {"state": state}}


def rejection(store: InMemoryStore, obj: dict[str, Any]) -> Invalid:
    with pytest.raises(Invalid) as e:
        store.create(obj)
    return e.value


def assert_rejected(store: InMemoryStore, obj: dict[str, Any], field: str, message: str) -> Invalid:
    err = rejection(store, obj)
    name = obj["metadata"]["name"]
    assert str(err).startswith(f"Job ns/{name}: "), str(err)
    assert any(f == field and message in m for f, m in err.errors), err.errors
    return err


# ----------------------------------------------------------------------------- defaults


def test_defaults_of_the_mutating_webhook(store: InMemoryStore) -> None:
    created = store.create(job(tasks=[task(None, 3), task(None, 2, minAvailable=1)]))
    spec = created["spec"]
    assert spec["queue"] == "default"
    assert spec["schedulerName"] == "volcano"
    assert spec["maxRetry"] == 3
    assert [t["name"] for t in spec["tasks"]] == ["default0", "default1"]
    assert [t["minAvailable"] for t in spec["tasks"]] == [3, 1]
    assert [t["maxRetry"] for t in spec["tasks"]] == [3, 3]
    assert spec["minAvailable"] == 4
    assert "plugins" not in spec


def test_explicit_values_are_kept_but_zero_max_retry_and_min_available_are_defaulted(store: InMemoryStore) -> None:
    store.create(queue("q"))
    created = store.create(job(queue="q", schedulerName="other", maxRetry=0, minAvailable=0,
                               tasks=[task("a", 4, minAvailable=2, maxRetry=7)]))
    spec = created["spec"]
    assert (spec["queue"], spec["schedulerName"], spec["maxRetry"], spec["minAvailable"]) == ("q", "other", 3, 2)
    assert spec["tasks"][0]["maxRetry"] == 7
    created = store.create(job("k", minAvailable=1, maxRetry=5))
    assert (created["spec"]["minAvailable"], created["spec"]["maxRetry"]) == (1, 5)


def test_scheduler_name_default_is_the_first_configured_one() -> None:
    s = InMemoryStore(admission=VolcanoAdmission(scheduler_names=("vc-a", "vc-b")))
    s.create(queue("default"))
    assert s.create(job())["spec"]["schedulerName"] == "vc-a"


def test_partition_policy_sets_task_min_available(store: InMemoryStore) -> None:
    t = task("w", 6, partitionPolicy={"totalPartitions": 3, "partitionSize": 2, "minPartitions": 2})
    u = task("v", 4, partitionPolicy={"totalPartitions": 2, "partitionSize": 2})
    created = store.create(job(tasks=[t, u]))
    assert [x["minAvailable"] for x in created["spec"]["tasks"]] == [4, 4]
    assert created["spec"]["minAvailable"] == 8


def test_host_network_templates_get_cluster_first_with_host_net(store: InMemoryStore) -> None:
    t = task()
    t["template"]["spec"]["hostNetwork"] = True
    created = store.create(job(tasks=[t, task("other")]))
    assert created["spec"]["tasks"][0]["template"]["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert "dnsPolicy" not in created["spec"]["tasks"][1]["template"]["spec"]


@pytest.mark.parametrize(("plugins", "expected"), [
    ({"pytorch": ["--master=worker"]}, {"pytorch": ["--master=worker"], "svc": []}),
    ({"tensorflow": []}, {"tensorflow": [], "svc": []}),
    ({"mpi": ["--master=worker"]}, {"mpi": ["--master=worker"], "svc": [], "ssh": []}),
    ({"mpi": ["--master=worker"], "svc": ["--x"], "ssh": ["--y"]}, {"mpi": ["--master=worker"], "svc": ["--x"],
                                                                   "ssh": ["--y"]}),
    ({"env": []}, {"env": []}),
    ({"ray": []}, {"ray": [], "svc": []}),
    ({"hcclrank": []}, {"hcclrank": []}),
])
def test_distributed_plugins_get_their_dependencies(store: InMemoryStore, plugins: dict[str, list[str]],
                                                    expected: dict[str, list[str]]) -> None:
    assert store.create(job(plugins=plugins))["spec"]["plugins"] == expected


# ----------------------------------------------------------------------------- upstream's invalid examples

UPSTREAM_INVALID = {
    "duplicatedTaskName": ("""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: test-job-webhook-disallow}
spec:
  schedulerName: volcano
  minAvailable: 4
  tasks:
    - replicas: 2
      name: task-1
      template:
        metadata: {name: web-1}
        spec:
          containers: [{image: nginx, imagePullPolicy: IfNotPresent, name: nginx, resources: {requests: {cpu: "1"}}}]
          restartPolicy: OnFailure
    - replicas: 2
      name: task-1
      template:
        metadata: {name: web-1}
        spec:
          containers: [{image: nginx, imagePullPolicy: IfNotPresent, name: nginx, resources: {requests: {cpu: "1"}}}]
          restartPolicy: OnFailure
""", "spec.tasks[1].name", "duplicated task name 'task-1'"),
    "duplicatedPolicyEvent": ("""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: test-job-webhook-disallow}
spec:
  schedulerName: volcano
  minAvailable: 1
  tasks:
    - replicas: 2
      name: task-1
      template:
        metadata: {name: web-1}
        spec:
          containers: [{image: nginx, imagePullPolicy: IfNotPresent, name: nginx, resources: {requests: {cpu: "1"}}}]
          restartPolicy: OnFailure
  policies:
    - event: PodFailed
      action: RestartJob
    - event: PodFailed
      action: AbortJob
""", "spec.policies[1].event", "duplicate event PodFailed across different policy"),
    "minAvailable": ("""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: test-job-webhook-disallow}
spec:
  schedulerName: volcano
  minAvailable: 5
  tasks:
    - replicas: 2
      name: task-1
      template:
        metadata: {name: web-1}
        spec:
          containers: [{image: nginx, imagePullPolicy: IfNotPresent, name: nginx, resources: {requests: {cpu: "1"}}}]
          restartPolicy: OnFailure
    - replicas: 2
      name: task-2
      template:
        metadata: {name: web-2}
        spec:
          containers: [{image: nginx, imagePullPolicy: IfNotPresent, name: nginx, resources: {requests: {cpu: "1"}}}]
          restartPolicy: OnFailure
""", "spec.minAvailable", "job 'minAvailable' should not be greater than total replicas in tasks"),
}


@pytest.mark.parametrize("case", sorted(UPSTREAM_INVALID))
def test_upstream_invalid_examples_are_denied(store: InMemoryStore, case: str) -> None:
    text, field, message = UPSTREAM_INVALID[case]
    obj = yaml.safe_load(text)
    err = rejection(store, obj)
    assert err.field == field
    assert str(err) == f"Job default/test-job-webhook-disallow: {field}: {message}"


# ----------------------------------------------------------------------------- validation rules, one by one


def _long(n: int) -> str:
    return "a" * n


CREATE_RULES: list[tuple[str, dict[str, Any], str, str]] = [
    ("no tasks", job(tasks=[]), "spec.tasks", "No task specified in job spec"),
    ("mpi master missing", job(plugins={"mpi": ["--master=boss", "--worker=worker"]}), "spec.plugins.mpi",
     "The specified mpi master task was not found"),
    ("mpi default master missing", job(plugins={"mpi": []}), "spec.plugins.mpi",
     "The specified mpi master task was not found (no task named 'master')"),
    ("network topology tier and name", job(networkTopology={"highestTierAllowed": 1, "highestTierName": "rack"}),
     "spec.networkTopology", "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology "
                             "simultaneously"),
    ("network topology mode", job(networkTopology={"mode": "medium"}), "spec.networkTopology.mode",
     'Unsupported value: "medium"'),
    ("network topology tier name", job(networkTopology={"highestTierName": _long(254)}),
     "spec.networkTopology.highestTierName", "must be no more than 253 characters"),
    ("network topology negative tier", job(networkTopology={"highestTierAllowed": -1}),
     "spec.networkTopology.highestTierAllowed", "Invalid value: -1: must be greater than or equal to 0"),
    ("task name not DNS-1123", job(tasks=[task("Worker_1")]), "spec.tasks[0].name",
     'Invalid value: "Worker_1": a lowercase RFC 1123 label must consist of lower case alphanumeric characters'),
    ("task name too long", job(tasks=[task(_long(64))]), "spec.tasks[0].name", "must be no more than 63 characters"),
    ("negative replicas", job(tasks=[task(replicas=-1)]), "spec.tasks[0].replicas",
     "'replicas' must be >= 0 in task: worker"),
    ("negative task minAvailable", job(tasks=[task(minAvailable=-1)]), "spec.tasks[0].minAvailable",
     "'minAvailable' must be >= 0 in task: worker"),
    ("task minAvailable above replicas", job(tasks=[task(replicas=2, minAvailable=3)]), "spec.tasks[0].minAvailable",
     "'minAvailable' is greater than 'replicas' in task: worker, job: j"),
    ("negative task maxRetry", job(tasks=[task(maxRetry=-2)]), "spec.tasks[0].maxRetry",
     "'maxRetry' cannot be less than zero in task: worker"),
    ("duplicated task name", job(tasks=[task("a"), task("b"), task("a")]), "spec.tasks[2].name",
     "duplicated task name 'a'"),
    ("pod name too long", job(name=_long(55), tasks=[task("abcdefghij")]), "spec.tasks[0].name",
     f"create pod with name {_long(55)}-abcdefghij-0 validate failed [name part must be no more than 63 characters]"),
    ("job name too long for a qualified name", job(name=_long(70)), "metadata.name",
     f"create job with name {_long(70)} validate failed [name part must be no more than 63 characters]"),
    ("negative minAvailable", job(minAvailable=-1), "spec.minAvailable", "job 'minAvailable' must be >= 0"),
    ("minAvailable above replicas", job(minAvailable=3), "spec.minAvailable",
     "job 'minAvailable' should not be greater than total replicas in tasks"),
    ("negative maxRetry", job(maxRetry=-1), "spec.maxRetry", "'maxRetry' cannot be less than zero"),
    ("negative ttl", job(ttlSecondsAfterFinished=-5), "spec.ttlSecondsAfterFinished",
     "'ttlSecondsAfterFinished' cannot be less than zero"),
    ("minSuccess below one", job(minSuccess=0), "spec.minSuccess",
     "Invalid value: 0: must be greater than or equal to 1"),
    ("queue name syntax", job(queue="Bad_Queue"), "spec.queue", "a lowercase RFC 1123 subdomain"),
    ("priority class syntax", job(priorityClassName="High"), "spec.priorityClassName",
     "a lowercase RFC 1123 subdomain"),
    ("scheduler name length", job(schedulerName=_long(64)), "spec.schedulerName", "must be no more than 63 characters"),
    ("unknown plugin", job(plugins={"env": [], "magic": []}), "spec.plugins.magic", "unable to find job plugin: magic"),
    ("queue missing", job(queue="nowhere"), "spec.queue",
     'unable to find job queue: queues.scheduling.volcano.sh "nowhere" not found'),
    ("root queue", job(queue="root"), "spec.queue", "can not submit job to root queue"),
    # volumes (validateIO)
    ("volume without mountPath", job(volumes=[{"volumeClaimName": "pvc"}]), "spec.volumes[0].mountPath",
     "mountPath is required"),
    ("volume mountPath with colon", job(volumes=[{"mountPath": "/a:b", "volumeClaimName": "pvc"}]),
     "spec.volumes[0].mountPath", "must not contain ':'"),
    ("duplicated mountPath", job(volumes=[{"mountPath": "/d", "volumeClaimName": "a"},
                                          {"mountPath": "/d", "volumeClaimName": "b"}]),
     "spec.volumes[1].mountPath", "duplicated mountPath: /d"),
    ("volume without claim", job(volumes=[{"mountPath": "/d"}]), "spec.volumes[0]",
     "either VolumeClaim or VolumeClaimName must be specified"),
    ("volume with claim and name", job(volumes=[{"mountPath": "/d", "volumeClaimName": "a",
                                                 "volumeClaim": {"accessModes": ["ReadWriteOnce"]}}]),
     "spec.volumes[0]", "conflict: If you want to use an existing PVC, just specify VolumeClaimName."),
    ("bad claim name", job(volumes=[{"mountPath": "/d", "volumeClaimName": "Bad_Claim"}]),
     "spec.volumes[0].volumeClaimName", "invalid VolumeClaimName Bad_Claim : [a lowercase RFC 1123 subdomain"),
    # dependsOn
    ("dependsOn unknown task", job(tasks=[task("a", dependsOn={"name": ["ghost"]})]),
     "spec.tasks[0].dependsOn.name[0]",
     "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG): task 'ghost' does not exist"),
    ("dependsOn cycle", job(tasks=[task("a", dependsOn={"name": ["b"]}), task("b", dependsOn={"name": ["a"]})]),
     "spec.tasks", "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG): tasks a, b"),
    ("dependsOn itself", job(tasks=[task("a", dependsOn={"name": ["a"]})]), "spec.tasks",
     "doesn't form a directed acyclic graph(DAG)"),
    # partition policy
    ("partition total", job(tasks=[task(partitionPolicy={"totalPartitions": 0, "partitionSize": 1})]),
     "spec.tasks[0].partitionPolicy.totalPartitions",
     "'TotalPartitions' must be greater than 0 in task: worker, job: j"),
    ("partition size", job(tasks=[task(partitionPolicy={"totalPartitions": 2, "partitionSize": 0})]),
     "spec.tasks[0].partitionPolicy.partitionSize", "'PartitionSize' must be greater than 0 in task: worker, job: j"),
    ("partition replicas", job(tasks=[task(replicas=3, partitionPolicy={"totalPartitions": 2, "partitionSize": 2})]),
     "spec.tasks[0].replicas", "'Replicas' are not equal to TotalPartitions*PartitionSize in task: worker, job: j"),
    ("partition minAvailable", job(tasks=[task(replicas=4, minAvailable=3, partitionPolicy={
        "totalPartitions": 2, "partitionSize": 2, "minPartitions": 1})]),
     "spec.tasks[0].minAvailable",
     "'MinAvailable' is not equal to MinPartitions*PartitionSize in task: worker, job: j"),
    ("partition topology", job(tasks=[task(replicas=2, partitionPolicy={
        "totalPartitions": 1, "partitionSize": 2, "networkTopology": {"highestTierAllowed": 1,
                                                                      "highestTierName": "x"}})]),
     "spec.tasks[0].partitionPolicy.networkTopology", "must not specify 'highestTierAllowed' and 'highestTierName'"),
    # NUMA topology policy
    ("topology policy value", job(tasks=[task(topologyPolicy="always")]), "spec.tasks[0].topologyPolicy",
     'Unsupported value: "always"'),
    ("topology policy needs whole cpus", job(tasks=[task(topologyPolicy="single-numa-node", template={
        "spec": {"containers": [container(cpu="1500m")]}})]),
     "spec.tasks[0].template.spec.containers[0].resources.requests.cpu",
     "the cpu request isn't an integer in spec.task[0] container[0]."),
    # shape
    ("replicas as a string", job(tasks=[task(replicas="2")]), "spec.tasks[0].replicas",
     'Invalid value: "2": expected an integer'),
    ("tasks not a list", job(tasks={"a": 1}), "spec.tasks", "expected a list"),
    ("spec missing", {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                      "metadata": {"name": "j", "namespace": "ns"}}, "spec", "Required value"),
]


@pytest.mark.parametrize(("obj", "field", "message"), [c[1:] for c in CREATE_RULES], ids=[c[0] for c in CREATE_RULES])
def test_create_rule(store: InMemoryStore, obj: dict[str, Any], field: str, message: str) -> None:
    assert_rejected(store, copy.deepcopy(obj), field, message)


POLICY_RULES: list[tuple[str, list[dict[str, Any]], str, str]] = [
    ("event and exitCode", [{"event": "PodFailed", "exitCode": 3, "action": "RestartJob"}], "[0]",
     "must not specify event and exitCode simultaneously"),
    ("neither event nor exitCode", [{"action": "RestartJob"}], "[0]", "either event and exitCode should be specified"),
    ("internal event", [{"event": "OutOfSync", "action": "RestartJob"}], "[0].event",
     'Invalid value: "OutOfSync": invalid policy event; valid events are [* PodFailed'),
    ("unknown event", [{"events": ["PodFailed", "Boom"], "action": "RestartJob"}], "[0].events[1]",
     'Invalid value: "Boom": invalid policy event'),
    ("internal action", [{"event": "PodFailed", "action": "SyncJob"}], "[0].action",
     'Invalid value: "SyncJob": invalid policy action; valid events are'),
    ("missing action", [{"event": "PodFailed"}], "[0].action", 'Invalid value: "": invalid policy action'),
    ("exitCode policy with bad action", [{"exitCode": 2, "action": "Explode"}], "[0].action",
     "invalid policy action"),
    ("duplicate event in events", [{"events": ["PodFailed"], "action": "RestartJob"},
                                   {"events": ["PodEvicted", "PodFailed"], "action": "AbortJob"}],
     "[1].events[1]", "duplicate event PodFailed across different policy"),
    ("exit code zero", [{"exitCode": 0, "action": "RestartJob"}], "[0].exitCode", "0 is not a valid error code"),
    ("duplicate exit code", [{"exitCode": 3, "action": "RestartJob"}, {"exitCode": 3, "action": "AbortJob"}],
     "[1].exitCode", "duplicate exitCode 3"),
    ("any event with others", [{"event": "*", "action": "RestartJob"}, {"event": "PodFailed", "action": "AbortJob"}],
     "", "if there's * here, no other policy should be here"),
    ("bad timeout", [{"event": "PodPending", "action": "RestartJob", "timeout": "soon"}], "[0].timeout",
     "Invalid value: \"soon\""),
]


@pytest.mark.parametrize(("policies", "suffix", "message"), [c[1:] for c in POLICY_RULES],
                         ids=[c[0] for c in POLICY_RULES])
@pytest.mark.parametrize("level", ["job", "task"])
def test_policy_rule(store: InMemoryStore, level: str, policies: list[dict[str, Any]], suffix: str,
                     message: str) -> None:
    if level == "job":
        obj, base = job(policies=copy.deepcopy(policies)), "spec.policies"
    else:
        obj, base = job(tasks=[task(policies=copy.deepcopy(policies))]), "spec.tasks[0].policies"
    assert_rejected(store, obj, base + suffix, message)


def test_valid_policies_pass(store: InMemoryStore) -> None:
    store.create(job(policies=[{"event": "PodEvicted", "action": "RestartJob"},
                               {"events": ["PodFailed", "Unknown"], "action": "AbortJob"},
                               {"exitCode": 137, "action": "RestartTask"},
                               {"event": "PodPending", "action": "TerminateJob", "timeout": "10m"}],
                     tasks=[task(policies=[{"event": "TaskCompleted", "action": "CompleteJob"}])]))
    store.create(job("any", policies=[{"event": "*", "action": "RestartJob"}]))


POD_TEMPLATE_RULES: list[tuple[str, dict[str, Any], str, str]] = [
    ("no containers", {"spec": {"containers": []}}, "spec.containers", "Required value"),
    ("no spec", {}, "spec.containers", "Required value"),
    ("container name", {"spec": {"containers": [container("Web_1")]}}, "spec.containers[0].name",
     'Invalid value: "Web_1": a lowercase RFC 1123 label'),
    ("duplicate container", {"spec": {"containers": [container(), container()]}}, "spec.containers[1].name",
     'Duplicate value: "c"'),
    ("image", {"spec": {"containers": [{"name": "c"}]}}, "spec.containers[0].image", "Required value"),
    ("quantity", {"spec": {"containers": [container(cpu="lots")]}}, "spec.containers[0].resources.requests.cpu",
     'Invalid value: "lots": quantities must match the regular expression'),
    ("negative quantity", {"spec": {"containers": [container(cpu="-1")]}},
     "spec.containers[0].resources.requests.cpu", 'Invalid value: "-1": must be greater than or equal to 0'),
    ("request above limit", {"spec": {"containers": [{"name": "c", "image": "i", "resources": {
        "requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]}}, "spec.containers[0].resources.requests.cpu",
     'Invalid value: "2": must be less than or equal to cpu limit of 1'),
    ("resource name", {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"gpu": 1}}}]}},
     "spec.containers[0].resources.requests.gpu", "must be a standard resource type or fully qualified"),
    ("restart policy", {"spec": {"containers": [container()], "restartPolicy": "Sometimes"}}, "spec.restartPolicy",
     'Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"'),
    ("dns policy", {"spec": {"containers": [container()], "dnsPolicy": "Whatever"}}, "spec.dnsPolicy",
     'Unsupported value: "Whatever"'),
    ("unknown volume", {"spec": {"containers": [container(volumeMounts=[{"name": "data", "mountPath": "/d"}])]}},
     "spec.containers[0].volumeMounts[0].name", 'Not found: "data"'),
    ("mount path", {"spec": {"volumes": [{"name": "data", "emptyDir": {}}],
                             "containers": [container(volumeMounts=[{"name": "data"}])]}},
     "spec.containers[0].volumeMounts[0].mountPath", "Required value"),
    ("duplicate volume", {"spec": {"volumes": [{"name": "v"}, {"name": "v"}], "containers": [container()]}},
     "spec.volumes[1].name", 'Duplicate value: "v"'),
    ("port", {"spec": {"containers": [container(ports=[{"containerPort": 70000}])]}},
     "spec.containers[0].ports[0].containerPort", "must be between 1 and 65535, inclusive"),
    ("protocol", {"spec": {"containers": [container(ports=[{"containerPort": 80, "protocol": "ICMP"}])]}},
     "spec.containers[0].ports[0].protocol", 'Unsupported value: "ICMP"'),
    ("env name", {"spec": {"containers": [container(env=[{"name": "A=B", "value": "1"}])]}},
     "spec.containers[0].env[0].name", "a valid environment variable name"),
    ("grace", {"spec": {"containers": [container()], "terminationGracePeriodSeconds": -1}},
     "spec.terminationGracePeriodSeconds", "must be greater than or equal to 0"),
    ("node selector", {"spec": {"containers": [container()], "nodeSelector": {"zone": "a b"}}},
     "spec.nodeSelector[zone]", "a valid label must be an empty string"),
    ("template label", {"metadata": {"labels": {"bad key!": "x"}}, "spec": {"containers": [container()]}},
     "metadata.labels", 'Invalid value: "bad key!"'),
    ("toleration", {"spec": {"containers": [container()], "tolerations": [{"key": "k", "operator": "Maybe"}]}},
     "spec.tolerations[0].operator", "got 'Maybe'; expected one of Equal, Exists"),
]


@pytest.mark.parametrize(("template", "field", "message"), [c[1:] for c in POD_TEMPLATE_RULES],
                         ids=[c[0] for c in POD_TEMPLATE_RULES])
def test_pod_template_rule(store: InMemoryStore, template: dict[str, Any], field: str, message: str) -> None:
    assert_rejected(store, job(tasks=[task(template=copy.deepcopy(template))]), f"spec.tasks[0].template.{field}",
                    message)


def test_queue_state_and_hierarchy(store: InMemoryStore) -> None:
    store.create(queue("closed", state="Closed"))
    assert_rejected(store, job(queue="closed"), "spec.queue",
                    "can only submit job to queue with state `Open`, queue `closed` status is `Closed`")
    store.create(queue("parent"))
    store.create(queue("child", parent="parent"))
    assert_rejected(store, job(queue="parent"), "spec.queue",
                    "can only submit job to leaf queue, queue `parent` has 1 child queues")
    assert store.create(job(queue="child"))["spec"]["queue"] == "child"


def test_a_queue_the_controller_has_not_opened_yet_accepts_jobs(store: InMemoryStore) -> None:
    store.create({"kind": "Queue", "metadata": {"name": "fresh"}})
    store.create(job(queue="fresh"))


def test_all_problems_are_reported_together(store: InMemoryStore) -> None:
    err = rejection(store, job(minAvailable=9, maxRetry=-1, tasks=[task("Bad")]))
    fields = [f for f, _ in err.errors]
    assert fields == ["spec.maxRetry", "spec.tasks[0].name", "spec.minAvailable"]
    assert err.field == "spec.maxRetry"
    assert str(err).startswith("Job ns/j: spec.maxRetry: 'maxRetry' cannot be less than zero; spec.tasks[0].name: ")


def test_valid_dag_and_mpi_job_pass(store: InMemoryStore) -> None:
    tasks = [task("master", 1, dependsOn={"name": ["worker"]}), task("worker", 2)]
    created = store.create(job(tasks=tasks, plugins={"mpi": ["--master=master", "--worker=worker", "--port=22"]}))
    assert created["spec"]["plugins"] == {"mpi": ["--master=master", "--worker=worker", "--port=22"],
                                          "svc": [], "ssh": []}
    store.create(job("spaced", tasks=[task("boss", 1), task("worker")], plugins={"mpi": ["--master", "boss"]}))


def test_generic_metadata_rules_apply(store: InMemoryStore) -> None:
    assert_rejected(store, job(name="Upper"), "metadata.name", 'Invalid value: "Upper": a lowercase RFC 1123 subdomain')
    obj = job()
    obj["metadata"]["labels"] = {"app": "x" * 64}
    assert_rejected(store, obj, "metadata.labels[app]", "must be no more than 63 characters")


# ----------------------------------------------------------------------------- UPDATE


@pytest.fixture
def stored(store: InMemoryStore) -> dict[str, Any]:
    return store.create(job(tasks=[task("a", 2), task("b", 3)], volumes=[
        {"mountPath": "/data", "volumeClaim": {"accessModes": ["ReadWriteOnce"],
                                               "resources": {"requests": {"storage": "1Gi"}}}}]))


def test_update_may_change_replicas_min_available_and_priority_class(store: InMemoryStore,
                                                                     stored: dict[str, Any]) -> None:
    stored["spec"]["tasks"][0]["replicas"] = 5
    stored["spec"]["tasks"][0]["minAvailable"] = 4
    stored["spec"]["minAvailable"] = 6
    stored["spec"]["priorityClassName"] = "high"
    stored["spec"]["volumes"][0]["volumeClaimName"] = "j-volume-abcde"  # what the controller fills in
    stored["spec"]["tasks"][1]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = 1  # same value
    stored["metadata"]["annotations"] = {"note": "x"}
    out = store.update(stored)
    assert out["spec"]["tasks"][0]["replicas"] == 5


UPDATE_RULES: list[tuple[str, list[tuple[str, Any]], str, str]] = [
    ("queue", [("spec.queue", "other")], "spec.queue",
     "job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec` and "
     "`PriorityClassName`"),
    ("template", [("spec.tasks.1.template.spec.containers.0.image", "nginx")],
     "spec.tasks[1].template.spec.containers[0].image", "job updates may not change fields other than"),
    ("task name", [("spec.tasks.0.name", "z")], "spec.tasks[0].name", "job updates may not change fields"),
    ("negative replicas", [("spec.tasks.0.replicas", -1)], "spec.tasks[0].replicas",
     "'replicas' must be >= 0 in task: a"),
    ("negative task minAvailable", [("spec.tasks.0.minAvailable", -1)], "spec.tasks[0].minAvailable",
     "'minAvailable' must be >= 0 in task: a"),
    ("task minAvailable above replicas", [("spec.tasks.0.minAvailable", 3)], "spec.tasks[0].minAvailable",
     "'minAvailable' must be <= 'replicas' in task: a"),
    ("minAvailable above total", [("spec.minAvailable", 6)], "spec.minAvailable",
     "job 'minAvailable' must not be greater than total replicas"),
    ("negative minAvailable", [("spec.minAvailable", -1)], "spec.minAvailable", "job 'minAvailable' must be >= 0"),
    ("topology", [("spec.networkTopology", {"highestTierAllowed": 1, "highestTierName": "x"})],
     "spec.networkTopology", "must not specify 'highestTierAllowed' and 'highestTierName'"),
]


def _set(obj: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    cur: Any = obj
    for part in parts[:-1]:
        cur = cur[int(part)] if part.isdigit() else cur[part]
    cur[parts[-1]] = value


@pytest.mark.parametrize(("changes", "field", "message"), [c[1:] for c in UPDATE_RULES],
                         ids=[c[0] for c in UPDATE_RULES])
def test_update_rule(store: InMemoryStore, stored: dict[str, Any], changes: list[tuple[str, Any]], field: str,
                     message: str) -> None:
    for path, value in changes:
        _set(stored, path, value)
    with pytest.raises(Invalid) as e:
        store.update(stored)
    assert e.value.field == field
    assert message in e.value.message
    assert str(e.value).startswith(f"Job ns/j: {field}: ")


def test_update_may_not_add_or_remove_tasks(store: InMemoryStore, stored: dict[str, Any]) -> None:
    stored["spec"]["tasks"].append(task("c", 1))
    with pytest.raises(Invalid, match=r"spec\.tasks: job updates may not add or remove tasks"):
        store.update(stored)


def test_status_updates_skip_admission(store: InMemoryStore, stored: dict[str, Any]) -> None:
    stored["status"] = {"state": {"phase": "Running"}}
    stored["spec"]["queue"] = "ignored-by-status-writes"
    assert store.update_status(stored)["status"]["state"]["phase"] == "Running"


# ----------------------------------------------------------------------------- robustness

_json = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.text("ab-*", max_size=3),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("ab", max_size=2), inner,
                                                                                 max_size=3), max_leaves=8)
_FIELDS = ["tasks", "minAvailable", "maxRetry", "queue", "plugins", "policies", "volumes", "ttlSecondsAfterFinished",
           "tasks.0.replicas", "tasks.0.minAvailable", "tasks.0.template", "tasks.0.policies", "tasks.0.dependsOn",
           "tasks.0.partitionPolicy", "tasks.0.template.spec.containers", "tasks.0.template.spec.containers.0",
           "tasks.0.template.spec.containers.0.resources", "networkTopology", "tasks.0.topologyPolicy"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(_FIELDS), _json), max_size=4))
def test_malformed_jobs_are_rejected_not_crashed(store: InMemoryStore, edits: list[tuple[str, Any]]) -> None:
    obj = job(tasks=[task("a", 1)])
    for path, value in edits:
        try:
            _set(obj["spec"], path, value)
        except (KeyError, IndexError, TypeError):
            continue
    try:
        store.create(obj)
    except Invalid as e:
        assert e.errors and str(e).startswith("Job ns/j: ")
    else:
        store.delete("Job", "ns", "j")
