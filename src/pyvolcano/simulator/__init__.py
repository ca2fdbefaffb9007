"""Deterministic simulation of a Volcano cluster: store, controllers, scheduler, kubelets."""
