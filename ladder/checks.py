"""Deployment checks of our own, run by `manage.py check --deploy` beside Django's (make check-deploy)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.core.exceptions import ImproperlyConfigured

from ladder.security.crypto import credential_cipher


@register(Tags.security, deploy=True)
def credential_key_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    try:
        credential_cipher()
    except ImproperlyConfigured as exc:
        return [Error(str(exc), id="ladder.E001")]
    return []


@register(Tags.security, deploy=True)
def csrf_trusted_origins_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    plain = [origin for origin in settings.CSRF_TRUSTED_ORIGINS if not origin.startswith("https://")]
    if not plain:
        return []
    return [
        Warning(
            f"CSRF_TRUSTED_ORIGINS trusts plain-HTTP origins: {', '.join(plain)}",
            hint="Behind the TLS proxy every origin is https://<host>.",
            id="ladder.W002",
        )
    ]
