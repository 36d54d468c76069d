"""The production profile of omniroute/settings.py, read from the environment by real processes.

Each test starts `manage.py` with an environment of its own: the profile is decided when settings are
imported, so an in-process override would test nothing.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[2]
HOST = "ladder.example.com"
CLEARED = (
    "SECRET_KEY",
    "SECRET_KEY_FALLBACKS",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "DEBUG",
    "LADDER_CREDENTIAL_KEY",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_PROXY_SSL_HEADER",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "DATABASE_URL",
)


def production_env(tmp_path: Path, **overrides: str | None) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in CLEARED}
    env.update(
        DJANGO_SETTINGS_MODULE="omniroute.settings",
        SQLITE_PATH=str(tmp_path / "deploy.sqlite3"),
        ALLOWED_HOSTS=HOST,
        CSRF_TRUSTED_ORIGINS=f"https://{HOST}",
        SECRET_KEY=secrets.token_urlsafe(50),
        LADDER_CREDENTIAL_KEY=Fernet.generate_key().decode(),
    )
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return manage(env, "check", "--deploy", "--fail-level", "WARNING")


def test_it_passes_check_deploy_with_the_production_environment(tmp_path: Path) -> None:
    result = check_deploy(production_env(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize(
    ("secret_key", "problem"),
    [
        (None, "0 characters"),
        ("short-but-random-Zq81", "21 characters"),
        ("a" * 60, "distinct characters"),
        ("django-insecure-" + secrets.token_urlsafe(50), "django-insecure-"),
    ],
    ids=["missing", "short", "repetitive", "django-insecure"],
)
def test_it_refuses_a_weak_secret_key_in_production(
    tmp_path: Path, secret_key: str | None, problem: str
) -> None:
    result = check_deploy(production_env(tmp_path, SECRET_KEY=secret_key))
    assert result.returncode != 0
    assert "SECRET_KEY is not strong enough for production" in result.stderr
    assert problem in result.stderr


def test_it_refuses_a_weak_fallback_key_in_production(tmp_path: Path) -> None:
    result = check_deploy(production_env(tmp_path, SECRET_KEY_FALLBACKS=f"{secrets.token_urlsafe(50)},old"))
    assert result.returncode != 0
    assert "SECRET_KEY_FALLBACKS is not strong enough" in result.stderr


def test_it_fails_check_deploy_without_a_credential_key(tmp_path: Path) -> None:
    result = check_deploy(production_env(tmp_path, LADDER_CREDENTIAL_KEY=None))
    assert result.returncode != 0
    assert "ladder.E001" in result.stderr
    assert "LADDER_CREDENTIAL_KEY is not set" in result.stderr


def test_it_fails_check_deploy_with_a_plain_http_trusted_origin(tmp_path: Path) -> None:
    result = check_deploy(production_env(tmp_path, CSRF_TRUSTED_ORIGINS=f"http://{HOST}"))
    assert result.returncode != 0
    assert "ladder.W002" in result.stderr


def test_it_fails_check_deploy_when_an_operator_turns_https_off(tmp_path: Path) -> None:
    env = production_env(tmp_path, SECURE_SSL_REDIRECT="false", SESSION_COOKIE_SECURE="false")
    result = check_deploy(env)
    assert result.returncode != 0
    assert "security.W008" in result.stderr
    assert "security.W012" in result.stderr


# What a browser meets: requests made through Django's test client inside a process of that profile.
PROBE = """
import json
from django.conf import settings
from django.test import Client

client = Client()
host = settings.ALLOWED_HOSTS[0]
plain = client.get("/login/", HTTP_HOST=host)
health = client.get("/healthz", HTTP_HOST=host)
proxied = client.get("/login/", HTTP_HOST=host, HTTP_X_FORWARDED_PROTO="https")
csrf = proxied.cookies.get("csrftoken")
print(json.dumps({
    "plain": [plain.status_code, plain.get("Location")],
    "healthz": health.status_code,
    "proxied": proxied.status_code,
    "hsts": proxied.get("Strict-Transport-Security"),
    "csrf_cookie_secure": bool(csrf and csrf["secure"]),
    "session_cookie_secure": settings.SESSION_COOKIE_SECURE,
}))
"""


def probe(env: dict[str, str]) -> dict[str, object]:
    result = manage(env, "shell", "-c", PROBE)
    assert result.returncode == 0, result.stderr
    answer: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return answer


def test_it_serves_production_over_https_only(tmp_path: Path) -> None:
    answer = probe(production_env(tmp_path))
    assert answer["plain"] == [301, f"https://{HOST}/login/"]
    assert answer["healthz"] == 200  # load-balancer probes reach a web process over plain HTTP
    assert answer["proxied"] == 200  # the TLS proxy's X-Forwarded-Proto: https is trusted
    assert answer["hsts"] == "max-age=31536000; includeSubDomains"
    assert answer["csrf_cookie_secure"] is True
    assert answer["session_cookie_secure"] is True


def test_it_keeps_plain_http_for_loopback_hosts(tmp_path: Path) -> None:
    """`make run` and the tests: loopback names only, no SECRET_KEY, plain HTTP works."""
    env = production_env(
        tmp_path, ALLOWED_HOSTS="127.0.0.1,localhost", SECRET_KEY=None, CSRF_TRUSTED_ORIGINS=None
    )
    answer = probe(env)
    assert answer["plain"] == [200, None]
    assert answer["hsts"] is None
    assert answer["csrf_cookie_secure"] is False
    assert answer["session_cookie_secure"] is False
