"""deviceshare plugin (upstream pkg/scheduler/plugins/deviceshare/deviceshare.go).

Predicate: a pod that asks for GPUs fits a node only if the node's GPUs can take it
(:mod:`pyvolcano.gpu.devices` describes the demand forms):

* ``volcano.sh/gpu-memory`` (checked only with ``deviceshare.GPUSharingEnable``): one card
  with free memory ≥ the demand — "GpuShare no enough gpu memory";
* ``volcano.sh/gpu-number`` (only with ``deviceshare.GPUNumberEnable``): that many cards no
  pod uses — "GpuNumber no enough gpu number";
* pyvolcano's forms, always checked: ``nvidia.com/gpu: N`` needs N GPUs no pod uses (the
  scalar resource fit alone misses GPUs partly used by shared pods), the
  ``pyvolcano.io/gpu-milli`` share needs one GPU with that much free, and
  ``pyvolcano.io/gpu-models`` restricts the node's ``nvidia.com/gpu.product``
  (UnschedulableAndUnresolvable).

Allocation records the chosen GPUs on the pod at bind (``volcano.sh/gpu-index``, plus
``volcano.sh/predicate-time`` from the session clock) through the session's GPU state
(:mod:`pyvolcano.plugins.gpu_session`). Without a placement policy plugin, whole GPUs are the first
free ones, memory shares the lowest-index card that fits (upstream), milli shares the
tightest fit.

NodeOrder: upstream's gpushare devices score 0, so no node-order callback is registered
(``deviceshare.ScheduleWeight`` is read and validated; it changes nothing).

Arguments (upstream keys): ``deviceshare.GPUSharingEnable`` (false) and
``deviceshare.GPUNumberEnable`` (false), mutually exclusive; ``deviceshare.NodeLockEnable``
(no effect: there is no API server to lock against); ``deviceshare.SchedulePolicy``,
``deviceshare.ScheduleWeight``. vGPU (HAMi) and Ascend vNPU devices, and GPU exclusivity
rules, are not modelled: ``deviceshare.VGPUEnable``, ``deviceshare.AscendMindClusterVNPUEnable``
and ``deviceshare.AscendHAMiVNPUEnable`` set to true are rejected rather than ignored.
Upstream's enable flags are process-global; here they are per plugin instance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from pyvolcano.framework.arguments import ArgumentError, Arguments
from pyvolcano.plugins.gpu_session import SessionGpus

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["NAME", "DeviceShare", "new"]

NAME: Final = "deviceshare"
_UNSUPPORTED: Final = (
    "deviceshare.VGPUEnable",
    "deviceshare.AscendMindClusterVNPUEnable",
    "deviceshare.AscendHAMiVNPUEnable",
)


class DeviceShare:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, owner=f"plugin {NAME}")
        self.sharing_enable = args.get_bool("deviceshare.GPUSharingEnable", False)
        self.number_enable = args.get_bool("deviceshare.GPUNumberEnable", False)
        self.node_lock_enable = args.get_bool("deviceshare.NodeLockEnable", False)
        self.schedule_policy = args.get_str("deviceshare.SchedulePolicy", "")
        self.schedule_weight = args.get_int("deviceshare.ScheduleWeight", 0)
        if self.sharing_enable and self.number_enable:
            # Upstream: klog.Fatal("can not define true in both gpu sharing and gpu number").
            raise ArgumentError(f"plugin {NAME}: can not define true in both gpu sharing and gpu number")
        for key in _UNSUPPORTED:
            if args.get_bool(key, False):
                raise ArgumentError.bad(f"plugin {NAME}", key, "got true; this device type is not supported")
        self.session_gpus: SessionGpus | None = None

    def on_session_open(self, ssn: Session) -> None:
        gpus = SessionGpus.of(ssn, self)
        gpus.enable(sharing=self.sharing_enable, number=self.number_enable)
        ssn.add_predicate_fn(NAME, gpus.predicate(), cache_key=gpus.predicate_key, batchable=False)

    def on_session_close(self, ssn: Session) -> None:
        self.session_gpus = None


def new(arguments: Mapping[str, Any]) -> DeviceShare:
    return DeviceShare(arguments)
