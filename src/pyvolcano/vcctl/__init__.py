"""``vcctl`` / ``kubectl vc``: upstream Volcano's command line, on a live cluster or a snapshot.

The verbs, flags, defaults, table columns and messages are upstream's (``cmd/cli``,
``pkg/cli``): ``job run|list|view|suspend|resume|delete``, ``queue
create|delete|operate|list|get``, ``pod list`` and ``version``. kubectl's conventions are
added on top: ``--kubeconfig``, ``--context``, ``-n/--namespace``, ``-A/--all-namespaces``,
``-o json|yaml|wide|name``, ``--no-headers`` and ``-l/--selector``. The read-only views
(``list``, ``view``, ``get``) also read a snapshot file (``--cluster FILE``, the
multi-document YAML that ``pyvolcano schedule`` reads) without any cluster.

One module per verb group (:mod:`.job`, :mod:`.queue`, :mod:`.pod`); :mod:`.source` says
where objects come from, :mod:`.printing` how they are printed, :mod:`.selector` parses
label selectors and :mod:`.app` is the entry point of both console scripts.
"""
