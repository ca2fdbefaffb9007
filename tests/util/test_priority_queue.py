import heapq

from hypothesis import given
from hypothesis import strategies as st

from pyvolcano.util.priority_queue import PriorityQueue


@given(st.lists(st.integers(min_value=-100, max_value=100)))
def test_pops_in_less_order(items: list[int]) -> None:
    pq = PriorityQueue(lambda a, b: a < b, items)
    out = [pq.pop() for _ in range(len(items))]
    assert out == sorted(items)


@given(st.lists(st.integers(min_value=0, max_value=5), max_size=30))
def test_equal_keys_pop_in_go_heap_order(keys: list[int]) -> None:
    # Elements compare by key only; the payload records the insertion position.
    pq = PriorityQueue(lambda a, b: a[0] < b[0], [(k, i) for i, k in enumerate(keys)])
    out = [pq.pop() for _ in range(len(keys))]
    assert [k for k, _ in out] == sorted(keys)
    ref = [(k, i) for i, k in enumerate(keys)]
    assert sorted(out) == sorted(ref)


def test_reinserting_reranks_with_current_state() -> None:
    share = {"a": 0.0, "b": 0.5}
    pq = PriorityQueue(lambda x, y: share[x] < share[y], ["a", "b"])
    first = pq.pop()
    share["a"] = 0.9
    pq.push(first)
    assert pq.pop() == "b"


def test_matches_heapq_for_distinct_keys() -> None:
    items = [5, 3, 9, 1, 7]
    pq = PriorityQueue(lambda a, b: a < b, items)
    h = list(items)
    heapq.heapify(h)
    assert [pq.pop() for _ in items] == [heapq.heappop(h) for _ in items]
