"""Gateway tokens: only a SHA-256 of the value is stored; the value is shown once, at creation."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Q

from ladder.models import GatewayToken
from ladder.models.gateway_tokens import connection_ids_errors
from ladder.selectors.tokens import GatewayTokenGrant, gateway_token_by_hash

logger = logging.getLogger(__name__)

SCOPES = ("resolve", "report", "credentials")
TOKEN_PREFIX = "olr_"  # noqa: S105  (the tokens' public prefix, not a secret)
PREFIX_SHOWN = 12  # characters kept in clear, so operators can tell tokens apart
LAST_USED_RESOLUTION = timedelta(minutes=1)
TOKEN_VALUE_RE = re.compile(r"\A[\x21-\x7e]{16,256}\Z")  # printable ASCII, no spaces


def gateway_token_hash(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def gateway_token_generate() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def gateway_token_issue(token: GatewayToken, *, value: str | None = None) -> str:
    """Give an unsaved (or replaced) token its secret, save it, and return the secret: the only copy."""
    plaintext = gateway_token_generate() if value is None else value
    if not TOKEN_VALUE_RE.match(plaintext):
        raise ValidationError(
            {"value": "a token value must be 16–256 printable ASCII characters without spaces"}
        )
    token.token_hash = gateway_token_hash(plaintext)
    token.prefix = plaintext[:PREFIX_SHOWN]
    try:
        with transaction.atomic():
            token.save()
    except IntegrityError:
        if GatewayToken.objects.filter(token_hash=token.token_hash).exclude(pk=token.pk).exists():
            raise ValidationError({"value": "another gateway token already has this value"}) from None
        raise ValidationError({"name": f"a gateway token named {token.name!r} already exists"}) from None
    return plaintext


def gateway_token_create(
    *,
    name: str,
    scope_resolve: bool = True,
    scope_report: bool = True,
    scope_credentials: bool = False,
    connection_ids: Sequence[str] = (),
    spend_ceiling_usd: Decimal | str | None = None,
    value: str | None = None,
) -> tuple[GatewayToken, str]:
    """A new token and its value (shown once), limited like the admin's: to ``connection_ids``
    (empty: every connection) and a spend ceiling per budget period (None: none). ValidationError
    names the field at fault (``name``, ``scopes``, ``connection_ids``, ``spend_ceiling_usd``,
    ``value``)."""
    name = name.strip()
    if not name:
        raise ValidationError({"name": "a gateway token needs a name"})
    if not (scope_resolve or scope_report or scope_credentials):
        raise ValidationError(
            {"scopes": "a gateway token needs at least one scope: resolve, report, credentials"}
        )
    ids = list(dict.fromkeys(connection_ids))
    if message := connection_ids_errors(ids):
        raise ValidationError({"connection_ids": message})
    token = GatewayToken(
        name=name,
        scope_resolve=scope_resolve,
        scope_report=scope_report,
        scope_credentials=scope_credentials,
        connection_ids=ids,
        spend_ceiling_usd=_spend_ceiling(spend_ceiling_usd),
    )
    return token, gateway_token_issue(token, value=value)


def _spend_ceiling(value: Decimal | str | None) -> Decimal | None:
    """The model field's own checks (a number ≥ 0 with at most 6 decimals and 10 integer digits)."""
    if value is None or value == "":
        return None
    field = GatewayToken._meta.get_field("spend_ceiling_usd")
    try:
        ceiling: Decimal = field.clean(value, None)
    except ValidationError as exc:
        raise ValidationError({"spend_ceiling_usd": " ".join(exc.messages)}) from None
    return ceiling


def gateway_token_authenticate(*, plaintext: str, now: datetime) -> GatewayTokenGrant | None:
    """The live token with this value, or None; last_used_at is written at most once a minute."""
    if len(plaintext) > 256:
        return None
    presented_hash = gateway_token_hash(plaintext)
    # The indexed lookup compares SHA-256 digests, never the secret: however long the index takes,
    # it can at most tell a caller how many leading digest characters of a value *they chose* match
    # a stored digest. Knowing part of a digest does not help find a value that hashes to it (a
    # preimage of SHA-256; the tokens carry 256 random bits), so timing the lookup leaks nothing
    # useful. The comparison in Python below is constant-time anyway, so that no code path of ours
    # compares a secret-derived value with an early exit (and a database whose collation matched
    # loosely could not let a near miss through).
    token = gateway_token_by_hash(token_hash=presented_hash)
    if token is None or not hmac.compare_digest(token.token_hash, presented_hash):
        return None
    threshold = now - LAST_USED_RESOLUTION
    if token.last_used_at is None or token.last_used_at <= threshold:
        try:
            # Conditional: concurrent requests of the same minute write it once.
            GatewayToken.objects.filter(pk=token.id).filter(
                Q(last_used_at__isnull=True) | Q(last_used_at__lte=threshold)
            ).update(last_used_at=now)
        except DatabaseError:
            # Bookkeeping, not access: a database that cannot take the write now (SQLite under
            # another writer's lock) must not turn a read-only call into an error.
            logger.warning("gateway token %s: last_used_at not written", token.id, exc_info=True)
        else:
            token = replace(token, last_used_at=now)
    return token


def gateway_token_revoke(*, token_ids: list[int], now: datetime) -> int:
    """Revoke the live tokens among token_ids; returns how many were revoked (already revoked: kept)."""
    return GatewayToken.objects.filter(pk__in=token_ids, revoked_at__isnull=True).update(revoked_at=now)
