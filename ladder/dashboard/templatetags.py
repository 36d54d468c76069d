"""The dashboard's template tags: SVG is drawn here, from a view model's numbers, never inside one.

Registered as the ``ladder_dashboard`` library in settings (TEMPLATES OPTIONS ``libraries``), since
the one app keeps its rooms in subpackages rather than an app-level ``templatetags`` folder.
"""

from __future__ import annotations

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from ladder.dashboard.pages.overview import WindowView

register = template.Library()


@register.simple_tag
def window_bar(window: WindowView) -> SafeString:
    """The remaining-% bar with the reserve (exit cutoff → cutoff) and the hysteresis band (cutoff →
    floor) drawn on it; numbers and an escaped label only."""
    # Numbers in the bar's 0–100 units, formatted once here: cheaper than template filters on 1,000s of bars.
    limits = window.limits
    cutoff, floor, fill = f"{limits.cutoff_pct:.2f}", f"{limits.floor_pct:.2f}", f"{window.remaining_pct:.2f}"
    band = f"{max(0.0, limits.floor_pct - limits.cutoff_pct):.2f}"
    reserve = ""
    if limits.reserve_pct is not None and limits.cutoff_pct > limits.exit_cutoff_pct:
        # The reserve's own band: from the exit cutoff up to the connection's cutoff.
        x, width = f"{limits.exit_cutoff_pct:.2f}", f"{limits.cutoff_pct - limits.exit_cutoff_pct:.2f}"
        reserve = f'<rect class="reserve" x="{x}" y="0" width="{width}" height="10"/>'
    return mark_safe(  # noqa: S308 - every interpolated value is a number or escaped
        '<svg class="bar" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" '
        f'aria-label="{escape(window.aria)}"><rect class="track" x="0" y="0" width="100" height="10"/>'
        f'<rect class="fill" x="0" y="0" width="{fill}" height="10"/>{reserve}'
        f'<rect class="band" x="{cutoff}" y="0" width="{band}" height="10"/>'
        f'<line class="cutoff" x1="{cutoff}" x2="{cutoff}" y1="0" y2="10"/>'
        f'<line class="floor" x1="{floor}" x2="{floor}" y1="0" y2="10"/></svg>'
    )
