"""Real processes for fault, load and scale-out tests (and the benchmarks that need a server).

Every piece runs as the product runs in production, and is stopped whatever happens:

- ``free_port()`` — a free TCP port on loopback.
- ``Service`` — one subprocess in a session (process group) of its own, with its output in a log
  file; ``stop()`` sends TERM then KILL to the whole group (a Celery worker's pool children, a
  gunicorn's workers), ``kill()`` is a SIGKILL crash.
- ``Processes`` — the services of one test: ``web()`` (``python -m gunicorn omniroute.wsgi``, waited
  for on ``/healthz``), ``worker()`` and ``beat()`` (Celery), ``start()`` for anything else;
  ``stop()`` ends them all. The ``processes`` fixture (conftest) stops them after each test.
- ``RedisServer`` — an own ``redis-server`` on a free port (no persistence), stoppable and
  restartable on the same port. Never the shared one on 6379.
- ``TcpProxy`` — a TCP forwarder (threads) in front of a server, e.g. PostgreSQL: ``pause()`` drops
  every open connection and resets each new one until ``resume()``. Processes pointed at it
  (``Database.env_through(proxy)``) lose their database for real; the shared server keeps running.
- ``Database`` / ``run_database()`` — a database of the run's own: a SQLite file, or, when
  ``DATABASE_URL`` names PostgreSQL, a database created for the run and dropped after it.
- ``process_env()`` — the environment the product's processes read (settings are env-driven):
  database, Redis, broker queue, hot-state prefix, credential key, upstream base URL, DEBUG off.
- ``manage()`` and ``seed()`` — run ``manage.py`` and ``tests.reliability.seed`` (a JSON spec of
  configuration, connections, readings, models and gateway tokens) with that environment.
- ``gunicorn()`` — a context manager for one gunicorn outside a test (benchmarks).

Typical use in a test (the fixtures of ``tests/reliability/conftest.py`` do the first lines)::

    with RedisServer(tmp) as redis_server, run_database(tmp) as database:
        env = process_env(database.env, redis_url=redis_server.url())
        manage(env, "migrate", "--noinput")
        seed(env, {"connections": [...], "tokens": [{"name": "gw", "value": TOKEN}]})
        web = processes.web(env)
        httpx.post(web.url("/api/v1/pools/resolve"), ...)
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import selectors
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
STOP_WAIT_S = 10.0
START_WAIT_S = 30.0
POSTGRES_SCHEMES = ("postgres://", "postgresql://", "pgsql://")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(
    predicate: Any, *, timeout_s: float, interval_s: float = 0.1, what: str = "a condition"
) -> Any:
    """Poll ``predicate()`` until it returns something truthy (returned); AssertionError after
    ``timeout_s``. Exceptions raised by the predicate count as "not yet"."""
    deadline = time.monotonic() + timeout_s
    last_error: BaseException | None = None
    while True:
        try:
            value = predicate()
        except Exception as exc:  # not there yet: a server still starting, a query refused
            value, last_error = None, exc
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout_s:g} s waiting for {what} (last error: {last_error!r})"
            )
        time.sleep(interval_s)


# --- services ---------------------------------------------------------------------------------


def signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class Service:
    """One subprocess in a session of its own (its pid is its process group), output in ``log``."""

    def __init__(
        self, name: str, argv: list[str], env: Mapping[str, str], log: Path, port: int | None = None
    ):
        self.name, self.argv, self.env, self.log, self.port = name, argv, dict(env), log, port
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Service:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None, f"{self.name} was never started"
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def url(self, path: str = "") -> str:
        assert self.port is not None, f"{self.name} listens on no port"
        return f"http://127.0.0.1:{self.port}{path}"

    def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        """Signal the whole group (SIGKILL: a crash) and wait for the leader to go."""
        if self.proc is None:
            return
        signal_group(self.proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=STOP_WAIT_S)

    def stop(self) -> None:
        """TERM, then KILL what is left of the group (pool children outlive their parent otherwise)."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            signal_group(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=STOP_WAIT_S)
        signal_group(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)

    def log_text(self, tail: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-tail:] if self.log.exists() else ""

    def wait_log(self, text: str, *, timeout_s: float = START_WAIT_S) -> None:
        """Wait for ``text`` in the log (e.g. a Celery worker's "ready.")."""

        def found() -> bool:
            assert self.alive, f"{self.name} exited with {self.proc and self.proc.returncode}"
            return text in self.log_text(tail=1 << 20)

        try:
            wait_until(found, timeout_s=timeout_s, what=f"{text!r} in {self.name}'s log")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.log_text()}") from None

    def wait_http(self, path: str = "/healthz", *, timeout_s: float = START_WAIT_S) -> None:
        """Wait until GET ``path`` answers 200 (any process listening on ``port``)."""
        import httpx

        def answers() -> bool:
            if not self.alive:
                raise RuntimeError(f"{self.name} exited with {self.proc and self.proc.returncode}")
            return httpx.get(self.url(path), timeout=2, headers=HTTPS_HEADERS).status_code == 200

        try:
            wait_until(answers, timeout_s=timeout_s, what=f"{self.name} to answer {path}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.log_text()}") from None


