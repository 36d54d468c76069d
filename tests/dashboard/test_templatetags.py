"""The window bar tag: numbers from the view model, the reserve band only when a reserve raises the
cutoff, and the label escaped."""

from __future__ import annotations

from django.template import Context, Template

from ladder.dashboard.pages.overview import WindowView
from ladder.domain.types import Limits


def window(**changes: object) -> WindowView:
    """A window view; a change of one of the limits' fields goes to its limits."""
    limits: dict[str, object] = {
        "exit_cutoff_pct": 2.0,
        "reserve_pct": None,
        "cutoff_pct": 2.0,
        "floor_pct": 5.0,
        "age_limit_s": 600.0,
    }
    values: dict[str, object] = {
        "name": "5h",
        "remaining_pct": 42.5,
        "latched": False,
        "usable": True,
        "reset_in": "in 2h",
        "scope": "all models",
    }
    for key, value in changes.items():
        (limits if key in limits else values)[key] = value
    return WindowView(limits=Limits(**limits), **values)  # type: ignore[arg-type]


def render(w: WindowView) -> str:
    return Template("{% load ladder_dashboard %}{% window_bar w %}").render(Context({"w": w}))


def test_it_draws_the_fill_the_cutoff_and_the_band_without_a_reserve() -> None:
    svg = render(window())

    assert '<rect class="fill" x="0" y="0" width="42.50" height="10"/>' in svg
    assert '<rect class="band" x="2.00" y="0" width="3.00" height="10"/>' in svg
    assert '<line class="cutoff" x1="2.00"' in svg
    assert 'class="reserve"' not in svg


def test_it_draws_the_reserve_from_the_exit_cutoff_to_the_connections_cutoff() -> None:
    svg = render(window(cutoff_pct=20.0, floor_pct=23.0, reserve_pct=20.0))

    assert '<rect class="reserve" x="2.00" y="0" width="18.00" height="10"/>' in svg
    assert "reserve 20% kept for your own use" in svg


def test_it_escapes_the_window_name_in_its_label() -> None:
    svg = render(window(name='7d-<script>"x"'))

    assert "<script>" not in svg
    assert "7d-&lt;script&gt;&quot;x&quot;" in svg
