"""The credential files that the providers' own CLIs write, read into one ``Credential``. Pure: no
I/O, ``now`` passed in where a relative time needs it.

A file that cannot be read raises ``CredentialFileError`` naming the field
(``claudeAiOauth.expiresAt: expected a number of milliseconds``); nothing is guessed. Shapes, with
where each was read:

- Claude Code, ``~/.claude/.credentials.json`` (macOS: the Keychain item "Claude Code-credentials",
  same JSON): ``{"claudeAiOauth": {"accessToken", "refreshToken", "expiresAt": <ms>, "scopes",
  "subscriptionType"}}`` (RavenStorm-bit/claude-token-refresh README; steipete/CodexBar
  docs/claude.md).
- Codex, ``~/.codex/auth.json``: ``{"OPENAI_API_KEY": null, "tokens": {"id_token", "access_token",
  "refresh_token", "account_id"}, "last_refresh"}``; the expiry is the access token's JWT ``exp``
  (openai/codex codex-rs/core/src/auth/storage.rs, as quoted in steipete/CodexBar docs/codex-oauth.md).
- Gemini CLI, ``~/.gemini/oauth_creds.json``: ``{"access_token", "refresh_token", "expiry_date":
  <ms>, "id_token", "scope", "token_type"}`` (google-gemini/gemini-cli
  packages/core/src/code_assist/oauth2.ts; steipete/CodexBar docs/public/gemini.md).
- Antigravity: the IDE keeps its token in its own state database; CLIProxyAPI's
  ``antigravity-<email>.json`` is the file people export: ``{"type": "antigravity", "access_token",
  "refresh_token", "expired": ISO, "expires_in", "timestamp": <ms>, "email", "project_id"}``
  (router-for-me/CLIProxyAPI internal/auth/antigravity). The Gemini CLI shape is accepted too.
- Kiro, ``~/.aws/sso/cache/kiro-auth-token.json``: ``{"accessToken", "refreshToken", "expiresAt":
  ISO, "authMethod": "social" | "IdC", "provider", "profileArn", "region", "clientIdHash"}``; an IdC
  (AWS Builder ID / Identity Center) login keeps ``clientId`` and ``clientSecret`` in
  ``~/.aws/sso/cache/<clientIdHash>.json``, which the operator adds to the same object
  (router-for-me/CLIProxyAPI internal/auth/kiro; AIClient-2-API src/core/claude-kiro.js).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from ladder.domain.credentials import REFRESHABLE_KINDS

MAX_FILE_CHARS = 64 * 1024
# The millisecond timestamps of these files lie between 2001 and 2286: a value in seconds is refused.
_MIN_MS = 1e12
_MAX_MS = 1e13


class CredentialFileError(ValueError):
    """A credential file that cannot be read; ``field`` is the JSON path that is wrong."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class Credential:
    """One connection's credential. The secrets never appear in ``repr`` (logs, tracebacks).

    ``params`` are the non-secret per-account values the quota adapter needs (``account_id``,
    ``profile_arn``, ``project``); ``refresh_params`` what redeeming the refresh token needs besides
    the token (Kiro's ``auth_method``, ``region``, ``client_id``, ``client_secret``), kept encrypted
    with it."""

    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: datetime | None = None
    account_id: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    refresh_params: Mapping[str, str] = field(default_factory=dict, repr=False)


