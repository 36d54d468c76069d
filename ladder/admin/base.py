"""What the admin's areas share: version-bumping saves, read-only history, https URL fields."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet, URLField
from django.http import HttpRequest

from ladder.services.state import bump_state_version

ListDisplay = tuple[str | Callable[[Any], str | bool], ...]


class VersionBumpingAdmin(admin.ModelAdmin):
    """Admin writes are writes like any other: they invalidate cached snapshots."""

    formfield_overrides = {URLField: {"assume_scheme": "https"}}  # noqa: RUF012

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        bump_state_version()

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        super().delete_model(request, obj)
        bump_state_version()

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        super().delete_queryset(request, queryset)
        bump_state_version()

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        if formsets:
            bump_state_version()


class ReadOnlyHistoryMixin:
    """What the ladder records itself is never typed in the admin: a hand-made reading (readings come
    from polls, passive headers and failure reports) could be dated in the future or claim quota that
    is not there; a hand-made failure or escalation would falsify the history. (obj: for inlines.)"""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def https_url_formfield(field: Any, **kwargs: Any) -> Any:
    if isinstance(field, URLField):
        kwargs.setdefault("assume_scheme", "https")
    return field.formfield(**kwargs)
