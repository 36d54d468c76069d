from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import DataError, IntegrityError, transaction

from ladder.models import Connection

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("bad_id", ["", "has space", "a/b", "x" * 65, "trailing\n", "é"])
def test_it_refuses_a_bad_connection_id_with_a_clear_message(bad_id: str) -> None:
    with pytest.raises(ValidationError) as error:
        Connection(id=bad_id, provider="claude").full_clean()

    messages = " ".join(error.value.message_dict["id"])
    assert "letter, a digit, '.', '_', ':' or '-'" in messages or "blank" in messages or "64" in messages


@pytest.mark.parametrize("bad_id", ["has space", "a/b", "trailing\n", "x" * 65])
def test_it_refuses_a_bad_connection_id_in_the_database(bad_id: str) -> None:
    # PostgreSQL refuses the 65-character id as too long for varchar(64) before the check runs.
    with pytest.raises((IntegrityError, DataError)), transaction.atomic():
        Connection.objects.bulk_create([Connection(id=bad_id, provider="claude")])


@pytest.mark.parametrize("good_id", ["c1", "claude.max:team_1-a", "x" * 64])
def test_it_accepts_gateway_connection_ids(good_id: str) -> None:
    connection = Connection(id=good_id, provider="claude")
    connection.full_clean()
    connection.save()

    assert Connection.objects.filter(pk=good_id).exists()


def test_it_normalises_a_connection_auth_type() -> None:
    Connection.objects.create(id="c1", provider="claude", auth_type=" OAuth ")

    assert Connection.objects.get(pk="c1").auth_type == "oauth"


def test_it_refuses_a_models_value_that_is_not_a_list_of_ids() -> None:
    with pytest.raises(ValidationError, match="list of non-empty strings"):
        Connection(id="c1", provider="claude", models="claude-sonnet-4-5").full_clean()
    Connection(id="c2", provider="claude", models=["claude-sonnet-4-5"]).full_clean()
    Connection(id="c3", provider="claude", models=None).full_clean()


def test_it_keeps_an_empty_models_list_apart_from_every_model() -> None:
    # As in a state file: null serves every catalog model of the provider, [] none.
    connection = Connection(id="c1", provider="claude", models=[])
    connection.full_clean()
    connection.save()
    Connection.objects.create(id="c2", provider="claude", models=None)

    assert Connection.objects.get(pk="c1").models == []
    assert Connection.objects.get(pk="c2").models is None
