"""What several tables share: their choices, the normalised auth type, the check of a list of strings."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower, Trim

RUNG_CHOICES = [(0, "0 subscription"), (1, "1 keyless"), (2, "2 free"), (3, "3 cheap"), (4, "4 premium")]
AUTH_TYPE_HELP = "Trimmed and lower-cased on save (oauth, apikey, cookie…). Empty = provider-wide."

# Nullable strings (DJ001 silenced in the tables): NULL is "not set" in STATE.md and in the domain (None),
# and a NULL auth_type is what makes a row provider-wide; "" is never stored (normalised on save).


def string_list_errors(value: Any, *, allowed: Sequence[str] | None = None) -> str | None:
    """A readable message when value is not a list of non-empty strings (from allowed, if given)."""
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        return 'must be a list of non-empty strings, e.g. ["a", "b"]'
    if allowed is not None:
        unknown = [item for item in value if item not in allowed]
        if unknown:
            return f"unknown value(s) {', '.join(unknown)}; accepted: {', '.join(allowed)}"
    return None


def check_string_list(field: str, value: Any, allowed: Sequence[str] | None = None, tail: str = "") -> None:
    """clean()'s check of a JSON list of strings: a ValidationError naming the field, else nothing."""
    message = string_list_errors(value, allowed=allowed)
    if message:
        raise ValidationError({field: f"{field} {message}{tail}"})


def choices(values: Iterable[str]) -> list[tuple[str, str]]:
    """Django choices of a closed set whose values are their own labels."""
    return [(value, value) for value in values]


def one_of(field: str, values: Sequence[str], name: str, *, nullable: bool = False) -> models.CheckConstraint:
    """A CHECK that field holds one of values (or NULL, when nullable), its message naming them."""
    condition, empty = Q(**{f"{field}__in": values}), ""
    if nullable:
        condition, empty = Q(**{f"{field}__isnull": True}) | condition, "empty or "
    message = f"{field} must be {empty}one of: {', '.join(values)}."
    return models.CheckConstraint(condition=condition, name=name, violation_error_message=message)


def auth_type_normalised(name: str) -> models.CheckConstraint:
    """A CHECK that auth_type is stored normalised (or NULL), so that uniqueness holds after normalisation."""
    return models.CheckConstraint(
        condition=Q(auth_type__isnull=True) | (~Q(auth_type="") & Q(auth_type=Lower(Trim("auth_type")))),
        name=name,
        violation_error_message="auth_type must be trimmed, lower-case, and NULL rather than empty.",
    )
