from hypothesis import given
from hypothesis import strategies as st

from pyvolcano.api.resource import DimensionDefault, Resource, share

ZERO, INF = DimensionDefault.ZERO, DimensionDefault.INFINITY


def r(cpu: float = 0, mem: float = 0, **scalars: float) -> Resource:
    return Resource(cpu, mem, {k.replace("_", "/"): v for k, v in scalars.items()})


def test_from_list_stores_cpu_milli_memory_bytes_scalars_milli_pods_whole() -> None:
    res = Resource.from_list({"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "2", "pods": "10", "foo": "3"})
    assert res.milli_cpu == 1500
    assert res.memory == 2**30
    assert res.scalars == {"nvidia.com/gpu": 2000, "pods": 10}


def test_less_equal_tolerates_epsilon() -> None:
    assert r(1000.05).less_equal(r(1000))
    assert not r(1000.2).less_equal(r(1000))


def test_less_equal_zero_treats_missing_scalar_on_right_as_zero() -> None:
    assert not r(1, 1, nvidia_gpu=1000).less_equal(r(2, 2), ZERO)
    assert r(1, 1, nvidia_gpu=1000).less_equal(r(2, 2), INF)


def test_less_equal_infinity_fails_when_right_has_scalar_left_lacks() -> None:
    assert not r(1, 1).less_equal(r(2, 2, nvidia_gpu=1000), INF)
    assert r(1, 1).less_equal(r(2, 2, nvidia_gpu=1000), ZERO)


def test_less_equal_with_dimension_checks_only_requested_dimensions() -> None:
    ok, names = r(5, 5, nvidia_gpu=3).less_equal_with_dimension(r(1, 10, nvidia_gpu=1), r(0, 1, nvidia_gpu=1))
    assert not ok
    assert names == ["nvidia/gpu"]


def test_zero_filtered_partly_ignores_dimensions_zero_on_both_sides() -> None:
    assert r(0, 5).less_equal_partly_with_dimension_zero_filtered(r(0, 10), r(1, 1))
    assert not r(0, 20).less_equal_partly_with_dimension_zero_filtered(r(0, 10), r(1, 1))


def test_diff_and_exceeded_part() -> None:
    inc, dec = r(3, 1).diff(r(1, 4))
    assert (inc.milli_cpu, inc.memory, dec.milli_cpu, dec.memory) == (2, 0, 0, 3)
    assert r(3, 1, x_y=5).exceeded_part(r(1, 4)) == r(2, 0, x_y=5)


def test_min_dimension_zero_vs_infinity() -> None:
    assert r(5, 5, a_b=3).min_dimension(r(2, 9), ZERO) == r(2, 5, a_b=0)
    assert r(5, 5, a_b=3).min_dimension(r(2, 9), INF) == r(2, 5, a_b=3)


def test_share_of_zero_denominator() -> None:
    assert share(0, 0) == 0
    assert share(1, 0) == 1
    assert share(1, 4) == 0.25


def test_is_empty_ignores_pods() -> None:
    assert r(0, 0, pods=1).is_empty()
    assert not r(0, 0, nvidia_gpu=1).is_empty()


amounts = st.floats(min_value=0, max_value=1e9, allow_nan=False)


@given(amounts, amounts, amounts, amounts)
def test_add_then_sub_restores(a: float, b: float, c: float, d: float) -> None:
    x = r(a, b)
    y = r(c, d)
    z = x.clone().add(y).sub(y)
    assert abs(z.milli_cpu - a) < 1e-3 and abs(z.memory - b) < 1e-3


@given(amounts, amounts)
def test_less_equal_is_reflexive(a: float, b: float) -> None:
    assert r(a, b).less_equal(r(a, b))
