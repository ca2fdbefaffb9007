"""Reports of a simulation run: metric definitions on hand-checkable runs, comparison, report files."""

from __future__ import annotations

import csv
import heapq
import io
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from pyvolcano.simulator.metrics import JobMetrics, QueueSample, RunMetrics, Sample
from pyvolcano.simulator.report.console import print_summary
from pyvolcano.simulator.report.directory import write_report
from pyvolcano.simulator.report.stats import compare, run_labels, summarize

# ---------------------------------------------------------------------------------------------
# fixtures


def two_jobs(config: str = "default", *, slow: bool = False) -> RunMetrics:
    """One node with 8 GPUs / 32 cores, two jobs.

    * a (queue q1, 4 GPUs): submit 0, bound and running at 10, ends at 110  -> wait 10, JCT 110
    * b (queue q2, 8 GPUs): submit 20, running at 110, ends at 200           -> wait 90, JCT 180
      (``slow``: b starts at 150 and ends at 240 -> wait 130, JCT 220)

    Samples (step function): [0,10) nothing; [10,110) a: 4 GPUs, 8 cores; [110,200) b: 8 GPUs,
    16 cores; 200 -> nothing. Deserved: q1 4, q2 4 from t=10 on; unknown before.
    """
    s = 40.0 if slow else 0.0
    a = JobMetrics("ns/a", "q1", submit=0.0, gpus=4, pods=1, first_bind=10.0, start=10.0, end=110.0,
                   phase="Completed")
    b = JobMetrics("ns/b", "q2", submit=20.0, gpus=8, pods=2, first_bind=110.0 + s, start=110.0 + s,
                   end=200.0 + s, phase="Completed", restarts=1, preemptions=2)

    def sample(t: float, ga: float, ca: float, q1: float, q2: float, deserved: bool, pending: int,
               running: int) -> Sample:
        return Sample(t=t, gpu_allocated=ga, gpu_capacity=8, cpu_allocated=ca, cpu_capacity=32,
                      gpu_fragmentation=8 - ga if pending else 0.0, pending_jobs=pending, running_jobs=running,
                      queues={"q1": QueueSample(q1, 4.0 if deserved else None, q1 * 2, None),
                              "q2": QueueSample(q2, 4.0 if deserved else None, q2 * 2, None)})

    samples = [sample(0.0, 0, 0, 0, 0, False, 1, 0), sample(10.0, 4, 8, 4, 0, True, 0, 1),
               sample(20.0, 4, 8, 4, 0, True, 1, 1)]
    if slow:
        samples += [sample(110.0, 0, 0, 0, 0, True, 1, 0)]
    samples += [sample(110.0 + s, 8, 16, 0, 8, True, 0, 1), sample(200.0 + s, 0, 0, 0, 0, True, 0, 0)]
    return RunMetrics(name="two-jobs", config_name=config, seed=7, jobs=[a, b], samples=samples,
                      session_seconds=[0.01, 0.02, 0.03], virtual_seconds=200.0 + s, wall_seconds=0.5, sessions=3)


