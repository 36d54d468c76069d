"""The OpenAPI 3.1 schema of the gateway API: the source of truth that the tests check real responses
against (Zulip style). Hand-written; JSON Schema 2020-12 inside."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from ladder.domain.autoid import TIERS, compose_auto_id
from ladder.domain.types import BUDGET_RUNGS, CATEGORIES, FAILURE_CLASSES, SOURCES, Reason
from ladder.domain.windows import POLL_INTERVAL_MAX_S

JSON = "application/json"
TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?Z$"
RUNGS = ["subscription", "keyless", "free", "cheap", "premium"]


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(properties: dict[str, Any], *, required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """A closed object: every listed property required unless `required` says otherwise."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
        **extra,
    }


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


TIME = {"type": "string", "pattern": TIME_PATTERN, "description": "UTC, YYYY-MM-DDTHH:MM:SS[.ffffff]Z"}
INPUT_TIME = {
    "type": "string",
    "format": "date-time",
    "description": "ISO 8601 with a zone (Z or an offset); a time without a zone is refused",
    "examples": ["2026-08-22T12:00:00Z"],
}
# The API refuses a blank string wherever it needs a name or an id: it needs one character that
# str.strip() keeps. Those whitespace characters are listed one by one (none lies above U+3000): regex
# engines disagree on what \s covers (Python's takes U+001C..U+001F, ECMA-262's U+FEFF).
STRIPPED = "".join(chr(code) for code in range(0x3001) if chr(code).isspace())
NOT_BLANK = f"[^{STRIPPED}]"
NAME = {"type": "string", "minLength": 1, "pattern": NOT_BLANK}
HEADER_VALUE = {
    "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "array", "items": {"type": "string"}}],
    "description": 'a header value; a list is joined with ", "',
}
ID = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": NOT_BLANK}


def accepted_auto_ids() -> list[str]:
    """Every id of the L13 grammar: a closed set, so the schema says exactly what a 200 needs."""
    return [compose_auto_id(tier) for tier in TIERS] + [
        compose_auto_id(tier, category) for category in CATEGORIES for tier in TIERS
    ]


