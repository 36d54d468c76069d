"""How one alert notification reaches one channel: the generic webhook (JSON, signed the Standard
Webhooks way), Slack- and Discord-compatible webhooks, and e-mail through Django's mail settings.

Each sender either returns (delivered) or raises ``DeliveryError``, transient (worth another
attempt: a network fault, a timeout, HTTP 408, 429 or 5xx, an SMTP 4xx) or not (any other 4xx, a
redirect, an SMTP 5xx). An error's words never hold the channel's secret nor a webhook URL's path and
query (Slack's and Discord's URLs carry their token there): only the scheme, host and port.

Signature (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md):
``webhook-signature: v1,<base64 of HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")>``,
where the key is the base64-decoded remainder of a ``whsec_...`` secret, else the secret's UTF-8
bytes. ``webhook-id`` is the delivery id, the same on every retry; ``webhook-timestamp`` is the
attempt's Unix time in seconds. The standardwebhooks package signs; docs/ALERTS.md shows a
receiver's check.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import smtplib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
from django.conf import settings
from django.core.mail import EmailMessage
from standardwebhooks import Webhook

from ladder.domain.alerts import alert_email_addresses
from ladder.security.logredact import redact_url

USER_AGENT = "omniroute-ladder-alerts/1"
DELIVERY_ID_HEADER = "X-Ladder-Delivery-Id"
MESSAGE_ID_DOMAIN = "omniroute-ladder"
SLACK_SECTION_MAX_CHARS = 3000
DISCORD_CONTENT_MAX_CHARS = 2000
RESPONSE_SNIPPET_CHARS = 200
WHSEC_PREFIX = "whsec_"
TITLES = {"fired": "FIRING", "recovered": "RECOVERED", "test": "TEST"}


class DeliveryError(Exception):
    """``retry_after_s``: how long the receiver asked to be left alone (a 429's or 503's Retry-After)."""

    def __init__(self, message: str, *, transient: bool, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.transient = transient
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class Target:
    """What a sender needs of a channel (read from the row once per attempt)."""

    kind: str
    name: str
    url: str = ""
    secret: str = ""
    email_to: str = ""


# --- signing --------------------------------------------------------------------------------


def signing_key(secret: str) -> bytes:
    """Not standardwebhooks' own reading of a secret: it would base64-decode a plain one leniently."""
    if secret.startswith(WHSEC_PREFIX):
        try:
            key = base64.b64decode(secret[len(WHSEC_PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            return secret.encode()
        if not key:  # an empty HMAC key signs nothing anyone could not forge
            raise DeliveryError(f"secret: no key after {WHSEC_PREFIX!r}", transient=False)
        return key
    return secret.encode()


def webhook_signature(*, secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    moment = datetime.fromtimestamp(timestamp, UTC)
    return Webhook(signing_key(secret)).sign(msg_id, moment, body.decode())


# --- words ------------------------------------------------------------------------------------


def title(payload: Mapping[str, Any]) -> str:
    rule = payload.get("rule") or {}
    label = TITLES.get(str(payload.get("event")), str(payload.get("event", "")).upper())
    name = rule.get("name") or "OmniRoute Ladder"
    return f"[{label}] {name}: {payload.get('subject', '')}"


def text_lines(payload: Mapping[str, Any]) -> list[str]:
    lines = [str(payload.get("summary") or "")]
    if payload.get("opened_at"):
        lines.append(f"Opened at {payload['opened_at']}")
    if payload.get("closed_at"):
        lines.append(f"Closed at {payload['closed_at']}")
    if payload.get("link"):
        lines.append(str(payload["link"]))
    lines.append(f"Delivery {payload.get('delivery_id', '')}")
    return [line for line in lines if line]


def plain_text(payload: Mapping[str, Any]) -> str:
    return "\n".join([title(payload), *text_lines(payload)])


def slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(payload: Mapping[str, Any]) -> dict[str, Any]:
    lines = text_lines(payload)
    section = f"*{slack_escape(title(payload))}*\n" + slack_escape(lines[0] if lines else "")
    context = " · ".join(slack_escape(line) for line in lines[1:])
    return {
        "text": plain_text(payload),
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": section[:SLACK_SECTION_MAX_CHARS]}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": context[:SLACK_SECTION_MAX_CHARS]}]},
        ],
    }


def discord_body(payload: Mapping[str, Any]) -> dict[str, Any]:
    text = plain_text(payload)
    if len(text) > DISCORD_CONTENT_MAX_CHARS:
        text = text[: DISCORD_CONTENT_MAX_CHARS - 1] + "…"
    # No @everyone or role pings from a subject's words.
    return {"content": text, "allowed_mentions": {"parse": []}}


# --- errors without secrets -------------------------------------------------------------------


