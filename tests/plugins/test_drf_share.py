"""drf_share: the dominant share, one definition for the drf plugin, HDRF and the metrics."""

from __future__ import annotations

from pyvolcano.api.resource import Resource
from pyvolcano.plugins.drf_share import dominant_share, share_dimensions


def res(cpu: float = 0.0, memory: float = 0.0, **scalars: float) -> Resource:
    r = Resource(milli_cpu=cpu, memory=memory)
    for name, amount in scalars.items():
        r.set(name, amount)
    return r


def test_share_is_the_largest_fraction_over_the_total_dimensions() -> None:
    dims = share_dimensions(res(10_000, 100.0, pods=100))
    assert dominant_share(res(1_000, 30.0, pods=1), dims) == ("memory", 0.3)
    assert dominant_share(res(5_000, 30.0), dims) == ("cpu", 0.5)


def test_first_dimension_reaching_the_share_is_dominant() -> None:
    dims = share_dimensions(res(10_000, 100.0))
    assert dominant_share(res(5_000, 50.0), dims) == ("cpu", 0.5)


def test_nothing_held_is_share_zero_without_a_dominant_resource() -> None:
    assert dominant_share(Resource(), share_dimensions(res(10_000, 100.0))) == ("", 0.0)


def test_dimensions_absent_from_the_total_do_not_count() -> None:
    dims = share_dimensions(res(10_000, 100.0))
    assert [name for name, _ in dims] == ["cpu", "memory"]
    assert dominant_share(res(1_000, 10.0, **{"nvidia.com/gpu": 4}), dims) == ("cpu", 0.1)
