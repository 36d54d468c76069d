"""The gateway's JSON API (shared/contract/API.md): typed function views that parse, call one
selector or service, and render. The resolution is the offline resolver's own document: one code
path, snapshot_load → domain.resolve → domain.resolution_to_dict."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from typing import Any

import msgspec
import orjson
import redis
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection as db_connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from ladder import models as m
from ladder.contract import api
from ladder.domain import (
    AutoIdError,
    advertised_auto_ids,
    parse_auto_id,
    resolution_to_dict,
    resolve,
    rung_budgets,
    rung_for,
)
from ladder.domain.budgets import RungBudget
from ladder.domain.resolve import billing_verdict
from ladder.domain.timefmt import format_utc
from ladder.domain.types import Connection, Reading, Rung, Snapshot
from ladder.domain.windows import FUTURE_TOLERANCE_S
from ladder.gateway.decorators import (
    ApiError,
    api_view,
    authenticate,
    connection_allowed,
    invalid,
    read_json_body,
    request_token,
    unprocessable,
)
from ladder.gateway.inputs import (
    credential_input,
    escalations_query,
    failure_input,
    observation_input,
    resolve_input,
    usage_input,
)
from ladder.gateway.schema import openapi_document
from ladder.gateway.snapshot_cache import snapshot_cache
from ladder.models import CONNECTION_ID_PATTERN
from ladder.selectors.connections import credential_summaries
from ladder.selectors.escalations import escalations_list as escalation_events
from ladder.services import gateway_credentials as credentials
from ladder.services.escalations import escalation_observe
from ladder.services.failures import failure_record
from ladder.services.observations import observation_record
from ladder.services.refresh.on_demand import refresh_request
from ladder.services.usage import UsageConflict, UsageInvalid, UsageRecorded, usage_record

logger = logging.getLogger(__name__)

MODELS_CREATED = 1767225600  # 2026-01-01T00:00:00Z: the auto ids are not dated models
BEAT_MIN_MAX_AGE_S = 60.0
CONNECTION_ID_RE = re.compile(CONNECTION_ID_PATTERN)


def current_time() -> datetime:
    """The API's clock (tests replace it to span hours or days)."""
    return timezone.now()


# --- health ---------------------------------------------------------------------------------


@api_view(methods=("GET",))
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _failure_text(exc: BaseException) -> str:
    first_line = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"down: {type(exc).__name__}" + (f": {first_line}" if first_line else "")


def _database_check() -> str:
    try:
        with db_connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        return _failure_text(exc)
    return "ok"


def _redis_check() -> str:
    url = str(settings.REDIS_URL)
    client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5, retry_on_timeout=False)
    try:
        client.ping()
    except Exception as exc:
        return _failure_text(exc)
    finally:
        client.close()
    return "ok"


def beat_max_age_s() -> float:
    """How old the last beat tick may be: LADDER_BEAT_MAX_AGE_S, else ten fan-out periods (≥ 60 s)."""
    explicit = float(settings.LADDER_BEAT_MAX_AGE_S or 0)
    if explicit > 0:
        return explicit
    return max(BEAT_MIN_MAX_AGE_S, 10 * float(settings.LADDER_REFRESH_BEAT_S))


def _beat_check(now: datetime) -> str:
    try:
        last_at = m.Heartbeat.objects.filter(pk="beat").values_list("last_at", flat=True).first()
    except Exception as exc:
        return _failure_text(exc)
    if last_at is None:
        return "never: no beat tick recorded"
    max_age_s = beat_max_age_s()
    age_s = (now - last_at).total_seconds()
    if age_s > max_age_s:
        return f"stale: last tick at {format_utc(last_at)}, {age_s:.0f}s ago (> {max_age_s:g}s)"
    return "ok"


@api_view(methods=("GET",))
def readyz(request: HttpRequest) -> JsonResponse:
    """Database, Redis and the last beat tick. 503 only without a database: the API answers from it."""
    database = _database_check()
    redis_state = _redis_check()
    beat = _beat_check(current_time()) if database == "ok" else "unknown: the database is down"
    if database != "ok":
        status, overall = 503, "unavailable"
    elif redis_state == "ok" and beat == "ok":
        status, overall = 200, "ok"
    else:
        status, overall = 200, "degraded"
    body = {"status": overall, "database": database, "redis": redis_state, "beat": beat}
    return JsonResponse(body, status=status)


