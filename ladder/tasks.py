"""Celery tasks: thin interfaces over the services. They take ids, are idempotent (a claim makes a
second run of the same refresh a no-op), have soft and hard time limits, and retry only transient
errors (the database or the broker briefly unreachable) with jittered exponential backoff.

Time limits come from settings through CELERY_TASK_ANNOTATIONS (the values below are the fallback).
A refresh claims its connections for the task's hard time limit: a worker killed at that limit
leaves claims that lapse exactly then. New polls stop starting at 60 % of the soft limit, so that the
ones in flight (each bounded by the adapters' HTTP timeouts) finish before it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar

from celery import Task, shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerOperationalError

from ladder.services.alert_delivery import deliveries_sweep, delivery_attempt
from ladder.services.alerts import alerts_evaluate as alerts_evaluate_service
from ladder.services.credential_refresh import credentials_refresh_due_run
from ladder.services.escalations import escalations_purge
from ladder.services.readings import readings_purge as readings_purge_service
from ladder.services.refresh.fanout import refresh_connections_run, refresh_due_run

# Worth retrying: the database or the broker was briefly unreachable. Upstream faults never raise
# out of the services (they are classified and stored), so they never retry a whole task.
TRANSIENT_ERRORS = (OperationalError, InterfaceError, BrokerOperationalError)
# Every task's time limits unless it sets its own; settings' CELERY_TASK_ANNOTATIONS sets those of the
# refresh tasks and deliver_alert (LADDER_REFRESH_*, LADDER_ALERT_*), and a message may carry its own.
TIME_LIMIT_S = 60
SOFT_TIME_LIMIT_S = 50
DEADLINE_SHARE = 0.6

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _limits(task: Task) -> tuple[float, float]:
    """(hard, soft) time limits of this run: the message's own, else the task's."""
    requested = getattr(task.request, "timelimit", None) or (None, None)
    hard = requested[0] or task.time_limit or TIME_LIMIT_S
    soft = requested[1] or task.soft_time_limit or min(SOFT_TIME_LIMIT_S, hard)
    return float(hard), float(soft)


def ladder_task(
    name: str,
    *,
    soft_time_limit: int = SOFT_TIME_LIMIT_S,
    time_limit: int = TIME_LIMIT_S,
    reject_on_worker_lost: bool = False,
) -> Callable[[Callable[Concatenate[Task[_P, _R], _P], _R]], Task[_P, _R]]:
    """A bound task (the services send it by ``name``) with its time limits, retried on
    TRANSIENT_ERRORS with jittered exponential backoff, acknowledged once its run is over."""
    return shared_task(
        bind=True,
        name=name,
        soft_time_limit=soft_time_limit,
        time_limit=time_limit,
        reject_on_worker_lost=reject_on_worker_lost,
        autoretry_for=TRANSIENT_ERRORS,
        retry_backoff=2,
        retry_backoff_max=30,
        retry_jitter=True,
        max_retries=3,
        acks_late=True,
        ignore_result=True,
    )


@ladder_task("ladder.tasks.refresh_due")
def refresh_due(self: Task) -> dict[str, Any]:
    """The beat's fan-out: record the tick, claim the due connections, refresh them concurrently."""
    hard, soft = _limits(self)
    return refresh_due_run(lease_s=hard, deadline_s=soft * DEADLINE_SHARE).as_dict()


@ladder_task("ladder.tasks.refresh_connections")
def refresh_connections(self: Task, connection_ids: list[str]) -> dict[str, Any]:
    """Refresh these connections now (asked for by a resolution); ones already being refreshed are
    left to their claim holder."""
    hard, soft = _limits(self)
    ids = [str(cid) for cid in connection_ids or ()]
    return refresh_connections_run(ids, lease_s=hard, deadline_s=soft * DEADLINE_SHARE).as_dict()


@ladder_task("ladder.tasks.credentials_refresh")
def credentials_refresh(self: Task) -> dict[str, int]:
    """The beat's credential sweep: refresh the ladder-owned credentials within their lead time of
    expiry (each refresh token redeemed once: ladder.services.credential_refresh)."""
    return dict(credentials_refresh_due_run())


@ladder_task("ladder.tasks.readings_purge", soft_time_limit=600, time_limit=660)
def readings_purge(self: Task, retention_days: float | None = None) -> dict[str, int]:
    """Delete history older than its retention: readings and failures after
    LADDER_READING_RETENTION_DAYS (each connection's latest reading stays), escalation events after
    LADDER_ESCALATION_RETENTION_DAYS."""
    now = timezone.now()
    days = retention_days if retention_days is not None else settings.LADDER_READING_RETENTION_DAYS
    deleted = readings_purge_service(older_than=now - timedelta(days=float(days)))
    escalation_days = settings.LADDER_ESCALATION_RETENTION_DAYS  # a float, checked at startup (envdays)
    deleted["escalations"] = escalations_purge(older_than=now - timedelta(days=escalation_days))
    return deleted


# acks_late: a message is acknowledged only once its attempt is over; reject_on_worker_lost: a pool
# child killed mid-send puts the message back on the queue.
@ladder_task("ladder.tasks.deliver_alert", reject_on_worker_lost=True)
def deliver_alert(self: Task, delivery_pk: int) -> str:
    """One attempt to send an alert delivery (ladder.services.alert_delivery): sent, failed, or the
    next attempt queued with backoff. A copy of a message that another one owns does nothing."""
    hard, _ = _limits(self)
    owner = str(self.request.id or f"local-{delivery_pk}")
    return delivery_attempt(
        delivery_pk=int(delivery_pk), owner=owner, now=timezone.now(), lease_s=hard
    ).status


@ladder_task("ladder.tasks.alert_deliveries_sweep")
def alert_deliveries_sweep(self: Task) -> int:
    """The beat's sweep: queue again the pending alert deliveries whose task was lost."""
    return deliveries_sweep(now=timezone.now())


@ladder_task("ladder.tasks.alerts_evaluate")
def alerts_evaluate(self: Task) -> dict[str, int]:
    """The beat's alert evaluation: every enabled rule's conditions against the episodes; firings and
    recoveries go to the channels on commit (ladder.services.alerts). Two at once fire nothing twice."""
    return alerts_evaluate_service(now=timezone.now()).as_dict()
