"""L2 economic tier and L3 rung of a (candidate, connection) pair."""

from __future__ import annotations

from ladder.domain.types import Billing, Connection, LadderConfig, ModelEntry, Rung, Snapshot, Tier


def economic_tier(model: ModelEntry | None, config: LadderConfig) -> Tier:
    if model is None:
        return "premium"
    if model.free:
        return "free"
    price = model.input_usd_per_mtok
    if price is None:
        return "premium"
    if price <= config.free_max_input_usd_per_mtok:
        return "free"
    if price <= config.cheap_max_input_usd_per_mtok:
        return "cheap"
    return "premium"


_TIER_RUNG: dict[Tier, Rung] = {"free": Rung.FREE, "cheap": Rung.CHEAP, "premium": Rung.PREMIUM}


def rung_for(billing: Billing, model: ModelEntry | None, config: LadderConfig) -> Rung:
    if billing == "subscription":
        return Rung.SUBSCRIPTION
    if billing == "keyless":
        return Rung.KEYLESS
    return _TIER_RUNG[economic_tier(model, config)]


def served_models(connection: Connection, snapshot: Snapshot) -> list[ModelEntry]:
    """The catalog models a connection serves: its provider's, only those it lists if it lists any."""
    return [
        entry
        for entry in snapshot.models
        if entry.provider == connection.provider
        and (connection.models is None or entry.model in connection.models)
    ]


def model_rungs(connection: Connection, snapshot: Snapshot, billing: Billing) -> dict[str, Rung]:
    """The rung of each model the connection serves (GET /api/v1/connections' ``rungs``): its catalog
    models, then the models it lists that the catalog lacks (premium, L2)."""
    rungs = {
        entry.model: rung_for(billing, entry, snapshot.config)
        for entry in served_models(connection, snapshot)
    }
    for model in connection.models or ():
        rungs.setdefault(model, rung_for(billing, None, snapshot.config))
    return rungs
