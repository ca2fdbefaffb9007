"""Forecasts for operators: queue positions, start-time estimates, dry runs and the live or
snapshot state they start from (``queue top``, ``job run --dry-run``, ``job why``).

Each forecast runs the real scheduler forward in the simulator from a cluster state
(:mod:`.state`); none opens a scheduling session itself.
"""
