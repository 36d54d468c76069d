"""The Redis outage breaker: a failed URL is left alone for a while, and an outage's warning is said
once a minute, not once a request."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from ladder.security import redis_breaker

DOWN = "redis://127.0.0.1:1/0"
UP = "redis://127.0.0.1:6379/0"


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    redis_breaker.redis_forget_outages()
    yield
    redis_breaker.redis_forget_outages()


def test_it_leaves_a_failed_url_alone_for_the_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    redis_breaker.redis_failed(DOWN)
    assert redis_breaker.redis_down(DOWN)
    assert not redis_breaker.redis_down(UP)  # another Redis is not held to it

    monkeypatch.setattr(redis_breaker, "OUTAGE_BACKOFF_S", 0.0)
    redis_breaker.redis_failed(DOWN)
    assert not redis_breaker.redis_down(DOWN)  # the backoff is over: tried again


def test_it_forgets_outages_when_told() -> None:
    redis_breaker.redis_failed(DOWN)
    redis_breaker.redis_forget_outages()
    assert not redis_breaker.redis_down(DOWN)


def test_it_warns_once_a_minute_per_message(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    log = logging.getLogger("tests.breaker")
    with caplog.at_level(logging.WARNING, logger="tests.breaker"):
        for _ in range(3):
            redis_breaker.warn_now_and_then(log, "not enforced")
        redis_breaker.warn_now_and_then(log, "counted here")
        monkeypatch.setattr(redis_breaker, "WARN_EVERY_S", 0.0)  # a minute later
        redis_breaker.warn_now_and_then(log, "not enforced")
    assert [r.getMessage() for r in caplog.records] == ["not enforced", "counted here", "not enforced"]


def test_it_shares_one_client_per_url_and_timeout() -> None:
    first = redis_breaker.redis_client_for(UP, timeout_s=0.25)
    assert redis_breaker.redis_client_for(UP, timeout_s=0.25) is first
    assert redis_breaker.redis_client_for(UP, timeout_s=0.5) is not first