# --- models and resolution --------------------------------------------------------------------


@api_view(methods=("GET",))
def models_list(request: HttpRequest) -> HttpResponse:
    """OpenAI-compatible list of the auto ids (DESIGN L13)."""
    if settings.LADDER_MODELS_REQUIRE_TOKEN:
        authenticate(request, "resolve")
    snapshot = snapshot_cache.get(current_time())
    categories = {category for entry in snapshot.models for category in entry.categories}
    data = tuple(
        api.Model(id=auto_id, object="model", created=MODELS_CREATED, owned_by="omniroute-ladder")
        for auto_id in advertised_auto_ids(categories)
    )
    return answer(api.ModelList(object="list", data=data))


@api_view(methods=("POST",), scope="resolve")
def pools_resolve(request: HttpRequest) -> HttpResponse:
    payload = resolve_input(read_json_body(request))
    try:
        parse_auto_id(payload.model)
    except AutoIdError as exc:
        raise invalid(f"model: {exc}", "model", code="invalid_model") from None
    now = current_time()
    resolution = resolve(snapshot_cache.get(now), payload.model, payload.candidates, now)
    escalation_observe(resolution=resolution, now=now)  # the audit trail; never raises
    if resolution.refresh:
        _refresh(list(resolution.refresh))
    # The hot path: orjson writes the (often 100 kB) document several times faster than json.dumps.
    return HttpResponse(orjson.dumps(resolution_to_dict(resolution)), content_type="application/json")


def _refresh(connection_ids: list[str]) -> None:
    try:
        refresh_request(connection_ids=connection_ids)
    except Exception:  # best effort: a resolution never fails for want of a refresh
        logger.exception("could not queue quota refreshes for %s", connection_ids)


# --- escalation log ---------------------------------------------------------------------------


def answer(body: msgspec.Struct) -> HttpResponse:
    """An answer body of the contract, written by msgspec (times in UTC: `...Z`)."""
    return HttpResponse(msgspec.json.encode(body), content_type="application/json")


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)


def _utc_or_none(moment: datetime | None) -> datetime | None:
    return None if moment is None else moment.astimezone(UTC)


def _rung_label(rung: int | None) -> str | None:
    return None if rung is None else Rung(rung).label


def escalation_answer(event: m.EscalationEvent) -> api.Escalation:
    return api.Escalation(
        id=event.id,
        auto_id=event.auto_id,
        from_rung=_rung_label(event.from_rung),
        to_rung=_rung_label(event.to_rung),
        from_rung_index=event.from_rung,
        to_rung_index=event.to_rung,
        kind=event.kind,
        why=event.why,
        occurred_at=_utc(event.occurred_at),
    )


@api_view(methods=("GET",), scope="resolve")
def escalations_list(request: HttpRequest) -> HttpResponse:
    query = escalations_query(dict(request.GET.lists()))
    events = escalation_events(auto_id=query.auto_id, since=query.since, limit=query.limit)
    return answer(api.EscalationList(escalations=tuple(escalation_answer(event) for event in events)))


# --- usage ------------------------------------------------------------------------------------


def usage_event_answer(event: UsageRecorded) -> api.UsageRecorded:
    return api.UsageRecorded(
        request_id=event.request_id,
        connection_id=event.connection_id,
        model=event.model,
        rung=None if event.rung is None else event.rung.label,
        rung_index=None if event.rung is None else int(event.rung),
        budget_rung=event.budget_rung,
        cost_usd=float(event.cost_usd),
        budget_cost_usd=float(event.budget_cost_usd),
        occurred_at=_utc(event.occurred_at),
    )


def budgets_answer(budgets: dict[Rung, RungBudget]) -> dict[str, api.Budget]:
    return {
        budget.rung: api.Budget(
            budget_usd=budget.budget_usd,
            spent_usd=round(budget.spent_usd, 6),
            period_ends_at=_utc(budget.period_ends_at),
        )
        for budget in budgets.values()
    }


