from __future__ import annotations

import hashlib
import io
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from ladder import models as m

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("ladder_token_create", *args, stdout=out)
    return out.getvalue()


def test_it_creates_a_token_and_prints_its_value_once() -> None:
    printed = run("omniroute")

    value = printed.strip().rsplit(" ", 1)[-1]
    token = m.GatewayToken.objects.get(name="omniroute")
    assert token.token_hash == hashlib.sha256(value.encode()).hexdigest()
    assert (token.scope_resolve, token.scope_report) == (True, True)
    assert "scopes resolve,report" in printed


def test_it_takes_scopes_and_a_value() -> None:
    printed = run("reporter", "--scopes", "report", "--value", "reporter-value-0123456789")

    token = m.GatewayToken.objects.get(name="reporter")
    assert (token.scope_resolve, token.scope_report) == (False, True)
    assert printed.strip().endswith("reporter-value-0123456789")


def test_it_keeps_an_existing_token_of_the_same_value() -> None:
    run("demo", "--value", "demo-value-0123456789")

    assert "kept" in run("demo", "--value", "demo-value-0123456789")
    assert m.GatewayToken.objects.count() == 1


def test_it_refuses_an_existing_name_with_another_value() -> None:
    run("demo", "--value", "demo-value-0123456789")

    with pytest.raises(CommandError, match="already exists"):
        run("demo", "--value", "other-value-0123456789")
    with pytest.raises(CommandError, match="already exists"):
        run("demo")


def test_it_limits_a_token_as_the_admin_can() -> None:
    printed = run(
        "borrower",
        "--scopes",
        "credentials,report",
        "--connections",
        "claude-1, codex-2 claude-1",
        "--spend-ceiling",
        "25.50",
    )

    token = m.GatewayToken.objects.get(name="borrower")
    assert (token.scope_resolve, token.scope_report, token.scope_credentials) == (False, True, True)
    assert token.connection_ids == ["claude-1", "codex-2"]
    assert token.spend_ceiling_usd == Decimal("25.5")
    assert "scopes report,credentials, connections claude-1, codex-2, spend ceiling $25.50)" in printed


def test_it_leaves_a_token_unlimited_by_default() -> None:
    run("plain")

    token = m.GatewayToken.objects.get(name="plain")
    assert (token.connection_ids, token.spend_ceiling_usd, token.scope_credentials) == ([], None, False)


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("--connections", "ok-1,bad/id"), "--connections"),
        (("--spend-ceiling", "-1"), "--spend-ceiling"),
        (("--spend-ceiling", "lots"), "--spend-ceiling"),
        (("--spend-ceiling", "NaN"), "--spend-ceiling"),
        (("--spend-ceiling", "0.0000001"), "--spend-ceiling"),
    ],
)
def test_it_names_the_option_at_fault(args: tuple[str, ...], option: str) -> None:
    with pytest.raises(CommandError, match=f"^{option}: "):
        run("x", *args)

    assert not m.GatewayToken.objects.exists()


@pytest.mark.parametrize("scopes", ["admin", "", "resolve,delete"])
def test_it_refuses_unknown_scopes(scopes: str) -> None:
    with pytest.raises(CommandError, match="accepted: resolve, report"):
        run("x", "--scopes", scopes)


def test_it_refuses_a_weak_value() -> None:
    with pytest.raises(CommandError, match="value"):
        run("x", "--value", "short")


def test_it_seeds_the_demo_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LADDER_ADMIN_PASSWORD", "demo-password-1")
    monkeypatch.setenv("LADDER_DEMO_TOKEN", "env-demo-token-0123456789")
    out = io.StringIO()

    call_command("ladder_demo", stdout=out)

    lines = out.getvalue().splitlines()
    assert any(line.endswith("env-demo-token-0123456789") for line in lines)
    assert lines[-1].startswith("admin login")  # the token is printed just before it
    token = m.GatewayToken.objects.get(name="demo")
    assert token.token_hash == hashlib.sha256(b"env-demo-token-0123456789").hexdigest()


def test_it_generates_the_demo_token_once_and_prints_it_every_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LADDER_ADMIN_PASSWORD", "demo-password-1")
    monkeypatch.delenv("LADDER_DEMO_TOKEN", raising=False)
    monkeypatch.setattr("django.conf.settings.BASE_DIR", tmp_path)

    first, second = io.StringIO(), io.StringIO()
    call_command("ladder_demo", stdout=first)
    call_command("ladder_demo", stdout=second)

    value = (tmp_path / ".local" / "demo-token").read_text().strip()
    assert value in first.getvalue()
    assert value in second.getvalue()
    assert m.GatewayToken.objects.filter(name="demo").count() == 1