# Behind the TLS proxy of a deployment every request is HTTPS; say so, so that production
# settings (secure redirects) answer instead of redirecting.
HTTPS_HEADERS = {"X-Forwarded-Proto": "https"}
WORKER_READY = " ready."  # what a Celery worker logs once it consumes from the broker


def gunicorn_argv(port: int, *, workers: int = 2, threads: int = 1, log_level: str = "warning") -> list[str]:
    return [
        PYTHON, "-m", "gunicorn", "omniroute.wsgi",
        "-w", str(workers), "--threads", str(threads), "-b", f"127.0.0.1:{port}",
        "--chdir", str(ROOT), "--log-level", log_level, "--graceful-timeout", "5",
    ]  # fmt: skip


def celery_worker_argv(
    *, concurrency: int = 2, pool: str = "prefork", hostname: str | None = None
) -> list[str]:
    argv = [
        PYTHON, "-m", "celery", "-A", "omniroute", "worker",
        "--pool", pool, "-c", str(concurrency),
        "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO",
    ]  # fmt: skip
    return [*argv, "-n", hostname] if hostname else argv


def celery_beat_argv(schedule_dir: Path) -> list[str]:
    # The database scheduler keeps no schedule file; the pid file goes to the test's directory.
    return [
        PYTHON, "-m", "celery", "-A", "omniroute", "beat", "--loglevel", "INFO",
        "--pidfile", str(schedule_dir / f"beat-{uuid.uuid4().hex[:8]}.pid"),
    ]  # fmt: skip


@dataclass
class Processes:
    """The services of one test, all in process groups of their own; ``stop()`` ends every one."""

    log_dir: Path
    services: list[Service] = field(default_factory=list)

    def start(self, name: str, argv: list[str], env: Mapping[str, str], port: int | None = None) -> Service:
        service = Service(name, argv, env, self.log_dir / f"{name}.log", port)
        self.services.append(service)
        return service.start()

    def web(
        self,
        env: Mapping[str, str],
        *,
        name: str = "web",
        workers: int = 2,
        threads: int = 1,
        wait: bool = True,
    ) -> Service:
        """A gunicorn serving omniroute.wsgi on a free port, answering /healthz when returned
        (``wait=False``: at once; call ``wait_http()`` later, e.g. to start several together)."""
        port = free_port()
        service = self.start(name, gunicorn_argv(port, workers=workers, threads=threads), env, port)
        if wait:
            service.wait_http("/healthz")
        return service

    def worker(
        self,
        env: Mapping[str, str],
        *,
        name: str = "worker",
        concurrency: int = 2,
        pool: str = "prefork",
        wait: bool = True,
    ) -> Service:
        """A Celery worker consuming the env's queue, ready (connected to the broker) when returned
        (``wait=False``: at once; call ``wait_log(WORKER_READY)`` later)."""
        hostname = f"{name}-{uuid.uuid4().hex[:6]}@%h"
        service = self.start(
            name, celery_worker_argv(concurrency=concurrency, pool=pool, hostname=hostname), env
        )
        if wait:
            service.wait_log(WORKER_READY)
        return service

    def beat(self, env: Mapping[str, str], *, name: str = "beat") -> Service:
        return self.start(name, celery_beat_argv(self.log_dir), env)

    def check_alive(self) -> None:
        self.check_alive_except()

    def check_alive_except(self, *gone: Service) -> None:
        """Every service is still running, but those a test ended on purpose."""
        for service in self.services:
            if service not in gone:
                assert service.alive or service.proc is None, f"{service.name} exited\n{self.logs()}"

    def logs(self, tail: int = 4000) -> str:
        return "\n".join(f"--- {s.name} ---\n{s.log_text(tail)}" for s in self.services if s.log.exists())

    def stop(self) -> None:
        for service in self.services:
            if service.alive:
                signal_group(service.pid, signal.SIGTERM)
        for service in self.services:
            service.stop()


