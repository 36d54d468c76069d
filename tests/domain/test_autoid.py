"""L13: the auto-id grammar."""

from __future__ import annotations

import pytest

from ladder.domain import (
    AutoId,
    AutoIdError,
    advertised_auto_ids,
    compose_auto_id,
    parse_auto_id,
)
from ladder.domain.types import CATEGORIES, Grouping

CATEGORY_LIST = ("coding", "reasoning", "vision", "chat", "multimodal")
TIER_LIST: tuple[Grouping, ...] = ("subscription", "thrifty")
ACCEPTED: list[tuple[str, AutoId]] = [
    ("auto/subscription", AutoId("subscription")),
    ("auto/thrifty", AutoId("thrifty")),
] + [(f"auto/{c}:{t}", AutoId(t, c)) for c in CATEGORY_LIST for t in TIER_LIST]

REFUSED: list[object] = [
    "auto/subscription:coding",
    "auto/thrifty:coding",
    "auto/coding:warp",
    "auto/coding:paid",
    "auto/warp:thrifty",
    "gpt-4o",
    "",
    "auto/",
    "auto",
    "auto/coding",
    "auto/coding:",
    "auto/:thrifty",
    "auto/coding:thrifty:extra",
    "auto/Coding:thrifty",
    "auto/THRIFTY",
    "auto/thrifty/",
    None,
    42,
    ["auto/thrifty"],
    {"model": "auto/thrifty"},
]


def test_it_knows_the_five_categories() -> None:
    assert CATEGORIES == CATEGORY_LIST


@pytest.mark.parametrize(("value", "parsed"), ACCEPTED)
def test_it_accepts_every_auto_id_of_the_grammar(value: str, parsed: AutoId) -> None:
    assert parse_auto_id(value) == parsed


@pytest.mark.parametrize("value", REFUSED)
def test_it_refuses_anything_else(value: object) -> None:
    with pytest.raises(AutoIdError):
        parse_auto_id(value)


@pytest.mark.parametrize("value", REFUSED)
def test_it_names_what_is_accepted_when_refusing(value: object) -> None:
    with pytest.raises(AutoIdError) as info:
        parse_auto_id(value)
    message = str(info.value)
    assert "accepted" in message


@pytest.mark.parametrize("value", ["auto/subscription:coding", "auto/coding:warp", "gpt-4o", "", None])
def test_it_names_the_accepted_ids_in_every_refusal(value: object) -> None:
    """L13: "Anything else (`auto/subscription:coding`, `auto/coding:warp`, `gpt-4o`) is a clear 400 naming
    what is accepted" — what is accepted is the id grammar, so each refusal names the two plain ids."""
    with pytest.raises(AutoIdError) as info:
        parse_auto_id(value)
    message = str(info.value)
    assert "auto/subscription" in message
    assert "auto/thrifty" in message


@pytest.mark.parametrize(
    ("value", "word"), [("auto/coding:warp", "thrifty"), ("auto/warp:thrifty", "coding")]
)
def test_it_lists_the_accepted_tier_or_category(value: str, word: str) -> None:
    with pytest.raises(AutoIdError) as info:
        parse_auto_id(value)
    assert word in str(info.value)


def test_it_is_a_value_error_naming_the_model_field() -> None:
    assert issubclass(AutoIdError, ValueError)
    assert AutoIdError.field == "model"


@pytest.mark.parametrize(("value", "parsed"), ACCEPTED)
def test_it_composes_what_it_parses(value: str, parsed: AutoId) -> None:
    assert compose_auto_id(parsed.grouping, parsed.category) == value
    assert str(parsed) == value
    assert parse_auto_id(compose_auto_id(parsed.grouping, parsed.category)) == parsed


@pytest.mark.parametrize(("grouping", "category"), [("warp", None), ("thrifty", "audio"), ("paid", "coding")])
def test_it_refuses_to_compose_an_id_outside_the_grammar(grouping: str, category: str | None) -> None:
    with pytest.raises(AutoIdError):
        compose_auto_id(grouping, category)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("categories", "expected"),
    [
        (set(), ["auto/subscription", "auto/thrifty"]),
        ({"chat"}, ["auto/subscription", "auto/thrifty", "auto/chat:subscription", "auto/chat:thrifty"]),
        (
            {"vision", "coding"},
            [
                "auto/subscription",
                "auto/thrifty",
                "auto/coding:subscription",
                "auto/coding:thrifty",
                "auto/vision:subscription",
                "auto/vision:thrifty",
            ],
        ),
        ({"audio"}, ["auto/subscription", "auto/thrifty"]),
    ],
)
def test_it_advertises_the_ids_whose_category_has_a_model(categories: set[str], expected: list[str]) -> None:
    advertised = advertised_auto_ids(categories)
    assert sorted(advertised) == sorted(expected)
    assert len(advertised) == len(set(advertised))
    assert advertised[:2] == ["auto/subscription", "auto/thrifty"]
