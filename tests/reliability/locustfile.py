"""Gateway clients for the load test (tests/reliability/test_load.py runs `locust --headless -f` on this
file in a process of its own: locust patches the whole process with gevent).

Each simulated gateway resolves (auto/thrifty with its own scored candidates, auto/subscription and
auto/coding:thrifty built from the catalog) and reports usage (one event or a batch, with cost_usd or
priced from the catalog, each request_id unique). Every answer must be a 200 whose body matches the
OpenAPI schema the server itself serves, else the request counts as a failure. The usage events the
server confirmed are written, one JSON line each, to LOAD_EVENTS_PATH when the run ends: the test sums
them independently of the server.

Environment: LOAD_TOKEN (bearer, both scopes), LOAD_PLAN (JSON file: connection ids by role, the
usage mix), LOAD_EVENTS_PATH, LOAD_SEED.
"""

from __future__ import annotations

import json
import os
import random
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import jsonschema_rs
from locust import FastHttpUser, events, task
from locust.env import Environment

PLAN: dict[str, Any] = json.loads(Path(os.environ["LOAD_PLAN"]).read_text())
TOKEN = os.environ["LOAD_TOKEN"]
HEADERS = {"Authorization": f"Bearer {TOKEN}", "X-Forwarded-Proto": "https"}
RUN = uuid.uuid4().hex[:8]
CONFIRMED: list[dict[str, Any]] = []
VALIDATORS: dict[str, Any] = {}
SEED = int(os.environ.get("LOAD_SEED", "1"))


@events.test_start.add_listener
def load_schema(environment: Environment, **_: Any) -> None:
    """Validators for the response bodies, from the schema the server serves."""
    request = urllib.request.Request(f"{environment.host}/api/v1/openapi.json", headers=HEADERS)
    with urllib.request.urlopen(request, timeout=30) as answer:
        document = json.loads(answer.read())
    for name in ("Resolution", "UsageResponse"):
        VALIDATORS[name] = jsonschema_rs.validator_for({**document, "$ref": f"#/components/schemas/{name}"})


@events.quitting.add_listener
def write_confirmed(environment: Environment, **_: Any) -> None:
    with open(os.environ["LOAD_EVENTS_PATH"], "w", encoding="utf-8") as out:
        for event in CONFIRMED:
            out.write(json.dumps(event) + "\n")


def problem(body: Any, schema: str) -> str | None:
    error = next(iter(VALIDATORS[schema].iter_errors(body)), None)
    return None if error is None else f"{schema}: {error.message} at {list(error.instance_path)}"


class Gateway(FastHttpUser):
    """One gateway: no think time, a request as soon as the last one is answered."""

    network_timeout = 120.0
    connection_timeout = 30.0

    def on_start(self) -> None:
        self.rng = random.Random(f"{SEED}-{id(self)}")
        self.sent = 0

    # --- resolutions ---------------------------------------------------------------------------------

    def resolve(self, name: str, body: dict[str, Any]) -> None:
        with self.client.post(
            "/api/v1/pools/resolve", json=body, headers=HEADERS, name=name, catch_response=True
        ) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}: {(response.text or '')[:300]}")
                return
            answer = response.json()
            why = problem(answer, "Resolution") or (
                None if answer["model"] == body["model"] else f"answered for {answer['model']}"
            )
            if why:
                response.failure(why)

    def candidates(self) -> list[dict[str, Any]]:
        """A gateway's own scored list: a few models, a few allowed connections each (some repeated,
        now and then one the ladder does not know)."""
        chosen = []
        for provider, model, pool in self.rng.sample(PLAN["gateway_models"], k=3):
            allowed = self.rng.choices(PLAN["connections"][pool], k=4)
            if self.rng.random() < 0.1:
                allowed.append(f"ghost-{self.rng.randrange(100)}")
            chosen.append({"provider": provider, "model": model, "allowed_connection_ids": allowed})
        return chosen

    @task(3)
    def resolve_thrifty(self) -> None:
        self.resolve("resolve auto/thrifty (gateway candidates)", {
            "model": "auto/thrifty", "candidates": self.candidates(),
        })  # fmt: skip

    @task(2)
    def resolve_subscription(self) -> None:
        self.resolve("resolve auto/subscription (catalog)", {"model": "auto/subscription"})

    @task(1)
    def resolve_category(self) -> None:
        self.resolve("resolve auto/coding:thrifty (catalog)", {"model": "auto/coding:thrifty"})

    # --- usage ---------------------------------------------------------------------------------------

    def event(self) -> dict[str, Any]:
        self.sent += 1
        connection_pool, model = self.rng.choice(PLAN["usage"])
        event: dict[str, Any] = {
            "request_id": f"load-{RUN}-{id(self):x}-{self.sent}",
            "connection_id": self.rng.choice(PLAN["connections"][connection_pool]),
            "model": model,
            "input_tokens": self.rng.randrange(0, 200_000),
            "output_tokens": self.rng.randrange(0, 20_000),
        }
        if self.rng.random() < 0.5:
            event["cost_usd"] = self.rng.randrange(0, 5_000_000) / 1_000_000  # whole micro-dollars
        return event

    def report(self, name: str, sent: list[dict[str, Any]], body: dict[str, Any]) -> None:
        with self.client.post(
            "/api/v1/usage", json=body, headers=HEADERS, name=name, catch_response=True
        ) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}: {(response.text or '')[:300]}")
                return
            answer = response.json()
            why = problem(answer, "UsageResponse")
            if why is None and [e["request_id"] for e in answer["events"]] != [e["request_id"] for e in sent]:
                why = "the answer's events are not the events sent"
            if why:
                response.failure(why)
                return
            CONFIRMED.extend(sent)

    @task(2)
    def report_one(self) -> None:
        event = self.event()
        self.report("usage (one event)", [event], event)

    @task(1)
    def report_batch(self) -> None:
        batch = [self.event() for _ in range(self.rng.randrange(2, 11))]
        self.report("usage (batch of 2-10)", batch, {"events": batch})
