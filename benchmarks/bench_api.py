"""Gateway API benchmark: POST /api/v1/pools/resolve for auto/coding:thrifty against a bare Django view,
side by side on one gunicorn, over HTTP on loopback.

State: 20 providers × 50 connections, 10 models per provider (half tagged coding), two windows per
connection: 5,000 (connection, model) pairs for the coding category. Readings are fetched at the
start of the run and stay fresh for the whole of it (max_reading_age_s is an hour, resets lie ahead),
so no resolution asks for a refresh. The database is a fresh SQLite file (WAL), or with
DATABASE_URL=postgres://… a fresh PostgreSQL database dropped afterwards; migrated, loaded with
`ladder_import`, and given one gateway token.

Server: one `gunicorn omniroute.wsgi` (sync workers, one thread each) with the production settings
and DEBUG off; its settings module (benchmarks.bench_settings) only adds the bare view's urlconf
(benchmarks.bareview). The bare view answers json.dumps of a pre-built dict: the resolution captured
from one real resolve call, so both answers have the same shape and size. Every request carries
the same headers (bearer token, JSON body, X-Forwarded-Proto: https).

Load: a few client threads (keep-alive http.client connections; the sync worker closes each one, so
the client reconnects as a real one would), in rounds alternating bare and resolve, after a warm-up.
Prints requests/s, p50 and p99 of both; the last line is ``ratio=<resolve rps / bare rps>``.
Target: ratio ≥ 0.25.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.benchdb import bench_database, load_state, production_env  # noqa: E402
from benchmarks.statefactory import synthetic_state  # noqa: E402
from tests.reliability.processes import free_port, gunicorn  # noqa: E402

RESOLVE_PATH = "/api/v1/pools/resolve"
MODEL = "auto/coding:thrifty"
PROVIDERS, CONNECTIONS_PER_PROVIDER, MODELS_PER_PROVIDER = 20, 50, 10
PAIRS = 5000  # (connection, coding model) pairs the resolution judges
READING_AGE_S = 3600  # max_reading_age_s: far beyond the run, so the readings stay fresh
TARGET_RATIO = 0.25


def utc(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def bench_state(now: datetime) -> dict[str, Any]:
    """statefactory's state at this size, its clock moved to now: fresh readings, resets ahead."""
    state = synthetic_state(
        providers=PROVIDERS,
        connections_per_provider=CONNECTIONS_PER_PROVIDER,
        models_per_provider=MODELS_PER_PROVIDER,
        model=MODEL,
    )
    resets = {"5h": utc(now + timedelta(hours=2)), "7d-big": utc(now + timedelta(days=3))}
    for connection in state["connections"]:
        quota = connection["quota"]
        quota["fetched_at"] = utc(now - timedelta(seconds=1))
        for window in quota["windows"]:
            window["reset_at"] = resets[window["name"]]
    state["now"] = utc(now)
    state["config"].update(max_reading_age_s=READING_AGE_S, refresh_interval_s=READING_AGE_S)
    pairs = sum(
        1
        for c in state["connections"]
        for m in state["models"]
        if m["provider"] == c["provider"] and "coding" in m["categories"]
    )
    assert (len(state["connections"]), pairs) == (PROVIDERS * CONNECTIONS_PER_PROVIDER, PAIRS), pairs
    return state


# --- the load ---------------------------------------------------------------------------------


