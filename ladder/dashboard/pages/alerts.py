"""The alerts page: open and closed episodes, deliveries, channels and rules."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ladder import models as m
from ladder.dashboard.wording import duration_words
from ladder.security.logredact import redact_url
from ladder.selectors.alerts import (
    alert_channels_all,
    alert_deliveries_recent,
    alert_delivery_counts,
    alert_episodes_closed,
    alert_episodes_open,
    alert_rules_all,
)

ALERT_HISTORY_PAGE = 50
ALERT_DELIVERIES_SHOWN = 100


@dataclass(frozen=True)
class EpisodeRow:
    id: int
    rule: str
    kind: str
    subject: str
    summary: str
    opened_at: datetime
    closed_at: datetime | None
    lasted: str  # "open for 12m" / "lasted 1h 05m"


@dataclass(frozen=True)
class DeliveryRow:
    delivery_id: str
    created_at: datetime
    event: str
    channel: str
    subject: str
    status: str
    attempts: int
    last_error: str
    sent_at: datetime | None


@dataclass(frozen=True)
class ChannelRow:
    id: int
    name: str
    kind: str
    destination: str  # a webhook's host (its path may hold a token) or the e-mail addresses
    enabled: bool


@dataclass(frozen=True)
class RuleRow:
    id: int
    name: str
    kind: str
    target: str
    threshold: int | None
    quiet_period_s: int
    enabled: bool
    channels: str


@dataclass
class AlertsPage:
    now: datetime
    open: list[EpisodeRow]
    history: list[EpisodeRow]
    page: int
    has_older: bool
    deliveries: list[DeliveryRow]
    delivery_counts: dict[str, int]
    status: str  # "" = every status
    channels: list[ChannelRow]
    rules: list[RuleRow]

    @property
    def older_page(self) -> int:
        return self.page + 1

    @property
    def newer_page(self) -> int:
        return self.page - 1


def _episode_row(episode: m.AlertEpisode, now: datetime) -> EpisodeRow:
    closed = episode.closed_at
    lasted = (
        f"open for {duration_words((now - episode.opened_at).total_seconds())}"
        if closed is None
        else f"lasted {duration_words((closed - episode.opened_at).total_seconds())}"
    )
    return EpisodeRow(
        episode.pk,
        episode.rule.name,
        episode.rule.kind,
        episode.subject,
        episode.summary,
        episode.opened_at,
        closed,
        lasted,
    )


def _destination(channel: m.AlertChannel) -> str:
    if channel.kind == "email":
        return channel.email_to.replace("\n", ", ")
    return redact_url(channel.url) if channel.url else "no url"


def _delivery_row(delivery: m.AlertDelivery) -> DeliveryRow:
    subject = delivery.episode.subject if delivery.episode is not None else "test"
    return DeliveryRow(
        str(delivery.delivery_id),
        delivery.created_at,
        delivery.event,
        delivery.channel.name,
        subject,
        delivery.status,
        delivery.attempts,
        delivery.last_error,
        delivery.sent_at,
    )


def alerts_page_build(*, now: datetime, page: int = 1, status: str = "") -> AlertsPage:
    """The alerts page: open episodes, one page of the closed ones, the latest deliveries (failed
    ones counted and filterable), the channels and the rules. A fixed number of queries."""
    history = alert_episodes_closed(offset=(page - 1) * ALERT_HISTORY_PAGE, limit=ALERT_HISTORY_PAGE)
    return AlertsPage(
        now=now,
        open=[_episode_row(e, now) for e in alert_episodes_open()],
        history=[_episode_row(e, now) for e in history[:ALERT_HISTORY_PAGE]],
        page=page,
        has_older=len(history) > ALERT_HISTORY_PAGE,
        deliveries=[
            _delivery_row(d)
            for d in alert_deliveries_recent(status=status or None, limit=ALERT_DELIVERIES_SHOWN)
        ],
        delivery_counts=alert_delivery_counts(),
        status=status,
        channels=[ChannelRow(c.pk, c.name, c.kind, _destination(c), c.enabled) for c in alert_channels_all()],
        rules=[
            RuleRow(
                r.pk,
                r.name,
                r.kind,
                r.target,
                r.threshold,
                r.quiet_period_s,
                r.enabled,
                ", ".join(c.name for c in r.channels.all()) or "every enabled channel",
            )
            for r in alert_rules_all()
        ],
    )
