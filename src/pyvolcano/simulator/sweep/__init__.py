"""Sweeps: a grid of simulations run in parallel and merged into one comparison.

* :mod:`.grid` — the axes (configurations × seeds × traces or workloads × clusters), read from
  a sweep file or options, checked before anything runs, and expanded into cells;
* :mod:`.cell` — one cell, run where a worker runs it, through the same steps as
  ``pyvolcano simulate`` (:mod:`pyvolcano.simulator.inputs`), so its document is the bytes
  ``simulate -o json`` prints for the same options;
* :mod:`.executors` — local worker processes, or a Ray cluster (optional, imported lazily);
* :mod:`.comparison` and :mod:`.plots` — the merged rows, their CSV, the report directory.

Importing the package imports nothing (no Ray, no matplotlib).
"""
