"""Job plugins (``spec.plugins``): env, svc, ssh, pytorch, mpi, tensorflow, ray, hcclrank.

Mirrors ``pkg/controllers/job/plugins``. A plugin is built per call from its argument list
(``spec.plugins[name]``, parsed with Go ``flag`` rules) and has four hooks:

* ``on_pod_create(pod, job)`` — mutate a pod before it is created (env vars, volumes, ports);
* ``on_job_add(job)`` — at job initiation (create Services, ConfigMaps, Secrets); may be
  called many times and must be idempotent; records itself in
  ``status.controlledResources["plugin-<name>"]``;
* ``on_job_delete(job)`` — when the job is killed (delete what ``on_job_add`` created);
* ``on_job_update(job)`` — on every later sync (refresh the hosts ConfigMap).

Upstream iterates ``spec.plugins`` (a Go map) in random order; the job controller iterates
plugin names in sorted order so that env-var order in pods is deterministic. These are all
the plugins upstream registers; admission rejects other names, and the controller fails the
sync for them like upstream does.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyvolcano.controllers.job.plugins import env, hcclrank, mpi, pytorch, ray, ssh, svc, tensorflow
from pyvolcano.controllers.job.plugins.base import FlagSet, JobPlugin, PluginBuilder, PluginContext

__all__ = ["BUILTIN_JOB_PLUGINS", "FlagSet", "JobPlugin", "PluginBuilder", "PluginContext"]

BUILTIN_JOB_PLUGINS: Mapping[str, PluginBuilder] = {
    "env": env.EnvPlugin,
    "hcclrank": hcclrank.HCCLRankPlugin,
    "mpi": mpi.MPIPlugin,
    "pytorch": pytorch.PyTorchPlugin,
    "ray": ray.RayPlugin,
    "ssh": ssh.SSHPlugin,
    "svc": svc.ServicePlugin,
    "tensorflow": tensorflow.TensorFlowPlugin,
}
