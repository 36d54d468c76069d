"""Gateway benchmark: the LiteLLM proxy with and without the ladder's hook, against an upstream that
answers at once; what the ladder costs a request end to end.

Ladder: one `gunicorn omniroute.wsgi` with the production settings, DEBUG off, and the worker class
docs/DEPLOY.md advises (gthread: keep-alive, so the hook's client reuses its connections; sync
workers close after every answer). 50 Claude plan connections with fresh readings; a fresh SQLite
file (WAL), or with DATABASE_URL=postgres://… a fresh PostgreSQL database dropped afterwards.

Upstream: the tests' fake OpenAI-compatible server (tests/ladder_client/fake_openai.py) in a process of
its own; every call answers 200 at once, with the plan's rate-limit headers.

Proxies: `litellm --config … --num_workers 1` from `.venv-litellm-proxy`, one config for all:
`auto/thrifty` holds 50 deployments (one per ladder connection), `direct` holds only the deployment
the ladder picks (resolved once before the run); every deployment declares a price (LiteLLM's
zero-cost check alone costs ~4 ms an answer). Three processes, started alike:
- ``bare``: no callbacks; requests ask for `direct`;
- ``hook``: docs/litellm-proxy/ladder_hook.py, LADDER_RESOLVE_CACHE_S=0; requests ask for `auto/thrifty`;
- ``hook+cache``: the same with LADDER_RESOLVE_CACHE_S=1.
Load: 16 client threads (keep-alive http.client), rounds interleaved, after a warm-up; every request
carries `disable_fallbacks`, as the hook sets it on auto/* requests.

Router: the same comparison inside one Python process with LiteLLM's `Router` (main .venv): 16
concurrent `acompletion`s on `auto/thrifty` through `install_ladder` against `direct` without it.

Prints requests/s, p50 and p99 of each side, the p50 the ladder adds (cache off and on), the Router's
figures; the last line is ``ratio=<hook rps / bare rps>`` with the cache off. Target: ratio ≥ 0.8.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.benchdb import bench_database, load_state, production_env  # noqa: E402
from tests.reliability.processes import (  # noqa: E402
    PYTHON,
    Service,
    free_port,
    gunicorn,
)

PROXY_VENV = ROOT / ".venv-litellm-proxy"
LITELLM = PROXY_VENV / "bin" / "litellm"
HOOK_FILE = ROOT / "docs" / "litellm-proxy" / "ladder_hook.py"
AUTO = "auto/thrifty"
DIRECT = "direct"
PROVIDER, MODEL = "claude", "claude-sonnet-4-5"
CONNECTIONS = 50
CACHE_S = 1.0
TARGET_RATIO = 0.8
BODY = {"model": "", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 16}
PRICES = {"input_cost_per_token": 0.000003, "output_cost_per_token": 0.000015}
# The fake upstream in its own process: prints its base URL, then serves until killed.
UPSTREAM_CODE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.ladder_client.fake_openai import run_fake_openai
with run_fake_openai() as fake:
    print(fake.url, flush=True)
    while True:
        time.sleep(3600)
"""


def utc(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def connection_id(index: int) -> str:
    return f"claude-max-{index:02d}"


def bench_state(now: datetime) -> dict[str, Any]:
    """50 plan connections of one model, fresh readings (60% left, reset in two hours)."""
    reset = utc(now + timedelta(hours=2))
    return {
        "now": utc(now),
        "config": {"max_reading_age_s": 3600, "refresh_interval_s": 3600},
        "billing_catalog": [
            {"provider": PROVIDER, "auth_type": "oauth", "billing": "subscription", "overage": "hard-stop"}
        ],
        "models": [
            {
                "provider": PROVIDER,
                "model": MODEL,
                "input_usd_per_mtok": 3.0,
                "output_usd_per_mtok": 15.0,
                "categories": ["coding", "chat"],
            }
        ],
        "connections": [
            {
                "id": connection_id(i),
                "provider": PROVIDER,
                "auth_type": "oauth",
                "quota": {
                    "fetched_at": utc(now - timedelta(seconds=1)),
                    "windows": [{"name": "5h", "remaining_pct": 60.0, "reset_at": reset}],
                },
            }
            for i in range(CONNECTIONS)
        ],
        "spend_usd": {},
        "request": {"model": AUTO, "candidates": None},
    }


def deployment(group: str, index: int, api_base: str) -> dict[str, Any]:
    return {
        "model_name": group,
        "litellm_params": {"model": f"openai/{MODEL}", "api_base": api_base, "api_key": "plan", **PRICES},
        "model_info": {
            "id": f"{group}-{index:02d}",
            "ladder_connection_id": connection_id(index),
            "ladder_provider": PROVIDER,
            "ladder_model": MODEL,
        },
    }


def model_list(api_base: str, picked: int) -> list[dict[str, Any]]:
    return [deployment(AUTO, i, api_base) for i in range(CONNECTIONS)] + [
        deployment(DIRECT, picked, api_base)
    ]


def proxy_config(models: list[dict[str, Any]], hooked: bool) -> str:
    """The proxy's config.yaml (JSON is YAML): the docs' router settings, the hook or none."""
    config: dict[str, Any] = {"model_list": models, "router_settings": {"num_retries": 1, "retry_after": 0}}
    if hooked:
        config["litellm_settings"] = {"callbacks": "ladder_hook.proxy_handler_instance"}
    return json.dumps(config, indent=1)


# --- the load ---------------------------------------------------------------------------------


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a gunicorn master's workers), from /proc."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                queue.extend(int(child) for child in task.read_text().split())
            except OSError:
                continue
    return found


def cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) spent so far by ``pid``'s tree; 0 where /proc cannot tell."""
    if pid is None:
        return 0.0
    ticks = 0
    for member in process_tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


