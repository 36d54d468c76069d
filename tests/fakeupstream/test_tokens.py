"""The fake upstream's token endpoints: short-lived access tokens, single-use refresh tokens whose
reuse revokes the family, and a record of every redemption."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from devtools.fakeupstream import FakeUpstream


@pytest.fixture
def live() -> Iterator[FakeUpstream]:
    with FakeUpstream(token_lifetime_s=60) as running:
        yield running


def usage(upstream: FakeUpstream, token: str) -> int:
    return httpx.get(
        upstream.url_for("claude-oauth") + "/api/oauth/usage", headers={"Authorization": f"Bearer {token}"}
    ).status_code


def test_it_rotates_a_single_use_token_and_revokes_the_family_on_reuse(live: FakeUpstream) -> None:
    with live.control() as control:
        login = control.mint_login("claude-oauth")
        endpoint = live.url_for("claude-oauth") + "/v1/oauth/token"

        first = httpx.post(
            endpoint, json={"grant_type": "refresh_token", "refresh_token": login["refresh_token"]}
        )
        assert first.status_code == 200
        renewed = first.json()
        assert renewed["refresh_token"] != login["refresh_token"]
        assert renewed["expires_in"] == 60
        assert usage(live, renewed["access_token"]) == 200

        again = httpx.post(endpoint, json={"refresh_token": login["refresh_token"]})
        assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
        # The whole family is revoked: the rotated tokens stop working too.
        assert usage(live, renewed["access_token"]) == 401
        assert httpx.post(endpoint, json={"refresh_token": renewed["refresh_token"]}).status_code == 400

        summary = control.token_record()["summary"]
        assert (summary["ok"], summary["reused"], summary["revoked"]) == (1, 1, 1)
        assert all(login["refresh_token"] not in str(r) for r in control.token_record()["redemptions"])


def test_codex_answers_refresh_token_reused() -> None:
    with FakeUpstream() as upstream, upstream.control() as control:
        login = control.mint_login("codex-chatgpt")
        endpoint = upstream.url_for("codex-chatgpt") + "/oauth/token"
        assert httpx.post(endpoint, json={"refresh_token": login["refresh_token"]}).status_code == 200

        reused = httpx.post(endpoint, json={"refresh_token": login["refresh_token"]})

        assert reused.status_code == 401
        assert reused.json()["error"]["code"] == "refresh_token_reused"


def test_google_refresh_tokens_do_not_rotate() -> None:
    with FakeUpstream() as upstream, upstream.control() as control:
        login = control.mint_login("gemini-cli")
        endpoint = upstream.url_for("gemini-cli") + "/token"
        form = {"grant_type": "refresh_token", "refresh_token": login["refresh_token"]}

        answers = [httpx.post(endpoint, data=form) for _ in range(2)]

        assert [a.status_code for a in answers] == [200, 200]
        assert "refresh_token" not in answers[0].json()
        assert control.token_record()["summary"]["reused"] == 0


def test_an_expired_access_token_gets_a_401_and_a_foreign_one_passes() -> None:
    with FakeUpstream() as upstream, upstream.control() as control:
        login = control.mint_login("claude-oauth", lifetime_s=60)
        assert usage(upstream, login["access_token"]) == 200
        control.advance(61)

        assert usage(upstream, login["access_token"]) == 401
        assert usage(upstream, "sk-not-issued-here") == 200


def test_the_lifetime_is_a_setting() -> None:
    with FakeUpstream(token_lifetime_s=5) as upstream, upstream.control() as control:
        assert control.mint_login("kiro")["file"]["expiresAt"]
        control.token_lifetime(2)
        login = control.mint_login("kiro")
        answer = httpx.post(
            upstream.url_for("kiro") + "/refreshToken", json={"refreshToken": login["refresh_token"]}
        )

        assert answer.json()["expiresIn"] == 2
        assert answer.json()["profileArn"].startswith("arn:aws:codewhisperer")
