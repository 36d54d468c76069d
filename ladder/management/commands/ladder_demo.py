"""Seed the demo of `make run`: an admin login and connections served by the local fake upstream."""

from __future__ import annotations

import os
import secrets
from argparse import ArgumentParser
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from ladder.models import Connection
from ladder.services.state import bump_state_version
from ladder.services.tokens import gateway_token_generate

# (id, fixture kind served by the fake upstream, provider, auth_type, models or None)
DEMO_CONNECTIONS: tuple[tuple[str, str, str, str, list[str] | None], ...] = (
    ("demo-claude-max", "claude-oauth", "claude", "oauth", None),
    ("demo-codex-plus", "codex-chatgpt", "codex", "oauth", None),
    ("demo-copilot", "copilot", "copilot", "oauth", None),
    ("demo-zai-glm", "zai-glm", "zai", "apikey", None),
    ("demo-openrouter", "openrouter", "openrouter", "apikey", None),
    ("demo-openai-key", "openai-api", "openai", "apikey", ["gpt-5-mini", "gpt-5"]),
    ("demo-anthropic-key", "anthropic-api", "anthropic", "apikey", None),
    ("demo-qwen", "qwen-oauth", "qwen", "oauth", None),
)


def local_secret(path: Path, make: Callable[[], str]) -> str:
    """The secret kept in the file at `path` (in .local/, readable by this user only), made once."""
    if not path.exists():
        path.parent.mkdir(mode=0o700, exist_ok=True)
        path.write_text(make())
        path.chmod(0o600)
    return path.read_text().strip()


class Command(BaseCommand):
    help = "Create the demo admin login and demo connections (idempotent; keeps operator edits)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--upstream-url", default=os.environ.get("LADDER_UPSTREAM_BASE_URL", ""))

    def handle(self, *args: Any, **options: Any) -> None:
        upstream = (options["upstream_url"] or "http://127.0.0.1:8555").rstrip("/")
        with transaction.atomic():
            created = 0
            for position, (connection_id, kind, provider, auth_type, models) in enumerate(DEMO_CONNECTIONS):
                connection, was_created = Connection.objects.get_or_create(
                    id=connection_id,
                    defaults={
                        "provider": provider,
                        "auth_type": auth_type,
                        "base_url": f"{upstream}/{kind}/@{connection_id}",
                        "models": models,
                        "position": position,
                    },
                )
                if was_created:
                    connection.set_credential(f"demo-{secrets.token_hex(8)}")
                    connection.save()
                    created += 1
            bump_state_version()
        self.stdout.write(f"demo connections: {created} created, {len(DEMO_CONNECTIONS) - created} kept")
        self._demo_token()
        self._admin_login()

    def _demo_token(self) -> None:
        """The demo's gateway token: LADDER_DEMO_TOKEN, else a generated one kept in .local/."""
        local = Path(settings.BASE_DIR) / ".local" / "demo-token"
        value = os.environ.get("LADDER_DEMO_TOKEN") or local_secret(local, gateway_token_generate)
        try:
            call_command("ladder_token_create", "demo", "--value", value, stdout=self.stdout)
        except CommandError as exc:
            self.stdout.write(f"demo gateway token: {exc} (kept)")

    def _admin_login(self) -> None:
        users = get_user_model()
        wanted = os.environ.get("LADDER_ADMIN_PASSWORD")
        # Generated once and kept in .local/, so that every `make run` can print it again.
        local = Path(settings.BASE_DIR) / ".local" / "admin-password"
        password = wanted or local_secret(local, lambda: secrets.token_urlsafe(12))
        user = users.objects.filter(username="admin").first()
        if user is None:
            user = users.objects.create_superuser("admin", "admin@localhost", password)
        elif wanted and not user.check_password(wanted):
            user.set_password(wanted)
            user.save(update_fields=["password"])
        elif not wanted and not user.check_password(password):
            self.stdout.write("admin login: user admin (its password was changed since; kept)")
            return
        shown = "from LADDER_ADMIN_PASSWORD" if wanted else password
        self.stdout.write(self.style.SUCCESS(f"admin login: user admin, password {shown}"))
