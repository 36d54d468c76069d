"""The bare view of `make bench-api` and the urlconf that serves it beside the product's URLs.

The view answers json.dumps of a pre-built dict: the resolution the benchmark captured once from the
real POST /api/v1/pools/resolve (same shape and size), read from the JSON file named by
BENCH_BARE_PAYLOAD on the first request of each worker and kept in memory afterwards."""

from __future__ import annotations

import json
import os
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

PAYLOAD_ENV = "BENCH_BARE_PAYLOAD"
BARE_PATH = "/bench/bare"

_prebuilt: dict[str, Any] | None = None


def prebuilt() -> dict[str, Any]:
    global _prebuilt
    if _prebuilt is None:
        with open(os.environ[PAYLOAD_ENV], encoding="utf-8") as fh:
            _prebuilt = json.load(fh)
    return _prebuilt


@csrf_exempt
@require_POST
def bare(request: HttpRequest) -> HttpResponse:
    return HttpResponse(json.dumps(prebuilt()), content_type="application/json")


urlpatterns = [
    path(BARE_PATH.lstrip("/"), bare, name="bench-bare"),
    path("", include("omniroute.urls")),
]
