"""The fair-share floor under the multi-node gangs' waits on a Philly day (docs/recommended.md).

Usage::

    python benchmarks/gang_floor.py DAY.csv [DAY.csv ...] [--gpus 128] [--chart-mean H ...]

DAY.csv is a day cut out of ``philly.csv`` as ``benchmarks/recommended.py OUT`` writes it
(``timestamp, duration, num_gpus, cluster``), queues weighed as the simulator weighs them
(each virtual cluster's share of the file's GPU-time). For every gang (more than 8 GPUs) the
script prints the earliest time at which proportion could let the gang's queue allocate it,
and the day's floor on the gangs' mean wait; with ``--chart-mean`` (one per day, hours) it
prints half of that mean beside the floor.

The floor is taken on the assumptions most favourable to the gang:

* every job of another queue asks for its GPUs only from its submission to its submission
  plus its duration, as if it had started the moment it was submitted;
* every job of the gang's own queue submitted by then asks for its GPUs, and none of them
  is running (so the whole deserved share is free for the gang);
* proportion's water-filling (``Proportion._water_fill``, run here on the GPUs alone: a Philly
  pod asks 4 cores and 32 GiB per GPU of nodes with 8 cores and 64 GiB per GPU, so only GPUs bind).

Water-filling never gives a queue less when it asks more or when the others ask less. So a
scheduler that does not hold other queues' jobs back, admitting each when it is submitted,
cannot let the gang start before this time while every queue's deserved share holds:
proportion refuses the gang's pods until its queue's deserved share holds them. A scheduler
could go below the floor only by keeping other queues' jobs out of the queue (their wait), by
running the gang's queue above its deserved share, or by evicting.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import NamedTuple

from pyvolcano.api.objects import Queue
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.plugins.proportion import Proportion, QueueAttr
from pyvolcano.simulator.traces import philly

GANG_GPUS = 8
GPU = "nvidia.com/gpu"


class Gang(NamedTuple):
    name: str
    queue: str
    gpus: int
    submit: float
    """Seconds since the day's first submission."""
    floor: float
    """The earliest start proportion could allow, in the same seconds (inf: never)."""


def weights(fname: str, recs: list[philly.Record]) -> dict[str, int]:
    """Each queue's weight as ``simulate --trace`` gives it for this file."""
    trace = philly.build(fname, recs)
    return {q["metadata"]["name"]: int(q["spec"]["weight"]) for q in trace.queues}


def deserved(total: float, weight: dict[str, int], asked: dict[str, float]) -> dict[str, float]:
    """Proportion's deserved GPUs per queue for these requests."""
    attrs = []
    for name in sorted(weight):
        attr = QueueAttr(QueueInfo(Queue(name=name, weight=weight[name])))
        attr.allocated = Resource()
        attr.request = Resource(scalars={GPU: asked.get(name, 0.0)})
        attr.real_capability = Resource(scalars={GPU: total})
        attr.inqueue = Resource()
        attr.elastic = Resource()
        attrs.append(attr)
    Proportion._water_fill(Resource(scalars={GPU: total}), attrs)
    return {a.name: a.deserved.get(GPU) for a in attrs}


def floors(path: Path, total: float) -> list[Gang]:
    fname, recs = philly.read(path)
    weight = weights(fname, recs)
    origin = recs[0].at
    width = len(str(len(recs) - 1))
    jobs = [(f"philly-{i:0{width}d}", r.vc, r.at - origin, r.duration, r.gpus) for i, r in enumerate(recs)]
    # What a queue asks at a moment, and so its deserved share, is the same for each of its gangs.
    shares: dict[tuple[str, float], float] = {}

    def queue_deserved(queue: str, t: float) -> float:
        got = shares.get((queue, t))
        if got is None:
            asked: dict[str, float] = {}
            for _, q, s, d, g in jobs:
                if (q == queue and s <= t) or (q != queue and s <= t < s + d):
                    asked[q] = asked.get(q, 0.0) + g
            got = shares[(queue, t)] = deserved(total, weight, asked).get(queue, 0.0)
        return got

    out = []
    for name, queue, submit, _, gpus in jobs:
        if gpus <= GANG_GPUS:
            continue
        moments = sorted({submit} | {t for _, _, s, d, _ in jobs for t in (s, s + d) if t > submit})
        floor = float("inf")
        for t in moments:
            if queue_deserved(queue, t) >= gpus:
                floor = t
                break
        out.append(Gang(name, queue, gpus, submit, floor))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("days", nargs="+", type=Path, metavar="DAY.csv")
    ap.add_argument("--gpus", type=float, default=128.0, help="the cluster's GPUs (default: 128, 16 machines)")
    ap.add_argument("--chart-mean", type=float, action="append", default=[], metavar="H",
                    help="the gangs' mean wait with the chart configuration on each day, in hours")
    args = ap.parse_args()
    if args.chart_mean and len(args.chart_mean) != len(args.days):
        ap.error("give one --chart-mean per day, or none")
    for i, day in enumerate(args.days):
        gangs = floors(day, args.gpus)
        print(f"{day.stem}: {len(gangs)} gangs on {args.gpus:g} GPUs")
        for g in gangs:
            print(f"  {g.name} queue {g.queue} {g.gpus} GPUs: submitted {g.submit / 3600:.2f} h, "
                  f"floor {g.floor / 3600:.2f} h, wait at least {(g.floor - g.submit) / 3600:.2f} h")
        if not gangs:
            continue
        mean = statistics.mean((g.floor - g.submit) / 3600 for g in gangs)
        line = f"  floor on the gangs' mean wait: {mean:.2f} h"
        if args.chart_mean:
            half = args.chart_mean[i] / 2
            line += f"; half the chart's mean: {half:.2f} h ({'below' if mean > half else 'above'} the floor)"
        print(line)


if __name__ == "__main__":
    main()
