"""A small OpenAI-compatible upstream on a free port: `/plan/v1` plays a Claude Code plan whose
5-hour window can be spent (a 429 with the unified rate-limit headers that the ladder's Claude
adapter reads as quota exhaustion, reset a few seconds ahead) and then resets on the real clock;
`/cheap/v1` and `/paid/v1` play metered API keys that always answer. Every call is recorded.

The plan's window is spent either at once (``exhaust_plan``) or by the completions it serves: with
``drain`` set, each served completion uses that fraction of the window, and once it is used up the
plan answers 429 until its reset, ``reset_in_s`` after the completion that spent it. The headers of
a served answer tell the window as it was when the request arrived (the provider's count lags)."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROMPT_TOKENS = 1200
COMPLETION_TOKENS = 300
UNIFIED = "anthropic-ratelimit-unified-5h-"


@dataclass
class PlanWindow:
    """The plan's 5-hour window, shortened: spent until ``reset_at``, then a fresh one."""

    used: float = 0.4  # fraction of the window used
    reset_at: datetime = field(default_factory=lambda: datetime.now(UTC) + timedelta(hours=1))
    spent: bool = False
    drain: float = 0.0  # fraction of the window one served completion uses (0: never spent by use)
    reset_in_s: float = 3600.0  # how long after the completion that spends it the window resets

    def serve(self, now: datetime) -> None:
        """One completion served: it uses ``drain`` of the window, and may spend it."""
        if self.drain <= 0:
            return
        self.used = round(self.used + self.drain, 6)
        if self.used >= 1.0:
            self.spent, self.reset_at = True, now + timedelta(seconds=self.reset_in_s)

    def roll(self, now: datetime) -> None:
        if self.spent and now >= self.reset_at:
            self.spent, self.used, self.reset_at = False, 0.05, now + timedelta(hours=1)

    def headers(self) -> dict[str, str]:
        return {
            f"{UNIFIED}utilization": "1.0" if self.spent else str(self.used),
            f"{UNIFIED}reset": self.reset_at.isoformat(),
            f"{UNIFIED}status": "rejected" if self.spent else "allowed",
        }


@dataclass
class FakeOpenAI:
    url: str
    plan: PlanWindow
    calls: list[tuple[str, str]] = field(default_factory=list)  # (route, model), in order
    statuses: list[int] = field(default_factory=list)  # the status answered to each call, in order
    keys: list[str] = field(default_factory=list)  # the API key of each call, in order
    lock: threading.Lock = field(default_factory=threading.Lock)

    def base(self, route: str) -> str:
        return f"{self.url}/{route}/v1"

    def exhaust_plan(self, *, reset_in_s: float) -> datetime:
        """From now on the plan answers 429 until its window resets ``reset_in_s`` from now."""
        with self.lock:
            self.plan.spent = True
            self.plan.reset_at = datetime.now(UTC) + timedelta(seconds=reset_in_s)
            return self.plan.reset_at

    def drain_plan(self, *, per_completion: float, reset_in_s: float) -> None:
        """From now on each completion the plan serves uses ``per_completion`` of its window."""
        with self.lock:
            self.plan.drain, self.plan.reset_in_s = per_completion, reset_in_s

    def routes(self) -> list[str]:
        with self.lock:
            return [route for route, _ in self.calls]

    def served(self, route: str) -> int:
        """How many completions ``route`` answered with a 200."""
        with self.lock:
            return sum(
                1
                for (called, _), status in zip(self.calls, self.statuses, strict=True)
                if called == route and status == 200
            )


def _completion(model: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(datetime.now(UTC).timestamp()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": PROMPT_TOKENS,
            "completion_tokens": COMPLETION_TOKENS,
            "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
        },
    }


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            route = self.path.strip("/").split("/")[0]
            model = str(request.get("model"))
            if not self.path.endswith("/chat/completions") or route not in ("plan", "cheap", "paid"):
                self._send(404, {"error": {"message": f"no route {self.path}"}}, {})
                return
            with fake.lock:
                fake.calls.append((route, model))
                fake.keys.append(str(self.headers.get("Authorization", "")).removeprefix("Bearer "))
                if route == "plan":
                    now = datetime.now(UTC)
                    fake.plan.roll(now)
                    spent, headers = fake.plan.spent, fake.plan.headers()
                    if not spent:
                        fake.plan.serve(now)
                else:
                    spent, headers = False, {"x-ratelimit-remaining-requests": "499"}
                fake.statuses.append(429 if spent else 200)
            if spent:
                error = {
                    "type": "error",
                    "error": {"type": "rate_limit_error", "message": "5-hour usage limit reached"},
                }
                self._send(429, error, headers)
            else:
                self._send(200, _completion(model), headers)

    return Handler


@contextmanager
def run_fake_openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI("", PlanWindow())
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
