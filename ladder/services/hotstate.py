"""The hot state in Redis: each connection's latest reading (with its latches) and the last beat tick.

The database is the source of truth; Redis is a cache that every reader can do without. Every call
times out fast (``LADDER_HOTSTATE_TIMEOUT_S``, 0.5 s) and, after a failure, Redis is left alone for
``OUTAGE_BACKOFF_S`` so that an outage costs one timeout, not one per request. Readers then fall back
to the database.

Keys (``LADDER_HOTSTATE_PREFIX``, default ``ladder:hot``):

- ``<prefix>:reading:<connection id>`` — JSON of the latest reading (``reading_to_json``), with an
  ``order`` field (``fetched_at`` then reading id) so that a late writer never replaces a newer
  reading: writes are compare-and-set in a Lua script.
- ``<prefix>:last_beat_at`` — ISO time of the last refresh fan-out (``/readyz``).

Who keeps it right: ``services.readings`` writes a reading here after its transaction commits. Any
other code that changes a stored latest reading in place (e.g. latching its window after a
quota-exhaustion failure) or deletes a connection must call ``reading_sync`` or ``reading_forget``
after commit.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Collection, Iterable
from datetime import UTC, datetime
from typing import Any, cast

import redis
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ladder import models as m
from ladder.domain.types import Overage, Reading, Source, Window

logger = logging.getLogger(__name__)

OUTAGE_BACKOFF_S = 5.0
BEAT_HEARTBEAT = "beat"

# KEYS[1] the reading key; ARGV: order, value, ttl_s. Sets unless the stored reading is newer.
_CAS_SCRIPT = """
local current = redis.call('GET', KEYS[1])
if current then
  local ok, decoded = pcall(cjson.decode, current)
  if ok and type(decoded) == 'table' and decoded['order'] and decoded['order'] > ARGV[1] then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return 1