@dataclass
class Side:
    name: str
    path: str
    latencies: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    sizes: set[int] = field(default_factory=set)

    def rps(self) -> float:
        return len(self.latencies) / self.wall_s

    def percentile_ms(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


class Client:
    def __init__(self, port: int, headers: dict[str, str], body: bytes) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers, self.body = headers, body

    def post(self, path: str) -> tuple[int, bytes]:
        self.conn.request("POST", path, self.body, self.headers)
        response = self.conn.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self.conn.close()


def phase(clients: list[Client], side: Side, duration_s: float, record: bool) -> None:
    """Every client posts to side.path, back to back, for duration_s."""
    barrier = threading.Barrier(len(clients) + 1)
    results: list[list[float]] = [[] for _ in clients]
    failures: list[str] = []
    deadline = 0.0

    def run(index: int) -> None:
        client, mine = clients[index], results[index]
        barrier.wait()
        try:
            while True:
                start = time.perf_counter()
                if start >= deadline:
                    return
                status, body = client.post(side.path)
                mine.append(time.perf_counter() - start)
                if status != 200:
                    failures.append(f"{side.name}: HTTP {status}: {body[:300]!r}")
                    return
                side.sizes.add(len(body))
        except Exception as exc:  # reported below, after every thread has stopped
            failures.append(f"{side.name}: {exc!r}")

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    started = time.perf_counter()
    deadline = started + duration_s
    barrier.wait()
    for thread in threads:
        thread.join(timeout=duration_s + 60)
    wall = time.perf_counter() - started
    if failures:
        raise RuntimeError(failures[0])
    if record:
        side.wall_s += wall
        side.latencies.extend(t for mine in results for t in mine)


def resolve_once(client: Client) -> dict[str, Any]:
    status, body = client.post(RESOLVE_PATH)
    if status != 200:
        raise RuntimeError(f"resolve: HTTP {status}: {body[:300]!r}")
    document: dict[str, Any] = json.loads(body)
    return document


# --- the run ----------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per side")
    parser.add_argument("--rounds", type=int, default=4, help="alternations of bare and resolve")
    parser.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds per side")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    args = parser.parse_args()

    run_id = uuid.uuid4().hex[:10]
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-api-")))
        env = {
            **production_env("bench-api", run_id, settings="benchmarks.bench_settings"),
            "BENCH_BARE_PAYLOAD": str(tmp / "bare.json"),  # benchmarks.bareview.PAYLOAD_ENV
        }
        database = bench_database(env, stack, tmp, run_id)
        os.environ.update(env)

        import django

        django.setup()
        from benchmarks.bareview import BARE_PATH, PAYLOAD_ENV  # the server's urlconf: after setup

        token = load_state(tmp, bench_state(datetime.now(UTC)), f"bench-api-{run_id}")

        port = free_port()
        server = stack.enter_context(gunicorn(env, port, args.workers, tmp / "gunicorn.log"))
        headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "X-Forwarded-Proto": "https",
        }
        body = json.dumps({"model": MODEL}).encode()
        clients = [Client(port, headers, body) for _ in range(args.clients)]
        for client in clients:
            stack.callback(client.close)

        captured = resolve_once(clients[0])  # the one real resolution the bare view answers
        if captured["refresh"] or captured["empty"] is not None:
            raise RuntimeError(f"unexpected resolution: {captured['refresh']=} {captured['empty']=}")
        Path(env[PAYLOAD_ENV]).write_text(json.dumps(captured))

        bare = Side("bare", BARE_PATH)
        real = Side("resolve", RESOLVE_PATH)
        for side in (bare, real):
            phase(clients, side, args.warmup, record=False)
        slice_s = args.seconds / args.rounds
        for round_index in range(args.rounds):
            for side in (bare, real) if round_index % 2 == 0 else (real, bare):
                phase(clients, side, slice_s, record=True)

        final = resolve_once(clients[0])  # still fresh at the end: same pool, nothing to refresh
        for key in ("pool", "excluded", "empty", "refresh"):
            if final[key] != captured[key]:
                raise RuntimeError(f"the resolution changed during the run ({key})")

        print(
            f"state: {PROVIDERS} providers x {CONNECTIONS_PER_PROVIDER} connections, "
            f"{MODELS_PER_PROVIDER} models each, half coding ({PAIRS} pairs); model={MODEL} "
            f"pool_entries={len(captured['pool'])} excluded={len(captured['excluded'])}"
        )
        print(
            f"server: gunicorn -w {args.workers} --threads 1 (sync), DEBUG=false, database={database}, "
            f"cpus={os.cpu_count()}; clients={args.clients}; {args.rounds} rounds, "
            f"{args.seconds:g} s per side after {args.warmup:g} s warm-up"
        )
        for side in (bare, real):
            print(
                f"{side.name:8s} requests={len(side.latencies)} rps={side.rps():.1f} "
                f"p50_ms={statistics.median(side.latencies) * 1000:.2f} "
                f"p99_ms={side.percentile_ms(0.99):.2f} "
                f"body_bytes={'/'.join(str(s) for s in sorted(side.sizes))}"
            )
        server.stop()
        ratio = real.rps() / bare.rps()
        print(f"target: ratio >= {TARGET_RATIO}")
        print(f"ratio={ratio:.3f}")
        return 0


if __name__ == "__main__":
    sys.exit(main())
