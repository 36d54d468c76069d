"""L1: billing belongs to the connection."""

from __future__ import annotations

import pytest

from ladder.domain import CatalogEntry, Connection, classify_billing, normalise_auth_type
from ladder.domain.billing import catalog_key_label, catalog_row_for
from ladder.domain.types import Overage
from tests.domain.builders import reading, win

ROWS: dict[tuple[str, str | None], CatalogEntry] = {
    ("planned", "oauth"): CatalogEntry("planned", "oauth", "subscription", "hard-stop"),
    ("planned", "apikey"): CatalogEntry("planned", "apikey", "metered", "meters-to-paid"),
    ("wide", None): CatalogEntry("wide", None, "subscription", "hard-stop"),
    ("both", None): CatalogEntry("both", None, "metered", "meters-to-paid"),
    ("both", "oauth"): CatalogEntry("both", "oauth", "subscription", "hard-stop"),
    ("overflowing", None): CatalogEntry("overflowing", None, "subscription", "meters-to-paid"),
    ("mystery", None): CatalogEntry("mystery", None, "unknown", "unknown"),
}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, None),
        ("oauth", "oauth"),
        ("OAuth", "oauth"),
        ("  APIKEY \t", "apikey"),
        ("", None),
        ("   ", None),
        ("Cookie", "cookie"),
    ],
)
def test_it_normalises_auth_type(raw: str | None, expected: str | None) -> None:
    assert normalise_auth_type(raw) == expected


@pytest.mark.parametrize(
    ("provider", "auth_type", "expected"),
    [
        ("planned", "oauth", ("planned", "oauth")),
        ("planned", " OAUTH ", ("planned", "oauth")),
        ("planned", "apikey", ("planned", "apikey")),
        # no provider-wide row for "planned": an unlisted auth type and a null one fall through
        ("planned", "cookie", None),
        ("planned", None, None),
        ("planned", "", None),
        # the auth_type row beats the provider-wide row
        ("both", "oauth", ("both", "oauth")),
        ("both", "Oauth", ("both", "oauth")),
        ("both", "apikey", ("both", None)),
        # null auth_type matches only the provider-wide row
        ("both", None, ("both", None)),
        ("wide", "anything", ("wide", None)),
        ("wide", None, ("wide", None)),
        ("nobody", "oauth", None),
        ("nobody", None, None),
    ],
)
def test_it_picks_the_catalog_row_for_provider_and_auth_type(
    provider: str, auth_type: str | None, expected: tuple[str, str | None] | None
) -> None:
    row = catalog_row_for(ROWS, provider, auth_type)
    assert (None if row is None else (row.provider, row.auth_type)) == expected


def test_it_never_lets_a_null_auth_type_match_an_auth_row() -> None:
    only_auth: dict[tuple[str, str | None], CatalogEntry] = {
        ("p", "oauth"): CatalogEntry("p", "oauth", "subscription", "hard-stop")
    }
    assert catalog_row_for(only_auth, "p", None) is None


def _conn(
    provider: str,
    auth_type: str | None = "oauth",
    *,
    keyless: bool = False,
    override: Overage | None = None,
    observed: Overage | None = None,
    with_reading: bool = True,
) -> Connection:
    quota = reading(win(50.0), observed=observed) if with_reading else None
    return Connection(
        id="c",
        provider=provider,
        auth_type=auth_type,
        keyless=keyless,
        overage_override=override,
        reading=quota,
    )


@pytest.mark.parametrize(
    ("connection", "billing", "overage", "curated"),
    [
        # keyless → keyless with hard-stop, whatever the catalog says
        (_conn("planned", "apikey", keyless=True), "keyless", "hard-stop", True),
        (_conn("nobody", None, keyless=True), "keyless", "hard-stop", True),
        # the row for provider and auth_type
        (_conn("planned", "oauth"), "subscription", "hard-stop", True),
        (_conn("planned", "APIKEY"), "metered", "meters-to-paid", True),
        # the provider-wide row when no auth row matches
        (_conn("both", "cookie"), "metered", "meters-to-paid", True),
        (_conn("both", None), "metered", "meters-to-paid", True),
        (_conn("overflowing", "oauth"), "subscription", "meters-to-paid", True),
        # no row: unknown/unknown (uncurated)
        (_conn("nobody", "oauth"), "unknown", "unknown", False),
        (_conn("planned", None), "unknown", "unknown", False),
        # a curated row that says unknown is still curated
        (_conn("mystery", "oauth"), "unknown", "unknown", True),
    ],
)
def test_it_classifies_billing(connection: Connection, billing: str, overage: str, curated: bool) -> None:
    verdict = classify_billing(connection, ROWS)
    assert (verdict.billing, verdict.overage, verdict.curated) == (billing, overage, curated)


@pytest.mark.parametrize(
    ("connection", "overage", "source"),
    [
        # observed meters-to-paid beats the catalog and the override
        (_conn("planned", observed="meters-to-paid"), "meters-to-paid", "observed"),
        (_conn("planned", override="hard-stop", observed="meters-to-paid"), "meters-to-paid", "observed"),
        # an observed hard-stop never upgrades: the override, else the catalog row, decides
        (_conn("overflowing", observed="hard-stop"), "meters-to-paid", "catalog"),
        (_conn("overflowing", override="meters-to-paid", observed="hard-stop"), "meters-to-paid", "override"),
        (_conn("planned", override="meters-to-paid", observed="hard-stop"), "meters-to-paid", "override"),
        (_conn("planned", observed="hard-stop"), "hard-stop", "catalog"),
        # the curated override beats the catalog row, both ways
        (_conn("overflowing", override="hard-stop"), "hard-stop", "override"),
        (_conn("planned", override="meters-to-paid"), "meters-to-paid", "override"),
        (_conn("planned", override="unknown"), "unknown", "override"),
        # the catalog row when nothing else speaks
        (_conn("overflowing"), "meters-to-paid", "catalog"),
        (_conn("planned", with_reading=False), "hard-stop", "catalog"),
    ],
)
def test_it_resolves_the_effective_overage(connection: Connection, overage: str, source: str) -> None:
    verdict = classify_billing(connection, ROWS)
    assert (verdict.overage, verdict.overage_source) == (overage, source)


def test_it_keeps_billing_from_the_row_when_overage_is_observed() -> None:
    verdict = classify_billing(_conn("planned", observed="meters-to-paid"), ROWS)
    assert verdict.billing == "subscription"
    assert verdict.entry == ROWS[("planned", "oauth")]


def test_it_treats_an_uncurated_provider_as_unknown_even_with_an_override() -> None:
    verdict = classify_billing(_conn("nobody", override="hard-stop"), ROWS)
    assert (verdict.billing, verdict.curated) == ("unknown", False)


def test_it_labels_a_catalog_key() -> None:
    assert (catalog_key_label("acme", "oauth"), catalog_key_label("acme", None)) == (
        "acme/oauth",
        "acme (provider-wide)",
    )
