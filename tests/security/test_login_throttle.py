"""Login throttling on the dashboard and the admin login, counted in the real Redis (or, with Redis
down, in the process)."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from django.urls import reverse

from ladder.security import login_throttle
from ladder.security.redis_breaker import redis_forget_outages
from tests.dashboard.factories import PASSWORD

pytestmark = pytest.mark.django_db

DASHBOARD = reverse("ladder:login")
ADMIN = reverse("admin:login")
ADDRESS = "203.0.113.7"
OTHER_ADDRESS = "198.51.100.9"


@pytest.fixture(autouse=True)
def _limits(settings: Any) -> Iterator[None]:
    settings.LADDER_LOGIN_FAILURES_PER_USERNAME = 3
    settings.LADDER_LOGIN_FAILURES_PER_ADDRESS = 5
    settings.LADDER_LOGIN_WINDOW_S = 60
    settings.LADDER_TRUSTED_PROXY_HOPS = 0
    login_throttle.local_storage().reset()
    yield
    login_throttle.local_storage().reset()


@pytest.fixture
def counts(own_counts: tuple[redis.Redis, str]) -> tuple[redis.Redis, str]:
    return own_counts


@pytest.fixture
def password_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every password check the login forms make (django.contrib.auth.forms.authenticate)."""
    from django.contrib.auth import forms

    checked: list[str] = []
    real = forms.authenticate  # type: ignore[attr-defined]

    def counting(request: Any = None, **credentials: Any) -> Any:
        checked.append(credentials.get("username", ""))
        return real(request, **credentials)

    monkeypatch.setattr(forms, "authenticate", counting)
    return checked


def operator(username: str = "operator") -> User:
    return User.objects.create_user(username, f"{username}@example.test", PASSWORD, is_staff=True)


def attempt(
    client: Client, url: str, username: str, password: str, address: str = ADDRESS, forwarded: str = ""
) -> Any:
    environ = {"REMOTE_ADDR": address}
    if forwarded:
        environ["HTTP_X_FORWARDED_FOR"] = forwarded
    return client.post(url, {"username": username, "password": password}, **environ)  # type: ignore[arg-type]


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("url", [DASHBOARD, ADMIN], ids=["dashboard", "admin"])
def test_it_refuses_unchecked_after_too_many_failures_for_a_user_name(
    client: Client, counts: Any, password_checks: list[str], url: str
) -> None:
    operator()
    for _ in range(3):
        response = attempt(client, url, "operator", "wrong")
        assert response.status_code == 200  # the ordinary "wrong password" form
    assert len(password_checks) == 3

    response = attempt(client, url, "operator", PASSWORD)
    assert response.status_code == 429
    assert len(password_checks) == 3  # the right password was not even checked
    assert not logged_in(client)
    retry_s = int(response["Retry-After"])
    assert 1 <= retry_s <= 60
    page = response.content.decode()
    assert "Too many failed login attempts" in page
    assert f"try again in {retry_s} s" in page
    assert 'name="password"' in page  # the form is still there


def test_it_throttles_a_user_name_from_every_address(client: Client, counts: Any) -> None:
    operator()
    for _ in range(3):
        attempt(client, DASHBOARD, "operator", "wrong", ADDRESS)
    assert attempt(client, DASHBOARD, "operator", PASSWORD, OTHER_ADDRESS).status_code == 429
    # User names are compared case-insensitively: "OPERATOR" is not a fresh budget.
    assert attempt(client, DASHBOARD, "OPERATOR", "wrong", OTHER_ADDRESS).status_code == 429


def test_it_throttles_an_address_across_user_names(client: Client, counts: Any) -> None:
    operator("someone")
    for number in range(5):
        assert attempt(client, ADMIN, f"guess-{number}", "wrong").status_code == 200
    assert attempt(client, ADMIN, "someone", PASSWORD).status_code == 429
    # Another address is not affected, and logs in.
    response = attempt(client, ADMIN, "someone", PASSWORD, OTHER_ADDRESS)
    assert response.status_code == 302
    assert logged_in(client)


def test_a_successful_login_clears_its_user_name_count(client: Client, counts: Any) -> None:
    operator()
    for _ in range(2):
        attempt(client, DASHBOARD, "operator", "wrong")
    assert attempt(client, DASHBOARD, "operator", PASSWORD).status_code == 302
    client.logout()
    for _ in range(2):
        assert attempt(client, DASHBOARD, "operator", "wrong").status_code == 200
    assert attempt(client, DASHBOARD, "operator", PASSWORD).status_code == 302


