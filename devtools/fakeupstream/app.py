"""The fake upstream's behaviour without the HTTP plumbing: routing, scenarios, clock, counts."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import unquote, urlsplit

from devtools.fakeupstream.clock import Clock
from devtools.fakeupstream.fixtures import (
    ECHO_ERRORS,
    ECHO_PLACEHOLDER,
    ECHO_SUFFIX_CHARS,
    KindFixture,
    normalise_path,
)
from devtools.fakeupstream.payload import ControlError, read_moment, read_number, read_str
from devtools.fakeupstream.replies import AnyReply, DropReply, Reply, StreamReply, json_reply, served_reply
from devtools.fakeupstream.rewriters import REWRITERS, UNSUPPORTED
from devtools.fakeupstream.rewriting import Quota, Served, apply_exhaustion_extras
from devtools.fakeupstream.scenarios import (
    Drain,
    ErrorPlan,
    Fault,
    Pinned,
    Scope,
    ScopeKey,
    Variant,
    scenario_update,
    take_plan,
)
from devtools.fakeupstream.timeshift import shift_times, whole_seconds
from devtools.fakeupstream.tokens import DEFAULT_LIFETIME_S, TokenAuthority, bearer_of

CONTROL_PREFIX = "/_control"
URL_SCHEME = (
    "  {url}/<kind>/<upstream path>                 replay kind's fixture (shared state per kind)\n"
    "  {url}/<kind>/@<connection>/<upstream path>   same, with state of its own for that connection\n"
    "  {url}/_control/state | scenario | reset | clock   control API (see devtools.fakeupstream)"
)


@dataclass
class _Resolved:
    delay_ms: float
    fault: Fault | None
    error: ErrorPlan | None
    quota: Drain | Pinned | None
    variant: Variant | None
    now: datetime


@dataclass
class FakeUpstreamApp:
    fixtures: dict[str, KindFixture]
    delay_ms: float = 0.0
    freeze_at: datetime | None = None
    token_lifetime_s: float = DEFAULT_LIFETIME_S
    clock: Clock = field(init=False)
    tokens: TokenAuthority = field(init=False)
    _initial_delay_ms: float = field(init=False)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _scopes: dict[ScopeKey, Scope] = field(init=False, default_factory=dict)
    _counts: Counter[tuple[str, str | None, str | None]] = field(init=False, default_factory=Counter)

    def __post_init__(self) -> None:
        self.clock = Clock(self.freeze_at)
        self._initial_delay_ms = self.delay_ms
        self.tokens = TokenAuthority(self.token_lifetime_s)

    # --- upstream requests ---

    def handle(
        self, method: str, target: str, *, headers: Mapping[str, str] | None = None, body: bytes = b""
    ) -> AnyReply:
        path = _path_of(target)
        parts = path.split("/")
        if len(parts) < 2 or not parts[1]:
            return json_reply(200, self._index())
        kind = unquote(parts[1])
        fixture = self.fixtures.get(kind)
        if fixture is None:
            return json_reply(404, {"error": f"unknown kind {kind!r}", "kinds": sorted(self.fixtures)})
        rest = parts[2:]
        connection: str | None = None
        if rest and rest[0].startswith("@"):
            connection = unquote(rest[0][1:]) or None
            rest = rest[1:]
        route_path = normalise_path(unquote("/" + "/".join(rest)))
        if self.tokens.is_token_call(kind, method, route_path):
            with self._lock:
                self._counts[(kind, connection, "token")] += 1
            status, answer = self.tokens.redeem(kind, route_path, body, self.clock.now())
            return json_reply(status, answer)
        bearer = bearer_of(headers)
        if bearer is not None:
            access = self.tokens.access_status(bearer, self.clock.now())
            if access in ("expired", "revoked"):
                return self._access_refused(fixture, kind, access)
        call, path_known = fixture.route(method, route_path)
        call_name = call.name if call else None
        resolved = self._resolve(kind, connection, call_name)
        delay_s = resolved.delay_ms / 1000
        tag = f"{kind}/{call_name or route_path}"

        if resolved.fault is not None:
            response = call.response if call else None
            return self._fault_reply(resolved.fault, fixture, response, resolved, delay_s)
        if resolved.error is not None:
            case = resolved.error.case
            error = fixture.error(case) or {}
            if case in ECHO_ERRORS:
                error = _echoed(error, case, headers or {})
            served = self._shifted(fixture, error, resolved.now, fixture.error_time(case))
            return served_reply(served, f"{kind}/error:{resolved.error.case}", delay_s)

        quota = self._quota(resolved)
        rewriter = REWRITERS.get(kind)
        if quota is not None and rewriter is not None:
            exhausted_case = resolved.quota.exhausted_error if resolved.quota else None
            is_poll = call_name is not None and call_name in rewriter.poll_calls
            if quota.remaining_pct <= 0 and exhausted_case and not is_poll:
                error = fixture.error(exhausted_case) or {}
                served = self._shifted(fixture, error, resolved.now, fixture.error_time(exhausted_case))
                rewriter.rewrite(served, quota)
                apply_exhaustion_extras(served, quota)
                return served_reply(served, f"{kind}/exhausted:{exhausted_case}", delay_s)

        if call is None:
            if path_known:
                not_allowed = {"error": f"{method} not served on {route_path} for {kind}"}
                return json_reply(405, not_allowed, delay_s=delay_s)
            not_found = {"error": f"no fixture call for {route_path}", "calls": _routes(fixture)}
            return json_reply(404, not_found, delay_s=delay_s)

        raw = call.response
        if resolved.variant is not None and resolved.variant.call == call.name:
            raw = fixture.variants[resolved.variant.name]
            tag = f"{kind}/{call.name}:variant:{resolved.variant.name}"
        served = self._shifted(fixture, raw, resolved.now)
        if quota is not None and rewriter is not None:
            rewriter.rewrite(served, quota)
        return served_reply(served, tag, delay_s)

    def _access_refused(self, fixture: KindFixture, kind: str, access: str) -> Reply:
        """A 401 (the kind's own ``token_expired`` answer when its fixture has one)."""
        error = fixture.error("token_expired")
        if error is not None:
            served = self._shifted(fixture, error, self.clock.now())
            return served_reply(served, f"{kind}/token:{access}", 0.0)
        body = {"error": {"type": "authentication_error", "message": f"OAuth access token {access}"}}
        return Reply(
            401,
            [("content-type", "application/json"), ("x-fake-upstream", f"{kind}/token:{access}")],
            json.dumps(body).encode(),
        )

    def _resolve(self, kind: str, connection: str | None, call_name: str | None) -> _Resolved:
        keys: list[ScopeKey] = [(kind, connection), (kind, None), (None, None)]
        with self._lock:
            self._counts[(kind, connection, call_name)] += 1
            scopes = [self._scopes[key] for key in dict.fromkeys(keys) if key in self._scopes]
            delay_ms = next((s.delay_ms for s in scopes if s.delay_ms is not None), self.delay_ms)
            fault = take_plan(scopes, "fault", call_name)
            error = None if fault else take_plan(scopes, "error", call_name)
            quota = next((s.quota for s in scopes if s.quota is not None), None)
            variant = next((s.variant for s in scopes if s.variant is not None), None)
        return _Resolved(delay_ms, fault, error, quota, variant, self.clock.now())

    @staticmethod
    def _quota(resolved: _Resolved) -> Quota | None:
        if resolved.quota is None:
            return None
        remaining, reset_at = resolved.quota.at(resolved.now)
        return Quota(remaining_pct=max(0.0, min(100.0, remaining)), reset_at=reset_at, now=resolved.now)

    @staticmethod
    def _shifted(
        fixture: KindFixture, response: dict[str, Any], now: datetime, read_at: datetime | None = None
    ) -> Served:
        """The response with its times moved by ``now − read_at`` (default: the fixture's time)."""
        read_at = read_at or fixture.fixture_time
        delta = whole_seconds(now - read_at)
        shifted = shift_times(response, delta, read_at)
        headers = shifted.get("headers") or {}
        return Served(
            status=int(shifted.get("status") or 200),
            headers={str(k): str(v) for k, v in headers.items()},
            body=shifted.get("body"),
        )

    def _fault_reply(
        self,
        fault: Fault,
        fixture: KindFixture,
        response: dict[str, Any] | None,
        resolved: _Resolved,
        delay_s: float,
    ) -> AnyReply:
        if fault.mode == "reset_connection":
            return DropReply(delay_s)
        headers = [("content-type", "application/json"), ("x-fake-upstream", f"{fixture.kind}/{fault.mode}")]
        if fault.mode == "oversized":
            return StreamReply(200, headers, fault.size_bytes, fault.chunked, delay_s)
        text = '{"fake_upstream": "malformed", "cut": [1, 2'
        status = 200
        if response is not None:
            served = self._shifted(fixture, response, resolved.now)
            status = served.status
            if served.body is not None:
                full = json.dumps(served.body, ensure_ascii=False)
                text = full[: max(1, len(full) // 2)]
        return Reply(status, headers, text.encode(), delay_s)

    def _index(self) -> dict[str, Any]:
        return {
            "service": "ladder fake upstream",
            "url_scheme": [
                "/<kind>/<upstream path>",
                "/<kind>/@<connection>/<upstream path>",
                "/_control/state | scenario | reset | clock",
            ],
            "kinds": {kind: _routes(f) for kind, f in sorted(self.fixtures.items())},
        }

    # --- control API ---

    def control(self, method: str, target: str, payload: Any) -> tuple[int, dict[str, Any]]:
        action = _path_of(target)[len(CONTROL_PREFIX) :].strip("/")
        handlers = {
            ("GET", "state"): self._control_state,
            ("POST", "scenario"): self._control_scenario,
            ("POST", "reset"): self._control_reset,
            ("POST", "clock"): self._control_clock,
            ("GET", "tokens"): self._control_tokens_record,
            ("POST", "tokens"): self._control_tokens_mint,
        }
        handler = handlers.get((method.upper(), action))
        if handler is None:
            known = sorted(f"{m} {CONTROL_PREFIX}/{a}" for m, a in handlers)
            status = 405 if any(a == action for _, a in handlers) else 404
            return status, {"error": f"no control endpoint {method} {target}", "endpoints": known}
        if payload is None:
            payload = {}
        if not isinstance(payload, dict):
            return 400, {"error": "the control body must be a JSON object"}
        try:
            return 200, handler(payload)
        except ControlError as exc:
            return exc.status, {"error": exc.message}

    def state(self) -> dict[str, Any]:
        return self._control_state({})

    def _control_state(self, payload: dict[str, Any]) -> dict[str, Any]:
        now = self.clock.now()
        with self._lock:
            scenarios = [
                {"kind": kind, "connection": connection, **scope.describe(now)}
                for (kind, connection), scope in self._scopes.items()
            ]
            rows = sorted(self._counts.items(), key=lambda i: repr(i[0]))
            delay_ms = self.delay_ms
        counts = [
            {"kind": kind, "connection": connection, "call": call, "count": n}
            for (kind, connection, call), n in rows
        ]
        totals: Counter[str] = Counter()
        for (kind, _connection, _call), n in rows:
            totals[kind] += n
        kinds = {
            kind: {
                "calls": _routes(fixture),
                "errors": fixture.cases(),
                "variants": sorted(fixture.variants),
                "rewritable": kind in REWRITERS,
                "not_rewritable_because": UNSUPPORTED.get(kind),
                "fixture_time_utc": fixture.fixture_time.isoformat(),
            }
            for kind, fixture in sorted(self.fixtures.items())
        }
        return {
            "now": now.isoformat(),
            "clock": self.clock.describe(),
            "delay_ms": delay_ms,
            "kinds": kinds,
            "scenarios": scenarios,
            "counts": counts,
            "totals": dict(totals),
        }

    def _control_tokens_record(self, payload: dict[str, Any]) -> dict[str, Any]:
        return self.tokens.record()

    def _control_tokens_mint(self, payload: dict[str, Any]) -> dict[str, Any]:
        lifetime = payload.get("lifetime_s")
        lifetime_s = None if lifetime is None else read_number(payload, "lifetime_s", minimum=0.001)
        kind = read_str(payload, "kind")
        if kind is None:
            if lifetime_s is None:
                raise ControlError(400, "give a kind to mint a login, or lifetime_s to set the default")
            self.tokens.lifetime_s = lifetime_s
            return {"ok": True, "lifetime_s": lifetime_s}
        try:
            return self.tokens.mint(
                kind,
                self.clock.now(),
                lifetime_s=lifetime_s,
                account_id=read_str(payload, "account_id"),
                auth_method=read_str(payload, "auth_method") or "social",
            )
        except ValueError as exc:
            raise ControlError(400, str(exc)) from None

    def _control_reset(self, payload: dict[str, Any]) -> dict[str, Any]:
        kind = read_str(payload, "kind")
        connection = read_str(payload, "connection")
        with self._lock:
            if kind is None:
                self._scopes.clear()
                self._counts.clear()
                self.delay_ms = self._initial_delay_ms
            else:
                for key in [k for k in self._scopes if _in_scope(k, kind, connection)]:
                    del self._scopes[key]
                for ckey in [k for k in self._counts if _in_scope(k, kind, connection)]:
                    del self._counts[ckey]
        if kind is None:
            self.clock.restore()
            self.tokens.reset()
        return {"ok": True}

    def _control_clock(self, payload: dict[str, Any]) -> dict[str, Any]:
        if payload.get("real"):
            self.clock.thaw()
        if payload.get("now") is not None:
            self.clock.freeze(read_moment(payload, "now"))
        if payload.get("advance_s") is not None:
            self.clock.advance(read_number(payload, "advance_s"))
        return {"ok": True, "now": self.clock.now().isoformat(), **self.clock.describe()}

    def _control_scenario(self, payload: dict[str, Any]) -> dict[str, Any]:
        kind = read_str(payload, "kind")
        connection = read_str(payload, "connection")
        scenario = read_str(payload, "scenario") or "static"
        fixture = None
        if kind is not None:
            fixture = self.fixtures.get(kind)
            if fixture is None:
                raise ControlError(404, f"unknown kind {kind!r}; kinds: {', '.join(sorted(self.fixtures))}")
        elif connection is not None:
            raise ControlError(400, "a connection needs its kind")
        key: ScopeKey = (kind, connection)
        now = self.clock.now()
        with self._lock:
            if scenario == "static":
                self._scopes.pop(key, None)
                if kind is None:
                    self.delay_ms = self._initial_delay_ms
                return {"ok": True, "kind": kind, "connection": connection, "scenario": "static"}
            if scenario == "slow" and kind is None:
                self.delay_ms = read_number(payload, "delay_ms", minimum=0)
                return {"ok": True, "kind": None, "connection": None, "delay_ms": self.delay_ms}
        scope_update = scenario_update(scenario, fixture, payload, now)
        with self._lock:
            scope = self._scopes.setdefault(key, Scope())
            scope_update(scope)
            described = scope.describe(now)
        return {"ok": True, "kind": kind, "connection": connection, "scenario": scenario, **described}


# --- helpers ---------------------------------------------------------------------------------


def _in_scope(key: tuple[str | None, ...], kind: str, connection: str | None) -> bool:
    return key[0] == kind and (connection is None or key[1] == connection)


def _echoed(error: dict[str, Any], case: str, headers: Mapping[str, str]) -> dict[str, Any]:
    """The echo error with the credential of the request (bearer token or API-key header) quoted."""
    lowered = {name.lower(): value for name, value in headers.items()}
    authorization = lowered.get("authorization", "")
    scheme, _, token = authorization.partition(" ")
    credential = token.strip() if scheme.lower() == "bearer" else ""
    credential = credential or lowered.get("x-api-key", "") or lowered.get("x-goog-api-key", "")
    if case == "echo_key_suffix":
        credential = credential[-ECHO_SUFFIX_CHARS:]
    message = ECHO_ERRORS[case].replace(ECHO_PLACEHOLDER, credential)
    return {**error, "body": {"error": {**error["body"]["error"], "message": message}}}


def _routes(fixture: KindFixture) -> dict[str, str]:
    return {name: f"{call.method} {call.path}" for name, call in fixture.calls.items()}


def _path_of(target: str) -> str:
    return urlsplit(target).path if "://" in target else target.split("?", 1)[0]
