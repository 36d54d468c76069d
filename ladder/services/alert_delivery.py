"""Alert deliveries: one row per (episode, channel, event), sent by Celery at least once.

- ``enqueue_deliveries`` (called by the rules when an episode fires or recovers) and ``enqueue_test``
  (the "send a test" buttons) create the rows, each with its stable ``delivery_id`` and its body
  (``payload``, built once), and queue ``ladder.tasks.deliver_alert`` when the transaction commits.
- ``delivery_attempt`` is one attempt (the task's body): sent, failed for good, or "again in n s"
  (jittered exponential backoff: transient faults only, ``LADDER_ALERT_MAX_ATTEMPTS`` attempts in all).
- ``deliveries_sweep`` (the beat, every ``LADDER_ALERT_SWEEP_S``) queues again the pending deliveries
  whose task was lost: a worker killed mid-delivery, a broker that dropped a message.

Who sends: one owner per delivery, a Redis key ``<prefix>:alert_delivery:<pk>`` that holds the Celery
task id of the message allowed to attempt it. Queuing sets it when no one holds it (``SET NX``), for
the countdown plus ``LADDER_ALERT_QUEUED_S``; an attempt starts only when the key is its own or is
gone, and holds it for the task's hard time limit. A copy of a message (Redis restoring an unacked
one after its visibility timeout, a sweep racing the commit) finds another owner and does nothing;
a worker killed mid-send leaves a key that lapses, after which the sweep queues the delivery again —
so a receiver sees a repeat only when the kill came between its answer and the "sent" being stored,
and that repeat has the same delivery id. Redis unavailable: the attempt goes ahead (at least once
wins over at most once) and the sweep waits for Redis.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import msgspec
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from ladder import models as m
from ladder.contract.alerts import AlertNotification, AlertRuleRef
from ladder.domain.timefmt import format_utc, format_utc_or_none
from ladder.selectors.hotstate import redis_client, redis_key_prefix
from ladder.services import enqueue
from ladder.services.alert_senders import DeliveryError, Target, scrub, send
from ladder.services.hotstate import tolerated

logger = logging.getLogger(__name__)

SWEEP_BATCH_MAX = 500
DEFAULT_CHANNEL_NAME = "default-webhook"
ERROR_MAX_CHARS = 1000

# Take the key when it is free or already ours; refresh its lifetime. 1: ours now, 0: another's.
_CLAIM_SCRIPT = """
local held = redis.call('GET', KEYS[1])
if (not held) or held == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""


@dataclass(frozen=True)
class AttemptOutcome:
    status: str  # "sent", "failed", "retry", "skipped" (another owner, or nothing left to do)
    retry_in_s: float | None = None
    error: str = ""


# --- creating deliveries ------------------------------------------------------------------------


def enqueue_deliveries(*, episode: m.AlertEpisode, event: str, now: datetime) -> list[m.AlertDelivery]:
    """One delivery of ``event`` ("fired" or "recovered") of ``episode`` per target channel: the rule's
    enabled channels, or every enabled channel when the rule names none; a recovery goes to the
    channels its firing went to (still enabled), when there was one. Idempotent: a delivery that
    exists for (episode, channel, event) is returned as it is, not sent again. New ones are queued
    when the current transaction commits."""
    if event not in ("fired", "recovered"):
        raise ValueError(f"event: must be 'fired' or 'recovered', got {event!r}")
    rule = episode.rule
    chosen = rule.channels.all()
    targets = chosen if chosen.exists() else m.AlertChannel.objects.all()
    if event == "recovered":
        # A recovery goes where the firing went (a channel added since never heard of the episode).
        fired = m.AlertDelivery.objects.filter(episode=episode, event="fired").values("channel_id")
        if fired.exists():
            targets = m.AlertChannel.objects.filter(pk__in=fired)
    deliveries: list[m.AlertDelivery] = []
    created_pks: list[int] = []
    for channel in targets.filter(enabled=True):
        delivery, created = _delivery_get_or_create(episode=episode, channel=channel, event=event, now=now)
        deliveries.append(delivery)
        if created:
            created_pks.append(delivery.pk)
    if created_pks:
        transaction.on_commit(partial(deliveries_queue, created_pks))
    return deliveries


def enqueue_test(*, channel: m.AlertChannel, now: datetime) -> m.AlertDelivery:
    """A test notification to ``channel`` (event "test", no episode), queued on commit."""
    delivery = _delivery_create(
        channel=channel,
        event="test",
        now=now,
        rule=None,
        subject="test",
        summary=f"A test notification from OmniRoute Ladder to the channel {channel.name!r}.",
        detail={"channel": channel.name, "kind": channel.kind},
        opened_at=format_utc(now),
    )
    transaction.on_commit(partial(deliveries_queue, [delivery.pk]))
    return delivery