@api_view(methods=("POST",), scope="report")
def usage_report(request: HttpRequest) -> HttpResponse:
    events = usage_input(read_json_body(request))
    for event in events:
        connection_allowed(request, event.connection_id, event.field("connection_id"))
    now = current_time()
    try:
        # Priced from the cached snapshot: no reload of the configuration, catalogs and connections
        # (nor a read of the live state or spend, which pricing does not use).
        result = usage_record(
            events=events, now=now, token=request_token(request), snapshot=snapshot_cache.get_fixed(now)
        )
    except UsageInvalid as exc:
        raise unprocessable(str(exc), exc.field, code=exc.code) from None
    except UsageConflict as exc:
        raise ApiError(409, "request_id_conflict", str(exc), field=exc.field) from None
    return answer(
        api.UsageResponse(
            events=tuple(usage_event_answer(event) for event in result.events),
            budgets=budgets_answer(result.budgets),
        )
    )


# --- connections ------------------------------------------------------------------------------


def _connection_not_found(connection_id: str) -> ApiError:
    """The one 404 of a connection id the ladder does not know, wherever it turns out missing."""
    return ApiError(404, "connection_not_found", f"the ladder knows no connection {connection_id!r}")


def _known_connection(connection_id: str) -> None:
    """404 for an id the ladder does not know (checked before the body is read)."""
    if (
        not CONNECTION_ID_RE.match(connection_id)
        or not m.Connection.objects.filter(pk=connection_id).exists()
    ):
        raise _connection_not_found(connection_id)


def _invalid_reading(exc: ValidationError) -> ApiError:
    """A reading the readings service refused (the adapter made something it cannot store)."""
    return unprocessable(f"the reading was refused: {'; '.join(exc.messages)}", None, code="invalid_reading")


def _not_future(moment: datetime, now: datetime) -> None:
    if (moment - now).total_seconds() > FUTURE_TOLERANCE_S:
        raise unprocessable(
            f"observed_at: {format_utc(moment)} is more than {FUTURE_TOLERANCE_S:g} s in the future",
            "observed_at",
            code="future_observation",
        )


def reading_answer(reading: Reading | None) -> api.Reading | None:
    if reading is None:
        return None
    return api.Reading(
        fetched_at=_utc(reading.fetched_at),
        source=reading.source,
        verifiable=reading.verifiable,
        observed_overage=reading.observed_overage,
        windows=tuple(
            api.Window(
                name=w.name,
                remaining_pct=w.remaining_pct,
                reset_at=_utc_or_none(w.reset_at),
                scope_models=tuple(w.scope_models),
                latched=w.latched,
                exhausts_at=_utc_or_none(w.exhausts_at),
            )
            for w in reading.windows
        ),
    )


def connection_answer(
    connection: Connection, snapshot: Snapshot, credential: dict[str, Any] | None = None
) -> api.Connection:
    verdict = billing_verdict(snapshot, connection)
    served = [
        entry
        for entry in snapshot.models
        if entry.provider == connection.provider
        and (connection.models is None or entry.model in connection.models)
    ]
    rungs = {entry.model: rung_for(verdict.billing, entry, snapshot.config).label for entry in served}
    for model in connection.models or ():
        rungs.setdefault(model, rung_for(verdict.billing, None, snapshot.config).label)
    return api.Connection(
        id=connection.id,
        provider=connection.provider,
        auth_type=connection.auth_type,
        billing=verdict.billing,
        overage=verdict.overage,
        enabled=connection.enabled,
        disabled_reason=connection.disabled_reason,
        cooldown_until=_utc_or_none(connection.cooldown_until),
        poll_interval_s=connection.poll_interval_s,
        reserve_pct=connection.reserve_pct,
        reading=reading_answer(connection.reading),
        rungs=rungs,
        credential=api.CredentialInfo(**credential) if credential else None,
    )


@api_view(methods=("GET",), scope="resolve")
def connections_list(request: HttpRequest) -> HttpResponse:
    now = current_time()
    snapshot = snapshot_cache.get(now)
    token = request_token(request)
    allowed = [c for c in snapshot.connections if token is None or token.allows_connection(c.id)]
    summaries = credential_summaries()
    return answer(
        api.ConnectionList(
            connections=tuple(connection_answer(c, snapshot, summaries.get(c.id)) for c in allowed),
            budgets=budgets_answer(rung_budgets(snapshot.config, snapshot.spend_usd, now)),
        )
    )


