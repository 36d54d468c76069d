"""Login throttling for the admin and the dashboard login.

Failed logins are counted per user name and per client address. Past
LADDER_LOGIN_FAILURES_PER_USERNAME failures for one name, or LADDER_LOGIN_FAILURES_PER_ADDRESS from
one address, within LADDER_LOGIN_WINDOW_S of the first failure, every further attempt is refused
without checking the password until that window ends: the form says how long to wait and the answer
is a 429 with Retry-After. A successful login clears its user name's count (not its address's: an
attacker's own account must not wash an address clean).

The counts live in Redis (ladder.security.ratelimit), shared by every web process, one key per name
or address that expires with its window. When Redis does not answer, each process counts in its own
memory instead (and logs it): the limits then hold per process, so an attacker gains at most one
limit per web process and thread pool while Redis is down, and no operator is locked out, nor let in
unchecked, because Redis is.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponseBase
from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage
from limits.strategies import FixedWindowRateLimiter

from ladder.security.ratelimit import window_left_s, with_shared_limits
from ladder.security.redis_breaker import warn_now_and_then

logger = logging.getLogger(__name__)

KEY_PREFIX = "login-failures"
T = TypeVar("T")
RETRY_MESSAGE = (
    "Too many failed login attempts for this user name or from this address. "
    "The password was not checked; try again in %(retry_s)d s."
)


def forwarded_address(request: HttpRequest) -> str | None:
    """With LADDER_TRUSTED_PROXY_HOPS proxies in front, the entry of X-Forwarded-For that the outermost
    trusted proxy appended (what a client sends itself sits further left and is ignored); else None."""
    hops = int(settings.LADDER_TRUSTED_PROXY_HOPS)
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    forwarded = [part for part in forwarded if part]
    return forwarded[-hops] if 0 < hops <= len(forwarded) else None


def client_address(request: HttpRequest | None) -> str:
    """The client's address: the forwarded one behind trusted proxies, else REMOTE_ADDR."""
    if request is None:
        return "unknown"
    return forwarded_address(request) or str(request.META.get("REMOTE_ADDR") or "unknown")


def _digest(value: str) -> str:
    # Hashed: a user name is arbitrary text, and Redis should not keep a list of them in clear.
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _limits(*, username: str, address: str) -> list[tuple[RateLimitItemPerSecond, tuple[str, ...]]]:
    window_s = max(1, int(settings.LADDER_LOGIN_WINDOW_S))
    per_username = RateLimitItemPerSecond(int(settings.LADDER_LOGIN_FAILURES_PER_USERNAME), window_s)
    per_address = RateLimitItemPerSecond(int(settings.LADDER_LOGIN_FAILURES_PER_ADDRESS), window_s)
    return [
        (per_username, (KEY_PREFIX, "user", _digest(username.casefold()))),
        (per_address, (KEY_PREFIX, "addr", _digest(address))),
    ]


@functools.cache
def local_storage() -> MemoryStorage:
    """This process's own counts, while Redis does not answer."""
    return MemoryStorage()


def _counted(count: Callable[[FixedWindowRateLimiter], T]) -> T:
    def locally() -> T:
        warn_now_and_then(logger, "login throttling counts in this process only: Redis does not answer")
        return count(FixedWindowRateLimiter(local_storage()))

    return with_shared_limits(count, without=locally)


def login_retry_after_s(*, username: str, address: str) -> int | None:
    """Seconds until this user name and address may try again, or None when they may try now."""

    def wait_s(limiter: FixedWindowRateLimiter) -> int | None:
        limits = _limits(username=username, address=address)
        waits = [window_left_s(limiter, item, *key) for item, key in limits if not limiter.test(item, *key)]
        return max(waits, default=None)

    return _counted(wait_s)


def login_failure_record(*, username: str, address: str) -> None:
    def hit(limiter: FixedWindowRateLimiter) -> None:
        for item, key in _limits(username=username, address=address):
            limiter.hit(item, *key)

    _counted(hit)


def login_success_record(*, username: str) -> None:
    item, key = _limits(username=username, address="")[0]
    _counted(lambda limiter: limiter.clear(item, *key))
    FixedWindowRateLimiter(local_storage()).clear(item, *key)  # counted here during an outage


class ThrottledAuthenticationForm(AuthenticationForm):
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


class ThrottledAdminAuthenticationForm(ThrottledAuthenticationForm, AdminAuthenticationForm):
    pass


def throttled_answer(response: HttpResponseBase, form: object) -> HttpResponseBase:
    """A refused (throttled) login is a 429 with Retry-After; the page still shows the form and why."""
    retry_s = getattr(form, "retry_after_s", None)
    if retry_s:
        response.status_code = 429
        response["Retry-After"] = str(retry_s)
    return response
