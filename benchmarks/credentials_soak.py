"""Credentials soak (``make credentials-soak``): a week of token refreshes compressed into minutes.

The fake upstream (in this process) issues access tokens that live ``--lifetime-s`` seconds (a
Claude Code token lives about 8 h: three seconds stand for them, so a minute and a half is a week of
Claude refreshes) and single-use refresh tokens whose reuse revokes the family. Ladder-owned
connections of every refreshable kind are imported from the files the fake's CLIs would write. Two
worker processes run the beat's credential sweep and poll every connection (a 401 on a poll takes the
refresh-then-verify path); a gateway process fetches each connection's token in parallel, as ``GET
/api/v1/connections/{id}/credential`` does, and checks that the fake accepts what it got. SQLite by
default (a fresh file), PostgreSQL with ``DATABASE_URL`` (a fresh database of its own, dropped after).

The last line is ``refreshes=<n> reused=<n> disabled=<n> needs_reauth=<n>``, counted from the fake
upstream's own record of redemptions and from the database: a pass has ``refreshes`` above 100 and
every other figure 0 (the exit status says so too).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (kind, auth method, how many connections)
ACCOUNTS = (
    ("claude-oauth", "social", 3),
    ("codex-chatgpt", "social", 3),
    ("kiro", "social", 2),
    ("kiro", "idc", 1),
    ("gemini-cli", "social", 2),
    ("antigravity", "social", 1),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=("main", "worker", "gateway"), default="main")
    parser.add_argument("--duration-s", type=float, default=float(os.environ.get("SOAK_DURATION_S", "90")))
    parser.add_argument("--lifetime-s", type=float, default=float(os.environ.get("SOAK_LIFETIME_S", "3")))
    parser.add_argument("--upstream", default="")
    parser.add_argument("--until", type=float, default=0.0)
    args = parser.parse_args()
    if args.role == "worker":
        return worker(args.until)
    if args.role == "gateway":
        return gateway(args.until)
    return run(args.duration_s, args.lifetime_s)


def django_setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omniroute.settings")
    import django

    django.setup()


def run(duration_s: float, lifetime_s: float) -> int:
    from cryptography.fernet import Fernet

    from devtools.fakeupstream import FakeUpstream

    run_id = uuid.uuid4().hex[:10]
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="credentials-soak-")))
        upstream = stack.enter_context(FakeUpstream(token_lifetime_s=lifetime_s))
        os.environ.update(
            {
                "DJANGO_SETTINGS_MODULE": "omniroute.settings",
                "LADDER_CREDENTIAL_KEY": Fernet.generate_key().decode(),
                "LADDER_HOTSTATE_PREFIX": f"soak:{run_id}",
                "LADDER_RATELIMIT_PREFIX": f"soak:{run_id}:ratelimit",
                "LOG_LEVEL": os.environ.get("SOAK_LOG_LEVEL", "ERROR"),
                "LADDER_REFRESH_INTERVAL_S": "1",
                "LADDER_CREDENTIAL_LEASE_S": "10",
                "LADDER_CREDENTIAL_WAIT_S": "3",
                "PYTHONUNBUFFERED": "1",
            }
        )
        from benchmarks.benchdb import bench_database

        database = bench_database(os.environ, stack, tmp, run_id)
        django_setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        ids = seed(upstream, lifetime_s)
        print(
            f"credentials soak: {len(ids)} ladder-owned connections, tokens of {lifetime_s:g} s, "
            f"{duration_s:g} s, 2 workers + 1 gateway, {database}",
            flush=True,
        )
        until = time.time() + duration_s
        script = str(Path(__file__).resolve())
        children = [
            subprocess.Popen([sys.executable, script, "--role", role, "--until", str(until)], cwd=ROOT)
            for role in ("worker", "worker", "gateway")
        ]
        failed = [child.args for child in children if child.wait(timeout=duration_s + 120) != 0]
        from ladder.models import Connection

        record = upstream.control().token_record()["summary"]
        rows = Connection.objects.filter(pk__in=ids)
        disabled = rows.filter(enabled=False).count()
        needs_reauth = rows.filter(disabled_reason="needs_reauth").count()
        reused = (
            record["reused"] + record["revoked"] + record["unknown"] + record["single_use_redeemed_twice"]
        )
        print(f"redemptions={record['redemptions']} children_failed={len(failed)}", flush=True)
        print(f"refreshes={record['ok']} reused={reused} disabled={disabled} needs_reauth={needs_reauth}")
        ok = record["ok"] > 100 and reused == disabled == needs_reauth == 0 and not failed
        return 0 if ok else 1


def seed(upstream: object, lifetime_s: float) -> list[str]:
    from ladder.models import Connection
    from ladder.providers import ADAPTERS
    from ladder.services.credentials import credential_import

    control = upstream.control()  # type: ignore[attr-defined]
    ids: list[str] = []
    for kind, auth_method, count in ACCOUNTS:
        adapter = ADAPTERS[kind]
        for index in range(count):
            cid = f"{kind}-{auth_method}-{index}"
            Connection.objects.create(
                id=cid,
                provider=adapter.provider,
                auth_type=adapter.auth_type,
                base_url=upstream.url_for(kind, cid),  # type: ignore[attr-defined]
            )
            minted = control.mint_login(kind, lifetime_s=lifetime_s, auth_method=auth_method)
            credential_import(connection_id=cid, text=json.dumps(minted["file"]), owner="ladder")
            ids.append(cid)
    return ids


def worker(until: float) -> int:
    """The beat's two entries, again and again: the credential sweep and the quota fan-out."""
    django_setup()
    import httpx
    from django.db import OperationalError

    from ladder.services.credential_refresh import credentials_refresh_due_run
    from ladder.services.refresh.fanout import refresh_due_run

    counts: Counter[str] = Counter()
    with httpx.Client() as client:
        while time.time() < until:
            try:
                counts.update(credentials_refresh_due_run(client=client))
                refresh_due_run(lease_s=20, deadline_s=5)
            except OperationalError:
                counts["database_busy"] += 1
            time.sleep(random.uniform(0.05, 0.2))
    print(f"worker {os.getpid()}: {dict(counts)}", flush=True)
    return 0


def gateway(until: float) -> int:
    """A gateway borrowing each connection's token through the credential API's service
    (GET /api/v1/connections/{id}/credential: refreshed first when within its lead time)."""
    django_setup()
    from datetime import datetime

    import httpx
    from django.db import OperationalError

    from ladder.models import Connection
    from ladder.services.gateway_credentials import CredentialUnavailable, credential_for_gateway

    ids = list(Connection.objects.values_list("id", flat=True))
    counts: Counter[str] = Counter()
    with httpx.Client() as client:
        while time.time() < until:
            cid = random.choice(ids)
            try:
                lent = credential_for_gateway(connection_id=cid, client=client)
            except CredentialUnavailable as exc:
                counts[exc.code] += 1
                continue
            except OperationalError:
                counts["database_busy"] += 1
                continue
            expires = datetime.fromisoformat(lent["expires_at"].replace("Z", "+00:00"))
            counts[
                "lent_valid" if expires.timestamp() > time.time() and lent["access_token"] else "lent_expired"
            ] += 1
            time.sleep(random.uniform(0.01, 0.05))
    print(f"gateway {os.getpid()}: {dict(counts)}", flush=True)
    return 1 if counts["lent_expired"] or counts["needs_reauth"] else 0


if __name__ == "__main__":
    sys.exit(main())
