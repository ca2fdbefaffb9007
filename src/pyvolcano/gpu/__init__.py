"""GPU devices, fragmentation and the FGD paper's placement policies and experiment.

* :mod:`~pyvolcano.gpu.devices` — node GPU inventories, pod GPU demands, the per-GPU ledger.
* :mod:`~pyvolcano.gpu.frag` — the fragmentation measure and its typical-pod workload.
* :mod:`~pyvolcano.gpu.policies` — the six placement scorers, vectorised over nodes.
* :mod:`~pyvolcano.gpu.openb` — openb trace loaders.
* :mod:`~pyvolcano.gpu.experiment` / :mod:`~pyvolcano.gpu.report` — the paper's experiment.

The GPU state one scheduling session shares between its GPU plugins is
:mod:`pyvolcano.plugins.gpu_session`, beside those plugins; nothing here imports the framework.
Nothing here is imported by the scheduler core unless a GPU plugin is configured.
"""
