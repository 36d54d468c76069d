"""`make run`: prepare a local installation and run every process of the product under one Ctrl-C.

Web server, Celery worker, Celery beat and the fake upstream run as child processes, each in its own
process group; Redis is started when none answers at REDIS_URL. Stopping this command (Ctrl-C or
SIGTERM) stops them all and exits 0. A child that dies is started again after a backoff; one that
keeps dying makes the command stop the others and exit 1 (settings LADDER_RUN_*).

With the demo (the default), the fake upstream starts first and is told to make the demo move: the
Claude plan drains from 100 % to 0 % over 3 minutes, stays spent for 1 more, then resets (and the
cycle repeats), so that a newcomer sees the plan drain, the ladder climb and the plan come back. On a
first run the quota refresh interval is 10 s (an operator's setting is kept afterwards). Every demo
connection gets its first reading, in one synchronous refresh pass, before the web server starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from argparse import ArgumentParser
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import redis
from cryptography.fernet import Fernet
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from ladder.management.commands.ladder_demo import DEMO_CONNECTIONS, local_secret
from ladder.models import Connection, LadderConfiguration
from ladder.security.logredact import redact_url
from ladder.services.alert_delivery import alert_channel_default_webhook
from ladder.services.credentials import credential_import
from ladder.services.refresh.fanout import refresh_connections_run
from ladder.services.state import bump_state_version

LOCAL_DIR = Path(settings.BASE_DIR) / ".local"
DEMO_REFRESH_INTERVAL_S = 10.0
DEMO_DRAINING = ("claude-oauth", "demo-claude-max")
DEMO_DRAIN_S = 180.0
DEMO_SPENT_S = 60.0
DEMO_POLL_FLOOR_S = "claude=0"
DEMO_POLL_FLOOR_S_PARSED = {"claude": 0.0}
FIRST_PASS_LEASE_S = 60.0
# The demo's OAuth plans hold ladder-owned tokens of the fake upstream that live this long.
DEMO_LOGINS = (("demo-claude-max", "claude-oauth"), ("demo-codex-plus", "codex-chatgpt"))
DEMO_TOKEN_LIFETIME_S = 240.0


def local_credential_key() -> str:
    """The key that encrypts credentials at rest: the environment's, else a local one made once."""
    key = os.environ.get("LADDER_CREDENTIAL_KEY")
    return key or local_secret(LOCAL_DIR / "credential.key", lambda: Fernet.generate_key().decode())


@dataclass(frozen=True)
class RestartPolicy:
    """When a dead child starts again, and when the supervisor gives up on it (settings LADDER_RUN_*).

    A small loop here rather than a library: supervisord and circus are daemons with their own
    configuration, and honcho, like the loop before this one, stops everything when one child exits.
    """

    backoff_s: float
    backoff_max_s: float
    stable_s: float
    max_restarts: int

    @classmethod
    def from_settings(cls) -> RestartPolicy:
        return cls(
            backoff_s=settings.LADDER_RUN_BACKOFF_S,
            backoff_max_s=settings.LADDER_RUN_BACKOFF_MAX_S,
            stable_s=settings.LADDER_RUN_STABLE_S,
            max_restarts=settings.LADDER_RUN_MAX_RESTARTS,
        )


@dataclass
class Child:
    """One process of the product: its command line, the running process, and its recent deaths."""

    name: str
    argv: list[str]
    quiet: bool = False  # redis-server's chatter goes to /dev/null
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restart_at: float | None = None  # set while the child waits out its backoff
    restarts: int = 0  # since it last stayed up policy.stable_s

    def start(self, now: float) -> None:
        # Its own process group: the terminal's Ctrl-C reaches only this command, which stops the
        # children, and a stop reaches a child's own children too (the Celery pool).
        self.proc = subprocess.Popen(  # noqa: S603  (this interpreter, with the command's own arguments)
            self.argv,
            cwd=settings.BASE_DIR,
            stdout=subprocess.DEVNULL if self.quiet else None,
            process_group=0,
        )
        self.started_at = now
        self.restart_at = None

    def died(self, now: float, policy: RestartPolicy) -> float | None:
        """Seconds to wait before starting it again, or None: it keeps dying, give up."""
        if now - self.started_at >= policy.stable_s:
            self.restarts = 0
        if self.restarts >= policy.max_restarts:
            return None
        self.restarts += 1
        backoff_s = min(policy.backoff_s * 2 ** (self.restarts - 1), policy.backoff_max_s)
        self.restart_at = now + backoff_s
        return backoff_s