@api_view(methods=("GET",), scope="resolve")
def connection_detail(request: HttpRequest, connection_id: str) -> HttpResponse:
    connection_allowed(request, connection_id)
    now = current_time()
    snapshot = snapshot_cache.get(now)
    found = snapshot.connections_by_id.get(connection_id)
    if found is None:
        _known_connection(connection_id)  # a connection created since the snapshot: reload
        snapshot_cache.clear()
        snapshot = snapshot_cache.get(now)
        found = snapshot.connections_by_id.get(connection_id)
        if found is None:
            raise _connection_not_found(connection_id)
    return answer(
        api.ConnectionList(
            connections=(
                connection_answer(
                    found,
                    snapshot,
                    credential_summaries(connection_ids=[connection_id]).get(connection_id),
                ),
            ),
            budgets=budgets_answer(rung_budgets(snapshot.config, snapshot.spend_usd, now)),
        )
    )


@api_view(methods=("GET", "PUT"), scope="credentials")
def connection_credential(request: HttpRequest, connection_id: str) -> JsonResponse:
    """GET: a ladder-owned access token (refreshed first when due); PUT: a gateway-owned one's new
    token. Every call is recorded (token name, time), never the value; rate-limited per token."""
    if not CONNECTION_ID_RE.match(connection_id):
        raise _connection_not_found(connection_id)  # before any query or record names it
    connection_allowed(request, connection_id)
    token = request.gateway_token  # type: ignore[attr-defined]
    action = "put" if request.method == "PUT" else "get"
    outcome = "ok"
    try:
        credentials.credential_rate_check(token_id=token.pk, now=current_time())
        if action == "get":
            return JsonResponse(credentials.credential_for_gateway(connection_id=connection_id))
        access_token, expires_at, account_id = credential_input(read_json_body(request), current_time())
        answer = credentials.credential_push_for_gateway(
            connection_id=connection_id,
            access_token=access_token,
            expires_at=expires_at,
            account_id=account_id,
            now=current_time(),
        )
        snapshot_cache.clear()
        return JsonResponse(answer)
    except credentials.CredentialUnavailable as exc:
        outcome = exc.code
        headers = {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s else None
        raise ApiError(exc.status, exc.code, exc.message, field=exc.field, headers=headers) from None
    except ApiError as exc:
        outcome = exc.code
        raise
    except Exception:
        outcome = "error"  # answered by api_view (503 or 500): never recorded as "ok"
        raise
    finally:
        if outcome != "rate_limited":
            credentials.credential_access_record(
                connection_id=connection_id, token_name=token.name, action=action, outcome=outcome
            )


@api_view(methods=("POST",), scope="report")
def connection_observations(request: HttpRequest, connection_id: str) -> HttpResponse:
    connection_allowed(request, connection_id)
    _known_connection(connection_id)
    payload = observation_input(read_json_body(request))
    now = current_time()
    observed_at = payload.observed_at or now
    _not_future(observed_at, now)
    try:
        reading = observation_record(
            connection_id=connection_id, headers=payload.headers, observed_at=observed_at, now=now
        )
    except m.Connection.DoesNotExist:
        raise _connection_not_found(connection_id) from None
    except ValidationError as exc:
        raise _invalid_reading(exc) from None
    return answer(api.ObservationResponse(reading=reading_answer(reading)))


@api_view(methods=("POST",), scope="report")
def connection_failures(request: HttpRequest, connection_id: str) -> HttpResponse:
    connection_allowed(request, connection_id)
    _known_connection(connection_id)
    payload = failure_input(read_json_body(request))
    now = current_time()
    observed_at = payload.observed_at or now
    _not_future(observed_at, now)
    try:
        outcome = failure_record(
            connection_id=connection_id,
            status=payload.status,
            headers=payload.headers,
            body=payload.body,
            model=payload.model,
            observed_at=observed_at,
            now=now,
        )
    except m.Connection.DoesNotExist:
        raise _connection_not_found(connection_id) from None
    except ValidationError as exc:
        raise _invalid_reading(exc) from None
    return answer(
        api.FailureResponse(
            classification=outcome.classification,
            cooldown_until=_utc_or_none(outcome.cooldown_until),
            reset_at=_utc_or_none(outcome.reset_at),
            window=outcome.window,
            windows=tuple(outcome.windows),
        )
    )


# --- schema and unknown paths -----------------------------------------------------------------


@api_view(methods=("GET",))
def openapi_schema(request: HttpRequest) -> JsonResponse:
    return JsonResponse(openapi_document())


@api_view(methods=("GET", "POST", "PUT", "PATCH", "DELETE"))
def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    raise ApiError(404, "not_found", f"no such endpoint: {request.path}; see /api/v1/openapi.json")
