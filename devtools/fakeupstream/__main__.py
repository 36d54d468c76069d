"""Run the fake upstream in the foreground: ``python -m devtools.fakeupstream`` (``--help``)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from devtools.fakeupstream.app import URL_SCHEME
from devtools.fakeupstream.runner import FakeUpstream


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError("needs a zone, e.g. 2026-09-01T12:00:00Z")
    return moment.astimezone(UTC)


def _delay_ms(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return value


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m devtools.fakeupstream",
        description="Serve the quota fixtures over HTTP with times shifted to now, driven by /_control "
        "scenarios.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8555, help="0 picks a free port")
    parser.add_argument("--delay-ms", type=_delay_ms, default=0.0, help="delay every reply (global)")
    parser.add_argument("--freeze-at", type=_moment, default=None, help="pin the clock at this ISO moment")
    parser.add_argument(
        "--fixtures-dir", type=Path, default=None, help="default: devtools/fakeupstream/data/quota"
    )
    parser.add_argument(
        "--token-lifetime-s",
        type=float,
        default=float(os.environ.get("LADDER_FAKE_TOKEN_LIFETIME_S", "3600")),
        help="lifetime of the access tokens its token endpoints issue (env LADDER_FAKE_TOKEN_LIFETIME_S)",
    )
    parser.add_argument("--quiet", action="store_true", help="do not log each request")
    return parser


def main(argv: list[str] | None = None) -> int:
    options = parser().parse_args(argv)
    try:
        upstream = FakeUpstream(
            options.host,
            options.port,
            options.fixtures_dir,
            delay_ms=options.delay_ms,
            freeze_at=options.freeze_at,
            log=None if options.quiet else sys.stderr,
            token_lifetime_s=options.token_lifetime_s,
        )
    except OSError as exc:
        print(f"cannot listen on {options.host}:{options.port}: {exc}", file=sys.stderr)
        return 1
    print(f"Fake upstream listening on {upstream.url}")
    print("URL scheme:\n" + URL_SCHEME.format(url=upstream.url))
    print(f"Kinds: {', '.join(sorted(upstream.app.fixtures))}")
    print("Quit with CONTROL-C.", flush=True)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        upstream.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        upstream.stop()
    print("Fake upstream stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
