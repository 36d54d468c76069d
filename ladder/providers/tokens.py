"""Redeem a refresh token at each kind's token endpoint (the public facts of its CLI).

- Claude Code: ``POST https://console.anthropic.com/v1/oauth/token``, JSON ``{"grant_type":
  "refresh_token", "refresh_token", "client_id": "9d1c250a-e61b-44d9-88ed-5944d1962f5e"}`` →
  ``{"access_token", "refresh_token", "expires_in"}``; the refresh token rotates
  (router-for-me/CLIProxyAPI internal/auth/claude; notforyou23/evobrew anthropic-oauth-flow.md).
- Codex: ``POST https://auth.openai.com/oauth/token``, JSON ``{"client_id":
  "app_EMoamEEZ73f0CkXaXp7hrann", "grant_type": "refresh_token", "refresh_token", "scope": "openid
  profile email"}`` → ``{"id_token", "access_token", "refresh_token"}``; a reused token answers
  ``refresh_token_reused`` (openai/codex codex-rs/core/src/auth.rs, quoted in steipete/CodexBar
  docs/codex-oauth.md; openai/codex#6498).
- Gemini CLI and Antigravity: ``POST https://oauth2.googleapis.com/token``, form ``client_id,
  client_secret, refresh_token, grant_type=refresh_token`` → ``{"access_token", "expires_in"}``;
  the refresh token does not rotate. Client ids: google-gemini/gemini-cli
  packages/core/src/code_assist/oauth2.ts; Antigravity's as CLIProxyAPI
  internal/auth/antigravity/constants.go has it (installed-app clients: the "secret" is public).
- Kiro social login: ``POST https://prod.<region>.auth.desktop.kiro.dev/refreshToken``, JSON
  ``{"refreshToken"}`` → ``{"accessToken", "refreshToken", "expiresIn", "profileArn"}``; AWS Builder
  ID / IdC: ``POST https://oidc.<region>.amazonaws.com/token``, JSON ``{"clientId", "clientSecret",
  "grantType": "refresh_token", "refreshToken"}`` → ``{"accessToken", "refreshToken", "expiresIn"}``
  (router-for-me/CLIProxyAPI internal/auth/kiro; AIClient-2-API src/core/claude-kiro.js).

A token endpoint's base URL follows the usage endpoint's: the connection's own ``base_url``, else the
settings override (the fake upstream's ``/<kind>`` namespace), else the default below.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import httpx

from ladder.providers.base import DEFAULT_TIMEOUT, resolve_base_url
from ladder.providers.credentials import KIRO_DEFAULT_REGION, KIRO_IDC, Credential, jwt_expiry
from ladder.providers.values import as_dict, as_float, as_str, decode_body, dig

CLAUDE_CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
CODEX_CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
GEMINI_CLIENT_ID = "681255809395-oo8ft2oprdrnp9e3aqf6av3hmdib135j.apps.googleusercontent.com"
GEMINI_CLIENT_SECRET = "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"  # noqa: S105 - a public installed-app client
ANTIGRAVITY_CLIENT_ID = "1071006060591-tmhssin2h21lcre235vtolojh4g403ep.apps.googleusercontent.com"
ANTIGRAVITY_CLIENT_SECRET = "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"  # noqa: S105 - public, as above

# Error words of a refused refresh token: OAuth's invalid_grant, Codex's refresh_token_* codes.
REFUSAL_MARKERS = (
    "invalid_grant",
    "refresh_token_reused",
    "refresh_token_expired",
    "refresh_token_invalidated",
    "revoked",
    "invalidtokenexception",
    "unauthorized_client",
)


class RefreshRefused(Exception):
    """The refresh token itself was refused (invalid, reused, revoked): someone must log in again."""


class RefreshFailed(Exception):
    """The refresh did not happen for another reason; ``transient`` when worth retrying soon."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class TokenRequest:
    default_base_url: str
    path: str
    json_body: dict[str, str] | None = None
    form_body: dict[str, str] | None = None


