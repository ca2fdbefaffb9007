"""Numbers of a report as text for people: durations, ratios, differences and their verdicts.

Shared by the console summary and the HTML page, so both show the same text.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HEADLINE", "better", "end_lines", "fmt_delta", "fmt_duration", "fmt_metric", "fmt_num", "fmt_ratio"]

# Which direction of each metric's change is better (for colouring).
_BETTER: dict[str, str] = {
    "mean_wait_s": "lower", "p95_wait_s": "lower", "mean_jct_s": "lower", "p95_jct_s": "lower",
    "makespan_s": "lower", "gpu_allocation_ratio": "higher", "cpu_allocation_ratio": "higher",
    "gpu_fragmentation_ratio": "lower", "completed": "higher", "never_started": "lower",
    "mean_pending_jobs": "lower", "preemptions": "lower", "restarts": "lower",
}


def fmt_duration(s: float | None) -> str:
    """``1d04h``, ``3h02m``, ``4m05s``, ``12.3s``; ``-`` for ``None``."""
    if s is None:
        return "-"
    neg, s = s < 0, abs(s)
    if s < 60:
        txt = f"{s:.1f}s" if s < 10 and s != int(s) else f"{s:.0f}s"
    else:
        total = round(s)
        d, rem = divmod(total, 86400)
        h, rem = divmod(rem, 3600)
        m, sec = divmod(rem, 60)
        txt = f"{d}d{h:02d}h" if d else (f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s")
    return ("-" if neg else "") + txt


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def fmt_num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"


def fmt_metric(key: str, v: float | None) -> str:
    """Format a summary value by its key's unit."""
    if key.endswith("_s"):
        return fmt_duration(v)
    if "ratio" in key or "share" in key:
        return fmt_ratio(v)
    return fmt_num(v)


def fmt_delta(key: str, d: dict[str, Any], *, compact: bool = False) -> str:
    """``delta`` in the metric's unit with the relative change; ``compact``: shares without it."""
    delta, rel = d.get("delta"), d.get("relative")
    if delta is None:
        return "-"
    if delta == 0:
        return "0"
    if "ratio" in key or "share" in key:
        txt = f"{delta * 100:+.1f} pp"
    elif key.endswith("_s"):
        txt = ("+" if delta >= 0 else "") + fmt_duration(delta)
    else:
        txt = f"{delta:+,.0f}" if float(delta).is_integer() else f"{delta:+,.1f}"
    if rel is not None and not (compact and ("ratio" in key or "share" in key)):
        txt += f" ({rel * 100:+.0f}%)" if compact else f" ({rel * 100:+.1f}%)"
    return txt


def better(key: str, delta: float | None) -> str | None:
    """``"better"``, ``"worse"`` or ``None`` (neutral) for a change ``delta = b - a`` of ``key``."""
    direction = _BETTER.get(key.rsplit(":", 1)[-1])
    if delta is None or direction is None or abs(delta) < 1e-12:
        return None
    return "better" if (delta < 0) == (direction == "lower") else "worse"


HEADLINE = (("jobs", "Jobs"), ("completed", "Completed"), ("never_started", "Never started"),
             ("mean_wait_s", "Mean wait"), ("p95_wait_s", "p95 wait"), ("mean_jct_s", "Mean JCT"),
             ("p95_jct_s", "p95 JCT"), ("gpu_allocation_ratio", "GPU allocation, whole run"),
             ("cpu_allocation_ratio", "CPU allocation, whole run"), ("gpu_fragmentation_ratio", "GPU fragmentation"),
             ("mean_pending_jobs", "Mean pending jobs"), ("gpu_hours", "GPU hours"),
             ("makespan_s", "Makespan"), ("preemptions", "Preemptions"), ("restarts", "Restarts"),
             ("running_at_end", "Still running at the end"), ("busy_window_s", "Busy window (jobs waiting)"),
             ("busy_gpu_allocation_ratio", "GPU allocation, busy window"),
             ("busy_cpu_allocation_ratio", "CPU allocation, busy window"),
             ("busy_mean_pending_jobs", "Mean pending jobs, busy window"))



def end_lines(summ: dict[str, Any]) -> list[str]:
    """Why jobs had not finished when the run stopped, for people: one line on the counts and
    the reason the run stopped, then one per listed job (``summ`` is :func:`summarize`'s)."""
    s = summ["summary"]
    running, never, endless = s["running_at_end"], s["never_started"], s["running_without_duration"]
    if not running and not never:
        return []
    if s["end_reason"] == "until":
        why = "the run stopped at its --until horizon"
    else:
        causes = []
        if endless:
            causes.append(f"{endless} run(s) forever because their pods have no pyvolcano.io/duration "
                          "(give --default-duration)")
        if never:
            causes.append(f"{never} can never be placed (reasons below)")
        why = "nothing left could change anything: " + "; ".join(causes or ["every other job finished"])
    lines = [f"Not finished: {running} job(s) still running, {never} never started — {why}."]
    for u in summ["unfinished"]:
        state = "running" if u["started"] else "never started"
        why = f"{u['pending_reason']}: {u['pending_hint']}" if u.get("pending_reason") else u["reason"] or "-"
        lines.append(f"  {u['job']} ({state}): {why}")
    listed = len(summ["unfinished"])
    if running + never > listed:
        lines.append(f"  … and {running + never - listed} more (--report writes every job's reason to jobs.csv)")
    return lines

