"""Every request and answer body of the gateway API (shared/contract/API.md), typed once.

The gateway decodes requests into these Structs (ladder.gateway.inputs), the OpenAPI document's
components are generated from them (ladder.gateway.schema), and the client decodes answers with them
(ladder_client). A limit is written here once: as a `Meta` constraint, or as a constant that both a
constraint and a check use.

Requests forbid unknown keys (a misspelt key would be ignored). Answers do not: a newer ladder may add
a key without breaking an older client; the OpenAPI document still closes them (the ladder sends no
other key). Answer times are decoded as aware datetimes; on the wire they are UTC, `...Z`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from ladder.domain.autoid import TIERS, advertised_auto_ids
from ladder.domain.types import BILLINGS, BUDGET_RUNGS, CATEGORIES, FAILURE_CLASSES, OVERAGES, SOURCES, Reason
from ladder.domain.windows import POLL_INTERVAL_MAX_S

MAX_TOKENS = 10**12
MAX_COST_USD = 10**9  # $1e9 for one request: far above any, well inside the column
MAX_EVENTS = 1000  # per usage report; more is a 413, not a 400
MAX_ID_CHARS = 200
MAX_HEADERS = 500
HTTP_STATUS = Meta(ge=100, le=599)

RUNGS = ("subscription", "keyless", "free", "cheap", "premium")
OBSERVED_OVERAGES = ("meters-to-paid", "hard-stop", "unknown")
EMPTY_CODES = ("no_candidates", "no_verified_subscription_quota", "all_rungs_exhausted")
TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?Z$"


# Every id of the L13 grammar: a closed set, so the schema says exactly what a 200 needs.
AUTO_IDS = advertised_auto_ids(frozenset(CATEGORIES))


def one_of(values: tuple[str, ...] | list[str], description: str | None = None) -> Meta:
    """A string documented as one of `values`. Decoded as any string: a client keeps working when a
    newer ladder adds a code."""
    return Meta(extra_json_schema={"enum": list(values)}, description=description)


# The API refuses a blank string wherever it needs a name or an id: it needs one character that
# str.strip() keeps. Those whitespace characters are listed one by one (none lies above U+3000): regex
# engines disagree on what \s covers (Python's takes U+001C..U+001F, ECMA-262's U+FEFF). msgspec, like
# JSON Schema, searches the pattern anywhere in the string.
NOT_BLANK = "[^" + "".join(chr(code) for code in range(0x3001) if chr(code).isspace()) + "]"
Name = Annotated[str, Meta(min_length=1, pattern=NOT_BLANK)]
Id = Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS, pattern=NOT_BLANK)]
InputTime = Annotated[
    datetime,
    Meta(
        tz=True,
        description="ISO 8601 (RFC 3339) with a zone (Z or an offset); absent: the time of receipt",
        examples=["2026-08-22T12:00:00Z"],
    ),
]
Time = Annotated[
    datetime,
    Meta(
        tz=True, extra_json_schema={"pattern": TIME_PATTERN}, description="UTC, YYYY-MM-DDTHH:MM:SS[.ffffff]Z"
    ),
]
Rung = Annotated[str, one_of(RUNGS)]
RungIndex = Annotated[int, Meta(ge=0, le=len(RUNGS) - 1)]
Tokens = Annotated[int, Meta(ge=0, le=MAX_TOKENS)]
Usd = Annotated[float, Meta(ge=0)]
Pct = Annotated[float, Meta(ge=0, le=100)]
HeaderValue = str | int | float | list[str]  # a number is written as text, a list joined with ", "
Headers = Annotated[
    dict[str, HeaderValue],
    Meta(max_length=MAX_HEADERS, description='header names to values; a list is joined with ", "'),
]


class Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request body: an unknown key is refused (ignored, it would hide a misspelling)."""


class Answer(msgspec.Struct, frozen=True):
    """An answer body: keys unknown to this version are ignored when decoding."""


# --- errors -----------------------------------------------------------------------------------


class ErrorDetail(Answer, frozen=True):
    code: Annotated[str, Meta(examples=["invalid_model"])]
    message: str
    field: Annotated[str | None, Meta(description="the request field at fault")]


class Error(Answer, frozen=True):
    error: ErrorDetail


# --- resolution (the offline resolver's document, STATE.md) -----------------------------------


class Candidate(Request, frozen=True):
    """What the gateway could route to. `connection_id` None = a logical candidate: the ladder filters
    `allowed_connection_ids` and the gateway picks among the survivors."""

    provider: Name
    model: Name
    connection_id: Name | None = None
    allowed_connection_ids: tuple[Name, ...] = ()


