"""Times as the contracts write them: UTC, `YYYY-MM-DDTHH:MM:SSZ`, microseconds only when not zero."""

from __future__ import annotations

from datetime import UTC, datetime


def format_utc(moment: datetime) -> str:
    utc = moment.astimezone(UTC)
    if utc.microsecond:
        return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ")


def format_utc_or_none(moment: datetime | None) -> str | None:
    return None if moment is None else format_utc(moment)
