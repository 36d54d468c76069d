"""Load: 32 gateway clients (locust, tests/reliability/locustfile.py) resolve and report usage for
LADDER_LOAD_S seconds (default 60; `make soak` runs longer) against gunicorn with production settings,
while a real Celery worker and beat refresh 500 connections against the fake upstream.

Zero errors: every answer is a 200 whose body matches the served schema. The spend is exact: the
budgets the API reports, and the database's sums per rung, equal the budget cost of the confirmed
events computed here from the catalog prices, independently of the server. Every one of the 500
connections got a reading during the run. p50/p99 of each request type are printed and written to
artifacts/load-<database>.json.

On PostgreSQL as deployed; on SQLite with the settings' WAL journal and busy timeout (checked).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from collections import Counter
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder.providers import ADAPTERS
from tests.reliability.conftest import AUTH, GATEWAY_TOKEN, TOKEN_SPEC
from tests.reliability.processes import ROOT, WORKER_READY, Database, Processes, seed, wait_until

pytestmark = pytest.mark.slow

LOAD_S = float(os.environ.get("LADDER_LOAD_S", "60"))
USERS = 32
WEB_WORKERS = 4
# Every connection is due again several times in a run (a 60 s run: every 20 s).
REFRESH_INTERVAL_S = max(5, min(20, int(LOAD_S // 3)))
LOCUST = ROOT / ".venv" / "bin" / "locust"
ARTIFACTS = ROOT / "artifacts"

# 480 plan connections of five kinds and 20 metered keys: 500 refreshed by beat.
PLANS = {"claude-oauth": 120, "codex-chatgpt": 120, "zai-glm": 120, "kimi-coding": 60, "minimax-coding": 60}
METERED = {"openrouter": 20}
# (provider, model, pool) a gateway puts in its own candidate lists.
GATEWAY_MODELS = [
    ("claude", "claude-sonnet-4-5", "claude-oauth"),
    ("codex", "gpt-5-codex", "codex-chatgpt"),
    ("zai", "glm-4.6", "zai-glm"),
    ("kimi-coding", "kimi-k2", "kimi-coding"),
    ("openrouter", "openai/gpt-5-mini", "openrouter"),
    ("openrouter", "anthropic/claude-sonnet-4.5", "openrouter"),
]
# (pool, model) of usage reports; the metered ones count toward the cheap and premium budgets.
USAGE = [
    ("claude-oauth", "claude-sonnet-4-5"),
    ("zai-glm", "glm-4.6"),
    ("openrouter", "openai/gpt-5-mini"),
    ("openrouter", "openai/gpt-5-mini"),
    ("openrouter", "anthropic/claude-sonnet-4.5"),
    ("openrouter", "anthropic/claude-sonnet-4.5"),
    ("openrouter", "deepseek/deepseek-chat-v3.1:free"),
]
# What a metered event costs its rung's budget, from the catalog (USD per million tokens, in and out);
# every other (pool, model) above costs the budgets nothing (plan or free rung).
BUDGETED = {
    ("openrouter", "openai/gpt-5-mini"): ("cheap", Decimal("0.25"), Decimal("2")),
    ("openrouter", "anthropic/claude-sonnet-4.5"): ("premium", Decimal("3"), Decimal("15")),
}
MICRO_USD = Decimal("0.000001")


def connection_ids() -> dict[str, list[str]]:
    return {kind: [f"{kind}-{i:03d}" for i in range(count)] for kind, count in {**PLANS, **METERED}.items()}


def spec(upstream: FakeUpstream) -> dict[str, Any]:
    connections: list[dict[str, Any]] = []
    for kind, ids in connection_ids().items():
        adapter = ADAPTERS[kind]
        for position, cid in enumerate(ids, start=len(connections)):
            connections.append(
                {
                    "id": cid,
                    "provider": adapter.provider,
                    "auth_type": adapter.auth_type,
                    "base_url": upstream.url_for(kind, cid),
                    "credential": f"token-{cid}",
                    "position": position,
                }
            )
    return {
        "config": {
            "refresh_interval_s": REFRESH_INTERVAL_S,
            "rung_budget_usd": {"cheap": 1_000_000, "premium": 1_000_000},
        },
        "connections": connections,
        "tokens": [TOKEN_SPEC],
    }


def budget_cost(event: dict[str, Any]) -> tuple[str | None, Decimal]:
    """The event's budget rung and cost, from the catalog prices (never from the server's answer)."""
    pool = event["connection_id"].rsplit("-", 1)[0]
    budgeted = BUDGETED.get((pool, event["model"]))
    if budgeted is None:
        return None, Decimal(0)
    rung, input_price, output_price = budgeted
    if "cost_usd" in event:
        return rung, Decimal(str(event["cost_usd"]))
    cost = (event["input_tokens"] * input_price + event["output_tokens"] * output_price) / Decimal(1_000_000)
    return rung, cost.quantize(MICRO_USD, rounding=ROUND_HALF_EVEN)


def locust(host: str, workdir: Path) -> tuple[list[dict[str, str]], list[dict[str, Any]], str]:
    """Run the gateways for LOAD_S seconds; (stats rows, confirmed events, locust's output)."""
    plan = {
        "connections": connection_ids(),
        "gateway_models": GATEWAY_MODELS,
        "usage": USAGE,
    }
    (workdir / "plan.json").write_text(json.dumps(plan))
    env = {
        **os.environ,
        "LOAD_TOKEN": GATEWAY_TOKEN,
        "LOAD_PLAN": str(workdir / "plan.json"),
        "LOAD_EVENTS_PATH": str(workdir / "events.jsonl"),
        "LOAD_SEED": "6",
    }
    argv = [
        str(LOCUST), "-f", str(ROOT / "tests" / "reliability" / "locustfile.py"), "--headless",
        "--host", host, "-u", str(USERS), "-r", str(USERS), "--run-time", f"{LOAD_S:g}s",
        "--stop-timeout", "30", "--only-summary", "--csv", str(workdir / "load"), "--loglevel", "WARNING",
    ]  # fmt: skip
    done = subprocess.run(
        argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=LOAD_S + 180, check=False
    )
    output = done.stdout + done.stderr
    with (workdir / "load_stats.csv").open() as stats:
        rows = list(csv.DictReader(stats))
    events_path = workdir / "events.jsonl"
    lines = events_path.read_text().splitlines() if events_path.exists() else []
    return rows, [json.loads(line) for line in lines], output


def test_it_serves_32_gateways_without_error_while_beat_refreshes_500_connections(
    ladder_env: dict[str, str],
    database: Database,
    processes: Processes,
    upstream: FakeUpstream,
    control: FakeUpstreamControl,
    tmp_path: Path,
) -> None:
    env = {**ladder_env, "LADDER_REFRESH_BEAT_S": "1", "SQLITE_TIMEOUT_S": "20"}
    seeded = seed(env, spec(upstream))
    assert seeded["connections"] == 500
    web = processes.web(env, workers=WEB_WORKERS, wait=False)
    worker = processes.worker(env, concurrency=2, wait=False)
    web.wait_http()
    worker.wait_log(WORKER_READY)
    processes.beat(env)
    wait_until(
        lambda: database.scalar("SELECT COUNT(DISTINCT connection_id) FROM ladder_quotareading") == 500,
        timeout_s=90,
        what="a first reading of every connection",
    )

    started_at = datetime.now(UTC)
    rows, confirmed, output = locust(web.url(), tmp_path)
    ended_at = datetime.now(UTC)

    by_name = {row["Name"]: row for row in rows}
    total = by_name.pop("Aggregated")
    print(output[-3000:])
    assert int(total["Failure Count"]) == 0, (tmp_path / "load_failures.csv").read_text()
    assert len(by_name) == 5, by_name
    assert all(int(row["Request Count"]) > 0 for row in by_name.values()), by_name
    processes.check_alive()

    # Spend: exactly the budget cost of the confirmed events, in the API and in the database.
    assert len({event["request_id"] for event in confirmed}) == len(confirmed)
    expected = {"cheap": Decimal(0), "premium": Decimal(0)}
    for event in confirmed:
        rung, cost = budget_cost(event)
        if rung is not None:
            expected[rung] += cost
    # Summed here, row by row: SQLite's SUM over its REAL storage of decimals would add float error.
    stored = {"cheap": Decimal(0), "premium": Decimal(0)}
    for rung, cost in database.query(
        "SELECT budget_rung, cost_usd FROM ladder_usageevent WHERE budget_rung IS NOT NULL"
    ):
        stored[rung] += Decimal(str(cost)).quantize(MICRO_USD)
    assert database.scalar("SELECT COUNT(*) FROM ladder_usageevent") == len(confirmed)
    assert stored == expected
    budgets = httpx.get(web.url("/api/v1/connections"), headers=AUTH, timeout=60).json()["budgets"]
    assert {rung: Decimal(str(budgets[rung]["spent_usd"])) for rung in expected} == expected

    # Refresh: beat kept every connection fresh while the gateways hammered the API.
    refreshed = database.scalar(
        "SELECT COUNT(DISTINCT connection_id) FROM ladder_quotareading WHERE fetched_at >= %s",
        (started_at if database.vendor == "postgresql" else started_at.strftime("%Y-%m-%d %H:%M:%S"),),
    )
    readings = database.scalar(
        "SELECT COUNT(*) FROM ladder_quotareading WHERE fetched_at >= %s",
        (started_at if database.vendor == "postgresql" else started_at.strftime("%Y-%m-%d %H:%M:%S"),),
    )
    assert refreshed == 500
    if database.vendor == "sqlite":
        assert database.scalar("PRAGMA journal_mode") == "wal"

    # What the catalog-built auto/subscription answer held at the end (the bulk of its bytes).
    closed = httpx.post(
        web.url("/api/v1/pools/resolve"), json={"model": "auto/subscription"}, headers=AUTH, timeout=60
    ).json()
    figures = {
        "database": database.vendor,
        "load_s": LOAD_S,
        "users": USERS,
        "web_workers": WEB_WORKERS,
        "connections": 500,
        "cpus": os.cpu_count(),
        "started_at": started_at.isoformat(),
        "wall_s": round((ended_at - started_at).total_seconds(), 1),
        "requests": int(total["Request Count"]),
        "failures": int(total["Failure Count"]),
        "requests_per_s": round(float(total["Requests/s"]), 1),
        "usage_events": len(confirmed),
        "usage_events_by_rung": dict(Counter(budget_cost(e)[0] or "none" for e in confirmed)),
        "spend_usd": {rung: str(amount) for rung, amount in expected.items()},
        "readings_during_run": readings,
        "connections_refreshed_during_run": refreshed,
        "upstream_polls": sum(control.state()["totals"].values()),
        "subscription_answer_at_end": {
            "pool_entries": len(closed["pool"]),
            "pooled_pairs": sum(len(entry["allowed_connection_ids"]) for entry in closed["pool"]),
            "excluded_by_reason": dict(Counter(row["reason"] for row in closed["excluded"])),
        },
        "by_request": {
            name: {
                "requests": int(row["Request Count"]),
                "p50_ms": float(row["50%"]),
                "p99_ms": float(row["99%"]),
                "max_ms": float(row["Max Response Time"]),
                "avg_bytes": float(row["Average Content Size"]),
            }
            for name, row in sorted(by_name.items())
        },
    }
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"load-{database.vendor}.json").write_text(json.dumps(figures, indent=2) + "\n")
    lines = [f"{name}: n={f['requests']} p50={f['p50_ms']:g} ms p99={f['p99_ms']:g} ms"
             for name, f in figures["by_request"].items()]  # fmt: skip
    print(f"FIGURES load {json.dumps({k: v for k, v in figures.items() if k != 'by_request'})}")
    print("\n".join(lines))
