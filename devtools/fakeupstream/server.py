"""HTTP/1.1 plumbing: a threading server (one daemon thread per connection, keep-alive) over the app."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from datetime import UTC
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from typing import Any, TextIO

from devtools.fakeupstream.app import CONTROL_PREFIX, FakeUpstreamApp
from devtools.fakeupstream.replies import DropReply, Reply, StreamReply, json_reply

_CHUNK = 64 * 1024
_MAX_REQUEST_BODY = 32 * 1024 * 1024


class FakeUpstreamServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # The benchmark opens ~1,000 connections at once; the default backlog of 5 would drop SYNs.
    request_queue_size = 1024
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: FakeUpstreamApp, log: TextIO | None = None) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.app = app
        self.log = log
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, FakeUpstreamHandler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host name (getfqdn), which can stall without DNS.
        TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def track(self, conn: socket.socket, *, open_: bool) -> None:
        with self._open_lock:
            if open_:
                self._open.add(conn)
            else:
                self._open.discard(conn)

    def close_open_connections(self) -> None:
        with self._open_lock:
            conns = list(self._open)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return  # a client that went away is not our error
        super().handle_error(request, client_address)


class FakeUpstreamHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ladder-fake-upstream"
    sys_version = ""
    timeout = 120  # an idle keep-alive connection gives its thread back after this
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stall
    server: FakeUpstreamServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, open_=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, open_=False)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def date_time_string(self, timestamp: float | None = None) -> str:
        if timestamp is not None:
            return super().date_time_string(timestamp)
        return format_datetime(self.server.app.clock.now().astimezone(UTC), usegmt=True)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.log is not None:
            self.server.log.write(f"{self.address_string()} {format % args}\n")
            self.server.log.flush()

    def _dispatch(self) -> None:
        try:
            body = self._read_body()
        except ValueError as exc:
            self.close_connection = True
            self._send(json_reply(400, {"error": str(exc)}))
            return
        app = self.server.app
        if self.path.split("?", 1)[0].startswith(CONTROL_PREFIX):
            try:
                payload = json.loads(body) if body.strip() else {}
            except ValueError:
                self._send(json_reply(400, {"error": "the control body is not JSON"}))
                return
            status, answer = app.control(self.command, self.path, payload)
            self._send(json_reply(status, answer))
            return
        reply = app.handle(self.command, self.path, headers=dict(self.headers.items()), body=body)
        if reply.delay_s > 0:
            time.sleep(reply.delay_s)
        try:
            if isinstance(reply, DropReply):
                self.close_connection = True
                self.log_message('"%s" dropped without a response', self.requestline)
            elif isinstance(reply, StreamReply):
                self._stream(reply)
            else:
                self._send(reply)
        except (ConnectionError, TimeoutError):
            self.close_connection = True

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length_text = self.headers.get("Content-Length")
        if not length_text:
            return b""
        length = int(length_text)
        if length < 0 or length > _MAX_REQUEST_BODY:
            raise ValueError("request body too large")
        return self.rfile.read(length)

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            total += size
            if total > _MAX_REQUEST_BODY:
                raise ValueError("request body too large")
            parts.append(self.rfile.read(size))
            self.rfile.readline()

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if reply.body and self.command != "HEAD":
            self.wfile.write(reply.body)

    def _stream(self, reply: StreamReply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        if reply.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(reply.size_bytes))
        self.end_headers()
        head, tail = b'{"padding": "', b'"}'
        filler = b"x" * _CHUNK
        left = reply.size_bytes - len(head) - len(tail)
        self._write_part(head, chunked=reply.chunked)
        while left > 0:
            part = filler[: min(left, _CHUNK)]
            self._write_part(part, chunked=reply.chunked)
            left -= len(part)
        self._write_part(tail, chunked=reply.chunked)
        if reply.chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _write_part(self, data: bytes, *, chunked: bool) -> None:
        if chunked:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        else:
            self.wfile.write(data)
