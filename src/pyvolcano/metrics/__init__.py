"""Prometheus metrics of the live components, with upstream Volcano's names, labels and buckets.

* :mod:`pyvolcano.metrics.scheduler`: vc-scheduler's ``pkg/scheduler/metrics`` (session,
  action and plugin latencies, queue gauges, unschedulable gangs, per-job scheduling times)
  and the session observer that feeds them;
* :mod:`pyvolcano.metrics.controllers`: vc-controller-manager's ``pkg/controllers/metrics``;
* :mod:`pyvolcano.metrics.buckets`: client_golang's bucket helpers.

Every recorder owns its own ``CollectorRegistry`` (never the process-global one), so tests and
several components in one process do not collide.
"""
