"""Where a JSON body repeats a key, found at a cost that a body without one barely notices.

Every parser at hand keeps the last of a repeated key (`{"status": 401, "status": 500}` reads as a
500), and none of the kept fast ones can refuse it: orjson declined the option (ijl/orjson#456),
msgspec has none (msgspec/msgspec#648). json's `object_pairs_hook` can, but it calls Python once per
object of every body. So the common body is cleared by counting colons, with orjson's writer, and
only a body that may repeat a key is parsed a second time, keeping every pair, to name the key.

Why the count is exact: in the body's text, each key/value pair has one colon and every other colon
lies inside a string. orjson writes the parsed document with one colon per key it kept and the
strings' colons as they are (no number or literal holds one). The only escape that makes a colon is
`\\u003a`, so a body that holds `\\u003` goes to the second parse. Otherwise both counts agree unless
a pair was dropped: a repeated key, whose pair (and whatever it held) the parser let go. A document
orjson cannot write (an integer past 64 bits, nesting past orjson's 255 levels) is parsed again too.

Measured with `benchmarks/bench_body.py` (`read_json_body` on a 100-event usage batch).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_COLON_ESCAPE = b"\\u003"


class _Pairs(list[tuple[str, Any]]):
    """An object as the body wrote it: every pair in order, repeats included (a JSON array stays a list)."""


def duplicate_key_path(raw: bytes, document: Any) -> str | None:
    """The path (`events[2].cost_usd`) of the first key that an object of `raw` repeats, or None.

    `document` is `raw` as parsed (last value wins); `raw` is known to be valid JSON."""
    if _COLON_ESCAPE not in raw:
        try:
            written = orjson.dumps(document)
        except orjson.JSONEncodeError:
            pass
        else:
            if raw.count(b":") == written.count(b":"):
                return None
    return _first_repeated_key(json.loads(raw, object_pairs_hook=_Pairs))


def _first_repeated_key(document: Any) -> str | None:
    """An object's own repeats before those of the objects inside it, otherwise in document order;
    iterative, since the body may nest as deeply as json.loads allowed."""
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, _Pairs):
            seen: set[str] = set()
            for key, _ in item:
                if key in seen:
                    return f"{path}.{key}" if path else key
                seen.add(key)
            stack.extend((f"{path}.{key}" if path else key, value) for key, value in reversed(item))
        elif isinstance(item, list):
            stack.extend((f"{path}[{index}]", value) for index, value in reversed(list(enumerate(item))))
    return None