def _schemas() -> dict[str, Any]:
    window = obj(
        {
            "name": {"type": "string"},
            "remaining_pct": {"type": "number", "minimum": 0, "maximum": 100},
            "reset_at": nullable(TIME),
            "scope_models": {"type": "array", "items": {"type": "string"}},
            "latched": {"type": "boolean"},
        }
    )
    reading = obj(
        {
            "fetched_at": TIME,
            "source": {"enum": list(SOURCES)},
            "verifiable": {"type": "boolean"},
            "observed_overage": {"enum": ["meters-to-paid", "hard-stop", "unknown", None]},
            "windows": {"type": "array", "items": ref("Window")},
        }
    )
    budget = obj(
        {
            "budget_usd": {
                "type": ["number", "null"],
                "minimum": 0,
                "description": "null: the rung is not gated; 0: the rung is disabled",
            },
            "spent_usd": {"type": "number", "minimum": 0},
            "period_ends_at": TIME,
        }
    )
    return {
        "Error": obj(
            {
                "error": obj(
                    {
                        "code": {"type": "string", "examples": ["invalid_model"]},
                        "message": {"type": "string"},
                        "field": {"type": ["string", "null"], "description": "the request field at fault"},
                    }
                )
            }
        ),
        "Candidate": obj(
            {
                "provider": NAME,
                "model": NAME,
                "connection_id": {"type": ["string", "null"], "minLength": 1, "pattern": NOT_BLANK},
                "allowed_connection_ids": {"type": "array", "items": NAME},
            },
            required=["provider", "model"],
        ),
        "ResolveRequest": obj(
            {
                "model": {
                    "enum": accepted_auto_ids(),
                    "description": "auto/subscription, auto/thrifty or auto/<category>:<tier> "
                    f"(category: {', '.join(CATEGORIES)}; tier: subscription, thrifty)",
                    "examples": ["auto/coding:thrifty"],
                },
                "candidates": {
                    "anyOf": [{"type": "array", "items": ref("Candidate")}, {"type": "null"}],
                    "description": "null or absent: built from the model catalog",
                },
            },
            required=["model"],
        ),
        "PoolEntry": obj(
            {
                "provider": {"type": "string"},
                "model": {"type": "string"},
                "rung": {"enum": RUNGS},
                "rung_index": {"type": "integer", "minimum": 0, "maximum": 4},
                "connection_id": {"type": ["string", "null"]},
                "allowed_connection_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            }
        ),
        "Exclusion": obj(
            {
                "provider": {"type": "string"},
                "model": {"type": "string"},
                "connection_id": {"type": "string"},
                "rung": {"enum": [*RUNGS, None]},
                "reason": {"enum": list(Reason.ALL)},
                "detail": {"type": "string"},
            }
        ),
        "Empty": obj(
            {
                "code": {"enum": ["no_candidates", "no_verified_subscription_quota", "all_rungs_exhausted"]},
                "message": {"type": "string"},
                "retry_at": nullable(TIME),
            }
        ),
        "Resolution": obj(
            {
                "model": {"type": "string"},
                "grouping": {"enum": ["subscription", "thrifty"]},
                "category": {"enum": [*CATEGORIES, None]},
                "resolved_at": TIME,
                "pool": {"type": "array", "items": ref("PoolEntry")},
                "excluded": {"type": "array", "items": ref("Exclusion")},
                "empty": nullable(ref("Empty")),
                "refresh": {"type": "array", "items": {"type": "string"}},
            },
            description="The offline resolver's document (STATE.md) for the same state",
        ),
        "Model": obj(
            {
                "id": {"type": "string", "pattern": r"^auto/"},
                "object": {"const": "model"},
                "created": {"type": "integer"},
                "owned_by": {"const": "omniroute-ladder"},
            }
        ),
        "ModelList": obj({"object": {"const": "list"}, "data": {"type": "array", "items": ref("Model")}}),
        "UsageEvent": obj(
            {
                "request_id": ID,
                "connection_id": ID,
                "model": ID,
                "input_tokens": {"type": "integer", "minimum": 0, "maximum": 10**12, "default": 0},
                "output_tokens": {"type": "integer", "minimum": 0, "maximum": 10**12, "default": 0},
                "cost_usd": {
                    "type": ["number", "null"],
                    "minimum": 0,
                    "maximum": 10**9,
                    "description": "absent: input_tokens × input price + output_tokens × output price "
                    "per million, from the model catalog",
                },
                "occurred_at": {**INPUT_TIME, "description": "absent: the time of receipt"},
            },
            required=["request_id", "connection_id", "model"],
        ),
        "UsageBatch": obj(
            {"events": {"type": "array", "items": ref("UsageEvent"), "minItems": 1, "maxItems": 1000}}
        ),
        "UsageRecorded": obj(
            {
                "request_id": {"type": "string"},
                "connection_id": {"type": ["string", "null"]},
                "model": {"type": ["string", "null"]},
                "rung": {"enum": [*RUNGS, None]},
                "rung_index": {"type": ["integer", "null"], "minimum": 0, "maximum": 4},
                "budget_rung": {"enum": [*BUDGET_RUNGS, None]},
                "cost_usd": {"type": "number", "minimum": 0},
                "budget_cost_usd": {
                    "type": "number",
                    "minimum": 0,
                    "description": "what counts toward the rung budget: $0 on the subscription, "
                    "keyless and free rungs",
                },
                "occurred_at": TIME,
            }
        ),
        "Budget": budget,
        "Budgets": obj({rung: ref("Budget") for rung in BUDGET_RUNGS}),
        "UsageResponse": obj(
            {
                "events": {"type": "array", "items": ref("UsageRecorded")},
                "budgets": {**ref("Budgets"), "description": "the current period, after the event(s)"},
            }
        ),
        "Window": window,
        "Reading": reading,
        "ObservationRequest": obj(
            {
                "status": {"type": "integer", "minimum": 100, "maximum": 599},
                "headers": {"type": "object", "additionalProperties": HEADER_VALUE},
                "observed_at": {**INPUT_TIME, "description": "absent: the time of receipt"},
            },
            required=["headers"],
        ),
        "ObservationResponse": obj({"reading": nullable(ref("Reading"))}),
        "FailureRequest": obj(
            {
                "status": {"type": "integer", "minimum": 100, "maximum": 599},
                "headers": {
                    "type": "object",
                    "additionalProperties": HEADER_VALUE,
                    "default": {},
                },
                "body": {"description": "the upstream body: decoded JSON or text", "default": None},
                "model": {**ID, "type": ["string", "null"], "default": None},
                "observed_at": {**INPUT_TIME, "description": "absent: the time of receipt"},
            },
            required=["status"],
        ),
        "FailureResponse": obj(
            {
                "classification": {"enum": list(FAILURE_CLASSES)},
                "cooldown_until": nullable(TIME),
                "reset_at": nullable(TIME),
                "window": {"type": ["string", "null"]},
                "windows": {"type": "array", "items": {"type": "string"}},
            }
        ),
        "Connection": obj(
            {
                "id": {"type": "string"},
                "provider": {"type": "string"},
                "auth_type": {"type": ["string", "null"]},
                "billing": {"enum": ["subscription", "metered", "keyless", "unknown"]},
                "overage": {"enum": ["hard-stop", "meters-to-paid", "unknown"]},
                "enabled": {"type": "boolean"},
                "disabled_reason": {"type": ["string", "null"]},
                "cooldown_until": nullable(TIME),
                "poll_interval_s": {
                    "type": ["number", "null"],
                    "exclusiveMinimum": 0,
                    "maximum": POLL_INTERVAL_MAX_S,
                    "description": "its polling interval when slower than refresh_interval_s (DESIGN L5: "
                    "its readings stay fresh max_reading_age_s + this); null: polled every interval",
                },
                "reserve_pct": {
                    "type": ["number", "null"],
                    "minimum": 0,
                    "maximum": 100,
                    "description": "quota kept for the operator's own use (DESIGN L6): the connection "
                    "leaves the plan rung at or below max(exit_cutoff_pct, reserve_pct)",
                },
                "reading": nullable(ref("Reading")),
                "rungs": {"type": "object", "additionalProperties": {"enum": RUNGS}},
            }
        ),
        "ConnectionList": obj(
            {"connections": {"type": "array", "items": ref("Connection")}, "budgets": ref("Budgets")}
        ),
        "Escalation": obj(
            {
                "id": {"type": "integer", "minimum": 1},
                "auto_id": {"type": "string", "pattern": r"^auto/"},
                "from_rung": {"enum": [*RUNGS, None], "description": "null: the previous pool was empty"},
                "to_rung": {"enum": [*RUNGS, None], "description": "null: the pool turned empty"},
                "from_rung_index": {"type": ["integer", "null"], "minimum": 0, "maximum": 4},
                "to_rung_index": {"type": ["integer", "null"], "minimum": 0, "maximum": 4},
                "kind": {
                    "enum": ["up", "down", "empty"],
                    "description": "up: a higher rung; empty: no pool; down: a lower rung, or any rung "
                    "after an empty pool",
                },
                "why": {"type": "string", "description": "for people, built from the resolution"},
                "occurred_at": TIME,
            }
        ),
        "EscalationList": obj(
            {
                "escalations": {
                    "type": "array",
                    "items": ref("Escalation"),
                    "description": "oldest first",
                }
            }
        ),
        "Health": obj({"status": {"const": "ok"}}),
        "Readiness": obj(
            {
                "status": {"enum": ["ok", "degraded", "unavailable"]},
                "database": {"type": "string", "description": '"ok" or what failed'},
                "redis": {"type": "string", "description": '"ok" or what failed'},
                "beat": {"type": "string", "description": '"ok", or "never: …" / "stale: …"'},
            }
        ),
    }


ERROR_TEXT = {
    400: "Invalid JSON, an object that repeats a key, a wrong shape or type, a bad query parameter, or "
    "a model id outside the auto-id grammar",
    401: "No bearer token, or an unknown or revoked one",
    403: "The token lacks the scope, or may not name this connection (connection_not_allowed)",
    404: "Unknown connection",
    405: "Method not allowed",
    409: "The request_id was already reported with another payload",
    413: "Body over 1 MiB (or more than 1,000 events)",
    415: "Not application/json",
    422: "Understood but not acceptable (unknown connection or model, a time in the future, a reading "
    "that cannot be stored)",
    429: "Too many reports from this token this minute (rate_limited); see Retry-After",
    503: "The database is unavailable",
}


def _errors(*statuses: int) -> dict[str, Any]:
    return {
        str(status): {"description": ERROR_TEXT[status], "content": {JSON: {"schema": ref("Error")}}}
        for status in statuses
    }


def _ok(schema: str, description: str) -> dict[str, Any]:
    return {"200": {"description": description, "content": {JSON: {"schema": ref(schema)}}}}


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {JSON: {"schema": schema}}}