def scrub(text: str, target: Target) -> str:
    secrets = [target.secret, target.url]
    with contextlib.suppress(ValueError):  # a URL that does not parse is scrubbed whole
        parts = urlsplit(target.url)
        secrets += [parts.path, parts.query, parts.password or ""]
    for secret in sorted({s for s in secrets if s and s != "/"}, key=len, reverse=True):
        text = text.replace(secret, "…")
    return text


# --- senders ----------------------------------------------------------------------------------


def send(target: Target, payload: Mapping[str, Any], *, now: datetime) -> None:
    if target.kind == "email":
        send_email(target, payload)
        return
    delivery_id = str(payload["delivery_id"])
    headers = {"User-Agent": USER_AGENT, "Content-Type": "application/json", DELIVERY_ID_HEADER: delivery_id}
    if target.kind == "webhook":
        body = orjson.dumps(payload)
        timestamp = int(now.timestamp())
        headers |= {"webhook-id": delivery_id, "webhook-timestamp": str(timestamp)}
        if target.secret:
            headers["webhook-signature"] = webhook_signature(
                secret=target.secret, msg_id=delivery_id, timestamp=timestamp, body=body
            )
    elif target.kind == "slack":
        body = orjson.dumps(slack_body(payload))
    elif target.kind == "discord":
        body = orjson.dumps(discord_body(payload))
    else:
        raise DeliveryError(f"channel kind {target.kind!r} has no sender", transient=False)
    post(target, body, headers)


def post(target: Target, body: bytes, headers: Mapping[str, str]) -> None:
    where = redact_url(target.url)
    if urlsplit(target.url).scheme not in ("http", "https"):
        raise DeliveryError(f"url: must be http(s), got {where}", transient=False)
    timeout_s = float(settings.LADDER_ALERT_HTTP_TIMEOUT_S)
    request = httpx.Request(
        "POST", target.url, content=body, headers=dict(headers),
        extensions={"timeout": httpx.Timeout(timeout_s).as_dict()},
    )  # fmt: skip
    try:
        # The transport, not a Client: a Client logs every request's URL at INFO, and Slack's and
        # Discord's webhook URLs are secrets. No redirect is followed.
        with httpx.HTTPTransport(retries=0) as transport:
            response = transport.handle_request(request)
            try:
                response.read()
            finally:
                response.close()
    except httpx.TimeoutException as exc:
        raise DeliveryError(
            f"{type(exc).__name__} after {timeout_s:g} s from {where}", transient=True
        ) from None
    except httpx.HTTPError as exc:
        detail = scrub(str(exc), target) or type(exc).__name__
        raise DeliveryError(f"{type(exc).__name__} from {where}: {detail}", transient=True) from None
    status = response.status_code
    if 200 <= status < 300:
        return
    snippet = scrub(response.text[:RESPONSE_SNIPPET_CHARS], target).strip()
    message = f"HTTP {status} from {where}" + (f": {snippet}" if snippet else "")
    transient = status in (408, 429) or status >= 500
    raise DeliveryError(message, transient=transient, retry_after_s=retry_after_s(response.headers))


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Retry-After in seconds (the delay form; an HTTP date is ignored)."""
    raw = (headers.get("retry-after") or "").strip()
    # isascii: "²".isdigit() holds but float() refuses it; the length bound keeps float() finite.
    return float(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 9 else None


def send_email(target: Target, payload: Mapping[str, Any]) -> None:
    recipients = alert_email_addresses(target.email_to)
    if not recipients:
        raise DeliveryError("email_to: no address to send to", transient=False)
    delivery_id = str(payload["delivery_id"])
    message = EmailMessage(
        subject=title(payload)[:200],
        body="\n\n".join(text_lines(payload)) + "\n",
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=recipients,
        headers={DELIVERY_ID_HEADER: delivery_id, "Message-ID": f"<{delivery_id}@{MESSAGE_ID_DOMAIN}>"},
    )
    try:
        message.send(fail_silently=False)
    except smtplib.SMTPRecipientsRefused as exc:
        codes = [code for code, _ in exc.recipients.values()]
        raise DeliveryError(
            f"SMTP refused every recipient ({codes})", transient=all(c < 500 for c in codes)
        ) from None
    except smtplib.SMTPResponseException as exc:
        said = exc.smtp_error
        words = said.decode(errors="replace") if isinstance(said, bytes) else str(said)
        raise DeliveryError(
            f"SMTP {exc.smtp_code}: {words[:RESPONSE_SNIPPET_CHARS]}", transient=exc.smtp_code < 500
        ) from None
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(
            f"SMTP {type(exc).__name__}: {str(exc)[:RESPONSE_SNIPPET_CHARS]}", transient=True
        ) from None
