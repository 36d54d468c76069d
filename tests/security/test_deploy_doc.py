"""docs/DEPLOY.md names only settings and environment variables that omniroute/settings.py has."""

from __future__ import annotations

import re
from pathlib import Path

from omniroute import settings as settings_module

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "docs" / "DEPLOY.md"
NAME = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
NOT_SETTINGS = {"DJANGO_SETTINGS_MODULE"}


def test_every_name_in_the_deploy_doc_is_a_setting_or_one_of_its_variables() -> None:
    source = (ROOT / "omniroute" / "settings.py").read_text()
    names = set(NAME.findall(DEPLOY.read_text())) - NOT_SETTINGS
    unknown = sorted(
        name for name in names if not hasattr(settings_module, name) and f'"{name}"' not in source
    )
    assert not unknown, f"docs/DEPLOY.md names what omniroute/settings.py does not have: {unknown}"
    assert len(names) > 30


def test_the_deploy_doc_names_every_security_variable_of_the_production_profile() -> None:
    text = DEPLOY.read_text()
    for name in (
        "SECRET_KEY", "SECRET_KEY_FALLBACKS", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS",
        "SECURE_PROXY_SSL_HEADER", "SECURE_SSL_REDIRECT", "SECURE_REDIRECT_EXEMPT", "SECURE_HSTS_SECONDS",
        "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "LADDER_CREDENTIAL_KEY", "LADDER_TRUSTED_PROXY_HOPS",
        "LADDER_LOGIN_WINDOW_S",
    ):  # fmt: skip
        assert f"`{name}`" in text, name
