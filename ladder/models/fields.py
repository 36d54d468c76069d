"""What several tables share: their choices, the normalised auth type, the check of a list of strings."""

from __future__ import annotations

from typing import Any

from django.db.models import Q
from django.db.models.functions import Lower, Trim

from ladder.domain.types import OVERAGES

OVERAGE_CHOICES = [(value, value) for value in OVERAGES]
RUNG_CHOICES = [(0, "0 subscription"), (1, "1 keyless"), (2, "2 free"), (3, "3 cheap"), (4, "4 premium")]
AUTH_TYPE_HELP = "Trimmed and lower-cased on save (oauth, apikey, cookie…). Empty = provider-wide."
# An auth_type is stored normalised (or NULL) so that uniqueness holds after normalisation.
AUTH_TYPE_NORMALISED = Q(auth_type__isnull=True) | (~Q(auth_type="") & Q(auth_type=Lower(Trim("auth_type"))))

# Nullable strings (DJ001 silenced in the tables): NULL is "not set" in STATE.md and in the domain (None),
# and a NULL auth_type is what makes a row provider-wide; "" is never stored (normalised on save).


def string_list_errors(value: Any, *, allowed: tuple[str, ...] | None = None) -> str | None:
    """A readable message when value is not a list of non-empty strings (from allowed, if given)."""
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        return 'must be a list of non-empty strings, e.g. ["a", "b"]'
    if allowed is not None:
        unknown = [item for item in value if item not in allowed]
        if unknown:
            return f"unknown value(s) {', '.join(unknown)}; accepted: {', '.join(allowed)}"
    return None
