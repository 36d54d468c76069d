from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import OperationalError
from django.db.models import QuerySet

from ladder import models as m
from ladder.services.tokens import (
    gateway_token_authenticate,
    gateway_token_create,
    gateway_token_revoke,
)

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)


def authenticated_id(plaintext: str) -> int | None:
    found = gateway_token_authenticate(plaintext=plaintext, now=NOW)
    return None if found is None else found.id


def test_it_stores_only_the_sha256_of_the_value() -> None:
    token, plaintext = gateway_token_create(name="gw", scope_resolve=True, scope_report=False)

    stored = m.GatewayToken.objects.get(pk=token.pk)
    assert stored.token_hash == hashlib.sha256(plaintext.encode()).hexdigest()
    assert plaintext.startswith("olr_")
    assert len(plaintext) > 40
    assert stored.prefix == plaintext[:12]
    assert (stored.scope_resolve, stored.scope_report) == (True, False)
    assert plaintext not in {str(value) for value in m.GatewayToken.objects.values().get().values()}


def test_it_generates_a_new_value_each_time() -> None:
    assert gateway_token_create(name="a")[1] != gateway_token_create(name="b")[1]


def test_it_takes_a_given_value() -> None:
    token, plaintext = gateway_token_create(name="demo", value="demo-token-0123456789")

    assert plaintext == "demo-token-0123456789"
    assert authenticated_id(plaintext) == token.pk


@pytest.mark.parametrize("value", ["short", "has a space in it!!", "x" * 257, "ünïcödé-ünïcödé-ünïcödé"])
def test_it_refuses_a_weak_or_unprintable_value(value: str) -> None:
    with pytest.raises(ValidationError) as error:
        gateway_token_create(name="demo", value=value)

    assert "value" in error.value.message_dict


def test_it_refuses_a_duplicate_name_or_value() -> None:
    gateway_token_create(name="gw", value="same-value-0123456789")

    with pytest.raises(ValidationError) as by_name:
        gateway_token_create(name="gw")
    with pytest.raises(ValidationError) as by_value:
        gateway_token_create(name="other", value="same-value-0123456789")

    assert "name" in by_name.value.message_dict
    assert "value" in by_value.value.message_dict


def test_it_refuses_a_token_without_a_scope_or_a_name() -> None:
    with pytest.raises(ValidationError):
        gateway_token_create(name="gw", scope_resolve=False, scope_report=False)
    with pytest.raises(ValidationError):
        gateway_token_create(name="  ")


def test_it_authenticates_only_live_tokens() -> None:
    token, plaintext = gateway_token_create(name="gw")

    assert authenticated_id(plaintext) == token.pk
    assert gateway_token_authenticate(plaintext=plaintext + "x", now=NOW) is None
    assert gateway_token_revoke(token_ids=[token.pk], now=NOW) == 1
    assert gateway_token_authenticate(plaintext=plaintext, now=NOW) is None


def test_it_keeps_the_first_revocation_time() -> None:
    token, _ = gateway_token_create(name="gw")
    gateway_token_revoke(token_ids=[token.pk], now=NOW)

    assert gateway_token_revoke(token_ids=[token.pk], now=NOW + timedelta(hours=1)) == 0
    assert m.GatewayToken.objects.get().revoked_at == NOW


def test_it_writes_last_used_at_at_most_once_a_minute(django_assert_num_queries: object) -> None:
    token, plaintext = gateway_token_create(name="gw")

    gateway_token_authenticate(plaintext=plaintext, now=NOW)
    gateway_token_authenticate(plaintext=plaintext, now=NOW + timedelta(seconds=59))
    assert m.GatewayToken.objects.get().last_used_at == NOW

    gateway_token_authenticate(plaintext=plaintext, now=NOW + timedelta(seconds=60))
    assert m.GatewayToken.objects.get().last_used_at == NOW + timedelta(seconds=60)


def test_it_loads_the_fields_it_reads_with_their_time_zone() -> None:
    token, plaintext = gateway_token_create(name="gw", scope_report=False)
    gateway_token_authenticate(plaintext=plaintext, now=NOW)

    found = gateway_token_authenticate(plaintext=plaintext, now=NOW + timedelta(seconds=1))
    assert found is not None
    assert (found.id, found.name, found.scope_resolve, found.scope_report) == (token.pk, "gw", True, False)
    assert found.last_used_at == NOW
    assert found.last_used_at.tzinfo is not None


def test_it_authenticates_when_last_used_at_cannot_be_written(monkeypatch: pytest.MonkeyPatch) -> None:
    token, plaintext = gateway_token_create(name="gw")

    def locked(self: object, **kwargs: object) -> int:
        raise OperationalError("database is locked")

    # SQLite under another writer's lock: the bookkeeping write fails, access does not.
    monkeypatch.setattr(QuerySet, "update", locked)
    assert authenticated_id(plaintext) == token.pk
