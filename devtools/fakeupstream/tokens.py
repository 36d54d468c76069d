"""The fake upstream's token endpoints: short-lived access tokens and single-use refresh tokens.

Each kind's token endpoint lives in its namespace, at the real endpoint's path:

====================  ==========================  =========================================
kind                  path                        refresh token
====================  ==========================  =========================================
``claude-oauth``      ``POST /v1/oauth/token``    rotates, single use
``codex-chatgpt``     ``POST /oauth/token``       rotates, single use (access token: a JWT)
``gemini-cli``        ``POST /token`` (a form)    does not rotate: reusable
``antigravity``       ``POST /token`` (a form)    does not rotate: reusable
``kiro``              ``POST /refreshToken``      rotates, single use (social login)
``kiro``              ``POST /token``             rotates, single use (AWS Builder ID / IdC)
====================  ==========================  =========================================

Reusing a spent single-use refresh token answers ``invalid_grant`` (Codex: ``refresh_token_reused``)
and revokes the whole family: every access and refresh token of that login stops working, as the
real providers do. An access token the authority issued and that has expired (or was revoked) gets
a 401 on every other call of the kind; tokens it never issued pass as before (the fixtures' tests).

Every redemption is recorded (kind, family, a digest of the token, outcome, time), so tests count
from the fake's own record: ``GET /_control/tokens``. ``POST /_control/tokens`` with a ``kind``
mints a new login (a family) and answers its tokens and the file the kind's CLI would write; with
only ``lifetime_s`` it sets the default lifetime of the access tokens issued from then on.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs

ROTATING = frozenset({"claude-oauth", "codex-chatgpt", "kiro"})
TOKEN_PATHS: dict[str, tuple[str, ...]] = {
    "claude-oauth": ("/v1/oauth/token",),
    "codex-chatgpt": ("/oauth/token",),
    "gemini-cli": ("/token",),
    "antigravity": ("/token",),
    "kiro": ("/refreshToken", "/token"),
}
CODEX_AUTH_CLAIM = "https://api.openai.com/auth"
DEFAULT_LIFETIME_S = 3600.0


@dataclass
class Family:
    id: str
    kind: str
    account_id: str
    lifetime_s: float
    auth_method: str = "social"
    revoked: bool = False


@dataclass
class RefreshToken:
    family: Family
    used: bool = False


@dataclass
class AccessToken:
    family: Family
    expires_at: datetime


@dataclass
class TokenAuthority:
    lifetime_s: float = DEFAULT_LIFETIME_S
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _refresh: dict[str, RefreshToken] = field(init=False, default_factory=dict)
    _access: dict[str, AccessToken] = field(init=False, default_factory=dict)
    _redemptions: list[dict[str, Any]] = field(init=False, default_factory=list)

    # --- minting ---

    def mint(
        self,
        kind: str,
        now: datetime,
        *,
        lifetime_s: float | None = None,
        account_id: str | None = None,
        auth_method: str = "social",
    ) -> dict[str, Any]:
        """A new login of ``kind``: its tokens, and the file its CLI would write."""
        if kind not in TOKEN_PATHS:
            raise ValueError(f"{kind} has no token endpoint; kinds: {', '.join(sorted(TOKEN_PATHS))}")
        if auth_method not in ("social", "idc"):
            raise ValueError("auth_method must be social or idc")
        family = Family(
            id=secrets.token_hex(6),
            kind=kind,
            account_id=account_id or f"fake-account-{secrets.token_hex(3)}",
            lifetime_s=float(lifetime_s if lifetime_s is not None else self.lifetime_s),
            auth_method=auth_method,
        )
        with self._lock:
            access, expires_at = self._issue_access(family, now)
            refresh = self._issue_refresh(family)
        return {
            "kind": kind,
            "family": family.id,
            "access_token": access,
            "refresh_token": refresh,
            "expires_at": expires_at.isoformat(),
            "account_id": family.account_id,
            "file": cli_file(family, access, refresh, expires_at),
        }

    def _issue_access(self, family: Family, now: datetime) -> tuple[str, datetime]:
        expires_at = now + timedelta(seconds=family.lifetime_s)
        if family.kind == "codex-chatgpt":
            expires_at = datetime.fromtimestamp(int(expires_at.timestamp()), tz=UTC)
            claims = {
                "exp": int(expires_at.timestamp()),
                CODEX_AUTH_CLAIM: {"chatgpt_account_id": family.account_id},
                "jti": secrets.token_hex(8),
            }
            token = _jwt(claims)
        else:
            token = f"fake-at-{family.kind}-{secrets.token_urlsafe(18)}"
        self._access[token] = AccessToken(family, expires_at)
        return token, expires_at

    def _issue_refresh(self, family: Family) -> str:
        token = f"fake-rt-{family.kind}-{secrets.token_urlsafe(18)}"
        self._refresh[token] = RefreshToken(family)
        return token

    # --- serving ---

    def is_token_call(self, kind: str, method: str, path: str) -> bool:
        return method == "POST" and path in TOKEN_PATHS.get(kind, ())

    def redeem(self, kind: str, path: str, body: bytes, now: datetime) -> tuple[int, dict[str, Any]]:
        """One call of ``kind``'s token endpoint: (status, JSON answer)."""
        token = _refresh_token_of(kind, body)
        with self._lock:
            entry = self._refresh.get(token or "")
            family = entry.family if entry is not None else None
            if entry is None or family is None or family.kind != kind:
                outcome = "unknown"
            elif family.revoked:
                outcome = "revoked"
            elif entry.used:
                outcome = "reused"
                self._revoke(family)
            else:
                outcome = "ok"
            self._redemptions.append(
                {
                    "kind": kind,
                    "family": family.id if family else None,
                    "token": _digest(token or ""),
                    "outcome": outcome,
                    "at": now.isoformat(),
                }
            )
            if outcome != "ok" or family is None or entry is None:
                return _refusal(kind, outcome)
            access, _ = self._issue_access(family, now)
            rotated = None
            if kind in ROTATING:
                entry.used = True
                rotated = self._issue_refresh(family)
        return 200, _grant(kind, family, access, rotated, path)

    def _revoke(self, family: Family) -> None:
        family.revoked = True

    def access_status(self, token: str, now: datetime) -> str:
        """``valid``, ``expired``, ``revoked``, or ``foreign`` (not issued here: let it pass)."""
        with self._lock:
            entry = self._access.get(token)
            if entry is None:
                return "foreign"
            if entry.family.revoked:
                return "revoked"
            return "valid" if entry.expires_at > now else "expired"

    # --- control ---

    def record(self) -> dict[str, Any]:
        with self._lock:
            redemptions = list(self._redemptions)
        outcomes = Counter(r["outcome"] for r in redemptions)
        ok_tokens = Counter(r["token"] for r in redemptions if r["outcome"] == "ok" and r["kind"] in ROTATING)
        return {
            "lifetime_s": self.lifetime_s,
            "redemptions": redemptions,
            "summary": {
                "redemptions": len(redemptions),
                "ok": outcomes["ok"],
                "reused": outcomes["reused"],
                "revoked": outcomes["revoked"],
                "unknown": outcomes["unknown"],
                "single_use_redeemed_twice": sum(1 for n in ok_tokens.values() if n > 1),
            },
        }

    def reset(self) -> None:
        with self._lock:
            self._refresh.clear()
            self._access.clear()
            self._redemptions.clear()


