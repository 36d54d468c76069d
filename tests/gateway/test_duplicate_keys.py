"""Where a body repeats a key: the colon count clears a body only when no pair was dropped."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ladder.gateway.duplicate_keys import duplicate_key_path


def repeated_key_path(raw: bytes) -> str | None:
    return duplicate_key_path(raw, json.loads(raw))


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        (b'{"status": 401, "status": 500}', "status"),
        (b'{"a": {"b": 1, "b": 1}}', "a.b"),
        (b'{"events": [{}, {}, {"cost_usd": 1, "cost_usd": 0}]}', "events[2].cost_usd"),
        (b'[[{"x": 1}], [{"x": 1, "x": 1}]]', "[1][0].x"),
        # The key is the same once its escapes are read.
        (b'{"a": 1, "\\u0061": 2}', "a"),
        (b'{"a:b": 1, "a\\u003ab": 2}', "a:b"),
        (b'{"a:b": 1, "a\\u003Ab": 2}', "a:b"),
        # The dropped value's colons and the kept value's escaped colon cancel out in a naive count.
        (b'{"a": "x", "a": "y", "b": "\\u003a"}', "a"),
        (b'{"k": {"p": ":"}, "k": 1}', "k"),
        # Documents orjson cannot write: an integer past 64 bits, nesting past 255 levels.
        (b'{"n": 123456789012345678901234567890, "n": 1}', "n"),
        (b'{"d": ' + b"[" * 300 + b'{"z": 1, "z": 2}' + b"]" * 300 + b"}", "d" + "[0]" * 300 + ".z"),
        # An object's own repeat comes before those inside it; then document order.
        (b'{"a": {"x": 1, "x": 2}, "a": 1}', "a"),
        (b'{"a": {"x": 1, "x": 2}, "b": {"y": 1, "y": 2}}', "a.x"),
        (b'{"": 1, "": 2}', ""),
    ],
)
def test_it_names_the_first_repeated_key(raw: bytes, path: str) -> None:
    assert repeated_key_path(raw) == path


@pytest.mark.parametrize(
    "raw",
    [
        b"{}",
        b"[]",
        b'"a:b"',
        b'{"a": 1, "b": {"a": 1}, "c": [{"a": 1}, {"a": 2}]}',
        b'{"url": "https://x:8080/a:b", "k:v": ":::"}',
        b'{"a\\u003ab": 1, "a:c": 2}',
        b'{"a": "\\\\u003a", "b": 1}',
        b'{"n": 123456789012345678901234567890}',
        b'{"d": ' + b"[" * 300 + b'{"z": 1, "y": 2}' + b"]" * 300 + b"}",
    ],
)
def test_it_clears_a_body_without_a_repeated_key(raw: bytes) -> None:
    assert repeated_key_path(raw) is None


KEYS = st.sampled_from(["a", "b", ":", "a:b", "", "é"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.text(':ab\\"é', max_size=4),
)
# An object as a list of pairs, so that it can repeat a key.
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.builds(lambda pairs: ("object", pairs), st.lists(st.tuples(KEYS, inner), max_size=4)),
    ),
    max_leaves=12,
)


def write(document: Any, escape_colons: bool) -> str:
    if isinstance(document, tuple):
        return (
            "{"
            + ", ".join(f"{write(k, escape_colons)}: {write(v, escape_colons)}" for k, v in document[1])
            + "}"
        )
    if isinstance(document, list):
        return "[" + ", ".join(write(item, escape_colons) for item in document) + "]"
    text = json.dumps(document, ensure_ascii=False)
    return text.replace(":", "\\u003a") if escape_colons and isinstance(document, str) else text


def repeats_a_key(document: Any) -> bool:
    if isinstance(document, tuple):
        keys = [key for key, _ in document[1]]
        return len(set(keys)) < len(keys) or any(repeats_a_key(value) for _, value in document[1])
    return isinstance(document, list) and any(repeats_a_key(item) for item in document)


@given(DOCUMENTS, st.booleans())
def test_it_finds_a_repeated_key_exactly_when_there_is_one(document: Any, escape_colons: bool) -> None:
    raw = write(document, escape_colons).encode()

    assert (repeated_key_path(raw) is not None) == repeats_a_key(document)
