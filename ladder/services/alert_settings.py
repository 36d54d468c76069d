"""The dashboard's edits of an alert rule: on or off, its threshold and its quiet period.

The text of the form is parsed here, each problem named by its field; the rule's own validation
(``AlertRule.full_clean``: field bounds, and what its kind needs) decides the rest, so the admin,
the dashboard and any other writer obey the same rules.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from ladder import models as m
from ladder.domain.alerts import QUIET_PERIOD_MAX_S

RULE_EDITABLE_FIELDS = ("enabled", "threshold", "quiet_period_s")


def _whole_number(field: str, text: str, *, optional: bool) -> int | None:
    text = text.strip()
    if text == "":
        if optional:
            return None
        raise ValidationError({field: f"{field} is required: a whole number of seconds."})
    try:
        value = int(text)
    except ValueError:
        raise ValidationError({field: f"{field} must be a whole number; got {text[:40]!r}."}) from None
    if value < 0:
        raise ValidationError({field: f"{field} must be 0 or more; got {value}."})
    return value


def alert_rule_update(*, rule_id: int, enabled: bool, threshold: str, quiet_period_s: str) -> m.AlertRule:
    """Set a rule's enabled flag, threshold (empty: none) and quiet period (seconds). Raises
    ValidationError naming each bad field, and AlertRule.DoesNotExist for an unknown rule; nothing
    is saved unless every field is good."""
    errors: dict[str, list[str]] = {}
    parsed: dict[str, int | None] = {}
    for field, text, optional in (("threshold", threshold, True), ("quiet_period_s", quiet_period_s, False)):
        try:
            parsed[field] = _whole_number(field, text, optional=optional)
        except ValidationError as exc:
            errors.update(exc.message_dict)
    quiet = parsed.get("quiet_period_s")
    if quiet is not None and quiet > QUIET_PERIOD_MAX_S:
        message = f"quiet_period_s must be at most {QUIET_PERIOD_MAX_S} (7 days); got {quiet}."
        errors["quiet_period_s"] = [message]
    with transaction.atomic():
        rule = m.AlertRule.objects.select_for_update().get(pk=rule_id)
        if errors:
            raise ValidationError(errors)
        rule.enabled = enabled
        rule.threshold = parsed["threshold"]
        rule.quiet_period_s = int(parsed["quiet_period_s"] or 0)
        rule.full_clean()
        rule.save(update_fields=list(RULE_EDITABLE_FIELDS))
    return rule
