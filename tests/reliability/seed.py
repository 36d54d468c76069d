"""Seed a ladder database from a JSON spec on standard input, through the services (as an operator's
admin would): ``python -m tests.reliability.seed < spec.json`` with the processes' environment
(``processes.seed(env, spec)`` does that). Prints one JSON line: what was created.

Spec (every key optional)::

    {
      "config": {"refresh_interval_s": 5, "rung_budget_usd": {"premium": 1000}, ...},
      "connections": [{"id": "c1", "provider": "claude", "auth_type": "oauth",
                       "base_url": "http://127.0.0.1:P/claude-oauth/@c1", "credential": "token-c1",
                       ...any other Connection field}],
      "readings": [{"connection_id": "c1", "age_s": 0, "source": "poll", "verifiable": true,
                    "windows": [{"name": "5h", "remaining_pct": 40, "reset_in_s": 3600,
                                 "scope_models": [], "latched": false}]}],
      "models": [{"provider": "claude", "model": "claude-sonnet-4-5", "input_usd_per_mtok": 3,
                  "categories": ["coding"]}],
      "tokens": [{"name": "gateway", "value": "<16+ printable characters>", "scope_resolve": true,
                  "scope_report": true}]
    }

A reading's times are relative to the moment of seeding (``age_s`` before it, ``reset_in_s`` after
it; ``reset_in_s`` null: no reset), so a spec means the same whenever it runs.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from typing import Any


def main() -> int:
    import django

    django.setup()
    from django.utils import timezone

    from ladder.domain.types import Reading, Window
    from ladder.models import Connection, ModelCatalogEntry
    from ladder.services.readings import reading_record
    from ladder.services.state import bump_state_version, configuration_update
    from ladder.services.tokens import gateway_token_create

    spec: dict[str, Any] = json.loads(sys.stdin.read() or "{}")
    now = timezone.now()
    if spec.get("config"):
        configuration_update(**spec["config"])
    for fields in spec.get("connections", ()):
        fields = dict(fields)
        credential = fields.pop("credential", None)
        connection = Connection(**fields)
        if credential:
            connection.set_credential(credential)
        connection.full_clean()
        connection.save()
    for fields in spec.get("models", ()):
        ModelCatalogEntry.objects.update_or_create(
            provider=fields["provider"], model=fields["model"], defaults=dict(fields)
        )
    for item in spec.get("readings", ()):
        windows = tuple(
            Window(
                name=w["name"],
                remaining_pct=float(w["remaining_pct"]),
                reset_at=None if w.get("reset_in_s") is None else now + timedelta(seconds=w["reset_in_s"]),
                scope_models=tuple(w.get("scope_models", ())),
                latched=bool(w.get("latched", False)),
            )
            for w in item.get("windows", ())
        )
        reading = Reading(
            fetched_at=now - timedelta(seconds=float(item.get("age_s", 0))),
            windows=windows,
            source=item.get("source", "poll"),
            verifiable=bool(item.get("verifiable", True)),
            observed_overage=item.get("observed_overage"),
        )
        reading_record(connection_id=item["connection_id"], reading=reading, now=now)
    tokens = []
    for fields in spec.get("tokens", ()):
        token, _ = gateway_token_create(**fields)
        tokens.append(token.name)
    bump_state_version()
    print(
        json.dumps(
            {
                "seeded_at": now.isoformat(),
                "connections": len(spec.get("connections", ())),
                "readings": len(spec.get("readings", ())),
                "models": len(spec.get("models", ())),
                "tokens": tokens,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
