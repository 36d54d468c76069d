"""Importing a CLI's credential file (ladder.services.credentials): who may own it, and a bad file
named by its field with nothing saved."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder.models import Connection
from ladder.services.credentials import credential_import
from tests.services.test_credential_refresh import make_connection

pytestmark = pytest.mark.django_db


def test_a_rotating_kind_has_no_default_owner(upstream: FakeUpstream, control: FakeUpstreamControl) -> None:
    make_connection(upstream, "c1", "codex-chatgpt")
    minted = control.mint_login("codex-chatgpt")

    with pytest.raises(ValidationError) as caught:
        credential_import(connection_id="c1", text=json.dumps(minted["file"]), owner=None)

    assert "credential_owner" in caught.value.message_dict
    assert "log in once more for the ladder" in caught.value.message_dict["credential_owner"][0]
    assert not Connection.objects.get(pk="c1").has_credential


def test_google_kinds_default_to_the_ladder(upstream: FakeUpstream, control: FakeUpstreamControl) -> None:
    make_connection(upstream, "c1", "gemini-cli")
    minted = control.mint_login("gemini-cli")

    credential_import(connection_id="c1", text=json.dumps(minted["file"]), owner=None)

    assert Connection.objects.get(pk="c1").credential_owner == "ladder"


def test_a_bad_file_names_the_field_and_saves_nothing(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection(upstream, "c1", "claude-oauth")
    document = control.mint_login("claude-oauth")["file"]
    document["claudeAiOauth"]["expiresAt"] = "soon"

    with pytest.raises(ValidationError) as caught:
        credential_import(connection_id="c1", text=json.dumps(document), owner="ladder")

    assert caught.value.message_dict == {
        "credential_file": ["claudeAiOauth.expiresAt: expected a number of milliseconds"]
    }
    row = Connection.objects.get(pk="c1")
    assert (row.has_credential, row.has_refresh_token, row.credential_expires_at) == (False, False, None)
