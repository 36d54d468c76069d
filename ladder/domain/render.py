"""The resolution as the JSON document of STATE.md (keys in the documented order)."""

from __future__ import annotations

from typing import Any

from ladder.domain.timefmt import format_utc, format_utc_or_none
from ladder.domain.types import Resolution


def resolution_to_dict(resolution: Resolution) -> dict[str, Any]:
    empty = resolution.empty
    return {
        "model": resolution.model,
        "grouping": resolution.grouping,
        "category": resolution.category,
        "resolved_at": format_utc(resolution.resolved_at),
        "pool": [
            {
                "provider": e.provider,
                "model": e.model,
                "rung": e.rung.label,
                "rung_index": int(e.rung),
                "connection_id": e.connection_id,
                "allowed_connection_ids": list(e.allowed_connection_ids),
            }
            for e in resolution.pool
        ],
        "excluded": [
            {
                "provider": x.provider,
                "model": x.model,
                "connection_id": x.connection_id,
                "rung": None if x.rung is None else x.rung.label,
                "reason": x.reason,
                "detail": x.detail,
            }
            for x in resolution.excluded
        ],
        "empty": None
        if empty is None
        else {"code": empty.code, "message": empty.message, "retry_at": format_utc_or_none(empty.retry_at)},
        "refresh": list(resolution.refresh),
    }
