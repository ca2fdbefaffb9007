"""Operating a cluster: queue positions, start-time estimates and dry runs (``queue top``, ``job run --dry-run``)."""
