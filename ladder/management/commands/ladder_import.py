"""Load a state file (STATE.md) into the database: catalog, models, connections, readings, spend and
configuration, in one transaction, all or nothing."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ladder.contract.state.decode import load_json_text
from ladder.contract.state.errors import StateError
from ladder.offline.jsontext import read_text
from ladder.services.imports import state_import


class Command(BaseCommand):
    help = "Upsert the rows of a state file by key; --replace also deletes rows absent from the file."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("state", help="the state file; - for standard input")
        parser.add_argument("--replace", action="store_true", help="delete rows that the file does not list")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["state"]
        try:
            text = read_text(path)
        except StateError as exc:
            raise CommandError(str(exc), returncode=2) from None
        try:
            summary = state_import(data=load_json_text(text), replace=options["replace"])
        except StateError as exc:
            raise CommandError(f"{exc} (nothing was imported)", returncode=2) from None
        self.stdout.write(f"imported {path}: {summary.line()}")