def token_request(kind: str, credential: Credential) -> TokenRequest:
    """What redeeming ``credential``'s refresh token sends, for ``kind``."""
    token = credential.refresh_token
    if not token:
        raise RefreshFailed("no refresh token stored", transient=False)
    params = credential.refresh_params
    oauth = {"grant_type": "refresh_token", "refresh_token": token}  # OAuth's refresh grant (RFC 6749 §6)
    if kind == "claude-oauth":
        body = {**oauth, "client_id": CLAUDE_CLIENT_ID}
        return TokenRequest("https://console.anthropic.com", "/v1/oauth/token", json_body=body)
    if kind == "codex-chatgpt":
        body = {**oauth, "client_id": CODEX_CLIENT_ID, "scope": "openid profile email"}
        return TokenRequest("https://auth.openai.com", "/oauth/token", json_body=body)
    if kind in ("gemini-cli", "antigravity"):
        gemini = kind == "gemini-cli"
        form = {
            **oauth,
            "client_id": params.get("client_id") or (GEMINI_CLIENT_ID if gemini else ANTIGRAVITY_CLIENT_ID),
            "client_secret": params.get("client_secret")
            or (GEMINI_CLIENT_SECRET if gemini else ANTIGRAVITY_CLIENT_SECRET),
        }
        return TokenRequest("https://oauth2.googleapis.com", "/token", form_body=form)
    if kind == "kiro":
        region = params.get("region") or KIRO_DEFAULT_REGION
        if params.get("auth_method") == KIRO_IDC:
            body = {
                "clientId": params.get("client_id", ""),
                "clientSecret": params.get("client_secret", ""),
                "grantType": "refresh_token",
                "refreshToken": token,
            }
            return TokenRequest(f"https://oidc.{region}.amazonaws.com", "/token", json_body=body)
        return TokenRequest(
            f"https://prod.{region}.auth.desktop.kiro.dev", "/refreshToken", json_body={"refreshToken": token}
        )
    raise RefreshFailed(f"{kind} has no token endpoint", transient=False)


def redeem_refresh_token(
    kind: str,
    credential: Credential,
    client: httpx.Client,
    now: datetime,
    *,
    base_url: str | None = None,
    override: str | None = None,
) -> Credential:
    """The credential after one redemption of its refresh token. Raises RefreshRefused when the
    token endpoint refuses the token, RefreshFailed otherwise. Never quotes a token in a message."""
    request = token_request(kind, credential)
    root = resolve_base_url(base_url, override, request.default_base_url) or request.default_base_url
    try:
        response = client.post(
            root + request.path,
            json=request.json_body,
            data=request.form_body,
            headers={"Accept": "application/json"},
            timeout=DEFAULT_TIMEOUT,
            follow_redirects=False,
        )
    except httpx.TimeoutException as exc:
        raise RefreshFailed(f"token endpoint timeout ({type(exc).__name__})", transient=True) from None
    except httpx.RequestError as exc:
        raise RefreshFailed(f"token endpoint unreachable ({type(exc).__name__})", transient=True) from None
    body = decode_body(response.content)  # JSON when it parses
    status = response.status_code
    if status >= 500 or status in (408, 429):
        raise RefreshFailed(f"token endpoint answered HTTP {status}", transient=True)
    if status >= 400:
        code = _error_code(body)
        if status in (400, 401, 403) or any(marker in code.lower() for marker in REFUSAL_MARKERS):
            raise RefreshRefused(f"HTTP {status} {code}".strip())
        raise RefreshFailed(f"token endpoint answered HTTP {status} {code}".strip(), transient=False)
    return _refreshed(kind, credential, body, now)


def _error_code(body: object) -> str:
    """The error's code words (never its description, which may quote the token)."""
    error = dig(body, "error")
    found = as_str(error) or as_str(dig(error, "code")) or as_str(dig(error, "type"))
    found = found or as_str(dig(body, "code")) or as_str(dig(body, "__type"))
    return found[:80] if found else ""


def _refreshed(kind: str, old: Credential, body: object, now: datetime) -> Credential:
    if as_dict(body) is None:
        raise RefreshFailed("token endpoint answered 2xx without a JSON object", transient=False)
    kiro = kind == "kiro"
    access = as_str(dig(body, "accessToken" if kiro else "access_token"))
    if access is None:
        raise RefreshFailed("token endpoint answered without an access token", transient=False)
    rotated = as_str(dig(body, "refreshToken" if kiro else "refresh_token"))
    if kind == "codex-chatgpt":
        expires_at = jwt_expiry(access)
    else:
        expires_in = as_float(dig(body, "expiresIn" if kiro else "expires_in"))
        expires_at = now + timedelta(seconds=expires_in) if expires_in and expires_in > 0 else None
    params = dict(old.params)
    account_id = old.account_id
    if kind == "claude-oauth" and (email := as_str(dig(body, "account", "email_address"))):
        account_id = email
    if kiro and (arn := as_str(dig(body, "profileArn"))):
        params["profile_arn"] = arn
        account_id = arn
    return replace(
        old,
        access_token=access,
        refresh_token=rotated or old.refresh_token,
        expires_at=expires_at,
        account_id=account_id,
        params=params,
    )
