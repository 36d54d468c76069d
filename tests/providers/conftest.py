"""A fixture-replay upstream: a real HTTP server on 127.0.0.1 serving the quota fixtures' responses.

Routes are (method, path) → canned response; ``replay`` loads every call of a fixture file by the
path of its URL, ``serve_case`` puts one error case on a route. A route can also sleep before
answering (timeouts), reset the connection, or stream an oversized body.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from ladder.providers import ConnectionRef

FIXTURES_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "quota"
NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
CHUNK = 64 * 1024


def load_fixture(kind: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES_DIR / f"{kind}.json").read_text())
    assert data["fixture_time_utc"] == "2026-09-01T12:00:00Z"
    return data


def url_path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


@dataclass
class Route:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # a JSON value; None = empty body
    raw: bytes | None = None  # sent as is instead of ``body``
    delay_s: float = 0.0
    reset_connection: bool = False
    stream_bytes: int = 0  # an endless-looking body of this many bytes
    declare_length: bool = True


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class FakeUpstream:
    def __init__(self, port: int) -> None:
        self.base_url = f"http://127.0.0.1:{port}"
        self.routes: dict[tuple[str, str], Route] = {}
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()

    def reset(self) -> None:
        with self.lock:
            self.routes.clear()
            self.requests.clear()

    def serve(self, method: str, path: str, route: Route) -> None:
        with self.lock:
            self.routes[(method.upper(), path)] = route

    def serve_response(self, method: str, path: str, response: dict[str, Any]) -> None:
        """A fixture response (``{"status", "headers", "body"}``) on a route."""
        self.serve(method, path, Route(response["status"], dict(response["headers"]), response["body"]))

    def replay(self, fixture: dict[str, Any]) -> None:
        for call in fixture["calls"].values():
            request = call["request"]
            self.serve_response(request["method"], url_path(request["url"]), call["response"])

    def serve_case(self, fixture: dict[str, Any], case: str, *, method: str, path: str) -> None:
        self.serve_response(method, path, fixture["errors"][case])

    def route_for(self, method: str, path: str) -> Route | None:
        with self.lock:
            return self.routes.get((method, path)) or self.routes.get((method, path.split("?", 1)[0]))

    def record(self, recorded: Recorded) -> None:
        with self.lock:
            self.requests.append(recorded)

    def calls_to(self, path: str) -> list[Recorded]:
        with self.lock:
            return [r for r in self.requests if r.path.split("?", 1)[0] == path]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        return

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        upstream = self.server.upstream
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        upstream.record(Recorded(self.command, self.path, headers, body))
        route = upstream.route_for(self.command, self.path)
        if route is None:
            route = Route(404, {"content-type": "application/json"}, {"error": f"no route {self.path}"})
        if route.delay_s:
            time.sleep(route.delay_s)
        if route.reset_connection:
            # SO_LINGER 0 makes close() send a TCP RST: the client sees a connection reset.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if route.stream_bytes:
            self._stream(route)
            return
        if route.raw is not None:
            payload = route.raw
        else:
            payload = b"" if route.body is None else json.dumps(route.body).encode()
        self.send_response(route.status)
        for name, value in route.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, route: Route) -> None:
        self.send_response(route.status)
        self.send_header("content-type", "application/json")
        if route.declare_length:
            self.send_header("Content-Length", str(route.stream_bytes))
        self.end_headers()
        sent = 0
        chunk = b"[" + b"0," * (CHUNK // 2)
        try:
            while sent < route.stream_bytes:
                self.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            return  # the client stopped reading, as it should


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    upstream: FakeUpstream

    def handle_error(self, request: object, client_address: object) -> None:
        return  # clients that hang up on purpose (timeouts, caps) are not errors here


@pytest.fixture(scope="session")
def _upstream_server() -> Iterator[FakeUpstream]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.upstream = FakeUpstream(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, name="fake-upstream", daemon=True)
    thread.start()
    yield server.upstream
    server.shutdown()
    server.server_close()


@pytest.fixture
def upstream(_upstream_server: FakeUpstream) -> Iterator[FakeUpstream]:
    _upstream_server.reset()
    yield _upstream_server
    _upstream_server.reset()


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as http_client:
        yield http_client


def connection_for(upstream: FakeUpstream, provider: str, **params: str) -> ConnectionRef:
    return ConnectionRef(
        id=f"{provider}-1",
        provider=provider,
        auth_type=None,
        credential="<credential>",
        base_url=upstream.base_url,
        params=params,
    )


def roundtrip_case(
    upstream: FakeUpstream, client: httpx.Client, response: dict[str, Any], *, path: str = "/v1/inference"
) -> httpx.Response:
    """An upstream reply (a fixture error case) as the gateway would receive it, over real HTTP."""
    upstream.serve_response("POST", path, response)
    return client.post(upstream.base_url + path, json={})
