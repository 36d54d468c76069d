from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from ladder.offline.gcpause import paused_gc


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    was_enabled = gc.isenabled()
    yield
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


def test_no_collection_runs_inside_the_block(gc_collections: list[int]) -> None:
    gc.enable()
    with paused_gc():
        nodes = [Node() for _ in range(20_000)]  # far past the young generation's threshold (700)
        inside = list(gc_collections)
    assert inside == []
    assert gc.isenabled()
    del nodes


def test_the_collection_that_fell_due_runs_after_the_pause() -> None:
    gc.enable()
    gc.collect()  # nothing due when the block starts
    with paused_gc():
        node = Node()
        ref = weakref.ref(node)
        del node  # a cycle: reference counting cannot free it
        garbage = [Node() for _ in range(1_000)]  # past the young generation's threshold (700)
        del garbage
        kept_inside = ref() is not None
    Node()  # the first allocation after the pause runs the collection that fell due (no gc.collect)
    assert kept_inside
    assert ref() is None


def test_the_collector_is_back_on_after_an_exception() -> None:
    gc.enable()
    with pytest.raises(ValueError, match="bad state"), paused_gc():
        raise ValueError("bad state")
    assert gc.isenabled()


def test_a_collector_switched_off_by_someone_else_stays_off() -> None:
    gc.disable()
    with paused_gc():
        pass
    assert not gc.isenabled()


def test_an_inner_block_leaves_the_outer_one_paused() -> None:
    gc.enable()
    with paused_gc():
        with paused_gc():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
