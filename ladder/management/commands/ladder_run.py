"""`make run`: prepare a local installation and run every process of the product under one Ctrl-C.

Web server, Celery worker, Celery beat and the fake upstream run as child processes; Redis is started
when none answers at REDIS_URL. Stopping this command (Ctrl-C or SIGTERM) stops them all.

With the demo (the default), the fake upstream starts first and is told to make the demo move: the
Claude plan drains from 100 % to 0 % over 3 minutes, stays spent for 1 more, then resets (and the
cycle repeats), so that a newcomer sees the plan drain, the ladder climb and the plan come back. On a
first run the quota refresh interval is 10 s (an operator's setting is kept afterwards). Every demo
connection gets its first reading, in one synchronous refresh pass, before the web server starts.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from argparse import ArgumentParser
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import redis
from cryptography.fernet import Fernet
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from ladder.fakeupstream import FakeUpstreamControl, FakeUpstreamControlError
from ladder.management.commands.ladder_demo import DEMO_CONNECTIONS
from ladder.models import LadderConfiguration
from ladder.services import bump_state_version
from ladder.services.refresh import claim_deadline, connections_claim, connections_refresh_many

LOCAL_DIR = Path(settings.BASE_DIR) / ".local"
DEMO_REFRESH_INTERVAL_S = 10.0
DEMO_DRAINING = ("claude-oauth", "demo-claude-max")
DEMO_DRAIN_S = 180.0
DEMO_SPENT_S = 60.0
FIRST_PASS_LEASE_S = 60.0


def local_credential_key() -> str:
    """The key that encrypts credentials at rest: the environment's, else a local one made once."""
    key = os.environ.get("LADDER_CREDENTIAL_KEY")
    if key:
        return key
    path = LOCAL_DIR / "credential.key"
    if not path.exists():
        LOCAL_DIR.mkdir(mode=0o700, exist_ok=True)
        path.write_text(Fernet.generate_key().decode())
        path.chmod(0o600)
    return path.read_text().strip()


def redis_answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=0.5).ping())
    except redis.RedisError:
        return False


