"""The database and settings of a benchmark that runs the ladder as a server (bench_api,
bench_gateway, bench_refresh): a fresh SQLite file, or with DATABASE_URL=postgres://… a fresh
PostgreSQL database dropped afterwards; and, for the gateway benches, the production settings with
DEBUG off and a state file loaded with one gateway token."""

from __future__ import annotations

import io
import json
import os
import secrets
from collections.abc import MutableMapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tests.reliability.processes import postgres_database

POSTGRES_SCHEMES = ("postgres://", "postgresql://", "pgsql://")


def bench_database(env: MutableMapping[str, str], stack: ExitStack, tmp: Path, run_id: str) -> str:
    """Point ``env`` at a fresh database for this run (dropped by ``stack``); its description."""
    main_url = os.environ.get("DATABASE_URL", "")
    if main_url.startswith(POSTGRES_SCHEMES):
        env["DATABASE_URL"] = stack.enter_context(postgres_database(main_url, f"ladder_bench_{run_id}"))
        return f"postgresql ({env['DATABASE_URL'].rsplit('/', 1)[-1]})"
    env.pop("DATABASE_URL", None)
    env["SQLITE_PATH"] = str(tmp / "bench.sqlite3")
    return "sqlite (file, WAL)"


def production_env(name: str, run_id: str, settings: str = "omniroute.settings") -> dict[str, str]:
    """The environment of a ladder served as in production (DEBUG off, a fresh key), its rate-limit
    and hot-state keys apart from any other run's."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": settings,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": os.environ.get("BENCH_LOG_LEVEL", "WARNING"),
        "LADDER_RATELIMIT_PREFIX": f"{name}:{run_id}:ratelimit",
        "LADDER_HOTSTATE_PREFIX": f"{name}:{run_id}:hot",
        "PYTHONUNBUFFERED": "1",
    }


def load_state(tmp: Path, state: dict[str, Any], token_name: str) -> str:
    """Migrate, import ``state`` and make a gateway token (scopes resolve and report; its value
    returned); then close this process's connections, so that the server owns the database. Call
    after ``django.setup()``."""
    from django.core.management import call_command
    from django.db import connections

    from ladder.services.tokens import gateway_token_create

    call_command("migrate", interactive=False, verbosity=0)
    state_path = tmp / "state.json"
    state_path.write_text(json.dumps(state))
    call_command("ladder_import", str(state_path), stdout=io.StringIO())
    _, token = gateway_token_create(name=token_name)
    connections.close_all()
    return token
