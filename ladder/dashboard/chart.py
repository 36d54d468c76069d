"""The connection page's 24-hour chart: each window's remaining quota, resets and cooldowns as coordinates
in a fixed viewBox, which the template draws."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ladder import models as m
from ladder.domain.types import Thresholds

CHART_W = 720.0
CHART_H = 200.0
CHART_SPAN = timedelta(hours=24)
CHART_COLOURS = ("c0", "c1", "c2", "c3", "c4", "c5")


@dataclass(frozen=True)
class ChartLine:
    name: str
    css: str
    points: str
    last_pct: float
    last_x: float
    last_y: float


@dataclass(frozen=True)
class ChartSpan:
    x: float
    width: float
    label: str


@dataclass(frozen=True)
class ChartMark:
    x: float
    label: str


@dataclass
class Chart:
    width: float
    height: float
    band_y: float
    band_h: float
    cutoff_y: float
    floor_y: float
    lines: list[ChartLine]
    resets: list[ChartMark]
    cooldowns: list[ChartSpan]
    start: datetime
    end: datetime
    readings: int
    ticks: list[ChartMark]


def _x(moment: datetime, start: datetime) -> float:
    fraction = (moment - start).total_seconds() / CHART_SPAN.total_seconds()
    return round(min(1.0, max(0.0, fraction)) * CHART_W, 1)


def _y(pct: float) -> float:
    return round((100.0 - max(0.0, min(100.0, pct))) / 100.0 * CHART_H, 1)


def chart_build(
    readings: list[m.QuotaReading],
    failures: list[m.FailureEvent],
    cooldown_until: datetime | None,
    limits: Thresholds,
    now: datetime,
) -> Chart:
    start = now - CHART_SPAN
    series: dict[str, list[tuple[float, float]]] = {}
    resets: dict[datetime, str] = {}
    for reading in readings:
        x = _x(reading.fetched_at, start)
        for window in reading.windows.all():
            series.setdefault(window.name, []).append((x, window.remaining_pct))
            if window.reset_at is not None and start <= window.reset_at <= now:
                resets.setdefault(window.reset_at, window.name)
    lines = [
        ChartLine(
            name,
            CHART_COLOURS[i % len(CHART_COLOURS)],
            " ".join(f"{x:g},{_y(pct):g}" for x, pct in points),
            points[-1][1],
            points[-1][0],
            _y(points[-1][1]),
        )
        for i, (name, points) in enumerate(series.items())
    ]
    spans = [
        (f.observed_at, f.cooldown_until)
        for f in failures
        if f.cooldown_until is not None and f.cooldown_until > start
    ]
    if cooldown_until is not None and cooldown_until > start:
        spans.append((min(now, cooldown_until), cooldown_until))
    cooldowns = []
    for begin, end in spans:
        x0, x1 = _x(max(begin, start), start), _x(min(end, now), start)
        cooldowns.append(ChartSpan(x0, max(2.0, x1 - x0), f"cooldown until {end:%Y-%m-%d %H:%M:%S}Z"))
    floor_y, cutoff_y = _y(limits.floor_pct), _y(limits.cutoff_pct)
    ticks = [
        ChartMark(_x(now - timedelta(hours=h), start), f"-{h}h" if h else "now") for h in (24, 18, 12, 6, 0)
    ]
    return Chart(
        width=CHART_W,
        height=CHART_H,
        band_y=floor_y,
        band_h=max(1.0, cutoff_y - floor_y),
        cutoff_y=cutoff_y,
        floor_y=floor_y,
        lines=lines,
        resets=[ChartMark(_x(at, start), f"{name} reset {at:%H:%M}Z") for at, name in sorted(resets.items())],
        cooldowns=cooldowns,
        start=start,
        end=now,
        readings=len(readings),
        ticks=ticks,
    )
