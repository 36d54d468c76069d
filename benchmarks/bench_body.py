"""Body benchmark: what refusing duplicate keys costs `read_json_body` on a usage batch.

One process, no database, no HTTP: `read_json_body` reads prepared requests (the RequestFactory's,
built outside the clock) of a batch of usage events as a gateway sends it. Three contenders, in
interleaved rounds (rotating their order): `without` (the duplicate check replaced by a no-op: the
body read as before), `with` (ladder.gateway.duplicate_keys: the colon count, a second parse only when
it may be needed) and `pairs_hook` (the textbook check, json's object_pairs_hook on every object,
shown for comparison). A fourth, `typed`, times the whole way from request to typed events:
`read_json_body` and then `usage_input` (the decoding into ladder.contract.api's Structs).

Prints each contender's best and median time per body; the last line is
``overhead=<with / without - 1>`` from the medians of per-round ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omniroute.settings")


def usage_batch(events: int) -> bytes:
    return json.dumps(
        {
            "events": [
                {
                    "request_id": f"chatcmpl-{index:08d}-7f3a9c2e",
                    "connection_id": "claude-max",
                    "model": "claude-sonnet-4-5",
                    "input_tokens": 12_000 + index,
                    "output_tokens": 340 + index,
                    "cost_usd": round(0.0123 + index / 997, 6),
                    "occurred_at": "2026-09-15T12:00:00Z",
                }
                for index in range(events)
            ]
        }
    ).encode()


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(pairs)
    if len(document) != len(pairs):
        raise ValueError("duplicate key")
    return document


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--calls", type=int, default=200, help="bodies read per contender and round")
    args = parser.parse_args()

    import django

    django.setup()
    from django.test import RequestFactory

    from ladder.gateway import decorators, inputs

    body = usage_batch(args.events)
    factory = RequestFactory()

    def requests() -> list[Any]:
        return [
            factory.post("/api/v1/usage", data=body, content_type="application/json")
            for _ in range(args.calls)
        ]

    real_loads = json.loads

    def hooked_loads(text: Any, **kwargs: Any) -> Any:
        return real_loads(text, object_pairs_hook=_pairs_hook, **kwargs)

    contenders: dict[str, Callable[[], Any]] = {
        "without": lambda: mock.patch.object(decorators, "duplicate_key_path", return_value=None),
        "with": contextlib.nullcontext,
        "pairs_hook": lambda: mock.patch.multiple(
            decorators,
            duplicate_key_path=mock.Mock(return_value=None),
            json=mock.Mock(loads=hooked_loads),
        ),
        "typed": contextlib.nullcontext,
    }
    read = decorators.read_json_body

    def typed(request: Any) -> Any:
        return inputs.usage_input(read(request))

    calls: dict[str, Callable[[Any], Any]] = {name: read for name in contenders}
    calls["typed"] = typed
    times: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for round_index in range(args.rounds):
        # Each round in another order, each contender after a collection: neither the order nor the
        # garbage of the one before weighs on a contender's time.
        for name in names[round_index % len(names) :] + names[: round_index % len(names)]:
            prepared = requests()
            gc.collect()
            call = calls[name]
            with contenders[name]():
                start = time.perf_counter()
                for request in prepared:
                    call(request)
                times[name].append((time.perf_counter() - start) / args.calls)

    print(f"body: {args.events} usage events, {len(body):,} bytes; {args.rounds} rounds of {args.calls}")
    for name, values in times.items():
        print(
            f"{name:>10}: best {min(values) * 1e6:7.1f} µs, median {statistics.median(values) * 1e6:7.1f} µs"
        )
    for name in ("with", "pairs_hook", "typed"):
        ratios = [after / before for after, before in zip(times[name], times["without"], strict=True)]
        print(f"{name} / without: median of per-round ratios {statistics.median(ratios):.3f}")
    ratios = [after / before for after, before in zip(times["with"], times["without"], strict=True)]
    print(f"overhead={statistics.median(ratios) - 1:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
