"""The connection page's chart: each window's remaining quota over a chosen range (1 h, 6 h, 24 h or
7 d), its resets and cooldowns, labelled time and percent axes, and each window's forecast drawn as
a dashed line from its latest reading down to the connection's cutoff, as coordinates in a fixed
viewBox that the template draws.

The plot runs from ``now - range`` to a little past ``now`` (a quarter of the range), so that a
forecast that falls due soon has room to be drawn; a forecast beyond the plot's right edge is left
to the words beside the chart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import groupby
from typing import ClassVar

from ladder.domain.types import Thresholds
from ladder.selectors.history import WindowPoint

CHART_W = 720.0
CHART_H = 200.0
CHART_COLOURS = ("c0", "c1", "c2", "c3", "c4", "c5")
# The ranges offered, smallest first: (key, span, tick step, tick label format).
CHART_RANGES: dict[str, tuple[timedelta, timedelta, str]] = {
    "1h": (timedelta(hours=1), timedelta(minutes=10), "%H:%M"),
    "6h": (timedelta(hours=6), timedelta(hours=1), "%H:%M"),
    "24h": (timedelta(hours=24), timedelta(hours=4), "%H:%M"),
    "7d": (timedelta(days=7), timedelta(days=1), "%b %d"),
}
CHART_RANGE_LABELS = {"1h": "1 h", "6h": "6 h", "24h": "24 h", "7d": "7 d"}
# Without a chosen range: the smallest of these that holds the last 24 hours' readings (a demo's
# minutes fill the plot instead of a line at its right edge); 7 days only when asked for.
CHART_AUTO_RANGES = ("1h", "6h", "24h")
CHART_DEFAULT_RANGE = "24h"
CHART_AUTO_LOOKBACK = CHART_RANGES[CHART_DEFAULT_RANGE][0]
# Room to the right of "now" for forecasts, as a fraction of the range.
CHART_AHEAD_FRACTION = 0.25
PCT_TICKS = (0, 25, 50, 75, 100)


def chart_range_error(text: str | None) -> str:
    """ "" when ``text`` is a range the chart offers (or none was given), else the message naming the
    parameter."""
    if text is None or text in CHART_RANGES:
        return ""
    return f"range must be one of {', '.join(CHART_RANGES)}; got {text[:20]!r}."


def chart_range_auto(oldest: datetime | None, now: datetime) -> str:
    """The smallest automatic range that holds every reading since ``oldest`` (24 h without one)."""
    for key in CHART_AUTO_RANGES:
        if oldest is not None and now - CHART_RANGES[key][0] <= oldest:
            return key
    return CHART_DEFAULT_RANGE


@dataclass(frozen=True)
class ChartMark:
    x: float
    label: str


@dataclass(frozen=True)
class ChartLine:
    name: str
    css: str
    points: str
    last_pct: float
    last_x: float
    last_y: float
    forecast: ChartMark | None = None  # drawn from the latest reading down to the cutoff


@dataclass(frozen=True)
class ChartSpan:
    x: float
    width: float
    label: str


@dataclass(frozen=True)
class ChartLevel:
    y: float
    label: str


def _y(pct: float) -> float:
    return round((100.0 - max(0.0, min(100.0, pct))) / 100.0 * CHART_H, 1)


@dataclass
class Chart:
    # The same for every chart: the plot's size in the viewBox, its percent levels, the ranges offered.
    width: ClassVar[float] = CHART_W
    height: ClassVar[float] = CHART_H
    levels: ClassVar[tuple[ChartLevel, ...]] = tuple(ChartLevel(_y(pct), f"{pct}%") for pct in PCT_TICKS)
    ranges: ClassVar[dict[str, str]] = CHART_RANGE_LABELS
    band_y: float
    band_h: float
    cutoff_y: float
    lines: list[ChartLine]
    resets: list[ChartMark]
    cooldowns: list[ChartSpan]
    readings: int
    ticks: list[ChartMark]
    range_key: str = CHART_DEFAULT_RANGE
    query: str = ""  # "?range=…" keeps a chosen range in the page's polls; "": picked automatically
    now_x: float = CHART_W

    @property
    def range_label(self) -> str:
        return CHART_RANGE_LABELS[self.range_key]

    @property
    def forecasts(self) -> list[ChartLine]:
        return [line for line in self.lines if line.forecast is not None]


def _thin(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """At most the lowest and the highest point per pixel column, in time order, and always the
    latest: 7 days of minute polls stay a few hundred points and every dip still shows."""
    kept: list[tuple[float, float]] = []
    for _, pixel in groupby(enumerate(points), key=lambda item: int(item[1][0])):
        column = list(pixel)
        low = min(column, key=lambda item: item[1][1])
        high = max(column, key=lambda item: item[1][1])
        kept.extend(point for _, point in sorted({low, high}))
    if points and kept[-1] != points[-1]:
        kept.append(points[-1])
    return kept


def _ticks(
    start: datetime, end: datetime, step: timedelta, fmt: str, x: Callable[[datetime], float]
) -> list[ChartMark]:
    step_s = step.total_seconds()
    # The first whole step at or after the start.
    moment = datetime.fromtimestamp(-(-start.timestamp() // step_s) * step_s, tz=UTC)
    marks = []
    while moment <= end:
        marks.append(ChartMark(x(moment), moment.strftime(fmt)))
        moment += step
    return marks


def chart_build(
    points: list[WindowPoint],
    cooldowns: list[tuple[datetime, datetime]],
    cooldown_until: datetime | None,
    limits: Thresholds,
    now: datetime,
    *,
    range_key: str = CHART_DEFAULT_RANGE,
    range_chosen: bool = False,
    exhausts_at: dict[str, datetime] | None = None,
) -> Chart:
    """The chart of ``points`` (oldest first) over ``range_key``, with the ``cooldowns`` (start, end)
    of past failures; ``exhausts_at`` maps a window's name to its forecast (ladder.domain.forecast)."""
    span, step, fmt = CHART_RANGES[range_key]
    start = now - span
    end = now + span * CHART_AHEAD_FRACTION
    total_s = (end - start).total_seconds()

    def x(moment: datetime) -> float:
        fraction = (moment - start).total_seconds() / total_s
        return round(min(1.0, max(0.0, fraction)) * CHART_W, 1)

    series: dict[str, list[tuple[float, float]]] = {}
    resets: dict[datetime, str] = {}
    for point in points:
        series.setdefault(point.name, []).append((x(point.fetched_at), point.remaining_pct))
        if point.reset_at is not None and start <= point.reset_at <= end:
            resets.setdefault(point.reset_at, point.name)
    cutoff_y = _y(limits.cutoff_pct)
    lines = []
    for i, (name, raw) in enumerate(series.items()):
        last_x, last_pct = raw[-1]
        forecast = None
        due = (exhausts_at or {}).get(name)
        if due is not None and now <= due <= end and last_pct > limits.cutoff_pct:
            forecast = ChartMark(x(due), f"{name} runs out at {due.astimezone(UTC):%H:%M} UTC")
        colour = CHART_COLOURS[i % len(CHART_COLOURS)]
        polyline = " ".join(f"{px:g},{_y(pct):g}" for px, pct in _thin(raw))
        lines.append(ChartLine(name, colour, polyline, last_pct, last_x, _y(last_pct), forecast))
    spans = [(begin, until) for begin, until in cooldowns if until > start]
    if cooldown_until is not None and cooldown_until > start:
        spans.append((min(now, cooldown_until), cooldown_until))
    drawn = []
    for begin, until in spans:
        x0, x1 = x(max(begin, start)), x(min(until, end))
        drawn.append(ChartSpan(x0, max(2.0, x1 - x0), f"cooldown until {until:%Y-%m-%d %H:%M:%S}Z"))
    floor_y = _y(limits.floor_pct)
    return Chart(
        band_y=floor_y,
        band_h=max(1.0, cutoff_y - floor_y),
        cutoff_y=cutoff_y,
        lines=lines,
        resets=[ChartMark(x(at), f"{name} reset {at:%H:%M}Z") for at, name in sorted(resets.items())],
        cooldowns=drawn,
        readings=len({point.reading_id for point in points}),
        ticks=_ticks(start, end, step, fmt, x),
        range_key=range_key,
        query=f"?range={range_key}" if range_chosen else "",
        now_x=x(now),
    )
