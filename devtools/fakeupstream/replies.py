"""What the app answers the HTTP plumbing (``server``): a body, a large streamed body, or nothing."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from devtools.fakeupstream.rewriting import Served


@dataclass(frozen=True)
class Reply:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    delay_s: float = 0.0


@dataclass(frozen=True)
class StreamReply:
    """A large body written in chunks; valid JSON of exactly ``size_bytes``."""

    status: int
    headers: list[tuple[str, str]]
    size_bytes: int
    chunked: bool
    delay_s: float = 0.0


@dataclass(frozen=True)
class DropReply:
    """Close the connection without answering."""

    delay_s: float = 0.0


AnyReply = Reply | StreamReply | DropReply


def json_reply(status: int, payload: Any, *, delay_s: float = 0.0) -> Reply:
    body = json.dumps(payload, ensure_ascii=False).encode()
    return Reply(status, [("content-type", "application/json")], body, delay_s)


def served_reply(served: Served, tag: str, delay_s: float) -> Reply:
    headers = list(served.headers.items())
    names = {name.lower() for name, _ in headers}
    headers = [(n, v) for n, v in headers if n.lower() not in ("content-length", "transfer-encoding")]
    body = b""
    if served.body is not None:
        body = json.dumps(served.body, ensure_ascii=False).encode()
        if "content-type" not in names:
            headers.append(("content-type", "application/json"))
    headers.append(("x-fake-upstream", tag))
    return Reply(served.status, headers, body, delay_s)
