from __future__ import annotations

from typing import Any

import pytest

from ladder.contract import api
from ladder.gateway.decorators import ApiError
from ladder.gateway.inputs import decode, header_texts, resolve_input, usage_input

EVENT = {"request_id": "r1", "connection_id": "c1", "model": "m"}


def failure_input(document: Any) -> api.FailureRequest:
    return decode(document, api.FailureRequest)


@pytest.mark.parametrize(
    ("parse", "body", "message"),
    [
        (
            usage_input,
            {"events": [EVENT, {**EVENT, "input_tokens": -1}]},
            "events[1].input_tokens: must be ≥ 0",
        ),
        (usage_input, {**EVENT, "request_id": " \t"}, "request_id: must be a non-empty string"),
        (usage_input, {**EVENT, "model": "x" * 201}, "model: must hold at most 200 characters"),
        (
            usage_input,
            {**EVENT, "input_tokens": 1.5},
            "input_tokens: must be a whole number, not a number with a fraction",
        ),
        (usage_input, {"events": []}, "events: must not be empty"),
        (usage_input, {**EVENT, "occurred_at": "2026-09-15T12:00:00"}, "occurred_at: has no zone"),
        (usage_input, [EVENT], "the body must be an object, not a list"),
        (resolve_input, {"candidates": None}, "model: is required"),
        (
            resolve_input,
            {"model": "auto/thrifty", "candidates": [{"provider": "p", "model": "m", "x": 1}]},
            "candidates[0].x: unknown key; accepted: provider, model, connection_id, allowed_connection_ids",
        ),
        (
            failure_input,
            {"status": 429, "headers": {"retry-after": {"s": 5}}},
            "headers.retry-after: must be",
        ),
        (failure_input, {"status": 600}, "status: must be ≤ 599"),
    ],
)
def test_it_words_msgspec_errors_as_the_api_does(parse: Any, body: Any, message: str) -> None:
    with pytest.raises(ApiError) as raised:
        parse(body)

    assert raised.value.status == 400
    assert raised.value.message.startswith(message)
    assert raised.value.field == (message.split(":")[0] if ":" in message else None)


def test_it_reads_header_numbers_and_lists_as_text() -> None:
    failure = failure_input({"status": 429, "headers": {"retry-after": 5, "x-a": ["1", "2"], "x-b": 0.5}})

    assert header_texts(failure.headers) == {"retry-after": "5", "x-a": "1, 2", "x-b": "0.5"}
