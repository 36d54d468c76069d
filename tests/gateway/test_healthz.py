from __future__ import annotations

from typing import Any

from tests.gateway.conftest import assert_error, assert_schema

PATH = "/healthz"


def test_it_answers_without_a_database_or_a_token(client: Any) -> None:
    response = client.get(PATH)

    assert response.status_code == 200
    assert assert_schema(response, PATH, "get") == {"status": "ok"}


def test_it_refuses_a_post_in_the_error_shape(client: Any) -> None:
    assert_error(client.post(PATH), PATH, "get", 405, "method_not_allowed")