CONNECTION_ID_PARAM = {
    "name": "connection_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": r"^[A-Za-z0-9._:-]{1,64}$"},
    "description": "The gateway's own connection id",
}
ESCALATION_PARAMS = [
    {
        "name": "auto_id",
        "in": "query",
        "required": False,
        "schema": {"enum": accepted_auto_ids(), "examples": ["auto/thrifty"]},
        "description": "Only this auto id's events",
    },
    {
        "name": "since",
        "in": "query",
        "required": False,
        "schema": INPUT_TIME,
        "description": "Only events at or after this time (write a + offset as %2B)",
    },
    {
        "name": "limit",
        "in": "query",
        "required": False,
        "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
        "description": "At most this many events (the oldest that match)",
    },
]
BODY_ERRORS = (400, 401, 403, 405, 413, 415, 503)
OPEN: list[dict[str, Any]] = []


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
        "paths": {
            "/api/v1/pools/resolve": {
                "post": {
                    "operationId": "pools_resolve",
                    "summary": "The ordered, explained pool for an auto id (scope resolve)",
                    "requestBody": _body(ref("ResolveRequest")),
                    "responses": {
                        **_ok("Resolution", "The resolution; an empty pool is a 200"),
                        **_errors(*BODY_ERRORS),
                    },
                }
            },
            "/v1/models": {
                "get": {
                    "operationId": "models_list",
                    "summary": "OpenAI-compatible list of the advertised auto ids",
                    "security": OPEN,
                    "responses": {**_ok("ModelList", "The auto ids"), **_errors(401, 403, 405, 503)},
                }
            },
            "/api/v1/usage": {
                "post": {
                    "operationId": "usage_report",
                    "summary": "Report one usage event or a batch (scope report); idempotent by request_id",
                    "requestBody": _body({"oneOf": [ref("UsageEvent"), ref("UsageBatch")]}),
                    "responses": {
                        **_ok("UsageResponse", "Recorded (or replayed); the rung spend and budgets after it"),
                        **_errors(*BODY_ERRORS, 409, 422, 429),
                    },
                }
            },
            "/api/v1/escalations": {
                "get": {
                    "operationId": "escalations_list",
                    "summary": "The escalation log: each change of the rung an auto id's gateway resolutions "
                    "start on, oldest first (scope resolve). An audit trail: routing never reads it",
                    "parameters": ESCALATION_PARAMS,
                    "responses": {
                        **_ok("EscalationList", "The events, oldest first"),
                        **_errors(400, 401, 403, 405, 422, 503),
                    },
                }
            },
            "/api/v1/connections": {
                "get": {
                    "operationId": "connections_list",
                    "summary": "Every connection (verdict, rungs, reading); the budgets (scope resolve)",
                    "responses": {**_ok("ConnectionList", "The connections"), **_errors(401, 403, 405, 503)},
                }
            },
            "/api/v1/connections/{connection_id}": {
                "get": {
                    "operationId": "connection_detail",
                    "summary": "One connection, in the list's shape (scope resolve)",
                    "parameters": [CONNECTION_ID_PARAM],
                    "responses": {
                        **_ok("ConnectionList", "A list of one"),
                        **_errors(401, 403, 404, 405, 503),
                    },
                }
            },
            "/api/v1/connections/{connection_id}/observations": {
                "post": {
                    "operationId": "connection_observations",
                    "summary": "Passive quota headers of an upstream reply (scope report)",
                    "parameters": [CONNECTION_ID_PARAM],
                    "requestBody": _body(ref("ObservationRequest")),
                    "responses": {
                        **_ok("ObservationResponse", "The reading stored, or null"),
                        **_errors(*BODY_ERRORS, 404, 422, 429),
                    },
                }
            },
            "/api/v1/connections/{connection_id}/failures": {
                "post": {
                    "operationId": "connection_failures",
                    "summary": "An upstream failure, classified and acted on (scope report)",
                    "parameters": [CONNECTION_ID_PARAM],
                    "requestBody": _body(ref("FailureRequest")),
                    "responses": {
                        **_ok("FailureResponse", "The classification and its effect"),
                        **_errors(*BODY_ERRORS, 404, 422, 429),
                    },
                }
            },
            "/api/v1/openapi.json": {
                "get": {
                    "operationId": "openapi_schema",
                    "summary": "This document",
                    "security": OPEN,
                    "responses": {
                        "200": {
                            "description": "OpenAPI 3.1",
                            "content": {JSON: {"schema": {"type": "object"}}},
                        },
                        **_errors(405),
                    },
                }
            },
            "/healthz": {
                "get": {
                    "operationId": "healthz",
                    "summary": "The process answers",
                    "security": OPEN,
                    "responses": {**_ok("Health", "Alive"), **_errors(405)},
                }
            },
            "/readyz": {
                "get": {
                    "operationId": "readyz",
                    "summary": "Database, Redis and the last beat tick",
                    "security": OPEN,
                    "responses": {
                        **_ok("Readiness", "The database answers (Redis or beat may be down: see the body)"),
                        "503": {
                            "description": "The database is down",
                            "content": {JSON: {"schema": ref("Readiness")}},
                        },
                        **_errors(405),
                    },
                }
            },
        },
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