def synthetic_run(n_jobs: int = 2000, n_samples: int = 1000, n_queues: int = 4, seed: int = 1,
                  config: str = "default", capacity: int = 128, horizon_h: float = 72.0) -> RunMetrics:
    """A realistic-looking run: Poisson arrivals with a daily cycle, lognormal durations, gangs of
    1-16 GPUs, greedy FIFO placement on ``capacity`` GPUs, proportion-style deserved shares,
    some oversized jobs that never start, and a horizon that cuts the last jobs."""
    rng = np.random.default_rng(seed)
    queues = [f"team-{chr(ord('a') + i)}" if n_queues <= 26 else f"q{i:02d}" for i in range(n_queues)]
    weights = {q: float(w) for q, w in zip(queues, rng.integers(1, 5, n_queues))}
    horizon = horizon_h * 3600
    t_sub = np.sort(rng.uniform(0, horizon * 0.8, n_jobs) + 3 * 3600 * np.sin(rng.uniform(0, np.pi, n_jobs)))
    t_sub = np.clip(t_sub, 0, horizon * 0.9)
    gpus = rng.choice([1, 1, 1, 2, 2, 4, 8, 16], n_jobs)
    gpus[rng.random(n_jobs) < 0.005] = capacity * 2  # never fits
    dur = rng.lognormal(np.log(1800), 1.2, n_jobs)
    qs = rng.choice(queues, n_jobs, p=np.array([weights[q] for q in queues]) / sum(weights.values()))
    jobs = [JobMetrics(f"ns/job-{i:05d}", str(qs[i]), float(t_sub[i]), gpus=float(gpus[i]), pods=int(gpus[i]))
            for i in range(n_jobs)]
    # greedy FIFO event simulation
    free = capacity
    pending: list[int] = []
    ends: list[tuple[float, int]] = []
    i = 0
    now = 0.0
    while i < n_jobs or ends:
        nxt_sub = t_sub[i] if i < n_jobs else math.inf
        nxt_end = ends[0][0] if ends else math.inf
        now = min(nxt_sub, nxt_end)
        if now > horizon:
            break
        if nxt_end <= nxt_sub:
            _, k = heapq.heappop(ends)
            free += int(gpus[k])
            jobs[k].end, jobs[k].phase = now, "Completed" if rng.random() > 0.05 else "Failed"
        else:
            pending.append(i)
            i += 1
        for k in list(pending):
            if gpus[k] <= free:
                free -= int(gpus[k])
                pending.remove(k)
                jobs[k].first_bind = jobs[k].start = now + (0.0 if rng.random() < 0.3 else 1.0)
                jobs[k].phase = "Running"
                heapq.heappush(ends, (jobs[k].start + float(dur[k]), k))
    for j in jobs:
        if j.end is not None and j.end > horizon:
            j.end, j.phase = None, "Running"
    samples = []
    for t in np.sort(rng.uniform(0, horizon, n_samples)):
        alloc = dict.fromkeys(queues, 0.0)
        demand = dict.fromkeys(queues, 0.0)
        pend = run = 0
        for j in jobs:
            if j.submit > t:
                continue
            if j.start is not None and j.start <= t and (j.end is None or j.end > t):
                alloc[j.queue] += j.gpus
                demand[j.queue] += j.gpus
                run += 1
            elif j.start is None or j.start > t:
                demand[j.queue] += min(j.gpus, capacity)
                pend += 1
        deserved = dict.fromkeys(queues, 0.0)
        remaining, active = float(capacity), [q for q in queues if demand[q] > 0]
        while remaining > 1e-9 and active:
            wsum = sum(weights[q] for q in active)
            for q in list(active):
                give = min(remaining * weights[q] / wsum, demand[q] - deserved[q])
                deserved[q] += give
            remaining = capacity - sum(deserved.values())
            active = [q for q in active if demand[q] - deserved[q] > 1e-9]
        used = sum(alloc.values())
        samples.append(Sample(
            t=float(t), gpu_allocated=used, gpu_capacity=capacity, cpu_allocated=used * 6 + 40,
            cpu_capacity=capacity * 12, gpu_fragmentation=(capacity - used) * float(rng.uniform(0.05, 0.4)) if pend
            else 0.0, pending_jobs=pend, running_jobs=run,
            queues={q: QueueSample(alloc[q], deserved[q], alloc[q] * 6, alloc[q] / deserved[q] if deserved[q] else None)
                    for q in queues}))
    return RunMetrics(name="synthetic-trace", config_name=config, seed=seed, jobs=jobs, samples=samples,
                      session_seconds=list(rng.lognormal(np.log(0.02), 0.6, 5000)), virtual_seconds=horizon,
                      wall_seconds=12.3, sessions=5000)


# ---------------------------------------------------------------------------------------------
# definitions


