"""Load the quota fixtures and map request paths to fixture calls, one table per connection kind."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

DEFAULT_FIXTURES_DIR = Path(__file__).resolve().parent.parent / "seed" / "fixtures" / "quota"

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
        return builtin_error(case)

    def has_error(self, case: str) -> bool:
        return self.error(case) is not None


def builtin_error(case: str) -> dict[str, Any] | None:
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


def load_fixtures(directory: Path | None = None) -> dict[str, KindFixture]:
    directory = directory or DEFAULT_FIXTURES_DIR
    fixtures: dict[str, KindFixture] = {}
    for path in sorted(directory.glob("*.json")):
        fixture = load_fixture(path)
        fixtures[fixture.kind] = fixture
    if not fixtures:
        raise FileNotFoundError(f"no fixture files in {directory}")
    return fixtures
