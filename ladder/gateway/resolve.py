"""The models, the resolution and its audit trail. The resolution is the offline resolver's own
document: one code path, snapshot_load → domain.resolve → domain.resolution_to_dict."""

from __future__ import annotations

import logging

import orjson
from django.conf import settings
from django.http import HttpRequest, HttpResponse

from ladder.contract import api
from ladder.domain import advertised_auto_ids, resolution_to_dict, resolve
from ladder.domain.types import Rung
from ladder.gateway import clock
from ladder.gateway.answers import answer, utc
from ladder.gateway.decorators import api_view, authenticate, read_json_body
from ladder.gateway.inputs import escalations_query, resolve_input
from ladder.gateway.snapshot_cache import snapshot_cache
from ladder.selectors.escalations import EscalationRecord
from ladder.selectors.escalations import escalations_list as escalation_events
from ladder.services.escalations import escalation_observe
from ladder.services.refresh.on_demand import refresh_request

logger = logging.getLogger(__name__)

MODELS_CREATED = 1767225600  # 2026-01-01T00:00:00Z: the auto ids are not dated models


@api_view(methods=("GET",))
def models_list(request: HttpRequest) -> HttpResponse:
    """OpenAI-compatible list of the auto ids (DESIGN L13)."""
    if settings.LADDER_MODELS_REQUIRE_TOKEN:
        authenticate(request, "resolve")
    snapshot = snapshot_cache.get(clock.current_time())
    categories = {category for entry in snapshot.models for category in entry.categories}
    data = tuple(
        api.Model(id=auto_id, object="model", created=MODELS_CREATED, owned_by="omniroute-ladder")
        for auto_id in advertised_auto_ids(categories)
    )
    return answer(api.ModelList(object="list", data=data))


@api_view(methods=("POST",), scope="resolve")
def pools_resolve(request: HttpRequest) -> HttpResponse:
    model, candidates = resolve_input(read_json_body(request))
    now = clock.current_time()
    resolution = resolve(snapshot_cache.get(now), model, candidates, now)
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


def _rung_label(rung: int | None) -> str | None:
    return None if rung is None else Rung(rung).label


def escalation_answer(event: EscalationRecord) -> api.Escalation:
    return api.Escalation(
        id=event.id,
        auto_id=event.auto_id,
        from_rung=_rung_label(event.from_rung),
        to_rung=_rung_label(event.to_rung),
        from_rung_index=event.from_rung,
        to_rung_index=event.to_rung,
        kind=event.kind,
        why=event.why,
        occurred_at=utc(event.occurred_at),
    )


@api_view(methods=("GET",), scope="resolve")
def escalations_list(request: HttpRequest) -> HttpResponse:
    auto_id, since, limit = escalations_query(dict(request.GET.lists()))
    events = escalation_events(auto_id=auto_id, since=since, limit=limit)
    return answer(api.EscalationList(escalations=tuple(escalation_answer(event) for event in events)))
