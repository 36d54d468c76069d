"""`make run`'s supervisor, as a real process tree: it serves, starts again a child that dies, gives up
(exit 1) on one that keeps dying, and one SIGINT stops every child."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet

from ladder.management.commands.ladder_run import Child, RestartPolicy, exit_status, local_credential_key
from tests.conftest import ROOT


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_for(url: str, timeout_s: float) -> httpx.Response:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return httpx.get(url, timeout=1.0)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def command_env(tmp_path: Path, upstream_port: int, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "SQLITE_PATH": str(tmp_path / "run.sqlite3"),
        "LADDER_CREDENTIAL_KEY": Fernet.generate_key().decode(),
        "LADDER_ADMIN_PASSWORD": "run-test-password",
        "UPSTREAM_PORT": str(upstream_port),
        **extra,
    }
    env.pop("DATABASE_URL", None)
    return env


class LiveCommand:
    """`manage.py ladder_run` as a real process whose output is read while it runs."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "ladder_run", *argv],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.lines: list[str] = []
        self.seen = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append(raw.decode(errors="replace"))

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def expect(self, pattern: str, timeout_s: float = 30) -> re.Match[str]:
        """The next line (after the last one expected) that matches."""
        deadline = time.monotonic() + timeout_s
        while True:
            while self.seen < len(self.lines):
                self.seen += 1
                if match := re.search(pattern, self.lines[self.seen - 1]):
                    return match
            if time.monotonic() > deadline or (self.proc.poll() is not None and not self.reader.is_alive()):
                raise AssertionError(f"no line matches {pattern!r} in:\n{self.output[-3000:]}")
            time.sleep(0.05)

    def started(self, name: str) -> int:
        """The pid of the next start of this child."""
        return int(self.expect(rf"^starting {name} \(pid (\d+)\)")[1])

    def __enter__(self) -> LiveCommand:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """A test that failed halfway leaves no process behind: SIGTERM makes ladder_run stop its
        children (a SIGKILL would leave them running in their process groups)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=5)


@pytest.mark.slow
def test_it_serves_restarts_a_killed_child_and_stops_everything_on_one_interrupt(tmp_path: Path) -> None:
    web, upstream = free_port(), free_port()
    env = command_env(tmp_path, upstream, LADDER_RUN_BACKOFF_S="0.1")
    with LiveCommand(["--port", str(web)], env) as run:
        assert wait_for(f"http://127.0.0.1:{web}/admin/login/", timeout_s=60).status_code == 200
        assert listening(upstream)
        first = run.started("worker")
        os.kill(first, signal.SIGKILL)
        run.expect(rf"^worker \(pid {first}\) was killed by SIGKILL; restart 1 of 6 in 0.1 s$")
        second = run.started("worker")
        assert not group_gone(second)
        os.kill(second, signal.SIGKILL)  # at once: well within LADDER_RUN_STABLE_S of its start
        run.expect(rf"^worker \(pid {second}\) was killed by SIGKILL; restart 2 of 6 in 0.2 s$")
        third = run.started("worker")
        assert not group_gone(third)
        run.proc.send_signal(signal.SIGINT)
        returncode = run.proc.wait(timeout=30)
    assert returncode == 0, run.output[-2000:]
    assert "admin login: user admin" in run.output
    assert run.output.rstrip().endswith("stopped")
    assert group_gone(third)
    assert not listening(web)
    assert not listening(upstream)


@pytest.mark.slow
def test_it_gives_up_on_a_child_that_keeps_dying_stops_the_others_and_exits_1(tmp_path: Path) -> None:
    upstream = free_port()
    env = command_env(tmp_path, upstream, LADDER_RUN_BACKOFF_S="0.05", LADDER_RUN_MAX_RESTARTS="1")
    with socket.socket() as taken:  # the web server cannot listen, so it exits at once, every time
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        web = taken.getsockname()[1]
        with LiveCommand(["--no-demo", "--port", str(web)], env) as run:
            others = {name: run.started(name) for name in ("fake upstream", "worker", "beat")}
            run.expect(r"^web \(pid \d+\) exited with status 1; restart 1 of 1 in 0.05 s$")
            returncode = run.proc.wait(timeout=60)
    assert returncode == 1, run.output[-2000:]
    last = run.output.rstrip().splitlines()[-1]
    assert re.fullmatch(
        r"CommandError: gave up on web: it died within 60 s of each of 1 restarts in a row "
        r"\(the last: web \(pid \d+\) exited with status 1\)",
        last,
    ), last
    assert "stopped" in run.output
    assert [name for name, pid in others.items() if not group_gone(pid)] == []
    assert not listening(upstream)


POLICY = RestartPolicy(backoff_s=1, backoff_max_s=30, stable_s=60, max_restarts=6)


def backoffs(uptimes_s: list[float]) -> list[float | None]:
    """What a child answers to deaths after these uptimes, each start after the previous backoff."""
    child = Child("worker", ["worker"])
    now = 1000.0
    answers = []
    for uptime_s in uptimes_s:
        child.started_at = now
        now += uptime_s
        answer = child.died(now, POLICY)
        answers.append(answer)
        now += answer or 0
    return answers


@pytest.mark.parametrize(
    ("uptimes_s", "expected"),
    [
        ([1] * 7, [1, 2, 4, 8, 16, 30, None]),  # doubles up to the cap, then gives up
        ([59.9] * 7, [1, 2, 4, 8, 16, 30, None]),  # just short of stable still counts
        ([1, 1, 1, 60, 1], [1, 2, 4, 1, 2]),  # a stay of stable_s starts the count again
        ([3600] * 10, [1] * 10),  # dying once an hour never gives up
    ],
)
def test_it_backs_off_and_gives_up_by_its_policy(
    uptimes_s: list[float], expected: list[float | None]
) -> None:
    assert backoffs(uptimes_s) == expected


def test_it_reads_its_policy_from_settings(settings: Any) -> None:
    settings.LADDER_RUN_BACKOFF_S = 0.5
    settings.LADDER_RUN_BACKOFF_MAX_S = 8.0
    settings.LADDER_RUN_STABLE_S = 20.0
    settings.LADDER_RUN_MAX_RESTARTS = 3
    assert RestartPolicy.from_settings() == RestartPolicy(
        backoff_s=0.5, backoff_max_s=8.0, stable_s=20.0, max_restarts=3
    )


@pytest.mark.parametrize(
    ("returncode", "text"),
    [
        (0, "exited with status 0"),
        (1, "exited with status 1"),
        (-9, "was killed by SIGKILL"),
        (-15, "was killed by SIGTERM"),
        (-200, "was killed by signal 200"),
    ],
)
def test_it_tells_how_a_child_ended(returncode: int, text: str) -> None:
    assert exit_status(returncode) == text


def test_it_makes_one_local_credential_key_and_reuses_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("LADDER_CREDENTIAL_KEY", raising=False)
    monkeypatch.setattr("ladder.management.commands.ladder_run.LOCAL_DIR", tmp_path / ".local")
    key = local_credential_key()
    Fernet(key.encode())  # a valid Fernet key
    assert local_credential_key() == key
    assert (tmp_path / ".local" / "credential.key").stat().st_mode & 0o777 == 0o600


def test_it_prefers_the_environment_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LADDER_CREDENTIAL_KEY", "from-the-environment")
    monkeypatch.setattr("ladder.management.commands.ladder_run.LOCAL_DIR", tmp_path / ".local")
    assert local_credential_key() == "from-the-environment"
    assert not (tmp_path / ".local").exists()


@pytest.mark.django_db
def test_the_demo_plans_hold_short_ladder_owned_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.management import call_command
    from django.utils import timezone

    from devtools.fakeupstream import FakeUpstream
    from ladder.management.commands.ladder_run import DEMO_LOGINS, Command
    from ladder.models import Connection

    monkeypatch.setenv("LADDER_DEMO_TOKEN_LIFETIME_S", "240")
    with FakeUpstream() as upstream, httpx.Client(base_url=upstream.url) as control:
        call_command("ladder_demo", upstream_url=upstream.url, stdout=open(os.devnull, "w"))  # noqa: SIM115
        Command()._demo_logins(control)

    for connection_id, _kind in DEMO_LOGINS:
        row = Connection.objects.get(pk=connection_id)
        assert row.credential_owner == "ladder"
        assert row.has_refresh_token
        assert row.credential_expires_at is not None
        left = (row.credential_expires_at - timezone.now()).total_seconds()
        assert 200 < left <= 241
