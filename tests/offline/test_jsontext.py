"""JSON text out of the offline commands."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from ladder.offline.jsontext import dump_json_text

NOW = datetime(2026, 8, 22, 12, 0, tzinfo=UTC)


def test_it_writes_compact_json_with_utf8_as_it_is() -> None:
    document = {"provider": "café", "ids": ["a", "b"], "retry_at": None, "rung_index": 3}

    text = dump_json_text(document)

    assert text == json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    assert dump_json_text(document, 2) == json.dumps(document, ensure_ascii=False, indent=2)


@pytest.mark.parametrize("indent", [None, 2])
def test_it_writes_a_lone_surrogate_as_the_escape_the_file_held(indent: int | None) -> None:
    text = dump_json_text({"provider": "p\ud800", "model": "café"}, indent)

    assert "\\ud800" in text
    assert "café" in text
    text.encode("utf-8")  # any UTF-8 output can carry it
    assert json.loads(text) == {"provider": "p\ud800", "model": "café"}


def test_it_refuses_what_is_not_json_as_json_does() -> None:
    with pytest.raises(TypeError):
        dump_json_text({"at": NOW})
