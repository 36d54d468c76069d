"""Writes. Every write bumps a counter in its own transaction, so that a snapshot cached by the
counters is never older than the rows it was built from:

- the state version, for what the snapshot holds (configuration, catalogs, connections, enabled or
  disabled): a cached snapshot is reloaded whole;
- the live version, for a connection's live state (its latest reading with its latches, its
  cooldown), which gateways report at every request: the connections it stamps are re-read alone
  (``ladder.selectors.snapshot.live_state_since``) and merged into the cached snapshot.

Each counter is one row that its bump locks until commit, so writes take their numbers in commit
order: a reader that sees number N sees every write numbered N or less."""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from ladder.domain.config import CONFIG_FIELDS
from ladder.models import Connection, LadderConfiguration, StateVersion
from ladder.models.connections import PLAIN_CREDENTIAL_FIELDS


def _bump(counter: str, **also: Any) -> int:
    """Increment a counter of the one StateVersion row (creating it if a flush removed it), in the
    caller's transaction; returns the new value."""
    updates = {counter: F(counter) + 1, **also}
    if StateVersion.objects.filter(pk=1).update(**updates) != 1:
        StateVersion.objects.get_or_create(pk=1, defaults={"value": 0})
        StateVersion.objects.filter(pk=1).update(**updates)
    return StateVersion.objects.values_list(counter, flat=True).get(pk=1)


def bump_state_version() -> int:
    """Increment the state version; returns the new value."""
    with transaction.atomic():
        return _bump("value", updated_at=timezone.now())


def bump_live_version(connection_ids: Collection[str]) -> int:
    """Increment the live version and stamp these connections' ``live_seq`` with it, in the caller's
    transaction (call after the connections' rows are written: rows are locked connection first,
    counter second, as bump_state_version is). Returns the new value."""
    ids = sorted(set(connection_ids))
    with transaction.atomic():
        live = _bump("live")
        if ids:
            Connection.objects.filter(pk__in=ids).update(live_seq=live)
        return live


def configuration_update(**fields: Any) -> LadderConfiguration:
    """Set configuration fields (DESIGN §3 names); ValidationError names every bad field."""
    if unknown := sorted(set(fields) - set(CONFIG_FIELDS)):
        raise ValidationError(
            {name: f"unknown setting; accepted: {', '.join(CONFIG_FIELDS)}" for name in unknown}
        )
    with transaction.atomic():
        LadderConfiguration.load()
        configuration = LadderConfiguration.objects.select_for_update().get(pk=1)
        for name, value in fields.items():
            setattr(configuration, name, value)
        configuration.full_clean()
        configuration.save()
        bump_state_version()
    return configuration


def credential_problem(credential: str) -> str | None:
    """Why a credential cannot be sent in an HTTP header (None: it can). Never quotes the value."""
    if credential != credential.strip():
        return "The credential has leading or trailing whitespace."
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in credential):
        return "The credential contains a control character (a line break, tab…)."
    return None


def connection_set_credential(*, connection_id: str, credential: str | None) -> Connection:
    """Encrypt and store a connection's credential; None or "" removes it.

    ValidationError (field "credential") for a credential with control characters or surrounding
    whitespace: it could not be sent, and an HTTP library would quote it in its error."""
    if credential and (problem := credential_problem(credential)):
        raise ValidationError({"credential": problem})
    with transaction.atomic():
        connection = Connection.objects.select_for_update().get(pk=connection_id)
        connection.replace_credential(credential)
        connection.save(update_fields=[*PLAIN_CREDENTIAL_FIELDS, "updated_at"])
        bump_state_version()
    return connection


RESERVE_MESSAGE = "reserve_pct must be a number from 0 to 100, or empty to keep no reserve"


def connection_reserve_set(*, connection_id: str, reserve_pct: float | None) -> Connection:
    """Keep part of a connection's quota for the operator's own use (DESIGN L6 Reserve); None keeps
    none. ValidationError (field "reserve_pct") outside 0–100; Connection.DoesNotExist if unknown."""
    if reserve_pct is not None and not (math.isfinite(reserve_pct) and 0 <= reserve_pct <= 100):
        raise ValidationError({"reserve_pct": RESERVE_MESSAGE})
    with transaction.atomic():
        connection = Connection.objects.select_for_update().get(pk=connection_id)
        connection.reserve_pct = reserve_pct
        connection.save(update_fields=["reserve_pct", "updated_at"])
        bump_state_version()
    return connection
