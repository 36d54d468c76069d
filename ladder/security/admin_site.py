"""The admin site: Django's own, with a login that throttles failures (ladder.security.login_throttle).

ladder.security.admin_apps.LadderAdminConfig, installed in place of "django.contrib.admin", makes it the
default site, so that `admin.site` and every `@admin.register` use it.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse

from ladder.security.login_throttle import ThrottledAdminAuthenticationForm, throttled_answer


class LadderAdminSite(admin.AdminSite):
    login_form = ThrottledAdminAuthenticationForm

    def login(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        response = super().login(request, extra_context)
        form = (getattr(response, "context_data", None) or {}).get("form")
        throttled_answer(response, form)
        return response
