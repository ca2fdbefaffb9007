"""CEL device selectors: Kubernetes' DRA environment over CEL's reference runtime."""

from __future__ import annotations

from fractions import Fraction

import pytest

from pyvolcano.api.dra.cel import CelError, SelectorCache, parse_semver
from pyvolcano.api.dra.types import Device, DeviceAttribute

DRIVER = "gpu.example.com"
GPU = Device("gpu-0", attributes={
    "model": DeviceAttribute("string", "A100"), "index": DeviceAttribute("int", 3),
    "driverVersion": DeviceAttribute("version", "1.2.3"), "other.example.com/family": DeviceAttribute("string", "amp"),
}, capacity={"memory": Fraction(80 * 2**30)})


@pytest.fixture(scope="module")
def selectors() -> SelectorCache:
    return SelectorCache()


@pytest.mark.parametrize(("expression", "expected"), [
    ('device.driver == "gpu.example.com"', True),
    ('device.attributes["gpu.example.com"].model == "A100"', True),
    ('device.attributes["gpu.example.com"].index > 2', True),
    ('device.attributes["other.example.com"].family == "amp"', True),
    ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
    ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("40Gi"))', False),
    ('device.capacity["gpu.example.com"].memory == quantity("80Gi")', True),
    ('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))', True),
    ('device.attributes["gpu.example.com"].driverVersion.compareTo(semver("1.2.3-rc.1")) > 0', True),
    ('has(device.attributes["nvidia.com"].model)', False),
    ('cel.bind(g, device.attributes["gpu.example.com"], g.model == "A100" && g.index == 3)', True),
    ('device.attributes["gpu.example.com"].model.lowerAscii() == "a100"', True),
])
def test_selector_reads_driver_attributes_by_domain_and_quantities(selectors: SelectorCache, expression: str,
                                                                   expected: bool) -> None:
    assert selectors.get(expression).matches(DRIVER, GPU) is expected


def test_unknown_domain_is_an_empty_map_so_its_attribute_is_a_runtime_error(selectors: SelectorCache) -> None:
    with pytest.raises(CelError, match="model"):
        selectors.get('device.attributes["nvidia.com"].model == "A100"').matches(DRIVER, GPU)


def test_each_expression_is_compiled_once(selectors: SelectorCache) -> None:
    expression = 'device.attributes["gpu.example.com"].index == 3'
    assert selectors.get(expression) is selectors.get(expression)


@pytest.mark.parametrize(("expression", "message"), [
    ("device.driver ==", "compilation failed"),
    ('"A100"', "must evaluate to bool"),
    ('quantity("1") > quantity("2")', "compilation failed"),
])
def test_bad_expression_is_a_clear_error(selectors: SelectorCache, expression: str, message: str) -> None:
    with pytest.raises(CelError, match=message):
        selectors.get(expression)


def test_bad_quantity_at_run_time_is_a_cel_error_not_a_crash(selectors: SelectorCache) -> None:
    with pytest.raises(CelError, match="quantity"):
        selectors.get('quantity("1x").sign() == 1').matches(DRIVER, GPU)


def test_dynamic_value_that_is_not_a_bool_fails_at_run_time(selectors: SelectorCache) -> None:
    with pytest.raises(CelError, match="could not be converted to bool"):
        selectors.get('device.attributes["gpu.example.com"].model').matches(DRIVER, GPU)


def test_semver_normalizes_on_request_only() -> None:
    assert parse_semver("v1.2", normalize=True) == (1, 2, 0, "")
    with pytest.raises(ValueError):
        parse_semver("v1.2")
