from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from jsonschema import Draft202012Validator

from ladder.gateway.inputs import ESCALATION_QUERY_KEYS, ESCALATIONS_DEFAULT_LIMIT, ESCALATIONS_MAX_LIMIT
from ladder.gateway.schema import openapi_document
from tests.gateway.conftest import assert_schema

PATH = "/api/v1/openapi.json"
METHODS = ("get", "post", "put", "patch", "delete")


def request_validator(path: str, method: str = "post") -> Draft202012Validator:
    pointer = "/".join(
        part.replace("~", "~0").replace("/", "~1")
        for part in ("paths", path, method, "requestBody", "content", "application/json", "schema")
    )
    return Draft202012Validator({**openapi_document(), "$ref": f"#/{pointer}"})


def routes() -> list[str]:
    """Every concrete route of the project, in the document's path syntax."""
    found: list[str] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern) and entry.name != "api-not-found":
                found.append(
                    "/" + (prefix + str(entry.pattern)).replace("<str:connection_id>", "{connection_id}")
                )

    walk(get_resolver().url_patterns, "")
    return found


def test_it_serves_the_openapi_31_document_without_a_token(client: Any) -> None:
    response = client.get(PATH)

    assert response.status_code == 200
    document = assert_schema(response, PATH, "get")
    assert document["openapi"] == "3.1.0"
    assert document == json.loads(json.dumps(openapi_document()))


def test_it_holds_only_valid_json_schemas() -> None:
    for name, schema in openapi_document()["components"]["schemas"].items():
        Draft202012Validator.check_schema(schema)  # raises, naming the bad keyword
        assert name


def test_it_documents_every_route_of_the_ladder() -> None:
    documented = set(openapi_document()["paths"])
    api_routes = {route for route in routes() if route.startswith(("/api/", "/v1/", "/healthz", "/readyz"))}

    assert api_routes == documented


def test_it_documents_the_error_shape_for_every_error_status() -> None:
    for path, operations in openapi_document()["paths"].items():
        for method, operation in operations.items():
            assert method in METHODS
            for status, response in operation["responses"].items():
                if int(status) >= 400 and path != "/readyz":
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/Error"}, (path, status)


@pytest.mark.parametrize(
    ("path", "body", "valid"),
    [
        ("/api/v1/pools/resolve", {"model": "auto/coding:thrifty", "candidates": None}, True),
        (
            "/api/v1/pools/resolve",
            {
                "model": "auto/thrifty",
                "candidates": [
                    {
                        "provider": "claude",
                        "model": "claude-sonnet-4-5",
                        "connection_id": None,
                        "allowed_connection_ids": ["c1"],
                    }
                ],
            },
            True,
        ),
        ("/api/v1/pools/resolve", {"candidates": []}, False),
        ("/api/v1/usage", {"request_id": "r", "connection_id": "c", "model": "m", "input_tokens": 1}, True),
        ("/api/v1/usage", {"events": [{"request_id": "r", "connection_id": "c", "model": "m"}]}, True),
        ("/api/v1/usage", {"events": []}, False),
        ("/api/v1/usage", {"request_id": "r", "connection_id": "c", "model": "m", "input_tokens": -1}, False),
        ("/api/v1/connections/{connection_id}/observations", {"status": 200, "headers": {"a": "b"}}, True),
        ("/api/v1/connections/{connection_id}/observations", {"status": 200}, False),
        (
            "/api/v1/connections/{connection_id}/failures",
            {"status": 429, "body": "slow down", "model": None},
            True,
        ),
        ("/api/v1/connections/{connection_id}/failures", {"headers": {}}, False),
    ],
)
def test_it_describes_the_request_bodies_of_the_contract(path: str, body: Any, valid: bool) -> None:
    assert request_validator(path).is_valid(body) is valid


def test_it_documents_the_query_parameters_of_the_escalation_log() -> None:
    operation = openapi_document()["paths"]["/api/v1/escalations"]["get"]
    parameters = {parameter["name"]: parameter for parameter in operation["parameters"]}

    assert list(parameters) == list(ESCALATION_QUERY_KEYS)
    assert all(p["in"] == "query" and not p["required"] for p in parameters.values())
    limit = parameters["limit"]["schema"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (
        1,
        ESCALATIONS_MAX_LIMIT,
        ESCALATIONS_DEFAULT_LIMIT,
    )
