"""Login throttling for the admin and the dashboard login.

Failed logins are counted per user name and per client address. Past
LADDER_LOGIN_FAILURES_PER_USERNAME failures for one name, or LADDER_LOGIN_FAILURES_PER_ADDRESS from
one address, within LADDER_LOGIN_WINDOW_S of the first failure, every further attempt is refused
without checking the password until that window ends: the form says how long to wait and the answer
is a 429 with Retry-After. A successful login clears its user name's count (not its address's: an
attacker's own account must not wash an address clean).

The counts live in the Django cache (Redis), shared by every web process, one key per name or
address that expires with its window. When Redis does not answer, each process counts in its own
memory instead (and logs it): the limits then hold per process, so an attacker gains at most one
limit per web process and thread pool while Redis is down, and no operator is locked out, nor let in
unchecked, because Redis is.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from typing import Any, cast

import redis
from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.http import HttpRequest, HttpResponseBase

logger = logging.getLogger(__name__)

KEY_PREFIX = "login-failures"
FALLBACK_LOG_EVERY_S = 60.0
RETRY_MESSAGE = (
    "Too many failed login attempts for this user name or from this address. "
    "The password was not checked; try again in %(retry_s)d s."
)


def client_address(request: HttpRequest | None) -> str:
    """The client's address: REMOTE_ADDR, or with LADDER_TRUSTED_PROXY_HOPS proxies in front, the
    entry of X-Forwarded-For that the outermost trusted proxy appended (what a client sends itself
    sits further left and is ignored)."""
    if request is None:
        return "unknown"
    hops = int(settings.LADDER_TRUSTED_PROXY_HOPS)
    if hops > 0:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        forwarded = [part for part in forwarded if part]
        if len(forwarded) >= hops:
            return forwarded[-hops]
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def _digest(value: str) -> str:
    # Hashed: a user name is arbitrary text, and the cache should not keep a list of them in clear.
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _limits(*, username: str, address: str) -> list[tuple[str, int]]:
    per_username = int(settings.LADDER_LOGIN_FAILURES_PER_USERNAME)
    per_address = int(settings.LADDER_LOGIN_FAILURES_PER_ADDRESS)
    return [
        (f"{KEY_PREFIX}:user:{_digest(username.casefold())}", per_username),
        (f"{KEY_PREFIX}:addr:{_digest(address)}", per_address),
    ]


def _window_s() -> int:
    return max(1, int(settings.LADDER_LOGIN_WINDOW_S))


class LocalCounts:
    """The per-process fallback: the same counts, in memory, while Redis does not answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, tuple[int, float]] = {}  # key -> (count, expires at, monotonic)

    def _live(self, key: str, now: float) -> tuple[int, float] | None:
        entry = self._counts.get(key)
        if entry is not None and entry[1] <= now:
            del self._counts[key]
            return None
        return entry

    def add(self, key: str, window_s: int) -> None:
        now = time.monotonic()
        with self._lock:
            entry = self._live(key, now)
            count, expires = entry if entry is not None else (0, now + window_s)
            self._counts[key] = (count + 1, expires)

    def read(self, key: str) -> tuple[int, float]:
        """(count, seconds left in the window)."""
        now = time.monotonic()
        with self._lock:
            entry = self._live(key, now)
        return (0, 0.0) if entry is None else (entry[0], entry[1] - now)

    def clear(self, key: str) -> None:
        with self._lock:
            self._counts.pop(key, None)


local_counts = LocalCounts()
_last_fallback_log = 0.0


def _redis_client(key: str) -> tuple[redis.Redis, str] | None:
    """The Django cache's own Redis connection and the cache's full key (prefix and version)."""
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return None
    full_key = backend.make_and_validate_key(key)
    # Django's cache API has no atomic "create with expiry, then increment" nor a TTL read: both are
    # one MULTI on the cache's own client, so that the key can never outlive its window.
    client: redis.Redis = cast(Any, backend)._cache.get_client(full_key, write=True)
    return client, full_key


def _fallback(exc: Exception | None) -> None:
    global _last_fallback_log
    now = time.monotonic()
    if now - _last_fallback_log >= FALLBACK_LOG_EVERY_S:
        _last_fallback_log = now
        reason = f"Redis does not answer ({type(exc).__name__})" if exc else "the cache is not Redis"
        logger.warning("login throttling counts in this process only: %s", reason)


def _add(key: str, window_s: int) -> None:
    try:
        found = _redis_client(key)
        if found is not None:
            client, full_key = found
            pipe = client.pipeline(transaction=True)
            pipe.set(full_key, 0, ex=window_s, nx=True)
            pipe.incr(full_key)
            pipe.execute()
            return
        _fallback(None)
    except redis.RedisError as exc:
        _fallback(exc)
    local_counts.add(key, window_s)


def _read(key: str) -> tuple[int, float]:
    try:
        found = _redis_client(key)
        if found is not None:
            client, full_key = found
            pipe = client.pipeline(transaction=False)
            pipe.get(full_key)
            pipe.pttl(full_key)
            raw, ttl_ms = pipe.execute()
            return (int(raw or 0), max(0, int(ttl_ms)) / 1000.0)
        _fallback(None)
    except redis.RedisError as exc:
        _fallback(exc)
    return local_counts.read(key)


def _clear(key: str) -> None:
    try:
        found = _redis_client(key)
        if found is not None:
            client, full_key = found
            client.delete(full_key)
    except redis.RedisError as exc:
        _fallback(exc)
    local_counts.clear(key)


def login_retry_after_s(*, username: str, address: str) -> int | None:
    """Seconds until this user name and address may try again, or None when they may try now."""
    waits = []
    for key, limit in _limits(username=username, address=address):
        count, left_s = _read(key)
        if count >= limit:
            waits.append(left_s)
    if not waits:
        return None
    return max(1, math.ceil(max(waits)))


def login_failure_record(*, username: str, address: str) -> None:
    for key, _ in _limits(username=username, address=address):
        _add(key, _window_s())


def login_success_record(*, username: str) -> None:
    key, _ = _limits(username=username, address="")[0]
    _clear(key)


class ThrottledLoginFormMixin(AuthenticationForm):
    """An authentication form that counts its failures and refuses to check a throttled login."""

    retry_after_s: int | None = None

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if not (username and password):  # a field error: no password is checked, nothing to count
            return super().clean()
        address = client_address(self.request)
        retry_s = login_retry_after_s(username=username, address=address)
        if retry_s is not None:
            self.retry_after_s = retry_s
            logger.warning("login throttled for %s s (address %s)", retry_s, address)
            raise forms.ValidationError(RETRY_MESSAGE, code="throttled", params={"retry_s": retry_s})
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            login_failure_record(username=username, address=address)
            raise
        login_success_record(username=username)
        return cleaned


class ThrottledAuthenticationForm(ThrottledLoginFormMixin):
    pass


class ThrottledAdminAuthenticationForm(ThrottledLoginFormMixin, AdminAuthenticationForm):
    pass


def throttled_answer(response: HttpResponseBase, form: object) -> HttpResponseBase:
    """A refused (throttled) login is a 429 with Retry-After; the page still shows the form and why."""
    retry_s = getattr(form, "retry_after_s", None)
    if retry_s:
        response.status_code = 429
        response["Retry-After"] = str(retry_s)
    return response