def test_an_incomplete_form_is_not_counted(client: Client, counts: Any, password_checks: list[str]) -> None:
    operator()
    for _ in range(5):
        assert client.post(DASHBOARD, {"username": "operator", "password": ""}).status_code == 200
    assert password_checks == []
    assert attempt(client, DASHBOARD, "operator", PASSWORD).status_code == 302


def test_it_counts_the_address_the_trusted_proxy_saw(client: Client, counts: Any, settings: Any) -> None:
    settings.LADDER_TRUSTED_PROXY_HOPS = 1
    proxy = "10.0.0.2"
    for number in range(5):
        # A client may send any X-Forwarded-For; the proxy appends the address it saw.
        forwarded = f"192.0.2.{number}, {ADDRESS}"
        attempt(client, DASHBOARD, f"guess-{number}", "wrong", proxy, forwarded=forwarded)
    spoofed = f"192.0.2.99, {ADDRESS}"
    refused = attempt(client, DASHBOARD, "guess-9", "wrong", proxy, forwarded=spoofed)
    assert refused.status_code == 429
    other = attempt(client, DASHBOARD, "guess-9", "wrong", proxy, forwarded=OTHER_ADDRESS)
    assert other.status_code == 200  # behind the same proxy, another client is not throttled


def test_it_counts_in_redis_and_lets_the_key_expire_with_its_window(
    client: Client, counts: tuple[redis.Redis, str], settings: Any
) -> None:
    settings.LADDER_LOGIN_WINDOW_S = 2
    redis_client, prefix = counts
    operator()
    for _ in range(3):
        attempt(client, DASHBOARD, "operator", "wrong")
    keys = sorted(key.decode() for key in redis_client.scan_iter(f"{prefix}:*login-failures/*"))
    assert len(keys) == 2  # one per user name, one per address
    counted = {key.split("login-failures/")[1].split("/")[0]: int(redis_client.get(key) or 0) for key in keys}
    assert counted == {"user": 3, "addr": 3}
    assert all(0 < redis_client.pttl(key) <= 2000 for key in keys)
    assert attempt(client, DASHBOARD, "operator", PASSWORD).status_code == 429

    deadline = time.monotonic() + 10
    while any(redis_client.exists(key) for key in keys) and time.monotonic() < deadline:
        time.sleep(0.1)  # Redis expires the keys when the window ends
    assert not any(redis_client.exists(key) for key in keys)
    assert attempt(client, DASHBOARD, "operator", PASSWORD).status_code == 302


def test_every_web_process_sees_the_same_counts(client: Client, counts: Any) -> None:
    """The counts live in Redis, not in the process: forgetting this process's memory changes nothing."""
    operator()
    for _ in range(3):
        attempt(client, DASHBOARD, "operator", "wrong")
    assert not login_throttle.local_storage().storage
    assert attempt(client, DASHBOARD, "operator", PASSWORD).status_code == 429


@pytest.fixture
def redis_down(settings: Any) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once the probe closes
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    redis_forget_outages()


def test_with_redis_down_each_process_still_throttles(
    client: Client, redis_down: None, caplog: pytest.LogCaptureFixture
) -> None:
    operator()
    operator("colleague")
    with caplog.at_level(logging.WARNING, logger="ladder.security.login_throttle"):
        for _ in range(3):
            assert attempt(client, ADMIN, "operator", "wrong").status_code == 200
        refused = attempt(client, ADMIN, "operator", PASSWORD)
    assert refused.status_code == 429  # not failing open
    assert "counts in this process only: Redis does not answer" in caplog.text
    # Nobody else is locked out: another operator logs in while Redis is down.
    assert attempt(client, ADMIN, "colleague", PASSWORD, OTHER_ADDRESS).status_code == 302
    assert logged_in(client)


def test_client_address_reads_only_what_trusted_proxies_appended(settings: Any) -> None:
    forwarded = "1.1.1.1, 2.2.2.2, 3.3.3.3"
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=forwarded)
    settings.LADDER_TRUSTED_PROXY_HOPS = 0
    assert login_throttle.client_address(request) == "10.0.0.2"
    settings.LADDER_TRUSTED_PROXY_HOPS = 1
    assert login_throttle.client_address(request) == "3.3.3.3"
    settings.LADDER_TRUSTED_PROXY_HOPS = 2
    assert login_throttle.client_address(request) == "2.2.2.2"
    settings.LADDER_TRUSTED_PROXY_HOPS = 5  # fewer entries than proxies: the header is not trusted
    assert login_throttle.client_address(request) == "10.0.0.2"
