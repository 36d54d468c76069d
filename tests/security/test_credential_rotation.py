"""Rotating LADDER_CREDENTIAL_KEY: new key first, `ladder_credentials_rotate`, then the old key goes."""

from __future__ import annotations

import io
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command

from ladder import models as m
from ladder.security.crypto import CredentialDecryptionError

pytestmark = pytest.mark.django_db


def connection(connection_id: str, credential: str) -> m.Connection:
    row = m.Connection(id=connection_id, provider="claude", auth_type="oauth")
    row.set_credential(credential)
    row.save()
    return row


def test_it_re_encrypts_every_credential_with_the_new_key(settings: Any) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.LADDER_CREDENTIAL_KEY = old
    connection("a", "secret-a-0123456789")
    connection("b", "secret-b-0123456789")
    m.Connection.objects.create(id="keyless", provider="openrouter", keyless=True)

    settings.LADDER_CREDENTIAL_KEY = f"{new},{old}"
    out = io.StringIO()
    call_command("ladder_credentials_rotate", stdout=out)
    assert "re-encrypted 2 credential(s)" in out.getvalue()
    assert "secret-" not in out.getvalue()

    settings.LADDER_CREDENTIAL_KEY = new  # the old key is gone
    assert m.Connection.objects.get(pk="a").get_credential() == "secret-a-0123456789"
    assert m.Connection.objects.get(pk="b").get_credential() == "secret-b-0123456789"
    assert m.Connection.objects.get(pk="keyless").credential_ciphertext == ""
    settings.LADDER_CREDENTIAL_KEY = old
    with pytest.raises(CredentialDecryptionError):
        m.Connection.objects.get(pk="a").get_credential()


def test_it_changes_nothing_when_a_credential_cannot_be_opened(settings: Any) -> None:
    lost, kept, new = (Fernet.generate_key().decode() for _ in range(3))
    settings.LADDER_CREDENTIAL_KEY = lost
    connection("orphan", "secret-orphan-0123456789")
    settings.LADDER_CREDENTIAL_KEY = kept
    connection("fine", "secret-fine-0123456789")
    before = dict(m.Connection.objects.values_list("id", "credential_ciphertext"))

    settings.LADDER_CREDENTIAL_KEY = f"{new},{kept}"
    with pytest.raises(CommandError, match="opens the credential of orphan; nothing was re-encrypted"):
        call_command("ladder_credentials_rotate", stdout=io.StringIO())
    assert dict(m.Connection.objects.values_list("id", "credential_ciphertext")) == before
