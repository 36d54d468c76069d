"""Domain benchmark: resolve 10,000 and 20,000 (candidate, connection) pairs; the offline resolver
over 1,000 connections through call_command, side by side with what users would pick instead —
LiteLLM's router choosing one deployment among 1,000 (usage-based, and a plain shuffle). Each
contender runs in a process of its own (as each runs in production: the ladder's resolver never shares
a heap with LiteLLM's router), and the rounds interleave them so that a noisy moment hits them all.
Each round times a short burst per contender: its first call after idle, and the rest warm.
Then floor_ratio: the offline resolver over 1,000 connections (two windows each) against the floor of
any resolver of that file, reading it and orjson.loads of its bytes, interleaved in this one process
with nothing kept between calls. Prints figures; the last line is ratio=t20000/t10000."""

from __future__ import annotations

import atexit
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omniroute.settings")

from benchmarks.statefactory import synthetic_state  # noqa: E402
from ladder.contract.state.decode import parse_state  # noqa: E402
from ladder.domain import resolution_to_dict, resolve  # noqa: E402


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

    first = io.StringIO()
    call_command("ladder_resolve", path, stdout=first)
    answer = first.getvalue()
    pool = json.loads(answer)["pool"]  # once: a whole JSON document
    if sum(len(entry["allowed_connection_ids"]) for entry in pool) <= connections // 2:
        raise RuntimeError(f"the benchmark's state should pool most connections: {pool}")

    def call() -> None:
        out = io.StringIO()
        call_command("ladder_resolve", path, stdout=out)
        # The contract's clock is call_command's: each answer is checked against the first by one string
        # comparison (a few microseconds inside the timed call), not parsed again.
        if out.getvalue() != answer:
            raise RuntimeError("ladder_resolve answered the same state differently")

    return call


def floor_ratio(connections: int = 1000, rounds: int = 41) -> tuple[float, float, float]:
    """Median per-round ratio of one ladder_resolve call to reading the same file and orjson.loads of
    it, interleaved in this process (nothing kept between calls: each call reads and parses the file);
    with the median times of each side."""
    import django
    import orjson
    from django.core.management import call_command

    django.setup()
    document = synthetic_state(
        providers=20, connections_per_provider=connections // 20, models_per_provider=1
    )
    with tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False) as fh:
        fh.write(orjson.dumps(document))
        path = fh.name
    atexit.register(os.unlink, path)

    def ladder() -> None:
        call_command("ladder_resolve", path, stdout=io.StringIO())

    def floor() -> None:
        with open(path, "rb") as fh:
            orjson.loads(fh.read())

    for _ in range(3):  # warm: imports, the command's parser
        ladder()
        floor()
    ratios, ladder_times, floor_times = [], [], []
    for _ in range(rounds):
        start = time.perf_counter()
        ladder()
        middle = time.perf_counter()
        floor()
        end = time.perf_counter()
        ladder_times.append(middle - start)
        floor_times.append(end - middle)
        ratios.append((middle - start) / (end - middle))
    return statistics.median(ratios), statistics.median(ladder_times), statistics.median(floor_times)


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


CONTENDERS: dict[str, Callable[[], Callable[[], None] | None]] = {
    "offline": lambda: offline_resolver_call(1000),
    "usage-based": lambda: litellm_call(1000, "usage-based-routing"),
    "shuffle": lambda: litellm_call(1000, "simple-shuffle"),
}


def contender(name: str) -> None:
    """A contender's own process: per line read from stdin ("go N"), N timed calls back to back, their
    times on one line of stdout."""
    call = CONTENDERS[name]()
    if call is None:
        print("ABSENT", flush=True)
        return
    call()  # warm: imports, first-call caches
    print("READY", flush=True)
    for line in sys.stdin:
        times = []
        for _ in range(int(line.split()[1])):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        print("T " + " ".join(f"{t:.9f}" for t in times), flush=True)