def _delivery_get_or_create(
    *, episode: m.AlertEpisode, channel: m.AlertChannel, event: str, now: datetime
) -> tuple[m.AlertDelivery, bool]:
    found = m.AlertDelivery.objects.filter(episode=episode, channel=channel, event=event).first()
    if found is not None:
        return found, False
    rule = episode.rule
    try:
        with transaction.atomic():
            delivery = _delivery_create(
                channel=channel,
                event=event,
                now=now,
                episode=episode,
                rule=AlertRuleRef(name=rule.name, kind=rule.kind),
                subject=episode.subject,
                summary=episode.summary,
                detail=dict(episode.detail or {}),
                opened_at=format_utc(episode.opened_at),
                closed_at=format_utc_or_none(episode.closed_at) if event == "recovered" else None,
            )
    except IntegrityError:  # another process created it between the read and the insert
        return m.AlertDelivery.objects.get(episode=episode, channel=channel, event=event), False
    return delivery, True


def _delivery_create(
    *, channel: m.AlertChannel, event: str, now: datetime, episode: m.AlertEpisode | None = None, **words: Any
) -> m.AlertDelivery:
    """A delivery row and its notification, built once (``words``: the notification's own fields)."""
    delivery_id = uuid.uuid4()
    notification = AlertNotification(
        delivery_id=str(delivery_id),
        event=event,  # type: ignore[arg-type]  # checked by the callers
        link=dashboard_link(),
        channel=channel.name,
        **words,
    )
    return m.AlertDelivery.objects.create(
        delivery_id=delivery_id,
        episode=episode,
        channel=channel,
        event=event,
        payload=msgspec.to_builtins(notification),
        created_at=now,
    )


def dashboard_link() -> str | None:
    base = settings.LADDER_PUBLIC_URL.rstrip("/")
    return f"{base}/" if base else None


# --- queuing -----------------------------------------------------------------------------------


def owner_key(delivery_pk: int) -> str:
    return f"{redis_key_prefix()}:alert_delivery:{delivery_pk}"


def deliveries_queue(delivery_pks: Iterable[int], *, countdown_s: float = 0.0) -> list[int]:
    """Queue a task for each delivery that no message owns yet, sent when the current transaction
    commits; returns the pks queued. Never raises: a broker or Redis fault is logged and left to the
    sweep (Redis unavailable: queued anyway, at least once)."""
    return enqueue.enqueue_once(
        "ladder.tasks.deliver_alert",
        {owner_key(pk): pk for pk in delivery_pks},
        ttl_s=countdown_s + float(settings.LADDER_ALERT_QUEUED_S),
        countdown_s=countdown_s,
        send_without_redis=True,
    )


def _claim(delivery_pk: int, owner: str, hold_s: float) -> bool:
    with tolerated():
        return bool(
            redis_client().eval(_CLAIM_SCRIPT, 1, owner_key(delivery_pk), owner, max(1, int(hold_s * 1000)))
        )
    return True  # Redis unavailable: at least once wins over at most once


def _release(delivery_pk: int, owner: str) -> None:
    enqueue.keys_release([owner_key(delivery_pk)], owner=owner)


# --- one attempt ---------------------------------------------------------------------------------


def retry_delay_s(attempts: int, *, rng: random.Random | None = None) -> float:
    """Exponential backoff with jitter, after ``attempts`` attempts: half the step plus a random half
    (base, 2 × base, 4 × base … up to LADDER_ALERT_RETRY_MAX_S)."""
    base = float(settings.LADDER_ALERT_RETRY_BASE_S)
    step = min(float(settings.LADDER_ALERT_RETRY_MAX_S), base * 2 ** max(0, attempts - 1))
    return step / 2 + (rng or random).uniform(0, step / 2)


