"""Service: load a state file (STATE.md) into the database, in one transaction, all or nothing."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ladder import models as m
from ladder.contract.state.decode import parse_state
from ladder.contract.state.errors import StateError
from ladder.domain.budgets import BUDGET_RUNG_NAMES
from ladder.domain.timefmt import format_utc
from ladder.domain.types import Reading
from ladder.domain.windows import FUTURE_TOLERANCE_S
from ladder.selectors.snapshot import CONNECTION_FIELDS
from ladder.services.catalog_seed import BILLING_FIELDS
from ladder.services.readings import WINDOW_NAME_MAX, reading_rows_create
from ladder.services.state import bump_state_version

# What a state file sets on an existing connection; its credential stays as it is in the database.
IMPORTED_CONNECTION_FIELDS = [*CONNECTION_FIELDS[1:], "position", "updated_at"]  # all but the id
# The columns named and typed as in the file (all but the id, the models list and the poll interval).
COPIED_CONNECTION_FIELDS = [f for f in CONNECTION_FIELDS[1:] if f not in ("models", "min_poll_interval_s")]


class ImportSummary(Counter[str]):
    """What was imported: a count per kind of row."""

    def line(self) -> str:
        return ", ".join(f"{k}: {v}" for k, v in sorted(self.items())) or "nothing to import"


def _price(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _check_reading(reading: Reading | None, path: str, now: datetime) -> None:
    if reading is None:
        return
    names: set[str] = set()
    for index, window in enumerate(reading.windows):
        where = f"{path}.quota.windows[{index}].name"
        if len(window.name) > WINDOW_NAME_MAX:
            raise StateError(where, f"must be at most {WINDOW_NAME_MAX} characters")
        if window.name in names:
            raise StateError(where, f"duplicate window name {window.name!r}")
        names.add(window.name)
    if reading.fetched_at > now + timedelta(seconds=FUTURE_TOLERANCE_S):
        raise StateError(
            f"{path}.quota.fetched_at",
            "is more than 300 s in the future; readings from the future are refused",
        )


def state_import(*, data: Any, replace: bool = False) -> ImportSummary:
    """Upsert catalog, models, connections, readings, spend and configuration from a state document.

    Raises StateError (naming the field) before anything is written, or rolls everything back.
    """
    state = parse_state(data)
    snapshot = state.snapshot
    real_now = timezone.now()
    for index, connection in enumerate(snapshot.connections):
        _check_reading(connection.reading, f"connections[{index}]", real_now)
    if snapshot.spend_usd and state.now is None:
        raise StateError("now", "is required when spend_usd is given: spend is dated at the file's now")
    summary = ImportSummary()
    with transaction.atomic():
        if state.config_given is not None:
            configuration = m.LadderConfiguration.load()
            for name, value in state.config_given.items():
                setattr(configuration, name, value)
            _full_clean(configuration, "config")
            configuration.save()
            summary["config"] += 1

        catalog_keys = set()
        for index, entry in enumerate(snapshot.billing_catalog):
            key = {"provider": entry.provider, "auth_type": entry.auth_type}
            row = m.BillingCatalogEntry.objects.filter(**key).first() or m.BillingCatalogEntry(**key)
            for name in BILLING_FIELDS:
                setattr(row, name, getattr(entry, name))
            _full_clean(row, f"billing_catalog[{index}]", exclude_unique=True)
            row.save()
            catalog_keys.add(row.pk)
            summary["billing_catalog"] += 1

        model_keys = set()
        for index, model in enumerate(snapshot.models):
            model_row, _ = m.ModelCatalogEntry.objects.get_or_create(
                provider=model.provider, model=model.model, defaults={"position": index}
            )
            model_row.input_usd_per_mtok = _price(model.input_usd_per_mtok)
            model_row.output_usd_per_mtok = _price(model.output_usd_per_mtok)
            model_row.free = model.free
            model_row.categories = list(model.categories)
            model_row.position = index
            _full_clean(model_row, f"models[{index}]", exclude_unique=True)
            model_row.save()
            model_keys.add(model_row.pk)
            summary["models"] += 1

        # STATE.md: a file's poll_interval_s is an effective interval, slower than refresh_interval_s;
        # the database keeps only a minimum that is (else the API would judge freshness otherwise).
        refresh_interval_s = m.LadderConfiguration.load().refresh_interval_s
        connection_ids = set()
        for index, connection in enumerate(snapshot.connections):
            if connection.poll_interval_s is not None and connection.poll_interval_s <= refresh_interval_s:
                raise StateError(
                    f"connections[{index}].poll_interval_s",
                    f"must be above refresh_interval_s ({refresh_interval_s:g}) to be stored: a connection "
                    "polled every refresh_interval_s has none (null)",
                )
            conn_row = m.Connection.objects.filter(pk=connection.id).first() or m.Connection(id=connection.id)
            for name in COPIED_CONNECTION_FIELDS:
                setattr(conn_row, name, getattr(connection, name))
            conn_row.models = None if connection.models is None else list(connection.models)
            # The file's poll_interval_s is the connection's effective interval: the operator's minimum
            # is the part of it a file can set (STATE.md).
            conn_row.min_poll_interval_s = connection.poll_interval_s
            conn_row.position = index
            _full_clean(conn_row, f"connections[{index}]", exclude_unique=True)
            # An existing row: never the credential's columns, a refresh may rotate them meanwhile (issue 17).
            conn_row.save(update_fields=None if conn_row._state.adding else IMPORTED_CONNECTION_FIELDS)
            connection_ids.add(conn_row.pk)
            summary["connections"] += 1
            if connection.reading is not None:
                _reading_store(conn_row, connection.reading)
                summary["readings"] += 1
            elif replace:
                m.QuotaReading.objects.filter(connection=conn_row).delete()

        if state.now is not None:
            for rung, name in BUDGET_RUNG_NAMES.items():
                if (amount := snapshot.spend_usd.get(name)) is None:
                    continue
                m.UsageEvent.objects.update_or_create(
                    request_id=f"import:{format_utc(state.now)}:{name}",
                    defaults={
                        "connection": None,
                        "model": None,
                        "rung": int(rung),
                        "budget_rung": name,
                        "cost_usd": Decimal(str(amount)),
                        "occurred_at": state.now,
                    },
                )
                summary["spend events"] += 1

        if replace:
            unlisted = m.BillingCatalogEntry.objects.exclude(pk__in=catalog_keys)
            summary["deleted catalog rows"] = unlisted.delete()[0]
            summary["deleted models"] = m.ModelCatalogEntry.objects.exclude(pk__in=model_keys).delete()[0]
            deleted = m.Connection.objects.exclude(pk__in=connection_ids)
            summary["deleted connections"] = deleted.count()
            deleted.delete()
        bump_state_version()
    return summary


def _reading_store(connection: m.Connection, reading: Reading) -> None:
    """The file's reading becomes the connection's latest: readings dated at or after it would shadow
    it, so they go; older history stays."""
    m.QuotaReading.objects.filter(connection=connection, fetched_at__gte=reading.fetched_at).delete()
    reading_rows_create(connection.pk, reading)


def _full_clean(row: Any, path: str, *, exclude_unique: bool = False) -> None:
    try:
        row.full_clean(validate_unique=not exclude_unique, validate_constraints=not exclude_unique)
    except ValidationError as exc:
        field_name, messages = next(iter(exc.message_dict.items()))
        where = path if field_name == "__all__" else f"{path}.{field_name}"
        raise StateError(where, "; ".join(messages)) from None