"""

_clients: dict[str, redis.Redis] = {}
_clients_lock = threading.Lock()
_down_until: dict[str, float] = {}  # Redis URL → monotonic time before which it is left alone


class HotStateUnavailable(Exception):
    """Redis did not answer in time (or recently failed); the caller falls back to the database."""


def redis_url() -> str:
    return str(settings.LADDER_HOTSTATE_REDIS_URL or settings.REDIS_URL)


def key_prefix() -> str:
    return str(settings.LADDER_HOTSTATE_PREFIX)


def reading_key(connection_id: str) -> str:
    return f"{key_prefix()}:reading:{connection_id}"


def last_beat_key() -> str:
    return f"{key_prefix()}:last_beat_at"


def client() -> redis.Redis:
    """A Redis client for the hot state (one per URL, thread-safe), with 0.5 s timeouts.

    Raises HotStateUnavailable while a recent failure is being waited out."""
    url = redis_url()
    if time.monotonic() < _down_until.get(url, 0.0):
        raise HotStateUnavailable(f"Redis at {url} failed recently; waiting before trying again")
    timeout_s = float(settings.LADDER_HOTSTATE_TIMEOUT_S)
    with _clients_lock:
        found = _clients.get(url)
        if found is None:
            found = redis.Redis.from_url(
                url,
                socket_timeout=timeout_s,
                socket_connect_timeout=timeout_s,
                retry_on_timeout=False,
                health_check_interval=30,
            )
            _clients[url] = found
    return found


def mark_down(exc: BaseException) -> None:
    _down_until[redis_url()] = time.monotonic() + OUTAGE_BACKOFF_S
    logger.warning("hot state: Redis at %s unavailable (%s); using the database", redis_url(), exc)


def mark_up() -> None:
    """Forget recorded outages (tests, or after an operator restarted Redis)."""
    _down_until.clear()


def available() -> bool:
    """Whether Redis answers a PING now."""
    try:
        return bool(client().ping())
    except (redis.RedisError, HotStateUnavailable, OSError) as exc:
        if not isinstance(exc, HotStateUnavailable):
            mark_down(exc)
        return False


# --- encoding --------------------------------------------------------------------------------


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def reading_order(reading: Reading, reading_id: int) -> str:
    """Sorts like readings_latest picks: fetched_at, then reading id."""
    return f"{_iso(reading.fetched_at)}|{reading_id:020d}"


def reading_to_json(connection_id: str, reading_id: int, reading: Reading) -> str:
    return json.dumps(
        {
            "order": reading_order(reading, reading_id),
            "connection_id": connection_id,
            "reading_id": reading_id,
            "fetched_at": _iso(reading.fetched_at),
            "source": reading.source,
            "verifiable": reading.verifiable,
            "observed_overage": reading.observed_overage,
            "note": reading.note,
            "windows": [
                {
                    "name": w.name,
                    "remaining_pct": w.remaining_pct,
                    "reset_at": _iso(w.reset_at) if w.reset_at else None,
                    "scope_models": list(w.scope_models),
                    "latched": w.latched,
                }
                for w in reading.windows
            ],
        },
        separators=(",", ":"),
    )


def reading_from_json(text: str | bytes) -> Reading:
    data: dict[str, Any] = json.loads(text)
    fetched_at = _parse(data["fetched_at"])
    assert fetched_at is not None
    return Reading(
        fetched_at=fetched_at,
        windows=tuple(
            Window(
                name=str(w["name"]),
                remaining_pct=float(w["remaining_pct"]),
                reset_at=_parse(w.get("reset_at")),
                scope_models=tuple(w.get("scope_models") or ()),
                latched=bool(w.get("latched")),
            )
            for w in data.get("windows") or ()
        ),
        source=cast(Source, data.get("source", "poll")),
        verifiable=bool(data.get("verifiable", True)),
        observed_overage=cast(Overage | None, data.get("observed_overage")),
        note=str(data.get("note") or ""),
    )


# --- readings --------------------------------------------------------------------------------


def readings_set(items: Iterable[tuple[str, int, Reading]]) -> bool:
    """Store (connection id, reading id, reading) triples unless Redis holds a newer reading.

    False (logged) when Redis is unavailable; never raises for that."""
    batch = list(items)
    if not batch:
        return True
    ttl_s = int(settings.LADDER_HOTSTATE_TTL_S)
    try:
        pipe = client().pipeline(transaction=False)
        for connection_id, reading_id, reading in batch:
            pipe.eval(
                _CAS_SCRIPT,
                1,
                reading_key(connection_id),
                reading_order(reading, reading_id),
                reading_to_json(connection_id, reading_id, reading),
                ttl_s,
            )
        pipe.execute()
    except HotStateUnavailable:
        return False
    except (redis.RedisError, OSError) as exc:
        mark_down(exc)
        return False
    return True


def readings_set_on_commit(items: Iterable[tuple[str, int, Reading]]) -> None:
    batch = list(items)
    if batch:
        transaction.on_commit(lambda: readings_set(batch))


def readings_get(connection_ids: Collection[str]) -> dict[str, Reading]:
    """Readings found in Redis (absent keys are left out). Raises HotStateUnavailable when down."""
    ids = list(dict.fromkeys(connection_ids))
    if not ids:
        return {}
    try:
        values = client().mget([reading_key(cid) for cid in ids])
    except HotStateUnavailable:
        raise
    except (redis.RedisError, OSError) as exc:
        mark_down(exc)
        raise HotStateUnavailable(str(exc)) from exc
    found: dict[str, Reading] = {}
    for cid, value in zip(ids, cast(list[bytes | None], values), strict=True):
        if value is None:
            continue
        try:
            found[cid] = reading_from_json(value)
        except (ValueError, KeyError, TypeError, AssertionError):
            logger.warning("hot state: unreadable entry for %s ignored", cid)
    return found


def readings_latest_hot(*, connection_ids: Collection[str] | None = None) -> dict[str, Reading]:
    """Connection id → latest reading: Redis first, the database for what Redis lacks (and all of it
    when Redis is down). What came from the database is written back (compare-and-set)."""
    from ladder.selectors import readings_latest  # a read helper; imported here to keep layers light

    ids = (
        list(m.Connection.objects.values_list("id", flat=True))
        if connection_ids is None
        else list(dict.fromkeys(connection_ids))
    )
    try:
        found = readings_get(ids)
    except HotStateUnavailable:
        return readings_latest(connection_ids=ids)
    missing = [cid for cid in ids if cid not in found]
    if missing:
        from_db = readings_latest(connection_ids=missing)
        found.update(from_db)
        if from_db:
            _warm(from_db)
    return found


def _warm(readings: dict[str, Reading]) -> None:
    latest: dict[str, int] = {}
    for cid, rid in (
        m.QuotaReading.objects.filter(connection_id__in=list(readings))
        .order_by("connection_id", "-fetched_at", "-id")
        .values_list("connection_id", "id")
    ):
        latest.setdefault(cid, rid)  # the first row per connection is its latest
    readings_set((cid, latest[cid], reading) for cid, reading in readings.items() if cid in latest)


def reading_sync(connection_id: str) -> None:
    """Put the database's latest reading of a connection in Redis (after an in-place change)."""
    from ladder.selectors import readings_latest

    reading = readings_latest(connection_ids=[connection_id]).get(connection_id)
    if reading is None:
        reading_forget(connection_id)
        return
    row = (
        m.QuotaReading.objects.filter(connection_id=connection_id)
        .order_by("-fetched_at", "-id")
        .values_list("id", flat=True)
        .first()
    )
    if row is None:
        return
    try:
        # Forced: the database says this is the latest, even if Redis holds a "newer" order.
        client().set(
            reading_key(connection_id),
            reading_to_json(connection_id, row, reading),
            ex=int(settings.LADDER_HOTSTATE_TTL_S),
        )
    except HotStateUnavailable:
        pass
    except (redis.RedisError, OSError) as exc:
        mark_down(exc)


def reading_forget(connection_id: str) -> None:
    try:
        client().delete(reading_key(connection_id))
    except HotStateUnavailable:
        pass
    except (redis.RedisError, OSError) as exc:
        mark_down(exc)


# --- last beat -------------------------------------------------------------------------------


def last_beat_set(at: datetime) -> bool:
    try:
        client().set(last_beat_key(), _iso(at))
    except HotStateUnavailable:
        return False
    except (redis.RedisError, OSError) as exc:
        mark_down(exc)
        return False
    return True


def last_beat_get() -> datetime | None:
    """When the refresh fan-out last ran: Redis, else the database's "beat" heartbeat."""
    try:
        value = client().get(last_beat_key())
    except HotStateUnavailable:
        value = None
    except (redis.RedisError, OSError) as exc:
        mark_down(exc)
        value = None
    if value is not None:
        text = value.decode() if isinstance(value, bytes) else str(value)
        try:
            return _parse(text)
        except ValueError:
            logger.warning("hot state: unreadable last_beat_at %r ignored", text)
    row = m.Heartbeat.objects.filter(pk=BEAT_HEARTBEAT).values_list("last_at", flat=True).first()
    return row


def beat_record(*, now: datetime | None = None) -> datetime:
    """Record a refresh fan-out tick: the "beat" heartbeat row, then Redis's last_beat_at."""
    now = now or timezone.now()
    m.Heartbeat.objects.update_or_create(pk=BEAT_HEARTBEAT, defaults={"last_at": now})
    last_beat_set(now)
    return now
