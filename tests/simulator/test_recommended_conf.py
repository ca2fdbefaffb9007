"""examples/recommended.conf against upstream's chart configuration on a small GPU cluster
(docs/recommended.md): pods smaller than a machine are packed, so a gang that arrives later
finds whole machines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim_builders import node, simulate, vcjob

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _gpu_job(name: str, gpus: int, *, replicas: int = 1, duration: str) -> dict[str, Any]:
    # Philly's shape: 4 cores and 32 GiB per GPU, on machines with 8 cores and 64 GiB per GPU.
    return vcjob(name, replicas=replicas, cpu=str(4 * gpus), duration=duration,
                 requests={"memory": f"{32 * gpus}Gi", "nvidia.com/gpu": str(gpus)})


def _scenario() -> list[tuple[float, dict[str, Any]]]:
    """Four 8-GPU machines; four one-GPU jobs of 10 h arrive one by one; at 100 s a gang of
    two whole machines that runs 1 h."""
    machines = [(0.0, node(f"m{i}", cpu="64", memory="512Gi", nvidia_com__gpu="8")) for i in range(4)]
    small = [(float(i + 1), _gpu_job(f"small-{i}", 1, duration="10h")) for i in range(4)]
    return [*machines, *small, (100.0, _gpu_job("gang", 8, replicas=2, duration="1h"))]


def _gang_started(conf: Path) -> float:
    result, _ = simulate(_scenario(), conf=conf.read_text())
    started = result.jobs["default/gang"].started
    assert started is not None
    return float(started)


def test_chart_configuration_spreads_small_pods_and_the_gang_waits_for_them_to_end() -> None:
    assert _gang_started(EXAMPLES / "volcano-scheduler.conf") >= 10 * 3600


def test_recommended_conf_packs_small_pods_so_the_gang_starts_on_arrival() -> None:
    assert _gang_started(EXAMPLES / "recommended.conf") <= 110
