"""Reports of a simulation run, in one direction: statistics first, then their outputs.

* :mod:`.stats` — every number of a report (summary, per-queue means, comparison), pure
  functions of :class:`~pyvolcano.simulator.metrics.RunMetrics`;
* :mod:`.formatting` — those numbers as text for people (durations, ratios, differences);
* :mod:`.csv_files`, :mod:`.plots`, :mod:`.html_page` — the files of a report directory,
  written by :func:`.directory.write_report`;
* :mod:`.console` — the same report as rich tables on a terminal.

Outputs import :mod:`.stats` and :mod:`.formatting`, never each other (except the directory,
which writes them all); nothing here imports an output. Importing the package imports nothing
(matplotlib in particular is loaded only when :mod:`.plots` is).
"""
