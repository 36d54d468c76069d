"""Curating the billing catalog from the dashboard: every changed field is recorded (who, when, old → new).

A change bumps the state version in the same transaction, so the next resolution sees it (L12).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from ladder.models import BillingCatalogEntry, CatalogChange
from ladder.services.state import bump_state_version

EDITABLE_FIELDS = ("billing", "overage", "source_url", "notes")


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _clean_values(values: dict[str, Any]) -> dict[str, Any]:
    if unknown := sorted(set(values) - set(EDITABLE_FIELDS)):
        raise ValidationError(
            {name: f"not editable here; editable: {', '.join(EDITABLE_FIELDS)}" for name in unknown}
        )
    cleaned = dict(values)
    if "source_url" in cleaned:
        cleaned["source_url"] = (cleaned["source_url"] or "").strip() or None
    if "notes" in cleaned:
        cleaned["notes"] = (cleaned["notes"] or "").strip()
    return cleaned


def _user_name(user: AbstractBaseUser | AnonymousUser | None) -> tuple[AbstractBaseUser | None, str]:
    if user is None or isinstance(user, AnonymousUser) or not user.is_authenticated:
        return None, "system"
    return user, user.get_username()


def _record(
    entry: BillingCatalogEntry,
    changed: list[tuple[str, str, str]],
    user: AbstractBaseUser | AnonymousUser | None,
    now: datetime,
) -> list[CatalogChange]:
    who, name = _user_name(user)
    return CatalogChange.objects.bulk_create(
        CatalogChange(
            entry=entry,
            entry_label=str(entry),
            field=field,
            old_value=old,
            new_value=new,
            changed_by_id=who.pk if who is not None else None,
            changed_by_name=name,
            changed_at=now,
        )
        for field, old, new in changed
    )


def catalog_entry_update(
    *,
    entry_id: int,
    values: dict[str, Any],
    user: AbstractBaseUser | AnonymousUser | None,
    now: datetime,
) -> tuple[BillingCatalogEntry, list[CatalogChange]]:
    """Set billing, overage, source_url and/or notes of one row; ValidationError names each bad field.

    Marks the row reviewed now. Only fields whose value changes are recorded; no change, no write."""
    cleaned = _clean_values(values)
    with transaction.atomic():
        entry = BillingCatalogEntry.objects.select_for_update().get(pk=entry_id)
        changed: list[tuple[str, str, str]] = []
        for field, value in cleaned.items():
            old = getattr(entry, field)
            if _text(old) != _text(value):
                changed.append((field, _text(old), _text(value)))
                setattr(entry, field, value)
        if not changed:
            return entry, []
        entry.reviewed_at = now
        entry.full_clean()
        entry.save()
        records = _record(entry, changed, user, now)
        bump_state_version()
    return entry, records


def catalog_entry_create(
    *,
    provider: str,
    auth_type: str | None,
    values: dict[str, Any],
    user: AbstractBaseUser | AnonymousUser | None,
    now: datetime,
) -> tuple[BillingCatalogEntry, list[CatalogChange]]:
    """Curate a (provider, auth_type) seen among connections: a new row, each set field recorded."""
    cleaned = _clean_values(values)
    entry = BillingCatalogEntry(provider=provider.strip(), auth_type=auth_type, reviewed_at=now, **cleaned)
    entry.full_clean()
    try:
        with transaction.atomic():
            entry.save()
            changed = [(field, "", _text(getattr(entry, field))) for field in EDITABLE_FIELDS]
            records = _record(entry, [c for c in changed if c[2]], user, now)
            bump_state_version()
    except IntegrityError as exc:
        raise ValidationError("This provider and auth type already have a catalog row.") from exc
    return entry, records
