"""Alert evaluation (issue 20): the rules' conditions now, decided against the episodes
(ladder.domain.alerts), applied to the database; a firing or a recovery is handed to the channels
(ladder.services.alert_delivery, which builds one delivery per channel and sends it on commit).

Two evaluations at once (two beats, a beat and a manual run) never fire or recover one episode
twice, without locks (healthchecks style): an episode opens by INSERT under the one-open-episode
unique constraint (the loser's IntegrityError is "someone else fired it"), and every other move is
a conditional UPDATE on the state that was read (``WHERE closed_at IS NULL``, ``WHERE recovered_at
IS NULL``…): only the evaluation that moved the row (one row updated) sends what follows from it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

from django.db import IntegrityError, transaction

from ladder.domain.alerts import Condition, Decision, Episode, decide_for_rules
from ladder.models import AlertEpisode, AlertRule
from ladder.selectors.alerts import alert_episodes_unrecovered, alert_inputs, alert_rules_enabled
from ladder.services.alert_delivery import enqueue_deliveries

logger = logging.getLogger(__name__)

FIRED = "fired"
RECOVERED = "recovered"


@dataclass
class AlertsOutcome:
    fired: int = 0
    recovered: int = 0
    reopened: int = 0
    closed: int = 0
    kept: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def alerts_plan(*, now: datetime) -> Decision:
    """What the enabled rules' conditions now do to the episodes not yet recovered. Reads only."""
    rules = alert_rules_enabled()
    inputs = alert_inputs(kinds={rule.kind for rule in rules}, now=now)
    return decide_for_rules(rules, inputs, alert_episodes_unrecovered(), now=now)


def alerts_evaluate(*, now: datetime) -> AlertsOutcome:
    """Evaluate every enabled rule now and apply the decision."""
    return alerts_apply(alerts_plan(now=now), now=now)


def alerts_apply(decision: Decision, *, now: datetime) -> AlertsOutcome:
    """Apply a decision. Each move is a conditional write on the state the decision read, so a
    decision made from a state someone else has moved since does nothing twice."""
    outcome = AlertsOutcome()
    for episode in decision.close:
        still_open = AlertEpisode.objects.filter(pk=episode.id, closed_at__isnull=True)
        outcome.closed += still_open.update(closed_at=now)
    for episode in decision.recover:
        outcome.recovered += episode_recover(episode=episode, now=now)
    for episode, condition in decision.reopen:
        outcome.reopened += episode_reopen(episode=episode, condition=condition, now=now)
    outcome.kept = episodes_keep(decision.keep, now=now)
    for condition in decision.fire:
        outcome.fired += episode_fire(condition=condition, now=now)
    if outcome.fired or outcome.recovered or outcome.reopened or outcome.closed:
        logger.info("alerts: %s", outcome.as_dict())
    return outcome


def episodes_keep(kept: Sequence[tuple[Episode, Condition]], *, now: datetime) -> int:
    """Refresh the words and last_seen_at of the episodes still holding: one UPDATE per batch of 500,
    whatever their number (one that another evaluation closed meanwhile only gets fresher words)."""
    rows = [
        AlertEpisode(
            pk=episode.id, last_seen_at=now, summary=condition.summary, detail=dict(condition.detail)
        )
        for episode, condition in kept
    ]
    return AlertEpisode.objects.bulk_update(rows, ["last_seen_at", "summary", "detail"], batch_size=500)


def episode_fire(*, condition: Condition, now: datetime) -> int:
    """Open an episode and send its firing; 0 when another evaluation opened it first, or when its
    rule was deleted meanwhile."""
    try:
        with transaction.atomic():
            try:
                with transaction.atomic():
                    episode = AlertEpisode.objects.create(
                        rule_id=condition.rule_id,
                        subject=condition.subject,
                        summary=condition.summary,
                        detail=dict(condition.detail),
                        opened_at=now,
                        last_seen_at=now,
                    )
            except IntegrityError:
                return 0  # the one-open-episode constraint: someone else fired it
            enqueue_deliveries(episode=episode, event=FIRED, now=now)
    except (IntegrityError, AlertRule.DoesNotExist):
        # The rule is gone. Its foreign key is deferred (checked at the commit, on SQLite as on
        # PostgreSQL), so the INSERT itself succeeded and only reading the rule or committing fails.
        return 0
    return 1


def episode_reopen(*, episode: Episode, condition: Condition, now: datetime) -> int:
    """Continue a closed episode whose condition came back within its quiet period: no firing."""
    try:
        with transaction.atomic():
            closed = AlertEpisode.objects.filter(
                pk=episode.id, closed_at=episode.closed_at, recovered_at__isnull=True
            )
            return closed.update(
                closed_at=None, last_seen_at=now, summary=condition.summary, detail=dict(condition.detail)
            )
    except IntegrityError:
        return 0  # another evaluation opened a new episode for the subject meanwhile


def episode_recover(*, episode: Episode, now: datetime) -> int:
    """Send a closed episode's recovery; 0 when another evaluation sent it (or it re-opened)."""
    with transaction.atomic():
        moved = AlertEpisode.objects.filter(
            pk=episode.id, closed_at__isnull=False, recovered_at__isnull=True
        ).update(recovered_at=now)
        if moved != 1:
            return 0
        row = AlertEpisode.objects.select_related("rule").get(pk=episode.id)
        enqueue_deliveries(episode=row, event=RECOVERED, now=now)
    return 1
