from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.db import connection as db_connection
from pytest_django.fixtures import Settings as SettingsWrapper

from ladder.models import Connection
from ladder.security.crypto import CredentialDecryptionError, decrypt_credential, encrypt_credential

SECRET = "sk-ant-oat01-PLAINTEXT-secret-value"


def test_it_round_trips_a_credential() -> None:
    token = encrypt_credential(SECRET)

    assert token != SECRET
    assert decrypt_credential(token) == SECRET


@pytest.mark.django_db
def test_it_stores_the_credential_encrypted_at_rest() -> None:
    connection = Connection(id="c1", provider="claude", auth_type="oauth")
    connection.set_credential(SECRET)
    connection.save()

    with db_connection.cursor() as cursor:
        cursor.execute("SELECT credential_ciphertext FROM ladder_connection WHERE id = %s", ["c1"])
        (raw,) = cursor.fetchone()
    assert SECRET not in raw
    assert raw.startswith("gAAAA")  # a Fernet token
    assert Connection.objects.get(pk="c1").get_credential() == SECRET


@pytest.mark.django_db
def test_it_clears_a_credential() -> None:
    connection = Connection(id="c1", provider="claude")
    connection.set_credential(SECRET)
    connection.set_credential(None)

    assert not connection.has_credential
    assert connection.get_credential() is None


def test_it_explains_a_missing_key(settings: SettingsWrapper) -> None:
    settings.LADDER_CREDENTIAL_KEY = ""

    with pytest.raises(ImproperlyConfigured, match="LADDER_CREDENTIAL_KEY is not set"):
        encrypt_credential(SECRET)


def test_it_explains_an_invalid_key(settings: SettingsWrapper) -> None:
    settings.LADDER_CREDENTIAL_KEY = "not-a-fernet-key"

    with pytest.raises(ImproperlyConfigured, match="not a valid Fernet key"):
        encrypt_credential(SECRET)


def test_it_reads_the_key_at_call_time(settings: SettingsWrapper) -> None:
    token = encrypt_credential(SECRET)
    settings.LADDER_CREDENTIAL_KEY = Fernet.generate_key().decode()

    with pytest.raises(CredentialDecryptionError, match="cannot be decrypted"):
        decrypt_credential(token)


def test_it_decrypts_with_an_old_key_kept_after_rotation(settings: SettingsWrapper) -> None:
    old_key = settings.LADDER_CREDENTIAL_KEY
    token = encrypt_credential(SECRET)
    new_key = Fernet.generate_key().decode()
    settings.LADDER_CREDENTIAL_KEY = f"{new_key},{old_key}"

    assert decrypt_credential(token) == SECRET
    settings.LADDER_CREDENTIAL_KEY = new_key
    assert decrypt_credential(encrypt_credential(SECRET)) == SECRET
