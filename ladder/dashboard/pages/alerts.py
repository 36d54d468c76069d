"""The alerts page: open and closed episodes, deliveries, channels and rules."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ladder.dashboard.wording import duration_words
from ladder.selectors.alerts import (
    AlertChannelRow,
    AlertDeliveryRow,
    AlertEpisodeRow,
    AlertRuleRow,
    alert_channels_all,
    alert_deliveries_recent,
    alert_delivery_counts,
    alert_episodes_closed,
    alert_episodes_open,
    alert_rules_all,
)

ALERT_HISTORY_PAGE = 50
ALERT_DELIVERIES_SHOWN = 100


@dataclass
class AlertsPage:
    open: list[tuple[AlertEpisodeRow, str]]  # each episode with how long it has lasted, in words
    history: list[tuple[AlertEpisodeRow, str]]
    page: int
    newer_page: int | None  # None on the first page
    older_page: int | None  # None on the last
    deliveries: list[AlertDeliveryRow]
    delivery_counts: dict[str, int]  # every status, in order
    status: str  # "" = every status
    channels: list[AlertChannelRow]
    rules: list[AlertRuleRow]
    error: str = ""  # the bad ?page= or ?status=, named


def _lasted(episode: AlertEpisodeRow, now: datetime) -> tuple[AlertEpisodeRow, str]:
    """The episode, with "open for 12m" or "lasted 1h 05m"."""
    if episode.closed_at is None:
        return episode, f"open for {duration_words((now - episode.opened_at).total_seconds())}"
    return episode, f"lasted {duration_words((episode.closed_at - episode.opened_at).total_seconds())}"


def _query(page: str, status: str, statuses: tuple[str, ...]) -> tuple[int, str, str]:
    """(page, status, error) of ``?page=`` (a page of the history from 1) and ``?status=`` (one of
    ``statuses``); a bad one is named, and the page shows its first page of every status."""
    page = page.strip() or "1"
    status = status.strip()
    # isascii: "²".isdigit() holds but int() refuses it; the length bound keeps int() off huge input.
    if not (page.isascii() and page.isdigit() and len(page) <= 6) or not 1 <= int(page) <= 100_000:
        return 1, "", f"page must be a whole number from 1; got {page[:20]!r}."
    if status and status not in statuses:
        return 1, "", f"status must be one of {', '.join(statuses)}; got {status[:20]!r}."
    return int(page), status, ""


def alerts_page_build(*, now: datetime, page: str = "1", status: str = "") -> AlertsPage:
    """The alerts page: open episodes, one page of the closed ones, the latest deliveries (failed
    ones counted and filterable), the channels and the rules. ``page`` and ``status`` are the query's
    text. A fixed number of queries."""
    counts = alert_delivery_counts()
    number, status, error = _query(page, status, tuple(counts))
    history = alert_episodes_closed(offset=(number - 1) * ALERT_HISTORY_PAGE, limit=ALERT_HISTORY_PAGE)
    return AlertsPage(
        open=[_lasted(e, now) for e in alert_episodes_open()],
        history=[_lasted(e, now) for e in history[:ALERT_HISTORY_PAGE]],
        page=number,
        newer_page=number - 1 if number > 1 else None,
        older_page=number + 1 if len(history) > ALERT_HISTORY_PAGE else None,
        deliveries=alert_deliveries_recent(status=status or None, limit=ALERT_DELIVERIES_SHOWN),
        delivery_counts=counts,
        status=status,
        channels=alert_channels_all(),
        rules=alert_rules_all(),
        error=error,
    )
