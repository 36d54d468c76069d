"""Real sockets that misbehave the way networks do: nobody listening, a peer that never answers,
a peer that hangs up after reading the request, a proxy that answers in its own shape."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


def refused_url() -> str:
    """A URL on a port nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@contextmanager
def silent_server() -> Iterator[str]:
    """Accepts connections (the kernel's backlog) and never answers: a read times out."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


@dataclass
class _Served:
    url: str
    connections: list[bytes] = field(default_factory=list)


def _read_request(conn: socket.socket) -> bytes:
    """The request's head and body (by Content-Length), as far as the peer sends it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


@contextmanager
def scripted_server(answer: bytes | None) -> Iterator[_Served]:
    """Reads each request, then sends ``answer`` (raw HTTP) or, with None, hangs up without a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)  # so that the serving thread notices the stop
    served = _Served(url=f"http://127.0.0.1:{listener.getsockname()[1]}")
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(5)
            with conn:
                served.connections.append(_read_request(conn))
                if answer is not None:
                    conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        stop.set()
        listener.close()
        thread.join(timeout=5)


def http_answer(status: str, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