def test_summary_on_two_jobs_is_exact() -> None:
    out = summarize(two_jobs())
    assert set(out) == {"summary", "queues", "stats", "unfinished"}
    s = out["summary"]
    assert s["jobs"] == 2 and s["completed"] == 2 and s["never_started"] == 0
    assert s["mean_wait_s"] == pytest.approx(50.0)                # (10 + 90) / 2
    assert s["p95_wait_s"] == pytest.approx(10 + 0.95 * 80)       # numpy linear: 86
    assert s["mean_jct_s"] == pytest.approx(145.0)                # (110 + 180) / 2
    assert s["makespan_s"] == pytest.approx(200.0)
    # GPU ratio: 0 on [0,10), 0.5 on [10,110), 1 on [110,200) -> (50 + 90) / 200
    assert s["gpu_allocation_ratio"] == pytest.approx(0.7)
    # CPU ratio: 8/32 for 100 s, 16/32 for 90 s -> (25 + 45) / 200
    assert s["cpu_allocation_ratio"] == pytest.approx(0.35)
    # fragmentation: 8 idle GPUs on [0,10) (pending) and 4 on [20,110) -> (80 + 360)/8 / 200
    assert s["gpu_fragmentation_ratio"] == pytest.approx((10 * 1.0 + 90 * 0.5) / 200)
    assert s["gpu_hours"] == pytest.approx((4 * 100 + 8 * 90) / 3600)
    assert s["restarts"] == 1 and s["preemptions"] == 2
    q1, q2 = out["queues"]["q1"], out["queues"]["q2"]
    assert q1["jobs"] == 1 and q1["mean_wait_s"] == 10.0 and q1["p95_wait_s"] == 10.0 and q1["mean_jct_s"] == 110.0
    assert q1["gpu_hours"] == pytest.approx(400 / 3600)
    assert q2["gpu_hours"] == pytest.approx(720 / 3600)
    assert q1["mean_share"] == pytest.approx(0.5 * 100 / 200)     # 4/8 for 100 s of 200
    assert q2["mean_share"] == pytest.approx(1.0 * 90 / 200)
    # deserved 4/8 from t=10, unknown (counted 0) before: over the same 200 s as mean_share
    assert q1["mean_deserved_share"] == pytest.approx(0.5 * 190 / 200)
    # the busy window ends when b starts (110): no job waits after it
    assert s["busy_window_s"] == 110.0
    assert s["busy_gpu_allocation_ratio"] == pytest.approx(0.5 * 100 / 110)
    assert s["busy_mean_pending_jobs"] == pytest.approx((10 + 90) / 110)
    assert q1["busy_mean_share"] == pytest.approx(0.5 * 100 / 110)
    assert q1["busy_mean_deserved_share"] == pytest.approx(0.5 * 100 / 110)
    assert s["running_at_end"] == 0 and s["end_reason"] == "finished" and out["unfinished"] == []
    st = out["stats"]
    assert st["virtual_seconds"] == 200.0 and st["sessions"] == 3 and st["wall_seconds"] == 0.5
    assert st["session_p50_s"] == pytest.approx(0.02)
    assert json.loads(json.dumps(out)) == out                     # JSON-ready


def test_never_started_jobs_count_in_jobs_not_in_waits_and_makespan_is_the_horizon() -> None:
    run = two_jobs()
    run.jobs.append(JobMetrics("ns/c", "q1", submit=50.0, gpus=16, pods=2))
    run.virtual_seconds = 400.0
    out = summarize(run)
    s = out["summary"]
    assert s["jobs"] == 3 and s["never_started"] == 1 and s["completed"] == 2
    assert s["mean_wait_s"] == pytest.approx(50.0)
    assert s["makespan_s"] == 400.0
    assert s["gpu_allocation_ratio"] == pytest.approx(140 / 400)
    assert out["queues"]["q1"]["never_started"] == 1 and out["queues"]["q1"]["jobs"] == 2


def test_samples_outside_the_window_are_ignored_and_same_instant_last_wins() -> None:
    run = two_jobs()
    # A stale sample at t=10 followed by the real one: the later one (index order) wins.
    run.samples.insert(1, Sample(t=10.0, gpu_allocated=8, gpu_capacity=8, cpu_allocated=0, cpu_capacity=32,
                                 gpu_fragmentation=0, pending_jobs=0, running_jobs=0))
    run.samples.append(Sample(t=500.0, gpu_allocated=8, gpu_capacity=8, cpu_allocated=0, cpu_capacity=32,
                              gpu_fragmentation=0, pending_jobs=0, running_jobs=0))
    assert summarize(run)["summary"]["gpu_allocation_ratio"] == pytest.approx(0.7)


