"""A connection's details beyond the snapshot (ladder.selectors.connections)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pytest_django import DjangoAssertNumQueries

from ladder import models as m
from ladder.selectors.connections import ConnectionDetails, connection_details, connection_exists

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)


def test_it_reads_the_polls_and_credential_of_a_connection_never_its_secret(
    django_assert_num_queries: DjangoAssertNumQueries,
) -> None:
    row = m.Connection(
        id="c1", provider="claude", auth_type="oauth", last_poll_error="boom", last_polled_at=NOW
    )
    row.credential_owner, row.credential_expires_at, row.credential_account_id = "ladder", NOW, "acct"
    row.set_credential('{"accessToken": "sk-secret"}')
    row.save()
    with django_assert_num_queries(1):
        details = connection_details(connection_id="c1")
    assert details == ConnectionDetails("boom", NOW, None, True, "ladder", NOW, "acct")
    assert "sk-secret" not in repr(details)


def test_it_tells_an_unknown_connection() -> None:
    m.Connection.objects.create(id="c1", provider="claude")
    assert connection_details(connection_id="nope") is None
    assert connection_exists(connection_id="c1")
    assert not connection_exists(connection_id="nope")
