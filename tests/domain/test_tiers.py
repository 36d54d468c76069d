"""L2 economic tier and L3 rung."""

from __future__ import annotations

import pytest

from ladder.domain import LadderConfig, ModelEntry, Rung, economic_tier, rung_for
from ladder.domain.tiers import served_models
from ladder.domain.types import Billing, Connection, rung_label
from tests.domain.builders import snap

DEFAULT = LadderConfig()
CUSTOM = LadderConfig(free_max_input_usd_per_mtok=0.1, cheap_max_input_usd_per_mtok=2.5)


def _model(price: float | None, *, free: bool = False) -> ModelEntry:
    return ModelEntry("p", "m", input_usd_per_mtok=price, free=free)


@pytest.mark.parametrize(
    ("model", "config", "tier"),
    [
        (_model(0.0), DEFAULT, "free"),
        (_model(0.0001), DEFAULT, "cheap"),
        (_model(0.5), DEFAULT, "cheap"),
        (_model(1.0), DEFAULT, "cheap"),  # ≤ the cheap boundary
        (_model(1.0001), DEFAULT, "premium"),
        (_model(15.0), DEFAULT, "premium"),
        # free flag wins over any price, and over a missing price
        (_model(None, free=True), DEFAULT, "free"),
        (_model(15.0, free=True), DEFAULT, "free"),
        # no price, or not in the catalog: premium
        (_model(None), DEFAULT, "premium"),
        (None, DEFAULT, "premium"),
        # custom thresholds, boundaries inclusive
        (_model(0.1), CUSTOM, "free"),
        (_model(0.11), CUSTOM, "cheap"),
        (_model(2.5), CUSTOM, "cheap"),
        (_model(2.51), CUSTOM, "premium"),
        (_model(None), CUSTOM, "premium"),
    ],
)
def test_it_computes_the_economic_tier(model: ModelEntry | None, config: LadderConfig, tier: str) -> None:
    assert economic_tier(model, config) == tier


@pytest.mark.parametrize(
    ("billing", "model", "rung"),
    [
        ("subscription", _model(15.0), Rung.SUBSCRIPTION),
        ("subscription", None, Rung.SUBSCRIPTION),
        ("subscription", _model(0.0), Rung.SUBSCRIPTION),
        ("keyless", _model(15.0), Rung.KEYLESS),
        ("keyless", None, Rung.KEYLESS),
        ("metered", _model(0.0), Rung.FREE),
        ("metered", _model(None, free=True), Rung.FREE),
        ("metered", _model(0.5), Rung.CHEAP),
        ("metered", _model(3.0), Rung.PREMIUM),
        ("metered", None, Rung.PREMIUM),
        # unknown is treated as metered everywhere
        ("unknown", _model(0.0), Rung.FREE),
        ("unknown", _model(1.0), Rung.CHEAP),
        ("unknown", None, Rung.PREMIUM),
    ],
)
def test_it_puts_each_pair_on_its_rung(billing: Billing, model: ModelEntry | None, rung: Rung) -> None:
    assert rung_for(billing, model, DEFAULT) == rung


@pytest.mark.parametrize(
    ("rung", "index", "label"),
    [
        (Rung.SUBSCRIPTION, 0, "subscription"),
        (Rung.KEYLESS, 1, "keyless"),
        (Rung.FREE, 2, "free"),
        (Rung.CHEAP, 3, "cheap"),
        (Rung.PREMIUM, 4, "premium"),
    ],
)
def test_it_numbers_and_names_the_rungs(rung: Rung, index: int, label: str) -> None:
    assert (int(rung), rung.label) == (index, label)


@pytest.mark.parametrize(("rung", "label"), [(None, "empty"), (0, "subscription"), (4, "premium")])
def test_it_labels_a_rung_or_its_absence(rung: int | None, label: str) -> None:
    assert rung_label(rung) == label


@pytest.mark.parametrize(
    ("models", "served"),
    [(None, ["m1", "plan-model"]), (("plan-model", "elsewhere"), ["plan-model"]), ((), [])],
)
def test_it_lists_the_catalog_models_a_connection_serves(
    models: tuple[str, ...] | None, served: list[str]
) -> None:
    connection = Connection(id="c1", provider="planned", models=models)
    assert [entry.model for entry in served_models(connection, snap(connection))] == served
