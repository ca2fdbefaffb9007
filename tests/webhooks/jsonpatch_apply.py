"""An RFC 6902 applier written from the RFC for the tests (add, remove, replace), independent of
the code under test, so that a patch is checked by what it does rather than how it was built."""

from __future__ import annotations

import copy
from typing import Any


def _tokens(path: str) -> list[str]:
    if path == "":
        return []
    assert path.startswith("/"), path
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def apply_patch(doc: Any, patch: list[dict[str, Any]]) -> Any:
    doc = copy.deepcopy(doc)
    for op in patch:
        tokens = _tokens(op["path"])
        if not tokens:
            assert op["op"] in ("replace", "add")
            doc = copy.deepcopy(op["value"])
            continue
        parent = doc
        for t in tokens[:-1]:
            parent = parent[int(t)] if isinstance(parent, list) else parent[t]
        last = tokens[-1]
        if op["op"] == "add":
            if isinstance(parent, list):
                parent.insert(len(parent) if last == "-" else int(last), copy.deepcopy(op["value"]))
            else:
                parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            if isinstance(parent, list):
                del parent[int(last)]
            else:
                del parent[last]
        elif op["op"] == "replace":
            if isinstance(parent, list):
                parent[int(last)] = copy.deepcopy(op["value"])
            else:
                assert last in parent, f"replace of a missing member {op['path']}"
                parent[last] = copy.deepcopy(op["value"])
        else:
            raise AssertionError(f"unexpected op {op}")
    return doc
