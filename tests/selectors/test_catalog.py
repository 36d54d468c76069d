"""The billing catalog as people curate it (ladder.selectors.catalog): values, never rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ladder import models as m
from ladder.selectors.catalog import (
    CatalogKind,
    CatalogRow,
    catalog_changes,
    catalog_row,
    catalog_row_of,
    catalog_rows,
)

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)


def test_it_reads_the_rows_as_values_by_provider_and_auth_type() -> None:
    wide = m.BillingCatalogEntry.objects.create(
        provider="zz-wide", billing="metered", overage="meters-to-paid"
    )
    oauth = m.BillingCatalogEntry.objects.create(
        provider="acme", auth_type="oauth", billing="subscription", overage="hard-stop", notes="Max"
    )
    expected = CatalogRow(oauth.pk, "acme", "oauth", "subscription", "hard-stop", None, "Max", None)
    ours = [row for row in catalog_rows() if row.provider in ("acme", "zz-wide")]
    assert ours == [expected, catalog_row_of(wide)]
    assert catalog_row(entry_id=oauth.pk) == catalog_row_of(oauth) == expected
    assert catalog_row(entry_id=wide.pk + 100) is None
    assert [str(row) for row in ours] == ["acme/oauth", "zz-wide (provider-wide)"]
    assert CatalogKind("zz-wide", None).label == str(wide)


def test_it_reads_the_latest_changes_first() -> None:
    for minutes in (3, 1, 2):
        m.CatalogChange.objects.create(
            entry_label="claude/oauth",
            field="notes",
            old_value="",
            new_value=f"{minutes}",
            changed_by_name="ops",
            changed_at=NOW - timedelta(minutes=minutes),
        )
    assert [c.new_value for c in catalog_changes(limit=2)] == ["1", "2"]
