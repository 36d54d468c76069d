"""A logging filter that blanks secrets in log lines, installed on every handler by settings.LOGGING.

Credentials travel in request headers, which httpx and httpcore do not log, even at DEBUG. But
httpcore logs each response's headers at DEBUG, and an upstream may answer with a cookie or echo a
header (a cookie-authenticated provider renews its session that way), and an exception's text may
quote a header. So values of credential-bearing headers and anything after an auth scheme word are
replaced by "[redacted]" before a record is written, whoever logged it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

REDACTED = "[redacted]"
SECRET_HEADERS = (
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
)
_HEADERS = "|".join(re.escape(name) for name in SECRET_HEADERS)
_QUOTED = r"""(?P<q>['"])(?:\\.|(?!(?P=q)).)*(?P=q)"""
PATTERNS = (
    # httpcore's header tuples: (b'Set-Cookie', b'session=…'), ('authorization', '…')
    re.compile(rf"""(?P<keep>b?(['"])(?:{_HEADERS})\2\s*,\s*b?){_QUOTED}""", re.IGNORECASE),
    # "Authorization: …" to the end of the line, a dict's 'cookie': '…', "x-api-key=…"
    re.compile(rf"""(?P<keep>\b(?:{_HEADERS})['"]?\s*[:=]\s*)(?:{_QUOTED}|[^\r\n,}}\]]+)""", re.IGNORECASE),
    # an auth scheme and its credential wherever it appears: "Bearer …", "token …"
    re.compile(r"""(?P<keep>\b(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=:%-]{8,}""", re.IGNORECASE),
)


def _replacement(match: re.Match[str]) -> str:
    quote = match.groupdict().get("q") or ""
    return f"{match.group('keep')}{quote}{REDACTED}{quote}"


def redact(text: str) -> str:
    for pattern in PATTERNS:
        text = pattern.sub(_replacement, text)
    return text


def redact_url(url: str) -> str:
    """Scheme, host and port only: Slack's and Discord's webhook URLs hold their token in the path."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(invalid URL)"
    return f"{parts.scheme}://{host}{port}/…"


class SecretRedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


# --- a connection's own credential, echoed back by its upstream ----------------------------------
# Some upstreams quote the key they were sent ("Incorrect API key provided: sk-…"), whole or only its
# end. The filter above cannot know a credential; the callers that hold one (the poller, the failure
# service) strip it from every detail before it is stored or logged.
#
# Written here because no library fits: what is wanted is every stretch of the text that is also a
# stretch of the secret, at least SECRET_FRAGMENT_MIN characters long (difflib finds one longest
# match at a time, O(n·m); Aho-Corasick libraries match whole words). Every such stretch is covered
# by its SECRET_FRAGMENT_MIN-character windows, each of which is a window of the secret, and every
# window of the text found among the secret's windows is such a stretch: so one pass over the text
# with a set of the secret's windows finds exactly those stretches, in O(len(text) + len(secret)).

SECRET_FRAGMENT_MIN = 12
SECRET_WHOLE_MIN = 4  # a shorter "credential" would blank ordinary words; no real one is that short


def strip_secrets(text: str, secrets: Iterable[str | None]) -> str:
    """text with each secret, and every stretch of SECRET_FRAGMENT_MIN or more characters that also
    occurs in a secret, replaced by REDACTED (overlapping or touching stretches become one)."""
    if not text:
        return text
    width = SECRET_FRAGMENT_MIN
    windows: set[str] = set()
    wholes: list[str] = []
    for secret in secrets:
        if not secret or len(secret) < SECRET_WHOLE_MIN:
            continue
        if len(secret) < width:
            wholes.append(secret)
        else:
            windows.update(secret[start : start + width] for start in range(len(secret) - width + 1))
    if not windows and not wholes:
        return text
    spans = [
        (start, start + width)
        for start in range(len(text) - width + 1)
        if text[start : start + width] in windows
    ]
    for whole in wholes:
        found = text.find(whole)
        while found != -1:
            spans.append((found, found + len(whole)))
            found = text.find(whole, found + 1)
    if not spans:
        return text
    spans.sort()
    parts: list[str] = []
    kept_from = 0
    run_start, run_end = spans[0]
    for start, end in spans[1:]:
        if start <= run_end:  # overlapping or touching: one run
            run_end = max(run_end, end)
            continue
        parts += [text[kept_from:run_start], REDACTED]
        kept_from, run_start, run_end = run_end, start, end
    parts += [text[kept_from:run_start], REDACTED, text[run_end:]]
    return "".join(parts)
