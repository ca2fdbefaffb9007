"""The live runtime: the scheduler, controllers and fake kubelets on a wall clock.

The simulator (:mod:`pyvolcano.simulator.runtime`) drives the same consumers on a virtual
clock over the in-memory store; here they run over :class:`pyvolcano.kube.store.KubeStore`
against a real API server. Only the store, the clock and the wake-ups differ.
"""
