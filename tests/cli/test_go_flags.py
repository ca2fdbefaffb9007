"""Upstream's command lines for the live components: pflag's syntax, klog's and component-base's
flags, and the exact argument lists of upstream's Helm chart (``templates/scheduler.yaml``,
``controllers.yaml``, ``admission.yaml``) reaching the commands' options."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from pyvolcano.cli import admission as admission_cli
from pyvolcano.cli import kube
from pyvolcano.cli.app import app, run
from pyvolcano.cli.go_flags import CONTROLLER_MANAGER, SCHEDULER, WEBHOOK_MANAGER, Effect, klog_severity, translate
from pyvolcano.runtime import component

SCHEDULER_CONF = Path(__file__).resolve().parents[1] / "data" / "upstream_conf" / "chart-volcano-scheduler.conf"

# templates/scheduler.yaml with every optional value of values.yaml set
CHART_SCHEDULER = [
    "--logtostderr", f"--scheduler-conf={SCHEDULER_CONF}", "--scheduler-name=volcano", "--enable-healthz=true",
    "--enable-metrics=true", "--enable-pprof=true", "--leader-elect=false",
    "--leader-elect-resource-namespace=volcano-system", "--kube-api-qps=2000", "--kube-api-burst=2000",
    "--schedule-period=1s", "--node-worker-threads=20", "--percentage-nodes-to-find=50", "--plugins-dir=/plugins",
    "--feature-gates=PodLevelResources=true", "--ignored-provisioners=rancher.io/local-path",
    "--scheduler-sharding-mode=none", "-v=3", "2>&1",
]
# templates/controllers.yaml with values.yaml's defaults (worker threads 3/5/5) and a hypernode
# controller of its own (--controllers then disables it)
CHART_CONTROLLERS = [
    "--logtostderr", "--enable-healthz=true", "--enable-metrics=true", "--leader-elect=true",
    "--scheduler-name=volcano", "--leader-elect-resource-namespace=volcano-system", "--kube-api-qps=50",
    "--kube-api-burst=100", "--worker-threads=3", "--worker-threads-for-gc=5", "--worker-threads-for-podgroup=5",
    "--controllers=*,-sharding-controller,-hyperNode-controller", "-v=4", "2>&1",
]
# templates/admission.yaml with values.yaml's default enabled admissions
CHART_ADMISSION_PATHS = ("/jobs/mutate,/jobs/validate,/podgroups/validate,/queues/mutate,/queues/validate,"
                         "/hypernodes/validate,/cronjobs/validate")


def chart_admission(conf: Path) -> list[str]:
    return [
        f"--enabled-admission={CHART_ADMISSION_PATHS}", "--tls-cert-file=/admission.local.config/certificates/tls.crt",
        "--tls-private-key-file=/admission.local.config/certificates/tls.key",
        "--ca-cert-file=/admission.local.config/certificates/ca.crt", f"--admission-conf={conf}",
        "--webhook-namespace=volcano-system", "--webhook-service-name=volcano-admission-service",
        "--scheduler-name=volcano", "--feature-gates=A=true", "--enable-healthz=true", "--logtostderr",
        "--port=8443", "-v=4", "2>&1",
    ]


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What the scheduler or controller-manager command would start, instead of starting it."""
    seen: dict[str, Any] = {}

    def run(c: Any) -> None:
        seen["component"] = c
        raise typer.Exit(0)

    def work(name: str) -> Any:
        def capture(**kwargs: Any) -> Any:
            seen[name] = kwargs
            return lambda store, stop: None
        return capture

    monkeypatch.setattr(kube, "_run", run)
    monkeypatch.setattr(component, "scheduler_work", work("scheduler_work"))
    monkeypatch.setattr(component, "controller_manager_work", work("controller_manager_work"))
    monkeypatch.setattr(component, "setup_logging", lambda v, threshold=0: seen.update(verbosity=v))
    return seen


def warning_of(output: str) -> str:
    (line,) = [x for x in output.splitlines() if x.startswith("warning:")]
    return line


# ---------------------------------------------------------------------------- the chart's argument lists

def test_upstreams_chart_arguments_start_the_scheduler_with_one_warning(started: dict[str, Any]) -> None:
    result = invoke("scheduler", *CHART_SCHEDULER)
    assert result.exit_code == 0, result.output
    assert warning_of(result.output) == (
        "warning: accepted without effect (docs/kubernetes.md says why): --enable-pprof, --node-worker-threads, "
        "--plugins-dir, --feature-gates; ignored arguments (upstream reads none "
        "either): '2>&1'")
    c = started["component"]
    assert (c.election.enabled, c.election.resource_namespace) == (False, "volcano-system")
    assert (c.endpoints.enable_healthz, c.endpoints.enable_metrics) == (True, True)
    assert (c.client.qps, c.client.burst) == (2000.0, 2000)
    work = started["scheduler_work"]
    assert work["conf_path"] == SCHEDULER_CONF and work["period"] == 1.0
    assert work["scheduler_names"] == ("volcano",)
    assert work["options"].percentage_of_nodes_to_find == 50
    assert work["options"].ignored_provisioners == ("rancher.io/local-path",)
    assert started["verbosity"] == 3


