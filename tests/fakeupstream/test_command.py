from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tests.conftest import ROOT


@pytest.mark.slow
@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "terminate"])
def test_it_starts_answers_and_stops_cleanly(stop_signal: signal.Signals) -> None:
    command = [
        sys.executable,
        "-m",
        "devtools.fakeupstream",
        "--port",
        "0",
        "--freeze-at",
        "2026-09-01T12:00:00Z",
        "--delay-ms",
        "10",
        "--quiet",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        banner: list[str] = []
        deadline = time.monotonic() + 30
        # read the whole banner here: communicate() below bypasses what readline() has buffered
        while time.monotonic() < deadline and not (banner and banner[-1].startswith("Quit with")):
            line = process.stdout.readline()
            if not line:
                break
            banner.append(line)
        match = re.search(r"listening on (http://\S+)", "".join(banner))
        url = match[1] if match else None
        assert url is not None, "".join(banner)
        body = httpx.get(f"{url}/claude-oauth/api/oauth/usage", timeout=10).json()
        assert body["five_hour"]["resets_at"] == "2026-09-01T14:00:00.412805+00:00"
        process.send_signal(stop_signal)
        out, err = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert "stopped" in out
    assert "<kind>/@<connection>" in "".join(banner)


@pytest.mark.slow
def test_it_refuses_a_zone_less_freeze_moment() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "devtools.fakeupstream",
            "--port",
            "0",
            "--freeze-at",
            "2026-09-01T12:00:00",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "zone" in result.stderr