@contextlib.contextmanager
def gunicorn(
    env: Mapping[str, str], port: int, workers: int, log: Path, *, threads: int = 1
) -> Iterator[Service]:
    """One gunicorn answering /healthz, stopped on exit (its log tail printed when the body failed)."""
    service = Service("gunicorn", gunicorn_argv(port, workers=workers, threads=threads), env, log, port)
    try:
        service.start().wait_http("/healthz")
        yield service
    except BaseException:
        sys.stderr.write(service.log_text(3000))
        raise
    finally:
        service.stop()


# --- Redis ------------------------------------------------------------------------------------


class RedisServer:
    """An own ``redis-server`` on a free loopback port, no persistence; restartable on that port."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory
        self.port = port or free_port()
        self.service = Service(
            f"redis-{self.port}",
            [
                "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", str(directory),
            ],
            os.environ,
            directory / f"redis-{self.port}.log",
        )  # fmt: skip

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def ping(self) -> bool:
        import redis

        client = redis.Redis(port=self.port, socket_connect_timeout=0.5, socket_timeout=0.5)
        try:
            return bool(client.ping())
        except (redis.RedisError, OSError):
            return False
        finally:
            client.close()

    def start(self) -> RedisServer:
        self.service.start()
        wait_until(self.ping, timeout_s=10, what=f"redis-server on {self.port}")
        return self

    def stop(self) -> None:
        self.service.stop()

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- a TCP proxy that can lose the connection -------------------------------------------------


def _reset(sock: socket.socket) -> None:
    """Close with a RST (no FIN, no linger) and wake any thread blocked reading it."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


