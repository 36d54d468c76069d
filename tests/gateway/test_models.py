from __future__ import annotations

from typing import Any

import pytest

from ladder import models as m
from ladder.services.state import bump_state_version
from tests.gateway.conftest import Api, assert_error, assert_schema

pytestmark = pytest.mark.django_db

PATH = "/v1/models"


def ids(client: Any) -> list[str]:
    response = client.get(PATH)
    assert response.status_code == 200
    return [entry["id"] for entry in assert_schema(response, PATH, "get")["data"]]


def test_it_lists_the_auto_ids_of_the_seeded_catalog_without_a_token(client: Any) -> None:
    response = client.get(PATH)

    body = assert_schema(response, PATH, "get")
    assert body["object"] == "list"
    assert [entry["id"] for entry in body["data"]] == [
        "auto/subscription",
        "auto/thrifty",
        "auto/coding:subscription",
        "auto/coding:thrifty",
        "auto/reasoning:subscription",
        "auto/reasoning:thrifty",
        "auto/vision:subscription",
        "auto/vision:thrifty",
        "auto/chat:subscription",
        "auto/chat:thrifty",
        "auto/multimodal:subscription",
        "auto/multimodal:thrifty",
    ]
    assert {entry["owned_by"] for entry in body["data"]} == {"omniroute-ladder"}


def test_it_advertises_only_categories_with_a_model(client: Any) -> None:
    m.ModelCatalogEntry.objects.all().delete()
    m.ModelCatalogEntry.objects.create(provider="claude", model="claude-sonnet-4-5", categories=["coding"])
    bump_state_version()

    assert ids(client) == [
        "auto/subscription",
        "auto/thrifty",
        "auto/coding:subscription",
        "auto/coding:thrifty",
    ]


def test_it_advertises_the_two_groupings_with_an_empty_catalog(client: Any) -> None:
    m.ModelCatalogEntry.objects.all().delete()
    bump_state_version()

    assert ids(client) == ["auto/subscription", "auto/thrifty"]


def test_it_asks_for_a_token_when_settings_say_so(client: Any, settings: Any, token: str) -> None:
    settings.LADDER_MODELS_REQUIRE_TOKEN = True

    assert_error(client.get(PATH), PATH, "get", 401, "unauthenticated")
    assert Api(client, token).get(PATH).status_code == 200