@dataclass
class Side:
    name: str
    port: int
    group: str
    latencies: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    proxy_pid: int | None = None
    proxy_cpu_s: float = 0.0
    ladder_cpu_s: float = 0.0

    def rps(self) -> float:
        return len(self.latencies) / self.wall_s

    def p50_ms(self) -> float:
        return statistics.median(self.latencies) * 1000

    def p99_ms(self) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000

    def line(self) -> str:
        cpu = ""
        if self.proxy_pid is not None:
            per = 1000 / len(self.latencies)
            cpu = f" cpu_ms/request: proxy={self.proxy_cpu_s * per:.1f} ladder={self.ladder_cpu_s * per:.1f}"
        return (
            f"{self.name:12s} requests={len(self.latencies)} rps={self.rps():.1f} "
            f"p50_ms={self.p50_ms():.2f} p99_ms={self.p99_ms():.2f}{cpu}"
        )


class Client:
    """One keep-alive connection per client and proxy."""

    def __init__(self, master_key: str) -> None:
        self.headers = {"Authorization": f"Bearer {master_key}", "Content-Type": "application/json"}
        self.conns: dict[int, http.client.HTTPConnection] = {}

    def post(self, side: Side) -> tuple[int, bytes]:
        conn = self.conns.get(side.port)
        if conn is None:
            conn = self.conns[side.port] = http.client.HTTPConnection("127.0.0.1", side.port, timeout=60)
        # Every side's requests carry disable_fallbacks, which the hook sets on each auto/* request:
        # LiteLLM then skips its fallback wrapper, and the bare side would pay for it alone.
        body = json.dumps({**BODY, "model": side.group, "disable_fallbacks": True}).encode()
        conn.request("POST", "/v1/chat/completions", body, self.headers)
        response = conn.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        """Drop the connections: uvicorn closes one idle for 5 s, as it is while other sides run."""
        for conn in self.conns.values():
            conn.close()
        self.conns.clear()


def phase(
    clients: list[Client], side: Side, duration_s: float, record: bool, ladder_pid: int | None = None
) -> None:
    """Every client posts to side's proxy, back to back, for duration_s (CPU of the proxy and of the
    ladder's gunicorn counted over it)."""
    barrier = threading.Barrier(len(clients) + 1)
    results: list[list[float]] = [[] for _ in clients]
    failures: list[str] = []
    deadline = 0.0

    def run(index: int) -> None:
        client, mine = clients[index], results[index]
        client.close()  # a fresh connection for each phase
        barrier.wait()
        try:
            while True:
                start = time.perf_counter()
                if start >= deadline:
                    return
                status, body = client.post(side)
                mine.append(time.perf_counter() - start)
                if status != 200:
                    failures.append(f"{side.name}: HTTP {status}: {body[:300]!r}")
                    return
        except Exception as exc:  # reported below, after every thread has stopped
            failures.append(f"{side.name}: {exc!r}")

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    proxy_cpu, ladder_cpu = cpu_s(side.proxy_pid), cpu_s(ladder_pid)
    started = time.perf_counter()
    deadline = started + duration_s
    barrier.wait()
    for thread in threads:
        thread.join(timeout=duration_s + 120)
    wall = time.perf_counter() - started
    if failures:
        raise RuntimeError(failures[0])
    if record:
        side.wall_s += wall
        side.latencies.extend(t for mine in results for t in mine)
        side.proxy_cpu_s += cpu_s(side.proxy_pid) - proxy_cpu
        side.ladder_cpu_s += cpu_s(ladder_pid) - ladder_cpu


