"""The adapter protocol, the connection it is given, and the one HTTP path every poll takes.

Error contract of ``fetch``: a usable 2xx answer gives a ``Reading``; a 2xx answer that cannot be
read (missing or renamed fields, malformed JSON, a body over the size cap) gives an *unverifiable*
``Reading`` whose ``note`` says why; an HTTP error, an error carried inside a 2xx body (z.ai,
MiniMax) or a transport failure raises ``FetchError`` carrying the adapter's ``Failure``, so that
the caller backs off on ``rate_limited``, disables on ``auth_failed`` and retries when
``transient`` (5xx, timeouts, connection resets).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Protocol

import httpx

from ladder.domain.types import Failure, Overage, Reading, Source, Window
from ladder.domain.windows import provider_poll_floor_s
from ladder.providers.ratelimit import HeaderWindow
from ladder.providers.timeparse import cap_retry_after_s, parse_duration_s, retry_after_s
from ladder.providers.values import decode_body, error_fields, lower_headers

DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=3.0)
MAX_BODY_BYTES = 1 << 20
# gemini-cli's threshold: a 429 asking to wait longer than this is exhaustion, not throttling.
LONG_RETRY_S = 300.0


@dataclass(frozen=True)
class ConnectionRef:
    """What an adapter needs to know about a connection; never a Django model.

    ``params`` carries the few per-account values some endpoints need besides the credential:
    ``account_id`` (Codex ``ChatGPT-Account-Id``), ``profile_arn`` (Kiro), ``project`` (Gemini and
    Antigravity; otherwise discovered with ``loadCodeAssist``).
    """

    id: str
    provider: str
    auth_type: str | None
    credential: str
    base_url: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)


class FetchError(Exception):
    """A poll that got no reading: the upstream refused, errored or could not be reached."""

    def __init__(self, failure: Failure, *, status: int | None = None, transient: bool | None = None) -> None:
        super().__init__(
            f"{failure.classification}: {failure.detail}" if failure.detail else failure.classification
        )
        self.failure = failure
        self.status = status
        self.transient = is_transient(failure, status) if transient is None else transient


class Unverifiable(Exception):
    """Raised inside a poll when the answer cannot be read; ``fetch`` turns it (its note: the
    message) into a reading."""


class ProviderAdapter(Protocol):
    """What the services ask of a connection kind: poll its quota, read its passive headers,
    classify its failures. Every adapter is a ``BaseAdapter``, which the registry hands out."""

    @property
    def kind(self) -> str: ...  # the fixture name: "claude-oauth", "codex-chatgpt", …

    @property
    def supports_poll(self) -> bool: ...  # False: no quota endpoint, fetch answers unverifiable

    def fetch(
        self,
        connection: ConnectionRef,
        client: httpx.Client,
        now: datetime,
        *,
        base_url_override: str | None = None,
    ) -> Reading: ...

    def read_headers(self, headers: Mapping[str, str], now: datetime) -> Reading | None: ...

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure: ...

    def wants_usage_recheck(self, status: int, failure: Failure) -> bool: ...


def is_transient(failure: Failure, status: int | None) -> bool:
    """Worth retrying soon without an operator or a quota reset."""
    if failure.classification == "rate_limited":
        return True
    if failure.classification == "upstream_error":
        return status is None or status >= 500 or status in (408, 429)
    return False


def resolve_base_url(own: str | None, override: str | None, default: str | None) -> str | None:
    """The connection's own base URL, else the settings override, else the adapter default."""
    for candidate in (own, override, default):
        if candidate and candidate.strip():
            return candidate.strip().rstrip("/")
    return None


def unverifiable(now: datetime, note: str, *, source: Source = "poll") -> Reading:
    return Reading(now, (), source, verifiable=False, note=note)


def poll_reading(
    now: datetime,
    windows: Iterable[Window] = (),
    *,
    problems: Sequence[str] = (),
    notes: Sequence[str] = (),
    overage: Overage | None = None,
) -> Reading:
    """A poll's reading: verifiable unless a field it needs was unreadable (``problems``); the note
    says the problems, then anything else worth saying (``notes``)."""
    note = "; ".join([*problems, *notes])
    return Reading(now, tuple(windows), "poll", verifiable=not problems, observed_overage=overage, note=note)


