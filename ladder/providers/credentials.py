"""The credential files that the providers' own CLIs write, read into one ``Credential``. Pure: no
I/O, ``now`` passed in where a relative time needs it.

Each file's shape is a msgspec Struct below (as ``ladder/contract/`` declares the wire shapes); a file
that does not fit raises ``CredentialFileError`` naming the field in the file's own spelling
(``claudeAiOauth.expiresAt: expected a number of milliseconds``), translated from msgspec's
``$.claudeAiOauth.expiresAt`` path; nothing is guessed. Shapes, with where each was read:

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
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import NoneType
from typing import Annotated, Any, get_args

import msgspec

MAX_FILE_CHARS = 64 * 1024

# Present and not blank (read stripped).
Text = Annotated[str, msgspec.Meta(pattern=r"\S")]
# The millisecond timestamps of these files lie between 2001 and 2286: a value in seconds is refused.
Millis = Annotated[float, msgspec.Meta(ge=1e12, lt=1e13)]
Iso = Annotated[datetime, msgspec.Meta(tz=True)]
# What a refused field of each type expects; a Text or an object that is absent is "missing".
_EXPECTED: dict[object, str] = {
    Text: "expected a non-empty string",
    str: "expected a non-empty string",
    Millis: "expected a number of milliseconds",
    Iso: "expected an ISO 8601 time with a zone",
}
_MISSING_FIELD = re.compile(r"Object missing required field `(?P<key>[^`]+)`")


class CredentialFileError(ValueError):
    """A credential file that cannot be read; the message starts with the JSON path that is wrong."""


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


class CredentialFile(msgspec.Struct):
    """One CLI's file; unknown keys are ignored (the CLIs add some)."""

    def credential(self) -> Credential:
        raise NotImplementedError