# --- the Router, in this process ----------------------------------------------------------------


async def router_phase(router: Any, side: Side, clients: int, duration_s: float, record: bool) -> None:
    deadline = time.perf_counter() + duration_s
    results: list[float] = []

    async def run() -> None:
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            await router.acompletion(model=side.group, messages=BODY["messages"], max_tokens=16)
            results.append(time.perf_counter() - start)

    started = time.perf_counter()
    await asyncio.gather(*(run() for _ in range(clients)))
    if record:
        side.wall_s += time.perf_counter() - started
        side.latencies.extend(results)


def router_figures(
    models: list[dict[str, Any]], ladder_url: str, token: str, args: argparse.Namespace
) -> tuple[Side, Side]:
    import logging

    import litellm

    from ladder_client import LadderClient
    from ladder_client.litellm_router import install_ladder, uninstall_callback

    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)  # each deployment's custom-pricing warning
    bare = Side("router-bare", 0, DIRECT)
    hooked = Side("router-hook", 0, AUTO)
    plain = litellm.Router(model_list=[d for d in models if d["model_name"] == DIRECT])
    laddered = litellm.Router(model_list=models)
    client = LadderClient(ladder_url, token, timeout_s=30)
    _, callback = install_ladder(laddered, client)
    routers = {bare.name: plain, hooked.name: laddered}

    async def run() -> None:
        for side in (bare, hooked):
            await router_phase(routers[side.name], side, args.clients, args.warmup, record=False)
        slice_s = args.seconds / args.rounds
        for index in range(args.rounds):
            for side in (bare, hooked) if index % 2 == 0 else (hooked, bare):
                await router_phase(routers[side.name], side, args.clients, slice_s, record=True)

    try:
        asyncio.run(run())
    finally:
        uninstall_callback(callback)
        client.close()
    return bare, hooked


# --- the processes ------------------------------------------------------------------------------


@contextmanager
def upstream(log: Path) -> Iterator[str]:
    proc = subprocess.Popen(
        [PYTHON, "-c", UPSTREAM_CODE, str(ROOT)],
        stdout=subprocess.PIPE,
        stderr=log.open("ab"),
        start_new_session=True,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.kill()
        proc.wait(timeout=10)


def proxy_env(ladder_url: str, token: str, master_key: str, cache_s: float) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name != "DATABASE_URL" and not name.startswith(("LITELLM_", "LADDER_", "DJANGO_"))
    }
    env.update(
        LITELLM_MASTER_KEY=master_key,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_LOG="ERROR",
        LADDER_URL=ladder_url,
        LADDER_TOKEN=token,
        LADDER_RESOLVE_CACHE_S=str(cache_s),
        # The hook from this tree, not the ladder_client the proxy's venv installed (a checkout elsewhere).
        PYTHONPATH=str(ROOT),
    )
    return env


def start_proxy(name: str, directory: Path, config: str, env: dict[str, str]) -> Service:
    directory.mkdir()
    (directory / "config.yaml").write_text(config)
    shutil.copy(HOOK_FILE, directory / "ladder_hook.py")
    port = free_port()
    argv = [
        str(LITELLM), "--config", str(directory / "config.yaml"), "--host", "127.0.0.1",
        "--port", str(port), "--num_workers", "1",
    ]  # fmt: skip
    return Service(name, argv, env, directory / "proxy.log", port).start()


def usage_by_connection() -> list[tuple[str, int]]:
    """Usage events per connection, most first (the hooked sides' successes the ladder counted)."""
    from django.db.models import Count

    from ladder import models as m

    rows = m.UsageEvent.objects.values_list("connection_id").annotate(n=Count("id")).order_by("-n")
    return [(str(connection), int(count)) for connection, count in rows]


