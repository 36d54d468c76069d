"""Start and stop the fake upstream: in a background thread (tests, demo) or in the foreground."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import TextIO

from devtools.fakeupstream.app import FakeUpstreamApp
from devtools.fakeupstream.client import FakeUpstreamControl, connection_base_url
from devtools.fakeupstream.fixtures import load_fixtures
from devtools.fakeupstream.server import FakeUpstreamServer
from devtools.fakeupstream.tokens import DEFAULT_LIFETIME_S


class FakeUpstream:
    """A bound fake upstream server (port 0: a free one); ``start()``, or ``with``, serves it from a
    daemon thread.

    It has ``.url``, ``.port``, ``.url_for(kind, connection)``, ``.control()``, ``.app`` (the
    in-process state) and ``.stop()``.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        fixtures_dir: Path | None = None,
        *,
        delay_ms: float = 0.0,
        freeze_at: datetime | None = None,
        log: TextIO | None = None,
        token_lifetime_s: float = DEFAULT_LIFETIME_S,
    ) -> None:
        self.app = FakeUpstreamApp(
            load_fixtures(fixtures_dir),
            delay_ms=delay_ms,
            freeze_at=freeze_at,
            token_lifetime_s=token_lifetime_s,
        )
        self._server = FakeUpstreamServer((host, port), self.app, log)
        self.host = host
        self.port = int(self._server.server_address[1])
        self._thread: threading.Thread | None = None
        self._serving = False
        self._stopped = False

    @property
    def url(self) -> str:
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def url_for(self, kind: str, connection: str | None = None) -> str:
        """The base URL a connection of ``kind`` should use (its own namespace if ``connection``)."""
        return connection_base_url(self.url, kind, connection)

    def control(self) -> FakeUpstreamControl:
        return FakeUpstreamControl(self.url)

    def start(self) -> FakeUpstream:
        if self._thread is None:
            self._serving = True
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"fake-upstream:{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until ``stop()`` or an exception (Ctrl-C) ends it."""
        self._serving = True
        self._server.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._serving:
            self._server.shutdown()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server.close_open_connections()
        self._server.server_close()

    def __enter__(self) -> FakeUpstream:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