def parse_credential_file(kind: str, text: str, *, now: datetime) -> Credential:
    """Read what ``kind``'s CLI writes. Raises CredentialFileError naming the field."""
    parser = PARSERS.get(kind)
    if parser is None:
        raise CredentialFileError("", f"{kind} has no credential file to read; paste its key instead")
    if len(text) > MAX_FILE_CHARS:
        raise CredentialFileError("", f"the file is over {MAX_FILE_CHARS} characters; paste only the JSON")
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise CredentialFileError("", f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise CredentialFileError("", "expected a JSON object")
    return parser(document, now)


# --- readers ---------------------------------------------------------------------------------


def _object(document: Mapping[str, object], key: str, path: str = "") -> Mapping[str, object]:
    value = document.get(key)
    where = f"{path}{key}"
    if value is None:
        raise CredentialFileError(where, "missing")
    if not isinstance(value, dict):
        raise CredentialFileError(where, "expected an object")
    return value


def _text(document: Mapping[str, object], key: str, path: str = "", *, required: bool = True) -> str | None:
    value = document.get(key)
    if value is None or value == "":
        if required:
            raise CredentialFileError(f"{path}{key}", "missing")
        return None
    if not isinstance(value, str) or not value.strip():
        raise CredentialFileError(f"{path}{key}", "expected a non-empty string")
    return value.strip()


def _millis(document: Mapping[str, object], key: str, path: str = "") -> datetime:
    value = document.get(key)
    where = f"{path}{key}"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CredentialFileError(where, "expected a number of milliseconds")
    if not _MIN_MS <= value < _MAX_MS:
        raise CredentialFileError(where, f"expected a number of milliseconds since 1970, got {value!r}")
    return datetime.fromtimestamp(value / 1000, tz=UTC)


def _iso(document: Mapping[str, object], key: str, path: str = "") -> datetime:
    value = document.get(key)
    where = f"{path}{key}"
    if not isinstance(value, str):
        raise CredentialFileError(where, "expected an ISO 8601 time with a zone")
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise CredentialFileError(where, f"expected an ISO 8601 time with a zone, got {value!r}") from None
    if moment.tzinfo is None:
        raise CredentialFileError(where, "expected an ISO 8601 time with a zone (e.g. Z)")
    return moment.astimezone(UTC)


def jwt_claims(token: str) -> dict[str, object] | None:
    """The payload of a JWT, unverified (only its ``exp`` and account are read); None if not one."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        return None
    return claims if isinstance(claims, dict) else None


def jwt_expiry(token: str) -> datetime | None:
    claims = jwt_claims(token)
    exp = claims.get("exp") if claims else None
    if isinstance(exp, bool) or not isinstance(exp, int | float) or not math.isfinite(exp) or exp <= 0:
        return None
    return datetime.fromtimestamp(exp, tz=UTC)


def _jwt_email(token: str | None) -> str | None:
    claims = jwt_claims(token) if token else None
    email = claims.get("email") if claims else None
    return email if isinstance(email, str) and email else None


# --- one parser per kind ---------------------------------------------------------------------


def parse_claude(document: Mapping[str, object], now: datetime) -> Credential:
    oauth = _object(document, "claudeAiOauth")
    path = "claudeAiOauth."
    return Credential(
        access_token=_text(oauth, "accessToken", path) or "",
        refresh_token=_text(oauth, "refreshToken", path, required=False),
        expires_at=_millis(oauth, "expiresAt", path),
    )


CODEX_AUTH_CLAIM = "https://api.openai.com/auth"


def parse_codex(document: Mapping[str, object], now: datetime) -> Credential:
    if document.get("tokens") is None and document.get("OPENAI_API_KEY"):
        problem = "missing: this auth.json holds an API key; add it as an openai key"
        raise CredentialFileError("tokens", problem)
    tokens = _object(document, "tokens")
    access = _text(tokens, "access_token", "tokens.") or ""
    expires_at = jwt_expiry(access)
    if expires_at is None:
        raise CredentialFileError("tokens.access_token", "expected a JWT with a numeric exp claim")
    account = _text(tokens, "account_id", "tokens.", required=False)
    if account is None:
        claims = jwt_claims(access) or {}
        auth = claims.get(CODEX_AUTH_CLAIM)
        found = auth.get("chatgpt_account_id") if isinstance(auth, dict) else None
        account = found if isinstance(found, str) and found else None
    return Credential(
        access_token=access,
        refresh_token=_text(tokens, "refresh_token", "tokens.", required=False),
        expires_at=expires_at,
        account_id=account,
        params={"account_id": account} if account else {},
    )


def parse_gemini(document: Mapping[str, object], now: datetime) -> Credential:
    return Credential(
        access_token=_text(document, "access_token") or "",
        refresh_token=_text(document, "refresh_token", required=False),
        expires_at=_millis(document, "expiry_date"),
        account_id=_jwt_email(_text(document, "id_token", required=False)),
    )


def parse_antigravity(document: Mapping[str, object], now: datetime) -> Credential:
    if "expiry_date" in document:
        expires_at = _millis(document, "expiry_date")
    elif "expired" in document:
        expires_at = _iso(document, "expired")
    elif "timestamp" in document and "expires_in" in document:
        expires_in = document.get("expires_in")
        if isinstance(expires_in, bool) or not isinstance(expires_in, int | float) or expires_in <= 0:
            raise CredentialFileError("expires_in", "expected a positive number of seconds")
        expires_at = _millis(document, "timestamp") + timedelta(seconds=float(expires_in))
    else:
        raise CredentialFileError("expired", "missing (or expiry_date in milliseconds)")
    project = _text(document, "project_id", required=False)
    email = _text(document, "email", required=False)
    email = email or _jwt_email(_text(document, "id_token", required=False))
    return Credential(
        access_token=_text(document, "access_token") or "",
        refresh_token=_text(document, "refresh_token", required=False),
        expires_at=expires_at,
        account_id=email or project,
        params={"project": project} if project else {},
    )


KIRO_SOCIAL = "social"
KIRO_IDC = "idc"
KIRO_DEFAULT_REGION = "us-east-1"


def parse_kiro(document: Mapping[str, object], now: datetime) -> Credential:
    method_text = (_text(document, "authMethod", required=False) or KIRO_SOCIAL).lower()
    if method_text not in (KIRO_SOCIAL, KIRO_IDC):
        raise CredentialFileError("authMethod", f"expected social or IdC, got {method_text!r}")
    region = _text(document, "region", required=False) or KIRO_DEFAULT_REGION
    refresh_params = {"auth_method": method_text, "region": region}
    if method_text == KIRO_IDC:
        hint = "required for authMethod IdC: copy it from ~/.aws/sso/cache/<clientIdHash>.json"
        for key, name in (("clientId", "client_id"), ("clientSecret", "client_secret")):
            value = document.get(key)
            if not isinstance(value, str) or not value.strip():
                raise CredentialFileError(key, hint)
            refresh_params[name] = value.strip()
    profile_arn = _text(document, "profileArn", required=False)
    return Credential(
        access_token=_text(document, "accessToken") or "",
        refresh_token=_text(document, "refreshToken", required=False),
        expires_at=_iso(document, "expiresAt"),
        account_id=profile_arn,
        params={"profile_arn": profile_arn} if profile_arn else {},
        refresh_params=refresh_params,
    )


PARSERS: Mapping[str, Callable[[Mapping[str, object], datetime], Credential]] = {
    "claude-oauth": parse_claude,
    "codex-chatgpt": parse_codex,
    "gemini-cli": parse_gemini,
    "antigravity": parse_antigravity,
    "kiro": parse_kiro,
}
assert set(PARSERS) == REFRESHABLE_KINDS