class Upstream:
    """The HTTP calls of one poll: one base URL, explicit timeouts, capped bodies, typed failures."""

    def __init__(self, adapter: BaseAdapter, client: httpx.Client, base_url: str, now: datetime) -> None:
        self.adapter = adapter
        self.client = client
        self.base_url = base_url
        self.now = now

    def json(
        self, method: str, path: str, *, headers: Mapping[str, str], json_body: object | None = None
    ) -> object:
        """The decoded JSON of a 2xx answer; FetchError for any other status and when the call fails,
        Unverifiable when the answer cannot be read."""
        cap = self.adapter.max_body_bytes
        try:
            with self.client.stream(
                method,
                self.base_url + path,
                headers=dict(headers),
                json=json_body,
                timeout=self.adapter.timeout,
                follow_redirects=False,
            ) as response:
                content, truncated = _read_capped(response, cap)
        except httpx.TimeoutException as exc:
            failure = Failure("upstream_error", detail=f"timeout calling {path}: {type(exc).__name__}")
            raise FetchError(failure, transient=True) from exc
        except httpx.RequestError as exc:
            # Never the exception's text: httpx may quote a header value, i.e. the credential.
            failure = Failure(
                "upstream_error", detail=f"transport error calling {path}: {_transport_summary(exc)}"
            )
            raise FetchError(failure, transient=True) from exc
        if not 200 <= response.status_code < 300:
            # The body for classification: JSON when it parses, else text, None when empty or too big.
            body = None if truncated or not content else decode_body(content)
            failure = self.adapter.classify_failure(response.status_code, response.headers, body, self.now)
            raise FetchError(failure, status=response.status_code)
        if truncated:
            raise Unverifiable(f"response body exceeds {cap} bytes; not read")
        try:
            return json.loads(content)
        except ValueError as exc:
            raise Unverifiable(f"malformed JSON in the response: {exc}") from exc