def delivery_attempt(*, delivery_pk: int, owner: str, now: datetime, lease_s: float) -> AttemptOutcome:
    """One attempt to send a pending delivery, as the message ``owner`` (a Celery task id) that holds
    it for ``lease_s``. A transient fault before the last attempt queues the next one, a message with
    the same task id due after the backoff (the owner keeps the delivery meanwhile)."""
    if not _claim(delivery_pk, owner, lease_s):
        return AttemptOutcome("skipped")
    delivery = m.AlertDelivery.objects.select_related("channel").filter(pk=delivery_pk).first()
    if delivery is None or delivery.status != "pending":
        _release(delivery_pk, owner)
        return AttemptOutcome("skipped")
    channel = delivery.channel
    m.AlertDelivery.objects.filter(pk=delivery_pk).update(attempts=F("attempts") + 1)
    attempts = delivery.attempts + 1
    max_attempts = max(1, int(settings.LADDER_ALERT_MAX_ATTEMPTS))
    try:
        if not channel.enabled and delivery.event != "test":
            raise DeliveryError(f"channel {channel.name!r} is disabled", transient=False)
        send(_target(channel, channel.secret), delivery.payload, now=now)
    except DeliveryError as exc:
        error, transient, asked_s = str(exc), exc.transient, exc.retry_after_s
    except Exception as exc:  # a sender's bug or a soft time limit: worth another try, recorded
        error, transient, asked_s = _without_secrets(f"{type(exc).__name__}: {exc}", channel), True, None
    else:
        m.AlertDelivery.objects.filter(pk=delivery_pk, status="pending").update(
            status="sent", sent_at=now, last_error=""
        )
        _release(delivery_pk, owner)
        return AttemptOutcome("sent")
    error = error[:ERROR_MAX_CHARS]
    if not transient or attempts >= max_attempts:
        final = error if not transient else f"gave up after {attempts} attempts: {error}"
        m.AlertDelivery.objects.filter(pk=delivery_pk, status="pending").update(
            status="failed", last_error=final[:ERROR_MAX_CHARS]
        )
        _release(delivery_pk, owner)
        logger.warning("alert delivery %s to %s failed: %s", delivery.delivery_id, channel.name, final)
        return AttemptOutcome("failed", error=final)
    delay_s = retry_delay_s(attempts)
    if asked_s is not None:  # the receiver's Retry-After, within our own cap
        delay_s = min(max(delay_s, asked_s), float(settings.LADDER_ALERT_RETRY_MAX_S))
    m.AlertDelivery.objects.filter(pk=delivery_pk).update(last_error=error)
    # The next attempt is this owner's message again (the same task id), due in delay_s; lost, the
    # key lapses and the sweep queues the delivery under a new owner.
    _claim(delivery_pk, owner, delay_s + float(settings.LADDER_ALERT_QUEUED_S))
    enqueue.task_send("ladder.tasks.deliver_alert", args=[delivery_pk], task_id=owner, countdown_s=delay_s)
    logger.info(
        "alert delivery %s to %s: attempt %d failed (%s), again in %.1f s",
        delivery.delivery_id,
        channel.name,
        attempts,
        error,
        delay_s,
    )
    return AttemptOutcome("retry", retry_in_s=delay_s, error=error)


def _without_secrets(text: str, channel: m.AlertChannel) -> str:
    try:
        secret = channel.secret
    except Exception:  # the very fault may be a secret that no longer decrypts
        secret = ""
    return scrub(text, _target(channel, secret))


def _target(row: m.AlertChannel, secret: str) -> Target:
    return Target(kind=row.kind, name=row.name, url=row.url, secret=secret, email_to=row.email_to)


# --- the sweep -----------------------------------------------------------------------------------


def deliveries_sweep(*, now: datetime) -> int:
    """Queue again the pending deliveries that no message owns (their task was lost), older than one
    sweep period (younger ones may still be waiting for their transaction's commit). Returns how
    many were queued; 0 when Redis cannot say who owns what."""
    reachable = False
    with tolerated():
        reachable = bool(redis_client().ping())
    if not reachable:
        return 0
    settled = now - timedelta(seconds=float(settings.LADDER_ALERT_SWEEP_S))
    pks = list(
        m.AlertDelivery.objects.filter(status="pending", created_at__lte=settled)
        .order_by("created_at", "id")
        .values_list("pk", flat=True)[:SWEEP_BATCH_MAX]
    )
    queued = deliveries_queue(pks)
    if queued:
        logger.info("alert sweep: queued %d lost deliveries again", len(queued))
    return len(queued)


# --- the default channel of `make run` ------------------------------------------------------------


def alert_channel_default_webhook(*, url: str) -> tuple[m.AlertChannel, str]:
    """The channel LADDER_ALERT_WEBHOOK_URL asks for, made once. The variable names its URL: a
    different one at a later start moves the channel there (the operator's other edits — secret,
    enabled, rules — are kept). Returns (channel, "created" | "moved" | "kept")."""
    found = m.AlertChannel.objects.filter(name=DEFAULT_CHANNEL_NAME).first()
    if found is not None:
        if found.url == url:
            return found, "kept"
        found.url = url
        found.full_clean()
        found.save(update_fields=["url"])
        return found, "moved"
    channel = m.AlertChannel(name=DEFAULT_CHANNEL_NAME, kind="webhook", url=url)
    channel.full_clean()
    try:
        with transaction.atomic():
            channel.save()
    except IntegrityError:
        return m.AlertChannel.objects.get(name=DEFAULT_CHANNEL_NAME), "kept"
    return channel, "created"


def enqueue_test_to(*, channel_id: int, now: datetime) -> m.AlertDelivery:
    """enqueue_test to the channel with this id (the dashboard's button); AlertChannel.DoesNotExist
    when there is none."""
    return enqueue_test(channel=m.AlertChannel.objects.get(pk=channel_id), now=now)
