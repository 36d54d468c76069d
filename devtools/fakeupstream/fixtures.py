"""Load the quota fixtures and map request paths to fixture calls, one table per connection kind."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

DEFAULT_FIXTURES_DIR = Path(__file__).resolve().parent / "data" / "quota"
# Upstream answers other tools captured, ``<kind>/NN-slug.json`` (see its README): each is served as
# the error case ``peer:NN-slug`` of its kind, timed by its own ``now_utc``.
DEFAULT_PEERS_DIR = DEFAULT_FIXTURES_DIR.parent / "quota-peers"
PEER_PREFIX = "peer:"

# A generic error any kind can serve: ``http_500``, ``http_503``… (the fixtures carry few 5xx cases).
BUILTIN_ERROR_PREFIX = "http_"


@dataclass(frozen=True)
class FixtureCall:
    name: str
    method: str
    path: str
    response: dict[str, Any]


@dataclass(frozen=True)
class KindFixture:
    kind: str
    fixture_time: datetime
    calls: dict[str, FixtureCall]
    errors: dict[str, dict[str, Any]]
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    # ``peer:NN-slug`` → (the captured response, the time it was read at)
    peers: dict[str, tuple[dict[str, Any], datetime]] = field(default_factory=dict)

    def route(self, method: str, path: str) -> tuple[FixtureCall | None, bool]:
        """The call serving ``method path``, and whether the path exists under another method."""
        wanted = normalise_path(path)
        path_known = False
        for call in self.calls.values():
            if call.path == wanted:
                if call.method == method.upper():
                    return call, True
                path_known = True
        return None, path_known

    def error(self, case: str) -> dict[str, Any] | None:
        if case in self.errors:
            return self.errors[case]
        if case in self.peers:
            return self.peers[case][0]
        return builtin_error(case)

    def error_time(self, case: str) -> datetime:
        """The moment an error case's times are relative to: a peer case's own, else the fixture's."""
        peer = self.peers.get(case)
        return peer[1] if peer is not None else self.fixture_time

    def cases(self) -> list[str]:
        return sorted(self.errors) + sorted(self.peers)

    def has_error(self, case: str) -> bool:
        return self.error(case) is not None


# Errors that quote the request's credential back, as some OpenAI-compatible upstreams do (the whole
# key, or its last ECHO_SUFFIX_CHARS characters): the app fills ECHO_PLACEHOLDER from the request.
ECHO_PLACEHOLDER = "{credential}"
ECHO_SUFFIX_CHARS = 12
ECHO_ERRORS = {
    "echo_key": f"Incorrect API key provided: {ECHO_PLACEHOLDER}. Find your API key at the dashboard.",
    "echo_key_suffix": f"Incorrect API key provided: ...{ECHO_PLACEHOLDER}. Check the key and try again.",
}


def builtin_error(case: str) -> dict[str, Any] | None:
    if case in ECHO_ERRORS:
        return {
            "status": 401,
            "headers": {"content-type": "application/json"},
            "body": {
                "error": {
                    "message": ECHO_ERRORS[case],
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
        }
    code = case.removeprefix(BUILTIN_ERROR_PREFIX)
    if not case.startswith(BUILTIN_ERROR_PREFIX) or not code.isdigit() or not 400 <= int(code) <= 599:
        return None
    return {
        "status": int(code),
        "headers": {"content-type": "application/json"},
        "body": {"error": {"type": "fake_upstream_error", "message": f"fake upstream HTTP {code}"}},
    }


def normalise_path(path: str) -> str:
    path = path.split("?", 1)[0]
    if not path.startswith("/"):
        path = "/" + path
    return path.rstrip("/") or "/"


def load_fixture(path: Path) -> KindFixture:
    raw = json.loads(path.read_text(encoding="utf-8"))
    kind = str(raw["provider"])
    calls: dict[str, FixtureCall] = {}
    for name, call in raw.get("calls", {}).items():
        request = call["request"]
        calls[name] = FixtureCall(
            name=name,
            method=str(request["method"]).upper(),
            path=normalise_path(urlsplit(request["url"]).path),
            response=call["response"],
        )
    routes = [(call.method, call.path) for call in calls.values()]
    if len(routes) != len(set(routes)):
        raise ValueError(f"{path.name}: two calls share a method and path: ambiguous route")
    return KindFixture(
        kind=kind,
        fixture_time=datetime.fromisoformat(raw["fixture_time_utc"]),
        calls=calls,
        errors=dict(raw.get("errors", {})),
        variants=dict(raw.get("variants_ok", {})),
    )


def load_peers(directory: Path, kind: str) -> dict[str, tuple[dict[str, Any], datetime]]:
    """The peer cases of one kind: ``peer:<file stem>`` → (response, now_utc)."""
    peers: dict[str, tuple[dict[str, Any], datetime]] = {}
    for path in sorted((directory / kind).glob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        read_at = datetime.fromisoformat(str(raw["now_utc"]).replace("Z", "+00:00"))
        peers[f"{PEER_PREFIX}{path.stem}"] = (raw["response"], read_at)
    return peers


def load_fixtures(directory: Path | None = None, peers_dir: Path | None = None) -> dict[str, KindFixture]:
    """Every kind's fixture in ``directory`` and, with the default fixtures (or a ``peers_dir``),
    its peer cases."""
    if directory is None:
        peers_dir = peers_dir or DEFAULT_PEERS_DIR
    directory = directory or DEFAULT_FIXTURES_DIR
    fixtures: dict[str, KindFixture] = {}
    for path in sorted(directory.glob("*.json")):
        fixture = load_fixture(path)
        if peers_dir is not None:
            fixture.peers.update(load_peers(peers_dir, fixture.kind))
        fixtures[fixture.kind] = fixture
    if not fixtures:
        raise FileNotFoundError(f"no fixture files in {directory}")
    return fixtures