def _answer(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    for line in process.stdout:  # anything a library prints on its own is skipped
        if line.startswith(("T ", "READY", "ABSENT")):
            return line.strip()
    raise RuntimeError(f"contender exited with {process.wait()}")


def side_by_side(names: list[str], rounds: int = 31, burst: int = 4) -> dict[str, list[list[float]]]:
    """Interleaved: each round times a burst of `burst` calls of every contender, each contender in its
    own process. A burst's first call comes after the process sat idle while the others ran (its caches
    taken by them); the calls after it run warm, as in a loop."""
    assert burst >= 2, "a burst needs a first call and at least one warm call"
    processes = {
        name: subprocess.Popen(
            [sys.executable, __file__, "--contender", name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in names
    }
    try:
        present = [name for name, process in processes.items() if _answer(process) == "READY"]
        samples: dict[str, list[list[float]]] = {name: [] for name in present}
        for _ in range(rounds):
            for name in present:
                process = processes[name]
                assert process.stdin is not None
                process.stdin.write(f"go {burst}\n")
                process.stdin.flush()
                samples[name].append([float(t) for t in _answer(process)[2:].split()])
        return samples
    finally:
        for process in processes.values():
            if process.stdin is not None:
                process.stdin.close()
            process.wait(timeout=30)


def main() -> None:
    t10 = time_pairs(10_000)
    t20 = time_pairs(20_000)
    print(f"resolve 10000 pairs: {t10 * 1000:.1f} ms")
    print(f"resolve 20000 pairs: {t20 * 1000:.1f} ms")
    samples = side_by_side(list(CONTENDERS))
    # Per round and contender: the burst's first call (after idle) and the median of the others (warm).
    idle = {name: [burst[0] for burst in bursts] for name, bursts in samples.items()}
    warm = {name: [statistics.median(burst[1:]) for burst in bursts] for name, bursts in samples.items()}
    print(
        "ladder_resolve over 1000 connections via call_command (JSON in and out): "
        f"{statistics.median(warm['offline']) * 1000:.2f} ms warm, "
        f"{statistics.median(idle['offline']) * 1000:.2f} ms after idle"
    )
    if len(samples) == 1:
        print("litellm: not installed (pip install .[litellm]); no side-by-side figure")
    else:
        for name in ("usage-based", "shuffle"):
            print(
                f"litellm Router, 1 of 1000 deployments, {name}: "
                f"{statistics.median(warm[name]) * 1000:.2f} ms warm, "
                f"{statistics.median(idle[name]) * 1000:.2f} ms after idle"
            )
        # The median of each round's own ratio: both sides of a ratio timed in the same round.
        for label, times in (("warm", warm), ("after idle", idle)):
            ratios = {
                name: statistics.median(o / t for o, t in zip(times["offline"], times[name], strict=True))
                for name in ("usage-based", "shuffle")
            }
            print(
                f"offline resolver / litellm usage-based, {label} = {ratios['usage-based']:.3f} "
                f"(target <= 0.2); / simple-shuffle = {ratios['shuffle']:.3f}  "
                f"(median of {len(times['offline'])} interleaved rounds, one process each)"
            )
    # resolution_to_dict is part of every answer: make sure it is cheap too
    state = parse_state(synthetic_state(providers=20, connections_per_provider=100, models_per_provider=10))
    assert state.now is not None
    resolution = resolve(state.snapshot, "auto/thrifty", None, state.now)
    start = time.perf_counter()
    json.dumps(resolution_to_dict(resolution))
    print(f"render 20000-pair resolution to JSON: {(time.perf_counter() - start) * 1000:.1f} ms")
    ratio, ladder_s, floor_s = floor_ratio()
    print(
        f"ladder_resolve over 1000 connections (two windows each): {ladder_s * 1000:.2f} ms; "
        f"reading the file and orjson.loads: {floor_s * 1000:.2f} ms (median of interleaved rounds)"
    )
    print(f"floor_ratio={ratio:.2f}")
    print(f"ratio={t20 / t10:.2f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--contender"]:
        contender(sys.argv[2])
    else:
        main()