def test_compare_reports_deltas() -> None:
    out = compare(two_jobs("fast.conf"), two_jobs("slow.conf", slow=True))
    assert set(out) == {"a", "b", "diff"}
    d = out["diff"]
    assert d["mean_wait_s"] == {"a": 50.0, "b": 70.0, "delta": 20.0, "relative": pytest.approx(0.4)}
    assert d["p95_wait_s"]["delta"] == pytest.approx((10 + 0.95 * 120) - 86)
    assert d["mean_jct_s"]["delta"] == pytest.approx(20.0)
    assert d["makespan_s"]["b"] == 240.0 and d["makespan_s"]["relative"] == pytest.approx(0.2)
    assert d["gpu_allocation_ratio"]["b"] == pytest.approx(140 / 240)
    assert d["queue:q2:mean_wait_s"]["delta"] == pytest.approx(40.0)
    assert d["queue:q1:mean_share"]["b"] == pytest.approx(50 / 240)
    assert {k for k in d if k.startswith("queue:")} == {f"queue:{q}:{m}" for q in ("q1", "q2")
                                                        for m in ("mean_share", "mean_wait_s")}


def test_relative_is_none_when_a_is_zero_and_missing_queues_are_none() -> None:
    a = two_jobs()
    b = two_jobs()
    b.jobs.append(JobMetrics("ns/z", "q9", submit=0.0, start=0.0, end=1.0, phase="Completed"))
    d = compare(a, b)["diff"]
    assert d["queue:q9:mean_wait_s"] == {"a": None, "b": 0.0, "delta": None, "relative": None}
    e = compare(b, b)["diff"]
    assert e["queue:q9:mean_wait_s"] == {"a": 0.0, "b": 0.0, "delta": 0.0, "relative": None}


# ---------------------------------------------------------------------------------------------
# empty runs


@pytest.mark.parametrize("samples", [False, True])
def test_empty_runs_do_not_crash(tmp_path: Path, samples: bool) -> None:
    run = RunMetrics(name="empty", config_name="default", seed=0)
    if samples:
        run.samples = [Sample(t=0.0, gpu_allocated=0, gpu_capacity=0, cpu_allocated=0, cpu_capacity=0,
                              gpu_fragmentation=0, pending_jobs=0, running_jobs=0)]
    out = summarize(run)
    assert out["summary"]["jobs"] == 0 and out["summary"]["mean_wait_s"] is None
    assert out["summary"]["gpu_allocation_ratio"] is None and out["summary"]["makespan_s"] == 0.0
    json.dumps(out, allow_nan=False)
    json.dumps(compare(run, run), allow_nan=False)
    files = write_report(run, tmp_path / "one")
    assert all(f.exists() for f in files)
    write_report(run, tmp_path / "two", other=two_jobs())
    print_summary(run, console=Console(file=io.StringIO()))
    print_summary(run, other=run, console=Console(file=io.StringIO()))


def test_jobs_that_never_started_or_ended_only() -> None:
    run = RunMetrics(name="stuck", config_name="default", seed=0, virtual_seconds=100.0,
                     jobs=[JobMetrics("ns/x", "q", submit=5.0, gpus=1)])
    s = summarize(run)["summary"]
    assert s["never_started"] == 1 and s["p95_wait_s"] is None and s["mean_jct_s"] is None
    assert s["makespan_s"] == 100.0 and s["gpu_allocation_ratio"] is None  # no samples


# ---------------------------------------------------------------------------------------------
# files


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _header(path: Path) -> list[str]:
    with path.open(newline="") as fh:
        return next(csv.reader(fh))