class TcpProxy:
    """Forwards 127.0.0.1:<port> to ``target``, one pair of threads per connection.

    ``pause()``: every open connection is reset and each new one is accepted and reset at once (the
    client sees its server vanish: PostgreSQL aborts the transactions of the dropped sessions);
    ``resume()``: connections go through again. ``connections`` counts the open ones."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._paused = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop, name=f"proxy-{self.port}", daemon=True)
        self.accepted = 0
        self.refused = 0

    def start(self) -> TcpProxy:
        self._thread.start()
        return self

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._open) // 2

    def pause(self) -> None:
        self._paused.set()
        with self._lock:
            doomed = list(self._open)
            self._open.clear()
        for sock in doomed:
            _reset(sock)

    def resume(self) -> None:
        self._paused.clear()

    def close(self) -> None:
        self._closed.set()
        self.pause()
        with contextlib.suppress(OSError):
            self._listener.close()
        self._thread.join(timeout=5)

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept_loop(self) -> None:
        chooser = selectors.DefaultSelector()
        chooser.register(self._listener, selectors.EVENT_READ)
        while not self._closed.is_set():
            if not chooser.select(timeout=0.1):
                continue
            try:
                client, _ = self._listener.accept()
            except OSError:
                continue
            if self._paused.is_set():
                self.refused += 1
                _reset(client)
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
                server.settimeout(None)
            except OSError:
                _reset(client)
                continue
            self.accepted += 1
            with self._lock:
                self._open.update((client, server))
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()
        chooser.close()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            # Either side's end ends the pair (the protocols proxied here never half-close).
            with self._lock:
                self._open.discard(src)
                self._open.discard(dst)
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()


# --- databases --------------------------------------------------------------------------------


@dataclass
class Database:
    """The processes' database: a SQLite file, or a PostgreSQL database of this run's own.

    ``env`` holds what selects it (``SQLITE_PATH``, or ``DATABASE_URL``); ``query`` and ``execute``
    reach it directly (never through a proxy), with ``%s`` placeholders on both engines."""

    env: dict[str, str]
    sqlite_path: Path | None = None
    postgres_url: str | None = None

    @property
    def vendor(self) -> str:
        return "sqlite" if self.sqlite_path is not None else "postgresql"

    def connect(self) -> Any:
        if self.sqlite_path is not None:
            return sqlite3.connect(self.sqlite_path, timeout=20, isolation_level=None)
        import psycopg

        assert self.postgres_url is not None
        return psycopg.connect(self.postgres_url, autocommit=True)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.sqlite_path is not None:
            sql = sql.replace("%s", "?")
        conn = self.connect()
        try:
            return list(conn.execute(sql, params).fetchall())
        finally:
            conn.close()

    def scalar(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        rows = self.query(sql, params)
        return rows[0][0] if rows else None

    def env_through(self, proxy: TcpProxy) -> dict[str, str]:
        """``env`` with DATABASE_URL pointing at ``proxy`` (PostgreSQL only)."""
        assert self.postgres_url is not None, "a proxy stands in front of PostgreSQL only"
        parsed = urlparse(self.postgres_url)
        netloc = f"{parsed.username or 'postgres'}@127.0.0.1:{proxy.port}"
        if parsed.password:
            netloc = f"{parsed.username}:{parsed.password}@127.0.0.1:{proxy.port}"
        return {**self.env, "DATABASE_URL": urlunparse(parsed._replace(netloc=netloc))}

    def target(self) -> tuple[str, int]:
        """(host, port) of the PostgreSQL server, for a TcpProxy."""
        assert self.postgres_url is not None
        parsed = urlparse(self.postgres_url)
        return parsed.hostname or "127.0.0.1", parsed.port or 5432


def main_database_url() -> str:
    return os.environ.get("DATABASE_URL", "")


def postgres_requested() -> bool:
    return main_database_url().startswith(POSTGRES_SCHEMES)


@contextlib.contextmanager
def postgres_database(main_url: str, name: str) -> Iterator[str]:
    """A fresh PostgreSQL database called ``name`` on ``main_url``'s server (its URL), dropped on exit
    (``WITH (FORCE)``: sessions a killed process left behind go with it)."""
    import psycopg

    with psycopg.connect(main_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunparse(urlparse(main_url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(main_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def run_database(directory: Path, *, prefix: str = "ladder_it") -> Iterator[Database]:
    """A PostgreSQL database of its own when DATABASE_URL names PostgreSQL, else a SQLite file in
    ``directory``. Empty: migrate it with ``manage(env, "migrate", "--noinput")``."""
    if postgres_requested():
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with postgres_database(main_database_url(), name) as url:
            yield Database({"DATABASE_URL": url}, postgres_url=url)
    else:
        path = directory / f"{prefix}.sqlite3"
        yield Database({"SQLITE_PATH": str(path)}, sqlite_path=path)


# --- environment and commands -----------------------------------------------------------------


def process_env(
    database_env: Mapping[str, str],
    *,
    redis_url: str,
    upstream_url: str = "",
    credential_key: str | None = None,
    **extra: str,
) -> dict[str, str]:
    """The environment of the product's processes (omniroute.settings reads it): production
    settings (DEBUG off, a secret key, loopback hosts), this database, this Redis as cache, broker
    and hot state, a broker queue and key prefixes of the run's own, adapters pointed at
    ``upstream_url`` (the fake upstream's base URL; empty: each connection's base_url). ``extra``
    is added last (e.g. LADDER_REFRESH_BEAT_S="1")."""
    from cryptography.fernet import Fernet

    run_id = uuid.uuid4().hex[:12]
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "SQLITE_PATH", "DB_TEST_NAME") and not key.startswith("PYTEST_")
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "omniroute.settings",
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "LADDER_CREDENTIAL_KEY": credential_key or Fernet.generate_key().decode(),
            "REDIS_URL": redis_url,
            "CELERY_BROKER_URL": redis_url,
            "CELERY_TASK_DEFAULT_QUEUE": f"ladder-it-{run_id}",
            "LADDER_HOTSTATE_PREFIX": f"ladder-it:{run_id}:hot",
            "LADDER_RATELIMIT_PREFIX": f"ladder-it:{run_id}:ratelimit",
            "LADDER_UPSTREAM_BASE_URL": upstream_url,
            # The stacks poll Claude connections many times a minute: its 300 s floor is lifted.
            "LADDER_POLL_FLOOR_S": "claude=0",
            "PYTHONUNBUFFERED": "1",
            "LOG_LEVEL": "INFO",
        }
    )
    env.update(database_env)
    env.update(extra)
    return env


def run_checked(
    argv: list[str], env: Mapping[str, str], *, timeout_s: float = 120, stdin: str | None = None
) -> str:
    done = subprocess.run(
        argv,
        cwd=ROOT,
        env=dict(env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, f"{argv[:4]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


def manage(env: Mapping[str, str], *args: str, timeout_s: float = 120) -> str:
    return run_checked([PYTHON, "manage.py", *args], env, timeout_s=timeout_s)


def seed(env: Mapping[str, str], spec: Mapping[str, Any]) -> dict[str, Any]:
    """Load ``spec`` into the env's database (see ``tests.reliability.seed``); returns its report."""
    out = run_checked([PYTHON, "-m", "tests.reliability.seed"], env, stdin=json.dumps(spec))
    report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return report
