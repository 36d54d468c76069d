"""Load the starting billing and model catalogs; an operator's edits are kept unless --force."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from ladder.services.catalog_seed import catalog_seed_load
from ladder.services.state import bump_state_version


class Command(BaseCommand):
    help = (
        "Load the seed billing catalog and model catalog (ladder/seed/); keeps operator edits unless --force."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--force", action="store_true", help="also overwrite rows that an operator edited since the seed"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        billing, catalog = catalog_seed_load(force=options["force"])
        for title, report in (("billing catalog", billing), ("model catalog", catalog)):
            self.stdout.write(f"{title}:")
            for line in report.lines():
                self.stdout.write(f"  {line}")
        if billing.changed or catalog.changed:
            bump_state_version()