class ResolveRequest(Request, frozen=True):
    # Any JSON value: the domain's auto-id grammar checks it (a 400 `invalid_model` naming `model`).
    model: Annotated[
        Any,
        Meta(
            extra_json_schema={"enum": AUTO_IDS, "examples": ["auto/coding:thrifty"]},
            description="auto/subscription, auto/thrifty or auto/<category>:<tier> "
            f"(category: {', '.join(CATEGORIES)}; tier: {', '.join(TIERS)})",
        ),
    ]
    candidates: Annotated[
        tuple[Candidate, ...] | None, Meta(description="null or absent: built from the model catalog")
    ] = None


class PoolEntry(Answer, frozen=True):
    provider: str
    model: str
    rung: Rung
    rung_index: RungIndex
    connection_id: str | None
    allowed_connection_ids: Annotated[tuple[str, ...], Meta(min_length=1)]


class Exclusion(Answer, frozen=True):
    """A (candidate, connection) pair left out, with its reason code (DESIGN L14)."""

    provider: str
    model: str
    connection_id: str
    rung: Rung | None
    reason: Annotated[str, one_of(Reason.ALL)]
    detail: str


class Empty(Answer, frozen=True):
    """Why a pool is empty and when quota is expected back (None: nothing the clock will fix)."""

    code: Annotated[str, one_of(EMPTY_CODES)]
    message: str
    retry_at: Time | None


class Resolution(Answer, frozen=True, kw_only=True):
    """The offline resolver's document (STATE.md) for the same state."""

    model: str
    grouping: Annotated[str, one_of(TIERS)]
    category: Annotated[str, one_of(CATEGORIES)] | None
    resolved_at: Time
    pool: tuple[PoolEntry, ...]
    excluded: tuple[Exclusion, ...]
    empty: Empty | None
    refresh: tuple[str, ...]


# --- models -----------------------------------------------------------------------------------


class Model(Answer, frozen=True):
    id: Annotated[str, Meta(pattern=r"^auto/")]
    object: Literal["model"]
    created: int
    owned_by: Literal["omniroute-ladder"]


class ModelList(Answer, frozen=True):
    object: Literal["list"]
    data: tuple[Model, ...]


# --- usage ------------------------------------------------------------------------------------


class UsageEvent(Request, frozen=True, omit_defaults=True):
    """One upstream call to count. `request_id` makes a report idempotent: the same event sent again
    is answered as the first time, never counted twice. `cost_usd` None: priced from the catalog."""

    request_id: Id
    connection_id: Id
    model: Id
    input_tokens: Tokens = 0
    output_tokens: Tokens = 0
    cost_usd: Annotated[
        Annotated[float, Meta(ge=0, le=MAX_COST_USD)] | None,
        Meta(
            description="absent: input_tokens × input price + output_tokens × output price per "
            "million, from the model catalog"
        ),
    ] = None
    occurred_at: InputTime | UnsetType = UNSET


class UsageBatch(Request, frozen=True):
    events: Annotated[tuple[UsageEvent, ...], Meta(min_length=1, max_length=MAX_EVENTS)]


class UsageRecorded(Answer, frozen=True):
    request_id: str
    connection_id: str | None
    model: str | None
    rung: Rung | None
    rung_index: RungIndex | None
    budget_rung: Annotated[str, one_of(BUDGET_RUNGS)] | None
    cost_usd: Usd
    budget_cost_usd: Annotated[
        float,
        Meta(
            ge=0,
            description="what counts toward the rung budget: $0 on the subscription, keyless and free rungs",
        ),
    ]
    occurred_at: Time


class Budget(Answer, frozen=True):
    """A paid rung's budget this period (None: not gated) and what was spent on it."""

    budget_usd: Annotated[
        Usd | None, Meta(description="null: the rung is not gated; 0: the rung is disabled")
    ]
    spent_usd: Usd
    period_ends_at: Time


Budgets = Annotated[
    dict[str, Budget],
    Meta(
        description="per paid rung, the current period",
        extra_json_schema={"required": list(BUDGET_RUNGS), "propertyNames": {"enum": list(BUDGET_RUNGS)}},
    ),
]


class UsageResponse(Answer, frozen=True):
    events: tuple[UsageRecorded, ...]
    budgets: Budgets


# --- readings, observations, failures ---------------------------------------------------------


class Window(Answer, frozen=True):
    name: str
    remaining_pct: Pct
    reset_at: Time | None
    scope_models: tuple[str, ...]
    latched: bool
    exhausts_at: Annotated[
        Time | None,
        Meta(
            description="when it reaches the connection's cutoff at its current burn rate (issue 20); "
            "null: at or below it already, burning nothing, or lasting past its reset",
        ),
    ] = None


class Reading(Answer, frozen=True):
    fetched_at: Time
    source: Annotated[str, one_of(SOURCES)]
    verifiable: bool
    observed_overage: Annotated[str, one_of(OBSERVED_OVERAGES)] | None
    windows: tuple[Window, ...]

    def window(self, name: str) -> Window | None:
        return next((w for w in self.windows if w.name == name), None)


