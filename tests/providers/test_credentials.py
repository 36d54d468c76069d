"""The CLIs' credential files: each kind's shape read, and a bad file named by its field."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from devtools.fakeupstream.tokens import Family, cli_file
from ladder.domain.credentials import REFRESHABLE_KINDS
from ladder.providers.credentials import FILES, CredentialFileError, jwt_expiry, parse_credential_file

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
EXPIRES = NOW + timedelta(hours=8)


def file_of(kind: str, auth_method: str = "social") -> dict:
    family = Family(id="f1", kind=kind, account_id="acct-1", lifetime_s=8 * 3600, auth_method=auth_method)
    if kind == "codex-chatgpt":
        from devtools.fakeupstream.tokens import _jwt

        access = _jwt({"exp": int(EXPIRES.timestamp())})
    else:
        access = "access-secret-value"
    return cli_file(family, access, "refresh-secret-value", EXPIRES)


@pytest.mark.parametrize(
    ("kind", "account"),
    [
        ("claude-oauth", None),
        ("codex-chatgpt", "acct-1"),
        ("gemini-cli", "acct-1@example.com"),
        ("antigravity", "acct-1@example.com"),
        ("kiro", "arn:aws:codewhisperer:us-east-1:000000000000:profile/acct-1"),
    ],
)
def test_it_reads_each_clis_file(kind: str, account: str | None) -> None:
    credential = parse_credential_file(kind, json.dumps(file_of(kind)), now=NOW)

    assert credential.refresh_token == "refresh-secret-value"
    assert credential.account_id == account
    assert credential.expires_at is not None
    assert abs((credential.expires_at - EXPIRES).total_seconds()) < 1
    assert "secret" not in repr(credential)


def test_it_reads_kiro_idc_with_its_client() -> None:
    credential = parse_credential_file("kiro", json.dumps(file_of("kiro", "idc")), now=NOW)

    assert credential.refresh_params["auth_method"] == "idc"
    assert credential.refresh_params["client_id"] == "fake-client-f1"
    assert credential.params["profile_arn"].endswith("/acct-1")


def test_it_reads_codex_expiry_from_the_jwt_and_account_from_its_claim() -> None:
    document = file_of("codex-chatgpt")
    del document["tokens"]["account_id"]
    from devtools.fakeupstream.tokens import CODEX_AUTH_CLAIM, _jwt

    document["tokens"]["access_token"] = _jwt(
        {"exp": int(EXPIRES.timestamp()), CODEX_AUTH_CLAIM: {"chatgpt_account_id": "acct-9"}}
    )
    credential = parse_credential_file("codex-chatgpt", json.dumps(document), now=NOW)

    assert credential.account_id == "acct-9"
    assert credential.params == {"account_id": "acct-9"}
    assert jwt_expiry(credential.access_token) == EXPIRES


@pytest.mark.parametrize(
    ("kind", "change", "message"),
    [
        (
            "claude-oauth",
            lambda d: d["claudeAiOauth"].update(expiresAt="tomorrow"),
            "claudeAiOauth.expiresAt: expected a number of milliseconds",
        ),
        (
            "claude-oauth",
            lambda d: d["claudeAiOauth"].update(expiresAt=1_780_000_000),
            "claudeAiOauth.expiresAt: expected a number of milliseconds since 1970",
        ),
        ("claude-oauth", lambda d: d.pop("claudeAiOauth"), "claudeAiOauth: missing"),
        (
            "claude-oauth",
            lambda d: d["claudeAiOauth"].pop("accessToken"),
            "claudeAiOauth.accessToken: missing",
        ),
        (
            "codex-chatgpt",
            lambda d: d["tokens"].update(access_token="not-a-jwt"),
            "tokens.access_token: expected a JWT with a numeric exp claim",
        ),
        ("codex-chatgpt", lambda d: d.update(tokens=None, OPENAI_API_KEY="sk-x"), "tokens: missing"),
        ("gemini-cli", lambda d: d.pop("expiry_date"), "expiry_date: expected a number of milliseconds"),
        (
            "antigravity",
            lambda d: d.update(expired="2026-12-03T12:00:00"),
            "expired: expected an ISO 8601 time",
        ),
        ("kiro", lambda d: d.update(expiresAt=17), "expiresAt: expected an ISO 8601 time with a zone"),
        ("kiro", lambda d: d.update(authMethod="IdC"), "clientId: required for authMethod IdC"),
        ("kiro", lambda d: d.update(authMethod="saml"), "authMethod: expected social or IdC"),
    ],
)
def test_it_names_the_field_of_a_bad_file(kind: str, change: object, message: str) -> None:
    document = file_of(kind)
    change(document)  # type: ignore[operator]

    with pytest.raises(CredentialFileError) as caught:
        parse_credential_file(kind, json.dumps(document), now=NOW)

    assert str(caught.value).startswith(message)
    assert "secret-value" not in str(caught.value)


def test_it_refuses_what_is_not_a_json_object() -> None:
    with pytest.raises(CredentialFileError, match="not JSON"):
        parse_credential_file("claude-oauth", "accessToken=abc", now=NOW)
    with pytest.raises(CredentialFileError, match="expected a JSON object"):
        parse_credential_file("claude-oauth", "[1]", now=NOW)
    with pytest.raises(CredentialFileError, match="no credential file"):
        parse_credential_file("openai-api", "{}", now=NOW)


def test_it_reads_a_file_of_every_kind_the_ladder_can_refresh() -> None:
    assert set(FILES) == REFRESHABLE_KINDS
