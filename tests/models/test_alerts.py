"""Alert episodes' invariants (issue 20), held by the database itself."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import IntegrityError, transaction

from ladder import models as m

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 8, 22, 12, 0, tzinfo=UTC)


def episode(**fields: object) -> m.AlertEpisode:
    rule = m.AlertRule.objects.get(kind="beat_silent")
    return m.AlertEpisode.objects.create(rule=rule, subject="beat", opened_at=NOW, last_seen_at=NOW, **fields)


def test_it_refuses_a_recovery_of_an_open_episode() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        episode(recovered_at=NOW)


def test_it_refuses_a_second_open_episode_of_a_subject_but_not_a_closed_one() -> None:
    episode(closed_at=NOW, recovered_at=NOW)
    episode(closed_at=NOW)
    episode()
    with pytest.raises(IntegrityError), transaction.atomic():
        episode()