class ObservationRequest(Request, frozen=True):
    headers: Headers
    status: Annotated[int, HTTP_STATUS] | None = None
    observed_at: InputTime | UnsetType = UNSET


class ObservationResponse(Answer, frozen=True):
    reading: Reading | None


class FailureRequest(Request, frozen=True):
    status: Annotated[int, HTTP_STATUS]
    headers: Headers = {}
    body: Annotated[Any, Meta(description="the upstream body: decoded JSON or text")] = None
    model: Id | None = None
    observed_at: InputTime | UnsetType = UNSET


class FailureResponse(Answer, frozen=True):
    """The adapter's verdict: quota_exhausted, rate_limited, auth_failed or upstream_error."""

    classification: Annotated[str, one_of(FAILURE_CLASSES)]
    cooldown_until: Time | None
    reset_at: Time | None
    window: str | None
    windows: tuple[str, ...] = ()  # every window latched; `window` is the first (API.md)


# --- connections and credentials --------------------------------------------------------------


class CredentialInfo(Answer, frozen=True):
    """Who owns a connection's credential and until when (API.md: `Connection.credential`)."""

    owner: str
    expires_at: Time | None
    account_id: str | None


class Connection(Answer, frozen=True, kw_only=True):
    """A connection as the ladder sees it: billing verdict, reading, cooldown, rung per model."""

    id: str
    provider: str
    auth_type: str | None
    billing: Annotated[str, one_of(BILLINGS)]
    overage: Annotated[str, one_of(OVERAGES)]
    enabled: bool
    disabled_reason: str | None
    cooldown_until: Time | None
    poll_interval_s: Annotated[
        Annotated[float, Meta(gt=0, le=POLL_INTERVAL_MAX_S)] | None,
        Meta(
            description="its polling interval when slower than refresh_interval_s (DESIGN L5: its "
            "readings stay fresh max_reading_age_s + this); null: polled every interval",
        ),
    ]
    reserve_pct: Annotated[
        Pct | None,
        Meta(
            description="quota kept for the operator's own use (DESIGN L6): the connection leaves the "
            "plan rung at or below max(exit_cutoff_pct, reserve_pct)",
        ),
    ]
    reading: Reading | None
    rungs: Annotated[dict[str, Rung], Meta(description="the rung of each model it serves")]
    credential: Annotated[
        CredentialInfo | None, Meta(description="its credential's owner, expiry and account; never a token")
    ] = None


class ConnectionList(Answer, frozen=True):
    connections: tuple[Connection, ...]
    budgets: Budgets

    def get(self, connection_id: str) -> Connection | None:
        return next((c for c in self.connections if c.id == connection_id), None)


class CredentialRequest(Request, frozen=True):
    """PUT /api/v1/connections/{id}/credential: a token the gateway owns, for the ladder to poll with."""

    access_token: Annotated[str, Meta(min_length=1, pattern=NOT_BLANK)]
    expires_at: InputTime
    account_id: Id | None = None


class CredentialAnswer(Answer, frozen=True):
    """GET /api/v1/connections/{id}/credential: a token the ladder owns, lent to the gateway."""

    access_token: str
    expires_at: Time | None
    account_id: str | None

    def __repr__(self) -> str:  # a gateway that logs the object must not log the token
        return (
            f"CredentialAnswer(access_token='…', expires_at={self.expires_at!r}, "
            f"account_id={self.account_id!r})"
        )


class CredentialStored(Answer, frozen=True):
    credential: CredentialInfo


# --- escalation log, health -------------------------------------------------------------------


class Escalation(Answer, frozen=True):
    id: Annotated[int, Meta(ge=1)]
    auto_id: Annotated[str, Meta(pattern=r"^auto/")]
    from_rung: Annotated[Rung | None, Meta(description="null: the previous pool was empty")]
    to_rung: Annotated[Rung | None, Meta(description="null: the pool turned empty")]
    from_rung_index: RungIndex | None
    to_rung_index: RungIndex | None
    kind: Annotated[
        str,
        one_of(
            ("up", "down", "empty"),
            "up: a higher rung; empty: no pool; down: a lower rung, or any rung after an empty pool",
        ),
    ]
    why: Annotated[str, Meta(description="for people, built from the resolution")]
    occurred_at: Time


class EscalationList(Answer, frozen=True):
    escalations: Annotated[tuple[Escalation, ...], Meta(description="oldest first")]


class Health(Answer, frozen=True):
    status: Literal["ok"]


class Readiness(Answer, frozen=True):
    status: Literal["ok", "degraded", "unavailable"]
    database: Annotated[str, Meta(description='"ok" or what failed')]
    redis: Annotated[str, Meta(description='"ok" or what failed')]
    beat: Annotated[str, Meta(description='"ok", or "never: …" / "stale: …"')]


# The OpenAPI components (ladder.gateway.schema): every body above, and the shapes they hold.
COMPONENTS: tuple[type, ...] = (*Request.__subclasses__(), *Answer.__subclasses__())
