"""Pausing Python's cyclic garbage collector while a large acyclic graph is built and read.

A state of 1,000 connections becomes some 5,000 frozen dataclasses, tuples and dicts, and none of them
is part of a reference cycle: reference counting frees every one. The cyclic collector does not know
that. While the graph is built it runs a young collection every 700 allocations, walks the graph again
as it ages, and every few resolutions runs a full collection over the whole process (Django alone
holds ~90,000 tracked objects). On the offline resolver that was a quarter of a resolution's time on
average (an A/B run of 1,000-connection resolutions in one process).

Pausing defers collection; it never loses any: the next allocation after the pause runs the collection
that fell due. Nothing here is Django. Only the one-shot offline command pauses (ladder_resolve, parsing
and resolving a file or exporting the live state): never a web request, where the switch would hold
for every thread of a gthread worker.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """No automatic cyclic collection inside the block (an explicit gc.collect() still runs).

    The collector is process-wide, so threads share the pause. The block that switched it off switches
    it back on when it ends, by exception too; that also ends, early, the pause of a block still open in
    another thread (harmless: that thread's graph is walked sooner). A block that found the collector
    off leaves it off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
