"""`make run`'s supervisor, as a real process tree: it serves, and one SIGINT stops every child."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from cryptography.fernet import Fernet

from ladder.management.commands.ladder_run import local_credential_key
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


@pytest.mark.slow
def test_it_serves_and_stops_every_process_on_one_interrupt(tmp_path: Path) -> None:
    web, upstream = free_port(), free_port()
    env = {
        **os.environ,
        "SQLITE_PATH": str(tmp_path / "run.sqlite3"),
        "LADDER_CREDENTIAL_KEY": Fernet.generate_key().decode(),
        "LADDER_ADMIN_PASSWORD": "run-test-password",
        "UPSTREAM_PORT": str(upstream),
    }
    env.pop("DATABASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "ladder_run", "--port", str(web)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert wait_for(f"http://127.0.0.1:{web}/admin/login/", timeout_s=60).status_code == 200
        assert listening(upstream)
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=30)[0].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, output[-2000:]
    assert "admin login: user admin" in output
    assert "stopped" in output
    assert not listening(web)
    assert not listening(upstream)


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
