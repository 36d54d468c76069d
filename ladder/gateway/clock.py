"""The API's clock: the views read it as ``clock.current_time()``, so that tests replace it in one
place to span hours or days."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone


def current_time() -> datetime:
    return timezone.now()
