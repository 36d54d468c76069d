"""What the ladder's gateway API answers and takes: the Structs of ladder.contract.api (API.md,
STATE.md), under the names this client has always exported.

Decoding is strict about the keys the contract promises and ignores keys it does not know, so a
newer ladder that adds a field does not break an older client.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

import msgspec

from ladder.contract.api import (
    Budget,
    Candidate,
    Connection,
    ConnectionList,
    CredentialAnswer,
    CredentialInfo,
    CredentialStored,
    Empty,
    Exclusion,
    FailureResponse,
    ModelList,
    PoolEntry,
    Reading,
    Resolution,
    UsageEvent,
    UsageRecorded,
    UsageResponse,
    Window,
)

T = TypeVar("T")

ConnectionState = Connection
ConnectionsReport = ConnectionList
BorrowedCredential = CredentialAnswer
CredentialSummary = CredentialInfo
EmptyPool = Empty
Excluded = Exclusion
FailureOutcome = FailureResponse
QuotaWindow = Window
RungBudget = Budget
UsageReport = UsageResponse

__all__ = [
    "BorrowedCredential",
    "Candidate",
    "CredentialStored",
    "CredentialSummary",
    "ConnectionState",
    "ConnectionsReport",
    "EmptyPool",
    "Excluded",
    "FailureOutcome",
    "LadderProtocolError",
    "ModelList",
    "PoolEntry",
    "QuotaWindow",
    "Reading",
    "Resolution",
    "RungBudget",
    "UsageEvent",
    "UsageRecorded",
    "UsageReport",
    "decoded",
    "format_time",
    "to_json",
]


class LadderProtocolError(ValueError):
    """The ladder answered 2xx with a document this client cannot read (a version mismatch)."""


def decoded(document: Any, kind: type[T]) -> T:
    """An answer (parsed JSON) as a `kind`; LadderProtocolError naming where it differs."""
    try:
        return msgspec.convert(document, kind)
    except msgspec.ValidationError as exc:
        raise LadderProtocolError(str(exc)) from None


def format_time(moment: datetime, where: str) -> str:
    """An aware datetime as ISO 8601; a naive one is refused (the ladder refuses times without a zone)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{where}: a time needs a zone (e.g. datetime.now(UTC)), got naive {moment}")
    return moment.isoformat()


def to_json(body: msgspec.Struct) -> Any:
    """A request body as JSON values; a naive time is refused here, before anything is sent."""
    document = msgspec.to_builtins(body)
    for name in body.__struct_fields__:
        value = getattr(body, name)
        if isinstance(value, datetime):
            format_time(value, name)
        elif isinstance(value, Decimal):  # a cost given as a Decimal: a JSON number, not text
            document[name] = float(value)
    return document
