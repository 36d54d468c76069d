"""What the gateway reports: usage (priced against the budgets), and an upstream's answer headers
(observations) or failure, which the ladder turns into readings and cooldowns."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TypeVar

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.http import HttpRequest, HttpResponse

from ladder.contract import api
from ladder.domain.timefmt import format_utc
from ladder.domain.windows import FUTURE_TOLERANCE_S
from ladder.gateway import clock
from ladder.gateway.answers import answer, budgets_answer, reading_answer, utc, utc_or_none
from ladder.gateway.connections import connection_not_found, known_connection
from ladder.gateway.decorators import (
    ApiError,
    api_view,
    connection_allowed,
    read_json_body,
    request_token,
    unprocessable,
)
from ladder.gateway.inputs import decode, header_texts, optional_time, usage_input
from ladder.gateway.snapshot_cache import snapshot_cache
from ladder.services.failures import failure_record
from ladder.services.observations import observation_record
from ladder.services.usage import UsageConflict, UsageInvalid, UsageRecorded, usage_record

Report = TypeVar("Report", api.ObservationRequest, api.FailureRequest)


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
        occurred_at=utc(event.occurred_at),
    )


@api_view(methods=("POST",), scope="report")
def usage_report(request: HttpRequest) -> HttpResponse:
    events = usage_input(read_json_body(request))
    for event in events:
        connection_allowed(request, event.connection_id, event.field("connection_id"))
    now = clock.current_time()
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


def _connection_report(
    request: HttpRequest, connection_id: str, kind: type[Report]
) -> tuple[Report, datetime, datetime]:
    """A report about a connection that the token may name and the ladder knows, its body decoded,
    observed now or at a usable time that is not in the future: (report, observed_at, now)."""
    connection_allowed(request, connection_id)
    known_connection(connection_id)
    report = decode(read_json_body(request), kind)
    now = clock.current_time()
    observed_at = optional_time(report.observed_at, "observed_at") or now
    if (observed_at - now).total_seconds() > FUTURE_TOLERANCE_S:
        raise unprocessable(
            f"observed_at: {format_utc(observed_at)} is more than {FUTURE_TOLERANCE_S:g} s in the future",
            "observed_at",
            code="future_observation",
        )
    return report, observed_at, now


@contextmanager
def _recording(connection_id: str) -> Iterator[None]:
    """A connection deleted since it was checked is a 404; a reading that the readings service
    refused (the adapter made something it cannot store) is a 422."""
    try:
        yield
    except ObjectDoesNotExist:
        raise connection_not_found(connection_id) from None
    except ValidationError as exc:
        message = f"the reading was refused: {'; '.join(exc.messages)}"
        raise unprocessable(message, None, code="invalid_reading") from None


@api_view(methods=("POST",), scope="report")
def connection_observations(request: HttpRequest, connection_id: str) -> HttpResponse:
    observation, at, now = _connection_report(request, connection_id, api.ObservationRequest)
    with _recording(connection_id):
        reading = observation_record(
            connection_id=connection_id, headers=header_texts(observation.headers), observed_at=at, now=now
        )
    return answer(api.ObservationResponse(reading=reading_answer(reading)))


@api_view(methods=("POST",), scope="report")
def connection_failures(request: HttpRequest, connection_id: str) -> HttpResponse:
    failure, at, now = _connection_report(request, connection_id, api.FailureRequest)
    with _recording(connection_id):
        outcome = failure_record(
            connection_id=connection_id,
            status=failure.status,
            headers=header_texts(failure.headers),
            body=failure.body,
            model=failure.model,
            observed_at=at,
            now=now,
        )
    return answer(
        api.FailureResponse(
            classification=outcome.classification,
            cooldown_until=utc_or_none(outcome.cooldown_until),
            reset_at=utc_or_none(outcome.reset_at),
            window=outcome.window,
            windows=tuple(outcome.windows),
        )
    )
