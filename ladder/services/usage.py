"""Usage reports: each event counted once (idempotent by request_id) toward the rung of its
(connection, model) pair, priced from the model catalog when the gateway sends no cost.

Every event is a row (the truth), and its budget cost is added to its periods' spend counters in the
same transaction with a conditional UPDATE (services.spend), so concurrent reports cannot lose an
update. A report does not bump the state version: spend is read apart from the cached snapshot.
Two reports racing on one request_id meet the unique constraint; the loser replays.

Pricing reads the configuration, the catalogs and the reported connections: from the snapshot the
caller passes (the gateway's cached one, kept fresh by the state version), or from the database.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

import msgspec
from django.db import IntegrityError, transaction
from django.db.models import Sum

from ladder import models as m
from ladder.contract import api
from ladder.domain.billing import classify_billing
from ladder.domain.budgets import BUDGET_RUNG_NAMES, RungBudget, period_bounds, rung_budgets
from ladder.domain.tiers import rung_for
from ladder.domain.timefmt import format_utc_or_none
from ladder.domain.types import BudgetPeriod, LadderConfig, Rung, Snapshot
from ladder.domain.windows import FUTURE_TOLERANCE_S
from ladder.selectors.snapshot import (
    CONNECTION_FIELDS,
    catalog_entries,
    configuration_get,
    connection_from_values,
    model_entries,
    spend_usd,
)
from ladder.selectors.tokens import GatewayTokenGrant
from ladder.services.spend import spend_add

MICRO_USD = Decimal("0.000001")
MAX_COST_USD = Decimal(api.MAX_COST_USD)
PER_MTOK = Decimal(1_000_000)
RACE_RETRIES = 3


class UsageInvalid(Exception):
    """An event the ladder cannot count (unknown connection, unpriceable model…): nothing is written."""

    def __init__(self, field: str, message: str, *, code: str = "invalid_event") -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.code = code


class UsageConflict(Exception):
    """A request_id already recorded with another payload: nothing is written."""

    def __init__(self, field: str, request_id: str) -> None:
        super().__init__(f"{field}: {request_id!r} was already reported with a different payload")
        self.field = field


@dataclass(frozen=True)
class UsageInput:
    """One reported event, validated for shape; `path` names it in errors ("" or "events[3]")."""

    request_id: str
    connection_id: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal | None = None
    occurred_at: datetime | None = None  # None: the time of receipt
    path: str = ""

    def field(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    @property
    def payload_hash(self) -> str:
        """What the gateway sent, canonically; a replay must send the same."""
        payload = {
            "request_id": self.request_id,
            "connection_id": self.connection_id,
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": None if self.cost_usd is None else str(self.cost_usd),
            "occurred_at": format_utc_or_none(self.occurred_at),
        }
        canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(canonical.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class UsageRecorded:
    request_id: str
    connection_id: str | None
    model: str | None
    rung: Rung | None
    budget_rung: str | None
    cost_usd: Decimal
    occurred_at: datetime

    @property
    def budget_cost_usd(self) -> Decimal:
        return self.cost_usd if self.budget_rung is not None else Decimal(0)


@dataclass(frozen=True)
class UsageResult:
    events: tuple[UsageRecorded, ...]
    budgets: dict[Rung, RungBudget]


def quantize_usd(value: Decimal) -> Decimal:
    return value.quantize(MICRO_USD, rounding=ROUND_HALF_EVEN)


def usage_record(
    *,
    events: Sequence[UsageInput],
    now: datetime,
    token: GatewayTokenGrant | None = None,
    snapshot: Snapshot | None = None,
) -> UsageResult:
    """Record the events (all or none) and answer with each one and the budgets of the current period.

    `snapshot` (the gateway's cached one) gives the configuration, catalogs and connections to price
    with; a connection it does not hold is read from the database (one created without a state
    version bump is still counted). None: all of them are read from the database.

    A request_id already recorded with the same payload is a no-op answered like the first time;
    with another payload, UsageConflict. UsageInvalid for an event that cannot be counted: one priced
    above the configuration's max_event_cost_usd, or one that takes the reporting token past its
    spend ceiling (code token_spend_ceiling).
    """
    unique = _dedupe(events)
    config = None if snapshot is None else snapshot.config
    for attempt in range(RACE_RETRIES):
        try:
            recorded, budgets = _record_once(unique, now, token, snapshot)
            break
        except IntegrityError:
            # Another report inserted one of these request_ids meanwhile: read it back as a replay.
            # (Or a connection of the snapshot was deleted without a version bump: price from the
            # database again, which refuses it as unknown.)
            if attempt == RACE_RETRIES - 1:
                raise
            snapshot = None
    by_id = {row.request_id: row for row in recorded}
    if budgets is None:  # a replay of events already recorded, but not by one report
        budgets = _current_budgets(now, config)
    return UsageResult(events=tuple(by_id[event.request_id] for event in events), budgets=budgets)


def _current_budgets(now: datetime, config: LadderConfig | None) -> dict[Rung, RungBudget]:
    """The budgets with the spend read now; the configuration read unless given."""
    config = config or configuration_get().to_domain()
    return rung_budgets(config, spend_usd(period=config.budget_period, now=now), now)


def _budgets_to_json(budgets: dict[Rung, RungBudget]) -> dict[str, object]:
    return {"budgets": [{"rung_index": int(key), **msgspec.to_builtins(b)} for key, b in budgets.items()]}


def _budgets_from_json(stored: object) -> dict[Rung, RungBudget] | None:
    """The budgets answered the first time (None: none stored, or unreadable). Read by hand: a replay
    answers as the first time, and msgspec.convert would turn a budget of 0 into 0.0."""
    if not isinstance(stored, dict):
        return None
    try:
        return {
            Rung(item["rung_index"]): RungBudget(
                rung=item["rung"],
                budget_usd=item["budget_usd"],
                spent_usd=item["spent_usd"],
                period_ends_at=datetime.fromisoformat(item["period_ends_at"]),
            )
            for item in stored["budgets"]
        }
    except (KeyError, TypeError, ValueError):
        return None


def _dedupe(events: Sequence[UsageInput]) -> list[UsageInput]:
    """One input per request_id; the same id twice in one report must carry the same payload."""
    first: dict[str, UsageInput] = {}
    for event in events:
        seen = first.setdefault(event.request_id, event)
        if seen is not event and seen.payload_hash != event.payload_hash:
            raise UsageConflict(event.field("request_id"), event.request_id)
    return list(first.values())


def _recorded(row: m.UsageEvent) -> UsageRecorded:
    return UsageRecorded(
        request_id=row.request_id,
        connection_id=row.connection_id,
        model=row.model,
        rung=None if row.rung is None else Rung(row.rung),
        budget_rung=row.budget_rung,
        cost_usd=Decimal(row.cost_usd),
        occurred_at=row.occurred_at,
    )


def _record_once(
    events: list[UsageInput], now: datetime, token: GatewayTokenGrant | None, snapshot: Snapshot | None
) -> tuple[list[UsageRecorded], dict[Rung, RungBudget] | None]:
    """The events recorded and the budgets to answer with: computed after inserting the new events
    (and stored with them, so that a replay answers the same), or the ones stored by the report that
    recorded every one of these events first (None when they were recorded by different reports)."""
    existing = {
        row.request_id: row
        for row in m.UsageEvent.objects.filter(request_id__in=[event.request_id for event in events])
    }
    fresh: list[UsageInput] = []
    for event in events:
        row = existing.get(event.request_id)
        if row is None:
            fresh.append(event)
        elif row.payload_hash != event.payload_hash:
            raise UsageConflict(event.field("request_id"), event.request_id)
    rows: list[m.UsageEvent] = []
    budgets: dict[Rung, RungBudget] | None = None
    if fresh:
        pricing = _pricing_snapshot(fresh, snapshot)
        config = pricing.config
        rows = _price(fresh, now, token, pricing)
        with transaction.atomic():
            if token is not None and token.spend_ceiling_usd is not None:
                _check_token_ceiling(
                    token, Decimal(token.spend_ceiling_usd), rows, fresh, now, config.budget_period
                )
            m.UsageEvent.objects.bulk_create(rows)
            spend_add(costs=[(r.budget_rung, r.occurred_at, r.cost_usd) for r in rows if r.budget_rung])
            budgets = _current_budgets(now, config)
            response = _budgets_to_json(budgets)
            m.UsageEvent.objects.filter(request_id__in=[row.request_id for row in rows]).update(
                response=response
            )
    else:
        answers = [row.response for row in existing.values()]
        if answers and all(answer is not None and answer == answers[0] for answer in answers):
            budgets = _budgets_from_json(answers[0])
    return [_recorded(row) for row in (*existing.values(), *rows)], budgets


def _check_token_ceiling(
    token: GatewayTokenGrant,
    ceiling: Decimal,
    rows: list[m.UsageEvent],
    events: list[UsageInput],
    now: datetime,
    period: BudgetPeriod,
) -> None:
    """UsageInvalid (token_spend_ceiling) when these rows take the token's budgeted spend of the
    current budget period past its ceiling. Call inside the transaction that inserts them.

    The spend is summed from the token's events (an index on token and time): only tokens with a
    ceiling pay for it, and a ceiling is for a gateway trusted with little, reporting little. The
    token's row is locked first so that two of its reports cannot both pass on PostgreSQL (SQLite
    writes one transaction at a time anyway)."""
    start, end = period_bounds(now, period)
    m.GatewayToken.objects.select_for_update().filter(pk=token.id).values_list("pk", flat=True).first()
    spent = m.UsageEvent.objects.filter(
        token_id=token.id, budget_rung__isnull=False, occurred_at__gte=start, occurred_at__lt=end
    ).aggregate(total=Sum("cost_usd"))["total"] or Decimal(0)
    for row, event in zip(rows, events, strict=True):
        if row.budget_rung is None or not start <= row.occurred_at < end:
            continue
        spent += Decimal(row.cost_usd)
        if spent > ceiling:
            raise UsageInvalid(
                event.field("cost_usd"),
                f"the gateway token {token.name!r} would pass its spend ceiling of ${ceiling} this "
                f"{period} (${spent} of budgeted usage); nothing was recorded",
                code="token_spend_ceiling",
            )


def _pricing_snapshot(events: list[UsageInput], snapshot: Snapshot | None) -> Snapshot:
    """What pricing reads: the snapshot given, else one of the configuration and catalogs read from the
    database; holding every event's connection that exists (those it lacks are read from the database)."""
    if snapshot is None:
        snapshot = Snapshot(
            config=configuration_get().to_domain(), billing_catalog=catalog_entries(), models=model_entries()
        )
    if missing := {event.connection_id for event in events} - snapshot.connections_by_id.keys():
        # Billing reads no reading: the connection's fixed fields are enough.
        rows = m.Connection.objects.filter(pk__in=missing).values_list(*CONNECTION_FIELDS)
        found = tuple(connection_from_values(values, None, config=snapshot.config) for values in rows)
        snapshot = replace(snapshot, connections=(*snapshot.connections, *found))
    return snapshot


