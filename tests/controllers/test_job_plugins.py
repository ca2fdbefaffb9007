"""Job plugins: the objects they create and the env vars, volumes and ports pods get."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from ctrl_harness import Harness, task, vcjob

from pyvolcano.controllers.job.plugins.base import FlagSet


def env_of(pod: dict[str, Any], container: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for e in pod["spec"]["containers"][container].get("env") or []:
        out[e["name"]] = e.get("value", e.get("valueFrom"))
    return out


def started(h: Harness, job: dict[str, Any]) -> None:
    h.create(job)
    h.set_pg_phase(job["metadata"]["name"], "Inqueue")


def pod(h: Harness, name: str) -> dict[str, Any]:
    return h.get("Pod", "default", name)


# ---------------------------------------------------------------------- flags
def test_go_flag_parsing() -> None:
    fs = FlagSet("x")
    fs.string("master", "master")
    fs.integer("port", 1)
    fs.boolean("on", False)
    fs.parse(["--master=m", "-port", "23", "--on", "rest", "--port=9"])
    assert fs.values == {"master": "m", "port": 23, "on": True}


def test_go_flag_parsing_keeps_values_before_an_error() -> None:
    fs = FlagSet("x")
    fs.string("master", "master")
    fs.integer("port", 1)
    fs.parse(["--master", "m", "--unknown", "--port=5"])
    assert fs.values == {"master": "m", "port": 1}


# ---------------------------------------------------------------------- env
def test_env_plugin_sets_task_index() -> None:
    h = Harness()
    job = vcjob("j", task("worker", 2), plugins={"env": []})
    job["spec"]["tasks"][0]["template"]["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
    started(h, job)
    p = pod(h, "j-worker-1")
    assert env_of(p) == {"VK_TASK_INDEX": "1", "VC_TASK_INDEX": "1"}
    assert p["spec"]["initContainers"][0]["env"] == [{"name": "VK_TASK_INDEX", "value": "1"},
                                                     {"name": "VC_TASK_INDEX", "value": "1"}]
    assert h.job("j")["status"]["controlledResources"]["plugin-env"] == "env"


# ---------------------------------------------------------------------- svc
def test_svc_plugin_objects_and_env() -> None:
    h = Harness()
    started(h, vcjob("j", task("ps", 1), task("my-worker", 2), plugins={"svc": ["--publish-not-ready-addresses"]}))
    svc = h.get("Service", "default", "j")
    assert svc["spec"] == {"clusterIP": "None", "publishNotReadyAddresses": True,
                           "selector": {"volcano.sh/job-name": "j", "volcano.sh/job-namespace": "default"}}
    assert svc["metadata"]["ownerReferences"][0]["kind"] == "Job"
    cm = h.get("ConfigMap", "default", "j-svc")
    assert cm["data"] == {
        "ps.host": "j-ps-0.j",
        "VC_PS_HOSTS": "j-ps-0.j",
        "VC_PS_NUM": "1",
        "my_worker.host": "j-my-worker-0.j\nj-my-worker-1.j",
        "VC_MY_WORKER_HOSTS": "j-my-worker-0.j,j-my-worker-1.j",
        "VC_MY_WORKER_NUM": "2",
    }
    np = h.get("NetworkPolicy", "default", "j")
    assert np["spec"]["policyTypes"] == ["Ingress"]
    p = pod(h, "j-my-worker-1")
    assert (p["spec"]["hostname"], p["spec"]["subdomain"]) == ("j-my-worker-1", "j")
    env = env_of(p)
    assert list(env) == ["VC_PS_HOSTS", "VC_PS_NUM", "VC_MY_WORKER_HOSTS", "VC_MY_WORKER_NUM"]
    assert env["VC_MY_WORKER_HOSTS"] == {"configMapKeyRef": {"name": "j-svc", "key": "VC_MY_WORKER_HOSTS"}}
    assert {"name": "j-svc", "configMap": {"name": "j-svc"}} in p["spec"]["volumes"]
    assert {"mountPath": "/etc/volcano", "name": "j-svc"} in p["spec"]["containers"][0]["volumeMounts"]


def test_svc_plugin_refreshes_hosts_on_scale_and_cleans_up() -> None:
    h = Harness()
    started(h, vcjob("j", task("worker", 2, min_available=1), minAvailable=1,
                     plugins={"svc": ["--disable-network-policy"]}))
    assert h.store.list("NetworkPolicy") == []
    # OnJobUpdate (the refresh) only runs once the job has left Pending.
    h.bind("j-worker-0")
    h.set_pod_phase("j-worker-0", "Running")
    assert h.phase("j") == "Running"
    job = h.job("j")
    job["spec"]["tasks"][0]["replicas"] = 3
    h.store.update(job)
    h.settle()
    assert h.get("ConfigMap", "default", "j-svc")["data"]["VC_WORKER_NUM"] == "3"
    h.command("AbortJob", "Job", "j")
    assert h.store.list("Service") == [] and h.store.list("ConfigMap") == []
    assert "plugin-svc" not in (h.job("j")["status"].get("controlledResources") or {})


def test_svc_plugin_without_hosts_env() -> None:
    h = Harness()
    started(h, vcjob("j", task("worker", 1), plugins={"svc": ["--inject-hosts-env=false"]}))
    assert env_of(pod(h, "j-worker-0")) == {}


# ---------------------------------------------------------------------- ssh
def test_ssh_plugin_secret_and_mount() -> None:
    h = Harness(seed=7)
    started(h, vcjob("j", task("worker", 2), plugins={"ssh": []}))
    secret = h.get("Secret", "default", "j-ssh")
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert set(data) == {"id_rsa", "id_rsa.pub", "authorized_keys", "config"}
    assert data["id_rsa"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    assert data["id_rsa.pub"].startswith("ssh-ed25519 ") and data["id_rsa.pub"] == data["authorized_keys"]
    assert data["config"] == (
        "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
        "Host j-worker-0\n  HostName j-worker-0.j\n  Port 22\n"
        "Host j-worker-1\n  HostName j-worker-1.j\n  Port 22\n"
    )
    p = pod(h, "j-worker-0")
    vol = next(v for v in p["spec"]["volumes"] if v["name"] == "j-ssh")
    assert vol["secret"]["defaultMode"] == 0o600
    assert [i["path"] for i in vol["secret"]["items"]] == [".ssh/id_rsa", ".ssh/id_rsa.pub", ".ssh/authorized_keys",
                                                           ".ssh/config"]
    assert {"mountPath": "/root/.ssh", "subPath": ".ssh", "name": "j-ssh"} in p["spec"]["containers"][0]["volumeMounts"]


def test_simulated_ssh_keys_are_reproducible_per_seed() -> None:
    def key(seed: int) -> str:
        h = Harness(seed=seed)
        h.create(vcjob("j", task("worker", 1), plugins={"ssh": []}))
        return str(h.get("Secret", "default", "j-ssh")["data"]["id_rsa.pub"])

    assert key(1) == key(1)
    assert key(1) != key(2)


def test_ssh_plugin_user_keys_and_port() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 1), plugins={"ssh": ["--ssh-private-key=PRIV", "--ssh-public-key=PUB",
                                                            "--ssh-port=2222", "--ssh-key-file-path=/home/u/.ssh"]}))
    data = {k: base64.b64decode(v).decode() for k, v in h.get("Secret", "default", "j-ssh")["data"].items()}
    assert (data["id_rsa"], data["id_rsa.pub"]) == ("PRIV", "PUB")
    assert "  Port 2222\n" in data["config"]
    h.set_pg_phase("j", "Inqueue")
    vol = next(v for v in pod(h, "j-worker-0")["spec"]["volumes"] if v["name"] == "j-ssh")
    assert vol["secret"]["defaultMode"] == 0o644


# ---------------------------------------------------------------------- pytorch
def test_pytorch_plugin_env_and_ports() -> None:
    h = Harness()
    started(h, vcjob("j", task("master", 1), task("worker", 2), plugins={"pytorch": ["--port=5000"]}))
    assert h.get("Service", "default", "j")  # admission adds svc
    master, worker = pod(h, "j-master-0"), pod(h, "j-worker-1")
    assert {k: v for k, v in env_of(master).items() if not k.startswith("VC_")} == {
        "MASTER_ADDR": "j-master-0.j", "MASTER_PORT": "5000", "WORLD_SIZE": "3", "RANK": "0"}
    assert env_of(worker)["RANK"] == "2"
    assert worker["spec"]["containers"][0]["ports"] == [{"name": "pytorchjob-port", "containerPort": 5000}]


def test_pytorch_plugin_custom_names_and_wait_for_master() -> None:
    h = Harness()
    started(h, vcjob("j", task("head", 1), task("node", 1),
                     plugins={"pytorch": ["--master=head", "--worker=node", "--wait-master-enabled"]}))
    node = pod(h, "j-node-0")
    assert env_of(node)["RANK"] == "1"
    assert env_of(node)["MASTER_ADDR"] == "j-head-0.j"
    assert [c["name"] for c in node["spec"]["initContainers"]] == ["wait-for-master"]
    assert "initContainers" not in pod(h, "j-head-0")["spec"]


# ---------------------------------------------------------------------- mpi
def test_mpi_plugin_host_list_and_ports() -> None:
    h = Harness()
    started(h, vcjob("j", task("master", 1), task("worker", 3), plugins={"mpi": []}))
    assert h.get("Secret", "default", "j-ssh")  # admission adds ssh and svc for mpi
    master = pod(h, "j-master-0")
    assert env_of(master)["MPI_HOST"] == "j-worker-0.j,j-worker-1.j,j-worker-2.j"
    assert {"name": "mpijob-port", "containerPort": 22} in master["spec"]["containers"][0]["ports"]
    worker = pod(h, "j-worker-0")
    assert "MPI_HOST" not in env_of(worker)
    assert worker["spec"]["containers"][0]["ports"] == [{"name": "mpijob-port", "containerPort": 22}]


# ---------------------------------------------------------------------- tensorflow
def test_tensorflow_plugin_tf_config() -> None:
    h = Harness()
    started(h, vcjob("j", task("ps", 1), task("worker", 2), plugins={"tensorflow": []}))
    raw = env_of(pod(h, "j-worker-1"))["TF_CONFIG"]
    assert raw == ('{"cluster":{"ps":["j-ps-0.j:2222"],"worker":["j-worker-0.j:2222","j-worker-1.j:2222"]},'
                   '"task":{"type":"worker","index":1}}')
    assert json.loads(env_of(pod(h, "j-ps-0"))["TF_CONFIG"])["task"] == {"type": "ps", "index": 0}


def test_tensorflow_single_pod_job_gets_nothing() -> None:
    h = Harness()
    started(h, vcjob("j", task("worker", 1), plugins={"tensorflow": []}))
    assert "TF_CONFIG" not in env_of(pod(h, "j-worker-0"))


# ---------------------------------------------------------------------- ray
def ray_task(name: str, replicas: int, container_name: str, **extra: Any) -> dict[str, Any]:
    t = task(name, replicas, **extra)
    t["template"]["spec"]["containers"][0]["name"] = container_name
    return t


def test_ray_plugin_head_service_ports_and_commands() -> None:
    h = Harness()
    started(h, vcjob("rc", ray_task("head", 1, "head"), ray_task("worker", 2, "worker"), plugins={"ray": []}))
    svc = h.get("Service", "default", "rc-head-svc")
    assert svc["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert svc["spec"] == {
        "selector": {"volcano.sh/job-name": "rc", "volcano.sh/job-namespace": "default",
                     "volcano.sh/task-spec": "head"},
        "ports": [{"name": "gcs", "port": 6379, "targetPort": "gcs", "protocol": "TCP"},
                  {"name": "dashboard", "port": 8265, "targetPort": "dashboard", "protocol": "TCP"},
                  {"name": "client-server", "port": 10001, "targetPort": "client-server", "protocol": "TCP"}],
    }
    assert h.get("Service", "default", "rc")  # admission adds svc, which gives the head its domain name
    head = pod(h, "rc-head-0")["spec"]["containers"][0]
    assert head["command"] == ["sh", "-c", "ray start --head --block --dashboard-host=0.0.0.0 --port=6379 "
                                           "--dashboard-port=8265 --ray-client-server-port=10001"]
    assert head["ports"] == [{"name": "gcs", "containerPort": 6379}, {"name": "dashboard", "containerPort": 8265},
                             {"name": "client-server", "containerPort": 10001}]
    worker = pod(h, "rc-worker-1")["spec"]["containers"][0]
    assert worker["command"] == ["sh", "-c", "ray start --block --address=rc-head-0.rc:6379"]
    assert "ports" not in worker
    assert h.job("rc")["status"]["controlledResources"]["plugin-ray"] == "ray"
    h.command("AbortJob", "Job", "rc")
    assert [s["metadata"]["name"] for s in h.store.list("Service")] == []
    assert "plugin-ray" not in (h.job("rc")["status"].get("controlledResources") or {})


def test_ray_plugin_flags_template_hostname_and_other_containers() -> None:
    h = Harness()
    head = ray_task("boss", 1, "ray-head")
    head["template"]["spec"]["containers"][0]["ports"] = [{"name": "mine", "containerPort": 7000}]
    head["template"]["spec"]["containers"].append({"name": "sidecar", "image": "busybox"})
    head["template"]["spec"]["hostname"] = "boss-host"
    started(h, vcjob("rc", head, ray_task("hands", 1, "ray-worker"), plugins={"ray": [
        "--head=boss", "--headContainer=ray-head", "--worker=hands", "--workerContainer=ray-worker",
        "--port=7000", "--dashboardPort=7001", "--clientPort=7002"]}))
    boss = pod(h, "rc-boss-0")["spec"]["containers"]
    assert boss[0]["ports"] == [{"name": "mine", "containerPort": 7000}, {"name": "dashboard", "containerPort": 7001},
                                {"name": "client-server", "containerPort": 7002}]
    assert "command" not in boss[1]
    hands = pod(h, "rc-hands-0")["spec"]["containers"][0]
    assert hands["command"] == ["sh", "-c", "ray start --block --address=boss-host.rc:7000"]
    assert [p["port"] for p in h.get("Service", "default", "rc-head-svc")["spec"]["ports"]] == [7000, 7001, 7002]


def test_ray_plugin_without_head_task_creates_no_pods() -> None:
    h = Harness()
    started(h, vcjob("rc", ray_task("worker", 2, "worker"), plugins={"ray": []}))
    assert h.store.list("Pod") == []


# ---------------------------------------------------------------------- hcclrank
def rank_of(p: dict[str, Any]) -> str | None:
    return (p["metadata"].get("annotations") or {}).get("hccl/rankIndex")


def test_hcclrank_plugin_ranks_masters_then_workers() -> None:
    h = Harness()
    started(h, vcjob("j", task("master", 2), task("worker", 3), task("other", 1), plugins={"hcclrank": []}))
    assert [rank_of(pod(h, f"j-master-{i}")) for i in range(2)] == ["0", "1"]
    assert [rank_of(pod(h, f"j-worker-{i}")) for i in range(3)] == ["2", "3", "4"]
    assert rank_of(pod(h, "j-other-0")) is None
    assert "plugin-hcclrank" not in (h.job("j")["status"].get("controlledResources") or {})


def test_hcclrank_plugin_prefers_an_explicit_annotation_then_the_rank_env_var() -> None:
    h = Harness()
    annotated = task("master", 1)
    annotated["template"]["metadata"] = {"annotations": {"hccl/rankIndex": "7"}}
    env_rank = task("worker", 2)
    env_rank["template"]["spec"]["containers"].insert(0, {"name": "side", "image": "busybox",
                                                          "env": [{"name": "RANK", "value": "5"}]})
    from_field = task("npu", 1)
    from_field["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RANK", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    started(h, vcjob("j", annotated, env_rank, from_field, plugins={"hcclrank": ["--worker=npu"]}))
    assert rank_of(pod(h, "j-master-0")) == "7"
    assert rank_of(pod(h, "j-worker-1")) == "5"
    assert rank_of(pod(h, "j-npu-0")) == "1"  # RANK without a value: computed, 1 master + index 0


@pytest.mark.parametrize("plugin", ["env", "svc", "ssh", "pytorch", "mpi", "tensorflow"])
def test_plugins_record_controlled_resources(plugin: str) -> None:
    h = Harness()
    started(h, vcjob("j", task("master", 1), task("worker", 1), plugins={plugin: []}))
    assert h.job("j")["status"]["controlledResources"][f"plugin-{plugin}"] == plugin