def parse_credential_file(kind: str, text: str, *, now: datetime) -> Credential:
    """Read what ``kind``'s CLI writes. Raises CredentialFileError naming the field."""
    shape = FILES.get(kind)
    if shape is None:
        raise CredentialFileError(f"{kind} has no credential file to read; paste its key instead")
    if len(text) > MAX_FILE_CHARS:
        raise CredentialFileError(f"the file is over {MAX_FILE_CHARS} characters; paste only the JSON")
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise CredentialFileError(f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise CredentialFileError("expected a JSON object")
    try:
        file = msgspec.convert(document, shape)
    except msgspec.ValidationError as exc:
        raise _file_error(str(exc), shape, document) from None
    return file.credential()


def _file_error(said: str, shape: type[CredentialFile], document: dict[str, Any]) -> CredentialFileError:
    """msgspec's ``Expected `float`, got `str` - at `$.claudeAiOauth.expiresAt``` in the file's words.
    A value is quoted only for a time field (never a token)."""
    said, _, at = said.partition(" - at `$")
    steps = [step for step in at.rstrip("`").split(".") if step]
    missing = _MISSING_FIELD.fullmatch(said)
    steps += [missing["key"]] if missing else []
    kind: Any = shape
    value: Any = document
    for step in steps:
        kind = next(f.type for f in msgspec.structs.fields(kind) if f.encode_name == step)
        kind = get_args(kind)[0] if NoneType in get_args(kind) else kind  # `X | None` is read as X
        value = value.get(step) if isinstance(value, dict) else None
    expected = _EXPECTED.get(kind, "expected an object")
    if missing and kind not in (Millis, Iso):
        expected = "missing"
    elif kind == Millis and isinstance(value, int | float) and not isinstance(value, bool):
        expected += f" since 1970, got {value!r}"
    elif kind == Iso and isinstance(value, str):
        expected += f", got {value!r}"
    return CredentialFileError(f"{'.'.join(steps)}: {expected}")


def _clean(value: str | None) -> str | None:
    """An optional text field: stripped, and None when blank."""
    return value.strip() or None if value else None


def _from_millis(value: float) -> datetime:
    return datetime.fromtimestamp(value / 1000, tz=UTC)


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


# --- one shape per kind ----------------------------------------------------------------------


class ClaudeOauth(msgspec.Struct, rename="camel"):
    access_token: Text
    expires_at: Millis
    refresh_token: str | None = None


class ClaudeFile(CredentialFile, rename="camel"):
    claude_ai_oauth: ClaudeOauth

    def credential(self) -> Credential:
        oauth = self.claude_ai_oauth
        return Credential(
            access_token=oauth.access_token.strip(),
            refresh_token=_clean(oauth.refresh_token),
            expires_at=_from_millis(oauth.expires_at),
        )


CODEX_AUTH_CLAIM = "https://api.openai.com/auth"


class CodexTokens(msgspec.Struct):
    access_token: Text
    refresh_token: str | None = None
    account_id: str | None = None


class CodexFile(CredentialFile):
    tokens: CodexTokens | None = None
    openai_api_key: str | None = msgspec.field(default=None, name="OPENAI_API_KEY")

    def credential(self) -> Credential:
        if self.tokens is None:
            api_key = self.openai_api_key and "this auth.json holds an API key; add it as an openai key"
            raise CredentialFileError(f"tokens: missing: {api_key}" if api_key else "tokens: missing")
        access = self.tokens.access_token.strip()
        expires_at = jwt_expiry(access)
        if expires_at is None:
            raise CredentialFileError("tokens.access_token: expected a JWT with a numeric exp claim")
        account = _clean(self.tokens.account_id)
        if account is None:
            auth = (jwt_claims(access) or {}).get(CODEX_AUTH_CLAIM)
            found = auth.get("chatgpt_account_id") if isinstance(auth, dict) else None
            account = found if isinstance(found, str) and found else None
        return Credential(
            access_token=access,
            refresh_token=_clean(self.tokens.refresh_token),
            expires_at=expires_at,
            account_id=account,
            params={"account_id": account} if account else {},
        )


class GeminiFile(CredentialFile):
    access_token: Text
    expiry_date: Millis
    refresh_token: str | None = None
    id_token: str | None = None

    def credential(self) -> Credential:
        return Credential(
            access_token=self.access_token.strip(),
            refresh_token=_clean(self.refresh_token),
            expires_at=_from_millis(self.expiry_date),
            account_id=_jwt_email(_clean(self.id_token)),
        )


class AntigravityFile(CredentialFile):
    """CLIProxyAPI's export; Gemini CLI's ``expiry_date`` is accepted too."""

    access_token: Text
    refresh_token: str | None = None
    expiry_date: Millis | None = None
    expired: Iso | None = None
    timestamp: Millis | None = None
    expires_in: float | None = None
    project_id: str | None = None
    email: str | None = None
    id_token: str | None = None

    def credential(self) -> Credential:
        if self.expiry_date is not None:
            expires_at = _from_millis(self.expiry_date)
        elif self.expired is not None:
            expires_at = self.expired.astimezone(UTC)
        elif self.timestamp is not None and self.expires_in is not None:
            if self.expires_in <= 0:
                raise CredentialFileError("expires_in: expected a positive number of seconds")
            expires_at = _from_millis(self.timestamp) + timedelta(seconds=self.expires_in)
        else:
            raise CredentialFileError("expired: missing (or expiry_date in milliseconds)")
        project = _clean(self.project_id)
        email = _clean(self.email) or _jwt_email(_clean(self.id_token))
        return Credential(
            access_token=self.access_token.strip(),
            refresh_token=_clean(self.refresh_token),
            expires_at=expires_at,
            account_id=email or project,
            params={"project": project} if project else {},
        )


KIRO_SOCIAL = "social"
KIRO_IDC = "idc"
KIRO_DEFAULT_REGION = "us-east-1"


class KiroFile(CredentialFile, rename="camel"):
    access_token: Text
    expires_at: Iso
    refresh_token: str | None = None
    auth_method: str | None = None
    region: str | None = None
    profile_arn: str | None = None
    client_id: str | None = None
    client_secret: str | None = None

    def credential(self) -> Credential:
        method = (_clean(self.auth_method) or KIRO_SOCIAL).lower()
        if method not in (KIRO_SOCIAL, KIRO_IDC):
            raise CredentialFileError(f"authMethod: expected social or IdC, got {method!r}")
        refresh_params = {"auth_method": method, "region": _clean(self.region) or KIRO_DEFAULT_REGION}
        if method == KIRO_IDC:
            hint = "required for authMethod IdC: copy it from ~/.aws/sso/cache/<clientIdHash>.json"
            for key, name in (("clientId", "client_id"), ("clientSecret", "client_secret")):
                value = _clean(getattr(self, name))
                if value is None:
                    raise CredentialFileError(f"{key}: {hint}")
                refresh_params[name] = value
        profile_arn = _clean(self.profile_arn)
        return Credential(
            access_token=self.access_token.strip(),
            refresh_token=_clean(self.refresh_token),
            expires_at=self.expires_at.astimezone(UTC),
            account_id=profile_arn,
            params={"profile_arn": profile_arn} if profile_arn else {},
            refresh_params=refresh_params,
        )


FILES: Mapping[str, type[CredentialFile]] = {
    "claude-oauth": ClaudeFile,
    "codex-chatgpt": CodexFile,
    "gemini-cli": GeminiFile,
    "antigravity": AntigravityFile,
    "kiro": KiroFile,
}