def _read_capped(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        return b"", True
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > cap:
            return b"", True
        chunks.append(chunk)
    return b"".join(chunks), False


def throttled(wait_s: float | None, *, detail: str, window: str | None = None) -> Failure:
    """A 429 that names no exhaustion: throttling, unless it asks to wait longer than 5 minutes."""
    if wait_s is not None and wait_s > LONG_RETRY_S:
        return Failure(
            "quota_exhausted", window=window, retry_after_s=wait_s, detail=f"{detail} (wait {wait_s:g}s)"
        )
    return Failure("rate_limited", window=window, retry_after_s=wait_s, detail=detail)


_SAFE_TRANSPORT_MESSAGES: tuple[tuple[type[Exception], str], ...] = (
    (httpx.ConnectError, "could not connect"),
    (httpx.ReadError, "connection read failed"),
    (httpx.WriteError, "connection write failed"),
    (httpx.RemoteProtocolError, "the upstream broke the HTTP protocol"),
)


def _transport_summary(exc: Exception) -> str:
    """The exception's type name and, for the safe kinds, a fixed message; never its own text (a
    timeout, caught before, says its type name only)."""
    for kind, message in _SAFE_TRANSPORT_MESSAGES:
        if isinstance(exc, kind):
            return f"{type(exc).__name__} ({message})"
    return type(exc).__name__


@dataclass(frozen=True)
class ErrorReply:
    """A failed answer (or a 2xx carrying an error), read once for every adapter's classifier:
    lower-cased headers, the body decoded, and the usual ``(type, code, message)`` of its error."""

    status: int
    headers: dict[str, str]
    body: object
    now: datetime
    error_type: str = ""
    code: str = ""
    message: str = ""

    @classmethod
    def read(cls, status: int, headers: Mapping[str, str], body: object, now: datetime) -> ErrorReply:
        decoded = decode_body(body)
        return cls(status, lower_headers(headers), decoded, now, *error_fields(decoded))

    @property
    def wait_s(self) -> float | None:
        """Seconds from ``retry-after-ms`` or ``retry-after``, capped at 7 days; never raises."""
        ms = parse_duration_s(self.headers.get("retry-after-ms"), unit_s=0.001)
        if ms is not None:
            return cap_retry_after_s(ms)
        return retry_after_s(self.headers.get("retry-after"), now=self.now)

    def by_status(self, detail: str = "") -> Failure:
        """The fallback every adapter shares when the body says nothing more specific."""
        status, wait = self.status, self.wait_s
        if status in (401, 403):
            return Failure("auth_failed", detail=detail or f"HTTP {status}")
        if status == 402:
            return Failure(
                "quota_exhausted", retry_after_s=wait, detail=detail or "HTTP 402 payment required"
            )
        if status == 429:
            return throttled(wait, detail=detail or "HTTP 429")
        return Failure("upstream_error", retry_after_s=wait, detail=detail or f"HTTP {status}")


class BaseAdapter:
    """Every adapter: a ``ProviderAdapter`` and what tests and the registry read besides. A kind with
    a quota endpoint names it (``usage_path``) and reads its answer (``read_usage``); a kind whose
    answers carry quota headers lists them (``header_windows``); ``classify`` reads its failures,
    falling back on the status."""

    kind: ClassVar[str]  # the fixture name: "claude-oauth", "codex-chatgpt", …
    provider: ClassVar[str]  # the provider id of KINDS.md: "claude", "codex", …
    auth_type: ClassVar[str]
    default_base_url: ClassVar[str | None] = None
    usage_path: ClassVar[str | None] = None  # None: no quota endpoint
    usage_method: ClassVar[str] = "GET"
    usage_headers: ClassVar[Mapping[str, str]] = {"Accept": "application/json"}
    header_windows: ClassVar[Sequence[HeaderWindow]] = ()

    def __init__(
        self, *, timeout: httpx.Timeout = DEFAULT_TIMEOUT, max_body_bytes: int = MAX_BODY_BYTES
    ) -> None:
        self.timeout = timeout
        self.max_body_bytes = max_body_bytes

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.kind}>"

    @property
    def supports_poll(self) -> bool:
        return self.usage_path is not None

    @property
    def poll_floor_s(self) -> float | None:
        """Seconds its usage endpoint needs between two polls (DESIGN L5); None: no floor. Declared
        in ``ladder.domain.windows.PROVIDER_POLL_FLOOR_S``, which selectors read too."""
        return provider_poll_floor_s(self.provider) if self.supports_poll else None

    def fetch(
        self,
        connection: ConnectionRef,
        client: httpx.Client,
        now: datetime,
        *,
        base_url_override: str | None = None,
    ) -> Reading:
        if not self.supports_poll:
            return unverifiable(
                now, f"{self.kind} has no quota endpoint; only headers and errors tell its quota"
            )
        base_url = resolve_base_url(connection.base_url, base_url_override, self.default_base_url)
        if base_url is None:
            return unverifiable(now, f"{self.kind}: no base URL")
        try:
            return self.poll(Upstream(self, client, base_url, now), connection, now)
        except Unverifiable as exc:
            return unverifiable(now, f"{self.kind}: {exc}")

    def poll(self, upstream: Upstream, connection: ConnectionRef, now: datetime) -> Reading:
        """One call to the quota endpoint; an error inside a 2xx body (``error_in_body``) raises."""
        assert self.usage_path is not None  # noqa: S101  (narrows the type: fetch polls only then)
        headers = {**self.auth_headers(connection), **self.usage_headers}
        body = upstream.json(
            self.usage_method, self.usage_path, headers=headers, json_body=self.usage_body(connection)
        )
        if self.error_in_body(body):
            raise FetchError(self.classify_failure(200, {}, body, now), status=200)
        return self.read_usage(body, now)

    def auth_headers(self, connection: ConnectionRef) -> dict[str, str]:
        return {"Authorization": f"Bearer {connection.credential}"}

    def usage_body(self, connection: ConnectionRef) -> object | None:
        return None

    def error_in_body(self, body: object) -> bool:
        return False

    def read_usage(self, body: object, now: datetime) -> Reading:
        raise NotImplementedError(f"{self.kind} has no quota endpoint")

    def read_headers(self, headers: Mapping[str, str], now: datetime) -> Reading | None:
        """A ``headers`` reading of every window ``header_windows`` finds; None when it finds none."""
        lowered = lower_headers(headers)
        windows = tuple(w for spec in self.header_windows if (w := spec.read(lowered, now)) is not None)
        return Reading(now, windows, "headers") if windows else None

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        return self.classify(ErrorReply.read(status, headers, body, now))

    def classify(self, reply: ErrorReply) -> Failure:
        return reply.by_status()

    def wants_usage_recheck(self, status: int, failure: Failure) -> bool:
        return False