class Command(BaseCommand):
    help = "Migrate, seed the demo, and run web, worker, beat and the fake upstream together."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--upstream-port", type=int, default=int(os.environ.get("UPSTREAM_PORT", "8555")))
        parser.add_argument("--no-demo", action="store_true", help="do not seed demo connections")

    def handle(self, *args: Any, **options: Any) -> None:
        key = local_credential_key()
        os.environ["LADDER_CREDENTIAL_KEY"] = key
        settings.LADDER_CREDENTIAL_KEY = key
        upstream_url = f"http://127.0.0.1:{options['upstream_port']}"
        os.environ.setdefault("LADDER_UPSTREAM_BASE_URL", upstream_url)

        if not settings.LADDER_UPSTREAM_BASE_URL:
            settings.LADDER_UPSTREAM_BASE_URL = os.environ["LADDER_UPSTREAM_BASE_URL"]

        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        call_command("ladder_load_catalog", verbosity=0)
        demo = not options["no_demo"]
        if demo:
            self._demo_configuration()
            call_command("ladder_demo", upstream_url=upstream_url, stdout=self.stdout)

        children: list[subprocess.Popen[bytes]] = []
        redis_proc = self._ensure_redis()
        if redis_proc is not None:
            children.append(redis_proc)
        python = sys.executable
        manage = str(Path(settings.BASE_DIR) / "manage.py")
        upstream_argv = [python, manage, "ladder_fake_upstream", "--port", str(options["upstream_port"])]
        self.stdout.write(f"starting fake upstream: {' '.join(upstream_argv[1:])}")
        children.append(subprocess.Popen(upstream_argv, cwd=settings.BASE_DIR))
        if demo:
            try:
                self._demo_start(upstream_url)
            except BaseException:
                self._stop(children)
                raise
        commands = [
            (
                "worker",
                [python, "-m", "celery", "-A", "omniroute", "worker", "--loglevel", "INFO", "-c", "2"],
            ),
            ("beat", [python, "-m", "celery", "-A", "omniroute", "beat", "--loglevel", "INFO"]),
            (
                "web",
                [
                    python,
                    manage,
                    "runserver",
                    "--noreload",
                    "--insecure",
                    f"{options['host']}:{options['port']}",
                ],
            ),
        ]
        for name, argv in commands:
            self.stdout.write(f"starting {name}: {' '.join(argv[1:])}")
            children.append(subprocess.Popen(argv, cwd=settings.BASE_DIR))
        self.stdout.write(
            self.style.SUCCESS(
                f"OmniRoute Ladder at http://{options['host']}:{options['port']}/ — Ctrl-C stops all"
            )
        )
        self._supervise(children)

    def _demo_configuration(self) -> None:
        """A first run refreshes quota every 10 s, so that the demo moves; later runs keep the row."""
        if LadderConfiguration.objects.filter(pk=1).exists():
            return
        configuration = LadderConfiguration.from_settings()
        configuration.refresh_interval_s = DEMO_REFRESH_INTERVAL_S
        configuration.save()
        bump_state_version()
        self.stdout.write(f"demo: quota refreshed every {DEMO_REFRESH_INTERVAL_S:g} s (ladder configuration)")

    def _demo_start(self, upstream_url: str) -> None:
        """Once the fake upstream answers: set the demo's scenarios, then give every demo connection
        its first reading (one synchronous refresh pass) before the web server starts."""
        with FakeUpstreamControl(upstream_url, timeout_s=2.0) as control:
            deadline = time.monotonic() + 15
            while True:
                try:
                    control.state()
                    break
                except (httpx.HTTPError, FakeUpstreamControlError, ValueError):
                    if time.monotonic() > deadline:
                        raise CommandError(f"the fake upstream does not answer at {upstream_url}") from None
                    time.sleep(0.2)
            kind, connection = DEMO_DRAINING
            control.drain(kind, connection=connection, drain_s=DEMO_DRAIN_S, reset_after_s=DEMO_SPENT_S)
        self.stdout.write(
            f"demo: {connection} drains to 0 % over {DEMO_DRAIN_S / 60:g} min, "
            f"resets {DEMO_SPENT_S / 60:g} min later (and again)"
        )
        now = timezone.now()
        ids = connections_claim(
            connection_ids=[row[0] for row in DEMO_CONNECTIONS], now=now, lease_s=FIRST_PASS_LEASE_S
        )
        summary = connections_refresh_many(
            ids, claim_until=claim_deadline(now, FIRST_PASS_LEASE_S), deadline_s=20
        )
        outcomes = ", ".join(f"{name} {count}" for name, count in sorted(summary.outcomes.items()))
        self.stdout.write(
            f"demo: first refresh pass over {len(ids)} connections: {outcomes or 'nothing to do'}"
        )

    def _ensure_redis(self) -> subprocess.Popen[bytes] | None:
        url = settings.REDIS_URL
        if redis_answers(url):
            return None
        binary = shutil.which("redis-server")
        if binary is None:
            raise CommandError(f"Redis does not answer at {url} and redis-server is not installed")
        parsed = urlparse(url)
        port = str(parsed.port or 6379)
        self.stdout.write(f"starting redis-server on port {port}")
        proc = subprocess.Popen(
            [
                binary,
                "--bind",
                parsed.hostname or "127.0.0.1",
                "--port",
                port,
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
        )
        for _ in range(50):
            if redis_answers(url):
                return proc
            time.sleep(0.1)
        proc.terminate()
        raise CommandError(f"redis-server did not answer at {url}")

    def _supervise(self, children: list[subprocess.Popen[bytes]]) -> None:
        stopping = False

        def stop(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping:
                for child in children:
                    if child.poll() is not None:
                        self.stderr.write(f"{child.args!r} exited with {child.returncode}")
                        stopping = True
                time.sleep(0.2)
        finally:
            self._stop(children)
            self.stdout.write("stopped")

    def _stop(self, children: list[subprocess.Popen[bytes]]) -> None:
        for child in reversed(children):
            if child.poll() is None:
                child.terminate()
        deadline = time.monotonic() + 10
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
