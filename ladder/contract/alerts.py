"""The body of an alert notification, declared once: the generic webhook sends it as JSON (signed,
docs/ALERTS.md), and the Slack, Discord and e-mail channels render their text from it.

The body is built once, when the delivery is created, and stored with it: every retry sends the same
body with the same ``delivery_id``, so that a receiver can drop a repeat.
"""

from __future__ import annotations

from typing import Literal

import msgspec

ALERT_NOTIFICATION_VERSION = 1
AlertEvent = Literal["fired", "recovered", "test"]


class AlertRuleRef(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    kind: str


class AlertNotification(msgspec.Struct, frozen=True, kw_only=True):
    """One notification. ``delivery_id`` (a UUID) is also the ``webhook-id`` header of a webhook and
    the ``X-Ladder-Delivery-Id`` header of the other channels. Times are UTC, ``...Z``."""

    version: int = ALERT_NOTIFICATION_VERSION
    delivery_id: str
    event: AlertEvent
    rule: AlertRuleRef | None  # None for a test
    subject: str
    summary: str
    detail: dict[str, object] = msgspec.field(default_factory=dict)
    opened_at: str | None = None
    closed_at: str | None = None
    link: str | None = None  # the dashboard, when LADDER_PUBLIC_URL is set
    channel: str = ""
