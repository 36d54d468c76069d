"""Synthetic states of a chosen size, shared by the benchmarks."""

from __future__ import annotations

from typing import Any


def synthetic_state(
    *, providers: int, connections_per_provider: int, models_per_provider: int, model: str = "auto/thrifty"
) -> dict[str, Any]:
    """A STATE.md document: half the providers are plans, half metered; two windows per connection."""
    catalog: list[dict[str, Any]] = []
    models: list[dict[str, Any]] = []
    connections: list[dict[str, Any]] = []
    for p in range(providers):
        provider = f"prov{p}"
        plan = p % 2 == 0
        catalog.append(
            {
                "provider": provider,
                "auth_type": "oauth" if plan else "apikey",
                "billing": "subscription" if plan else "metered",
                "overage": "hard-stop" if plan else "meters-to-paid",
            }
        )
        for m in range(models_per_provider):
            models.append(
                {
                    "provider": provider,
                    "model": f"model-{m}",
                    "input_usd_per_mtok": [0.0, 0.5, 3.0][m % 3],
                    "output_usd_per_mtok": 1.0,
                    "categories": ["coding", "chat"] if m % 2 == 0 else ["chat"],
                }
            )
        for c in range(connections_per_provider):
            remaining = float((c * 7) % 100)
            connections.append(
                {
                    "id": f"{provider}-c{c}",
                    "provider": provider,
                    "auth_type": "oauth" if plan else "apikey",
                    "quota": {
                        "fetched_at": "2026-08-22T11:59:00Z",
                        "windows": [
                            {"name": "5h", "remaining_pct": remaining, "reset_at": "2026-08-22T14:00:00Z"},
                            {
                                "name": "7d-big",
                                "remaining_pct": 50.0,
                                "reset_at": "2026-08-25T00:00:00Z",
                                "scope_models": ["model-1*"],
                                "latched": c % 5 == 0,
                            },
                        ],
                    },
                }
            )
    return {
        "now": "2026-08-22T12:00:00Z",
        "config": {"rung_budget_usd": {"cheap": 5.0}},
        "billing_catalog": catalog,
        "models": models,
        "connections": connections,
        "spend_usd": {"cheap": 1.0},
        "request": {"model": model, "candidates": None},
    }