def test_report_directory(tmp_path: Path) -> None:
    files = write_report(two_jobs(), tmp_path)
    names = {f.name for f in files}
    assert names == {"jobs.csv", "queues.csv", "timeseries.csv", "allocation.png", "queue_share.png",
                     "wait_cdf.png", "jct_cdf.png", "report.html", "run.json"}
    assert all(f.exists() and f.stat().st_size > 0 for f in files)
    assert _header(tmp_path / "jobs.csv") == ["key", "queue", "submit_s", "first_bind_s", "start_s", "end_s", "wait_s",
                                              "jct_s", "gpus", "pods", "phase", "restarts", "preemptions", "reason",
                                              "pending_reason", "pending_hint"]
    assert _header(tmp_path / "queues.csv") == ["queue", "jobs", "never_started", "mean_wait_s", "p95_wait_s",
                                                "mean_jct_s", "gpu_hours", "mean_share", "mean_deserved_share",
                                                "busy_mean_share", "busy_mean_deserved_share"]
    assert _header(tmp_path / "timeseries.csv") == [
        "t_s", "gpu_allocated", "gpu_capacity", "gpu_ratio", "cpu_ratio", "gpu_fragmentation", "pending_jobs",
        "running_jobs", "q1_allocated_gpu", "q1_deserved_gpu", "q1_share", "q2_allocated_gpu", "q2_deserved_gpu",
        "q2_share"]
    jobs = _csv(tmp_path / "jobs.csv")
    assert [(r["key"], float(r["wait_s"]), float(r["jct_s"])) for r in jobs] == [("ns/a", 10, 110), ("ns/b", 90, 180)]
    queues = {r["queue"]: r for r in _csv(tmp_path / "queues.csv")}
    assert float(queues["q2"]["mean_share"]) == pytest.approx(0.45)
    ts = _csv(tmp_path / "timeseries.csv")
    assert len(ts) == 5 and ts[0]["q1_deserved_gpu"] == "" and float(ts[1]["q1_share"]) == 0.5
    for png in tmp_path.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    _check_html(tmp_path / "report.html", [f for f in files if f.suffix == ".png"])


def _check_html(html: Path, pngs: list[Path]) -> None:
    text = html.read_text()
    assert "http://" not in text and "https://" not in text and "<script" not in text
    imgs = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    import base64

    embedded = {base64.b64decode(b) for b in imgs}
    assert len(imgs) == len(pngs)
    for p in pngs:
        assert p.read_bytes() in embedded, p.name


def test_compare_report_directory(tmp_path: Path) -> None:
    files = write_report(two_jobs("fast.conf"), tmp_path, other=two_jobs("slow.conf", slow=True))
    names = {f.name for f in files}
    for stem in ("jobs", "queues", "timeseries"):
        assert {f"{stem}-fast.csv", f"{stem}-slow.csv"} <= names
    assert {"compare.csv", "compare_queues.png", "allocation.png", "jct_cdf.png", "report.html"} <= names
    rows = {r["metric"]: r for r in _csv(tmp_path / "compare.csv")}
    assert float(rows["mean_wait_s"]["delta"]) == 20.0
    text = (tmp_path / "report.html").read_text()
    assert "fast" in text and "slow" in text and 'class="worse"' in text
    _check_html(tmp_path / "report.html", [f for f in files if f.suffix == ".png"])


def test_report_module_does_not_import_matplotlib() -> None:
    code = "import sys, pyvolcano.simulator.report.directory; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_matplotlib_the_report_has_csvs_and_html(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyvolcano.simulator.report.plots", None)  # import fails like a missing extra
    files = write_report(two_jobs(), tmp_path)
    assert {f.name for f in files} == {"jobs.csv", "queues.csv", "timeseries.csv", "report.html", "run.json"}
    assert "plots skipped" in (tmp_path / "report.html").read_text()


def test_run_labels_are_short_safe_and_distinct() -> None:
    assert run_labels(two_jobs("conf/drf.conf"), two_jobs("gang binpack.yaml")) == ("drf", "gang_binpack")
    assert run_labels(two_jobs(), two_jobs()) == ("default-a", "default-b")


