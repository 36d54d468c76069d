"""``FakeUpstreamControl``: drive a running fake upstream's scenarios over HTTP (tests, the demo)."""

from __future__ import annotations

from datetime import datetime
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

ANY = "*"


def connection_base_url(url: str, kind: str, connection: str | None = None) -> str:
    base = f"{url.rstrip('/')}/{quote(kind, safe='')}"
    return f"{base}/@{quote(connection, safe='')}" if connection else base


class FakeUpstreamControl:
    """A thin client of ``/_control``; every scenario method returns the server's JSON answer.

    ``kind=None`` on ``slow``/``malformed``/``oversized``/``reset_connection`` means every kind;
    ``connection`` narrows a scenario to one connection's namespace (``/<kind>/@<connection>/…``).
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

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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
        payload = {"kind": kind, "connection": connection, "scenario": scenario, **params}
        return self._post("scenario", payload)

    def static(self, kind: str | None, *, connection: str | None = None) -> dict[str, Any]:
        return self.scenario(kind, "static", connection=connection)

    def drain(
        self,
        kind: str,
        *,
        drain_s: float,
        reset_after_s: float = 0.0,
        start_pct: float = 100.0,
        end_pct: float = 0.0,
        started_at: datetime | None = None,
        exhausted_error: str | None = None,
        connection: str | None = None,
    ) -> dict[str, Any]:
        return self.scenario(
            kind,
            "drain",
            connection=connection,
            drain_s=drain_s,
            reset_after_s=reset_after_s,
            start_pct=start_pct,
            end_pct=end_pct,
            started_at=started_at.isoformat() if started_at else None,
            exhausted_error=exhausted_error,
        )

    def set_remaining(
        self,
        kind: str,
        remaining_pct: float,
        *,
        reset_at: datetime | None = None,
        exhausted_error: str | None = None,
        connection: str | None = None,
    ) -> dict[str, Any]:
        return self.scenario(
            kind,
            "set",
            connection=connection,
            remaining_pct=remaining_pct,
            reset_at=reset_at.isoformat() if reset_at else None,
            exhausted_error=exhausted_error,
        )

    def error(
        self,
        kind: str,
        case: str,
        *,
        times: int | None = None,
        call: str | None = None,
        connection: str | None = None,
    ) -> dict[str, Any]:
        return self.scenario(kind, "error", connection=connection, case=case, times=times, call=call)

    def slow(
        self, delay_ms: float, *, kind: str | None = None, connection: str | None = None
    ) -> dict[str, Any]:
        return self.scenario(kind, "slow", connection=connection, delay_ms=delay_ms)

    def malformed(
        self,
        kind: str | None,
        *,
        times: int | None = None,
        call: str | None = None,
        connection: str | None = None,
    ) -> dict[str, Any]:
        return self.scenario(kind, "malformed", connection=connection, times=times, call=call)

    def oversized(
        self,
        kind: str | None,
        *,
        size_mb: float = 16.0,
        chunked: bool = False,
        times: int | None = None,
        call: str | None = None,
        connection: str | None = None,
    ) -> dict[str, Any]:
        return self.scenario(
            kind, "oversized", connection=connection, size_mb=size_mb, chunked=chunked, times=times, call=call
        )

    def reset_connection(
        self,
        kind: str | None,
        *,
        times: int | None = None,
        call: str | None = None,
        connection: str | None = None,
    ) -> dict[str, Any]:
        return self.scenario(kind, "reset_connection", connection=connection, times=times, call=call)

    def variant(
        self, kind: str, variant: str, *, call: str | None = None, connection: str | None = None
    ) -> dict[str, Any]:
        return self.scenario(kind, "variant", connection=connection, variant=variant, call=call)


class FakeUpstreamControlError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