def bearer_of(headers: Mapping[str, str] | None) -> str | None:
    for name, value in (headers or {}).items():
        if name.lower() == "authorization" and value.lower().startswith("bearer "):
            return value[7:].strip()
    return None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def _jwt(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.fake-signature"


def _refresh_token_of(kind: str, body: bytes) -> str | None:
    text = body.decode("utf-8", errors="replace")
    try:
        payload = json.loads(text) if text.strip().startswith("{") else None
    except ValueError:
        payload = None
    if payload is None:
        form = parse_qs(text)
        payload = {key: values[0] for key, values in form.items() if values}
    if not isinstance(payload, dict):
        return None
    token = payload.get("refreshToken") if kind == "kiro" else payload.get("refresh_token")
    return token if isinstance(token, str) else None


def _refusal(kind: str, outcome: str) -> tuple[int, dict[str, Any]]:
    if kind == "codex-chatgpt":
        code = "refresh_token_reused" if outcome == "reused" else "refresh_token_invalidated"
        message = "Your refresh token has already been used to generate a new access token."
        return 401, {"error": {"message": message, "type": "invalid_request_error", "code": code}}
    if kind == "kiro":
        return 400, {"error": "invalid_grant", "message": "Invalid refresh token provided"}
    return 400, {"error": "invalid_grant", "error_description": f"refresh token {outcome}"}


def _grant(kind: str, family: Family, access: str, rotated: str | None, path: str) -> dict[str, Any]:
    lifetime = int(round(family.lifetime_s)) if family.lifetime_s >= 1 else family.lifetime_s
    if kind == "claude-oauth":
        return {
            "token_type": "Bearer",
            "access_token": access,
            "refresh_token": rotated,
            "expires_in": lifetime,
            "scope": "user:inference user:profile",
        }
    if kind == "codex-chatgpt":
        id_token = _jwt({"email": f"{family.account_id}@example.com"})
        return {"id_token": id_token, "access_token": access, "refresh_token": rotated}
    if kind == "kiro":
        answer: dict[str, Any] = {"accessToken": access, "refreshToken": rotated, "expiresIn": lifetime}
        if path == "/refreshToken":
            answer["profileArn"] = _kiro_arn(family)
        return answer
    return {"access_token": access, "expires_in": lifetime, "scope": "cloud-platform", "token_type": "Bearer"}


def _kiro_arn(family: Family) -> str:
    return f"arn:aws:codewhisperer:us-east-1:000000000000:profile/{family.account_id}"


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def cli_file(family: Family, access: str, refresh: str, expires_at: datetime) -> dict[str, Any]:
    """The file the kind's CLI writes for this login (ladder.providers.credentials reads it)."""
    kind = family.kind
    if kind == "claude-oauth":
        return {
            "claudeAiOauth": {
                "accessToken": access,
                "refreshToken": refresh,
                "expiresAt": _ms(expires_at),
                "scopes": ["user:inference", "user:profile"],
                "subscriptionType": "max",
            }
        }
    if kind == "codex-chatgpt":
        return {
            "OPENAI_API_KEY": None,
            "tokens": {
                "id_token": _jwt({"email": f"{family.account_id}@example.com"}),
                "access_token": access,
                "refresh_token": refresh,
                "account_id": family.account_id,
            },
            "last_refresh": expires_at.isoformat(),
        }
    if kind == "gemini-cli":
        return {
            "access_token": access,
            "refresh_token": refresh,
            "expiry_date": _ms(expires_at),
            "scope": "https://www.googleapis.com/auth/cloud-platform",
            "token_type": "Bearer",
            "id_token": _jwt({"email": f"{family.account_id}@example.com"}),
        }
    if kind == "antigravity":
        return {
            "type": "antigravity",
            "access_token": access,
            "refresh_token": refresh,
            "expired": expires_at.isoformat().replace("+00:00", "Z"),
            "expires_in": family.lifetime_s,
            "timestamp": _ms(expires_at - timedelta(seconds=family.lifetime_s)),
            "email": f"{family.account_id}@example.com",
            "project_id": "fake-project",
        }
    file: dict[str, Any] = {
        "accessToken": access,
        "refreshToken": refresh,
        "expiresAt": expires_at.isoformat().replace("+00:00", "Z"),
        "authMethod": "IdC" if family.auth_method == "idc" else "social",
        "provider": "BuilderId" if family.auth_method == "idc" else "Github",
        "profileArn": _kiro_arn(family),
        "region": "us-east-1",
    }
    if family.auth_method == "idc":
        file |= {"clientId": f"fake-client-{family.id}", "clientSecret": f"fake-secret-{family.id}"}
    return file
