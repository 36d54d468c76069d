"""Real local receivers for alert tests: an HTTP webhook receiver (a ThreadingHTTPServer in a thread)
that records every request and answers from a script, and an SMTP server (aiosmtpd) that records
every message (it refuses refused@… with 550 and busy@… with 451). Both on free loopback ports,
stopped by their context managers."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOLD = "hold"  # a scripted answer: keep the request open until release() (or 30 s), then 200


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        import json

        return json.loads(self.body)


@dataclass
class WebhookReceiver:
    """``script``: the answers to the next requests in order (a status code, or HOLD); then 200."""

    script: list[int | str] = field(default_factory=list)
    requests: list[Received] = field(default_factory=list)
    retry_after: str | None = None  # a Retry-After header on every answer

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._released = threading.Event()
        self.arrived = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {key.lower(): value for key, value in self.headers.items()}
                with receiver._lock:
                    receiver.requests.append(Received(self.path, headers, body))
                    answer = receiver.script.pop(0) if receiver.script else 200
                receiver.arrived.set()
                if answer == HOLD:
                    receiver._released.wait(30)
                    answer = 200
                with contextlib.suppress(OSError):
                    self.send_response(int(answer))
                    if receiver.retry_after is not None:
                        self.send_header("Retry-After", receiver.retry_after)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def release(self) -> None:
        self._released.set()

    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()


def verify_standard_webhook(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """The receiver's check of the Standard Webhooks spec, written apart from the sender's code:
    HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>" keyed with the base64 part of a
    whsec_ secret (else the secret's bytes), compared in constant time with each "v1," entry."""
    key = base64.b64decode(secret.removeprefix("whsec_")) if secret.startswith("whsec_") else secret.encode()
    content = headers["webhook-id"].encode() + b"." + headers["webhook-timestamp"].encode() + b"." + body
    expected = base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()
    if abs(time.time() - int(headers["webhook-timestamp"])) > 300:
        return False
    for entry in headers["webhook-signature"].split():
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature, expected):
            return True
    return False


def aiosmtpd_or_skip() -> Any:
    """aiosmtpd's Controller; outside CI a missing package skips the test, in CI it fails it."""
    try:
        from aiosmtpd.controller import Controller
    except ImportError:
        if os.environ.get("CI"):
            raise
        import pytest

        pytest.skip("aiosmtpd is not installed (pip install aiosmtpd==1.4.6)")
    return Controller


@dataclass
class SmtpServer:
    messages: list[Message] = field(default_factory=list)
    envelopes: list[tuple[str, list[str]]] = field(default_factory=list)
    port: int = 0


@contextlib.contextmanager
def smtp_server() -> Iterator[SmtpServer]:
    controller_class = aiosmtpd_or_skip()
    from tests.reliability.processes import free_port

    recorded = SmtpServer(port=free_port())

    class Handler:
        async def handle_RCPT(
            self, server: Any, session: Any, envelope: Any, address: str, options: Any
        ) -> str:
            if address.startswith("refused@"):
                return "550 5.1.1 No such user"
            if address.startswith("busy@"):
                return "451 4.3.0 Try again later"
            envelope.rcpt_tos.append(address)
            return "250 OK"

        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            recorded.messages.append(message_from_bytes(envelope.content))
            recorded.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
            return "250 Message accepted for delivery"

    controller = controller_class(Handler(), hostname="127.0.0.1", port=recorded.port)
    controller.start()
    try:
        yield recorded
    finally:
        controller.stop()
