"""RowMemo: per-key arrays over the node table's rows, up to date with the table's change log."""

from __future__ import annotations

import numpy as np

from pyvolcano.api.node import NodeTable
from pyvolcano.api.resource import Resource
from pyvolcano.cache.memo import RowMemo


def _table(n: int) -> NodeTable:
    table = NodeTable()
    for _ in range(n):
        table.add_row(Resource(1000.0))
    return table


def test_a_new_key_knows_no_row() -> None:
    memo = RowMemo(np.float64)
    values, known, stale = memo.refresh("k", _table(3))
    assert stale is None and not known.any() and len(values) == 3


def test_only_rows_changed_since_become_unknown() -> None:
    table, memo = _table(4), RowMemo(bool)
    values, known, _ = memo.refresh("k", table)
    values[:] = True
    known[:] = True
    table.bump(2)
    values2, known2, stale = memo.refresh("k", table)
    assert values2 is values and stale is not None and stale.tolist() == [2]
    assert known2.tolist() == [True, True, False, True]
    _v, _k, stale = memo.refresh("k", table)
    assert stale is not None and not len(stale)  # up to date now: nothing to evaluate again


def test_a_table_of_another_size_starts_the_entry_afresh() -> None:
    table, memo = _table(2), RowMemo(bool)
    _v, known, _ = memo.refresh("k", table)
    known[:] = True
    table.add_row(Resource(1000.0))
    values, known, stale = memo.refresh("k", table)
    assert stale is None and len(values) == 3 and not known.any()


def test_put_records_every_row_as_known_and_the_oldest_key_goes_first() -> None:
    table, memo = _table(2), RowMemo(bool, limit=2)
    memo.put("a", np.array([True, False]), table.change_position)
    values, known, stale = memo.refresh("a", table)
    assert values.tolist() == [True, False] and known.all() and stale is not None and not len(stale)
    memo.refresh("b", table)
    memo.refresh("c", table)
    assert len(memo) == 2
    assert memo.refresh("a", table)[2] is None  # "a" was dropped: it starts afresh
