from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

import ladder
from ladder.models import BillingCatalogEntry, ModelCatalogEntry
from ladder.selectors.snapshot import state_version_get
from ladder.services import catalog_seed

pytestmark = pytest.mark.django_db


def load(*args: str) -> str:
    out = StringIO()
    call_command("ladder_load_catalog", *args, stdout=out)
    return out.getvalue()


def kinds_rows(shared_dir: Path) -> list[tuple[str, str, str, str]]:
    """(provider, auth_type, billing, overage) of every curated row of KINDS.md."""
    rows = []
    for line in (shared_dir / "fixtures" / "quota" / "KINDS.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] not in ("fixture", "---") and cells[3] != "—":
            rows.append((cells[1], cells[2], cells[3], cells[4]))
    return rows


def test_it_seeds_the_billing_catalog_of_kinds_md(shared_dir: Path) -> None:
    stored = {(r.provider, r.auth_type, r.billing, r.overage) for r in BillingCatalogEntry.objects.all()}

    assert len(kinds_rows(shared_dir)) == 17
    assert stored == set(kinds_rows(shared_dir))
    assert not BillingCatalogEntry.objects.filter(provider="qwen").exists()


def test_it_names_sources_without_inventing_urls() -> None:
    rows = list(BillingCatalogEntry.objects.all())

    assert all(row.source_url is None for row in rows)
    assert all("Source (unverified)" in row.notes for row in rows)
    claude = BillingCatalogEntry.objects.get(provider="claude", auth_type="oauth")
    assert claude.notes.startswith("extra usage is opt-in (support.claude.com article 12429409).")


def test_it_seeds_the_model_catalog_in_file_order(shared_dir: Path) -> None:
    expected = json.loads((shared_dir / "fixtures" / "models.json").read_text())["models"]

    stored = list(ModelCatalogEntry.objects.order_by("position"))

    assert [(m.provider, m.model) for m in stored] == [(m["provider"], m["model"]) for m in expected]
    assert [m.categories for m in stored] == [m["categories"] for m in expected]
    openrouter_free = next(m for m in stored if m.model == "deepseek/deepseek-chat-v3.1:free")
    assert openrouter_free.free
    assert next(m for m in stored if m.provider == "cursor").input_usd_per_mtok is None


def test_it_changes_nothing_on_a_second_load() -> None:
    before = state_version_get()

    output = load()

    assert "0 added, 0 updated, 17 unchanged" in output
    assert "0 added, 0 updated, 40 unchanged" in output
    assert state_version_get() == before


def test_it_keeps_an_operator_edit_on_reload() -> None:
    row = BillingCatalogEntry.objects.get(provider="claude", auth_type="oauth")
    row.overage = "meters-to-paid"
    row.save()
    model = ModelCatalogEntry.objects.get(provider="openai", model="gpt-4o")
    model.free = True
    model.save()

    output = load()

    assert "kept operator edit: claude/oauth" in output
    assert "kept operator edit: model openai/gpt-4o" in output
    assert BillingCatalogEntry.objects.get(pk=row.pk).overage == "meters-to-paid"
    assert ModelCatalogEntry.objects.get(pk=model.pk).free


def test_it_keeps_a_row_the_operator_created() -> None:
    BillingCatalogEntry.objects.filter(provider="copilot").delete()
    BillingCatalogEntry.objects.create(
        provider="copilot", auth_type="oauth", billing="subscription", overage="hard-stop"
    )

    output = load()

    assert "kept operator edit: copilot/oauth" in output
    assert BillingCatalogEntry.objects.get(provider="copilot").overage == "hard-stop"


def test_it_updates_untouched_rows_to_a_new_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    seed = catalog_seed.billing_seed_rows()
    for row in seed:
        if row["provider"] == "codex":
            row["notes"] = "revised note"
    monkeypatch.setattr(catalog_seed, "billing_seed_rows", lambda: seed)
    before = state_version_get()

    output = load()

    assert "updated: codex/oauth" in output
    assert BillingCatalogEntry.objects.get(provider="codex").notes == "revised note"
    assert state_version_get() == before + 1
    # The updated row is seed data again: a later seed may update it again.
    assert "unchanged" in load()


def test_it_adds_missing_rows_and_leaves_extra_ones() -> None:
    BillingCatalogEntry.objects.filter(provider="groq").delete()
    ModelCatalogEntry.objects.filter(model="o3").delete()
    BillingCatalogEntry.objects.create(provider="acme", billing="metered", overage="unknown")

    output = load()

    assert "added: groq/apikey" in output
    assert "added: model openai/o3" in output
    assert BillingCatalogEntry.objects.filter(provider="groq", auth_type="apikey").exists()
    assert BillingCatalogEntry.objects.filter(provider="acme").exists()


def test_it_overwrites_operator_edits_with_force() -> None:
    BillingCatalogEntry.objects.filter(provider="kiro").update(overage="hard-stop")

    output = load("--force")

    assert "overwrote operator edit: kiro/oauth" in output
    assert BillingCatalogEntry.objects.get(provider="kiro").overage == "unknown"
    assert "kept operator edit" not in load()


def test_it_loads_into_an_empty_catalog() -> None:
    BillingCatalogEntry.objects.all().delete()
    ModelCatalogEntry.objects.all().delete()

    billing, models = catalog_seed.catalog_seed_load()

    assert len(billing.added) == 17
    assert len(models.added) == 40
    assert not billing.kept
    assert not models.kept


def test_it_ships_the_seed_inside_the_repository(shared_dir: Path) -> None:
    shipped: dict[str, Any] = json.loads(catalog_seed.MODELS_SEED_PATH.read_text())
    shared: dict[str, Any] = json.loads((shared_dir / "fixtures" / "models.json").read_text())

    assert catalog_seed.SEED_DIR.is_relative_to(Path(ladder.__file__).parent)
    assert shipped["models"] == shared["models"]
