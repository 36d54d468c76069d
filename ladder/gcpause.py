"""Pausing Python's cyclic garbage collector while a large acyclic graph is built and read.

A state of 1,000 connections becomes some 5,000 frozen dataclasses, tuples and dicts, and none of them
is part of a reference cycle: reference counting frees every one. The cyclic collector does not know
that. While the graph is built it runs a young collection every 700 allocations, walks the graph again
as it ages, and every few resolutions runs a full collection over the whole process (Django alone
holds ~90,000 tracked objects). On the offline resolver that was a third of the time of a resolution
(`make bench-domain`).

Pausing defers collection; it never loses any. The collector is switched back on when the block ends,
by exception too, and the next allocation runs the collection that was due. Nothing here is Django:
the offline resolver, the importer and the snapshot loader share it.
"""

from __future__ import annotations

import gc
from types import TracebackType


class paused_gc:  # noqa: N801 — used as a statement, like contextlib's suppress
    """`with paused_gc(): ...` — no cyclic collection inside the block.

    Process-wide, as the collector is. Nesting and threads are safe: only the block that found the
    collector on switches it back on, so it ends on whenever it was on before the first block began;
    a collector that someone else switched off stays off."""

    __slots__ = ("_was_enabled",)

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._was_enabled:
            gc.enable()
