"""The starting billing and model catalogs (ladder/seed/*.json) and their idempotent loading.

A loaded row remembers a fingerprint of its curated fields. On a re-load, a row whose fields no
longer match that fingerprint was edited by an operator (in the admin, an import or a raw UPDATE)
and is kept as it is unless `force`; an untouched row follows the new seed; a missing row is added.
Used by the data migration (with the historical app registry) and by `ladder_load_catalog`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.apps import apps as django_apps
from django.apps.registry import Apps
from django.db import models, transaction

from ladder.domain.billing import normalise_auth_type

SEED_DIR = Path(__file__).resolve().parent.parent / "seed"
BILLING_SEED_PATH = SEED_DIR / "billing_catalog.json"
MODELS_SEED_PATH = SEED_DIR / "models.json"

BILLING_FIELDS = ("billing", "overage", "source_url", "notes", "reviewed_at")
MODEL_FIELDS = ("input_usd_per_mtok", "output_usd_per_mtok", "free", "categories", "position")
PRICE_QUANTUM = Decimal("0.000001")  # the DecimalField's six decimal places


@dataclass
class SeedReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # operator edits left alone
    overwritten: list[str] = field(default_factory=list)  # operator edits replaced (--force)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.overwritten)

    def lines(self) -> list[str]:
        return [
            *(f"added: {label}" for label in self.added),
            *(f"updated: {label}" for label in self.updated),
            *(f"kept operator edit: {label}" for label in self.kept),
            *(f"overwrote operator edit: {label}" for label in self.overwritten),
            f"{len(self.added)} added, {len(self.updated)} updated, {len(self.unchanged)} unchanged, "
            f"{len(self.kept)} kept (operator edits), {len(self.overwritten)} overwritten",
        ]


def billing_seed_rows() -> list[dict[str, Any]]:
    entries = json.loads(BILLING_SEED_PATH.read_text(encoding="utf-8"))["entries"]
    return [
        {
            "provider": entry["provider"],
            "auth_type": normalise_auth_type(entry.get("auth_type")),
            "billing": entry["billing"],
            "overage": entry["overage"],
            "source_url": entry.get("source_url"),
            "notes": entry.get("notes", ""),
            "reviewed_at": None,
        }
        for entry in entries
    ]


def model_seed_rows() -> list[dict[str, Any]]:
    entries = json.loads(MODELS_SEED_PATH.read_text(encoding="utf-8"))["models"]
    return [
        {
            "provider": entry["provider"],
            "model": entry["model"],
            "input_usd_per_mtok": price(entry.get("input_usd_per_mtok")),
            "output_usd_per_mtok": price(entry.get("output_usd_per_mtok")),
            "free": bool(entry.get("free", False)),
            "categories": list(entry.get("categories", [])),
            "position": index,
        }
        for index, entry in enumerate(entries)
    ]


def price(value: float | int | str | None) -> Decimal | None:
    return None if value is None else Decimal(str(value)).quantize(PRICE_QUANTUM)


def canonical(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def fingerprint(values: Mapping[str, Any], fields: tuple[str, ...]) -> str:
    payload = json.dumps(
        {name: canonical(values[name]) for name in fields}, sort_keys=True, ensure_ascii=False
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def catalog_seed_load(*, force: bool = False, registry: Apps | None = None) -> tuple[SeedReport, SeedReport]:
    """Load both seeds in one transaction; returns (billing report, model report)."""
    registry = registry or django_apps
    with transaction.atomic():
        billing = upsert_seed(
            model=registry.get_model("ladder", "BillingCatalogEntry"),
            rows=billing_seed_rows(),
            key_fields=("provider", "auth_type"),
            fields=BILLING_FIELDS,
            label=lambda row: (
                f"{row['provider']}/{row['auth_type']}" if row["auth_type"] else row["provider"]
            ),
            force=force,
        )
        catalog = upsert_seed(
            model=registry.get_model("ladder", "ModelCatalogEntry"),
            rows=model_seed_rows(),
            key_fields=("provider", "model"),
            fields=MODEL_FIELDS,
            label=lambda row: f"model {row['provider']}/{row['model']}",
            force=force,
        )
    return billing, catalog


def upsert_seed(
    *,
    model: type[models.Model],
    rows: list[dict[str, Any]],
    key_fields: tuple[str, ...],
    fields: tuple[str, ...],
    label: Callable[[dict[str, Any]], str],
    force: bool,
) -> SeedReport:
    report = SeedReport()
    existing = {tuple(getattr(obj, name) for name in key_fields): obj for obj in model._default_manager.all()}
    for row in rows:
        name = label(row)
        seed_fp = fingerprint(row, fields)
        obj = existing.get(tuple(row[key] for key in key_fields))
        if obj is None:
            model._default_manager.create(**row, seed_fingerprint=seed_fp)
            report.added.append(name)
            continue
        current_fp = fingerprint({key: getattr(obj, key) for key in fields}, fields)
        if current_fp == seed_fp:
            if obj.seed_fingerprint not in ("", seed_fp):  # type: ignore[attr-defined]
                # An operator's edit that the new seed now agrees with: it is seed data again.
                model._default_manager.filter(pk=obj.pk).update(seed_fingerprint=seed_fp)
            report.unchanged.append(name)
            continue
        operator_edited = current_fp != obj.seed_fingerprint  # type: ignore[attr-defined]
        if operator_edited and not force:
            report.kept.append(name)
            continue
        for key in fields:
            setattr(obj, key, row[key])
        obj.seed_fingerprint = seed_fp  # type: ignore[attr-defined]
        obj.save()
        (report.overwritten if operator_edited else report.updated).append(name)
    return report
