"""L13: the auto-id grammar."""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import get_args

from ladder.domain.types import CATEGORIES, Grouping

TIERS: tuple[Grouping, ...] = get_args(Grouping)
PREFIX = "auto/"


class AutoIdError(ValueError):
    field = "model"


@dataclass(frozen=True, slots=True)
class AutoId:
    grouping: Grouping
    category: str | None = None

    def __str__(self) -> str:
        return compose_auto_id(self.grouping, self.category)


ACCEPTED = (
    "auto/subscription, auto/thrifty, auto/<category>:<tier> "
    f"(category: {', '.join(CATEGORIES)}; tier: {', '.join(TIERS)})"
)


def parse_auto_id(value: object) -> AutoId:
    if not isinstance(value, str) or not value:
        raise AutoIdError(f"must be an auto id; accepted: {ACCEPTED}")
    if not value.startswith(PREFIX):
        raise AutoIdError(f"{value}: not an auto id; accepted: {ACCEPTED}")
    rest = value[len(PREFIX) :]
    if rest in TIERS:
        return AutoId(rest)  # type: ignore[arg-type]
    if ":" not in rest:
        raise AutoIdError(f"{value}: unknown auto id; accepted: {ACCEPTED}")
    category, _, tier = rest.partition(":")
    if category not in CATEGORIES:
        raise AutoIdError(
            f"{value}: unknown category {category!r}; accepted: {', '.join(CATEGORIES)} (ids: {ACCEPTED})"
        )
    if tier not in TIERS:
        raise AutoIdError(f"{value}: unknown tier {tier!r}; accepted: {', '.join(TIERS)} (ids: {ACCEPTED})")
    return AutoId(tier, category)  # type: ignore[arg-type]


def compose_auto_id(grouping: Grouping, category: str | None = None) -> str:
    if grouping not in TIERS:
        raise AutoIdError(f"unknown tier {grouping!r}; accepted: {', '.join(TIERS)}")
    if category is None:
        return f"{PREFIX}{grouping}"
    if category not in CATEGORIES:
        raise AutoIdError(f"unknown category {category!r}; accepted: {', '.join(CATEGORIES)}")
    return f"{PREFIX}{category}:{grouping}"


def advertised_auto_ids(categories_in_catalog: AbstractSet[str]) -> list[str]:
    """auto/subscription, auto/thrifty, then every auto/<category>:<tier> whose category has a model."""
    ids = [compose_auto_id(tier) for tier in TIERS]
    for category in CATEGORIES:
        if category in categories_in_catalog:
            ids.extend(compose_auto_id(tier, category) for tier in TIERS)
    return ids
