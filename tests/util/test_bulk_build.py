"""Building long-lived state with the cyclic collector paused (util/bulk_build.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from pyvolcano.util.bulk_build import bulk_build, frozen_scope


@pytest.fixture(autouse=True)
def _restore_collector() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_collector_is_off_inside_the_block_and_on_again_after() -> None:
    gc.enable()
    with bulk_build():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled_after_the_block() -> None:
    gc.disable()
    with bulk_build():
        pass
    assert not gc.isenabled()


def test_collector_is_restored_when_the_block_raises_and_nothing_is_frozen() -> None:
    gc.enable()
    gc.unfreeze()
    with pytest.raises(ValueError, match="bad input"), bulk_build():
        raise ValueError("bad input")
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_what_the_block_built_is_frozen_out_of_later_collections() -> None:
    gc.unfreeze()
    with bulk_build():
        state = [{"task": i} for i in range(1000)]
    assert gc.get_freeze_count() >= len(state)
    collected = {id(o) for generation in range(3) for o in gc.get_objects(generation=generation)}
    assert not collected & {id(x) for x in state}


def test_what_was_frozen_in_the_scope_is_collectable_after_it() -> None:
    gc.unfreeze()
    with frozen_scope():
        with bulk_build():
            state = [{"task": i} for i in range(100)]
        assert gc.get_freeze_count() >= len(state)
    assert gc.get_freeze_count() == 0
