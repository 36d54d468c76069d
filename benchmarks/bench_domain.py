"""Domain benchmark: resolve 10,000 and 20,000 (candidate, connection) pairs; the offline resolver
over 1,000 connections through call_command, side by side with what users would pick instead —
LiteLLM's router choosing one deployment among 1,000 (usage-based, and a plain shuffle), in the same
process. Prints figures; the last line is ratio=t20000/t10000."""

from __future__ import annotations

import atexit
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omniroute.settings")

from benchmarks.statefactory import synthetic_state  # noqa: E402
from ladder.domain import resolution_to_dict, resolve  # noqa: E402
from ladder.statefile import parse_state  # noqa: E402


def time_pairs(pairs: int, repeat: int = 7) -> float:
    # 20 providers × 10 models × N connections = pairs
    per_provider = pairs // (20 * 10)
    document = synthetic_state(providers=20, connections_per_provider=per_provider, models_per_provider=10)
    samples = []
    for _ in range(repeat):
        state = parse_state(document)  # a fresh snapshot: nothing memoised between runs
        assert state.now is not None
        start = time.perf_counter()
        resolution = resolve(state.snapshot, "auto/thrifty", None, state.now)
        samples.append(time.perf_counter() - start)
        judged = sum(len(e.allowed_connection_ids) for e in resolution.pool) + len(resolution.excluded)
        assert judged == pairs, (judged, pairs)
    return statistics.median(samples)


def offline_resolver_call(connections: int) -> Callable[[], None]:
    """One `ladder_resolve` through call_command over `connections` connections, JSON in and out."""
    import django
    from django.core.management import call_command

    django.setup()
    document = synthetic_state(
        providers=20, connections_per_provider=connections // 20, models_per_provider=1
    )
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(document, fh)
        path = fh.name
    atexit.register(os.unlink, path)

    def call() -> None:
        out = io.StringIO()
        call_command("ladder_resolve", path, stdout=out)
        json.loads(out.getvalue())  # outside the contract's clock, but proves the answer is whole

    return call


def litellm_call(deployments: int, strategy: str) -> Callable[[], None] | None:
    """LiteLLM's Router picking one deployment of a group of `deployments` (None: LiteLLM absent)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import
    try:
        from litellm import Router
    except ImportError:
        return None
    model_list = [
        {
            "model_name": "group",
            "litellm_params": {
                "model": f"openai/model-{i}",
                "api_key": "unused",
                "api_base": "http://127.0.0.1:9/v1",
                "tpm": 1_000_000,
                "rpm": 10_000,
            },
            "model_info": {"id": f"deployment-{i}"},
        }
        for i in range(deployments)
    ]
    router = Router(model_list=model_list, routing_strategy=strategy)
    messages = [{"role": "user", "content": "hello"}]

    def call() -> None:
        router.get_available_deployment(model="group", messages=messages)

    return call


def side_by_side(calls: dict[str, Callable[[], None]], rounds: int = 31) -> dict[str, list[float]]:
    """Interleaved: each round times every contender once, so a noisy moment hits them all alike."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for call in calls.values():
        call()  # warm: imports, first-call caches
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
    return samples


def main() -> None:
    t10 = time_pairs(10_000)
    t20 = time_pairs(20_000)
    print(f"resolve 10000 pairs: {t10 * 1000:.1f} ms")
    print(f"resolve 20000 pairs: {t20 * 1000:.1f} ms")
    calls = {"offline": offline_resolver_call(1000)}
    usage_based = litellm_call(1000, "usage-based-routing")
    shuffle = litellm_call(1000, "simple-shuffle")
    if usage_based is not None and shuffle is not None:
        calls |= {"usage-based": usage_based, "shuffle": shuffle}
    samples = side_by_side(calls)
    offline = statistics.median(samples["offline"])
    print(f"ladder_resolve over 1000 connections via call_command (JSON in and out): {offline * 1000:.2f} ms")
    if len(calls) == 1:
        print("litellm: not installed (pip install .[litellm]); no side-by-side figure")
    else:
        for name in ("usage-based", "shuffle"):
            figure = statistics.median(samples[name]) * 1000
            print(f"litellm Router, 1 of 1000 deployments, {name}: {figure:.2f} ms")
        # The median of each round's own ratio: both sides of a ratio timed in the same round.
        per_round = {
            name: statistics.median(o / t for o, t in zip(samples["offline"], samples[name], strict=True))
            for name in ("usage-based", "shuffle")
        }
        print(
            f"offline resolver / litellm usage-based = {per_round['usage-based']:.3f} (target <= 0.2); "
            f"/ simple-shuffle = {per_round['shuffle']:.3f}  (median of {len(samples['offline'])} "
            "interleaved rounds)"
        )
    # resolution_to_dict is part of every answer: make sure it is cheap too
    state = parse_state(synthetic_state(providers=20, connections_per_provider=100, models_per_provider=10))
    assert state.now is not None
    resolution = resolve(state.snapshot, "auto/thrifty", None, state.now)
    start = time.perf_counter()
    json.dumps(resolution_to_dict(resolution))
    print(f"render 20000-pair resolution to JSON: {(time.perf_counter() - start) * 1000:.1f} ms")
    print(f"ratio={t20 / t10:.2f}")


if __name__ == "__main__":
    main()
