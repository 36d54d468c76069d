"""The connections as the gateway sees them (rungs, reading, credential summary), and a connection's
credential: fetched when the ladder owns it, pushed when the gateway does."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from ladder.contract import api
from ladder.domain import rung_budgets
from ladder.domain.resolve import billing_verdict
from ladder.domain.tiers import model_rungs
from ladder.domain.types import CONNECTION_ID_PATTERN, Connection, Snapshot
from ladder.gateway import clock
from ladder.gateway.answers import answer, budgets_answer, reading_answer, utc_or_none
from ladder.gateway.decorators import ApiError, api_view, connection_allowed, read_json_body, request_token
from ladder.gateway.inputs import credential_input
from ladder.gateway.snapshot_cache import snapshot_cache
from ladder.selectors.connections import connection_exists, credential_summaries
from ladder.services import gateway_credentials as credentials

CONNECTION_ID_RE = re.compile(CONNECTION_ID_PATTERN)


def connection_not_found(connection_id: str) -> ApiError:
    """The one 404 of a connection id the ladder does not know, wherever it turns out missing."""
    return ApiError(404, "connection_not_found", f"the ladder knows no connection {connection_id!r}")


def known_connection(connection_id: str) -> None:
    """404 for an id the ladder does not know (checked before the body is read)."""
    if not CONNECTION_ID_RE.match(connection_id) or not connection_exists(connection_id=connection_id):
        raise connection_not_found(connection_id)


def connection_answer(
    connection: Connection, snapshot: Snapshot, credential: dict[str, Any] | None = None
) -> api.Connection:
    verdict = billing_verdict(snapshot, connection)
    rungs = {model: rung.label for model, rung in model_rungs(connection, snapshot, verdict.billing).items()}
    return api.Connection(
        id=connection.id,
        provider=connection.provider,
        auth_type=connection.auth_type,
        billing=verdict.billing,
        overage=verdict.overage,
        enabled=connection.enabled,
        disabled_reason=connection.disabled_reason,
        cooldown_until=utc_or_none(connection.cooldown_until),
        poll_interval_s=connection.poll_interval_s,
        reserve_pct=connection.reserve_pct,
        reading=reading_answer(connection.reading),
        rungs=rungs,
        credential=api.CredentialInfo(**credential) if credential else None,
    )


def _connections_answer(
    connections: list[Connection],
    snapshot: Snapshot,
    summaries: dict[str, dict[str, Any] | None],
    now: datetime,
) -> HttpResponse:
    return answer(
        api.ConnectionList(
            connections=tuple(connection_answer(c, snapshot, summaries.get(c.id)) for c in connections),
            budgets=budgets_answer(rung_budgets(snapshot.config, snapshot.spend_usd, now)),
        )
    )


@api_view(methods=("GET",), scope="resolve")
def connections_list(request: HttpRequest) -> HttpResponse:
    now = clock.current_time()
    snapshot = snapshot_cache.get(now)
    token = request_token(request)
    allowed = [c for c in snapshot.connections if token is None or token.allows_connection(c.id)]
    return _connections_answer(allowed, snapshot, credential_summaries(), now)


@api_view(methods=("GET",), scope="resolve")
def connection_detail(request: HttpRequest, connection_id: str) -> HttpResponse:
    connection_allowed(request, connection_id)
    now = clock.current_time()
    snapshot = snapshot_cache.get(now)
    found = snapshot.connections_by_id.get(connection_id)
    if found is None:
        known_connection(connection_id)  # a connection created since the snapshot: reload
        snapshot_cache.clear()
        snapshot = snapshot_cache.get(now)
        found = snapshot.connections_by_id.get(connection_id)
        if found is None:
            raise connection_not_found(connection_id)
    summaries = credential_summaries(connection_ids=[connection_id])
    return _connections_answer([found], snapshot, summaries, now)


@api_view(methods=("GET", "PUT"), scope="credentials")
def connection_credential(request: HttpRequest, connection_id: str) -> JsonResponse:
    """GET: a ladder-owned access token (refreshed first when due); PUT: a gateway-owned one's new
    token. Every call is recorded (token name, time), never the value; rate-limited per token."""
    if not CONNECTION_ID_RE.match(connection_id):
        raise connection_not_found(connection_id)  # before any query or record names it
    connection_allowed(request, connection_id)
    token = request.gateway_token  # type: ignore[attr-defined]
    action = "put" if request.method == "PUT" else "get"
    outcome = "ok"
    try:
        credentials.credential_rate_check(token_id=token.id, now=clock.current_time())
        if action == "get":
            return JsonResponse(credentials.credential_for_gateway(connection_id=connection_id))
        access_token, expires_at, account_id = credential_input(read_json_body(request), clock.current_time())
        pushed = credentials.credential_push_for_gateway(
            connection_id=connection_id,
            access_token=access_token,
            expires_at=expires_at,
            account_id=account_id,
            now=clock.current_time(),
        )
        snapshot_cache.clear()
        return JsonResponse(pushed)
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