def exit_status(returncode: int) -> str:
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        return f"was killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"was killed by signal {-returncode}"


def signal_group(proc: subprocess.Popen[bytes], signum: int) -> None:
    """Signal the process group a Child started (its pid is the group's id), never anything else."""
    with contextlib.suppress(ProcessLookupError):  # the group is empty already
        os.killpg(proc.pid, signum)


def upstream_control(client: httpx.Client, action: str, payload: dict[str, Any]) -> dict[str, Any]:
    """POST to the fake upstream's control API (devtools/fakeupstream, a child process: the product
    never imports it); its JSON answer."""
    response = client.post(f"/_control/{action}", json=payload)
    response.raise_for_status()
    answer: dict[str, Any] = response.json()
    return answer


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
        self._alert_channel()
        demo = not options["no_demo"]
        fake_upstream = os.environ["LADDER_UPSTREAM_BASE_URL"] == upstream_url
        if demo and fake_upstream and "LADDER_POLL_FLOOR_S" not in os.environ:
            # The demo polls the local fake upstream, which throttles no one: Claude's 300 s poll floor
            # (DESIGN L5) would make its 4-minute drain cycle invisible, readings 5 minutes apart, and
            # its alert late. Children inherit it; an operator's own value wins. This process's first
            # refresh pass schedules the next poll by it too.
            os.environ["LADDER_POLL_FLOOR_S"] = DEMO_POLL_FLOOR_S
            settings.LADDER_POLL_FLOOR_S = DEMO_POLL_FLOOR_S_PARSED
        if demo:
            self._demo_configuration()
            call_command("ladder_demo", upstream_url=upstream_url, stdout=self.stdout)

        python = sys.executable
        manage = str(Path(settings.BASE_DIR) / "manage.py")
        celery = [python, "-m", "celery", "-A", "omniroute"]
        address = f"{options['host']}:{options['port']}"
        upstream = Child(
            "fake upstream", [python, "-m", "devtools.fakeupstream", "--port", str(options["upstream_port"])]
        )
        others = [
            Child("worker", [*celery, "worker", "--loglevel", "INFO", "-c", "2"]),
            Child("beat", [*celery, "beat", "--loglevel", "INFO"]),
            Child("web", [python, manage, "runserver", "--noreload", "--insecure", address]),
        ]
        children: list[Child] = []
        try:
            self._ensure_redis(children)
            self._start(upstream)
            children.append(upstream)
            if demo:
                self._demo_start(upstream_url)
            for child in others:
                self._start(child)
                children.append(child)
            self._say(self.style.SUCCESS(f"OmniRoute Ladder at http://{address}/ — Ctrl-C stops all"))
            self._supervise(children, RestartPolicy.from_settings())
        finally:
            self._stop(children)
            self._say("stopped")

    def _alert_channel(self) -> None:
        """LADDER_ALERT_WEBHOOK_URL set: a webhook channel to it, made once (moved when the variable
        names another URL), so that alerts (the demo plan's among them) arrive there."""
        url = settings.LADDER_ALERT_WEBHOOK_URL
        if not url:
            return
        try:
            channel, state = alert_channel_default_webhook(url=url)
        except ValidationError as exc:
            raise CommandError(f"LADDER_ALERT_WEBHOOK_URL: {'; '.join(exc.messages)}") from None
        said = {"created": "created", "moved": "moved there", "kept": "kept (edit it in the admin)"}
        self.stdout.write(f"alerts: channel {channel.name!r} to {redact_url(channel.url)} {said[state]}")

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
        with httpx.Client(base_url=upstream_url, timeout=2.0) as control:
            deadline = time.monotonic() + 15
            while True:
                try:
                    control.get("/_control/state").raise_for_status()
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise CommandError(f"the fake upstream does not answer at {upstream_url}") from None
                    time.sleep(0.2)
            kind, connection = DEMO_DRAINING
            scenario = {"scenario": "drain", "drain_s": DEMO_DRAIN_S, "reset_after_s": DEMO_SPENT_S}
            upstream_control(control, "scenario", {"kind": kind, "connection": connection, **scenario})
            self._demo_logins(control)
        self.stdout.write(
            f"demo: {connection} drains to 0 % over {DEMO_DRAIN_S / 60:g} min, "
            f"resets {DEMO_SPENT_S / 60:g} min later (and again)"
        )
        demo_ids = [row[0] for row in DEMO_CONNECTIONS]
        summary = refresh_connections_run(demo_ids, lease_s=FIRST_PASS_LEASE_S, deadline_s=20)
        outcomes = ", ".join(f"{name} {count}" for name, count in sorted(summary.outcomes.items()))
        self.stdout.write(
            f"demo: first refresh pass over {summary.claimed} connections: {outcomes or 'nothing to do'}"
        )

    def _demo_logins(self, control: httpx.Client) -> None:
        """The demo's OAuth plans log in afresh at the fake upstream (its tokens live in its memory) with
        tokens of a few minutes, owned by the ladder: a newcomer sees "expires in", then a refresh."""
        lifetime_s = float(os.environ.get("LADDER_DEMO_TOKEN_LIFETIME_S", str(DEMO_TOKEN_LIFETIME_S)))
        for connection_id, kind in DEMO_LOGINS:
            if not Connection.objects.filter(pk=connection_id).exists():
                continue
            minted = upstream_control(control, "tokens", {"kind": kind, "lifetime_s": lifetime_s})
            credential_import(connection_id=connection_id, text=json.dumps(minted["file"]), owner="ladder")
        self.stdout.write(
            f"demo: {', '.join(cid for cid, _ in DEMO_LOGINS)} hold ladder-owned tokens of "
            f"{lifetime_s / 60:g} min, refreshed before they expire"
        )

    def _ensure_redis(self, children: list[Child]) -> None:
        url = settings.REDIS_URL
        if redis_answers(url):
            return
        binary = shutil.which("redis-server")
        if binary is None:
            raise CommandError(f"Redis does not answer at {url} and redis-server is not installed")
        parsed = urlparse(url)
        port = str(parsed.port or 6379)
        host = parsed.hostname or "127.0.0.1"
        redis_child = Child(
            f"redis-server on port {port}",
            [binary, "--bind", host, "--port", port, "--save", "", "--appendonly", "no"],
            quiet=True,
        )
        self._start(redis_child)
        children.append(redis_child)
        for _ in range(50):
            if redis_answers(url):
                return
            time.sleep(0.1)
        raise CommandError(f"redis-server did not answer at {url}")

    def _say(self, text: str) -> None:
        """A line of the supervisor, flushed: under a process manager stdout is a pipe, and these lines
        belong between the children's."""
        self.stdout.write(text)
        self.stdout.flush()

    def _start(self, child: Child) -> None:
        child.start(time.monotonic())
        assert child.proc is not None  # noqa: S101  (narrows the type: start() set it)
        self._say(f"starting {child.name} (pid {child.proc.pid}): {' '.join(child.argv[1:])}")

    def _supervise(self, children: list[Child], policy: RestartPolicy) -> None:
        """Until SIGINT or SIGTERM: start again each child that dies, after its backoff. A child that
        keeps dying ends the command with status 1 (the caller stops the others)."""
        stopping = False

        def stop(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        while not stopping:
            now = time.monotonic()
            for child in children:
                assert child.proc is not None  # noqa: S101  (narrows the type: every child was started)
                if child.restart_at is not None:
                    if now >= child.restart_at:
                        self._start(child)
                    continue
                returncode = child.proc.poll()
                if returncode is None:
                    continue
                died = f"{child.name} (pid {child.proc.pid}) {exit_status(returncode)}"
                backoff_s = child.died(now, policy)
                if backoff_s is None:
                    raise CommandError(
                        f"gave up on {child.name}: it died within {policy.stable_s:g} s of each of "
                        f"{policy.max_restarts} restarts in a row (the last: {died})",
                        returncode=1,
                    )
                self.stderr.write(
                    f"{died}; restart {child.restarts} of {policy.max_restarts} in {backoff_s:g} s"
                )
            time.sleep(0.2)

    def _stop(self, children: list[Child]) -> None:
        """SIGTERM to every child's process group, then SIGKILL to any still there after 10 s."""
        running = [child.proc for child in reversed(children) if child.proc and child.proc.poll() is None]
        for proc in running:
            signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in running:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                signal_group(proc, signal.SIGKILL)
                proc.wait()
