"""Gateway API benchmark: server time of POST /api/v1/pools/resolve with 100 and 1,000 connections
(each with a reading of two windows), cold (every request after a write, so the snapshot is reloaded)
and warm (the snapshot cached by state version), and of POST /api/v1/usage, on a throw-away SQLite
database through the Django test client. Checks that both sizes cost the same number of queries.
The last line is ``cold_ms=<1,000> warm_ms=<1,000> usage_ms=<1,000> scale=<cold 1,000 / cold 100>``."""

from __future__ import annotations

import gc
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

from benchmarks.bench_dashboard import populate  # noqa: E402  (same state as the dashboard's)


def measure(connections: int, repeat: int) -> dict[str, tuple[float, int]]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from ladder import api
    from ladder.services import bump_state_version
    from ladder.services.tokens import gateway_token_create

    populate(connections)
    api.refresh_request = lambda *, connection_ids: list(connection_ids)  # no broker in a benchmark
    _, token = gateway_token_create(name=f"bench-{connections}")
    client = Client(headers={"Authorization": f"Bearer {token}"})
    counter = iter(range(10**9))

    def timed(request: Callable[[], object], before: Callable[[], object] | None = None) -> tuple[float, int]:
        if before is not None:
            before()
        gc.collect()
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            response = request()
            elapsed = time.perf_counter() - start
        assert getattr(response, "status_code", None) == 200, getattr(response, "content", b"")[:300]
        return elapsed, len(queries)

    def resolve() -> object:
        return client.post(
            "/api/v1/pools/resolve",
            json.dumps({"model": "auto/coding:thrifty"}),
            content_type="application/json",
        )

    def usage() -> object:
        event = {
            "request_id": f"bench-{connections}-{next(counter)}",
            "connection_id": "conn-00001",
            "model": "model-1",
            "input_tokens": 1000,
            "output_tokens": 0,  # the bench catalog has input prices only
        }
        return client.post("/api/v1/usage", json.dumps(event), content_type="application/json")

    timed(resolve, bump_state_version)  # warm imports and the token's last_used_at
    results: dict[str, tuple[float, int]] = {}
    for name, request, before in (
        ("cold", resolve, bump_state_version),
        ("warm", resolve, None),
        ("usage", usage, None),
    ):
        runs = [timed(request, before) for _ in range(repeat)]
        results[name] = (statistics.median(t for t, _ in runs) * 1000, max(q for _, q in runs))
    return results


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SQLITE_PATH"] = str(Path(tmp) / "bench.sqlite3")
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0)
        results = {}
        for size, repeat in ((100, 15), (1000, 7)):
            results[size] = measure(size, repeat)
            print(
                f"connections={size} "
                + " ".join(
                    f"{name}_ms={ms:.1f} {name}_queries={q}" for name, (ms, q) in results[size].items()
                )
            )
        queries = {size: {name: q for name, (_, q) in r.items()} for size, r in results.items()}
        if queries[100] != queries[1000]:
            raise SystemExit(f"query count grows with connections: {queries[100]} → {queries[1000]}")
        big = results[1000]
        scale = big["cold"][0] / results[100]["cold"][0]
        print(
            f"cold_ms={big['cold'][0]:.1f} warm_ms={big['warm'][0]:.1f} usage_ms={big['usage'][0]:.1f} "
            f"scale={scale:.2f}"
        )


if __name__ == "__main__":
    main()
