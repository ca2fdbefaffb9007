"""``pyvolcano dashboard``: a web UI over a live cluster, a snapshot or a simulation run.

Data flows one way: a :mod:`~pyvolcano.dashboard.sources` source yields the cluster's state
(or, for a simulation run, the run's records), :mod:`~pyvolcano.dashboard.analysis` runs the
scheduler's own code on it once per state (a session for the queue quotas, ``job why``'s
diagnoses, ``queue top``'s order and estimates), the view modules (:mod:`.queues`,
:mod:`.jobs`, :mod:`.job_detail`, :mod:`.nodes`, :mod:`.timeline`) turn that into plain
JSON-ready dicts, and :mod:`.server` serves them to the static front-end in ``static/``.
Writes happen only in :mod:`.actions`, and only with ``--allow-actions``.

Importing the package imports nothing: Starlette and uvicorn are loaded by :mod:`.server`
and the command, so the other commands never pay for them. See docs/dashboard.md.
"""
