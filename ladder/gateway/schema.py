"""The OpenAPI 3.1 schema of the gateway API: the source of truth that the tests check real responses
against (Zulip style). Its components are generated from the typed bodies of ladder.contract.api;
the paths, written here, name them. Served at /api/v1/openapi.json, which the 404 of any other
path under /api/ points to."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import msgspec
from django.http import HttpRequest, JsonResponse

from ladder.contract import api
from ladder.domain.types import CONNECTION_ID_CHARACTER
from ladder.gateway.decorators import ApiError, api_view
from ladder.gateway.inputs import ESCALATIONS_DEFAULT_LIMIT, ESCALATIONS_MAX_LIMIT

JSON = "application/json"


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _schemas() -> dict[str, Any]:
    _, components = msgspec.json.schema_components(api.COMPONENTS, ref_template="#/components/schemas/{name}")
    for schema in components.values():
        schema.pop("title", None)
        # An answer's object is closed: the ladder sends no other key (a client ignores keys it does
        # not know, so its Struct stays open).
        if schema.get("type") == "object" and "properties" in schema:
            schema.setdefault("additionalProperties", False)
    return components


ERROR_TEXT = {
    400: "Invalid JSON, an object that repeats a key, a wrong shape or type, a bad query parameter, or "
    "a model id outside the auto-id grammar",
    401: "No bearer token, or an unknown or revoked one",
    403: "The token lacks the scope, or may not name this connection (connection_not_allowed)",
    404: "Unknown connection",
    405: "Method not allowed",
    409: "The request_id was already reported with another payload; or the credential is not the "
    "caller's to fetch or push (credential_not_owned, no_credential, needs_reauth)",
    413: f"Body over 1 MiB (or more than {api.MAX_EVENTS:,} events)",
    415: "Not application/json",
    422: "Understood but not acceptable (unknown connection or model, a time in the future, a reading "
    "that cannot be stored)",
    429: "Too many calls for this gateway token (rate_limited); Retry-After says when to come back",
    503: "The database is unavailable; or another process is refreshing the credential "
    "(refresh_in_progress, with Retry-After); or the credential expired and its refresh failed for "
    "now (refresh_failed, with Retry-After)",
}


def _errors(*statuses: int) -> dict[str, Any]:
    return {
        str(status): {"description": ERROR_TEXT[status], "content": {JSON: {"schema": ref("Error")}}}
        for status in statuses
    }


def _responses(schema: str, description: str, errors: tuple[int, ...]) -> dict[str, Any]:
    """The 200 answer, a `schema` component, and the `errors`."""
    return {
        "200": {"description": description, "content": {JSON: {"schema": ref(schema)}}},
        **_errors(*errors),
    }


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {JSON: {"schema": schema}}}


CONNECTION_ID_PARAM = {
    "name": "connection_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": f"^{CONNECTION_ID_CHARACTER}{{1,64}}$"},
    "description": "The gateway's own connection id",
}
ESCALATION_PARAMS = [
    {
        "name": "auto_id",
        "in": "query",
        "required": False,
        "schema": {"enum": api.AUTO_IDS, "examples": ["auto/thrifty"]},
        "description": "Only this auto id's events",
    },
    {
        "name": "since",
        "in": "query",
        "required": False,
        "schema": {"type": "string", "format": "date-time", "examples": ["2026-08-22T12:00:00Z"]},
        "description": "Only events at or after this time, ISO 8601 with a zone (write a + offset as %2B)",
    },
    {
        "name": "limit",
        "in": "query",
        "required": False,
        "schema": {
            "type": "integer",
            "minimum": 1,
            "maximum": ESCALATIONS_MAX_LIMIT,
            "default": ESCALATIONS_DEFAULT_LIMIT,
        },
        "description": "At most this many events (the oldest that match)",
    },
]
BODY_ERRORS = (400, 401, 403, 405, 413, 415, 503)
OPEN: list[dict[str, Any]] = []

PATHS = {
    "/api/v1/pools/resolve": {
        "post": {
            "operationId": "pools_resolve",
            "summary": "The ordered, explained pool for an auto id (scope resolve)",
            "requestBody": _body(ref("ResolveRequest")),
            "responses": _responses("Resolution", "The resolution; an empty pool is a 200", BODY_ERRORS),
        }
    },
    "/v1/models": {
        "get": {
            "operationId": "models_list",
            "summary": "OpenAI-compatible list of the advertised auto ids",
            "security": OPEN,
            "responses": _responses("ModelList", "The auto ids", (401, 403, 405, 503)),
        }
    },
    "/api/v1/usage": {
        "post": {
            "operationId": "usage_report",
            "summary": "Report one usage event or a batch (scope report); idempotent by request_id",
            "requestBody": _body({"oneOf": [ref("UsageEvent"), ref("UsageBatch")]}),
            "responses": _responses(
                "UsageResponse",
                "Recorded (or replayed); the rung spend and budgets after it",
                (*BODY_ERRORS, 409, 422, 429),
            ),
        }
    },
    "/api/v1/escalations": {
        "get": {
            "operationId": "escalations_list",
            "summary": "The escalation log: each change of the rung an auto id's gateway resolutions start "
            "on, oldest first (scope resolve). An audit trail: routing never reads it",
            "parameters": ESCALATION_PARAMS,
            "responses": _responses(
                "EscalationList", "The events, oldest first", (400, 401, 403, 405, 422, 503)
            ),
        }
    },
    "/api/v1/connections": {
        "get": {
            "operationId": "connections_list",
            "summary": "Every connection (verdict, rungs, reading); the budgets (scope resolve)",
            "responses": _responses("ConnectionList", "The connections", (401, 403, 405, 503)),
        }
    },
    "/api/v1/connections/{connection_id}": {
        "get": {
            "operationId": "connection_detail",
            "summary": "One connection, in the list's shape (scope resolve)",
            "parameters": [CONNECTION_ID_PARAM],
            "responses": _responses("ConnectionList", "A list of one", (401, 403, 404, 405, 503)),
        }
    },
    "/api/v1/connections/{connection_id}/observations": {
        "post": {
            "operationId": "connection_observations",
            "summary": "Passive quota headers of an upstream reply (scope report)",
            "parameters": [CONNECTION_ID_PARAM],
            "requestBody": _body(ref("ObservationRequest")),
            "responses": _responses(
                "ObservationResponse", "The reading stored, or null", (*BODY_ERRORS, 404, 422, 429)
            ),
        }
    },
    "/api/v1/connections/{connection_id}/credential": {
        "get": {
            "operationId": "connection_credential_get",
            "summary": "A ladder-owned access token, refreshed first when due (scope credentials)",
            "parameters": [CONNECTION_ID_PARAM],
            "responses": _responses(
                "CredentialAnswer", "The current access token", (401, 403, 404, 405, 409, 429, 503)
            ),
        },
        "put": {
            "operationId": "connection_credential_put",
            "summary": "A gateway-owned connection's new access token (scope credentials)",
            "parameters": [CONNECTION_ID_PARAM],
            "requestBody": _body(ref("CredentialRequest")),
            "responses": _responses(
                "CredentialStored", "What is stored, never the token", (*BODY_ERRORS, 404, 409, 422, 429)
            ),
        },
    },
    "/api/v1/connections/{connection_id}/failures": {
        "post": {
            "operationId": "connection_failures",
            "summary": "An upstream failure, classified and acted on (scope report)",
            "parameters": [CONNECTION_ID_PARAM],
            "requestBody": _body(ref("FailureRequest")),
            "responses": _responses(
                "FailureResponse", "The classification and its effect", (*BODY_ERRORS, 404, 422, 429)
            ),
        }
    },
    "/api/v1/openapi.json": {
        "get": {
            "operationId": "openapi_schema",
            "summary": "This document",
            "security": OPEN,
            "responses": {
                "200": {"description": "OpenAPI 3.1", "content": {JSON: {"schema": {"type": "object"}}}},
                **_errors(405),
            },
        }
    },
    "/healthz": {
        "get": {
            "operationId": "healthz",
            "summary": "The process answers",
            "security": OPEN,
            "responses": _responses("Health", "Alive", (405,)),
        }
    },
    "/readyz": {
        "get": {
            "operationId": "readyz",
            "summary": "Database, Redis and the last beat tick",
            "security": OPEN,
            "responses": {
                **_responses(
                    "Readiness", "The database answers (Redis or beat may be down: see the body)", (405,)
                ),
                "503": {
                    "description": "The database is down",
                    "content": {JSON: {"schema": ref("Readiness")}},
                },
            },
        }
    },
}


@cache
def _document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "OmniRoute Ladder gateway API",
            "version": "1",
            "description": "Which pool for this request, and reports back from the gateway "
            '(shared/contract/API.md). Every error is {"error": {"code", "message", "field"}}. '
            "No string may contain NUL (\\u0000): no database column can hold one (a 400). No object "
            "may repeat a key: a 400 naming it (`events[2].cost_usd: duplicate key`), never the last "
            "value silently.",
        },
        "security": [{"bearer": []}],
        "paths": PATHS,
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A gateway token created in the admin (scopes resolve and/or report)",
                }
            },
        },
    }


def openapi_document() -> dict[str, Any]:
    """A copy of the schema (callers may not change the cached one)."""
    return copy.deepcopy(_document())


@api_view(methods=("GET",))
def openapi_schema(request: HttpRequest) -> JsonResponse:
    return JsonResponse(openapi_document())


@api_view(methods=("GET", "POST", "PUT", "PATCH", "DELETE"))
def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    raise ApiError(404, "not_found", f"no such endpoint: {request.path}; see /api/v1/openapi.json")