def _price(
    events: list[UsageInput], now: datetime, token: GatewayTokenGrant | None, snapshot: Snapshot
) -> list[m.UsageEvent]:
    """The rows to insert: rung, budget rung and cost of each event. UsageInvalid names the field."""
    config, catalog, models = snapshot.config, snapshot.catalog_by_key, snapshot.models_by_key
    max_event_cost = Decimal(str(config.max_event_cost_usd))
    rows = []
    for event in events:
        if event.occurred_at is not None and event.occurred_at > now + timedelta(seconds=FUTURE_TOLERANCE_S):
            raise UsageInvalid(
                event.field("occurred_at"),
                "is more than 300 s in the future; events from the future are refused",
                code="future_event",
            )
        connection = snapshot.connections_by_id.get(event.connection_id)
        if connection is None:
            raise UsageInvalid(
                event.field("connection_id"),
                f"the ladder knows no connection {event.connection_id!r}",
                code="unknown_connection",
            )
        verdict = classify_billing(connection, catalog)
        entry = models.get((connection.provider, event.model))
        rung = rung_for(verdict.billing, entry, config)
        budget_rung = BUDGET_RUNG_NAMES.get(rung)
        if event.cost_usd is not None:
            cost = event.cost_usd
        elif entry is None:
            raise UsageInvalid(
                event.field("model"),
                f"{event.model!r} is not in the model catalog for provider {connection.provider!r}; "
                "send cost_usd",
                code="unknown_model",
            )
        else:
            cost = _catalog_cost(event, entry.input_usd_per_mtok, entry.output_usd_per_mtok, budget_rung)
        if cost > MAX_COST_USD:
            raise UsageInvalid(
                event.field("cost_usd"),
                f"${cost} is more than ${MAX_COST_USD} for one request",
                code="cost_too_large",
            )
        if cost > max_event_cost:
            raise UsageInvalid(
                event.field("cost_usd"),
                f"${cost} is more than max_event_cost_usd (${max_event_cost}) for one event",
                code="cost_too_large",
            )
        rows.append(
            m.UsageEvent(
                request_id=event.request_id,
                connection_id=connection.id,
                model=event.model,
                input_tokens=event.input_tokens,
                output_tokens=event.output_tokens,
                rung=int(rung),
                budget_rung=budget_rung,
                cost_usd=cost,
                occurred_at=event.occurred_at or now,
                payload_hash=event.payload_hash,
                token_id=token.id if token is not None else None,
            )
        )
    return rows


def _catalog_cost(
    event: UsageInput, input_price: float | None, output_price: float | None, budget_rung: str | None
) -> Decimal:
    """Tokens × catalog price per million. An unknown price blocks only a budgeted rung's cost."""
    total = Decimal(0)
    for tokens, price, side in (
        (event.input_tokens, input_price, "input"),
        (event.output_tokens, output_price, "output"),
    ):
        if not tokens:
            continue
        if price is None:
            if budget_rung is None:
                continue  # plan, keyless or free usage costs the budget nothing anyway
            raise UsageInvalid(
                event.field("model"),
                f"{event.model!r} has no {side} price in the model catalog; send cost_usd",
                code="unpriced_model",
            )
        total += Decimal(tokens) * Decimal(str(price)) / PER_MTOK
    return quantize_usd(total)
