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
(``deviceshare.ScheduleWeight`` is read and validated; it changes nothing, as upstream).

Arguments (:data:`ARGUMENTS`): ``deviceshare.GPUSharingEnable`` (false) and
``deviceshare.GPUNumberEnable`` (false), mutually exclusive; ``deviceshare.SchedulePolicy``,
``deviceshare.ScheduleWeight``. ``deviceshare.NodeLockEnable: true`` is accepted with a warning
(pyvolcano takes no node lock before a GPU pod's bind). vGPU (HAMi) and Ascend vNPU devices and
GPU exclusivity rules are not modelled: ``deviceshare.VGPUEnable``,
``deviceshare.AscendMindClusterVNPUEnable`` and ``deviceshare.AscendHAMiVNPUEnable`` are refused
unless false, ``deviceshare.GPUExclusiveRules`` unless empty; the vGPU geometry ConfigMap keys
are accepted with a warning. Upstream's enable flags are process-global; here they are per
plugin instance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from pyvolcano.framework.argument_keys import ArgumentKeys, honoured, ignored, is_empty, is_false, refused
from pyvolcano.framework.arguments import ArgumentError, Arguments
from pyvolcano.plugins.gpu_session import SessionGpus

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "NAME", "DeviceShare", "new"]

NAME: Final = "deviceshare"
GPU_SHARING_ENABLE: Final = "deviceshare.GPUSharingEnable"
GPU_NUMBER_ENABLE: Final = "deviceshare.GPUNumberEnable"
SCHEDULE_POLICY: Final = "deviceshare.SchedulePolicy"
SCHEDULE_WEIGHT: Final = "deviceshare.ScheduleWeight"
_OFF: Final = "the key removed or set to false"
_VGPU_ONLY: Final = "it configures vGPU devices, which are not modelled"
ARGUMENTS: Final = ArgumentKeys(f"plugin {NAME}", (
    honoured(GPU_SHARING_ENABLE),
    honoured(GPU_NUMBER_ENABLE),
    honoured(SCHEDULE_POLICY),
    honoured(SCHEDULE_WEIGHT, note="upstream's gpushare devices score 0, so it changes no decision"),
    ignored("deviceshare.NodeLockEnable", "pyvolcano takes no node lock before binding a GPU pod; placements "
            "are the same", accepts=is_false),
    refused("deviceshare.VGPUEnable", "vGPU (HAMi) devices are not modelled", _OFF, accepts=is_false),
    refused("deviceshare.AscendMindClusterVNPUEnable", "Ascend vNPU devices are not modelled", _OFF,
            accepts=is_false),
    refused("deviceshare.AscendHAMiVNPUEnable", "Ascend HAMi vNPU devices are not modelled", _OFF,
            accepts=is_false),
    refused("deviceshare.GPUExclusiveRules", "GPU exclusivity rules: pods matching a rule would share GPUs",
            "the key removed or an empty list", accepts=is_empty),
    ignored("deviceshare.KnownGeometriesCMName", _VGPU_ONLY),
    ignored("deviceshare.KnownGeometriesCMNamespace", _VGPU_ONLY),
))


class DeviceShare:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.sharing_enable = args.get_bool(GPU_SHARING_ENABLE, False)
        self.number_enable = args.get_bool(GPU_NUMBER_ENABLE, False)
        self.schedule_policy = args.get_str(SCHEDULE_POLICY, "")
        self.schedule_weight = args.get_int(SCHEDULE_WEIGHT, 0)
        if self.sharing_enable and self.number_enable:
            # Upstream: klog.Fatal("can not define true in both gpu sharing and gpu number").
            raise ArgumentError(f"plugin {NAME}: can not define true in both gpu sharing and gpu number")
        self.session_gpus: SessionGpus | None = None

    def on_session_open(self, ssn: Session) -> None:
        gpus = SessionGpus.of(ssn, self)
        gpus.enable(sharing=self.sharing_enable, number=self.number_enable)
        ssn.add_predicate_fn(NAME, gpus.predicate(), cache_key=gpus.predicate_key, batchable=False)

    def on_session_close(self, ssn: Session) -> None:
        self.session_gpus = None


def new(arguments: Mapping[str, Any]) -> DeviceShare:
    return DeviceShare(arguments)
