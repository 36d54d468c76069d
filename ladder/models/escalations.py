"""The escalation log (DESIGN L12): each change of the rung an auto id's pool starts on, what the daily
purge deleted, and the last rung seen. For people and metrics only: routing never reads it."""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import F, Q

from ladder.domain.types import rung_label
from ladder.models.fields import RUNG_CHOICES, choices

ESCALATION_KINDS: tuple[str, ...] = ("up", "down", "empty")
BOTH_RUNGS = Q(from_rung__isnull=False) & Q(to_rung__isnull=False)


class EscalationEvent(models.Model):
    """The rung that a gateway resolution of an auto id starts on changed from the previous one:
    it climbed (``up``), turned empty (``empty``) or came back down (``down``; empty → any rung is
    down). An audit trail for people and metrics only: routing never reads it (DESIGN L12)."""

    auto_id = models.CharField(max_length=64)
    from_rung = models.PositiveSmallIntegerField(choices=RUNG_CHOICES, null=True, blank=True)  # null: empty
    to_rung = models.PositiveSmallIntegerField(choices=RUNG_CHOICES, null=True, blank=True)  # null: empty
    kind = models.CharField(max_length=8, choices=choices(ESCALATION_KINDS))
    why = models.TextField(blank=True, default="")
    occurred_at = models.DateTimeField()

    class Meta:
        ordering: ClassVar[list[str]] = ["occurred_at", "id"]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["auto_id", "occurred_at"], name="escalation_auto_at_idx"),
            models.Index(fields=["occurred_at"], name="escalation_at_idx"),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=(Q(from_rung__isnull=True) | Q(from_rung__lte=4))
                & (Q(to_rung__isnull=True) | Q(to_rung__lte=4)),
                name="escalation_rung_range",
                violation_error_message="from_rung and to_rung must be empty or between 0 and 4.",
            ),
            models.CheckConstraint(
                # isnull guards: a comparison with NULL is unknown, and a CHECK passes on unknown.
                condition=(Q(kind="up") & BOTH_RUNGS & Q(from_rung__lt=F("to_rung")))
                | (Q(kind="empty") & Q(from_rung__isnull=False) & Q(to_rung__isnull=True))
                | (Q(kind="down") & Q(from_rung__isnull=True) & Q(to_rung__isnull=False))
                | (Q(kind="down") & BOTH_RUNGS & Q(from_rung__gt=F("to_rung"))),
                name="escalation_kind_matches_rungs",
                violation_error_message="kind must be up (to a higher rung), empty (to no rung) or down "
                "(to a lower rung, or from no rung).",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.auto_id} {self.kind}: {rung_label(self.from_rung)} → {rung_label(self.to_rung)}"


class EscalationTally(models.Model):
    """How many escalation events of each auto id and kind the daily purge has deleted: what
    ``ladder_escalations_total`` adds to the events still stored, so that the counter never goes
    down when old events are purged."""

    auto_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=8, choices=choices(ESCALATION_KINDS))
    purged = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["auto_id", "kind"], name="escalation_tally_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.auto_id} {self.kind}: {self.purged} purged"


class EscalationState(models.Model):
    """The rung of the last gateway resolution of each auto id, as the escalation log saw it (null: the
    pool was empty). The log's memory, kept in the database when the rung changes so that the log
    stays right when Redis is away; routing never reads it (DESIGN L12)."""

    auto_id = models.CharField(max_length=64, primary_key=True)
    rung = models.PositiveSmallIntegerField(choices=RUNG_CHOICES, null=True, blank=True)
    changed_at = models.DateTimeField()

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=Q(rung__isnull=True) | Q(rung__lte=4),
                name="escalation_state_rung_range",
                violation_error_message="rung must be empty or between 0 and 4.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.auto_id} on {rung_label(self.rung)}"
