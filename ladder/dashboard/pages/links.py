"""The URLs the pages link to, and the auto ids they offer."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote, urlencode

from django.urls import reverse

from ladder.domain import Snapshot, advertised_auto_ids


@lru_cache(maxsize=1)
def _connection_url_prefix() -> str:
    # reverse() once: the overview links thousands of cards. The placeholder is a valid id.
    return reverse("ladder:connection_page", args=["x"])[: -len("x/")]


def connection_url(connection_id: str) -> str:
    return f"{_connection_url_prefix()}{quote(connection_id, safe='')}/"


def preview_url(auto_id: str) -> str:
    return f"{reverse('ladder:pool_preview')}?{urlencode({'model': auto_id})}"


def timeline_url(auto_id: str) -> str:
    return f"{reverse('ladder:escalations_page')}?{urlencode({'model': auto_id})}"


@dataclass(frozen=True)
class AutoIdLink:
    auto_id: str
    url: str


def auto_id_links(snapshot: Snapshot) -> list[AutoIdLink]:
    categories = {c for entry in snapshot.models for c in entry.categories}
    return [AutoIdLink(auto_id, preview_url(auto_id)) for auto_id in advertised_auto_ids(categories)]
