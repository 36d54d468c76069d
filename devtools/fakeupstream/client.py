"""``FakeUpstreamControl``: drive a running fake upstream's scenarios over HTTP (tests, the demo)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from devtools.fakeupstream.scenarios import FaultMode

ANY = "*"


def connection_base_url(url: str, kind: str, connection: str | None = None) -> str:
    base = f"{url.rstrip('/')}/{quote(kind, safe='')}"
    return f"{base}/@{quote(connection, safe='')}" if connection else base


class FakeUpstreamControl:
    """A thin client of ``/_control``; every scenario method returns the server's JSON answer.

    A scenario method takes the scenario's required parameters, and its optional ones as keywords
    (the package docstring lists them; the server refuses any other with a 400 naming it).
    ``kind=None`` on ``slow`` and ``fault`` means every kind; ``connection`` narrows a scenario to
    one connection's namespace (``/<kind>/@<connection>/…``).
    """

    def __init__(self, base_url: str, *, client: httpx.Client | None = None, timeout_s: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._own_client = client is None
        self._client = client or httpx.Client(timeout=timeout_s)

    # --- plumbing ---

    def url_for(self, kind: str, connection: str | None = None) -> str:
        return connection_base_url(self.base_url, kind, connection)

    def _post(self, action: str, payload: dict[str, Any]) -> dict[str, Any]:
        response = self._client.post(f"{self.base_url}/_control/{action}", json=payload)
        return self._answer(response)

    @staticmethod
    def _answer(response: httpx.Response) -> dict[str, Any]:
        answer = response.json()
        if response.status_code != 200:
            raise FakeUpstreamControlError(response.status_code, str(answer.get("error", answer)))
        assert isinstance(answer, dict)
        return answer

    def close(self) -> None:
        if self._own_client:
            self._client.close()

    def __enter__(self) -> FakeUpstreamControl:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- state ---

    def state(self) -> dict[str, Any]:
        return self._answer(self._client.get(f"{self.base_url}/_control/state"))

    def count(self, kind: str, *, connection: str | None = ANY, call: str | None = ANY) -> int:
        """Requests served for ``kind``; ``connection=None`` is the shared namespace, ``ANY`` all."""
        return sum(
            row["count"]
            for row in self.state()["counts"]
            if row["kind"] == kind
            and (connection == ANY or row["connection"] == connection)
            and (call == ANY or row["call"] == call)
        )

    # --- token endpoints (devtools.fakeupstream.tokens) ---

    def mint_login(
        self,
        kind: str,
        *,
        lifetime_s: float | None = None,
        account_id: str | None = None,
        auth_method: str = "social",
    ) -> dict[str, Any]:
        """A new login of ``kind``: its tokens and ``file``, what the kind's CLI would write."""
        payload: dict[str, Any] = {"kind": kind, "auth_method": auth_method}
        if lifetime_s is not None:
            payload["lifetime_s"] = lifetime_s
        if account_id is not None:
            payload["account_id"] = account_id
        return self._post("tokens", payload)

    def token_lifetime(self, lifetime_s: float) -> dict[str, Any]:
        """The lifetime of the access tokens issued from now on (seconds)."""
        return self._post("tokens", {"lifetime_s": lifetime_s})

    def token_record(self) -> dict[str, Any]:
        """Every redemption of a refresh token, and a summary (``ok``, ``reused``, …)."""
        return self._answer(self._client.get(f"{self.base_url}/_control/tokens"))

    def reset(self, kind: str | None = None, connection: str | None = None) -> dict[str, Any]:
        """Without a kind: back to the startup state (scenarios, counts, delay, clock)."""
        return self._post("reset", {"kind": kind, "connection": connection})

    # --- clock ---

    def now(self) -> datetime:
        return datetime.fromisoformat(self.state()["now"])

    def freeze(self, at: datetime) -> dict[str, Any]:
        return self._post("clock", {"now": at.isoformat()})

    def advance(self, seconds: float) -> dict[str, Any]:
        return self._post("clock", {"advance_s": seconds})

    def real_clock(self) -> dict[str, Any]:
        return self._post("clock", {"real": True})

    # --- scenarios ---

    def scenario(
        self, kind: str | None, scenario: str, *, connection: str | None = None, **params: Any
    ) -> dict[str, Any]:
        """Any scenario of ``/_control/scenario`` (the package docstring lists their parameters); a
        datetime parameter is sent as ISO 8601."""
        payload = {"kind": kind, "connection": connection, "scenario": scenario}
        for name, value in params.items():
            payload[name] = value.isoformat() if isinstance(value, datetime) else value
        return self._post("scenario", payload)

    def static(self, kind: str | None, *, connection: str | None = None) -> dict[str, Any]:
        return self.scenario(kind, "static", connection=connection)

    def drain(self, kind: str, *, drain_s: float, **options: Any) -> dict[str, Any]:
        """``options``: ``reset_after_s``, ``start_pct``, ``end_pct``, ``started_at``,
        ``exhausted_error``, ``connection``."""
        return self.scenario(kind, "drain", drain_s=drain_s, **options)

    def set_remaining(
        self, kind: str, remaining_pct: float, *, reset_at: datetime | None = None, **options: Any
    ) -> dict[str, Any]:
        """``options``: ``exhausted_error``, ``connection``."""
        return self.scenario(kind, "set", remaining_pct=remaining_pct, reset_at=reset_at, **options)

    def error(self, kind: str, case: str, **options: Any) -> dict[str, Any]:
        """``options``: ``times``, ``call``, ``connection``."""
        return self.scenario(kind, "error", case=case, **options)

    def fault(self, kind: str | None, mode: FaultMode, **options: Any) -> dict[str, Any]:
        """``mode``: ``malformed``, ``oversized`` (``size_mb`` = 16, ``chunked``) or ``reset_connection``;
        ``options``: ``times``, ``call``, ``connection``, and oversized's own."""
        return self.scenario(kind, mode, **options)

    def slow(
        self, delay_ms: float, *, kind: str | None = None, connection: str | None = None
    ) -> dict[str, Any]:
        return self.scenario(kind, "slow", connection=connection, delay_ms=delay_ms)

    def variant(self, kind: str, variant: str, **options: Any) -> dict[str, Any]:
        """``options``: ``call``, ``connection``."""
        return self.scenario(kind, "variant", variant=variant, **options)


class FakeUpstreamControlError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
