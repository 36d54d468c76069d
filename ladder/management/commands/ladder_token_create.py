"""Create a gateway token and print its value (the only time it is shown)."""

from __future__ import annotations

import hmac
import re
from argparse import ArgumentParser
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from ladder.models import GatewayToken
from ladder.services.tokens import SCOPES, gateway_token_create, gateway_token_hash

# A field of gateway_token_create's ValidationError → the option that set it.
OPTION_OF = {
    "scopes": "--scopes",
    "connection_ids": "--connections",
    "spend_ceiling_usd": "--spend-ceiling",
    "value": "--value",
}


def parse_scopes(value: str) -> set[str]:
    scopes = {item.strip() for item in value.split(",") if item.strip()}
    unknown = sorted(scopes - set(SCOPES))
    if unknown or not scopes:
        raise CommandError(f"--scopes: {', '.join(unknown) or 'none given'}; accepted: {', '.join(SCOPES)}")
    return scopes


class Command(BaseCommand):
    help = (
        "Create a gateway token (stored as a SHA-256 hash) and print its value once. With --value, "
        "an existing token of that name and value is kept (so a demo can run this every time)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("name", help="the token's name, e.g. omniroute-prod")
        parser.add_argument(
            "--scopes",
            default="resolve,report",
            help=f"comma-separated, any of: {', '.join(SCOPES)} (credentials: fetch ladder-owned access "
            "tokens and push gateway-owned ones). Default: resolve,report",
        )
        parser.add_argument(
            "--connections",
            default="",
            help="the connection ids this token may report on and read, separated by commas or spaces "
            "(another one is refused with 403 connection_not_allowed). Default: every connection",
        )
        parser.add_argument(
            "--spend-ceiling",
            default=None,
            metavar="USD",
            help="USD of budgeted usage this token may report per budget period. Default: no ceiling",
        )
        parser.add_argument(
            "--value", help="use this value instead of a generated one (16–256 printable chars)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        name: str = options["name"]
        scopes = parse_scopes(options["scopes"])
        value: str | None = options["value"]
        existing = GatewayToken.objects.filter(name=name.strip()).first()
        if existing is not None:
            if value is None or not hmac.compare_digest(existing.token_hash, gateway_token_hash(value)):
                raise CommandError(
                    f"a gateway token named {name!r} already exists (revoke or delete it first)"
                )
            held = (existing.scope_resolve, existing.scope_report, existing.scope_credentials)
            label = ",".join(scope for scope, on in zip(SCOPES, held, strict=True) if on)
            state = "revoked" if existing.revoked_at else "kept"
            self.stdout.write(f"gateway token {existing.name} ({state}, scopes {label}): {value}")
            return
        try:
            token, plaintext = gateway_token_create(
                name=name,
                scope_resolve="resolve" in scopes,
                scope_report="report" in scopes,
                scope_credentials="credentials" in scopes,
                connection_ids=[part for part in re.split(r"[\s,]+", options["connections"]) if part],
                spend_ceiling_usd=options["spend_ceiling"],
                value=value,
            )
        except ValidationError as exc:
            messages = "; ".join(
                f"{OPTION_OF.get(field, field)}: {' '.join(errors)}"
                for field, errors in exc.message_dict.items()
            )
            raise CommandError(messages) from None
        label = ",".join(scope for scope in SCOPES if scope in scopes)
        limits = f", connections {', '.join(token.connection_ids)}" if token.connection_ids else ""
        if token.spend_ceiling_usd is not None:
            limits += f", spend ceiling ${token.spend_ceiling_usd}"
        self.stdout.write(
            self.style.SUCCESS(f"gateway token {token.name} (scopes {label}{limits}): {plaintext}")
        )
