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
