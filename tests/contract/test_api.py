from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from ladder.contract import api
from ladder.gateway.schema import openapi_document
from ladder.services import usage


def test_it_writes_each_limit_once() -> None:
    schemas = openapi_document()["components"]["schemas"]
    event = schemas["UsageEvent"]["properties"]

    assert schemas["UsageBatch"]["properties"]["events"]["maxItems"] == api.MAX_EVENTS
    assert event["input_tokens"]["maximum"] == api.MAX_TOKENS
    assert event["request_id"]["maxLength"] == api.MAX_ID_CHARS
    assert event["cost_usd"]["anyOf"][0]["maximum"] == api.MAX_COST_USD == usage.MAX_COST_USD


def test_it_refuses_an_unknown_key_in_a_request_and_ignores_one_in_an_answer() -> None:
    with pytest.raises(msgspec.ValidationError, match="unknown field `modle`"):
        msgspec.convert({"model": "auto/thrifty", "modle": 1}, api.ResolveRequest)

    window = {"name": "5h", "remaining_pct": 50, "reset_at": None, "scope_models": [], "latched": False}
    decoded = msgspec.convert({**window, "added_later": 1}, api.Window)

    assert decoded == api.Window("5h", 50.0, None, (), False)


def test_it_decodes_answer_times_as_aware_datetimes() -> None:
    budget = msgspec.convert(
        {"budget_usd": None, "spent_usd": 1.5, "period_ends_at": "2026-10-01T00:00:00Z"}, api.Budget
    )

    assert budget.period_ends_at == datetime(2026, 10, 1, tzinfo=UTC)
    assert msgspec.json.encode(budget) == (
        b'{"budget_usd":null,"spent_usd":1.5,"period_ends_at":"2026-10-01T00:00:00Z"}'
    )


def test_it_leaves_out_of_a_usage_event_what_was_not_given() -> None:
    event = api.UsageEvent(request_id="r1", connection_id="c1", model="m")

    assert msgspec.to_builtins(event) == {"request_id": "r1", "connection_id": "c1", "model": "m"}


def test_it_imports_no_django() -> None:
    import subprocess
    import sys

    code = "import sys, ladder.contract.api; sys.exit(any(m.split('.')[0] == 'django' for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], check=False, timeout=60).returncode == 0


def test_a_borrowed_credential_never_prints_its_token() -> None:
    borrowed = msgspec.convert(
        {"access_token": "sk-ant-oat01-secret", "expires_at": None, "account_id": "acct"},
        api.CredentialAnswer,
    )

    assert "secret" not in repr(borrowed)
    assert "secret" not in f"{borrowed} {[borrowed]}"
    assert borrowed.access_token == "sk-ant-oat01-secret"  # the token itself is still there to use
