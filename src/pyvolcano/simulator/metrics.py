"""Run metrics collected by the simulator, from the same state the scheduler decides on.

The collector fills a :class:`RunMetrics`; reports (``simulator/report/``) are pure
functions of it, so they can be tested on hand-made metrics and compared across runs.

Definitions (all times are virtual seconds from the start of the run):

* job ``submit``: creation time; ``first_bind``: first time any of its pods was bound;
  ``start``: first time the gang was running (the Job, or its PodGroup for plain pod
  groups, reached Running); ``end``: first time it reached a final phase;
  ``wait = start - submit``; ``jct = end - submit``; ``restarts``: the Job's retryCount;
  ``preemptions``: its pods evicted by the scheduler.
* samples describe the state after the events of their instant, once they have settled:
  after every scheduling session (binds written, pods started) and whenever the pending /
  running job counts change between sessions. GPU / CPU
  allocation ratio = Σ requests of pods bound to nodes / Σ allocatable; GPU fragmentation
  = idle GPUs (whole-GPU equivalents) that a typical pending pod cannot use — the FGD
  paper's measure with the pending pods as target workload (see
  :func:`pyvolcano.simulator.collector.fragmentation`); per queue: allocated GPUs, deserved GPUs (proportion's
  deserved, when computed) and share.
* per pod (:class:`PodRecord`): the node it was bound to, when (``start``) and when it ended
  (``end``: Succeeded, Failed or deleted; None if it was still there), with its GPUs and
  cores; and the cluster's nodes and queues at the end of the run (:class:`NodeRecord`,
  :class:`QueueRecord`). From them and the jobs' times, the state at any instant of the run
  can be rebuilt (the dashboard's time slider, :mod:`pyvolcano.simulator.report.run_data`).
* with HyperNodes in the cluster (:attr:`RunMetrics.topology`): per job, the HyperNodes its pods
  span (``span_*``), and per sample the topology fragmentation (idle GPUs in racks, or other
  lowest-tier HyperNodes, that no pending job can use); defined in
  :mod:`pyvolcano.simulator.topology_metrics`. Without HyperNodes these stay unset and no
  output shows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ENDLESS", "JobMetrics", "NodeRecord", "PodRecord", "QueueRecord", "QueueSample", "RunMetrics", "Sample"]

ENDLESS = "running without end: its pods have no pyvolcano.io/duration annotation"
"""The reason of a job still running because some of its pods never exit on their own."""


@dataclass(slots=True)
class JobMetrics:
    key: str
    queue: str
    submit: float
    gpus: float = 0.0          # GPUs requested by the whole job (all replicas)
    pods: int = 0
    first_bind: float | None = None
    start: float | None = None
    end: float | None = None
    phase: str = "Pending"
    restarts: int = 0
    preemptions: int = 0
    reason: str | None = None  # why it had not finished when the run stopped (None: finished)
    # For a job that never started: its last session's diagnosis (pyvolcano.diagnosis).
    pending_reason: str = ""
    pending_hint: str = ""
    # Where its pods ran, with HyperNodes in the cluster (pyvolcano.simulator.topology_metrics).
    span_nodes: int = 0
    span_domains: int = 0
    span_hypernode: str | None = None
    span_tier: int | None = None

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.submit

    @property
    def jct(self) -> float | None:
        return None if self.end is None else self.end - self.submit


@dataclass(slots=True)
class PodRecord:
    key: str                   # ns/name
    job: str                   # the job's key ("" if the pod belongs to no job the collector follows)
    node: str
    start: float               # bound to ``node``
    end: float | None = None   # Succeeded, Failed or deleted
    gpu: float = 0.0           # whole-GPU equivalents (a share annotation counts its fraction)
    cpu: float = 0.0           # cores


@dataclass(frozen=True, slots=True)
class NodeRecord:
    name: str
    gpus: int
    gpu_model: str
    cpu: float                 # allocatable cores
    hypernodes: tuple[str, ...] = ()   # the HyperNodes holding it, lowest tier first (virtual root left out)


@dataclass(frozen=True, slots=True)
class QueueRecord:
    name: str
    parent: str
    weight: int
    state: str


@dataclass(slots=True)
class QueueSample:
    allocated_gpu: float
    deserved_gpu: float | None
    allocated_cpu: float
    share: float | None


@dataclass(slots=True)
class Sample:
    t: float
    gpu_allocated: float       # GPUs (whole-GPU equivalents) requested by bound pods
    gpu_capacity: float
    cpu_allocated: float       # cores
    cpu_capacity: float
    gpu_fragmentation: float   # idle GPUs that a typical pending pod cannot use
    pending_jobs: int
    running_jobs: int
    queues: dict[str, QueueSample] = field(default_factory=dict)
    # With HyperNodes in the cluster (pyvolcano.simulator.topology_metrics), else None.
    topology_fragmentation: float | None = None   # idle GPUs in domains no pending job can use
    fragmented_domains: int | None = None          # the domains counted in it

    @property
    def gpu_ratio(self) -> float:
        return self.gpu_allocated / self.gpu_capacity if self.gpu_capacity else 0.0

    @property
    def cpu_ratio(self) -> float:
        return self.cpu_allocated / self.cpu_capacity if self.cpu_capacity else 0.0


@dataclass(slots=True)
class RunMetrics:
    name: str                  # e.g. the trace / scenario name
    config_name: str           # e.g. the scheduler configuration file name or "default"
    seed: int
    jobs: list[JobMetrics] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    session_seconds: list[float] = field(default_factory=list)
    virtual_seconds: float = 0.0
    wall_seconds: float = 0.0
    sessions: int = 0
    notes: list[str] = field(default_factory=list)
    end_reason: str = "finished"   # finished | until | stalled (see SimulationResult.end_reason)
    topology: bool = False         # the cluster had HyperNodes: the topology figures are filled in
    pods: list[PodRecord] = field(default_factory=list)
    nodes: list[NodeRecord] = field(default_factory=list)     # at the end of the run
    queues: list[QueueRecord] = field(default_factory=list)   # at the end of the run
    hypernode_tiers: dict[str, int] = field(default_factory=dict)
    # The JobFlows and CronJobs at the end of the run (pyvolcano.simulator.workflows.Workflow).
    workflows: list[Any] = field(default_factory=list)
