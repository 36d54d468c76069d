"""Connection credentials encrypted at rest (Fernet).

The key lives in settings.LADDER_CREDENTIAL_KEY and is read at every call, never at import time, so
that tests and key rotation see the current value. Several comma-separated keys may be given: the
first encrypts, every one of them decrypts (rotation without downtime).
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

KEY_HELP = (
    "generate one with: python -c 'from cryptography.fernet import Fernet; "
    "print(Fernet.generate_key().decode())' and set it in the environment"
)


class CredentialDecryptionError(Exception):
    """A stored credential cannot be decrypted with the configured key(s)."""


def credential_cipher() -> MultiFernet:
    raw = settings.LADDER_CREDENTIAL_KEY or ""
    keys = [key.strip() for key in str(raw).split(",") if key.strip()]
    if not keys:
        raise ImproperlyConfigured(
            f"LADDER_CREDENTIAL_KEY is not set: connection credentials are encrypted with it; {KEY_HELP}"
        )
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except (ValueError, TypeError) as exc:
        raise ImproperlyConfigured(
            f"LADDER_CREDENTIAL_KEY is not a valid Fernet key (32 url-safe base64-encoded bytes); {KEY_HELP}"
        ) from exc


def encrypt_credential(plaintext: str) -> str:
    return credential_cipher().encrypt(plaintext.encode("utf-8")).decode("ascii")


def decrypt_credential(token: str) -> str:
    try:
        return credential_cipher().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, UnicodeError) as exc:
        raise CredentialDecryptionError(
            "the stored credential cannot be decrypted with LADDER_CREDENTIAL_KEY "
            "(was the key changed without keeping the old one in the list?)"
        ) from exc


def rotate_credential(token: str) -> str:
    """The same credential encrypted with the first key (after a new key was put first in the list)."""
    try:
        return credential_cipher().rotate(token.encode("ascii")).decode("ascii")
    except (InvalidToken, UnicodeError) as exc:
        raise CredentialDecryptionError(
            "the stored credential cannot be decrypted with any key of LADDER_CREDENTIAL_KEY"
        ) from exc