def test_upstreams_chart_arguments_start_the_controller_manager(started: dict[str, Any]) -> None:
    result = invoke("controller-manager", *CHART_CONTROLLERS)
    assert result.exit_code == 0, result.output
    assert warning_of(result.output) == (
        "warning: accepted without effect (docs/kubernetes.md says why): --worker-threads, --worker-threads-for-gc, "
        "--worker-threads-for-podgroup; ignored arguments (upstream reads none either): '2>&1'")
    assert started["controller_manager_work"]["controllers"] == [
        "queue-controller", "job-controller", "pg-controller", "gc-controller", "jobflow-controller",
        "jobtemplate-controller", "cronjob-controller"]
    assert started["component"].election.enabled is True
    assert started["verbosity"] == 4


def test_upstreams_chart_arguments_reach_the_webhook_managers_options(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    conf = tmp_path / "volcano-admission.conf"
    conf.write_text("#resourceGroups:\n#- resourceGroup: management\n#  schedulerName: default-scheduler\n")
    seen: list[admission_cli.AdmissionOptions] = []
    monkeypatch.setattr(admission_cli, "run_admission", lambda opts: seen.append(opts) or 0)
    monkeypatch.setattr(component, "setup_logging", lambda v, threshold=0: None)
    result = invoke("admission", *chart_admission(conf))
    assert result.exit_code == 0, result.output
    assert warning_of(result.output) == (
        "warning: accepted without effect (docs/kubernetes.md says why): --feature-gates; ignored arguments "
        "(upstream reads none either): '2>&1'")
    (opts,) = seen
    assert (opts.enabled_admission, opts.admission_conf, opts.port, opts.enable_healthz) == (
        CHART_ADMISSION_PATHS, str(conf), 8443, True)
    assert (opts.webhook_namespace, opts.webhook_service_name) == ("volcano-system", "volcano-admission-service")


def test_the_charts_admission_paths_are_all_served(capsys: pytest.CaptureFixture[str]) -> None:
    opts = admission_cli.AdmissionOptions(enabled_admission=CHART_ADMISSION_PATHS, webhook_url="https://x")
    assert admission_cli.run_admission(opts) == 2  # stops at the missing certificate, after the paths
    err = capsys.readouterr().err
    assert "not served" not in err
    assert "error: --ca-cert-file is required" in err


def test_an_admission_conf_with_an_unknown_field_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "admission.conf"
    conf.write_text("resourceGroups:\n- resourceGroup: gpu\n  schedulerNmae: volcano\n")
    assert admission_cli.run_admission(admission_cli.AdmissionOptions(admission_conf=str(conf))) == 2
    assert capsys.readouterr().err == (
        f"error: --admission-conf: {conf}: resourceGroups[0].schedulerNmae: unknown field; expected one of "
        "resourceGroup, object, schedulerName, tolerations, labels, affinity\n")


# ---------------------------------------------------------------------------- pflag's syntax

def command(name: str) -> Any:
    return typer.main.get_command(app).commands[name]


@pytest.mark.parametrize("args", [["-v=4"], ["-v", "4"], ["-v4"], ["--v=4"], ["--v", "4"]])
def test_the_one_letter_verbosity_flag_takes_every_go_spelling(args: list[str]) -> None:
    assert translate(args, command("scheduler"), SCHEDULER).args == ["--v", "4"]


def test_underscores_and_dashes_are_the_same_in_flag_names() -> None:
    out = translate(["--log_dir=/tmp", "--kube_api_qps=5", "--log-file", "x"], command("scheduler"), SCHEDULER)
    assert (out.args, out.ignored) == (["--kube-api-qps", "5"], ["log-dir", "log-file"])


def test_a_go_boolean_takes_no_separate_value_so_the_word_after_it_is_positional() -> None:
    out = translate(["--leader-elect", "false", "--enable-healthz=T", "--enable-metrics=0"], command("scheduler"),
                    SCHEDULER)
    assert (out.args, out.positional) == (["--leader-elect", "--enable-healthz", "--no-enable-metrics"], ["false"])


def test_logtostderr_true_is_honoured_and_false_is_named_in_the_warning() -> None:
    assert translate(["--logtostderr", "--logtostderr=true"], command("scheduler"), SCHEDULER).ignored == []
    assert translate(["--logtostderr=false"], command("scheduler"), SCHEDULER).ignored == ["logtostderr"]


def test_string_slices_split_at_commas_and_may_be_repeated() -> None:
    out = translate(["--node-selector=a:1,b:2", "--node-selector", "c:3"], command("scheduler"), SCHEDULER,
                    {"node-selector": True})
    assert out.args == ["--node-selector", "a:1", "--node-selector", "b:2", "--node-selector", "c:3"]
    out = translate(["--controllers=*", "--controllers=-gc-controller"], command("controller-manager"),
                    CONTROLLER_MANAGER, {"controllers": False})
    assert out.args == ["--controllers", "*,-gc-controller"]


def test_a_double_dash_ends_the_flags() -> None:
    out = translate(["--v=2", "--", "--leader-elect"], command("scheduler"), SCHEDULER)
    assert (out.args, out.positional) == (["--v", "2"], ["--leader-elect"])


@pytest.mark.parametrize(("args", "message"), [
    (["--node-worker-threads=-1"], "--node-worker-threads: got '-1'; expected a non-negative integer"),
    (["--resync-period=soon"], "--resync-period: got 'soon'; expected a duration such as 30s or 5m"),
    (["--feature-gates=A"], "--feature-gates: got 'A'; expected comma-separated Name=true|false pairs"),
    (["--scheduler-sharding-mode=soft"], "--scheduler-sharding-mode=soft: node sharding is not implemented in "
                                         "pyvolcano yet; expected none (the default)"),
    (["--leader-elect-resource-lock=endpoints"], "--leader-elect-resource-lock=endpoints: pyvolcano's leader "
                                                 "election takes only a Lease; expected leases (the default)"),
    (["--plugins-dir"], "--plugins-dir: flag needs an argument"),
    (["--enable-healthz=yes"], "--enable-healthz: got 'yes'; expected true or false"),
])
def test_a_bad_value_or_a_refused_flag_is_one_error_line_and_exit_2(
        args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["scheduler", *args]) == 2
    assert capsys.readouterr().err == f"error: {message}\n"


def test_an_unknown_flag_is_still_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["scheduler", "--enable-healthzz"]) == 2
    assert capsys.readouterr().err.startswith("error: No such option: --enable-healthzz")


