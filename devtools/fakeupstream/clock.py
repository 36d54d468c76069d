"""The fake upstream's clock: real UTC time, or frozen, or moved (``POST /_control/clock``)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any


class Clock:
    """Real UTC time, optionally frozen at a moment or moved by an offset."""

    def __init__(self, frozen_at: datetime | None = None) -> None:
        self._lock = threading.Lock()
        self._initial = frozen_at
        self._frozen_at = frozen_at
        self._offset = timedelta()

    def now(self) -> datetime:
        with self._lock:
            if self._frozen_at is not None:
                return self._frozen_at
            return datetime.now(UTC) + self._offset

    def freeze(self, at: datetime) -> None:
        with self._lock:
            self._frozen_at = at

    def advance(self, seconds: float) -> None:
        with self._lock:
            if self._frozen_at is not None:
                self._frozen_at += timedelta(seconds=seconds)
            else:
                self._offset += timedelta(seconds=seconds)

    def thaw(self) -> None:
        with self._lock:
            self._frozen_at = None
            self._offset = timedelta()

    def restore(self) -> None:
        with self._lock:
            self._frozen_at = self._initial
            self._offset = timedelta()

    def describe(self) -> dict[str, Any]:
        with self._lock:
            frozen, offset = self._frozen_at, self._offset
        return {"frozen": frozen is not None, "offset_s": offset.total_seconds()}
