from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError

from ladder.models import Connection, LadderConfiguration, StateVersion
from ladder.selectors.snapshot import state_version_get
from ladder.services import state

pytestmark = pytest.mark.django_db


def test_it_bumps_the_state_version() -> None:
    before = state_version_get()

    assert state.bump_state_version() == before + 1
    assert state.bump_state_version() == before + 2
    assert state_version_get() == before + 2


def test_it_recreates_a_missing_state_version_row() -> None:
    StateVersion.objects.all().delete()

    assert state.bump_state_version() == 1
    assert StateVersion.objects.get().value == 1


def test_it_updates_the_configuration_and_bumps_the_version() -> None:
    before = state_version_get()

    configuration = state.configuration_update(exit_cutoff_pct=3, rung_budget_usd={"cheap": 5.0})

    assert configuration.exit_cutoff_pct == 3.0
    assert LadderConfiguration.load().rung_budget_usd == {"cheap": 5.0}
    assert state_version_get() == before + 1


def test_it_refuses_an_invalid_configuration_without_writing() -> None:
    before = state_version_get()

    with pytest.raises(ValidationError) as error:
        state.configuration_update(exit_cutoff_pct=101, rung_budget_usd={"gold": 1})

    assert "exit_cutoff_pct" in error.value.message_dict
    assert "rung_budget_usd" in error.value.message_dict
    assert LadderConfiguration.load().exit_cutoff_pct == 2.0
    assert state_version_get() == before


def test_it_refuses_an_unknown_configuration_setting() -> None:
    with pytest.raises(ValidationError) as error:
        state.configuration_update(ladder_enabled=False)

    assert "unknown setting" in error.value.message_dict["ladder_enabled"][0]


def test_it_sets_and_clears_a_connection_credential() -> None:
    Connection.objects.create(id="c1", provider="claude", auth_type="oauth")
    before = state_version_get()

    state.connection_set_credential(connection_id="c1", credential="sk-secret")

    stored = Connection.objects.get(pk="c1")
    assert stored.get_credential() == "sk-secret"
    assert "sk-secret" not in stored.credential_ciphertext
    assert state_version_get() == before + 1

    state.connection_set_credential(connection_id="c1", credential=None)
    assert Connection.objects.get(pk="c1").get_credential() is None


@pytest.mark.parametrize("reason", ["auth_failed", "needs_reauth"])
def test_a_new_credential_clears_the_reason_and_the_old_logins_refresh_token(reason: str) -> None:
    Connection.objects.create(
        id="c1",
        provider="claude",
        auth_type="oauth",
        enabled=False,
        disabled_reason=reason,
        refresh_ciphertext="old-family",
        credential_expires_at=datetime(2026, 1, 1, tzinfo=UTC),
    )

    state.connection_set_credential(connection_id="c1", credential="sk-new")

    stored = Connection.objects.get(pk="c1")
    assert (stored.enabled, stored.disabled_reason) == (True, None)  # DESIGN L7
    assert (stored.refresh_ciphertext, stored.credential_expires_at) == ("", None)


def test_it_refuses_a_credential_for_an_unknown_connection() -> None:
    with pytest.raises(Connection.DoesNotExist):
        state.connection_set_credential(connection_id="nope", credential="x")


@pytest.mark.parametrize("credential", ["sk-secret\n", " sk-secret", "sk-sec\x00ret", "sk-secret\t"])
def test_it_refuses_a_credential_with_control_characters_or_surrounding_whitespace(credential: str) -> None:
    Connection.objects.create(id="c1", provider="claude", auth_type="oauth")

    with pytest.raises(ValidationError) as error:
        state.connection_set_credential(connection_id="c1", credential=credential)

    assert "credential" in error.value.message_dict
    assert "sk-sec" not in str(error.value)
    assert Connection.objects.get(pk="c1").get_credential() is None