def litellm_version() -> str:
    out = subprocess.run(
        [
            str(PROXY_VENV / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('litellm'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


# --- the run ----------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12.0, help="measured seconds per side")
    parser.add_argument("--rounds", type=int, default=4, help="alternations of the sides")
    parser.add_argument("--warmup", type=float, default=3.0, help="warm-up seconds per side")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2, help="the ladder's gunicorn workers")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker (gthread)")
    parser.add_argument("--no-router", action="store_true", help="skip the Router's figures")
    args = parser.parse_args()
    if not LITELLM.exists():
        print(f"{LITELLM} is missing: run `make venv-litellm-proxy`", file=sys.stderr)
        return 2

    run_id = uuid.uuid4().hex[:10]
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-gateway-")))
        env = {
            **production_env("bench-gateway", run_id),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # this process's Router: no price map download
        }
        database = bench_database(env, stack, tmp, run_id)
        os.environ.update(env)

        import django

        django.setup()
        from ladder_client import Candidate, LadderClient

        token = load_state(tmp, bench_state(datetime.now(UTC)), f"bench-gateway-{run_id}")

        port = free_port()
        server = stack.enter_context(
            gunicorn(env, port, args.workers, tmp / "gunicorn.log", threads=args.threads)
        )
        ladder_url = f"http://127.0.0.1:{port}"
        api_base = f"{stack.enter_context(upstream(tmp / 'upstream.log'))}/plan/v1"

        # The deployment the ladder picks: the `direct` group holds only it.
        candidates = [
            Candidate(
                provider=PROVIDER,
                model=MODEL,
                connection_id=None,
                allowed_connection_ids=tuple(connection_id(i) for i in range(CONNECTIONS)),
            )
        ]
        with LadderClient(ladder_url, token, timeout_s=30) as ladder:
            resolution = ladder.resolve(AUTO, candidates)
        if not resolution.pool:
            raise RuntimeError(f"the ladder has no pool for {AUTO}: {resolution.empty}")
        picked_id = resolution.pool[0].allowed_connection_ids[0]
        picked = next(i for i in range(CONNECTIONS) if connection_id(i) == picked_id)
        models = model_list(api_base, picked)

        master_key = f"sk-{secrets.token_urlsafe(32)}"
        sides_config = {"bare": (False, 0.0), "hook": (True, 0.0), "hook+cache": (True, CACHE_S)}
        proxies = {
            name: start_proxy(
                name,
                tmp / name.replace("+", "-"),
                proxy_config(models, hooked),
                proxy_env(ladder_url, token, master_key, cache_s),
            )
            for name, (hooked, cache_s) in sides_config.items()
        }
        for proxy in proxies.values():
            stack.callback(proxy.stop)
        for proxy in proxies.values():
            try:
                proxy.wait_http("/health/liveliness", timeout_s=180)
            except AssertionError:
                sys.stderr.write(proxy.log_text(6000))
                raise
        sides = [
            Side(name, proxy.port or 0, DIRECT if name == "bare" else AUTO, proxy_pid=proxy.pid)
            for name, proxy in proxies.items()
        ]
        clients = [Client(master_key) for _ in range(args.clients)]
        for client in clients:
            stack.callback(client.close)

        for side in sides:
            phase(clients, side, args.warmup, record=False)
        slice_s = args.seconds / args.rounds
        for index in range(args.rounds):
            for side in sides if index % 2 == 0 else reversed(sides):
                phase(clients, side, slice_s, record=True, ladder_pid=server.pid)

        for proxy in proxies.values():
            proxy.stop()
        picks = usage_by_connection()  # where the hooked proxies' requests went, by the ladder's count
        router: tuple[Side, Side] | None = None
        if not args.no_router:
            router = router_figures(models, ladder_url, token, args)

        bare, hook, cached = sides
        print(
            f"ladder: gunicorn gthread -w {args.workers} --threads {args.threads} (keep-alive), DEBUG=false, "
            f"database={database}, {CONNECTIONS} connections; cpus={os.cpu_count()}"
        )
        print(
            f"proxy: litellm {litellm_version()} --num_workers 1, one process per side; "
            f"clients={args.clients}; "
            f"{args.rounds} rounds, {args.seconds:g} s per side after {args.warmup:g} s warm-up; "
            f"picked={picked_id}"
        )
        for side in sides:
            print(side.line())
        print(f"ladder_p50_ms={hook.p50_ms() - bare.p50_ms():.2f} (resolution cache off)")
        print(
            f"ladder_p50_ms_cached={cached.p50_ms() - bare.p50_ms():.2f} (LADDER_RESOLVE_CACHE_S={CACHE_S:g})"
        )
        print(f"ratio_cached={cached.rps() / bare.rps():.3f}")
        top = ", ".join(f"{connection}:{count}" for connection, count in picks[:3])
        print(f"hooked usage events: {sum(c for _, c in picks)} on {len(picks)} connection(s) ({top})")
        if router is not None:
            router_bare, router_hook = router
            print(router_bare.line())
            print(router_hook.line())
            print(f"router_ladder_p50_ms={router_hook.p50_ms() - router_bare.p50_ms():.2f}")
            print(f"ratio_router={router_hook.rps() / router_bare.rps():.3f}")
        print(f"target: ratio >= {TARGET_RATIO}")
        print(f"ratio={hook.rps() / bare.rps():.3f}")
        return 0


if __name__ == "__main__":
    sys.exit(main())
