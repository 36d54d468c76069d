"""A real LiteLLM proxy process, started from docs/litellm-proxy/config.yaml and its ladder_hook.py
exactly as docs/LITELLM.md shows, routing through a running ladder to a local OpenAI-compatible fake.

The proxy runs in its own virtualenv (`.venv-litellm-proxy`, built by `make test`), with the
environment the docs name: a strong LITELLM_MASTER_KEY, LITELLM_LOCAL_MODEL_COST_MAP=True, the
ladder's URL and token, and no DATABASE_URL. The plan's window drains as it serves: two completions
spend it, the third gets a 429 with the exhaustion headers. Requests go to the plan first, climb to
the cheap key once the plan is spent, come back after the reset; auto/subscription answers 429 with
Retry-After before any router fallback, and a config whose fallbacks lead it anywhere never starts.
No request reaches the paid deployment; every success is counted exactly once in the ladder's spend.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from ladder import models as m
from ladder.services.state import configuration_update
from ladder_client import LadderClient
from tests.ladder_client.conftest import CHEAP, PLAN, Ladder
from tests.ladder_client.fake_openai import COMPLETION_TOKENS, PROMPT_TOKENS, FakeOpenAI
from tests.ladder_client.sockets import refused_url
from tests.reliability.processes import ROOT, Service, free_port, wait_until

pytestmark = pytest.mark.slow

PROXY_VENV = ROOT / ".venv-litellm-proxy"
LITELLM = PROXY_VENV / "bin" / "litellm"
RECIPE = ROOT / "docs" / "litellm-proxy"  # config.yaml and ladder_hook.py, as the docs show them
THRIFTY = "auto/thrifty"
SUBSCRIPTION = "auto/subscription"
PAID_GROUP = "gpt-4o"
START_S = 90.0  # the proxy imports for ~10 s on an idle machine; CI's is busy
WAIT_S = 10.0
FLUSH_S = 4.0
RESET_IN_S = 2.0  # the plan's window resets this long after the completion that spends it
LITELLM_COOLDOWN_S = 1
DRAIN = 0.3  # two completions spend the plan's window (it starts 40% used)
# The cheap deployment's price in config.yaml: the spend the ladder shows must be LiteLLM's cost.
CHEAP_INPUT_USD_PER_TOKEN = 1e-6
CHEAP_OUTPUT_USD_PER_TOKEN = 2e-6

T = TypeVar("T")


def require_proxy_venv() -> None:
    if LITELLM.exists():
        return
    message = f"{LITELLM.relative_to(ROOT)} is missing: `make venv-litellm-proxy` builds the proxy's venv"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def proxy_env(ladder_url: str, ladder_token: str, fake: FakeOpenAI | None) -> dict[str, str]:
    """The proxy's environment: the docs' variables, the upstreams' bases, and no DATABASE_URL
    (CI sets one for the ladder; the proxy would start Prisma on it)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name != "DATABASE_URL" and not name.startswith(("LITELLM_", "LADDER_", "DJANGO_"))
    }
    base = fake.base if fake is not None else (lambda route: f"{refused_url()}/{route}/v1")
    env.update(
        LITELLM_MASTER_KEY=f"sk-{secrets.token_urlsafe(32)}",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LADDER_URL=ladder_url,
        LADDER_TOKEN=ladder_token,
        # Usage leaves every 4 s (WAIT_S covers it), so the last success before the proxy stops is
        # still queued then: only the flush at the proxy's shutdown can send it.
        LADDER_FLUSH_INTERVAL_S=str(FLUSH_S),
        PLAN_API_BASE=base("plan"),
        PLAN_API_KEY="plan-key",
        CHEAP_API_BASE=base("cheap"),
        CHEAP_API_KEY="cheap-key",
        PAID_API_BASE=base("paid"),
        PAID_API_KEY="paid-key",
        PYTHONUNBUFFERED="1",
        # LiteLLM cools a deployment down for 5 s after its 429, on top of the ladder's cooldown: a
        # blink beside a real plan's reset (hours), longer than this test's (2 s). Shortened here.
        DEFAULT_COOLDOWN_TIME_SECONDS=str(LITELLM_COOLDOWN_S),
    )
    return env


