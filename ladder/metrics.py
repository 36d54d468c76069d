"""Prometheus metrics at ``/metrics`` (prometheus-client), for Grafana and alerting.

Access (settings, README): when ``LADDER_METRICS_TOKEN`` is set the scrape must send
``Authorization: Bearer <token>``, else 401 (a token is never read from the URL); the client's
address must lie in ``LADDER_METRICS_ALLOWED_NETWORKS`` when that is set (empty: any address), else
403. With neither set only loopback may scrape; a token alone admits any address that sends it.
Behind ``LADDER_TRUSTED_PROXY_HOPS`` proxies both the proxy's and the forwarded client's address
must be allowed.

Every scrape builds its figures afresh, with no state in the web process (several serve the same
ladder): gauges from one snapshot (``snapshot_load``, a constant number of queries),
the escalation counts from one query, the alert figures from two, and the counters shared by every
process from Redis, read through the selectors (``ladder_resolutions_total`` from the escalation
log's script, the refresh figures from the Celery workers). With Redis away those counters are left out and
``ladder_metrics_redis_up`` is 0.

Families, with bounded label sets (``connection`` is an operator-made connection id):

- ``ladder_quota_remaining_ratio{connection,provider,window}``: the latest reading's remaining
  quota, 0–1 (remaining_pct / 100); ``ladder_quota_window_latched`` 1 while the hysteresis latch is
  set; ``ladder_quota_window_reset_timestamp_seconds`` when the window resets (if known);
  ``ladder_window_exhausts_in_seconds`` the seconds until it reaches the connection's cutoff at its
  current burn rate (ladder.domain.forecast; only windows with a forecast, 0 once due).
- ``ladder_reading_age_seconds{connection,provider}``: the age of the latest reading.
- ``ladder_connection_rung{connection,provider}``: the connection's base rung, the lowest rung it
  serves on (0 subscription … 4 premium: a plan connection is 0 and a keyless one 1 whatever the
  model; a metered one is the tier of its cheapest served model); absent when it serves no model.
  ``ladder_connection_models{connection,provider,rung}``: how many of its models sit on each rung,
  so a metered connection's spread shows without a series per model.
- ``ladder_connection_enabled``, ``ladder_connection_cooldown_seconds`` (seconds left, 0: none).
- ``ladder_connection_reserve_ratio{connection,provider}``: the quota kept for the operator's own
  use, 0–1 (only connections with a reserve); ``ladder_connection_cutoff_ratio``: the remaining
  quota at or below which the connection leaves the plan rung, max(exit cutoff, reserve) (DESIGN L6);
  ``ladder_connection_poll_interval_seconds``: its polling interval when slower than the refresh
  interval (DESIGN L5; absent while polled every interval).
- ``ladder_rung_spend_usd{rung}`` and ``ladder_rung_budget_usd{rung}`` for the current budget period
  (a budget is absent when the rung is not gated, 0 when disabled);
  ``ladder_budget_period_end_timestamp_seconds``.
- ``ladder_resolutions_total{grouping,outcome}``: gateway resolutions by grouping
  (``subscription``/``thrifty``) and outcome (the rung the pool starts on, or ``empty``).
- ``ladder_escalations_total{auto_id,kind}``: the escalation log's events (up, down, empty).
- ``ladder_refresh_polls_total{provider,outcome}``, ``ladder_refresh_failures_total{provider,outcome}``
  (the failed outcomes only) and ``ladder_refresh_duration_seconds{provider}`` (a histogram of the
  quota polls' HTTP exchanges).
- ``ladder_alert_deliveries{kind,status}``: the alert deliveries stored, by channel kind (webhook,
  slack, discord, email) and status (pending, sent, failed); a gauge over the rows, which are never
  purged (a deleted channel or episode takes its deliveries along), since a pending one moves on.
  ``ladder_alert_delivery_oldest_pending_age_seconds{kind}``: the age of the oldest delivery still
  pending (0: none), which outgrows the retry schedule only when the queue is stuck.
  ``ladder_alert_episodes_open{kind}``: the open episodes by rule kind (docs/ALERTS.md).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime
from functools import lru_cache, partial
from itertools import accumulate

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_safe
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector, CollectorRegistry

from ladder.domain import advertised_auto_ids, rung_budgets
from ladder.domain.alerts import ALERT_CHANNEL_KINDS, ALERT_DELIVERY_STATUSES, RULE_KINDS
from ladder.domain.resolve import billing_verdict
from ladder.domain.tiers import model_rungs
from ladder.domain.types import Connection, Rung, Snapshot
from ladder.domain.windows import connection_limits, reading_age_s
from ladder.models.escalations import ESCALATION_KINDS
from ladder.security.login_throttle import forwarded_address
from ladder.selectors.alerts import alert_delivery_figures, alert_episode_open_counts
from ladder.selectors.escalations import escalation_counts
from ladder.selectors.hotstate import (
    DURATION_BUCKETS_S,
    FAILURE_OUTCOMES,
    HotStateUnavailable,
    refresh_metrics_read,
    resolutions_read,
)
from ladder.selectors.snapshot import snapshot_load

logger = logging.getLogger(__name__)

GROUPINGS = ("subscription", "thrifty")
RESOLUTION_OUTCOMES = (*(rung.label for rung in Rung), "empty")
SUBSCRIPTION_OUTCOMES = (Rung.SUBSCRIPTION.label, "empty")  # auto/subscription serves nothing else
CONNECTION = ["connection", "provider"]
connection_gauge = partial(GaugeMetricFamily, labels=CONNECTION)
window_gauge = partial(GaugeMetricFamily, labels=[*CONNECTION, "window"])
rung_gauge = partial(GaugeMetricFamily, labels=["rung"])
kind_gauge = partial(GaugeMetricFamily, labels=["kind"])
LOOPBACK_NETWORKS = ("127.0.0.0/8", "::1/128")


# --- access ------------------------------------------------------------------------------------


@lru_cache(maxsize=8)
def _networks(cidrs: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Settings checked each CIDR at startup (envnetworks)."""
    return tuple(ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


def _client_addresses(request: HttpRequest) -> list[str]:
    """REMOTE_ADDR and, behind LADDER_TRUSTED_PROXY_HOPS proxies, the client address the outermost
    trusted proxy forwarded: both must be allowed, so a forged X-Forwarded-For sent straight to a
    web process gains nothing."""
    remote = str(request.META.get("REMOTE_ADDR") or "")
    forwarded = forwarded_address(request)
    return [remote, forwarded] if forwarded else [remote]


def _address_allowed(address: str, networks: Iterable[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip.version == net.version and ip in net for net in networks)


def allowed_networks(token: str) -> tuple[str, ...]:
    """LADDER_METRICS_ALLOWED_NETWORKS when set (empty: any address); else loopback only, unless a
    token is set (then the token alone decides)."""
    configured = settings.LADDER_METRICS_ALLOWED_NETWORKS
    if configured is not None:
        return tuple(configured)
    return () if token else LOOPBACK_NETWORKS


def _refusal(text: str, status: int) -> HttpResponse:
    return HttpResponse(f"metrics: {text}\n", status=status, content_type="text/plain; charset=utf-8")


def access_refusal(request: HttpRequest) -> HttpResponse | None:
    """The 401/403 for a scrape the settings do not allow (None: allowed)."""
    expected = str(settings.LADDER_METRICS_TOKEN or "")
    cidrs = allowed_networks(expected)
    if cidrs:
        networks = _networks(cidrs)
        refused = [a for a in _client_addresses(request) if not _address_allowed(a, networks)]
        if refused:
            return _refusal(
                f"address {refused[0] or '(none)'} is not in LADDER_METRICS_ALLOWED_NETWORKS", 403
            )
    if expected:
        scheme, _, sent = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(sent.strip().encode(), expected.encode()):
            response = _refusal("send Authorization: Bearer <LADDER_METRICS_TOKEN>", 401)
            response["WWW-Authenticate"] = 'Bearer realm="omniroute-ladder-metrics"'
            return response
    return None


@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    refusal = access_refusal(request)
    if refusal is not None:
        return refusal
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LadderCollector(now=timezone.now()))
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    response = HttpResponse(encoder(registry), content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response


# --- the figures ---------------------------------------------------------------------------------


def _seconds_left(until: datetime | None, now: datetime) -> float:
    """Seconds from now until `until`, 0 when it is past or None."""
    return max(0.0, (until - now).total_seconds()) if until is not None else 0.0


class LadderCollector(Collector):
    """Every family, built at collect time from the database and Redis (no process state)."""

    def __init__(self, *, now: datetime) -> None:
        self.now = now

    def collect(self) -> Iterator[Metric]:
        snapshot = snapshot_load(now=self.now)
        yield from quota_families(snapshot, self.now)
        yield from connection_families(snapshot, self.now)
        yield from budget_families(snapshot, self.now)
        yield escalation_family(snapshot)
        yield from alert_families(self.now)
        yield from redis_families()


def quota_families(snapshot: Snapshot, now: datetime) -> Iterator[Metric]:
    remaining = window_gauge(
        "ladder_quota_remaining_ratio", "Remaining quota of a window in the connection's latest reading, 0-1"
    )
    latched = window_gauge(
        "ladder_quota_window_latched",
        "1 while the window's hysteresis latch is set (usable again only above the re-entry floor)",
    )
    resets = window_gauge(
        "ladder_quota_window_reset_timestamp_seconds",
        "When the window resets, in Unix seconds (windows with a known reset time)",
    )
    exhausts = window_gauge(
        "ladder_window_exhausts_in_seconds",
        "Seconds until the window reaches the connection's cutoff at its current burn rate, 0 when "
        "due (windows with a forecast)",
    )
    age = connection_gauge("ladder_reading_age_seconds", "Age of the connection's latest quota reading")
    for connection in snapshot.connections:
        reading = connection.reading
        if reading is None:
            continue
        age.add_metric([connection.id, connection.provider], reading_age_s(reading, now))
        for window in reading.windows:
            labels = [connection.id, connection.provider, window.name]
            remaining.add_metric(labels, window.remaining_pct / 100.0)
            latched.add_metric(labels, 1.0 if window.latched else 0.0)
            if window.reset_at is not None:
                resets.add_metric(labels, window.reset_at.timestamp())
            if window.exhausts_at is not None:
                exhausts.add_metric(labels, _seconds_left(window.exhausts_at, now))
    yield from (remaining, latched, resets, exhausts, age)


def connection_rungs(snapshot: Snapshot, connection: Connection) -> Counter[Rung]:
    """How many of the connection's models sit on each rung (as GET /api/v1/connections lists them)."""
    return Counter(model_rungs(connection, snapshot, billing_verdict(snapshot, connection).billing).values())


def connection_families(snapshot: Snapshot, now: datetime) -> Iterator[Metric]:
    rung = connection_gauge(
        "ladder_connection_rung",
        "Base rung of the connection: the lowest rung it serves on (0 subscription, 1 keyless, 2 free, "
        "3 cheap, 4 premium)",
    )
    models = GaugeMetricFamily(
        "ladder_connection_models",
        "How many of the connection's models sit on each rung",
        labels=[*CONNECTION, "rung"],
    )
    enabled = connection_gauge("ladder_connection_enabled", "1 when the connection is enabled")
    cooldown = connection_gauge(
        "ladder_connection_cooldown_seconds",
        "Seconds left of the connection's cooldown (0: not cooling down)",
    )
    reserve = connection_gauge(
        "ladder_connection_reserve_ratio",
        "Quota kept for the operator's own use, 0-1 (connections with a reserve)",
    )
    cutoff = connection_gauge(
        "ladder_connection_cutoff_ratio",
        "Remaining quota at or below which the connection leaves the plan rung: max(exit cutoff, reserve)",
    )
    poll_interval = connection_gauge(
        "ladder_connection_poll_interval_seconds",
        "The connection's polling interval when slower than the refresh interval (its readings stay fresh "
        "that much longer)",
    )
    for connection in snapshot.connections:
        labels = [connection.id, connection.provider]
        limits = connection_limits(connection, snapshot.config)
        cutoff.add_metric(labels, limits.cutoff_pct / 100.0)
        if connection.reserve_pct is not None:
            reserve.add_metric(labels, connection.reserve_pct / 100.0)
        if connection.poll_interval_s is not None:
            poll_interval.add_metric(labels, connection.poll_interval_s)
        counts = connection_rungs(snapshot, connection)
        if counts:
            rung.add_metric(labels, int(min(counts)))
        for served_rung, count in sorted(counts.items()):
            models.add_metric([*labels, served_rung.label], count)
        enabled.add_metric(labels, 1.0 if connection.enabled else 0.0)
        cooldown.add_metric(labels, _seconds_left(connection.cooldown_until, now))
    yield from (rung, models, enabled, cooldown, reserve, cutoff, poll_interval)


def budget_families(snapshot: Snapshot, now: datetime) -> Iterator[Metric]:
    spend = rung_gauge("ladder_rung_spend_usd", "USD spent on the rung in the current budget period")
    budget = rung_gauge(
        "ladder_rung_budget_usd",
        "The rung's budget for the current period in USD (absent: not gated; 0: the rung is disabled)",
    )
    period_end = GaugeMetricFamily(
        "ladder_budget_period_end_timestamp_seconds", "When the current budget period ends, in Unix seconds"
    )
    budgets = rung_budgets(snapshot.config, snapshot.spend_usd, now)
    for item in budgets.values():
        spend.add_metric([item.rung], item.spent_usd)
        if item.budget_usd is not None:
            budget.add_metric([item.rung], item.budget_usd)
    ends = {item.period_ends_at for item in budgets.values()}
    if ends:
        period_end.add_metric([], min(ends).timestamp())
    yield from (spend, budget, period_end)


def escalation_family(snapshot: Snapshot) -> Metric:
    family = CounterMetricFamily(
        "ladder_escalations",
        "Escalation log events: the rung a gateway resolution of the auto id starts on went up, "
        "turned empty, or came back down",
        labels=["auto_id", "kind"],
    )
    counts = escalation_counts()
    categories = {category for entry in snapshot.models for category in entry.categories}
    auto_ids = sorted({*advertised_auto_ids(categories), *(auto_id for auto_id, _ in counts)})
    for auto_id in auto_ids:
        for kind in ESCALATION_KINDS:
            family.add_metric([auto_id, kind], counts.get((auto_id, kind), 0))
    return family


def alert_families(now: datetime) -> Iterator[Metric]:
    deliveries = GaugeMetricFamily(
        "ladder_alert_deliveries",
        "Alert deliveries stored, by channel kind and status (pending, sent, failed): a count of the rows, "
        "not a counter (a pending one moves on; rows are never purged, but a deleted channel or episode "
        "takes its deliveries along)",
        labels=["kind", "status"],
    )
    oldest = kind_gauge(
        "ladder_alert_delivery_oldest_pending_age_seconds",
        "Age of the oldest alert delivery still pending, by channel kind (0: none pending); one older than "
        "the retry schedule is stuck",
    )
    episodes = kind_gauge("ladder_alert_episodes_open", "Alert episodes open, by rule kind")
    figures = alert_delivery_figures()
    channel_kinds = sorted({*ALERT_CHANNEL_KINDS, *(kind for kind, _ in figures.counts)})
    for kind in channel_kinds:
        for status in ALERT_DELIVERY_STATUSES:
            deliveries.add_metric([kind, status], figures.counts.get((kind, status), 0))
        since = figures.oldest_pending.get(kind)
        oldest.add_metric([kind], max(0.0, (now - since).total_seconds()) if since is not None else 0.0)
    open_counts = alert_episode_open_counts()
    for kind in sorted({*RULE_KINDS, *open_counts}):
        episodes.add_metric([kind], open_counts.get(kind, 0))
    yield from (deliveries, oldest, episodes)


def redis_families() -> Iterator[Metric]:
    up = GaugeMetricFamily(
        "ladder_metrics_redis_up",
        "1 when the counters kept in Redis (resolutions, refresh) could be read for this scrape",
    )
    resolutions = CounterMetricFamily(
        "ladder_resolutions",
        "Gateway resolutions by grouping and outcome (the rung the pool starts on, or empty)",
        labels=["grouping", "outcome"],
    )
    polls = CounterMetricFamily(
        "ladder_refresh_polls", "Quota polls by provider and outcome", labels=["provider", "outcome"]
    )
    failures = CounterMetricFamily(
        "ladder_refresh_failures",
        f"Quota polls that failed, by provider and outcome ({', '.join(FAILURE_OUTCOMES)})",
        labels=["provider", "outcome"],
    )
    durations = HistogramMetricFamily(
        "ladder_refresh_duration_seconds",
        "Duration of the quota polls' HTTP exchanges by provider",
        labels=["provider"],
    )
    try:
        counted = resolutions_read()
        figures = refresh_metrics_read()
    except HotStateUnavailable as exc:
        logger.warning("metrics: the Redis counters are unavailable (%s)", exc)
        up.add_metric([], 0.0)
    else:
        up.add_metric([], 1.0)
        for grouping in GROUPINGS:
            for outcome in RESOLUTION_OUTCOMES if grouping == "thrifty" else SUBSCRIPTION_OUTCOMES:
                resolutions.add_metric([grouping, outcome], counted.get((grouping, outcome), 0))
        for provider in sorted({provider for provider, _ in figures.polls} | set(figures.durations)):
            for outcome in FAILURE_OUTCOMES:
                failures.add_metric([provider, outcome], figures.polls.get((provider, outcome), 0))
        for (provider, outcome), count in sorted(figures.polls.items()):
            polls.add_metric([provider, outcome], count)
        bounds = [*map(str, DURATION_BUCKETS_S), "+Inf"]
        for provider, timed in sorted(figures.durations.items()):
            buckets = list(zip(bounds, accumulate(timed.buckets), strict=True))
            durations.add_metric([provider], buckets, sum_value=timed.sum_s)
    yield from (up, resolutions, polls, failures, durations)