def test_disable_default_scheduler_config_needs_a_scheduler_conf(started: dict[str, Any]) -> None:
    result = invoke("scheduler", "--disable-default-scheduler-config")
    assert result.exit_code == 2
    assert "no --scheduler-conf path provided and default configuration fallback is disabled" in result.output


def test_controllers_take_plus_and_minus_and_upstream_names_pyvolcano_lacks(
        started: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    assert invoke("controller-manager", "--controllers=+job-controller,queue-controller,-gc-controller,"
                  "jobflow-controller,sharding-controller").exit_code == 0
    assert started["controller_manager_work"]["controllers"] == ["queue-controller", "job-controller",
                                                                 "jobflow-controller"]
    assert "upstream's sharding-controller is not implemented in pyvolcano; it does not run" in caplog.text
    result = invoke("controller-manager", "--controllers=*,-job-controller,+job-controller")
    assert result.exit_code == 2 and "cannot have both '-' and '+' prefixes" in result.output
    result = invoke("controller-manager", "--controllers=jb-controller")
    assert result.exit_code == 2 and "unknown controller 'jb-controller'" in result.output


def test_inherit_owner_annotations_reaches_the_podgroup_controller(started: dict[str, Any]) -> None:
    assert invoke("controller-manager", "--inherit-owner-annotations=false").exit_code == 0
    assert started["controller_manager_work"]["inherit_owner_annotations"] is False


@pytest.mark.parametrize(("value", "level"), [("INFO", 20), ("warning", 30), ("2", 40), ("FATAL", 50)])
def test_stderrthreshold_takes_klog_severities(value: str, level: int) -> None:
    assert klog_severity(value) == level


def test_every_table_names_each_flag_once_and_says_why_it_is_not_honoured() -> None:
    for table in (SCHEDULER, CONTROLLER_MANAGER, WEBHOOK_MANAGER):
        names = [f.name for f in table]
        assert len(names) == len(set(names))
        assert all(f.reason for f in table if f.effect is not Effect.HONOURED)


def test_no_table_flag_shadows_an_option_of_its_command() -> None:
    for name, table in (("scheduler", SCHEDULER), ("controller-manager", CONTROLLER_MANAGER),
                        ("admission", WEBHOOK_MANAGER)):
        options = {o[2:] for p in command(name).params for o in p.opts if o.startswith("--")}
        assert options.isdisjoint(f.name for f in table), name


UPSTREAM_BINARIES = os.environ.get("VOLCANO_BINARIES_DIR")


@pytest.mark.skipif(not UPSTREAM_BINARIES, reason="VOLCANO_BINARIES_DIR is not set (a directory with upstream's "
                                                   "vc-scheduler, vc-controller-manager, vc-webhook-manager)")
@pytest.mark.parametrize(("binary", "name", "table"), [
    ("vc-scheduler", "scheduler", SCHEDULER), ("vc-controller-manager", "controller-manager", CONTROLLER_MANAGER),
    ("vc-webhook-manager", "admission", WEBHOOK_MANAGER)])
def test_every_flag_upstreams_binary_lists_is_an_option_or_in_the_table(binary: str, name: str,
                                                                       table: tuple[Any, ...]) -> None:
    assert UPSTREAM_BINARIES is not None
    proc = subprocess.run([str(Path(UPSTREAM_BINARIES) / binary), "--help"], capture_output=True, text=True,
                          timeout=60, check=False)
    upstream = set(re.findall(r"^\s+(?:-\w, )?--([\w-]+)", proc.stdout + proc.stderr, re.M))
    assert "kubeconfig" in upstream
    options = {o[2:] for p in command(name).params for o in p.opts if o.startswith("--")}
    assert sorted(upstream - options - {f.name for f in table}) == []