def proxy_service(config: Path, env: dict[str, str], log: Path) -> Service:
    port = free_port()
    argv = [
        str(LITELLM), "--config", str(config), "--host", "127.0.0.1", "--port", str(port),
        "--num_workers", "1",
    ]  # fmt: skip
    return Service("litellm-proxy", argv, env, log, port)


@contextmanager
def running_proxy(config: Path, env: dict[str, str], log: Path) -> Iterator[Service]:
    proxy = proxy_service(config, env, log)
    try:
        proxy.start().wait_http("/health/liveliness", timeout_s=START_S)
        yield proxy
    except BaseException:
        print(proxy.log_text(6000))
        raise
    finally:
        proxy.stop()


def eventually(check: Callable[[], T], accept: Callable[[T], bool], what: str) -> T:
    deadline = time.monotonic() + WAIT_S
    while True:
        value = check()
        if accept(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still {value!r} after {WAIT_S:g}s")
        time.sleep(0.05)


def usage_events(ladder: Ladder) -> dict[str, int]:
    """Usage events per connection, read between two of the live server's answers."""
    with ladder.database_lock:
        return {
            connection: m.UsageEvent.objects.filter(connection_id=connection).count()
            for connection in (PLAN, CHEAP)
        }


class Proxy:
    def __init__(self, service: Service, master_key: str) -> None:
        self.http = httpx.Client(
            base_url=service.url(), headers={"Authorization": f"Bearer {master_key}"}, timeout=30
        )
        self.served = 0  # successes answered, to compare with the ladder's usage events

    def ask(self, group: str, **body: Any) -> httpx.Response:
        answer = self.http.post(
            "/v1/chat/completions",
            json={"model": group, "messages": [{"role": "user", "content": "hello"}], **body},
        )
        if answer.status_code == 200:
            self.served += 1
        return answer


def test_the_proxy_routes_plan_first_climbs_refuses_and_comes_back(
    ladder: Ladder, fake: FakeOpenAI, tmp_path: Path
) -> None:
    require_proxy_venv()
    configuration_update(rung_budget_usd={"cheap": 1.0})
    client = LadderClient(ladder.url, ladder.token, timeout_s=10)
    # A fresh, verified reading of the plan (auto/subscription serves only on one): its headers.
    assert client.report_observation(PLAN, fake.plan.headers()) is not None
    fake.drain_plan(per_completion=DRAIN, reset_in_s=RESET_IN_S)
    env = proxy_env(ladder.url, ladder.token, fake)
    with running_proxy(RECIPE / "config.yaml", env, tmp_path / "proxy.log") as service:
        proxy = Proxy(service, env["LITELLM_MASTER_KEY"])
        reset_at = scenario(proxy, client, fake)
        # Usage is batched: wait until the ladder has counted the cheap rung's two completions, at
        # LiteLLM's price, and one usage event per success on the connection that served it.
        expected = 2 * (
            PROMPT_TOKENS * CHEAP_INPUT_USD_PER_TOKEN + COMPLETION_TOKENS * CHEAP_OUTPUT_USD_PER_TOKEN
        )
        eventually(
            lambda: client.connections().budgets["cheap"].spent_usd,
            lambda spent: spent == pytest.approx(expected, abs=1e-6),
            "the cheap rung's spend",
        )
        served = {PLAN: fake.served("plan"), CHEAP: fake.served("cheap")}
        eventually(lambda: usage_events(ladder), lambda counted: counted == served, "the usage events")
        # One more success, and the proxy stops at once: its usage is still queued (this proxy
        # flushes every FLUSH_S), so only the flush at the proxy's shutdown can send it.
        assert proxy.ask(THRIFTY).status_code == 200
    client.close()

    # Every success counted exactly once, the last one sent at the proxy's shutdown.
    served = {PLAN: fake.served("plan"), CHEAP: fake.served("cheap")}
    assert proxy.served == sum(served.values()) == 7
    assert usage_events(ladder) == served
    assert m.UsageEvent.objects.count() == proxy.served
    assert fake.routes().count("paid") == 0
    assert reset_at < datetime.now(UTC)


def scenario(proxy: Proxy, client: LadderClient, fake: FakeOpenAI) -> datetime:
    # 1. While the plan has quota, both auto ids are served by it; those two completions spend it.
    assert proxy.ask(THRIFTY).status_code == 200
    assert proxy.ask(SUBSCRIPTION).status_code == 200
    assert fake.routes() == ["plan", "plan"]
    assert fake.plan.spent
    reset_at = fake.plan.reset_at

    # 2. The plan answers 429 with the exhaustion headers; the hook reports it before the retry,
    # whose filter climbs one rung: the cheap key serves. The ladder latched the window to its reset.
    climbed = proxy.ask(THRIFTY)
    cooled_until = time.monotonic() + LITELLM_COOLDOWN_S
    assert climbed.status_code == 200, climbed.text
    assert fake.routes()[2:] == ["plan", "cheap"]
    assert fake.statuses[2:] == [429, 200]
    plan = client.connection(PLAN)
    assert plan.cooldown_until == reset_at
    assert plan.reading is not None
    spent = plan.reading.window("5h")
    assert spent is not None
    assert (spent.remaining_pct, spent.latched, spent.reset_at) == (0.0, True, reset_at)

    # 3. The plan cools down: thrifty goes straight to the cheap key.
    assert proxy.ask(THRIFTY).status_code == 200
    assert fake.routes()[4:] == ["cheap"]

    # 4. auto/subscription: 429 with Retry-After, refused before the router, whatever fallbacks the
    # client sends. Nothing reaches any deployment.
    refused = proxy.ask(SUBSCRIPTION, fallbacks=[PAID_GROUP])
    assert refused.status_code == 429, refused.text
    retry_after = float(refused.headers["Retry-After"])
    assert 0 <= retry_after <= RESET_IN_S + 1
    assert "no_verified_subscription_quota" in refused.text
    assert proxy.ask(SUBSCRIPTION).status_code == 429
    assert fake.routes()[5:] == []

    # 5. After the reset the plan serves again; its fresh headers lift the latch, and
    # auto/subscription serves on it.
    until_reset = (reset_at - datetime.now(UTC)).total_seconds()
    time.sleep(max(0.0, until_reset, cooled_until - time.monotonic()) + 0.1)
    assert proxy.ask(THRIFTY).status_code == 200
    assert fake.routes()[5:] == ["plan"]
    eventually(
        lambda: client.connection(PLAN).reading,
        lambda reading: (
            reading is not None
            and (reading.window("5h") or spent).remaining_pct == 95.0
            and not (reading.window("5h") or spent).latched
        ),
        "the plan's reading after the reset",
    )
    assert proxy.ask(SUBSCRIPTION).status_code == 200
    assert fake.routes()[6:] == ["plan"]
    return reset_at


def test_a_fallback_leading_auto_subscription_anywhere_stops_the_proxy_at_start_up(tmp_path: Path) -> None:
    require_proxy_venv()
    # The docs' config and hook, with one router fallback from auto/subscription to the paid group.
    shutil.copy(RECIPE / "ladder_hook.py", tmp_path / "ladder_hook.py")
    config = (RECIPE / "config.yaml").read_text()
    entry = f'  fallbacks: [{{"{SUBSCRIPTION}": ["{PAID_GROUP}"]}}]\n'
    assert "router_settings:\n" in config
    (tmp_path / "config.yaml").write_text(config.replace("router_settings:\n", "router_settings:\n" + entry))
    env = proxy_env(refused_url(), "never-used", None)
    proxy = proxy_service(tmp_path / "config.yaml", env, tmp_path / "proxy.log").start()
    try:
        wait_until(lambda: not proxy.alive, timeout_s=START_S, what="the proxy to refuse its config")
    finally:
        proxy.stop()
    log = proxy.log_text(1 << 20)
    assert proxy.proc is not None
    assert proxy.proc.returncode != 0, log[-3000:]
    for named in ("LadderConfigError", "fallbacks[0]", SUBSCRIPTION, PAID_GROUP):  # names the entry
        assert named in log, log[-3000:]


def test_the_docs_show_the_very_files_the_proxy_runs_here() -> None:
    """docs/LITELLM.md quotes config.yaml and ladder_hook.py whole: they cannot drift apart."""
    docs = (ROOT / "docs" / "LITELLM.md").read_text()
    for name, fence in (("config.yaml", "yaml"), ("ladder_hook.py", "python")):
        assert f"```{fence}\n{(RECIPE / name).read_text()}```\n" in docs, (
            f"docs/LITELLM.md quotes {name} whole"
        )
