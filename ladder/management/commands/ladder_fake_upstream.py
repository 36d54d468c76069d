"""Run the fake upstream in the foreground: ``python manage.py ladder_fake_upstream``."""

from __future__ import annotations

import os
import signal
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ladder.fakeupstream import URL_SCHEME, FakeUpstream


def _moment(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError("needs a zone, e.g. 2026-09-01T12:00:00Z")
    return moment.astimezone(UTC)


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = "Serve the quota fixtures over HTTP with times shifted to now, driven by /_control scenarios."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8555, help="0 picks a free port")
        parser.add_argument("--delay-ms", type=float, default=0.0, help="delay every reply (global)")
        parser.add_argument("--freeze-at", default=None, help="pin the clock at this ISO moment")
        parser.add_argument(
            "--fixtures-dir", type=Path, default=None, help="default: ladder/seed/fixtures/quota"
        )
        parser.add_argument(
            "--token-lifetime-s",
            type=float,
            default=float(os.environ.get("LADDER_FAKE_TOKEN_LIFETIME_S", "3600")),
            help="lifetime of the access tokens its token endpoints issue (env LADDER_FAKE_TOKEN_LIFETIME_S)",
        )
        parser.add_argument("--quiet", action="store_true", help="do not log each request")

    def handle(self, *args: Any, **options: Any) -> None:
        freeze_at = None
        if options["freeze_at"]:
            try:
                freeze_at = _moment(options["freeze_at"])
            except ValueError as exc:
                raise CommandError(f"--freeze-at: {exc}") from exc
        if options["delay_ms"] < 0:
            raise CommandError("--delay-ms must be >= 0")
        try:
            upstream = FakeUpstream(
                options["host"],
                options["port"],
                options["fixtures_dir"],
                delay_ms=options["delay_ms"],
                freeze_at=freeze_at,
                log=None if options["quiet"] else sys.stderr,
                token_lifetime_s=options["token_lifetime_s"],
            )
        except OSError as exc:
            raise CommandError(f"cannot listen on {options['host']}:{options['port']}: {exc}") from exc
        self.stdout.write(f"Fake upstream listening on {upstream.url}")
        self.stdout.write("URL scheme:\n" + URL_SCHEME.format(url=upstream.url))
        self.stdout.write(f"Kinds: {', '.join(sorted(upstream.app.fixtures))}")
        self.stdout.write("Quit with CONTROL-C.")
        self.stdout.flush()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _stop_on_sigterm)
        try:
            upstream.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            upstream.stop()
        self.stdout.write("Fake upstream stopped.")
