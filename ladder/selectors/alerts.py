"""Alerts: what the dashboard shows and what ladder.domain.alerts reads (ladder.services.alerts writes)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from django.db import models
from django.db.models import Count, Min

from ladder import models as m
from ladder.domain.alerts import (
    ALERT_DELIVERY_STATUSES,
    AUTO_ID_EMPTY,
    BEAT_SILENT,
    READINGS_STALE,
    SNAPSHOT_KINDS,
    AlertInputs,
    EmptyAutoId,
    PolledConnection,
)
from ladder.domain.alerts import Episode as AlertEpisodeSpec
from ladder.domain.alerts import Rule as AlertRuleSpec
from ladder.domain.types import Snapshot
from ladder.security.logredact import redact_url
from ladder.selectors.connections import connection_poll_floor_s
from ladder.selectors.health import beat_last_at
from ladder.selectors.snapshot import configuration_get, snapshot_load


@dataclass(frozen=True)
class AlertEpisodeRow:
    id: int
    rule: str  # the rule's name
    kind: str  # the rule's kind
    subject: str
    summary: str
    opened_at: datetime
    closed_at: datetime | None


EPISODE_ROW_FIELDS = ("id", "rule__name", "rule__kind", "subject", "summary", "opened_at", "closed_at")


def alert_episodes_open(*, limit: int = 200) -> list[AlertEpisodeRow]:
    """The episodes still open, newest first."""
    rows = m.AlertEpisode.objects.filter(closed_at__isnull=True).values_list(*EPISODE_ROW_FIELDS)
    return [AlertEpisodeRow(*row) for row in rows[:limit]]


def alert_episodes_closed(*, offset: int = 0, limit: int = 50) -> list[AlertEpisodeRow]:
    """One page of the closed episodes, most recently closed first (``limit`` + 1 rows are asked for,
    so that the caller knows whether an older page exists)."""
    rows = m.AlertEpisode.objects.filter(closed_at__isnull=False).order_by("-closed_at", "-id")
    return [
        AlertEpisodeRow(*row) for row in rows.values_list(*EPISODE_ROW_FIELDS)[offset : offset + limit + 1]
    ]


@dataclass(frozen=True)
class AlertDeliveryRow:
    delivery_id: str
    created_at: datetime
    event: str
    channel: str  # the channel's name
    subject: str  # the episode's subject; "test" for a test notification
    status: str
    attempts: int
    last_error: str
    sent_at: datetime | None


def alert_deliveries_recent(*, status: str | None = None, limit: int = 100) -> list[AlertDeliveryRow]:
    """The latest deliveries (of one status when given), newest first."""
    rows = m.AlertDelivery.objects.all() if status is None else m.AlertDelivery.objects.filter(status=status)
    fields = ("delivery_id", "created_at", "event", "channel__name", "episode__subject", "status", "attempts")
    found = rows.order_by("-created_at", "-id").values_list(*fields, "last_error", "sent_at")
    return [
        AlertDeliveryRow(str(delivery_id), at, event, channel, "test" if subject is None else subject, *rest)
        for delivery_id, at, event, channel, subject, *rest in found[:limit]
    ]


def alert_delivery_counts() -> dict[str, int]:
    """How many deliveries each status holds (every status present, 0 when none). One query."""
    counts = dict.fromkeys(ALERT_DELIVERY_STATUSES, 0)
    for (_, status), count in alert_delivery_figures().counts.items():
        counts[status] = counts.get(status, 0) + count
    return counts


@dataclass(frozen=True)
class AlertDeliveryFigures:
    """What /metrics reports of the deliveries: the rows by (channel kind, status), and when the
    oldest delivery still pending of each channel kind was created (kinds with none pending: absent)."""

    counts: dict[tuple[str, str], int]
    oldest_pending: dict[str, datetime]


def alert_delivery_figures() -> AlertDeliveryFigures:
    """The deliveries stored, by channel kind and status, with the oldest pending one's creation per
    kind. One query (grouped; the minimum rides along, so the stuck queue costs nothing more)."""
    rows = (
        m.AlertDelivery.objects.values_list("channel__kind", "status")
        .annotate(n=Count("id"), oldest=Min("created_at"))
        .order_by()
    )
    counts: dict[tuple[str, str], int] = {}
    oldest_pending: dict[str, datetime] = {}
    for kind, status, count, oldest in rows:
        counts[(kind, status)] = int(count)
        if status == "pending" and oldest is not None:
            oldest_pending[kind] = oldest
    return AlertDeliveryFigures(counts=counts, oldest_pending=oldest_pending)


def alert_episode_open_counts() -> dict[str, int]:
    """Rule kind → how many episodes are open (kinds with none: absent). One query."""
    rows = (
        m.AlertEpisode.objects.filter(closed_at__isnull=True)
        .values_list("rule__kind")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {kind: int(count) for kind, count in rows}


@dataclass(frozen=True)
class AlertChannelRow:
    id: int
    name: str
    kind: str
    destination: str  # a webhook's host (its path may hold a token) or the e-mail addresses
    enabled: bool


def _destination(kind: str, url: str, email_to: str) -> str:
    if kind == "email":
        return email_to.replace("\n", ", ")
    return redact_url(url) if url else "no url"


def alert_channels_all() -> list[AlertChannelRow]:
    rows = m.AlertChannel.objects.order_by("name", "id")
    return [
        AlertChannelRow(pk, name, kind, _destination(kind, url, email_to), enabled)
        for pk, name, kind, url, email_to, enabled in rows.values_list(
            "id", "name", "kind", "url", "email_to", "enabled"
        )
    ]


@dataclass(frozen=True, slots=True)
class AlertRuleRow:
    id: int
    name: str
    kind: str
    target: str
    threshold: int | None
    quiet_period_s: int
    enabled: bool
    channels: tuple[str, ...]  # the channels' names; none: every enabled channel


def alert_rules_all() -> list[AlertRuleRow]:
    rows = m.AlertRule.objects.order_by("kind", "name", "id").prefetch_related("channels")
    columns = AlertRuleRow.__slots__[:-1]  # the rule's own fields: every one but its channels' names
    return [
        AlertRuleRow(
            **{name: getattr(rule, name) for name in columns},
            channels=tuple(channel.name for channel in rule.channels.all()),
        )
        for rule in rows
    ]


def alert_rules_enabled() -> list[AlertRuleSpec]:
    rows = m.AlertRule.objects.filter(enabled=True).order_by("id")
    found = rows.values_list("id", "kind", "target", "threshold", "quiet_period_s")
    return [
        AlertRuleSpec(pk, kind, target, threshold, float(quiet_period_s))
        for pk, kind, target, threshold, quiet_period_s in found
    ]


def alert_episodes_unrecovered() -> list[AlertEpisodeSpec]:
    """The episodes whose recovery is not sent yet (open, or closed within their quiet period)."""
    rows = m.AlertEpisode.objects.filter(recovered_at__isnull=True).values_list(
        "id", "rule_id", "subject", "opened_at", "closed_at"
    )
    return [AlertEpisodeSpec(*row) for row in rows]


def alert_polled_connections(*, refresh_interval_s: float) -> tuple[PolledConnection, ...]:
    """The connections that should be polled — enabled, not keyless, a credential stored, and not
    skipped by the poller (no adapter or no quota endpoint: ``last_poll_error`` "not polled: …") —
    with their latest reading's time and their poll interval. One query."""
    rows = (
        m.Connection.objects.filter(enabled=True, keyless=False)
        .exclude(credential_ciphertext="")
        .exclude(last_poll_error__startswith="not polled:")
        .annotate(last_reading_at=models.Max("readings__fetched_at"))
        .order_by("position", "id")
        .values_list("id", "last_reading_at", "created_at", "provider", "min_poll_interval_s")
    )
    return tuple(
        PolledConnection(
            cid,
            last,
            created,
            max(refresh_interval_s, connection_poll_floor_s(provider, min_poll_interval_s) or 0.0),
        )
        for cid, last, created, provider, min_poll_interval_s in rows
    )


def alert_inputs(*, kinds: Collection[str], now: datetime) -> AlertInputs:
    """What rules of these kinds read, in a few queries whatever the number of connections (only what
    the kinds need is loaded)."""
    loaded = bool(SNAPSHOT_KINDS.intersection(kinds))
    snapshot = snapshot_load(now=now) if loaded else Snapshot()
    polled: tuple[PolledConnection, ...] = ()
    if READINGS_STALE in kinds:
        config = snapshot.config if loaded else configuration_get().to_domain()
        polled = alert_polled_connections(refresh_interval_s=config.refresh_interval_s)
    empty: tuple[EmptyAutoId, ...] = ()
    if AUTO_ID_EMPTY in kinds:
        rows = m.EscalationState.objects.filter(rung__isnull=True).order_by("auto_id")
        empty = tuple(EmptyAutoId(*row) for row in rows.values_list("auto_id", "changed_at"))
    last_beat_at = beat_last_at() if BEAT_SILENT in kinds else None
    return AlertInputs(snapshot=snapshot, polled=polled, empty_auto_ids=empty, last_beat_at=last_beat_at)
