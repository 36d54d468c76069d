"""Refresh benchmark: one Celery worker refreshes 1,000 connections of 12 kinds against the fake
upstream answering each request in 100 ms.

The fake upstream runs in its own process (it serves concurrently, a thread per connection); the
worker is one `celery worker` process (prefork, one child) consuming a queue of this run's own on
the Redis at BENCH_REDIS_URL (default redis://127.0.0.1:6379/15); the database is a fresh SQLite
file (or, with DATABASE_URL=postgres://…, a fresh PostgreSQL database dropped afterwards). The clock
runs from sending one `refresh_due` (the beat's fan-out task) until every connection has a reading.

Prints the figures; the last line is wall_s=<seconds>. Target: under 10 s.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack, suppress
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.benchdb import bench_database  # noqa: E402

KINDS = (
    "claude-oauth",
    "codex-chatgpt",
    "copilot",
    "gemini-cli",
    "antigravity",
    "kiro",
    "cursor",
    "zai-glm",
    "kimi-coding",
    "minimax-coding",
    "openrouter",
    "moonshot-api",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--delay-ms", type=float, default=100.0)
    parser.add_argument("--timeout-s", type=float, default=120.0)
    args = parser.parse_args()

    run_id = uuid.uuid4().hex[:10]
    redis_url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/15")
    queue = f"ladder-bench-{run_id}"
    prefix = f"bench:{run_id}"
    from cryptography.fernet import Fernet

    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-refresh-")))
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "omniroute.settings",
            "LADDER_CREDENTIAL_KEY": Fernet.generate_key().decode(),
            "REDIS_URL": redis_url,
            "CELERY_BROKER_URL": redis_url,
            "CELERY_TASK_DEFAULT_QUEUE": queue,
            "LADDER_HOTSTATE_PREFIX": prefix,
            "LADDER_RATELIMIT_PREFIX": f"{prefix}:ratelimit",
            "LOG_LEVEL": os.environ.get("BENCH_LOG_LEVEL", "WARNING"),
            "PYTHONUNBUFFERED": "1",
        }
        database = bench_database(env, stack, tmp, run_id)

        upstream_url = stack.enter_context(fake_upstream(env, args.delay_ms, tmp))
        env["LADDER_UPSTREAM_BASE_URL"] = upstream_url
        os.environ.update(env)

        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", interactive=False, verbosity=0)
        kinds = seed(args.connections)

        worker_name = f"bench-{run_id}@{socket.gethostname()}"
        stack.callback(cleanup_redis, redis_url, prefix, queue)  # after the worker has stopped
        stack.enter_context(worker(env, worker_name, tmp))
        from omniroute.celery import app

        wait_for_worker(app, worker_name, timeout_s=60)

        from django.conf import settings

        from ladder.models import Connection, QuotaReading

        started = time.perf_counter()
        app.send_task("ladder.tasks.refresh_due", queue=queue)
        done = 0
        while time.perf_counter() - started < args.timeout_s:
            done = QuotaReading.objects.values("connection_id").distinct().count()
            if done >= args.connections:
                break
            time.sleep(0.05)
        wall_s = time.perf_counter() - started

        unverifiable = QuotaReading.objects.filter(verifiable=False).count()
        failed = Connection.objects.exclude(last_poll_error="").count()
        print(f"connections={args.connections} kinds={len(kinds)} ({', '.join(kinds)})")
        print(f"upstream_delay_ms={args.delay_ms:g} database={database} cpus={os.cpu_count()}")
        print(
            f"worker=1 (prefork, 1 child) threads={settings.LADDER_REFRESH_CONCURRENCY} "
            f"per_provider={settings.LADDER_REFRESH_PROVIDER_CONCURRENCY_DEFAULT}"
        )
        print(f"readings={done} unverifiable={unverifiable} poll_errors={failed}")
        print(f"readings_per_s={done / wall_s:.1f}")
        print(f"wall_s={wall_s:.2f}")
        return 0 if done >= args.connections else 1


def seed(count: int) -> list[str]:
    from ladder.models import Connection
    from ladder.providers import ADAPTERS
    from ladder.security.crypto import encrypt_credential

    rows = []
    for index in range(count):
        kind = KINDS[index % len(KINDS)]
        adapter = ADAPTERS[kind]
        rows.append(
            Connection(
                id=f"bench-{index:05d}",
                provider=adapter.provider,
                auth_type=adapter.auth_type,
                credential_ciphertext=encrypt_credential(f"token-{index}"),
                position=index,
            )
        )
    Connection.objects.bulk_create(rows, batch_size=500)
    return sorted({KINDS[index % len(KINDS)] for index in range(count)})


class fake_upstream:
    """The fake upstream in a process of its own, answering every request after delay_ms."""

    def __init__(self, env: dict[str, str], delay_ms: float, tmp: Path) -> None:
        self.env, self.delay_ms, self.tmp = env, delay_ms, tmp
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> str:
        argv = [
            sys.executable,
            "-m",
            "devtools.fakeupstream",
            "--port",
            "0",
            "--delay-ms",
            str(self.delay_ms),
            "--quiet",
        ]
        self.proc = subprocess.Popen(
            argv, cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            found = re.search(r"listening on (http://\S+)", line)
            if found:
                return found.group(1)
        raise RuntimeError("the fake upstream did not start")

    def __exit__(self, *exc: object) -> None:
        stop(self.proc)


class worker:
    def __init__(self, env: dict[str, str], name: str, tmp: Path) -> None:
        self.env, self.name, self.log = env, name, tmp / "worker.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> None:
        argv = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "omniroute",
            "worker",
            "--pool",
            "prefork",
            "-c",
            "1",
            "-n",
            self.name,
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "WARNING",
        ]
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                argv, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None and self.log.exists():
            sys.stderr.write(self.log.read_text(errors="replace")[-4000:])
        stop(self.proc, group=True)


def stop(proc: subprocess.Popen[bytes] | subprocess.Popen[str] | None, *, group: bool = False) -> None:
    if proc is None or proc.poll() is not None:
        return
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM) if group else proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL) if group else proc.kill()
        proc.wait(timeout=5)


def wait_for_worker(app: object, name: str, *, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if app.control.ping(destination=[name], timeout=0.5):  # type: ignore[attr-defined]
            return
    raise RuntimeError(f"worker {name} did not answer a ping within {timeout_s:g} s")


def cleanup_redis(url: str, prefix: str, queue: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    keys = [*client.scan_iter(f"{prefix}:*"), queue, *client.scan_iter(f"_kombu.binding*.{queue}")]
    if keys:
        client.delete(*keys)
    client.close()


if __name__ == "__main__":
    sys.exit(main())
