"""Rows for the dashboard tests: users, catalog rows, connections and their readings."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.contrib.auth.models import Permission, User
from django.utils import timezone

from ladder import models as m
from ladder.domain.types import Reading, Source, Window
from ladder.services.readings import reading_record

PASSWORD = "correct-horse-battery-staple"


def user_create(username: str, *, staff: bool = False, perms: tuple[str, ...] = ()) -> User:
    user = User.objects.create_user(username, f"{username}@example.test", PASSWORD, is_staff=staff)
    for codename in perms:
        user.user_permissions.add(Permission.objects.get(content_type__app_label="ladder", codename=codename))
    return user


def editor_create(username: str = "editor") -> User:
    return user_create(
        username,
        staff=True,
        perms=("change_billingcatalogentry", "add_billingcatalogentry", "change_connection"),
    )


def catalog_row(provider: str, auth_type: str | None, billing: str, overage: str) -> m.BillingCatalogEntry:
    entry, _ = m.BillingCatalogEntry.objects.update_or_create(
        provider=provider, auth_type=auth_type, defaults={"billing": billing, "overage": overage}
    )
    return entry


def model_row(
    provider: str, model: str, price: str | None = "3", categories: tuple[str, ...] = ("coding",)
) -> None:
    m.ModelCatalogEntry.objects.update_or_create(
        provider=provider,
        model=model,
        defaults={
            "input_usd_per_mtok": None if price is None else Decimal(price),
            "categories": list(categories),
        },
    )


def connection_create(
    connection_id: str,
    provider: str = "acme",
    auth_type: str | None = "oauth",
    *,
    position: int = 0,
    base_url: str | None = None,
    **fields: object,
) -> m.Connection:
    return m.Connection.objects.create(
        id=connection_id,
        provider=provider,
        auth_type=auth_type,
        position=position,
        base_url=base_url,
        **fields,
    )


def reading_add(
    connection_id: str,
    remaining: dict[str, float],
    *,
    at: datetime | None = None,
    reset_in: timedelta = timedelta(hours=3),
    source: Source = "poll",
) -> None:
    now = timezone.now()
    at = at or now
    windows = tuple(
        Window(name=name, remaining_pct=pct, reset_at=at + reset_in) for name, pct in remaining.items()
    )
    reading_record(
        connection_id=connection_id, reading=Reading(fetched_at=at, windows=windows, source=source), now=now
    )


def plan_setup(connection_id: str = "plan-1", remaining: float = 60.0) -> m.Connection:
    """A curated plan connection (acme/oauth: subscription, hard-stop) with one model and a fresh reading."""
    catalog_row("acme", "oauth", "subscription", "hard-stop")
    model_row("acme", "acme-coder")
    connection = connection_create(connection_id)
    reading_add(connection_id, {"5h": remaining})
    return connection