def test_csv_keeps_precision_for_long_runs(tmp_path: Path) -> None:
    run = two_jobs()
    for s in run.samples:
        s.t += 2_592_000.5          # a month in
    for j in run.jobs:
        j.submit += 2_592_000.5
        j.start = None if j.start is None else j.start + 2_592_000.5
        j.first_bind = None if j.first_bind is None else j.first_bind + 2_592_000.5
        j.end = None if j.end is None else j.end + 2_592_000.5
    write_report(run, tmp_path)
    assert _csv(tmp_path / "timeseries.csv")[1]["t_s"] == "2592010.5"
    assert _csv(tmp_path / "jobs.csv")[0]["end_s"] == "2592110.5"


def test_synthetic_run_report(tmp_path: Path) -> None:
    run = synthetic_run(n_jobs=300, n_samples=200, n_queues=15, horizon_h=24)
    s = summarize(run)
    assert len(s["queues"]) == 15
    assert sum(q["jobs"] for q in s["queues"].values()) == 300
    assert 0 < s["summary"]["gpu_allocation_ratio"] <= 1
    files = write_report(run, tmp_path, other=synthetic_run(n_jobs=300, n_samples=200, n_queues=15, horizon_h=24,
                                                            seed=2, config="other.conf"))
    assert (tmp_path / "report.html") in files


# ---------------------------------------------------------------------------------------------
# terminal


def test_print_summary_tables() -> None:
    buf = io.StringIO()
    print_summary(two_jobs(), console=Console(file=buf, width=160))
    out = buf.getvalue()
    assert "Mean wait" in out and "50s" in out and "70.0%" in out and "q1" in out and "q2" in out
    assert "p50 20.0 ms" in out and "p99" in out


def test_print_comparison_colours_differences() -> None:
    buf = io.StringIO()
    print_summary(two_jobs("fast.conf"), other=two_jobs("slow.conf", slow=True),
                  console=Console(file=buf, width=200, force_terminal=True, color_system="standard"))
    out = buf.getvalue()
    assert "fast" in out and "slow" in out
    assert re.search(r"\x1b\[31m *\+20s \(\+40\.0%\)", out)   # worse mean wait in red
    plain = io.StringIO()
    print_summary(two_jobs("fast.conf"), other=two_jobs("slow.conf", slow=True), console=Console(file=plain, width=200))
    assert "+20s (+40.0%)" in plain.getvalue()


def test_unfinished_jobs_and_their_reasons_reach_the_summary_csv_and_html(tmp_path: Path) -> None:
    run = two_jobs()
    run.jobs.append(JobMetrics("ns/c", "q1", submit=50.0, gpus=16, pods=2,
                               reason="PodGroup Pending: not enqueued (Insufficient nvidia.com/gpu: …)"))
    run.virtual_seconds, run.end_reason = 400.0, "stalled"
    out = summarize(run)
    assert out["unfinished"] == [{"job": "ns/c", "started": False, "phase": "Pending",
                                  "reason": "PodGroup Pending: not enqueued (Insufficient nvidia.com/gpu: …)",
                                  "pending_reason": None, "pending_hint": None}]
    assert out["summary"]["busy_window_s"] == 400.0     # a job never started: the whole run is busy
    write_report(run, tmp_path)
    assert _csv(tmp_path / "jobs.csv")[-1]["reason"].startswith("PodGroup Pending: not enqueued")
    html = (tmp_path / "report.html").read_text()
    assert "<h2>Not finished</h2>" in html and "0 job(s) still running, 1 never started" in html
    assert "Insufficient nvidia.com/gpu" in html


def test_plots_clip_the_time_axis_to_the_busy_window_only_behind_a_long_tail() -> None:
    pytest.importorskip("matplotlib")
    from pyvolcano.simulator.report.plots import _window

    assert _window(two_jobs()) == 200.0          # busy 110 s of 200 s: the whole run is shown
    tail = two_jobs()
    tail.jobs.append(JobMetrics("ns/long", "q1", submit=0.0, gpus=1, pods=1, first_bind=10.0, start=10.0,
                                end=16 * 86400.0, phase="Completed"))
    assert _window(tail) == pytest.approx(110.0 * 1.1)   # a 16-day tail behind 110 busy seconds
